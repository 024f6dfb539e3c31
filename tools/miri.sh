#!/usr/bin/env bash
# Runs the library's unit tests and a subset of the integration tests under
# Miri (the Rust interpreter that reports undefined behaviour: out-of-bounds
# and dangling accesses, misaligned or invalid reads, aliasing violations).
# Complements tools/memcheck.sh (valgrind): Miri checks what the code does
# against Rust's rules, not just which bytes it touches, but runs only the
# portable paths (it does not run AVX2 kernels: feature detection reports
# none) and cannot call some libm functions or map files.
#
# Needs a nightly toolchain with the `miri` and `rust-src` components
# (`rustup component add miri rust-src --toolchain nightly`); exits 0 with a
# message when there is none. Usage: tools/miri.sh [TARGET[:FILTER]...]
# (TARGET `lib` or an integration-test target, as in tools/memcheck.sh).
#
# Flags: tree borrows (rayon's crossbeam-epoch trips Stacked Borrows with
# integer-to-pointer casts, outside this crate), leaks ignored (rayon's pool
# threads outlive main by design), isolation off (tests read fixtures).
# Skipped: `formulas_are_close_to_libm` (Miri's libm adds error on purpose)
# and `unary_and_binary_ops_read_strided_inputs` (calls `remainderf`, which
# Miri cannot run) and `export_round_trip_in_both_formats` (maps a file).
# Left out of the defaults: quantized tests that map files or multiply
# 40x256 by 256x192 three times (over 20 minutes interpreted).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! cargo +nightly miri --version >/dev/null 2>&1; then
  echo "miri: no nightly toolchain with miri here; skipped" >&2
  exit 0
fi
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(lib ops:views:: ops:elementwise_layout:: ops:quantized::quantize
  ops:quantized::quantized_matmul ops:quantized::gather_qmm ops:quantized::errors)
export MIRIFLAGS="-Zmiri-disable-isolation -Zmiri-tree-borrows -Zmiri-ignore-leaks"
export PROPTEST_CASES=${PROPTEST_CASES:-2}
skip=(--skip formulas_are_close_to_libm --skip unary_and_binary_ops_read_strided_inputs
  --skip export_round_trip_in_both_formats)
status=0
for spec in "${targets[@]}"; do
  t=${spec%%:*}
  filter=()
  [ "$t" = "$spec" ] || filter=("${spec#*:}")
  if [ "$t" = lib ]; then args=(-p mlx --lib); else args=(--test "$t"); fi
  echo "miri: $spec"
  cargo +nightly miri test "${args[@]}" -- "${filter[@]}" "${skip[@]}" || status=1
done
exit $status

#!/usr/bin/env bash
# Runs the tests that exercise the library's own `unsafe` code (heap and
# mapped buffers, byte casts, SIMD kernels and their tails, native-file
# constants mapped in place) under valgrind's memcheck; exits non-zero on
# any memcheck report. Usage: tools/memcheck.sh [TARGET[:FILTER]...]
#
# TARGET is `lib` (the library's unit tests) or an integration-test target
# of the root package (`ops`, `export`, `hostile`, ...); FILTER selects its
# tests as `cargo test`'s filter does (a module path such as `matmul::`).
# The defaults: the library's unit tests (buffer casts, SIMD lanes), the
# element-wise layout tests (strided and tail paths), the kernels with
# `unsafe` blocks (matmul and conv through gemm, quantized and attention
# tiles, softmax's FMA rows), the native-format tests (mapped constants)
# and the hostile-file tests (checks before allocation). Valgrind slows
# code ~30x: keep the list to these. The C ABI has its own memcheck test
# (`cargo test -p mlx-c --test memcheck`, leaks included).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "memcheck: valgrind is not installed" >&2; exit 1; }
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(lib ops:elementwise_layout:: ops:matmul:: ops:conv::
  ops:quantized:: ops:fast:: export:native:: hostile)

# Valgrind does not know AVX-512; the kernels pick AVX2 at run time, which it runs.
vg=(valgrind --tool=memcheck --error-exitcode=99 --leak-check=no
    --errors-for-leak-kinds=none --track-origins=no --quiet)

binary_of() {
  local args
  if [ "$1" = lib ]; then args=(-p mlx --lib); else args=(--test "$1"); fi
  cargo test "${args[@]}" --no-run --message-format=json 2>/dev/null |
    sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -1
}

status=0
for spec in "${targets[@]}"; do
  t=${spec%%:*}
  filter=()
  [ "$t" = "$spec" ] || filter=("${spec#*:}")
  bin=$(binary_of "$t")
  [ -n "$bin" ] || { echo "memcheck: could not build $t" >&2; exit 1; }
  echo "memcheck: $spec ($bin)"
  # One test thread: valgrind serialises threads anyway. Tests that spawn
  # an address-limited child (it re-runs itself) are skipped: valgrind's
  # own mappings do not fit under that limit.
  if ! "${vg[@]}" "$bin" "${filter[@]}" --test-threads 1 --skip address_limit -q; then
    echo "memcheck: reports in $spec" >&2
    status=1
  fi
done
exit $status

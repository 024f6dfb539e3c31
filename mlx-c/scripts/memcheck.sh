#!/bin/sh
# Builds libmlxc, compiles the C example and the error-path program, and
# runs them under valgrind memcheck (or, with SANITIZE=address, under
# AddressSanitizer + LeakSanitizer instead). Exits non-zero on any error
# or leak. Run from anywhere inside the repository.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
cargo build -p mlx-c
lib="$root/target/debug"
out="$root/target/memcheck"
mkdir -p "$out"
flags="-std=c11 -Wall -Wextra -g -O1 -I mlx-c/include -I examples/c"
link="-L$lib -lmlxc -Wl,-rpath,$lib"
if [ "${SANITIZE:-}" = address ]; then
  flags="$flags -fsanitize=address -fno-omit-frame-pointer"
  runner=""
else
  runner="valgrind --quiet --error-exitcode=99 --leak-check=full --show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect"
fi
cc $flags examples/c/run.c -o "$out/run" $link
cc $flags mlx-c/tests/c/errors.c -o "$out/errors" $link
printf 'not a function' > "$out/garbage.mlxfn"

k=tests/fixtures/mlx/kwargs
$runner "$out/run" $k/fn.mlxfn $k/c0_arg0.npy --kw a_offset=$k/c0_kw_a_offset.npy \
  --kw mid=$k/c0_kw_mid.npy --kw z_scale=$k/c0_kw_z_scale.npy --out "$out"
t=tests/fixtures/mlx_models/transformer_float32
$runner "$out/run" $t/fn.mlxfn $t/c0_arg0.npy --quiet
s=tests/fixtures/mlx/shapeless
$runner "$out/run" $s/fn.mlxfn $s/s_4x2_arg0.npy --quiet --from-bytes
$runner "$out/errors" $k/fn.mlxfn "$out/garbage.mlxfn"
echo "memcheck: clean"

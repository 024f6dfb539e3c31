#!/bin/sh
# Installs the C library under PREFIX (default /usr/local): headers in
# PREFIX/include/mlx/{c,cpp}, libmlxc.so and libmlxc.a in PREFIX/lib, and a
# pkg-config file PREFIX/lib/pkgconfig/mlxc.pc, so that
#   cc prog.c $(pkg-config --cflags --libs mlxc)
# builds a program written against mlx-c's import-and-run subset.
set -eu
prefix=${1:-/usr/local}
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
cargo build -p mlx-c --release
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
mkdir -p "$prefix/include/mlx" "$prefix/lib/pkgconfig"
cp -r mlx-c/include/mlx/c mlx-c/include/mlx/cpp "$prefix/include/mlx/"
cp target/release/libmlxc.so target/release/libmlxc.a "$prefix/lib/"
cat > "$prefix/lib/pkgconfig/mlxc.pc" <<PC
prefix=$prefix
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: mlxc
Description: mlx-rs-export's C ABI in mlx-c's names (mlx-c fba4470 import-and-run subset)
Version: $version
Libs: -L\${libdir} -lmlxc
Libs.private: -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc
Cflags: -I\${includedir}
PC
echo "installed under $prefix (pkg-config: PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --cflags --libs mlxc)"

#!/usr/bin/env bash
# run.sh BUILD_DIR PREFIX -- install the build into PREFIX, then build and run
# tests/install/quickstart.c against it twice: with CMake's find_package and
# with pkg-config, as a C user would.
set -euo pipefail
build=$1 prefix=$2
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$prefix"
cmake --install "$build" --prefix "$prefix" > /dev/null
libdir=$(find "$prefix" -name 'liblaminar.so*' -printf '%h\n' | head -1)
export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# 1. find_package(laminar)
cmake -S "$here" -B "$prefix/user-cmake" -DCMAKE_PREFIX_PATH="$prefix" > /dev/null
cmake --build "$prefix/user-cmake" > /dev/null
"$prefix/user-cmake/quickstart"
# 2. pkg-config
export PKG_CONFIG_PATH="$libdir/pkgconfig"
cc -std=c17 -Wall -Wextra -Werror "$here/quickstart.c" $(pkg-config --cflags --libs laminar) \
   -o "$prefix/quickstart-pc"
"$prefix/quickstart-pc"
echo "installed quick start: OK (find_package and pkg-config)"

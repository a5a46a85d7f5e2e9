#!/usr/bin/env bash
# run.sh BUILD_DIR PREFIX [CC] [EXTRA_FLAGS] -- the installed-library test.
# Installs the build into PREFIX (under the build tree), checks the install tree
# holds what a C user needs and nothing of nanoarrow, then builds and runs
# tests/install/quickstart.c against it twice, as a C user would:
#   1. a CMake project using find_package(laminar) and laminar::laminar
#   2. cc quickstart.c $(pkg-config --cflags --libs laminar)
# EXTRA_FLAGS (e.g. the sanitizer flags of a sanitized build) go to both
# compiles and links, so the program carries the same runtime as the library.
set -euo pipefail
build=$1 prefix=$2 cc=${3:-cc} extra=${4:-}
[ -n "$cc" ] || cc=cc
here=$(cd "$(dirname "$0")" && pwd)

rm -rf "$prefix"
cmake --install "$build" --prefix "$prefix" > "$build/install-test.log"

# The install tree: header, versioned shared library, CMake package, .pc file.
fail() { echo "installed_quickstart: $*" >&2; exit 1; }
[ -f "$prefix/include/laminar.h" ] || fail "include/laminar.h not installed"
lib=$(find "$prefix" -name 'liblaminar.so' | head -1)
[ -n "$lib" ] || fail "liblaminar.so not installed"
libdir=$(dirname "$lib")
[ -f "$libdir/cmake/laminar/laminarConfig.cmake" ] || fail "laminarConfig.cmake missing"
[ -f "$libdir/cmake/laminar/laminarConfigVersion.cmake" ] || fail "config version missing"
[ -f "$libdir/pkgconfig/laminar.pc" ] || fail "laminar.pc missing"
soname=$(objdump -p "$lib" | awk '$1 == "SONAME" {print $2}')
case "$soname" in liblaminar.so.[0-9]*) ;; *) fail "unexpected SONAME '$soname'" ;; esac
[ -e "$libdir/$soname" ] || fail "$soname not installed"
if find "$prefix" -path '*nanoarrow*' | grep -q .; then
  fail "nanoarrow files installed: $(find "$prefix" -path '*nanoarrow*' | head -3)"
fi

# 1. find_package(laminar): the build and run rely on CMake's RPATH only.
cmake -S "$here" -B "$prefix/user-cmake" -DCMAKE_PREFIX_PATH="$prefix" \
      -DCMAKE_C_COMPILER="$cc" -DCMAKE_C_FLAGS="$extra" \
      -DCMAKE_EXE_LINKER_FLAGS="$extra" > "$prefix/user-cmake.log"
cmake --build "$prefix/user-cmake" >> "$prefix/user-cmake.log"
echo "-- find_package(laminar) build:"
"$prefix/user-cmake/quickstart"

# 2. pkg-config, the library found at run time through LD_LIBRARY_PATH.
export PKG_CONFIG_PATH="$libdir/pkgconfig"
pc_flags=$(pkg-config --cflags --libs laminar)
# shellcheck disable=SC2086  # word splitting of the flags is intended
"$cc" -std=c17 -Wall -Wextra -Wpedantic -Werror $extra "$here/quickstart.c" $pc_flags \
      -o "$prefix/quickstart-pc"
echo "-- pkg-config build ($pc_flags):"
LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$prefix/quickstart-pc"
echo "installed quick start: OK (find_package and pkg-config)"

#!/usr/bin/env bash
# test.sh -- the test command: set up, then build and run every test.
#   1. Release build, ctest (unit tests, exports, header, installed quick start)
#   2. ASan+UBSan build, ctest (every C test under the sanitizers)
#   3. ruff and pytest over the Python package and its tests
# Exits non-zero on the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

bash scripts/setup.sh

jobs=${JOBS:-2}
echo "== release build + ctest"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DLAMINAR_WERROR=ON > /dev/null
cmake --build build -j"$jobs"
ctest --test-dir build --output-on-failure -j"$jobs"

echo "== ASan+UBSan build + ctest"
archive=$(ls build/_deps/nanoarrow/nanoarrow-*.tar.gz 2>/dev/null | head -1 || true)
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DLAMINAR_SANITIZE=address,undefined \
      -DLAMINAR_BUILD_BENCH=OFF ${archive:+-DLAMINAR_NANOARROW_ARCHIVE="$root/$archive"} > /dev/null
cmake --build build-asan -j"$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j"$jobs"

if [ -d tests/python ] && ls tests/python/test_*.py > /dev/null 2>&1; then
  echo "== ruff"
  .venv/bin/ruff check bindings/python tests/python bench
  echo "== pytest"
  .venv/bin/python -m pytest tests/python -q
fi
echo "== all tests passed"

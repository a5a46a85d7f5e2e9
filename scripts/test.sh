#!/usr/bin/env bash
# test.sh -- the test command (README "The two commands"; .ci/run runs exactly
# this). Sets up, then builds and runs every test, stopping at the first failure:
#   1. Release build in build/ (-Werror), ctest: unit tests, headertest, exports,
#      the installed-library quick start
#   2. ASan+UBSan build in build-asan/ with allocation fault injection, ctest:
#      every C test under the sanitizers, leaks included
#   3. TSan build in build-tsan/ of the concurrency tests (test_chan_*, test_rt_*,
#      test_store_*, test_durable*)
#   4. ruff and pytest over the Python package and tests/python, if present
#   5. pytest again with the package bound to step 2's ASan+UBSan core
# Environment: JOBS (parallel jobs, default 2), LAMINAR_SKIP_TSAN=1 skips step 3,
# LAMINAR_SKIP_PY_ASAN=1 skips step 5.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

# setup.sh exports LAMINAR_NANOARROW_ARCHIVE (the cached, checked archive) for
# the CMake configures below.
# shellcheck source=scripts/setup.sh
source scripts/setup.sh
cd "$root"

jobs=${JOBS:-2}
py="$root/.venv/bin/python"
cmake_common=(--no-warn-unused-cli -DPython3_EXECUTABLE="$py" -DLAMINAR_WERROR=ON)

echo "== 1. release build + ctest (build/)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DLAMINAR_SANITIZE= "${cmake_common[@]}"
cmake --build build -j"$jobs"
ctest --test-dir build --output-on-failure -j"$jobs"

echo "== 2. ASan+UBSan build + ctest (build-asan/)"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DLAMINAR_SANITIZE=address,undefined \
      -DLAMINAR_FAULT_INJECTION=ON -DLAMINAR_BUILD_BENCH=OFF "${cmake_common[@]}"
cmake --build build-asan -j"$jobs"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j"$jobs"

tsan_tests=()
for f in tests/c/test_chan_*.c tests/c/test_rt_*.c tests/c/test_store_*.c tests/c/test_durable*.c; do
  [ -f "$f" ] && tsan_tests+=("$(basename "$f" .c)")
done
if [ "${LAMINAR_SKIP_TSAN:-0}" != 1 ] && [ ${#tsan_tests[@]} -gt 0 ]; then
  echo "== 3. TSan build + ctest of ${tsan_tests[*]} (build-tsan/)"
  cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=Debug -DLAMINAR_SANITIZE=thread \
        -DLAMINAR_BUILD_BENCH=OFF "${cmake_common[@]}"
  cmake --build build-tsan -j"$jobs" --target "${tsan_tests[@]}"
  regex="^($(IFS='|'; echo "${tsan_tests[*]}"))\$"
  # TSan's shadow mapping needs a non-randomized layout on kernels with large
  # mmap randomization; setarch -R gives it one when available.
  norand=()
  if setarch "$(uname -m)" -R true > /dev/null 2>&1; then
    norand=(setarch "$(uname -m)" -R)
  fi
  TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
    "${norand[@]}" ctest --test-dir build-tsan --output-on-failure -j"$jobs" -R "$regex"
fi

if [ -d tests/python ]; then
  echo "== 4. ruff + pytest"
  for tool in ruff pytest; do
    [ -x ".venv/bin/$tool" ] || "$py" -m pip install -q "$tool"
  done
  .venv/bin/ruff check .  # every Python file in the repository (ruff.toml)
  # pytest exits 5 when it collects no test: a failure only if test files exist.
  set +e
  .venv/bin/python -m pytest tests/python -q
  rc=$?
  set -e
  if [ "$rc" -eq 5 ] && ! find tests/python -name 'test_*.py' -print -quit | grep -q .; then
    echo "tests/python has no test files yet"
  elif [ "$rc" -ne 0 ]; then
    exit "$rc"
  fi
fi
if [ -d tests/python ] && [ "${LAMINAR_SKIP_PY_ASAN:-0}" != 1 ]; then
  # The Python tests once more, with the package bound to the ASan+UBSan core
  # of step 2 (RELIABILITY "sanitizers"). The interpreter is not instrumented:
  # libasan is preloaded, with libstdc++ so C++ extensions (duckdb) can throw;
  # leak checking is off because CPython keeps memory until exit by design.
  # Spark tests are left out: the JVM they start would inherit the preload.
  echo "== 5. pytest against the ASan+UBSan core (.venv-asan/)"
  if ! .venv-asan/bin/python -c 'import sys' > /dev/null 2>&1; then
    rm -rf .venv-asan
    "$py" -m venv .venv-asan
  fi
  .venv-asan/bin/python -m pip install -q -r bindings/python/requirements-test.txt
  LAMINAR_LIBRARY="$root/build-asan/liblaminar.so" \
    .venv-asan/bin/python -m pip install -q ./bindings/python
  preload="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libstdc++.so)"
  LD_PRELOAD="$preload" ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    .venv-asan/bin/python -m pytest tests/python -q -p no:cacheprovider \
      --ignore-glob='tests/python/test_spark*'
fi
echo "== all tests passed"

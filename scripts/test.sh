#!/usr/bin/env bash
# test.sh -- the test command (README "The two commands"; .ci/run runs exactly
# this). Sets up, then builds and runs every test, stopping at the first failure:
#   0. the C sources' format: scripts/format.sh --check (.clang-format; setup.sh
#      installs clang-format)
#   1. Release build in build/ (-Werror), ctest: unit tests, headertest, exports,
#      the installed-library quick start
#   2. ASan+UBSan build in build-asan/ with allocation fault injection, ctest:
#      every C test under the sanitizers, leaks included
#   3. TSan build in build-tsan/ of the concurrency tests (test_chan_*, test_rt_*,
#      test_store_*, test_durable*)
#   4. ruff and pytest over the Python package and tests/python, if present (the
#      Spark suite on the newest PySpark, requirements-test.txt)
# A Kafka broker (tests/kafka/broker.sh) runs from the start to the end, for the
# Kafka tests of every step, when librdkafka is installed.
#   4b. the other Spark line and the wheel from a fresh venv: a matrix of the Spark
#      suite on PySpark 3.5 (.venv-spark35/), then tests/spark/quickstart.py (what
#      docs/SPARK.md says, both engines, batch and streaming with a restart, against
#      DuckDB) on 3.5 and, in a new venv holding only the wheel setup.sh built
#      (dist/) with laminardb[spark] and the newest PySpark (.venv-wheel/), on 4.x;
#      its "spark-compat:" lines are the compatibility table of docs/SPARK.md
#      (tests/spark/compat_table.py checks the doc's copy)
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

# Scratch space for the C tests (tests/c/lm_test_fs.h lm_test_mkdtemp, which
# remove what they make): a RAM disk where it has 4 GiB free. pytest stays on
# TMPDIR: it keeps its tmp_path trees (11 GB of them filled /dev/shm once).
# What the tests prove does not depend on the medium (kill -9 keeps the page
# cache; test_store_powerloss models lost syncs itself, and it and
# test_store_wal, which probe O_DIRECT, stay on TMPDIR); on a disk the sync-WAL
# fault loops wait on fsync most of their time (test_fault_io under ASan: 6 min
# on /tmp, 1.4 min on /dev/shm).
ramtmp=""
cleanup() {
  if [ -n "${LAMINAR_KAFKA_HOME:-}" ]; then tests/kafka/broker.sh stop || true; fi
  if [ -n "$ramtmp" ]; then rm -rf "$ramtmp"; fi
}
trap cleanup EXIT
if [ -z "${LAMINAR_TEST_TMPDIR:-}" ] && [ -d /dev/shm ] && [ -w /dev/shm ] &&
   [ "$(df -Pk /dev/shm | awk 'NR == 2 { print $4 }')" -ge 4194304 ]; then
  ramtmp=$(mktemp -d /dev/shm/lt.XXXXXX)
  export LAMINAR_TEST_TMPDIR="$ramtmp"
fi

# A Kafka broker (KRaft, 127.0.0.1) for the Kafka tests (tests/c/test_kafka.c
# round_trip and the crash test's Kafka mode, tests/crash/test_crash_kafka.c,
# beside test_crash in every C build; tests/python/test_kafka.py), up until
# this script exits (without it test_crash_kafka is skipped); without
# librdkafka the library refuses the connectors and the tests check that
# instead (docs/KAFKA.md).
if pkg-config --exists rdkafka; then
  echo "== kafka broker (tests/kafka/broker.sh)"
  export LAMINAR_KAFKA_HOME="$root/.kafka-broker"
  bootstrap=$(tests/kafka/broker.sh start | tail -n 1)
  export LAMINAR_KAFKA_BOOTSTRAP="${bootstrap#bootstrap.servers=}"
  echo "kafka broker: $LAMINAR_KAFKA_BOOTSTRAP"
fi

echo "== 0. format (scripts/format.sh --check)"
scripts/format.sh --check

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
  regex="^($(IFS='|'; echo "${tsan_tests[*]}"))(/[0-9]+)?\$"
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
wheel=$(find dist -maxdepth 1 -name 'laminardb-*.whl' 2> /dev/null | head -n 1)
if [ -d tests/python ] && [ -n "$wheel" ]; then
  echo "== 4b. Spark 3.5 (.venv-spark35/) and the wheel in a fresh venv (.venv-wheel/)"
  if ! .venv-spark35/bin/python -c 'import sys' > /dev/null 2>&1; then
    rm -rf .venv-spark35
    "$py" -m venv .venv-spark35
  fi
  .venv-spark35/bin/python -m pip install -q -r bindings/python/requirements-spark35.txt
  .venv-spark35/bin/python -m pip uninstall -q -y laminardb 2> /dev/null || true
  .venv-spark35/bin/python -m pip install -q "$wheel"
  # W1 in batch and streaming on both engines is quickstart.py's (below); here what
  # differs between lines: the jar and interpreter choice, TIMESTAMP columns, and a
  # streaming state carried across the two engines.
  .venv-spark35/bin/python -m pytest -q -p no:cacheprovider tests/python/test_spark_lines.py \
    tests/python/test_spark.py::test_timestamp_event_time \
    tests/python/test_spark_jvm.py::test_jvm_timestamp_event_time \
    tests/python/test_spark_jvm_stream.py::test_jvm_restart_writes_each_window_once
  # Users' conditions: no PYSPARK_PYTHON, and a PATH whose python3 is not the venv's.
  # An upgrade too: streaming queries half run on 3.5 (--state-before) are finished
  # on 4.x from the same checkpoint and state locations (--state-after).
  upgrade=$(mktemp -d "${TMPDIR:-/tmp}/spark-upgrade.XXXXXX")
  env -u PYSPARK_PYTHON PATH=/usr/bin:/bin .venv-spark35/bin/python tests/spark/quickstart.py \
    --state-before "$upgrade" | tee .spark-compat.txt
  newest=$(sed -n 's/^pyspark\(\[[a-z,]*\]\)\{0,1\}==\([0-9.]*\).*/\2/p' \
    bindings/python/requirements-test.txt)
  rm -rf .venv-wheel
  "$py" -m venv .venv-wheel
  .venv-wheel/bin/python -m pip install -q "$wheel[spark]" "pyspark==$newest" duckdb==2.0.0
  env -u PYSPARK_PYTHON PATH=/usr/bin:/bin .venv-wheel/bin/python tests/spark/quickstart.py \
    --state-after "$upgrade" | tee -a .spark-compat.txt
  rm -rf "$upgrade"
  "$py" tests/spark/compat_table.py .spark-compat.txt docs/SPARK.md
fi
if [ -d tests/python ] && [ "${LAMINAR_SKIP_PY_ASAN:-0}" != 1 ]; then
  # The Python tests once more, with the package bound to the ASan+UBSan core
  # of step 2 (RELIABILITY "sanitizers"). The interpreter is not instrumented:
  # libasan is preloaded, with libstdc++ so C++ extensions (duckdb) can throw;
  # leak checking is off because CPython keeps memory until exit by design.
  # Spark tests are left out: the JVM they start would inherit the preload.
  # Property tests make a third of their examples here (LAMINAR_TEST_EXAMPLES,
  # tests/python/_oracle_util.py): this pass looks for memory errors on the
  # paths; step 4 checked the answers with every example.
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
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 LAMINAR_TEST_EXAMPLES=0.34 \
    .venv-asan/bin/python -m pytest tests/python -q -p no:cacheprovider \
      --ignore-glob='tests/python/test_spark*'
fi
echo "== all tests passed"

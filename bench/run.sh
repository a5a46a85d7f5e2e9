#!/usr/bin/env bash
# run.sh -- build the benchmarks (Release, -O3 -march=native) into build-bench/, run every
# workload of docs/BENCHMARKS.md next to the "speed of light" loops of the shared bench
# directory (../shared/bench/limit_vwap.c, limit_asof.c) in the same invocation, and
# write the current figures: docs/benchmarks/results.md (one table per workload: figure,
# ratio to the limit, exact command), docs/benchmarks/ratios.csv and, with matplotlib
# (bench/requirements.txt), the plot docs/benchmarks/ratios.png; the table is also
# copied into docs/BENCHMARKS.md between its "bench/run.sh results" markers.
# limit_vwap runs before and after the engine benchmarks; the ratios divide by the
# faster of the two (a limit run slowed by a neighbour would flatter us).
#
#   bench/run.sh [N]           N events (default 10000000; or BENCH_N=...)
#   bench/run.sh --quick       the quick sizes (N = 10^6; Spark 10^6 rows, one rep;
#                              smaller checkpoint, recovery, WAL, ring and MPSC runs;
#                              latency: park only, 1 s), for a loaded machine
#   bench/run.sh --compare A B [ROUNDS]
#                              before (A) / after (B): each a git revision (exported and
#                              built into build-bench-cmp/) or an existing build tree;
#                              runs W1, W2, hop, session, changes (C, inline) and Python
#                              W1 (each revision's own package and bench script, the
#                              package built against its core into <build>/py)
#                              interleaved, ROUNDS rounds (default 8), with
#                              bench/interleave.sh: each label's median time and the
#                              paired ratio after / before. Writes no docs.
#   BENCH_REPS=5               reps per figure (default 3; median reported)
#   BENCH_JAVA=0 / BENCH_SPARK=0 / BENCH_PYTHON=0 / BENCH_KAFKA=0   skip those workloads
#   BENCH_KAFKA_PY_N=1000000   events of the Python Kafka client run (default min(N, 10^6))
#   BENCH_CORES=4              reactors for the thread-per-core scaling (default 2)
#   BENCH_DOCS=0               leave docs/ alone (results stay in build-bench/results)
#   PYTHON=...                 the interpreter with laminardb installed (default .venv)
#   PYTHON_SPARK35=...         the one with PySpark 3.5 (default .venv-spark35, made by
#                              scripts/test.sh step 4b); Spark runs on both lines
#
# Exit status: non-zero if a build fails, a limit loop is missing, or a result check
# fails (the docs are still written, the failed figures marked).
set -euo pipefail

ROOT="$(git -C "$(dirname "${BASH_SOURCE[0]}")" rev-parse --show-toplevel)"
SHARED="$ROOT/../shared/bench"
PY="${PYTHON:-$ROOT/.venv/bin/python}"
REPS="${BENCH_REPS:-3}"
QUICK=0
COMPARE=()
case "${1:-}" in
  --quick) QUICK=1; shift ;;
  --compare)
    [[ $# -ge 3 ]] || { sed -n '2,31p' "$0" >&2; exit 2; }
    COMPARE=("$2" "$3" "${4:-8}"); shift $# ;;
esac
if [[ $QUICK == 1 ]]; then
  N="${BENCH_N:-1000000}"
else
  N="${BENCH_N:-${1:-10000000}}"
fi

for f in limit_vwap.c limit_asof.c; do
  if [[ ! -f "$SHARED/$f" ]]; then
    echo "run.sh: the reference $SHARED/$f is missing: the ratios need the" \
      "limit loops of the shared bench directory next to the repository." >&2
    exit 1
  fi
done

# build <source dir> <build dir> [cmake args...]: the Release benchmark build of one
# source tree.
build() {
  local src=$1 dir=$2 na=""
  shift 2
  for f in "$ROOT"/build*/_deps/nanoarrow/nanoarrow-0.9.0.tar.gz; do
    if [[ -f "$f" && "$f" != "$dir/"* ]]; then na="$f"; break; fi
  done
  echo "== build (Release, -O3 -march=native) of $src in $dir"
  mkdir -p "$dir"
  cmake -S "$src" -B "$dir" -DCMAKE_BUILD_TYPE=Release -DLAMINAR_BUILD_TESTS=OFF \
    -DLAMINAR_BUILD_BENCH=ON -DCMAKE_C_FLAGS="-O3 -march=native" \
    ${na:+-DLAMINAR_NANOARROW_ARCHIVE="$na"} "$@" >"$dir/run-cmake.log" 2>&1 ||
    { cat "$dir/run-cmake.log" >&2; echo "run.sh: cmake configure failed" >&2; exit 1; }
  cmake --build "$dir" -j2 >"$dir/run-build.log" 2>&1 ||
    { tail -40 "$dir/run-build.log" >&2; echo "run.sh: build failed" >&2; exit 1; }
}

# ---- before/after of two revisions ---------------------------------------------------
if [[ ${#COMPARE[@]} -gt 0 ]]; then
  CMP="$ROOT/build-bench-cmp"
  labels=()
  for side in before after; do
    rev=${COMPARE[0]}
    [[ $side == after ]] && rev=${COMPARE[1]}
    if [[ -x "$rev/bench/bench_vwap" && -f "$rev/liblaminar.so" ]]; then
      dir="$(cd "$rev" && pwd)"  # an existing benchmark build tree
      src="$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$dir/CMakeCache.txt")"
      if [[ "${BENCH_PYTHON:-1}" != 0 && ! -d "$src/bindings/python" ]]; then
        echo "run.sh: the source of $dir ($src) is gone: Python W1 needs it" \
          "(or BENCH_PYTHON=0)" >&2
        exit 1
      fi
    else
      sha="$(git -C "$ROOT" rev-parse --short "$rev^{commit}")"
      src="$CMP/src-$sha"
      dir="$CMP/build-$sha"
      if [[ ! -d "$src" ]]; then
        mkdir -p "$src"
        git -C "$ROOT" archive "$sha" | tar -x -C "$src"
      fi
      build "$src" "$dir" -DLAMINAR_BUILD_JAVA=OFF
    fi
    echo "== $side: $rev ($dir)"
    B="$dir/bench"
    labels+=("W1-$side=$B/bench_vwap $N --reps 1 --only w1 --mode inline --pace 0"
      "W2-$side=$B/bench_vwap $N --reps 1 --only w2 --mode inline --pace 0")
    for v in hop session changes; do
      labels+=("$v-$side=$B/bench_windows $N --reps 1 --only $v")
    done
    # Python W1 with this revision's own package (its bindings/python built
    # against this build's core, into <build>/py) and its own bench script: a
    # package's cffi module needs the symbols of the core it was built with.
    if [[ "${BENCH_PYTHON:-1}" != 0 ]]; then
      if [[ ! -f "$dir/py/.installed" || "$dir/liblaminar.so" -nt "$dir/py/.installed" ]]; then
        echo "== Python package of $src into $dir/py"
        rm -rf "$dir/py" "$dir/py-src"
        # (built from a copy: pip's in-tree build leaves nothing in the source)
        cp -r "$src/bindings/python" "$dir/py-src"
        LAMINAR_LIBRARY="$dir/liblaminar.so" LAMINAR_SOURCE_DIR="$src" \
          "$PY" -m pip install -q --no-deps --target "$dir/py" \
          "$dir/py-src" >"$dir/run-py.log" 2>&1 ||
          { tail -40 "$dir/run-py.log" >&2; echo "run.sh: the Python package of $src failed to build" >&2; exit 1; }
        touch "$dir/py/.installed"
      fi
      labels+=("pyW1-$side=env PYTHONPATH=$dir/py $PY $src/bench/bench_python.py -n $N --reps 1 --workload W1")
    fi
  done
  # One interleave per workload, "before" first: its "paired" ratio is after / before.
  per=$(( ${#labels[@]} / 2 ))
  for ((i = 0; i < per; i++)); do
    echo "== ${labels[i]%%=*} vs ${labels[i + per]%%=*}, ${COMPARE[2]} rounds"
    "$ROOT/bench/interleave.sh" "${COMPARE[2]}" "${labels[i]}" "${labels[i + per]}"
  done
  exit 0
fi

BUILD="$ROOT/build-bench"
build "$ROOT" "$BUILD"
gcc -O3 -march=native -std=c17 -o "$BUILD/limit_vwap" "$SHARED/limit_vwap.c"
gcc -O3 -march=native -std=c17 -o "$BUILD/limit_asof" "$SHARED/limit_asof.c"

OUT="$BUILD/results"
rm -rf "$OUT"
mkdir -p "$OUT"
CPU="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//' || true)"
{
  echo "date=$(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "commit=$(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet HEAD -- src include bench || echo '+changes')"
  echo "machine=$(nproc) vCPUs, ${CPU:-unknown CPU}"
  echo "load_before=$(cut -d' ' -f1-3 /proc/loadavg)"
  echo "n=$N"
  echo "reps=$REPS"
  echo "quick=$QUICK"
} >"$OUT/meta.txt"
cat "$OUT/meta.txt"

STATUS=0
# run <key> <command...>: run one benchmark, its output in $OUT/<key>.txt and the exact
# command (relative to the repository) in $OUT/commands.txt; a failure is remembered.
run() {
  local key=$1; shift
  local shown="${*//$ROOT\//}"
  shown="${shown//$PY/python}"
  echo "$key	$shown" >>"$OUT/commands.txt"
  echo "== $key: $shown"
  "$@" 2>&1 | tee "$OUT/$key.txt" || { echo "$key	failed" >>"$OUT/failed.txt"; STATUS=1; }
}
rate_of() {  # rate_of <tag> <file>: the "X M rows/s" figure of line "RESULT <tag> ..."
  sed -n "s/^RESULT $1 .* \([0-9.][0-9.]*\) M rows\/s.*/\1/p" "$2" | head -1
}

B="$BUILD/bench"
run limit_vwap "$BUILD/limit_vwap" "$N" "$REPS"
W1B="$(rate_of W1b "$OUT/limit_vwap.txt")"
W2B="$(rate_of W2b "$OUT/limit_vwap.txt")"
if [[ -z "$W1B" || -z "$W2B" ]]; then
  echo "run.sh: could not parse RESULT W1b / W2b from limit_vwap's output" >&2
  exit 1
fi
run limit_asof "$BUILD/limit_asof" "$N" "$REPS"
run vwap "$B/bench_vwap" "$N" --reps "$REPS" --w1b-rows-per-s "${W1B}e6" \
  --w2b-rows-per-s "${W2B}e6"
run windows "$B/bench_windows" "$N" --reps "$REPS" --w1b-rows-per-s "${W1B}e6"
W3B="$(rate_of W3b "$OUT/limit_asof.txt")"
run asof "$B/bench_asof" "$N" --reps "$REPS" ${W3B:+--w3b-rows-per-s "${W3B}e6"}
run interval "$B/bench_asof" "$N" --reps "$REPS" --interval 50 \
  ${W3B:+--w3b-rows-per-s "${W3B}e6"}
run lookup "$B/bench_lookup" "$N" --reps "$REPS" --w1b-rows-per-s "${W1B}e6"
CORES="${BENCH_CORES:-2}"
run cores "$B/bench_vwap" "$N" --only w1 --mode threaded --pace 0 --reps "$REPS" \
  --cores "1,$CORES" --w1b-rows-per-s "${W1B}e6"
run cores_queued "$B/bench_vwap" "$N" --only w1 --mode threaded --pace 0 --reps "$REPS" \
  --cores "1,$CORES" --prequeue --w1b-rows-per-s "${W1B}e6"
# User-defined functions (issue 23): W1 inline with a C scalar function in the select
# list, and with a C aggregate; W1 with a Python function (below, with DuckDB's).
run udf "$B/bench_vwap" "$N" --reps "$REPS" --only w1 --mode inline --pace 0 --udf \
  --w1b-rows-per-s "${W1B}e6"
run udaf "$B/bench_vwap" "$N" --reps "$REPS" --only w1 --mode inline --pace 0 --udaf \
  --w1b-rows-per-s "${W1B}e6"
if [[ "${BENCH_PYTHON:-1}" != 0 ]]; then
  run python "$PY" "$ROOT/bench/bench_python.py" -n "$N" --reps "$REPS" \
    --limit-w1b "$W1B" --limit-w2b "$W2B"
  run python_asof "$PY" "$ROOT/bench/bench_asof.py" -n "$N" --reps "$REPS" \
    ${W3B:+--limit-w3b "$W3B"}
  # DuckDB's interval join (a hash join on symbol, then the time filter) takes
  # minutes at 10^7 events: W3i from Python runs on BENCH_INTERVAL_N (10^6).
  run python_interval "$PY" "$ROOT/bench/bench_asof.py" -n "${BENCH_INTERVAL_N:-1e6}" \
    --reps "$REPS" --interval 50 ${W3B:+--limit-w3b "$W3B"}
  run python_lookup "$PY" "$ROOT/bench/bench_lookup.py" "$N" --reps "$REPS" --w1b "$W1B"
  run python_udf "$PY" "$ROOT/bench/bench_udf.py" -n "$N" --reps "$REPS" --limit-w1b "$W1B"
fi
JAVA_LIB="$BUILD/bindings/java/liblaminar_jni.so"
if [[ "${BENCH_JAVA:-1}" != 0 && -f "$JAVA_LIB" ]]; then
  C_W1="$(sed -n 's/^RESULT W1 *inline .* \([0-9.][0-9.]*\) M rows\/s.*/\1/p' "$OUT/vwap.txt")"
  JAVA_OPTS="-Xmx2g" run java "$ROOT/bindings/java/run.sh" "$BUILD/bindings/java" \
    "$BUILD/bindings/java/maven" org.laminardb.W1Bench "$N" --reps "$REPS" \
    --w1b-rows-per-s "${W1B}e6" ${C_W1:+--c-rows-per-s "${C_W1}e6"}
fi
for mode in off async sync; do
  dirarg=()
  if [[ $mode != off ]]; then
    dirarg=(--data-dir "$(mktemp -d)")
  fi
  run "durable_$mode" "$B/bench_vwap" "$N" --reps "$REPS" --only w1 --mode inline \
    --pace 0 --durable "$mode" "${dirarg[@]}" --w1b-rows-per-s "${W1B}e6"
  if [[ $mode != off ]]; then rm -rf "${dirarg[1]}"; fi
done
if [[ $QUICK == 1 ]]; then
  WAL_BATCHES=50; CKPT_GROUPS=400000; REC=1000000
  LAT=(--seconds 1 --runs 1 --strategy park)
  SPARK=(--rows 1000000 --reps 1); MPSC=5000000; RING=10000000
else
  WAL_BATCHES=200; CKPT_GROUPS=1600000; REC=10000000
  LAT=(--seconds 3 --runs 3 --strategy all)
  SPARK=(--rows 5000000 --reps 3); MPSC=20000000; RING=100000000
fi
run wal "$B/bench_wal" "$WAL_BATCHES"
run checkpoint "$B/bench_checkpoint" "$CKPT_GROUPS"
if [[ "${BENCH_PYTHON:-1}" != 0 ]]; then
  run recovery "$PY" "$ROOT/bench/bench_recovery.py" --groups "$REC" --wal-rows "$REC"
fi
run latency "$B/bench_latency" --rate 10000 "${LAT[@]}"
if [[ "${BENCH_PYTHON:-1}" != 0 ]]; then
  run py_latency "$PY" "$ROOT/bench/bench_latency.py" --rate 10000 "${LAT[@]}"
fi
run mpsc "$B/bench_mpsc" "$MPSC"
run ring "$B/bench_ring" "$RING"
run wide_push "$B/bench_wide_push" 9
# Kafka (issue 24): bench_kafka and bench/bench_kafka.py against a broker of this run's
# own (tests/kafka/broker.sh: KRaft on 127.0.0.1, state in build-bench/kafka-broker),
# stopped when the script exits. Skipped, with the reason, when the build has no
# librdkafka or the broker does not start.
if [[ "${BENCH_KAFKA:-1}" != 0 ]]; then
  KHOME="$BUILD/kafka-broker"
  if "$B/bench_kafka" 2>&1 | grep -q 'built without Kafka'; then
    echo "run.sh: Kafka skipped: the library was built without librdkafka" \
      "(librdkafka-dev, docs/KAFKA.md)" >&2
  elif ! LAMINAR_KAFKA_HOME="$KHOME" "$ROOT/tests/kafka/broker.sh" start \
    >"$OUT/kafka_broker.log" 2>&1; then
    echo "run.sh: Kafka skipped: the broker did not start (tests/kafka/broker.sh;" \
      "its output: $OUT/kafka_broker.log):" >&2
    tail -5 "$OUT/kafka_broker.log" >&2
  else
    trap 'LAMINAR_KAFKA_HOME="$KHOME" "$ROOT/tests/kafka/broker.sh" stop >/dev/null 2>&1 || true' EXIT
    KB="$(sed -n 's/^bootstrap.servers=//p' "$OUT/kafka_broker.log" | tail -1)"
    run kafka "$B/bench_kafka" "$KB" "$N" "$REPS"
    BARE="$(sed -n 's/^RESULT kafka_json_bare \([0-9.]*\) M rows\/s.*/\1/p' "$OUT/kafka.txt")"
    KTOPIC="$(sed -n 's/^kafka: json topic //p' "$OUT/kafka.txt")"
    if [[ "${BENCH_PYTHON:-1}" == 0 ]]; then
      :
    elif ! "$PY" -c 'import confluent_kafka' 2>/dev/null; then
      echo "run.sh: the Python Kafka client run skipped: no confluent-kafka for $PY" \
        "(pip install -r bench/requirements.txt)" >&2
    elif [[ -n "$BARE" && -n "$KTOPIC" ]]; then
      KPN="${BENCH_KAFKA_PY_N:-$(( N < 1000000 ? N : 1000000 ))}"
      run kafka_python "$PY" "$ROOT/bench/bench_kafka.py" "$KB" -n "$KPN" --reps "$REPS" \
        --topic "$KTOPIC" --bare-rate "$BARE"
    fi
    LAMINAR_KAFKA_HOME="$KHOME" "$ROOT/tests/kafka/broker.sh" stop >/dev/null 2>&1 || true
    trap - EXIT
  fi
fi
if [[ "${BENCH_SPARK:-1}" != 0 && "${BENCH_PYTHON:-1}" != 0 ]]; then
  run spark "$PY" "$ROOT/bench/bench_spark.py" "${SPARK[@]}"
  # The other Spark line (issue 22: 4.x and 3.5 in the same run): scripts/test.sh
  # step 4b's venv, which holds PySpark 3.5 and the wheel.
  PY35="${PYTHON_SPARK35:-$ROOT/.venv-spark35/bin/python}"
  if [[ -x "$PY35" ]] && "$PY35" -c 'import laminardb.spark, pyspark' 2>/dev/null; then
    run spark35 "$PY35" "$ROOT/bench/bench_spark.py" "${SPARK[@]}"
  else
    echo "run.sh: no PySpark 3.5 venv ($PY35; scripts/test.sh step 4b makes it):" \
      "the Spark 3.5 line is not run" >&2
  fi
fi
run limit_vwap_after "$BUILD/limit_vwap" "$N" "$REPS"
echo "load_after=$(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/meta.txt"

# ---- the tables, the plot, the doc -----------------------------------------------------
docs=()
if [[ "${BENCH_DOCS:-1}" != 0 ]]; then
  docs=(--docs "$ROOT/docs")
fi
python3 "$ROOT/bench/report.py" "$OUT" "${docs[@]}" || STATUS=1
if [[ ${#docs[@]} -gt 0 ]]; then
  if "$PY" -c 'import matplotlib' 2>/dev/null; then
    "$PY" "$ROOT/bench/plot.py" "$ROOT/docs/benchmarks/ratios.csv" \
      "$ROOT/docs/benchmarks/ratios.png" || STATUS=1
  else
    echo "run.sh: no matplotlib for $PY (pip install -r bench/requirements.txt):" \
      "docs/benchmarks/ratios.png not redrawn" >&2
  fi
fi
echo "(raw output: $OUT)"
exit "$STATUS"

#!/usr/bin/env bash
# run.sh -- build the benchmarks (Release, -O3 -march=native) into build-bench/ and run
# them next to the "speed of light" shared/bench/limit_vwap.c in the same invocation, so
# the ratios compare figures taken on the same machine minutes apart (docs/BENCHMARKS.md).
# limit_vwap runs before and after the engine benchmarks; the summary's ratios divide by
# the faster of the two (bench_vwap's own RESULT lines use the first run).
#
#   bench/run.sh [N]          N events (default 10000000; or BENCH_N=...)
#   BENCH_REPS=5 bench/run.sh reps per figure (default 3; median reported)
#   BENCH_RING_ITEMS=1e8      items for bench_ring (default 100000000)
#   BENCH_JAVA=0              skip W1 from Java (bindings/java W1Bench)
#   BENCH_CORES=4             reactors for the thread-per-core scaling (default 2)
#
# Exit status: non-zero if a build fails, limit_vwap is missing, or a result check fails.
set -euo pipefail

ROOT="$(git -C "$(dirname "${BASH_SOURCE[0]}")" rev-parse --show-toplevel)"
N="${BENCH_N:-${1:-10000000}}"
REPS="${BENCH_REPS:-3}"
RING_ITEMS="${BENCH_RING_ITEMS:-100000000}"
BUILD="$ROOT/build-bench"
LIMIT_SRC="$ROOT/../shared/bench/limit_vwap.c"

if [[ ! -f "$LIMIT_SRC" ]]; then
  echo "run.sh: the reference $LIMIT_SRC is missing." >&2
  echo "run.sh: the ratios need limit_vwap.c from the shared bench directory" \
    "next to the repository." >&2
  exit 1
fi

# Reuse a nanoarrow archive another build tree already fetched (no network needed then).
NA_ARCHIVE=""
for f in "$ROOT"/build*/_deps/nanoarrow/nanoarrow-0.9.0.tar.gz; do
  if [[ -f "$f" && "$f" != "$BUILD/"* ]]; then NA_ARCHIVE="$f"; break; fi
done

echo "== build (Release, -O3 -march=native) in $BUILD"
mkdir -p "$BUILD"
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DLAMINAR_BUILD_TESTS=OFF \
  -DLAMINAR_BUILD_BENCH=ON -DCMAKE_C_FLAGS="-O3 -march=native" \
  ${NA_ARCHIVE:+-DLAMINAR_NANOARROW_ARCHIVE="$NA_ARCHIVE"} >"$BUILD/run-cmake.log" 2>&1 ||
  { cat "$BUILD/run-cmake.log" >&2; echo "run.sh: cmake configure failed" >&2; exit 1; }
cmake --build "$BUILD" -j2 >"$BUILD/run-build.log" 2>&1 ||
  { tail -40 "$BUILD/run-build.log" >&2; echo "run.sh: build failed" >&2; exit 1; }
gcc -O3 -march=native -std=c17 -o "$BUILD/limit_vwap" "$LIMIT_SRC"

OUT="$BUILD/results"
mkdir -p "$OUT"
CPU="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//' || true)"
echo "== machine: $(nproc) CPUs online; ${CPU:-unknown CPU}; load: $(cut -d' ' -f1-3 /proc/loadavg)"

rate_of() {  # rate_of <tag> <file>: the "X M rows/s" figure of line "RESULT <tag> ..."
  sed -n "s/^RESULT $1 .* \([0-9.][0-9.]*\) M rows\/s.*/\1/p" "$2" | head -1
}
max_of() { awk -v a="$1" -v b="$2" 'BEGIN { print (a + 0 > b + 0) ? a : b }'; }

# limit_vwap runs before and after bench_vwap; the ratios use the faster of the two
# (the conservative choice on a shared, noisy machine: a slow limit run would flatter us).
echo "== limit_vwap $N $REPS (before)"
"$BUILD/limit_vwap" "$N" "$REPS" | tee "$OUT/limit_vwap.txt"
W1B="$(rate_of W1b "$OUT/limit_vwap.txt")"
W2B="$(rate_of W2b "$OUT/limit_vwap.txt")"
if [[ -z "$W1B" || -z "$W2B" ]]; then
  echo "run.sh: could not parse RESULT W1b / W2b from limit_vwap's output" >&2
  exit 1
fi

echo "== bench_vwap $N --reps $REPS"
STATUS=0
"$BUILD/bench/bench_vwap" "$N" --reps "$REPS" --w1b-rows-per-s "${W1B}e6" \
  --w2b-rows-per-s "${W2B}e6" | tee "$OUT/bench_vwap.txt" || STATUS=$?

# W1 from Java (bindings/java W1Bench, docs/BENCHMARKS.md "Java"), when the build made
# the JNI library (a JDK and mvn were found); BENCH_JAVA=0 skips it.
JAVA_LIB="$BUILD/bindings/java/liblaminar_jni.so"
if [[ "${BENCH_JAVA:-1}" != 0 && -f "$JAVA_LIB" ]]; then
  echo "== W1Bench $N --reps $REPS (Java)"
  C_W1="$(sed -n 's/^RESULT W1 *inline .* \([0-9.][0-9.]*\) M rows\/s.*/\1/p' "$OUT/bench_vwap.txt")"
  JAVA_OPTS="-Xmx2g" "$ROOT/bindings/java/run.sh" "$BUILD/bindings/java" \
    "$BUILD/bindings/java/maven" org.laminardb.W1Bench "$N" --reps "$REPS" \
    --w1b-rows-per-s "${W1B}e6" ${C_W1:+--c-rows-per-s "${C_W1}e6"} \
    | tee "$OUT/bench_java.txt" || STATUS=$?
else
  : >"$OUT/bench_java.txt"
fi
# Thread-per-core: W1 on 1 reactor vs BENCH_CORES (default 2) reactors, pushed by a
# producer thread (threaded) and pre-queued (the reactors alone, no producer competing).
CORES="${BENCH_CORES:-2}"
echo "== bench_vwap $N --only w1 --cores 1,$CORES (thread-per-core scaling; load: $(cut -d' ' -f1-3 /proc/loadavg))"
{ "$BUILD/bench/bench_vwap" "$N" --only w1 --mode threaded --pace 0 --reps "$REPS" \
    --cores "1,$CORES" --w1b-rows-per-s "${W1B}e6" &&
  "$BUILD/bench/bench_vwap" "$N" --only w1 --mode threaded --pace 0 --reps "$REPS" \
    --cores "1,$CORES" --prequeue --w1b-rows-per-s "${W1B}e6"; } |
  tee "$OUT/bench_cores.txt" || STATUS=$?

echo "== bench_windows $N --reps $REPS (hop, session, EMIT CHANGES variants of W1)"
"$BUILD/bench/bench_windows" "$N" --reps "$REPS" --w1b-rows-per-s "${W1B}e6" |
  tee "$OUT/bench_windows.txt" || STATUS=$?

echo "== limit_vwap $N $REPS (after)"
"$BUILD/limit_vwap" "$N" "$REPS" | tee "$OUT/limit_vwap_after.txt"
W1B_BEFORE="$W1B"
W2B_BEFORE="$W2B"
W1B="$(max_of "$W1B" "$(rate_of W1b "$OUT/limit_vwap_after.txt")")"
W2B="$(max_of "$W2B" "$(rate_of W2b "$OUT/limit_vwap_after.txt")")"

if [[ -x "$BUILD/bench/bench_ring" ]]; then
  echo "== bench_ring $RING_ITEMS"
  "$BUILD/bench/bench_ring" "$RING_ITEMS" | tee "$OUT/bench_ring.txt" || STATUS=$?
else
  : >"$OUT/bench_ring.txt"
fi

# ---- summary table ----------------------------------------------------------------
field() {  # field <regex selecting the line> <file> <awk program on that line>
  grep -E "$1" "$2" | head -1 | awk "$3"
}
mrows() { field "^RESULT $1 +$2 " "$OUT/bench_vwap.txt" \
  '{for (i = 1; i < NF; i++) if ($(i+1) == "M" && $(i+2) == "rows/s") print $i}'; }
ratio() {  # ratio <W1|W2> <mode>: M rows/s over the faster limit run's W1b / W2b
  local lim
  lim="$([[ $1 == W1 ]] && echo "$W1B" || echo "$W2B")"
  awk -v a="$(mrows "$1" "$2")" -v b="$lim" \
    'BEGIN { if (a != "" && b > 0) printf "%.3f", a / b }'
}
lat() { field "^LATENCY $1 +$2 " "$OUT/bench_vwap.txt" \
  '{ for (i = 1; i <= NF; i++)
       if ($i ~ /^p(50|99|99\.9)=/) { sub(/^p[0-9.]*=/, "", $i); s = s (s ? "/" : "") $i }
     print s }'; }

echo
W1B_AFTER="$(rate_of W1b "$OUT/limit_vwap_after.txt")"
W2B_AFTER="$(rate_of W2b "$OUT/limit_vwap_after.txt")"
echo "== summary (N=$N, median of $REPS; limit = the faster of two runs:" \
  "W1b=$W1B, W2b=$W2B M rows/s;"
echo "   before/after: W1b $W1B_BEFORE/$W1B_AFTER, W2b $W2B_BEFORE/$W2B_AFTER)"
printf "%-22s %12s %10s %8s   %s\n" "benchmark" "M rows/s" "ratio" "target" \
  "latency p50/p99/p99.9 us"
for w in W1 W2; do
  target=$([[ $w == W1 ]] && echo ">=0.5" || echo ">=0.4")
  for m in inline threaded; do
    l="$( [[ $m == threaded ]] && lat "$w" threaded || true)"
    printf "%-22s %12s %10s %8s   %s\n" "$w $m" "$(mrows "$w" "$m")" \
      "$(ratio "$w" "$m")x ${w}b" "$target" "${l:--}"
  done
  printf "%-22s %12s %10s %8s   %s\n" "$w paced (50%)" "-" "-" "-" \
    "$(lat "$w" 'paced@[0-9]+%')"
done
for m in inline threaded; do
  jw1="$(sed -n "s/^RESULT JW1 *$m .* \([0-9.][0-9.]*\) M rows\/s.*/\1/p" "$OUT/bench_java.txt")"
  if [[ -n "$jw1" ]]; then
    printf "%-22s %12s %10s %8s   %s\n" "Java W1 $m" "$jw1" \
      "$(awk -v a="$jw1" -v b="$W1B" 'BEGIN { printf "%.3f", a / b }')x W1b" ">=0.4" \
      "$(awk -v a="$jw1" -v c="$(mrows W1 inline)" \
         'BEGIN { if (c > 0) printf "%.2fx C W1 inline", a / c }')"
  fi
done
wmrows() { field "^RESULT $1 " "$OUT/bench_windows.txt" \
  '{for (i = 1; i < NF; i++) if ($(i+1) == "M" && $(i+2) == "rows/s") print $i}'; }
for v in hop session changes running session_changes; do
  target=$(case $v in hop | changes | session_changes) echo ">=0.15" ;; session) echo ">=0.2" ;; *) echo "-" ;; esac)
  r="$(awk -v a="$(wmrows "$v")" -v b="$W1B" 'BEGIN { if (a != "" && b > 0) printf "%.3f", a / b }')"
  printf "%-22s %12s %10s %8s\n" "W1 $v inline" "$(wmrows "$v")" "${r}x W1b" "$target"
done
for m in threaded queued; do
  sc="$(sed -n "s/^SCALING W1 $m cores=[0-9]*\/1 .* ratio \([0-9.]*\).*/\1/p" "$OUT/bench_cores.txt")"
  printf "%-22s %12s %10s %8s\n" "W1 $m cores=$CORES/1" "-" "${sc:-?}x" ">=1.7"
done
if [[ -s "$OUT/bench_ring.txt" ]]; then
  printf "%-22s %12s %10s %8s\n" "SPSC ring single" \
    "$(field '^single' "$OUT/bench_ring.txt" '{print $4}')" "-" ">=50M"
  printf "%-22s %12s %10s %8s\n" "SPSC ring batch 64" \
    "$(field '^batch' "$OUT/bench_ring.txt" '{print $4}')" "-" ">=50M"
fi
echo "(raw output: $OUT)"
exit "$STATUS"

#!/usr/bin/env bash
# interleave.sh -- A/B runs on a noisy machine: run each labelled command once per
# round, ROUNDS times, interleaved (a drift of the machine's speed hits every
# label alike; each round starts one label later than the last), and print per
# label the median, min and max of the time on the first
# "RESULT ... median <seconds> s" line each run prints, and for every
# label after the first the median of its per-round ratio to the first
# label's time (paired within a round, so the machine's drift cancels). With
# LINES="RESULT THREADCPU" in the environment it reports each of those lines
# (THREADCPU: bench_vwap's CPU time of the engine's thread in inline runs).
#
#   bench/interleave.sh ROUNDS 'label=command' ['label=command' ...]
#
# "{dir}" in a command is replaced by a fresh empty directory per run (removed
# after it), for durable runs. Example (docs/BENCHMARKS.md, "Durability overhead"):
#
#   B=build/bench/bench_vwap; A="10000000 --reps 1 --only w1 --pace 0"
#   bench/interleave.sh 8 "inline-off=$B $A --mode inline --durable off" \
#     "inline-async=$B $A --mode inline --durable async --data-dir {dir}"
set -euo pipefail
if [ $# -lt 2 ]; then
  sed -n '2,14p' "$0" >&2
  exit 2
fi
rounds=$1
lines=${LINES:-RESULT}
shift
raw=$(mktemp)
trap 'rm -f "$raw"' EXIT
specs=("$@")
n=${#specs[@]}
for ((i = 0; i < rounds; i++)); do
  # Round i starts at label i mod n: a run's place in its round (after which
  # other run, what it left in the page cache or on the disk) is spread evenly
  # over the labels.
  for ((j = 0; j < n; j++)); do
    spec=${specs[(i + j) % n]}
    label=${spec%%=*}
    cmd=${spec#*=}
    dir=""
    if [[ $cmd == *"{dir}"* ]]; then
      dir=$(mktemp -d)
      cmd=${cmd//\{dir\}/$dir}
    fi
    out=$($cmd 2>&1 || true)
    [ -n "$dir" ] && rm -rf "$dir"
    for line in $lines; do
      secs=$(awk -v line="$line" '$1 == line { for (k = 1; k < NF; k++) if ($k == "median") { print $(k + 1); exit } }' <<< "$out")
      if [ -z "$secs" ]; then
        echo "interleave.sh: '$label' printed no $line line" >&2
        exit 1
      fi
      echo "$label/$line $secs" >> "$raw"
    done
  done
done
for line in $lines; do
  for spec in "$@"; do
    label=${spec%%=*}
    name=$label
    [ "$lines" = RESULT ] || name="$label $line"
    awk -v l="$label/$line" '$1 == l { print $2 }' "$raw" | sort -g |
      awk -v l="$name" '{ v[NR] = $1 } END {
        printf "%-24s median %.4f s  min %.4f  max %.4f  (n=%d)", l, v[int((NR + 1) / 2)], v[1], v[NR], NR }'
    # Paired with the first label's run of the same round (the rounds'
    # drift cancels): the median of the per-round time ratios.
    first=${1%%=*}
    if [ "$label" != "$first" ]; then
      paste <(awk -v l="$label/$line" '$1 == l { print $2 }' "$raw") \
        <(awk -v l="$first/$line" '$1 == l { print $2 }' "$raw") |
        awk '{ print $1 / $2 }' | sort -g |
        awk -v f="$first" '{ v[NR] = $1 } END { printf "  paired: %.3f x %s", v[int((NR + 1) / 2)], f }'
    fi
    echo
  done
done

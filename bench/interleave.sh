#!/usr/bin/env bash
# interleave.sh -- A/B runs on a noisy machine: run each labelled command once per
# round, ROUNDS times, interleaved (a drift of the machine's speed hits every
# label alike), and print per label the median, min and max of the time on
# the first "RESULT ... median <seconds> s" line each run prints.
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
shift
raw=$(mktemp)
trap 'rm -f "$raw"' EXIT
for ((i = 0; i < rounds; i++)); do
  for spec in "$@"; do
    label=${spec%%=*}
    cmd=${spec#*=}
    dir=""
    if [[ $cmd == *"{dir}"* ]]; then
      dir=$(mktemp -d)
      cmd=${cmd//\{dir\}/$dir}
    fi
    secs=$($cmd 2>&1 | awk '/^RESULT/ { for (k = 1; k < NF; k++) if ($k == "median") { print $(k + 1); exit } }')
    [ -n "$dir" ] && rm -rf "$dir"
    if [ -z "$secs" ]; then
      echo "interleave.sh: '$label' printed no RESULT line" >&2
      exit 1
    fi
    echo "$label $secs" >> "$raw"
  done
done
for spec in "$@"; do
  label=${spec%%=*}
  awk -v l="$label" '$1 == l { print $2 }' "$raw" | sort -g |
    awk -v l="$label" '{ v[NR] = $1 } END {
      printf "%-24s median %.4f s  min %.4f  max %.4f  (n=%d)\n", l, v[int((NR + 1) / 2)], v[1], v[NR], NR }'
done

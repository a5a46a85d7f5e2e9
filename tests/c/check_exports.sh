#!/usr/bin/env bash
# check_exports.sh LIB HEADER -- the dynamic symbols liblaminar.so defines must be
# exactly the laminar_* functions laminar.h declares (STYLE §1.2).
set -euo pipefail
lib=$1 header=$2
exported=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TW]$/ {print $3}' | sed 's/@.*//' | sort -u)
declared=$(grep -oE 'LAMINAR_API [^;]*\b(laminar_[a-z0-9_]+)\(' "$header" |
           grep -oE 'laminar_[a-z0-9_]+\($' | tr -d '(' | sort -u)
if [ "$exported" != "$declared" ]; then
  echo "exported vs declared differ:"
  diff <(echo "$exported") <(echo "$declared") || true
  exit 1
fi
others=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TWDBR]$/ {print $3}' | sed 's/@.*//' | grep -v '^laminar_' | grep -v '^LAMINAR_0$' || true)
if [ -n "$others" ]; then
  echo "unexpected exported symbols:"; echo "$others"; exit 1
fi
echo "exports: $(echo "$exported" | wc -l) functions, equal to laminar.h"

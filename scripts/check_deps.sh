#!/usr/bin/env bash
# check_deps.sh [SRC_DIR] -- the include rules between the modules of src/
# (STYLE §1.6, docs/ARCHITECTURE.md §1), checked from the #include lines:
#   1. no file includes another module's internal.h ("<module>/internal.h" is
#      private to src/<module>/);
#   2. every include of another module goes down the layer order below (or
#      sideways within one layer), and the module graph has no cycle -- so no
#      back edge such as rt -> db or util -> anything.
# Prints the module graph (each module and the modules it includes), then
# every violation as FILE:LINE: why. Exit 0 when clean, 1 otherwise.
# Run it by hand (bash scripts/check_deps.sh) or through ctest (check_deps).
set -euo pipefail
src=${1:-"$(cd "$(dirname "$0")/.." && pwd)/src"}

# The layers, top to bottom: a module may include its own layer's modules
# and any layer below it. sink/ is ring 1 with store/ (DESIGN §2), but it
# consumes batches (arrow/), formats values (expr/) and writes through
# store/'s fs layer, and rt/ drives it: it sits with the operators. connect/
# (the Kafka source's consumer thread) feeds a source through the public push
# API and builds batches (arrow/): db/ starts it, beside the sinks.
layers=(
  "db"
  "rt"
  "plan"
  "op sql sink connect"
  "state arrow agg"
  "chan store expr"
  "util"
)

declare -A rank=()
for i in "${!layers[@]}"; do
  for m in ${layers[$i]}; do rank[$m]=$i; done
done

status=0
declare -A edges=()
for dir in "$src"/*/; do
  mod=$(basename "$dir")
  if [ -z "${rank[$mod]+x}" ]; then
    echo "src/$mod: a module the layer order does not place (add it to scripts/check_deps.sh and docs/ARCHITECTURE.md §1)"
    status=1
    continue
  fi
  while IFS=: read -r file line text; do
    inc=$(printf '%s' "$text" | sed -E 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"([^"]*)".*/\1/')
    case "$inc" in */*) ;; *) continue ;; esac
    other=${inc%%/*}
    [ "$other" = "$mod" ] && continue
    [ -z "${rank[$other]+x}" ] && continue # not a module of src/ (e.g. nanoarrow/)
    rel=${file#"$src"/}
    if [ "${inc#*/}" = "internal.h" ]; then
      echo "src/$rel:$line: includes $inc, private to src/$other"
      status=1
    fi
    if [ "${rank[$other]}" -lt "${rank[$mod]}" ]; then
      echo "src/$rel:$line: $mod -> $other goes up the layer order (${layers[*]// /\/})"
      status=1
    fi
    edges["$mod $other"]=1
  done < <(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$dir"*.[ch] /dev/null || true)
done

# The module graph, and a cycle check over it (edges within a layer included).
declare -A out=()
for e in "${!edges[@]}"; do
  read -r a b <<<"$e"
  out[$a]="${out[$a]:-} $b"
done
echo "module graph:"
for m in $(printf '%s\n' "${!rank[@]}" | LC_ALL=C sort); do
  printf '  %-6s -> %s\n' "$m" "$(printf '%s\n' ${out[$m]:-} | LC_ALL=C sort | tr '\n' ' ')"
done
declare -A state=() # 1: on the path, 2: done
visit() {
  local m=$1 n
  state[$m]=1
  for n in ${out[$m]:-}; do
    if [ "${state[$n]:-0}" = 1 ]; then
      echo "cycle through $m -> $n"
      status=1
    elif [ "${state[$n]:-0}" = 0 ]; then
      visit "$n"
    fi
  done
  state[$m]=2
}
for m in "${!rank[@]}"; do
  [ "${state[$m]:-0}" = 0 ] && visit "$m"
done

if [ "$status" = 0 ]; then
  echo "check_deps: ok (no foreign internal.h, no edge against ${layers[*]// /\/})"
else
  echo "check_deps: FAILED"
fi
exit "$status"

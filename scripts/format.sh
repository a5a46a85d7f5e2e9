#!/usr/bin/env bash
# format.sh -- the C sources' format (.clang-format: Google base, 90 columns).
#
#   scripts/format.sh --check   exit 1 listing the files clang-format would change,
#                               with the lines changed in each and in all; 0 if none
#   scripts/format.sh --fix     rewrite those files in place
#
# The files: every tracked *.c / *.h of src/, include/, tests/, bench/ and
# bindings/ (git ls-files, so build trees and fetched sources are never touched).
# Environment: CLANG_FORMAT (the binary, default clang-format; version 14 or newer).
# Exit status: 0 formatted, 1 files differ (--check), 2 usage or clang-format missing
# or failing (e.g. an option the installed version does not know).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

mode=${1:-}
case "$mode" in
  --check | --fix) ;;
  *) sed -n '2,12p' "$0" >&2; exit 2 ;;
esac
cf=${CLANG_FORMAT:-clang-format}
if ! command -v "$cf" > /dev/null; then
  echo "format.sh: $cf not found (apt-get install clang-format, or set CLANG_FORMAT)" >&2
  exit 2
fi

mapfile -t files < <(git ls-files -- 'src/*.[ch]' 'include/*.h' 'tests/*.[ch]' \
  'bench/*.[ch]' 'bindings/*.[ch]')

if [ "$mode" = --fix ]; then
  "$cf" --style=file -i -- "${files[@]}"
  echo "format.sh: formatted ${#files[@]} files"
  exit 0
fi

tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
differ=0
total=0
for f in "${files[@]}"; do
  if ! "$cf" --style=file -- "$f" > "$tmp"; then
    echo "format.sh: $cf failed on $f" >&2
    exit 2
  fi
  if ! cmp -s "$f" "$tmp"; then
    n=$(diff -U0 "$f" "$tmp" | tail -n +3 | grep -c '^[-+]' || true)
    echo "$f: $n lines differ"
    differ=$((differ + 1))
    total=$((total + n))
  fi
done
if [ "$differ" -gt 0 ]; then
  echo "format.sh: $differ of ${#files[@]} files differ from .clang-format" \
    "($total changed lines); scripts/format.sh --fix rewrites them"
  exit 1
fi
echo "format.sh: ${#files[@]} files formatted"

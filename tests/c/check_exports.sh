#!/usr/bin/env bash
# check_exports.sh LIB HEADER [NM] [CC] -- the dynamic symbols liblaminar.so
# defines must be exactly the laminar_* functions laminar.h declares (STYLE §1.2):
# nothing missing (a declared function not built or hidden), nothing extra (a
# helper, nanoarrow's Arrow*/LaminarNanoarrow* symbols, data). The header is read
# after the preprocessor has removed its comments, so prose naming a function
# does not count as a declaration; every declaration must carry LAMINAR_API.
set -euo pipefail
lib=$1 header=$2 nm=${3:-nm} cc=${4:-cc}
[ -n "$nm" ] || nm=nm
[ -n "$cc" ] || cc=cc

# Defined dynamic symbols, minus the version node itself (type A, "LAMINAR_0").
exported=$("$nm" -D --defined-only "$lib" | awk 'NF >= 3 && $2 != "A" {print $3}' |
           sed 's/@.*//' | LC_ALL=C sort -u)

# Declarations: one statement per line. With LAMINAR_BUILDING_LIBRARY defined,
# LAMINAR_API expands to a visibility attribute, which marks the declarations.
decls=$("$cc" -E -P -x c -DLAMINAR_BUILDING_LIBRARY "$header" |
        tr '\n' ' ' | tr ';' '\n')
declared=$(printf '%s\n' "$decls" | grep -oE '\blaminar_[a-z0-9_]+[[:space:]]*\(' |
           sed -E 's/[[:space:]]*\($//' | LC_ALL=C sort -u || true)
no_api=$(printf '%s\n' "$decls" | grep -E '\blaminar_[a-z0-9_]+[[:space:]]*\(' |
         grep -v 'visibility' || true)

status=0
if [ -z "$declared" ]; then
  echo "no laminar_* function declarations found in $header"
  status=1
fi
if [ -n "$no_api" ]; then
  echo "declarations without LAMINAR_API:"
  printf '  %s\n' "$no_api"
  status=1
fi
missing=$(LC_ALL=C comm -13 <(printf '%s\n' "$exported") <(printf '%s\n' "$declared"))
extra=$(LC_ALL=C comm -23 <(printf '%s\n' "$exported") <(printf '%s\n' "$declared"))
if [ -n "$missing" ]; then
  echo "declared in laminar.h but not exported by $(basename "$lib"):"
  printf '  %s\n' $missing
  status=1
fi
if [ -n "$extra" ]; then
  echo "exported by $(basename "$lib") but not declared in laminar.h:"
  printf '  %s\n' $extra
  status=1
fi
if [ "$status" -eq 0 ]; then
  echo "exports: $(printf '%s\n' "$declared" | wc -l) functions, equal to laminar.h"
fi
exit "$status"

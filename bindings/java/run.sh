#!/usr/bin/env bash
# run.sh -- run a Java main class of the binding (main or test classes) in a plain JVM,
# the way docs/JAVA.md tells users to: the native library found through the system
# property laminardb.library.path. Used by ctest (java_quickstart) and bench/run.sh (W1Bench).
#
#   bindings/java/run.sh NATIVE_DIR BUILD_DIR MAIN_CLASS [ARGS...]
#
# NATIVE_DIR holds liblaminar_jni.so; BUILD_DIR is Maven's output directory
# (laminardb.build.dir), compiled first (offline) if needed. JAVA_OPTS adds JVM options;
# LAMINAR_JAVA_PRELOAD / LAMINAR_JAVA_ASAN_OPTIONS become LD_PRELOAD / ASAN_OPTIONS of
# the java process only (the ASan build's ctest: Maven itself runs without them).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
native=$1 build=$2 main=$3
shift 3
mvn -o -q -B -Dstyle.color=never -f "$here/pom.xml" "-Dlaminardb.build.dir=$build" test-compile \
  dependency:build-classpath -Dmdep.includeScope=test "-Dmdep.outputFile=$build/classpath.txt" >&2
if [ -n "${LAMINAR_JAVA_PRELOAD:-}" ]; then
  export LD_PRELOAD="$LAMINAR_JAVA_PRELOAD" ASAN_OPTIONS="${LAMINAR_JAVA_ASAN_OPTIONS:-}"
fi
# shellcheck disable=SC2086 -- JAVA_OPTS is a list of options
exec java ${JAVA_OPTS:-} --add-opens=java.base/java.nio=ALL-UNNAMED \
  "-Dlaminardb.library.path=$native" \
  -cp "$build/classes:$build/test-classes:$(cat "$build/classpath.txt")" "$main" "$@"

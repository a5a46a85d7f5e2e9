#!/usr/bin/env bash
# run.sh -- run a Java main class of the binding (main or test classes) in a plain JVM,
# finding the native library the ways docs/JAVA.md tells users. Used by ctest
# (java_quickstart, java_quickstart_jar) and bench/run.sh (W1Bench).
#
#   bindings/java/run.sh NATIVE_DIR BUILD_DIR MAIN_CLASS [ARGS...]
#   bindings/java/run.sh bundle:BUNDLE_DIR BUILD_DIR MAIN_CLASS [ARGS...]
#
# NATIVE_DIR holds liblaminar_jni.so: passed as -Dlaminardb.library.path. With
# bundle:BUNDLE_DIR the jar is packaged with BUNDLE_DIR's liblaminar_jni.so and
# liblaminar.so.0 inside and put on the class path instead, with no library path set.
# BUILD_DIR is Maven's output directory (laminardb.build.dir), compiled first (offline).
# JAVA_OPTS adds JVM options; LAMINAR_JAVA_PRELOAD / LAMINAR_JAVA_ASAN_OPTIONS become
# LD_PRELOAD / ASAN_OPTIONS of the java process only (the ASan build's ctest: Maven
# itself runs without them).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
native=$1 build=$2 main=$3
shift 3
goals=(test-compile)
library=("-Dlaminardb.library.path=$native")
classes="$build/classes"
if [[ $native == bundle:* ]]; then
  goals=(-DskipTests "-Dlaminardb.native.bundle=${native#bundle:}" package)
  library=()
  classes="$build/laminardb-0.1.0.jar"
fi
mvn -o -q -B -Dstyle.color=never -f "$here/pom.xml" "-Dlaminardb.build.dir=$build" "${goals[@]}" \
  dependency:build-classpath -Dmdep.includeScope=test "-Dmdep.outputFile=$build/classpath.txt" >&2
if [ -n "${LAMINAR_JAVA_PRELOAD:-}" ]; then
  export LD_PRELOAD="$LAMINAR_JAVA_PRELOAD" ASAN_OPTIONS="${LAMINAR_JAVA_ASAN_OPTIONS:-}"
fi
# shellcheck disable=SC2086 -- JAVA_OPTS is a list of options
exec java ${JAVA_OPTS:-} --add-opens=java.base/java.nio=ALL-UNNAMED "${library[@]}" \
  -cp "$classes:$build/test-classes:$(cat "$build/classpath.txt")" "$main" "$@"

#!/usr/bin/env bash
# build-jar.sh -- build one Spark line's laminardb-spark.jar (called by CMakeLists.txt here):
#   build-jar.sh OUT SPARK SCALA_BIN SCALA ARROW RELEASE JNI_LIB CORE_LIB SOURCES...
# Maven resolves the class path of that line from Maven Central (pom.xml: spark-sql and
# spark-catalyst of SPARK for Scala SCALA_BIN, scala-compiler SCALA, arrow-c-data ARROW;
# cached in ~/.m2); the .scala sources are compiled with that Scala compiler (reading the
# Java sources for their types), then javac compiles the Java against them. OUT receives
# laminardb-spark.jar (the JNI library and the core under org/laminardb/native) and the
# arrow-c-data jar. Environment: LAMINAR_MVN, JAVA, JAVAC, JAR (default: from PATH);
# with LAMINAR_SPARK_TEST_JAR set, the Java sources LAMINAR_SPARK_TEST_SOURCES
# (space-separated: the Spark suite's functions, tests/python/test_spark_jvm_udf.py) are
# compiled against the jar's classes into that jar, which is not part of the package.
set -euo pipefail
out=$1 spark=$2 scala_bin=$3 scala=$4 arrow=$5 release=$6 jni=$7 core=$8
shift 8
scala_sources=() java_sources=()
for f in "$@"; do
  case $f in
    *.scala) scala_sources+=("$f") ;;
    *) java_sources+=("$f") ;;
  esac
done
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mvn=${LAMINAR_MVN:-mvn} java=${JAVA:-java} javac=${JAVAC:-javac} jar=${JAR:-jar}

work="$out.work"
rm -rf "$work" "$out"
mkdir -p "$work/classes/org/laminardb/native/linux-x86_64" "$out"
"$mvn" -q -B -f "$here/pom.xml" \
  org.apache.maven.plugins:maven-dependency-plugin:3.8.1:build-classpath \
  "-Dspark.version=$spark" "-Dscala.binary=$scala_bin" "-Dscala.version=$scala" \
  "-Darrow.version=$arrow" "-Dmdep.outputFile=$work/classpath.txt"
cp=$(cat "$work/classpath.txt")
"$java" -cp "$cp" scala.tools.nsc.Main -usejavacp -deprecation -feature -Xfatal-warnings \
  -d "$work/classes" "${scala_sources[@]}" "${java_sources[@]}"
"$javac" --release "$release" -Xlint:all,-classfile,-processing,-path -Werror \
  -d "$work/classes" -cp "$work/classes:$cp" "${java_sources[@]}"
cp "$jni" "$work/classes/org/laminardb/native/linux-x86_64/liblaminar_jni.so"
cp "$core" "$work/classes/org/laminardb/native/linux-x86_64/liblaminar.so.0"
"$jar" cf "$out/laminardb-spark.jar" -C "$work/classes" .
c_data=$(tr ':' '\n' < "$work/classpath.txt" | grep "/arrow-c-data-$arrow\.jar$")
cp "$c_data" "$out/"
if [ -n "${LAMINAR_SPARK_TEST_JAR:-}" ]; then
  # shellcheck disable=SC2206 -- a list of paths without blanks
  test_sources=(${LAMINAR_SPARK_TEST_SOURCES})
  mkdir -p "$work/test-classes" "$(dirname "$LAMINAR_SPARK_TEST_JAR")"
  "$javac" --release "$release" -Xlint:all,-classfile,-processing,-path -Werror \
    -d "$work/test-classes" -cp "$work/classes:$cp" "${test_sources[@]}"
  "$jar" cf "$LAMINAR_SPARK_TEST_JAR" -C "$work/test-classes" .
fi
rm -rf "$work"

#!/usr/bin/env bash
# setup.sh -- install what LaminarDB needs on a fresh Debian machine; safe to run
# again (each step is skipped when already done):
#   1. system packages with apt-get (as root, or through sudo)
#   2. a Python virtual environment in .venv with an up-to-date pip
#   3. the pinned nanoarrow source archive in the user cache (sha256-checked), so
#      every CMake build (C tests, the Python package) finds it without a download
#   4. the Python package ./bindings/python and its test requirements, if present:
#      built as a wheel into dist/ (the one scripts/test.sh also installs into fresh
#      venvs) and installed; with a JDK and mvn the wheel holds laminardb.spark's JVM
#      engine, one jar per Spark line compiled against that line's artifacts on Maven
#      Central (bindings/java/spark; resolved into ~/.m2 once)
#   5. the Java binding's Maven dependencies (bindings/java), when a JDK and mvn are
#      present, so ctest can build and test it offline (mvn -o)
# Environment: PYTHON (interpreter for the venv, default python3).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# ---- 1. system packages -------------------------------------------------------
pkgs=(build-essential cmake pkg-config liburing-dev libhwloc-dev librdkafka-dev libavro-dev python3-venv python3-dev clang-format)
# The Kafka tests' broker (tests/kafka/broker.sh) runs on a JDK from jars Maven
# fetches: installed when missing.
command -v java > /dev/null || pkgs+=(openjdk-17-jre-headless)
command -v mvn > /dev/null || pkgs+=(maven)
missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo > /dev/null || { echo "setup: need root or sudo for apt-get" >&2; exit 1; }
    sudo=(sudo)
  fi
  echo "setup: apt-get install ${missing[*]}"
  "${sudo[@]}" apt-get update
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y "${missing[@]}"
else
  echo "setup: system packages present"
fi

# ---- 2. the virtual environment ------------------------------------------------
PY=${PYTHON:-python3}
if ! .venv/bin/python -c 'import sys' > /dev/null 2>&1; then
  echo "setup: creating .venv with $PY"
  rm -rf .venv
  "$PY" -m venv .venv
  .venv/bin/python -m pip install -q -U pip
fi
venv_py=$(pwd)/.venv/bin/python

# ---- 3. the nanoarrow archive (see cmake/nanoarrow.cmake) ----------------------
na_name=nanoarrow-0.9.0.tar.gz
na_sha=1ce15bbed8532839347faa78824c5dbd3769bff60661003e34c6fba5dd881bd3
if [ -n "${LAMINAR_CACHE_DIR:-}" ]; then
  cache=$LAMINAR_CACHE_DIR
elif [ -n "${XDG_CACHE_HOME:-}" ]; then
  cache=$XDG_CACHE_HOME/laminardb
elif [ -n "${HOME:-}" ]; then
  cache=$HOME/.cache/laminardb
else
  cache=$(pwd)/build-cache/laminardb
fi
have_sha() { [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$na_sha" ]; }
if ! have_sha "$cache/$na_name"; then
  echo "setup: downloading $na_name (pinned, sha256-checked) into $cache"
  mkdir -p "$cache"
  tmp=$(mktemp -d)
  "$venv_py" -m pip download -q --no-deps --no-binary nanoarrow nanoarrow==0.9.0 -d "$tmp"
  if ! have_sha "$tmp/$na_name"; then
    echo "setup: $na_name checksum mismatch (expected $na_sha)" >&2
    rm -rf "$tmp"
    exit 1
  fi
  mv "$tmp/$na_name" "$cache/$na_name"
  rm -rf "$tmp"
fi
export LAMINAR_NANOARROW_ARCHIVE="$cache/$na_name"

# ---- 4. the Python package and test tools --------------------------------------
if [ -f bindings/python/requirements-test.txt ]; then
  "$venv_py" -m pip install -q -r bindings/python/requirements-test.txt
fi
if [ -f bindings/python/pyproject.toml ]; then
  echo "setup: building the laminardb wheel (dist/) and installing it into .venv"
  rm -f dist/laminardb-*.whl
  LAMINAR_SPARK_ENGINE=${LAMINAR_SPARK_ENGINE:-$( (command -v mvn && command -v javac) > /dev/null && echo ON || echo OFF)} \
    "$venv_py" -m pip wheel -q --no-deps -w dist ./bindings/python
  "$venv_py" -m pip uninstall -q -y laminardb 2> /dev/null || true
  # with the demo extra (numpy, rich): scripts/demo.sh runs `laminardb demo`
  wheel=$(ls dist/laminardb-*.whl)
  "$venv_py" -m pip install -q "$wheel[demo]"
fi
# ---- 5. the Java binding's Maven dependencies ----------------------------------
# A package run with no test selected resolves the compile/test classpaths and the
# plugins (jar and dependency, which bindings/java/run.sh uses, included); surefire's JUnit provider is resolved only when tests
# run, so it is fetched by name. Both are no-ops once ~/.m2 holds everything.
if [ -f bindings/java/pom.xml ] && command -v mvn > /dev/null && command -v javac > /dev/null; then
  echo "setup: fetching the Java binding's Maven dependencies"
  m2_build=$(mktemp -d)
  surefire=$(sed -n 's|.*<surefire.version>\(.*\)</surefire.version>.*|\1|p' bindings/java/pom.xml)
  mvn -q -B -f bindings/java/pom.xml "-Dlaminardb.build.dir=$m2_build" \
      -Dtest=NoSuchTest -Dsurefire.failIfNoSpecifiedTests=false package \
      dependency:build-classpath "-Dmdep.outputFile=$m2_build/classpath.txt"
  # Outside the project: inside it, the pinned dependency plugin resolves the
  # provider's JUnit platform to other versions than surefire later asks for.
  (cd "$m2_build" && mvn -q -B dependency:get \
      "-Dartifact=org.apache.maven.surefire:surefire-junit-platform:$surefire")
  rm -rf "$m2_build"
fi
echo "setup: done"

#!/usr/bin/env bash
# setup.sh -- install what LaminarDB needs on a fresh Debian machine, idempotently:
# system packages (apt-get), a Python virtual environment in .venv with the
# laminardb package (which builds the C core) and the test tools.
set -euo pipefail
cd "$(dirname "$0")/.."

pkgs=(build-essential cmake pkg-config liburing-dev libhwloc-dev python3-venv)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  echo "setup: apt-get install ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" > /dev/null
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q -U pip
if [ -f bindings/python/requirements-test.txt ]; then
  .venv/bin/python -m pip install -q -r bindings/python/requirements-test.txt
fi
if [ -f bindings/python/pyproject.toml ]; then
  .venv/bin/python -m pip install -q ./bindings/python
fi
echo "setup: done"

#!/usr/bin/env bash
# demo.sh -- the main job: set up, then run the market-data demo on the embedded
# in-memory database (1-second VWAP and OHLC bars, shown live).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/laminardb demo "$@"

"""bench_python.py -- W1 and W2 (shared/bench/README.md) driven from Python.

A thin wrapper over ``laminardb.bench`` (the same code as ``laminardb bench``):
numpy-generated reference data pushed as 8192-row pyarrow batches through the
inline driver (push, ``run_until_idle``, drain), median of ``--reps`` runs.

    python bench/bench_python.py -n 1e7 --reps 3 --limit-w1b 180 --limit-w2b 400

``--limit-w1b`` / ``--limit-w2b`` take limit_vwap's W1b / W2b figures (M rows/s,
measured on the same machine in the same session) and add the ratio to each
RESULT line. Exit status 1 if a result row count is wrong or the engine fails.
"""

from __future__ import annotations

import sys

from laminardb.bench import main

if __name__ == "__main__":
    sys.exit(main())

"""Lookup join benchmark: the W1 event stream joined with a 10^6-row table.

Data: the reference events of ``laminardb.bench`` (limit_vwap.c's spec, 8192-row
``pyarrow.RecordBatch`` objects, plain utf8 symbol) and a table
``ref (k BIGINT PRIMARY KEY, tier VARCHAR, w DOUBLE)`` of ``--table-rows`` rows
(default 10^6, k = 0 .. n-1), loaded with ``Connection.upsert`` before the timed
span. The stream

    SELECT t.symbol, t.price * r.w AS adj, r.tier
    FROM trades t JOIN ref r ON r.k = t.ts % <table rows>

finds a row for every event, so it must emit exactly N rows (checked). The
inline driver (push, ``run_until_idle``, drain) is timed from the first push to
the last result (Python's garbage collector off meanwhile); the median of
``--reps`` runs is printed as rows/s, with the
ratio to limit_vwap's W1b rate when given (``--w1b`` in M rows/s, measured on
the same machine in the same session). Exit status 1 when a count is wrong.

A table keyed by one integer column is probed through a columnar image of it
(dense keys by position, others through a flat hash of fixed-width keys; values
gathered column by column), built by the first lookup: at N = 10^6 against
10^6 rows that build is a good part of the time, at 10^7 it is amortized.

Usage: python bench/bench_lookup.py [N] [--reps R] [--table-rows T] [--w1b X]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time

import pyarrow as pa

import laminardb
from laminardb.bench import trade_batches


def load_table(db: laminardb.Connection, rows: int) -> None:
    """Upsert ``rows`` reference rows in 64 Ki-row batches (not timed)."""
    for lo in range(0, rows, 65536):
        hi = min(rows, lo + 65536)
        keys = pa.array(range(lo, hi), type=pa.int64())
        db.upsert("ref", pa.table({
            "k": keys,
            "tier": pa.array([("gold", "silver", "bronze")[k % 3] for k in range(lo, hi)]),
            "w": pa.array([1.0 + (k % 7) / 100 for k in range(lo, hi)], type=pa.float64()),
        }))
    db.run_until_idle()


def run_once(batches: list[pa.RecordBatch], table_rows: int) -> tuple[float, int]:
    """One run in a fresh database: the seconds of the timed loop and the rows out."""
    with laminardb.open() as db:
        db.execute(f"""
            CREATE SOURCE trades (symbol VARCHAR NOT NULL, price DOUBLE NOT NULL,
                                  volume BIGINT NOT NULL, ts BIGINT NOT NULL,
                                  WATERMARK FOR ts AS ts);
            CREATE TABLE ref (k BIGINT PRIMARY KEY, tier VARCHAR, w DOUBLE);
            CREATE STREAM j AS SELECT t.symbol, t.price * r.w AS adj, r.tier
              FROM trades t JOIN ref r ON r.k = t.ts % {table_rows};
        """)
        load_table(db, table_rows)
        source = db.source("trades")
        sub = db.subscribe("j")
        rows = 0
        gc.disable()  # the interpreter's collector is not the engine's cost
        try:
            started = time.perf_counter()
            for batch in batches:
                source.push(batch)
                db.run_until_idle()
                while (out := sub.poll(0)) is not None:
                    rows += out.num_rows
            elapsed = time.perf_counter() - started
        finally:
            gc.enable()
    return elapsed, rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("n", nargs="?", type=float, default=1e7)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--table-rows", type=int, default=1_000_000)
    parser.add_argument("--w1b", type=float, default=None, help="limit_vwap W1b, M rows/s")
    args = parser.parse_args(argv)
    n = int(args.n)
    batches, _ = trade_batches(n)
    times = []
    ok = True
    for _ in range(args.reps):
        elapsed, rows = run_once(batches, args.table_rows)
        ok &= rows == n
        times.append(elapsed)
    median = statistics.median(times)
    rate = n / median
    ratio = f" ratio_to_W1b={rate / (args.w1b * 1e6):.2f}" if args.w1b else ""
    print(f"RESULT lookup_join N={n} table_rows={args.table_rows} reps={args.reps} "
          f"median_s={median:.3f} rows_per_s={rate / 1e6:.2f}M "
          f"ns_per_row={median / n * 1e9:.1f}{ratio} {'OK' if ok else 'WRONG COUNT'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

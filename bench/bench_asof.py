"""bench_asof.py -- W3, the ASOF join of trades with quotes, from Python.

The feed of ``../shared/bench/limit_asof.c``'s header (generated with numpy, not
timed), split into blocks of 8,192 consecutive events, each pushed as a quotes
and a trades pyarrow batch through the inline driver (push, ``run_until_idle``;
the result taken as one Arrow table every 64 blocks); beside it, on the same
two tables, pandas ``merge_asof`` and DuckDB's ``ASOF JOIN`` (1 thread and 2),
each timed alone. Median of ``--reps`` runs;
every engine's result rows and ``sum(bid)`` must agree.

    python bench/bench_asof.py -n 1e7 --reps 3 --limit-w3b 5.0

``--limit-w3b`` takes limit_asof's W3b (M rows/s, same machine and session) and
adds the ratio to each RESULT line. Exit status 1 if the results disagree.

``--interval MS``: W3i instead, the interval join of each trade with the quotes
of its symbol within +-MS ms (``JOIN ... ON t.symbol = q.symbol AND q.ts BETWEEN
t.ts - MS AND t.ts + MS``), through laminardb and DuckDB (1 thread and 2; pandas
has no interval join); the same check of rows and ``sum(bid)``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa

import laminardb

NSYM = 1000
TS0 = 1_700_000_000_000
BLOCK = 8192
DRAIN_EVERY = 64  # blocks between two takes of the result queue (as one table)
M1 = np.uint64(0xBF58476D1CE4E5B9)
M2 = np.uint64(0x94D049BB133111EB)


def feed(n: int) -> tuple[pa.Table, pa.Table]:
    """The trades and quotes tables of the limit_asof feed of n events."""
    with np.errstate(over="ignore"):
        z = (np.arange(1, n + 1, dtype=np.uint64) * np.uint64(0xD1B54A32D192ED03)).astype(np.uint64)
        z = (z ^ (z >> np.uint64(30))) * M1
        z = (z ^ (z >> np.uint64(27))) * M2
        z = z ^ (z >> np.uint64(31))
    sym = ((z >> np.uint64(2)) % np.uint64(NSYM)).astype(np.int64)
    px = 100.0 + ((z >> np.uint64(24)) % np.uint64(100000)).astype(np.float64) / 1000.0
    ts = TS0 + np.arange(n, dtype=np.int64)
    quote = (z % np.uint64(4)) != 0
    names = np.array([f"S{i:03d}" for i in range(NSYM)], dtype=object)
    ask = px + (1 + (z >> np.uint64(44)) % np.uint64(10)).astype(np.float64) / 100.0
    vol = (1 + (z >> np.uint64(8)) % np.uint64(1000)).astype(np.int64)
    quotes = pa.table(
        {
            "symbol": pa.array(names[sym[quote]], pa.string()),
            "ts": ts[quote],
            "bid": px[quote],
            "ask": ask[quote],
        }
    )
    trades = pa.table(
        {
            "symbol": pa.array(names[sym[~quote]], pa.string()),
            "ts": ts[~quote],
            "price": px[~quote],
            "volume": vol[~quote],
        }
    )
    return trades, quotes


def blocks(n: int, trades: pa.Table, quotes: pa.Table) -> list[tuple[pa.RecordBatch, ...]]:
    """Per block of BLOCK events: its quotes batch and its trades batch."""
    out = []
    qts = quotes.column("ts").to_numpy()
    tts = trades.column("ts").to_numpy()
    for lo in range(0, n, BLOCK):
        hi = TS0 + min(lo + BLOCK, n)
        qa, qb = np.searchsorted(qts, [TS0 + lo, hi])
        ta, tb = np.searchsorted(tts, [TS0 + lo, hi])
        out.append(
            (
                quotes.slice(qa, qb - qa).combine_chunks().to_batches()[0],
                trades.slice(ta, tb - ta).combine_chunks().to_batches()[0],
            )
        )
    return out


def join_clause(interval: int | None) -> str:
    """W3's join (ASOF), or W3i's (within +-interval ms), after ``FROM trades t``."""
    if interval is None:
        return "ASOF JOIN quotes q MATCH_CONDITION(t.ts >= q.ts) ON t.symbol = q.symbol"
    return (
        f"JOIN quotes q ON t.symbol = q.symbol AND q.ts BETWEEN t.ts - INTERVAL "
        f"'{interval}' MILLISECOND AND t.ts + INTERVAL '{interval}' MILLISECOND"
    )


def run_engine(parts: list, interval: int | None) -> tuple[float, int, float]:
    """W3 (or W3i) through laminardb, inline; (seconds, rows, sum(bid)).

    Per block: its quotes and trades batches pushed, then ``run_until_idle``;
    no Python per output batch in the loop: the subscription's queue is taken
    as one Arrow table every DRAIN_EVERY blocks (bounded memory), and the
    result is one table, summed once.
    """
    with laminardb.open() as db:
        db.execute(
            "CREATE SOURCE trades (symbol VARCHAR, ts BIGINT, price DOUBLE, volume BIGINT,"
            "  WATERMARK FOR ts);"
            "CREATE SOURCE quotes (symbol VARCHAR, ts BIGINT, bid DOUBLE, ask DOUBLE,"
            "  WATERMARK FOR ts);"
            "CREATE STREAM w3 AS SELECT t.symbol, t.ts, t.price, t.volume, q.bid, q.ask"
            f"  FROM trades t {join_clause(interval)}"
        )
        sub = db.subscribe("w3")
        qpush, tpush, run = db.source("quotes").push, db.source("trades").push, db.run_until_idle
        tables = []
        t0 = time.perf_counter()
        for i, (qb, tb) in enumerate(parts, 1):
            qpush(qb)
            tpush(tb)
            run()
            if i % DRAIN_EVERY == 0:
                tables.append(sub.to_arrow_table())
        db.source("quotes").watermark(2**63 - 1)
        db.source("trades").watermark(2**63 - 1)
        run()
        tables.append(sub.to_arrow_table())
        result = pa.concat_tables(tables)
        total = pa.compute.sum(result.column("bid")).as_py() or 0.0
        return time.perf_counter() - t0, result.num_rows, total


def run_pandas(trades: pd.DataFrame, quotes: pd.DataFrame) -> tuple[float, int, float]:
    """pandas merge_asof by symbol (inner: rows without an earlier quote dropped)."""
    t0 = time.perf_counter()
    r = pd.merge_asof(trades, quotes, on="ts", by="symbol", direction="backward")
    r = r[r["bid"].notna()]
    return time.perf_counter() - t0, len(r), float(r["bid"].sum())


def run_duckdb(
    trades: pa.Table, quotes: pa.Table, threads: int, interval: int | None
) -> tuple[float, int, float]:
    """DuckDB's ASOF JOIN (or the interval join) into an Arrow table."""
    con = duckdb.connect()
    con.execute(f"SET threads = {threads}")
    con.register("trades", trades)
    con.register("quotes", quotes)
    if interval is None:
        join = "ASOF JOIN quotes q ON t.symbol = q.symbol AND t.ts >= q.ts"
    else:
        join = (
            f"JOIN quotes q ON t.symbol = q.symbol "
            f"AND q.ts BETWEEN t.ts - {interval} AND t.ts + {interval}"
        )
    t0 = time.perf_counter()
    r = con.sql(
        f"SELECT t.symbol, t.ts, t.price, t.volume, q.bid, q.ask FROM trades t {join}"
    ).to_arrow_table()
    secs = time.perf_counter() - t0
    con.close()
    return secs, r.num_rows, pa.compute.sum(r.column("bid")).as_py()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-n", type=float, default=1e7)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--limit-w3b", type=float, default=0.0, help="W3b, M rows/s")
    ap.add_argument("--interval", type=int, default=None, help="W3i: +-MS ms")
    args = ap.parse_args()
    iv = args.interval
    n = int(args.n)
    g0 = time.perf_counter()
    trades, quotes = feed(n)
    parts = blocks(n, trades, quotes)
    tdf, qdf = trades.to_pandas(), quotes.to_pandas()
    print(f"N={n} events ({trades.num_rows} trades) generated in {time.perf_counter() - g0:.2f} s")
    w = "W3" if iv is None else "W3i"
    runs = {
        f"python-{w}": lambda: run_engine(parts, iv),
        "duckdb-1thread": lambda: run_duckdb(trades, quotes, 1, iv),
        "duckdb-2threads": lambda: run_duckdb(trades, quotes, 2, iv),
    }
    if iv is None:
        runs["pandas-merge_asof"] = lambda: run_pandas(tdf, qdf)
    checks = set()
    for name, fn in runs.items():
        secs = []
        for _ in range(max(1, args.reps)):
            s, rows, total = fn()
            secs.append(s)
            checks.add((rows, round(total, 3)))
        med = statistics.median(secs)
        rate = n / med / 1e6
        line = f"RESULT {name} N={n} reps={len(secs)} median {med:.4f} s  {rate:.2f} M rows/s"
        if args.limit_w3b > 0:
            line += f"  ratio_to_W3b={rate / args.limit_w3b:.3f}"
        print(line, flush=True)
    print(f"{w} check: (result rows, sum(bid)) = {sorted(checks)}")
    if len(checks) != 1:
        print("CHECK FAILED: the engines disagree", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

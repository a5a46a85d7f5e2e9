"""bench_udf.py -- W1 with a Python user-defined function in the select list.

The reference data of ``laminardb.bench`` (8192-row batches, inline driver:
push, ``run_until_idle``, drain), W1 (1-second tumbling VWAP) with the price
going through ``fx`` -- ``SUM(fx(price) * volume) / SUM(volume)`` -- where
``fx`` multiplies by a constant with ``pyarrow.compute`` (kind arrow):

    W1        the plain query, for the ratio
    W1-fx     fx as an arrow UDF
    W1-empty  an arrow UDF returning its argument: the per-call overhead
    W1-row    fx as a row UDF (per-row Python), over a tenth of the events
    duckdb-fx DuckDB's arrow UDF over the same data (GROUP BY symbol, ts // 1000)

    python bench/bench_udf.py -n 2e6 --reps 3 [--limit-w1b 15.7]

The cases take turns, one run of each per round (--reps rounds), so a busy
machine slows them alike. Prints one RESULT line per case (median of --reps:
M rows/s, ns/row, the calling thread's CPU ns/row for ours -- the inline
driver runs the engine in that thread --, and for the UDF cases the overhead
over W1 in ns/row and µs per 8192-row chunk, from the wall time and from the
CPU time: on a loaded machine the wall time is mostly waiting for a CPU).
``--limit-w1b`` takes limit_vwap's W1b of the same session (M rows/s; bench/run.sh
passes it) and adds each case's ratio to it (issue 23: W1-fx >= 0.3x W1b).
Checked: W1, W1-fx, W1-empty and DuckDB give the same number of windows (exit
status 1 otherwise, or when a case fails); a case whose module is missing
(DuckDB) is reported skipped.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Sequence

import pyarrow as pa
import pyarrow.compute as pc

import laminardb
from laminardb.bench import BATCH_ROWS, FINAL_WATERMARK, trade_batches

SOURCE = (
    "CREATE SOURCE trades (symbol VARCHAR NOT NULL, price DOUBLE NOT NULL, "
    "volume BIGINT NOT NULL, ts BIGINT NOT NULL, WATERMARK FOR ts AS ts);"
)


def _w1(price: str) -> str:
    return SOURCE + (
        " CREATE STREAM w1 AS SELECT window_start, symbol, "
        f"SUM({price} * volume) / SUM(volume) AS vwap, COUNT(*) AS trades "
        "FROM trades GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND) EMIT ON WINDOW CLOSE;"
    )


def fx(price: pa.Array) -> pa.Array:
    """A constant FX rate."""
    return pc.multiply(price, 1.0834)


def empty(price: pa.Array) -> pa.Array:
    """The per-call overhead: hands its argument back."""
    return price


def fx_row(price: float) -> float:
    """fx, one row at a time."""
    return price * 1.0834


Timing = tuple[float, float | None, int]  # wall s, the thread's CPU s (or None), rows


def run_laminar(
    batches: Sequence[pa.RecordBatch], price: str, register: Callable[[laminardb.Connection], None]
) -> Timing:
    """Seconds (wall, this thread's CPU) of the push/run/drain loop and the result rows."""
    with laminardb.open() as db:
        register(db)
        db.execute(_w1(price))
        source = db.source("trades")
        sub = db.subscribe("w1")
        rows = 0
        started, cpu = time.perf_counter(), time.thread_time()
        for batch in batches:
            source.push(batch)
            db.run_until_idle()
            while (b := sub.poll(0)) is not None:
                rows += b.num_rows
        source.watermark(FINAL_WATERMARK)
        db.run_until_idle()
        while (b := sub.poll(0)) is not None:
            rows += b.num_rows
        return time.perf_counter() - started, time.thread_time() - cpu, rows


def run_duckdb(batches: Sequence[pa.RecordBatch]) -> Timing:
    """DuckDB computing the same windows with its arrow UDF."""
    import duckdb

    table = pa.Table.from_batches(batches)
    con = duckdb.connect()
    try:
        con.create_function("fx", fx, ["DOUBLE"], "DOUBLE", type="arrow")
        con.register("trades", table)
        started = time.perf_counter()
        rows = con.sql(
            "SELECT symbol, ts // 1000 AS w, SUM(fx(price) * volume) / SUM(volume), COUNT(*) "
            "FROM trades GROUP BY symbol, w"
        ).fetchall()
        # (its threads' CPU time is not this thread's: no CPU figure)
        return time.perf_counter() - started, None, len(rows)
    finally:
        con.close()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the cases; print a RESULT line each."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", "--events", type=float, default=2e6)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--limit-w1b", type=float, help="limit_vwap's W1b, M rows/s")
    args = parser.parse_args(argv)
    events = int(args.events)
    batches, _ = trade_batches(events)
    row_batches = batches[: max(1, len(batches) // 10)]
    cases: list[tuple[str, Callable[[], Timing], int]] = [
        ("W1", lambda: run_laminar(batches, "price", lambda db: None), events),
        (
            "W1-fx",
            lambda: run_laminar(
                batches, "fx(price)", lambda db: db.create_function("fx", fx, ["DOUBLE"], "DOUBLE")
            ),
            events,
        ),
        (
            "W1-empty",
            lambda: run_laminar(
                batches,
                "fx(price)",
                lambda db: db.create_function("fx", empty, ["DOUBLE"], "DOUBLE"),
            ),
            events,
        ),
        (
            "W1-row",
            lambda: run_laminar(
                row_batches,
                "fx(price)",
                lambda db: db.create_function("fx", fx_row, kind="row"),
            ),
            sum(b.num_rows for b in row_batches),
        ),
        ("duckdb-fx", lambda: run_duckdb(batches), events),
    ]
    status = 0
    walls: dict[str, list[float]] = {name: [] for name, _, _ in cases}
    cpus: dict[str, list[float]] = {name: [] for name, _, _ in cases}
    windows: dict[str, int] = {}
    gone: set[str] = set()
    for _ in range(args.reps):
        for name, run, n in cases:
            if name in gone:
                continue
            try:
                wall, cpu, rows = run()
            except ImportError as exc:
                print(f"RESULT {name} skipped: {exc}")
                gone.add(name)
                continue
            except laminardb.LaminarError as exc:
                print(f"RESULT {name} failed: {exc}")
                gone.add(name)
                status = 1
                continue
            walls[name].append(wall)
            if cpu is not None:
                cpus[name].append(cpu)
            if n == events:
                windows[name] = rows
    base: tuple[float, float] | None = None
    for name, _, n in cases:
        if name in gone:
            continue
        ns = statistics.median(walls[name]) * 1e9 / n
        rate = 1e3 / ns
        cpu_ns = statistics.median(cpus[name]) * 1e9 / n if cpus[name] else None
        line = f"RESULT {name} events={n} {rate:.2f} M rows/s {ns:.1f} ns/row"
        if cpu_ns is not None:
            line += f" cpu={cpu_ns:.1f} ns/row"
        if name == "W1" and cpu_ns is not None:
            base = (ns, cpu_ns)
        elif base is not None and cpu_ns is not None and name.startswith("W1-"):
            for label, extra in (("overhead", ns - base[0]), ("cpu_overhead", cpu_ns - base[1])):
                line += f" {label}={extra:.1f} ns/row ({extra * BATCH_ROWS / 1000:.1f} us/chunk)"
            line += f" ratio={base[0] / ns:.2f}xW1"
        if args.limit_w1b:
            line += f" ratio_to_W1b={rate / args.limit_w1b:.3f}"
        print(line, flush=True)
    if len(set(windows.values())) > 1:
        print(f"bench_udf: the cases disagree on the number of windows: {windows}")
        status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())

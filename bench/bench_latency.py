"""Latency of the streaming runtime from Python (issue 5): push of a 1-row
batch -> the subscriber has it as a ``pyarrow.RecordBatch``, at a steady rate.

The method of ``bench/bench_latency.c``: event i is due at t0 + i / rate; one
thread waits (busy) for it, pushes a prebuilt 1-row ``pyarrow.RecordBatch``
(exported afresh through ``__arrow_c_array__`` each time, so every push is a
real import), then reads the subscription until the batch is there. Latency
= receive time - due time (a late push counts its delay: no coordinated
omission); every event is kept and sorted (exact percentiles, no sampling).
The first 10,000 events are a warm-up and not recorded.

With ``spin`` the read busy-polls (``poll(0)``) and the source and the
subscription use ``wait_strategy = 'spin'``; with ``park`` it blocks in
``recv()`` (the core parks).

Usage: python bench/bench_latency.py [--rate 100000] [--seconds 3]
       [--strategy spin|park|all] [--runs 3]
Target (issue 5): p99 < 30 us with spin.
"""

from __future__ import annotations

import argparse
import statistics
import time

import pyarrow as pa

import laminardb

WARMUP = 10_000


def run_once(strategy: str, rate: float, seconds: float) -> dict[str, float]:
    """One timed run; returns the percentiles in microseconds and the rate."""
    db = laminardb.open()
    db.execute(
        f"CREATE SOURCE t (seq BIGINT NOT NULL) WITH (wait_strategy = '{strategy}', "
        "buffer_size = 1024); CREATE STREAM s AS SELECT seq FROM t"
    )
    sub = db.subscribe("s", wait_strategy=strategy, buffer_size=1024)
    src = db.source("t")
    db.start()
    one = pa.record_batch({"seq": pa.array([1], pa.int64())})
    events = WARMUP + int(rate * seconds)
    period = 1e9 / rate
    clock = time.perf_counter_ns
    t0 = clock() + 1_000_000
    lat = []
    spin = strategy != "park"
    for i in range(events):
        due = t0 + int(i * period)
        while clock() < due:
            pass
        src.push(one)
        if spin:
            got = sub.poll(0)
            while got is None:
                got = sub.poll(0)
        else:
            got = sub.recv()
        done = clock()
        if i >= WARMUP:
            lat.append(done - due)
    wall = (clock() - t0) / 1e9
    db.close()
    lat.sort()
    n = len(lat)

    def q(p: float) -> float:
        return lat[min(n - 1, int(p * n))] / 1000.0

    fig = {"p50": q(0.5), "p99": q(0.99), "p99.9": q(0.999), "max": lat[-1] / 1000.0}
    fig["rate"] = events / wall
    print(
        f"  {strategy:8s} events={n} rate={fig['rate']:.0f}/s  p50={fig['p50']:.2f} us  "
        f"p99={fig['p99']:.2f} us  p99.9={fig['p99.9']:.2f} us  max={fig['max']:.1f} us"
    )
    return fig


def main() -> None:
    """Parse the arguments, run, print the medians."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=100_000)
    parser.add_argument("--seconds", type=float, default=3)
    parser.add_argument("--strategy", default="all", choices=["spin", "park", "all"])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    for strategy in ["spin", "park"] if args.strategy == "all" else [args.strategy]:
        runs = [run_once(strategy, args.rate, args.seconds) for _ in range(args.runs)]
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        print(
            f"RESULT py_latency {strategy} rate={args.rate:.0f}/s median of {args.runs}: "
            f"p50={med['p50']:.2f} us p99={med['p99']:.2f} us p99.9={med['p99.9']:.2f} us "
            f"max={med['max']:.1f} us achieved={med['rate']:.0f}/s"
        )


if __name__ == "__main__":
    main()

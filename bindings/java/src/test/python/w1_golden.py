"""The Python side of the Java binding's W1 cross-check (W1Test.java).

Runs W1 (1-second tumbling VWAP) through the ``laminardb`` package over the
generated trades of shared/bench/README.md -- the same rows, batches and SQL as
w1_golden.c -- and writes the result rows, sorted, one per line::

    window_start,symbol,vwap,trades,max_price,min_price

each DOUBLE as the 16 hex digits of its IEEE bits.

Usage: ``python w1_golden.py OUT.csv [ROWS]`` (ROWS defaults to 200000).
"""

from __future__ import annotations

import struct
import sys

import numpy as np
import pyarrow as pa

import laminardb

SQL = """
CREATE SOURCE trades (symbol VARCHAR NOT NULL, price DOUBLE NOT NULL,
  volume BIGINT NOT NULL, ts BIGINT NOT NULL, WATERMARK FOR ts AS ts);
CREATE STREAM w1 AS SELECT window_start, symbol, SUM(price * volume) / SUM(volume)
  AS vwap, COUNT(*) AS trades, MAX(price) AS max_price, MIN(price) AS min_price
  FROM trades GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND) EMIT ON WINDOW CLOSE;
"""
BATCH = 8192
SCHEMA = pa.schema(
    [
        pa.field("symbol", pa.string(), nullable=False),
        pa.field("price", pa.float64(), nullable=False),
        pa.field("volume", pa.int64(), nullable=False),
        pa.field("ts", pa.int64(), nullable=False),
    ]
)


def trades(start: int, stop: int) -> pa.RecordBatch:
    """Rows start..stop-1 of the shared/bench data set.

    Args:
        start: First event index (0-based).
        stop: One past the last.

    Returns:
        The batch (symbol, price, volume, ts).
    """
    with np.errstate(over="ignore"):
        z = (np.arange(start + 1, stop + 1, dtype=np.uint64)) * np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    symbols = [f"S{s:03d}" for s in (z % np.uint64(100)).tolist()]
    volume = (np.uint64(1) + (z >> np.uint64(8)) % np.uint64(1000)).astype(np.int64)
    price = 100.0 + ((z >> np.uint64(24)) % np.uint64(100000)).astype(np.float64) / 1000.0
    ts = np.arange(start, stop, dtype=np.int64) + 1700000000000
    return pa.record_batch([pa.array(symbols), price, volume, ts], schema=SCHEMA)


def bits(value: float) -> str:
    """The IEEE bits of a double as 16 hex digits.

    Args:
        value: The double.

    Returns:
        The hex text.
    """
    return f"{struct.unpack('<Q', struct.pack('<d', value))[0]:016x}"


def main(argv: list[str]) -> int:
    """Write the W1 rows to argv[1].

    Args:
        argv: The command line.

    Returns:
        The exit status.
    """
    rows = int(argv[2]) if len(argv) > 2 else 200000
    lines: list[str] = []
    with laminardb.open() as db:
        db.execute(SQL)
        source = db.source("trades")
        sub = db.subscribe("w1")

        def drain() -> None:
            while (batch := sub.poll(0)) is not None:
                for r in batch.to_pylist():
                    lines.append(
                        f"{r['window_start']},{r['symbol']},{bits(r['vwap'])},{r['trades']},"
                        f"{bits(r['max_price'])},{bits(r['min_price'])}"
                    )

        for start in range(0, rows, BATCH):
            source.push(trades(start, min(rows, start + BATCH)))
            db.run_until_idle()
            drain()
        source.watermark(2**63 - 1)
        db.run_until_idle()
        drain()
    with open(argv[1], "w", encoding="utf-8") as out:
        out.writelines(line + "\n" for line in sorted(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

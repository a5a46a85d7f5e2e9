"""The fresh-venv check of laminardb.spark (scripts/test.sh step 4b): run in a venv
holding only the built laminardb wheel, pyspark and duckdb, it does what
docs/SPARK.md tells a user -- no PYSPARK_PYTHON, no jar paths: the session is
started through ``laminardb.spark.configure`` -- and checks that both engines
give DuckDB's answer for W1 in batch, and for a streaming query stopped and
restarted from its checkpoint (every window written exactly once).

Prints one line per (engine, mode) it checked, e.g.
``spark-compat: pyspark=4.3.0 engine=jvm mode=streaming result=ok``, and exits
non-zero on the first mismatch. Usage: ``python tests/spark/quickstart.py``.

State across Spark lines (an upgrade): ``--state-before DIR`` also runs the
first half of a streaming query per engine into DIR and stops it; run later
with another PySpark, ``--state-after DIR`` restarts those queries from their
checkpoint and state locations, feeds the second half and checks every window
was written exactly once with DuckDB's answer (``mode=streaming(state from
<version>)``).
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import tempfile
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute
import pyarrow.parquet as pq
import pyspark
from pyspark.sql import SparkSession

import laminardb.spark as lspark

SQL = """
CREATE SOURCE trades (symbol VARCHAR NOT NULL, price DOUBLE, volume BIGINT, ts BIGINT,
                      WATERMARK FOR ts AS ts - INTERVAL '100' MILLISECOND);
CREATE STREAM w1 AS
  SELECT window_start, symbol, SUM(price * volume) / SUM(volume) AS vwap, COUNT(*) AS trades,
         MAX(price) AS max_price, MIN(price) AS min_price
  FROM trades GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND);
"""
DUCK = ("SELECT (ts // 1000) * 1000 AS window_start, symbol, SUM(price * volume) / SUM(volume), "
        "COUNT(*), MAX(price), MIN(price) FROM t GROUP BY ALL")
SCHEMA = pa.schema([pa.field("symbol", pa.string(), nullable=False), ("price", pa.float64()),
                    ("volume", pa.int64()), ("ts", pa.int64())])


def trades(seed: int, rows: int, start: int, end: int) -> pa.Table:
    """Rows with event times in [start - 50, end), in order up to 50 ms (inside the delay)."""
    rng = np.random.default_rng(seed)
    ts = np.sort(rng.integers(start, end, rows)) - rng.integers(0, 50, rows)
    return pa.table({"symbol": [f"S{k}" for k in rng.integers(0, 5, rows)],
                     "price": np.round(rng.uniform(10, 20, rows), 2),
                     "volume": rng.integers(1, 100, rows), "ts": ts}, schema=SCHEMA)


def duck(table: pa.Table, watermark: int | None = None) -> list[tuple]:
    """DuckDB's W1 over ``table`` (the windows ``watermark`` closed, when given)."""
    con = duckdb.connect()
    con.register("t", table)
    rows = con.execute(DUCK).fetchall()
    return normal(r for r in rows if watermark is None or r[0] + 1000 <= watermark)


def normal(rows: object) -> list[tuple]:
    """Rows with doubles rounded, sorted (for comparison)."""
    return sorted(tuple(round(v, 9) if isinstance(v, float) else v for v in r)
                  for r in rows)  # type: ignore[attr-defined]


def check(name: str, got: list[tuple], want: list[tuple]) -> None:
    """Report one (engine, mode) cell; exit on a mismatch."""
    ok = got == want and len(want) > 0
    print(f"spark-compat: pyspark={pyspark.__version__} {name} rows={len(got)} "
          f"result={'ok' if ok else 'MISMATCH'}", flush=True)
    if not ok:
        sys.exit(f"{name}: {len(got)} rows, DuckDB {len(want)}; first differences: "
                 f"{sorted(set(got) ^ set(want))[:5]}")


@functools.cache
def parts() -> list[pa.Table]:
    """The streaming input: four files of 5 s of event time each."""
    return [trades(10 + i, 3_000, 1_000 + i * 5_000, 1_000 + (i + 1) * 5_000)
            for i in range(4)]


def run_stream(spark: SparkSession, work: Path, engine: str,
               files: range) -> tuple[list[tuple], list[tuple]]:
    """Write ``files`` of parts() into work/inbox and run W1's streaming query over
    the inbox until it has taken them, from the checkpoint and state locations in
    work/ckpt (a restart when an earlier call left them); then (its output so far,
    DuckDB's windows closed by the files written)."""
    inbox, sink, ckpt = (work / d for d in ("inbox", "sink", "ckpt"))
    inbox.mkdir(parents=True, exist_ok=True)
    for i in files:
        pq.write_table(parts()[i], inbox / f"{i}.parquet")
        os.utime(inbox / f"{i}.parquet", (1_000 + i, 1_000 + i))
    events = spark.readStream.schema("symbol string, price double, volume long, ts long") \
        .option("maxFilesPerTrigger", 1).parquet(str(inbox))
    live = lspark.run(events, SQL, state_location=str(ckpt / "laminardb"), engine=engine)
    query = (live.writeStream.format("parquet").option("path", str(sink))
             .option("checkpointLocation", str(ckpt)).start())
    query.processAllAvailable()
    query.stop()
    rows = [tuple(r) for r in spark.read.parquet(str(sink)).collect()]
    assert len(rows) == len(set(rows)), "a window written twice"
    # The windows the watermark closed: the largest event time less the delay
    # (two phases: a window closes in the micro-batch whose rows pass it).
    every = pa.concat_tables(parts()[: files.stop])
    watermark = int(pa.compute.max(every.column("ts")).as_py()) - 100
    return normal(rows), duck(every, watermark)


def main() -> None:
    """Batch and streaming W1 on both engines against DuckDB."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--state-before", type=Path, help="leave half-run streaming queries here")
    ap.add_argument("--state-after", type=Path, help="finish the queries left here")
    args = ap.parse_args()
    assert "PYSPARK_PYTHON" not in os.environ, "the docs set no PYSPARK_PYTHON"
    # docs/SPARK.md, "The JVM engine": the three lines.
    builder = (SparkSession.builder.master("local[2]").config("spark.sql.shuffle.partitions", "4")
               .config("spark.ui.showConsoleProgress", "false"))
    spark = lspark.configure(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    assert lspark.jvm_engine_available(spark)
    scala = spark.sparkContext._jvm.scala.util.Properties.versionNumberString()  # noqa: SLF001
    print(f"spark-compat: pyspark={pyspark.__version__} scala={scala} "
          f"jar={lspark.jars()[0].parent.name}", flush=True)
    work = Path(tempfile.mkdtemp(prefix="laminardb-quickstart-"))

    table = trades(1, 20_000, 1_000, 31_000)
    pq.write_table(table, work / "trades.parquet")
    df = spark.read.parquet(str(work / "trades.parquet"))
    for engine in ("jvm", "python"):
        out = lspark.run(df, SQL, engine=engine)
        check(f"engine={engine} mode=batch", normal(tuple(r) for r in out.collect()),
              duck(table))

    for engine in ("jvm", "python"):
        run_stream(spark, work / engine, engine, range(2))
        check(f"engine={engine} mode=streaming(restart)", *run_stream(spark, work / engine,
                                                                      engine, range(2, 4)))
    for engine in ("jvm", "python"):
        if args.state_before is not None:
            run_stream(spark, args.state_before / engine, engine, range(2))
            (args.state_before / "pyspark").write_text(pyspark.__version__)
        if args.state_after is not None:
            before = (args.state_after / "pyspark").read_text()
            check(f"engine={engine} mode=streaming(state from {before})",
                  *run_stream(spark, args.state_after / engine, engine, range(2, 4)))
    spark.stop()


if __name__ == "__main__":
    main()

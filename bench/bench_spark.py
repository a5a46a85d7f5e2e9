"""W1 (1-second tumbling VWAP per symbol) on local Spark: laminardb.spark against
Spark's own ``groupBy(window(...), symbol).agg(...)``, batch and streaming, on
the same data (the reference trades of ``laminardb.bench``).

Batch: both read one cached DataFrame and write to Spark's ``noop`` sink, so
each timing is one whole Spark job (its fixed overhead included). Streaming:
both read the same directory of Parquet files, ``--files-per-batch`` per
micro-batch, with ``trigger(availableNow=True)`` into the ``noop`` sink; Spark's
operator uses a zero-delay watermark (as W1's ``WATERMARK FOR ts AS ts``) in
append mode. Prints one line per figure (median of ``--reps``; in batch the
figures take turns, one run each per round) and the ratios,
and checks the batch answers have the same number of rows. ``adapter_s`` is the
default two-phase path (partial aggregation per input partition, shuffle of the
partial rows, final per partition) in Spark's Python workers
(``engine="python"``); ``jvm_s`` the same two phases with every task's engine
inside Spark's JVM (``engine="jvm"``, laminardb-spark.jar: Spark's own Arrow
writer and the JNI library, no Python worker); ``whole_s`` the whole-stream path
(``two_phase=False``: shuffle and sort of every input row, one engine per key
partition). ``transfer_only_s`` is the input's trip into the Python workers
alone (select, Arrow batches into the worker, dropped there): no core, no
shuffle -- the floor of any ``mapInArrow`` adapter. ``partial_only_s`` is the
partial stage alone (its rows dropped in Spark's ``noop`` sink). In streaming,
``jvm_s`` is the two phases in Spark's JVM as nodes of the streaming query's plan
(``engine="jvm"``) and ``read_only_s`` the query that only reads the files into
the ``noop`` sink (the floor of any streaming figure); the streaming figures
take turns too, after one warm-up round.

    .venv/bin/python bench/bench_spark.py --rows 5000000 --reps 3
"""

from __future__ import annotations

import argparse
import functools
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

import laminardb.spark as lspark
from laminardb.bench import TRADES_SCHEMA, W1_SQL, symbol_array, trade_columns


def write_files(directory: Path, rows: int, files: int) -> None:
    """The first ``rows`` reference trades as ``files`` Parquet files, in time order."""
    directory.mkdir(parents=True)
    step = -(-rows // files)
    for i in range(files):
        count = min(step, rows - i * step)
        cols = trade_columns(i * step, count)
        table = pa.table(
            [
                symbol_array(cols["symbol_id"]),
                pa.array(cols["price"]),
                pa.array(cols["volume"]),
                pa.array(cols["ts"]),
            ],
            schema=TRADES_SCHEMA,
        )
        path = directory / f"part-{i:04d}.parquet"
        pq.write_table(table, path)
        os.utime(path, (1_000_000 + i, 1_000_000 + i))


def spark_w1(df: Any, *, streaming: bool) -> Any:  # noqa: ANN401
    """W1 with Spark's own operators."""
    from pyspark.sql import functions as F

    t = df.withColumn("event", F.expr("timestamp_millis(ts)"))
    if streaming:
        t = t.withWatermark("event", "0 seconds")
    return t.groupBy(F.window("event", "1 second"), "symbol").agg(
        (F.sum(F.col("price") * F.col("volume")) / F.sum("volume")).alias("vwap"),
        F.count("*").alias("trades"),
        F.max("price").alias("max_price"),
        F.min("price").alias("min_price"),
    )


def _consume(batches: Any) -> Any:  # noqa: ANN401 -- a mapInArrow function
    """Take every Arrow batch Spark hands the task, yield nothing."""
    for _ in batches:
        pass
    return iter(())


def median_seconds(reps: int, body: Callable[[int], None]) -> float:
    """Run ``body(rep)`` ``reps`` times; return the median wall time in seconds."""
    times = []
    for rep in range(reps):
        start = time.perf_counter()
        body(rep)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; print RESULT lines."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--files-per-batch", type=int, default=4)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--skip-streaming", action="store_true")
    parser.add_argument("--skip-batch", action="store_true", help="no batch timings")
    args = parser.parse_args(argv)

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession
    from pyspark.sql.pandas.types import from_arrow_schema

    builder = SparkSession.builder
    if lspark.jars():
        builder = lspark.configure(builder)  # the JVM engine's jars (docs/SPARK.md)
    spark = (
        builder.master("local[2]")
        .appName("laminardb-bench")
        .config("spark.sql.shuffle.partitions", str(args.partitions))
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "4g")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    work = Path(tempfile.mkdtemp(prefix="laminardb-bench-spark-"))
    try:
        inp = work / "in"
        write_files(inp, args.rows, args.files)
        df = spark.read.parquet(str(inp)).cache()
        assert df.count() == args.rows

        adapter = lspark.run(df, W1_SQL, partitions=args.partitions, engine="python")
        whole = lspark.run(df, W1_SQL, partitions=args.partitions, two_phase=False, engine="python")
        own = spark_w1(df, streaming=False)
        n_adapter, n_whole, n_spark = adapter.count(), whole.count(), own.count()
        assert n_adapter == n_spark == n_whole, (n_adapter, n_whole, n_spark)
        jvm = None
        if lspark.jvm_engine_available(spark):
            jvm = lspark.run(df, W1_SQL, partitions=args.partitions, engine="jvm")
            assert jvm.count() == n_spark
        plan = lspark.plan(df, W1_SQL)
        assert plan.two_phase is not None
        # The input's trip into the Python workers alone, batches dropped.
        transfer = df.select(*plan.columns).mapInArrow(_consume, df.schema)
        # The adapter's partial stage alone (as run() builds it).
        split = plan.two_phase.partial
        partial = df.select(*split.columns).mapInArrow(
            functools.partial(lspark._batch_task, split, final=True),  # noqa: SLF001
            from_arrow_schema(split.output_schema),
        )
        figures = {
            "adapter": adapter,
            "whole": whole,
            "spark": own,
            "transfer_only": transfer,
            "partial_only": partial,
        }
        if jvm is not None:
            figures["jvm"] = jvm
        # Interleaved (one run of each figure per round), so a change in the
        # machine's load hits every figure alike.
        times: dict[str, list[float]] = {name: [] for name in figures}
        for _ in range(0 if args.skip_batch else args.reps):
            for name, frame in figures.items():
                times[name].append(
                    median_seconds(
                        1, lambda _, f=frame: f.write.format("noop").mode("overwrite").save()
                    )
                )
        batch = {
            name: statistics.median(values or [float("nan")]) for name, values in times.items()
        }
        print(
            f"RESULT spark-batch W1 rows={args.rows} adapter_s={batch['adapter']:.2f} "
            f"spark_s={batch['spark']:.2f} ratio={batch['spark'] / batch['adapter']:.2f} "
            f"whole_s={batch['whole']:.2f} ratio_whole={batch['spark'] / batch['whole']:.2f} "
            f"transfer_only_s={batch['transfer_only']:.2f} "
            f"partial_only_s={batch['partial_only']:.2f} (result rows {n_adapter})"
        )
        if jvm is not None:
            print(
                f"RESULT spark-batch-jvm W1 rows={args.rows} jvm_s={batch['jvm']:.2f} "
                f"spark_s={batch['spark']:.2f} ratio={batch['spark'] / batch['jvm']:.2f}"
            )

        if not args.skip_streaming:
            schema = "symbol string, price double, volume long, ts long"

            def stream_run(which: str, rep: int) -> None:
                src = (
                    spark.readStream.schema(schema)
                    .option("maxFilesPerTrigger", args.files_per_batch)
                    .parquet(str(inp))
                )
                ckpt = work / f"ckpt-{which}-{rep}"
                if which == "spark":
                    out = spark_w1(src, streaming=True)
                elif which == "read_only":
                    out = src
                else:
                    out = lspark.run(
                        src,
                        W1_SQL,
                        partitions=args.partitions,
                        engine="jvm" if which == "jvm" else "python",
                        state_location=str(ckpt / "laminardb"),
                        two_phase=which != "whole",
                    )
                query = (
                    out.writeStream.format("noop")
                    .outputMode("append")
                    .option("checkpointLocation", str(ckpt))
                    .trigger(availableNow=True)
                    .start()
                )
                query.awaitTermination()

            names = ["adapter", "whole", "spark", "read_only"]
            if jvm is not None:
                names.append("jvm")
            # Interleaved like the batch figures; the first round warms up (not counted).
            runs: dict[str, list[float]] = {name: [] for name in names}
            for rep in range(args.reps + 1):
                for name in names:
                    took = median_seconds(1, lambda _, n=name, r=rep: stream_run(n, r))
                    if rep:
                        runs[name].append(took)
            stream = {name: statistics.median(values) for name, values in runs.items()}
            print(
                f"RESULT spark-stream W1 rows={args.rows} micro_batches="
                f"{-(-args.files // args.files_per_batch)} adapter_s={stream['adapter']:.2f} "
                f"spark_s={stream['spark']:.2f} "
                f"ratio={stream['spark'] / stream['adapter']:.2f} "
                f"whole_s={stream['whole']:.2f} "
                f"ratio_whole={stream['spark'] / stream['whole']:.2f} "
                f"read_only_s={stream['read_only']:.2f}"
            )
            if jvm is not None:
                print(
                    f"RESULT spark-stream-jvm W1 rows={args.rows} jvm_s={stream['jvm']:.2f} "
                    f"spark_s={stream['spark']:.2f} "
                    f"ratio={stream['spark'] / stream['jvm']:.2f} "
                    f"read_only_s={stream['read_only']:.2f}"
                )
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

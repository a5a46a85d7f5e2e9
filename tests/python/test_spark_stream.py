"""laminardb.spark on streaming DataFrames: a directory of Parquet files read one
file per micro-batch, rows out of order within the watermark delay, gives
exactly the batch answer (DuckDB's); a query stopped and restarted from its
checkpoint (with its last batch re-run) and a query whose tasks fail once
(mid-partition, and after the state was saved) write every window exactly once
to a Parquet sink.

Runs in the session's local Spark (``local[2,2]``: a failed task is retried);
marked ``spark`` and left out of the ASan pytest run (scripts/test.sh).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _oracle_util import assert_same_rows, duck

import laminardb
import laminardb.spark as lspark

pytestmark = pytest.mark.spark

DELAY_MS = 500
SQL = f"""
CREATE SOURCE trades (symbol VARCHAR NOT NULL, price DOUBLE, volume BIGINT, ts BIGINT,
                      WATERMARK FOR ts AS ts - INTERVAL '{DELAY_MS}' MILLISECOND);
CREATE STREAM vwap AS
  SELECT symbol, window_start, SUM(price * volume) / SUM(volume) AS vwap, COUNT(*) AS n
  FROM trades GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND);
"""
DUCK = (
    "SELECT symbol, (ts // 1000) * 1000 AS window_start, SUM(price * volume) / SUM(volume) "
    "AS vwap, COUNT(*) AS n FROM t WHERE symbol <> '~tick' GROUP BY ALL"
)
COLUMNS = ["symbol", "window_start", "vwap", "n"]
SCHEMA = pa.schema([pa.field("symbol", pa.string(), nullable=False),
                    pa.field("price", pa.float64()), pa.field("volume", pa.int64()),
                    pa.field("ts", pa.int64())])


def feed_files(rng: np.random.Generator, rows: int = 4_000, files: int = 4) -> list[pa.Table]:
    """Trades over ~12 s in arrival order, each up to 400 ms out of event-time order
    (inside the 500 ms delay), cut into ``files`` tables; then two tick files.

    The ticks (symbol ``~tick``, 10 s and 20 s past the data) move the global
    watermark past every data window: the first is seen by one partition, the
    second micro-batch carries it to all (the watermark lags a micro-batch, as
    Spark's does). Tick windows are not compared.
    """
    arrival = np.sort(rng.integers(1_000, 13_000, rows))
    ts = arrival - rng.integers(0, 400, rows)
    data = pa.table({
        "symbol": pa.array([f"S{k}" for k in rng.integers(0, 7, rows)]),
        "price": pa.array(np.round(rng.uniform(10, 20, rows), 3)),
        "volume": pa.array(rng.integers(1, 100, rows)),
        "ts": pa.array(ts.astype(np.int64)),
    }, schema=SCHEMA)
    step = -(-rows // files)
    out = [data.slice(i * step, step) for i in range(files)]
    for at in (23_000, 33_000):
        out.append(pa.table({"symbol": ["~tick"], "price": [1.0], "volume": [1], "ts": [at]},
                            schema=SCHEMA))
    return out


def add_files(directory: Path, tables: list[pa.Table], first: int) -> None:
    """Write tables as numbered Parquet files with increasing modification times
    (the file source reads them oldest first)."""
    directory.mkdir(parents=True, exist_ok=True)
    for i, table in enumerate(tables, start=first):
        path = directory / f"f{i:03d}.parquet"
        pq.write_table(table, path)
        os.utime(path, (1_000_000 + i, 1_000_000 + i))


def expected(tables: list[pa.Table]) -> list[tuple]:
    """DuckDB's answer over every data row."""
    _, rows = duck(DUCK, t=pa.concat_tables(tables))
    return rows


def start(spark: Any, inp: Path, out: Path, ckpt: Path,  # noqa: ANN401
          tail: Any = None, *, two_phase: bool = True,  # noqa: ANN401
          engine: str = "python") -> Any:  # noqa: ANN401
    """Start the streaming query: input dir -> laminardb.spark.run -> Parquet sink.

    ``engine`` is the Python engine here (test_spark_jvm_stream.py runs the same
    queries with ``engine="jvm"``).
    """
    stream = spark.readStream.schema("symbol string, price double, volume long, ts long") \
        .option("maxFilesPerTrigger", 1).parquet(str(inp))
    result = lspark.run(stream, SQL, state_location=str(ckpt / "laminardb"),
                        two_phase=two_phase, engine=engine)
    assert result.isStreaming
    if tail is not None:
        result = result.mapInArrow(tail, result.schema)
    return (result.writeStream.format("parquet").option("path", str(out))
            .option("checkpointLocation", str(ckpt)).outputMode("append").start())


def run_to_end(query: Any) -> None:  # noqa: ANN401
    """Process every file there is, then stop the query (also on failure)."""
    try:
        query.processAllAvailable()
    finally:
        query.stop()


def sink_rows(spark: Any, out: Path) -> list[tuple]:  # noqa: ANN401
    """The committed rows of the Parquet sink (Spark reads its _spark_metadata log)."""
    return [tuple(r) for r in spark.read.parquet(str(out)).collect() if r.symbol != "~tick"]


@pytest.mark.parametrize("two_phase", [True, False])
def test_stream_equals_batch_answer(spark: Any, rng: np.random.Generator,  # noqa: ANN401
                                    tmp_path: Path, two_phase: bool) -> None:  # noqa: FBT001
    """Both streaming paths: partial per micro-batch partition + stateful final
    (the default), and the whole stream per key partition."""
    tables = feed_files(rng)
    add_files(tmp_path / "in", tables, 0)
    query = start(spark, tmp_path / "in", tmp_path / "out", tmp_path / "ckpt",
                  two_phase=two_phase)
    run_to_end(query)
    assert query.lastProgress["batchId"] == len(tables) - 1
    got = sink_rows(spark, tmp_path / "out")
    assert_same_rows(got, expected(tables), COLUMNS)
    # The batch adapter over the same files gives the same rows.
    batch = lspark.run(spark.read.parquet(str(tmp_path / "in")), SQL)
    assert_same_rows([tuple(r) for r in batch.collect() if r.symbol != "~tick"], got, COLUMNS)
    # State is the open windows: a few hundred bytes per partition, not the input.
    states = [p for p in (tmp_path / "ckpt" / "laminardb").glob("p*/b*/db/checkpoints/*")]
    assert states
    assert max(p.stat().st_size for p in states) < 4096


def test_restart_from_checkpoint_writes_each_window_once(
        spark: Any, rng: np.random.Generator, tmp_path: Path) -> None:  # noqa: ANN401
    tables = feed_files(rng)
    inp, out, ckpt = tmp_path / "in", tmp_path / "out", tmp_path / "ckpt"
    add_files(inp, tables[:3], 0)
    query = start(spark, inp, out, ckpt)
    run_to_end(query)
    first = sink_rows(spark, out)
    assert first  # windows closed by the first files' watermark are committed
    # As if the process died after the sink committed batch 2 but before Spark
    # logged the commit: the restarted query runs batch 2 again.
    last = max(int(p.name) for p in (ckpt / "commits").iterdir() if p.name.isdigit())
    (ckpt / "commits" / str(last)).unlink()
    (ckpt / "commits" / f".{last}.crc").unlink(missing_ok=True)
    add_files(inp, tables[3:], 3)
    query = start(spark, inp, out, ckpt)
    run_to_end(query)
    got = sink_rows(spark, out)
    assert len(set(got)) == len(got)
    assert_same_rows(got, expected(tables), COLUMNS)


def fail_once(marker_dir: str) -> Any:  # noqa: ANN401 -- a mapInArrow function
    """A mapInArrow function that fails the first attempt of some tasks.

    Nested, so Spark's cloudpickle ships it by value (the test module is not
    importable on the Python workers).
    """

    def _fail_once(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """Pass batches through; the first attempt of partition 0 in micro-batch 1
        fails after its first result batch, and of partition 1 in micro-batch 2
        after its last (once the adapter has saved that batch's state)."""
        from pyspark import TaskContext

        ctx = TaskContext.get()
        assert ctx is not None
        batch_id = ctx.getLocalProperty("streaming.sql.batchId")
        first_try = ctx.attemptNumber() == 0
        part = ctx.partitionId()
        for batch in batches:
            yield batch
            if first_try and batch_id == "1" and part == 0:
                Path(marker_dir, "mid").write_text("failed", encoding="utf-8")
                raise RuntimeError("injected failure mid-partition")
        if first_try and batch_id == "2" and part == 1:
            Path(marker_dir, "end").write_text("failed", encoding="utf-8")
            raise RuntimeError("injected failure after the partition")

    return _fail_once


def test_failed_task_gives_the_same_output(spark: Any, rng: np.random.Generator,  # noqa: ANN401
                                           tmp_path: Path) -> None:
    tables = feed_files(rng)
    add_files(tmp_path / "in", tables, 0)
    markers = tmp_path / "markers"
    markers.mkdir()
    tail = fail_once(str(markers))
    query = start(spark, tmp_path / "in", tmp_path / "out", tmp_path / "ckpt", tail)
    run_to_end(query)
    assert sorted(p.name for p in markers.iterdir()) == ["end", "mid"]
    got = sink_rows(spark, tmp_path / "out")
    assert_same_rows(got, expected(tables), COLUMNS)


def test_streaming_needs_a_state_location(spark: Any, tmp_path: Path) -> None:  # noqa: ANN401
    add_files(tmp_path / "in", feed_files(np.random.default_rng(5), rows=10)[:1], 0)
    stream = spark.readStream.schema("symbol string, price double, volume long, ts long") \
        .parquet(str(tmp_path / "in"))
    with pytest.raises(laminardb.ConfigError, match="LDB-6002.*state_location"):
        lspark.run(stream, SQL)
    with pytest.raises(laminardb.ConfigError, match="LDB-6002.*state_location"):
        lspark.run(stream, SQL, engine="python")
    no_wm = re.sub(r",\s*WATERMARK FOR [^)]*", "", SQL)
    assert "WATERMARK" not in no_wm
    with pytest.raises(laminardb.SchemaError, match="LDB-2003.*WATERMARK"):
        lspark.run(stream, no_wm, state_location=str(tmp_path / "s"))
    # A state location keeps the SQL and the partitions of its query.
    lspark.run(stream, SQL, state_location=str(tmp_path / "s"), partitions=3)
    with pytest.raises(laminardb.ConfigError, match="LDB-6003.*other partitions"):
        lspark.run(stream, SQL, state_location=str(tmp_path / "s"), partitions=4)
    with pytest.raises(laminardb.ConfigError, match="LDB-6003.*other SQL"):
        lspark.run(stream, SQL.replace("COUNT(*) AS n", "COUNT(*) AS c"),
                   state_location=str(tmp_path / "s"), partitions=3)
    # ... and its aggregation path (the two keep different state).
    with pytest.raises(laminardb.ConfigError, match="LDB-6003.*two_phase"):
        lspark.run(stream, SQL, state_location=str(tmp_path / "s"), partitions=3,
                   two_phase=False)
    # A location holding whole-path state (two_phase=False, or made before two
    # phases existed) keeps its query on that path by default.
    lspark.run(stream, SQL, state_location=str(tmp_path / "w"), partitions=3, two_phase=False)
    lspark.run(stream, SQL, state_location=str(tmp_path / "w"), partitions=3)
    with pytest.raises(laminardb.ConfigError, match="LDB-6003.*two_phase"):
        lspark.run(stream, SQL, state_location=str(tmp_path / "w"), partitions=3,
                   two_phase=True)


def test_two_phase_late_rows_follow_the_global_watermark(
        spark: Any, tmp_path: Path) -> None:  # noqa: ANN401
    """Two phases: a row is late when its window closed by the largest event
    time of every earlier micro-batch (less the delay), whichever partition it
    hashes to -- as in one engine reading the micro-batches in order."""
    def rows(symbols: list[str], ts: list[int]) -> pa.Table:
        return pa.table({"symbol": symbols, "price": [1.0] * len(ts),
                         "volume": [1] * len(ts), "ts": ts}, schema=SCHEMA)

    inp, out, ckpt = tmp_path / "in", tmp_path / "out", tmp_path / "ckpt"
    # Batch 0: A at 100, B at 5000 (watermark 4500 closes A's [0, 1000)).
    # Batch 1: A at 200 -- in a closed window: late, whatever A's partition saw.
    # Batch 2: B at 9000 closes [5000, 6000).
    add_files(inp, [rows(["A", "B"], [100, 5000]), rows(["A"], [200]), rows(["B"], [9000])], 0)
    run_to_end(start(spark, inp, out, ckpt))
    got = sorted(sink_rows(spark, out))
    assert got == [("A", 0, 1.0, 1), ("B", 5000, 1.0, 1)]


def check_stream_without_windows(spark: Any, rng: np.random.Generator,  # noqa: ANN401
                                 tmp_path: Path, engine: str) -> Any:  # noqa: ANN401
    """Run a filter/project stream over two files on ``engine``; compare with DuckDB.

    Returns:
        The stopped query.
    """
    tables = feed_files(rng, rows=600, files=2)[:2]
    add_files(tmp_path / "in", tables, 0)
    stream = spark.readStream.schema("symbol string, price double, volume long, ts long") \
        .option("maxFilesPerTrigger", 1).parquet(str(tmp_path / "in"))
    sql = SQL.split("CREATE STREAM")[0] + (
        "CREATE STREAM big AS SELECT symbol, price * volume AS notional, ts FROM trades "
        "WHERE volume > 50;")
    out = lspark.run(stream, sql, engine=engine)
    query = (out.writeStream.format("parquet").option("path", str(tmp_path / "out"))
             .option("checkpointLocation", str(tmp_path / "ckpt")).start())
    run_to_end(query)
    got = [tuple(r) for r in spark.read.parquet(str(tmp_path / "out")).collect()]
    columns, want = duck("SELECT symbol, price * volume, ts FROM t WHERE volume > 50",
                         t=pa.concat_tables(tables))
    assert_same_rows(got, want, columns)
    return query


def test_stream_without_windows_runs_per_micro_batch(
        spark: Any, rng: np.random.Generator, tmp_path: Path) -> None:  # noqa: ANN401
    """A filter/project stream keeps no state: no shuffle, no state_location."""
    check_stream_without_windows(spark, rng, tmp_path, "python")

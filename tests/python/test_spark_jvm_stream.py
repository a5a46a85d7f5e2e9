"""laminardb.spark's JVM engine on streaming DataFrames (``engine="jvm"``, and
``"auto"`` in a session started with ``laminardb.spark.configure``): each
micro-batch runs the partial stage per input partition and the stateful final
stage per key partition inside Spark's JVM, as nodes of the query's logical plan
(org.laminardb.LaminarStageNode). The same queries as test_spark_stream.py's
Python engine: rows out of order inside the delay give the batch answer and
DuckDB's; a stopped and restarted query (also one started on the Python engine:
the state layout is the same), a task failing mid-partition and one failing after
its state was saved write every window exactly once to a Parquet sink.

Marked ``spark``; runs in the suite's session (test_spark_jvm.py's ``jvm``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from _oracle_util import assert_same_rows, duck
from test_spark_jvm import jvm  # noqa: F401 -- the fixture
from test_spark_stream import (
    COLUMNS,
    SCHEMA,
    SQL,
    add_files,
    check_stream_without_windows,
    expected,
    fail_once,
    feed_files,
    run_to_end,
    sink_rows,
    start,
)

import laminardb
import laminardb.spark as lspark

pytestmark = pytest.mark.spark


def executed_plan(query: Any) -> str:  # noqa: ANN401
    """Spark's physical plan of ``query``'s last micro-batch.

    Spark 4 runs micro-batches with adaptive execution, whose plan text holds
    the final plan and the initial one: only the final plan is returned.
    """
    execution = query._jsq.streamingQuery().lastExecution()  # noqa: SLF001
    text = str(execution.executedPlan().toString())
    if "== Final Plan ==" in text:
        text = text.split("== Final Plan ==", 1)[1].split("== Initial Plan ==", 1)[0]
    return text


def assert_jvm_stream_plan(text: str, stream: str = "vwap") -> None:
    """Both stages of ``stream`` are the JVM engine's, with no Python stage in between."""
    assert text.count(f"LaminarStage partial stage of stream {stream},") == 1, text
    assert text.count(f"LaminarStage final stage of stream {stream},") == 1, text
    assert "MapInArrow" not in text, text
    assert "Python" not in text, text


def test_jvm_stream_equals_batch_and_python(jvm: Any, rng: np.random.Generator,  # noqa: ANN401, F811
                                            tmp_path: Path) -> None:
    tables = feed_files(rng)
    add_files(tmp_path / "in", tables, 0)
    query = start(jvm, tmp_path / "in", tmp_path / "out", tmp_path / "ckpt", engine="jvm")
    run_to_end(query)
    assert query.lastProgress["batchId"] == len(tables) - 1
    assert_jvm_stream_plan(executed_plan(query))
    got = sink_rows(jvm, tmp_path / "out")
    assert len(set(got)) == len(got)
    assert_same_rows(got, expected(tables), COLUMNS)
    batch = lspark.run(jvm.read.parquet(str(tmp_path / "in")), SQL, engine="jvm")
    assert_same_rows([tuple(r) for r in batch.collect() if r.symbol != "~tick"], got, COLUMNS)
    python = start(jvm, tmp_path / "in", tmp_path / "out-py", tmp_path / "ckpt-py",
                   engine="python")
    run_to_end(python)
    assert_same_rows(sink_rows(jvm, tmp_path / "out-py"), got, COLUMNS)
    # The same state layout as the Python engine's: small engine checkpoints per
    # (partition, batch id), only the newest two batches kept.
    states = sorted((tmp_path / "ckpt" / "laminardb").glob("p*/b*/db/checkpoints/*"))
    assert states
    assert max(p.stat().st_size for p in states) < 4096
    for part in (tmp_path / "ckpt" / "laminardb").glob("p*"):
        assert sorted(p.name for p in part.iterdir()) == [f"b{len(tables) - 2}",
                                                          f"b{len(tables) - 1}"]


@pytest.mark.parametrize("first_engine", ["jvm", "python"])
def test_jvm_restart_writes_each_window_once(jvm: Any, rng: np.random.Generator,  # noqa: ANN401, F811
                                             tmp_path: Path, first_engine: str) -> None:
    """Stopped after three files with its last batch's commit lost, restarted on
    the JVM engine from the same checkpoint: batch 2 runs again from the state
    batch 1 left (written by either engine), and every window is in the sink once."""
    tables = feed_files(rng)
    inp, out, ckpt = tmp_path / "in", tmp_path / "out", tmp_path / "ckpt"
    add_files(inp, tables[:3], 0)
    run_to_end(start(jvm, inp, out, ckpt, engine=first_engine))
    assert sink_rows(jvm, out)
    last = max(int(p.name) for p in (ckpt / "commits").iterdir() if p.name.isdigit())
    (ckpt / "commits" / str(last)).unlink()
    (ckpt / "commits" / f".{last}.crc").unlink(missing_ok=True)
    add_files(inp, tables[3:], 3)
    query = start(jvm, inp, out, ckpt, engine="jvm")
    run_to_end(query)
    assert_jvm_stream_plan(executed_plan(query))
    got = sink_rows(jvm, out)
    assert len(set(got)) == len(got)
    assert_same_rows(got, expected(tables), COLUMNS)


def test_jvm_failed_task_gives_the_same_output(jvm: Any, rng: np.random.Generator,  # noqa: ANN401, F811
                                               tmp_path: Path) -> None:
    """A final-stage task failing mid-partition (its staged state discarded) and
    one failing after its state was published (the retry redoes the batch from
    the state before it and keeps the published one) are retried: same rows."""
    tables = feed_files(rng)
    add_files(tmp_path / "in", tables, 0)
    markers = tmp_path / "markers"
    markers.mkdir()
    query = start(jvm, tmp_path / "in", tmp_path / "out", tmp_path / "ckpt",
                  fail_once(str(markers)), engine="jvm")
    run_to_end(query)
    assert sorted(p.name for p in markers.iterdir()) == ["end", "mid"]
    got = sink_rows(jvm, tmp_path / "out")
    assert len(set(got)) == len(got)
    assert_same_rows(got, expected(tables), COLUMNS)
    # No staging directory of a failed attempt is left behind.
    assert not list((tmp_path / "ckpt" / "laminardb").glob("p*/.b*"))


def test_jvm_late_rows_follow_the_global_watermark(jvm: Any, tmp_path: Path) -> None:  # noqa: ANN401, F811
    def rows(symbols: list[str], ts: list[int]) -> pa.Table:
        return pa.table({"symbol": symbols, "price": [1.0] * len(ts),
                         "volume": [1] * len(ts), "ts": ts}, schema=SCHEMA)

    inp, out, ckpt = tmp_path / "in", tmp_path / "out", tmp_path / "ckpt"
    add_files(inp, [rows(["A", "B"], [100, 5000]), rows(["A"], [200]), rows(["B"], [9000])], 0)
    run_to_end(start(jvm, inp, out, ckpt, engine="jvm"))
    assert sorted(sink_rows(jvm, out)) == [("A", 0, 1.0, 1), ("B", 5000, 1.0, 1)]


def test_auto_takes_jvm_for_streaming(jvm: Any, tmp_path: Path) -> None:  # noqa: ANN401, F811
    """``auto`` runs a streaming two-phase query in the JVM (planned through the
    strategy ``configure`` registers as a session extension) and the whole-stream
    path in Python; ``engine="jvm"`` refuses the whole-stream path on the driver."""
    assert "org.laminardb.LaminarExtensions" in jvm.conf.get("spark.sql.extensions", "")
    add_files(tmp_path / "in", feed_files(np.random.default_rng(3), rows=40)[:1], 0)
    stream = jvm.readStream.schema("symbol string, price double, volume long, ts long") \
        .parquet(str(tmp_path / "in"))
    auto = lspark.run(stream, SQL, state_location=str(tmp_path / "a"))
    assert "LaminarStageNode" in auto._jdf.queryExecution().logical().toString()  # noqa: SLF001
    whole = lspark.run(stream, SQL, state_location=str(tmp_path / "w"), two_phase=False)
    assert "MapInArrow" in whole._jdf.queryExecution().logical().toString()  # noqa: SLF001
    with pytest.raises(laminardb.SQLError, match="LDB-1005: engine='jvm' runs a streaming"):
        lspark.run(stream, SQL, state_location=str(tmp_path / "j"), two_phase=False,
                   engine="jvm")
    with pytest.raises(laminardb.ConfigError, match="LDB-6002.*state_location"):
        lspark.run(stream, SQL, engine="jvm")


def test_jvm_stream_without_windows(jvm: Any, rng: np.random.Generator,  # noqa: ANN401, F811
                                    tmp_path: Path) -> None:
    """A filter/project stream in the JVM: one stage per micro-batch, no state."""
    text = executed_plan(check_stream_without_windows(jvm, rng, tmp_path, "jvm"))
    assert text.count("LaminarStage stream big") == 1, text
    assert "Python" not in text, text


def test_jvm_stream_column_types_and_nulls(jvm: Any, rng: np.random.Generator,  # noqa: ANN401, F811
                                           tmp_path: Path) -> None:
    """INT, DOUBLE, BOOLEAN and TIMESTAMP columns with NULLs, copied column by
    column from Parquet's batches into Arrow: the JVM engine's stream equals the
    Python engine's and DuckDB's."""
    rows, delay_ms = 3_000, 200
    arrival = np.sort(rng.integers(1_000, 9_000, rows))
    ts = arrival - rng.integers(0, 150, rows)
    nulls = rng.random(rows) < 0.1
    data = pa.table({
        "symbol": pa.array([f"S{k}" for k in rng.integers(0, 5, rows)]),
        "qty": pa.array(rng.integers(-50, 50, rows).astype(np.int32), mask=nulls),
        "price": pa.array(rng.uniform(1, 2, rows), mask=np.roll(nulls, 1)),
        "odd": pa.array(rng.random(rows) < 0.7, mask=np.roll(nulls, 2)),
        "ts": pa.array(ts * 1000, type=pa.timestamp("us", "UTC")),
    })
    tick = pa.table({"symbol": ["~tick"], "qty": pa.array([1], pa.int32()), "price": [1.0],
                     "odd": [True], "ts": pa.array([30_000_000], pa.timestamp("us", "UTC"))})
    step = rows // 3
    add_files(tmp_path / "in", [data.slice(0, step), data.slice(step, step),
                                data.slice(2 * step), tick, tick], 0)
    sql = f"""
      CREATE SOURCE s (symbol VARCHAR NOT NULL, qty INT, price DOUBLE, odd BOOLEAN,
                       ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '{delay_ms}' MILLISECOND);
      CREATE STREAM w AS SELECT symbol, window_start, SUM(qty) AS q, COUNT(*) AS n,
                                MAX(price) AS p
        FROM s WHERE odd GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND);
    """

    def run_on(engine: str) -> list[tuple]:
        stream = jvm.readStream.schema(
            "symbol string, qty int, price double, odd boolean, ts timestamp") \
            .option("maxFilesPerTrigger", 1).parquet(str(tmp_path / "in"))
        ckpt, out = tmp_path / f"ckpt-{engine}", tmp_path / f"out-{engine}"
        result = lspark.run(stream, sql, state_location=str(ckpt / "laminardb"),
                            engine=engine)
        query = (result.writeStream.format("parquet").option("path", str(out))
                 .option("checkpointLocation", str(ckpt)).start())
        run_to_end(query)
        if engine == "jvm":
            assert_jvm_stream_plan(executed_plan(query), "w")
        return [(r.symbol, int(r.window_start.timestamp() * 1000), r.q, r.n, r.p)
                for r in jvm.read.parquet(str(out)).collect() if r.symbol != "~tick"]

    got = run_on("jvm")
    columns, want = duck(
        "SELECT symbol, (epoch_ms(ts) // 1000) * 1000 AS w, SUM(qty), COUNT(*), MAX(price) "
        "FROM t WHERE odd GROUP BY ALL", t=data)
    assert_same_rows(got, want, columns)
    assert_same_rows(got, run_on("python"), columns)

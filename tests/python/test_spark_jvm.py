"""laminardb.spark's JVM engine (``engine="jvm"``, bindings/java/spark): each task's
engine runs inside Spark's JVM through the JNI library, fed by Spark's own Arrow
writer. W1 (two-phase and whole-stream), a filter/project query and a TIMESTAMP
event time equal DuckDB's answer and the Python engine's; the plan holds no Python
stage; a failed and retried task and a task that stops reading early end cleanly;
the engine choice is checked on the driver.

The suite's session is started with ``laminardb.spark.configure`` (conftest
``spark``), the path docs/SPARK.md documents. Marked ``spark``.
"""

from __future__ import annotations

import dataclasses
import decimal
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _oracle_util import assert_same_rows, duck
from test_spark import (
    W1_DUCK,
    W2_DUCK,
    check_timestamp_event_time,
    rows_of,
    spark_frame,
    trades,
)

import laminardb
import laminardb.spark as lspark
from laminardb.bench import W1_SQL, W2_SQL

pytestmark = pytest.mark.spark


@pytest.fixture
def jvm(spark: Any) -> Any:  # noqa: ANN401
    """The suite's session, which must have the JVM engine when the package ships it.

    The package is built without the engine only where no JDK or Maven is
    (scripts/setup.sh); with both here, a package lacking it is a failed build.
    """
    if not lspark.jars():
        if shutil.which("javac") and shutil.which("mvn"):
            pytest.fail("a JDK and Maven are here, yet the package has no laminardb-spark.jar")
        pytest.skip("no JDK or Maven here: the package was built without the JVM engine")
    assert lspark.jvm_engine_available(spark)
    return spark


def plan_text(frame: Any) -> str:  # noqa: ANN401
    """Spark's physical plan of ``frame``."""
    return str(frame._jdf.queryExecution().executedPlan().toString())  # noqa: SLF001


def assert_jvm_plan(frame: Any) -> None:  # noqa: ANN401
    """``frame`` runs without any Python stage (no mapInArrow, no Python worker)."""
    text = plan_text(frame)
    assert "MapInArrow" not in text, text
    assert "Python" not in text, text
    assert "ExistingRDD" in text, text


@pytest.mark.parametrize("two_phase", [None, False])
def test_w1_jvm_equals_duckdb_and_python(jvm: Any, rng: np.random.Generator,  # noqa: ANN401
                                         tmp_path: Path,
                                         two_phase: bool | None) -> None:  # noqa: FBT001
    table = trades(rng, 30_000)
    df = spark_frame(jvm, table, tmp_path / "in")
    out = lspark.run(df, W1_SQL, engine="jvm", two_phase=two_phase)
    assert_jvm_plan(out)
    assert out.columns == ["window_start", "symbol", "vwap", "trades", "max_price", "min_price"]
    got = rows_of(out)
    columns, want = duck(W1_DUCK, t=table)
    assert_same_rows(got, want, columns)
    python = lspark.run(df, W1_SQL, engine="python", two_phase=two_phase)
    assert "MapInArrow" in plan_text(python)
    assert_same_rows(got, rows_of(python), columns)


def test_auto_takes_jvm_for_batch(jvm: Any, rng: np.random.Generator,  # noqa: ANN401
                                  tmp_path: Path) -> None:
    df = spark_frame(jvm, trades(rng, 1_000), tmp_path / "in")
    assert_jvm_plan(lspark.run(df, W1_SQL))
    assert_jvm_plan(lspark.run(df, W2_SQL))


def test_w2_jvm_equals_duckdb(jvm: Any, rng: np.random.Generator,  # noqa: ANN401
                              tmp_path: Path) -> None:
    table = trades(rng, 20_000)
    out = lspark.run(spark_frame(jvm, table, tmp_path / "in"), W2_SQL, engine="jvm")
    assert_jvm_plan(out)
    assert out.columns == ["symbol", "notional"]
    columns, want = duck(W2_DUCK, t=table)
    got = rows_of(out)
    assert_same_rows(got, want, columns)
    python = lspark.run(spark_frame(jvm, table, tmp_path / "in2"), W2_SQL, engine="python")
    assert "MapInArrow" in plan_text(python)
    assert_same_rows(got, rows_of(python), columns)


def test_jvm_many_batches_and_small_queue(jvm: Any, rng: np.random.Generator,  # noqa: ANN401
                                          tmp_path: Path) -> None:
    """More rows than one pushed batch (65536) and a subscriber queue smaller than
    the output: every row still comes out, once (run_until_idle is re-run after
    each drain)."""
    table = trades(rng, 150_000, symbols=40)
    df = spark_frame(jvm, table, tmp_path / "in", files=2)
    out = lspark.run(df, W2_SQL, engine="jvm", buffer_size=4)
    columns, want = duck(W2_DUCK, t=table)
    assert_same_rows(rows_of(out), want, columns)
    w1 = lspark.run(df, W1_SQL, engine="jvm", two_phase=False, buffer_size=4)
    columns, want = duck(W1_DUCK, t=table)
    assert_same_rows(rows_of(w1), want, columns)


def test_jvm_timestamp_event_time(jvm: Any, rng: np.random.Generator,  # noqa: ANN401
                                  tmp_path: Path) -> None:
    """Spark's timestamp[us, UTC] goes in through Spark's Arrow writer; window_start
    comes back as a Spark timestamp."""
    for two_phase in (None, False):
        out = check_timestamp_event_time(jvm, rng, tmp_path / f"in{two_phase}", engine="jvm",
                                         two_phase=two_phase)
        assert_jvm_plan(out)


def test_jvm_vars_option(jvm: Any, rng: np.random.Generator,  # noqa: ANN401
                         tmp_path: Path) -> None:
    """Engine options reach each JVM task's engine as laminardb.open passes them."""
    table = trades(rng, 5_000)
    sql = W2_SQL.replace("volume > 500", "volume > ${MIN_VOLUME}")
    out = lspark.run(spark_frame(jvm, table, tmp_path / "in"), sql, engine="jvm",
                     vars={"MIN_VOLUME": 800})
    columns, want = duck(W2_DUCK.replace("500", "800"), t=table)
    assert_same_rows(rows_of(out), want, columns)


def test_engine_errors(jvm: Any, tmp_path: Path) -> None:  # noqa: ANN401
    df = jvm.createDataFrame([("A", 1.0, 1, 0)],
                             "symbol string, price double, volume long, ts long")
    with pytest.raises(laminardb.ConfigError, match="LDB-6002: engine='gpu'"):
        lspark.run(df, W1_SQL, engine="gpu")
    pq_dir = tmp_path / "in"
    df.write.parquet(str(pq_dir))
    stream = jvm.readStream.schema(df.schema).parquet(str(pq_dir))
    with pytest.raises(laminardb.SQLError, match="LDB-1005: engine='jvm' runs a streaming"):
        lspark.run(stream, W1_SQL, engine="jvm", two_phase=False,
                   state_location=str(tmp_path / "state"))
    # A runtime error inside a JVM task (a core error thrown by the JNI library)
    # fails the Spark job with the LDB code in the message.
    bad = lspark.plan(df, W2_SQL)
    with pytest.raises(Exception, match=r"LDB-1\d\d\d"):
        lspark._jvm_stage(  # noqa: SLF001 -- a stage whose SQL the driver never checked
            df, dataclasses.replace(bad, sql="CREATE STREAM nope AS SELEC"),
            out_type=None).collect()


def test_jvm_refuses_a_decimal_column_by_name(jvm: Any) -> None:  # noqa: ANN401
    """The JVM stage has no decimal128 copier: engine='jvm' is LDB-1005 naming
    the column, engine='auto' runs the query on the Python engine."""
    df = jvm.createDataFrame([("A", "10.1250", 1, 0), ("A", "9.8750", 2, 1500)],
                             "symbol string, price string, volume long, ts long")
    df = df.withColumn("price", df["price"].cast("decimal(18,4)"))
    sql = ("CREATE SOURCE trades (symbol VARCHAR, price DECIMAL(18,4), volume BIGINT, "
           "ts BIGINT, WATERMARK FOR ts AS ts);"
           "CREATE STREAM w AS SELECT symbol, window_start, MAX(price) AS hi, COUNT(*) AS n "
           "FROM trades GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND);")
    with pytest.raises(laminardb.SQLError) as info:
        lspark.run(df, sql, engine="jvm")
    assert info.value.code == "LDB-1005"
    assert "column 'price'" in str(info.value)
    assert "decimal128(18, 4)" in str(info.value)
    rows = sorted(tuple(r) for r in lspark.run(df, sql, engine="auto").collect())
    assert rows == [("A", 0, decimal.Decimal("10.1250"), 1),
                    ("A", 1000, decimal.Decimal("9.8750"), 1)]


def fail_first_attempt(marker_dir: str) -> Any:  # noqa: ANN401 -- a mapInArrow function
    """A mapInArrow function failing the first attempt of partition 0 after its
    first batch (nested, so cloudpickle ships it by value)."""

    def _fail(batches: Any) -> Any:  # noqa: ANN401
        from pyspark import TaskContext

        ctx = TaskContext.get()
        assert ctx is not None
        for batch in batches:
            yield batch
            if ctx.attemptNumber() == 0 and ctx.partitionId() == 0:
                Path(marker_dir, "failed").write_text("once", encoding="utf-8")
                raise RuntimeError("injected failure mid-partition")

    return _fail


def test_jvm_task_failure_and_early_end(jvm: Any, rng: np.random.Generator,  # noqa: ANN401
                                        tmp_path: Path) -> None:
    """A task that fails after the JVM engine produced rows (its engine closed and
    its Arrow memory freed by the task-completion listener) is retried and gives
    the same answer; a task that stops reading early (LIMIT) ends cleanly too."""
    table = trades(rng, 20_000)
    df = spark_frame(jvm, table, tmp_path / "in")
    markers = tmp_path / "markers"
    markers.mkdir()
    out = lspark.run(df, W1_SQL, engine="jvm")
    failing = out.mapInArrow(fail_first_attempt(str(markers)), out.schema)
    got = rows_of(failing)
    assert (markers / "failed").exists()
    columns, want = duck(W1_DUCK, t=table)
    assert_same_rows(got, want, columns)
    assert len(out.limit(3).collect()) == 3
    w2 = lspark.run(df, W2_SQL, engine="jvm")
    assert len(w2.limit(5).collect()) == 5
    # The session still runs JVM tasks afterwards.
    assert_same_rows(rows_of(out), want, columns)

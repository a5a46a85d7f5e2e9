"""Java functions on the JVM engine (``laminardb.spark.run(..., java_functions=[...])``).

The functions are the test jar the build compiles per Spark line against its
laminardb-spark.jar (bindings/java/spark/src/test/java/org/laminardb/sparktest:
``Usd`` vectorized, ``SizeLabel`` per row, ``SumSquares`` an aggregate), added to
the suite's session with ``ADD JAR``. Each query's rows equal the same SQL with
the same functions written in Python on the Python engine, in batch and in
Structured Streaming (a stream without windows: the path the JVM engine takes
for a stream whose aggregation calls a function does not split), and the
plan holds no Python stage; the engine choice is checked on the driver. Marked ``spark``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from _oracle_util import assert_same_rows
from test_spark import rows_of, spark_frame, trades
from test_spark_jvm import assert_jvm_plan
from test_spark_jvm_stream import executed_plan
from test_spark_stream import add_files, feed_files, run_to_end, sink_rows

import laminardb
import laminardb.spark as lspark
from laminardb.aggregates import Aggregate
from laminardb.functions import Function
from laminardb.spark.compat import _jar_folder

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]

SOURCE = (
    "CREATE SOURCE trades (symbol VARCHAR NOT NULL, price DOUBLE NOT NULL, "
    "volume BIGINT NOT NULL, ts BIGINT NOT NULL, WATERMARK FOR ts AS ts);"
)
WINDOWS = SOURCE + (
    " CREATE STREAM w AS SELECT window_start, symbol, SUM(usd(price) * volume) AS notional,"
    " sumsq(price) AS sumsq, COUNT(*) AS n FROM trades"
    " GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND) EMIT ON WINDOW CLOSE;"
)
LABELS = SOURCE + (
    " CREATE STREAM labels AS SELECT ts, symbol, usd(price) AS usd,"
    " size_label(volume) AS label FROM trades WHERE usd(price) > 100;"
)

JAVA = [
    lspark.JavaFunction("usd", "org.laminardb.sparktest.Usd", ["DOUBLE"], "DOUBLE"),
    lspark.JavaFunction("size_label", "org.laminardb.sparktest.SizeLabel", ["BIGINT"],
                        "VARCHAR"),
    lspark.JavaFunction("sumsq", "org.laminardb.sparktest.SumSquares", ["DOUBLE"], "DOUBLE",
                        aggregate=True),
]


def python_functions() -> list[Function | Aggregate]:
    """The Python twins of the test jar's functions, defined here so that
    cloudpickle ships them by value (the workers cannot import this module)."""

    class SumSquares:
        """SUM(x * x), as org.laminardb.sparktest.SumSquares."""

        def init(self) -> float:
            return 0.0

        def update(self, state: float, x: pa.Array) -> float:
            return state + float(pc.sum(pc.multiply(x, x)).as_py() or 0.0)

        def merge(self, a: float, b: float) -> float:
            return a + b

        def finalize(self, state: float) -> float:
            return state

    return [
        Function("usd", lambda x: pc.multiply(x, 1.25), ["DOUBLE"], "DOUBLE"),
        Function("size_label", lambda v: "block" if v >= 100 else "odd lot", ["BIGINT"],
                 "VARCHAR", kind="row"),
        Aggregate("sumsq", SumSquares, ["DOUBLE"], "DOUBLE"),
    ]


def functions_jar() -> Path:
    """The test jar of the running PySpark's line (LAMINAR_BUILD_DIR: the build tree)."""
    build = Path(os.environ.get("LAMINAR_BUILD_DIR", ROOT / "build"))
    _, folder = _jar_folder()
    return build / "bindings" / "java" / "spark" / f"test-{folder}" / \
        "laminardb-spark-test-functions.jar"


@pytest.fixture(scope="module")
def java_udfs(spark: Any) -> Any:  # noqa: ANN401
    """The suite's session with the JVM engine and the test jar of Java functions."""
    jar = functions_jar()
    if not lspark.jars() or not jar.exists():
        if shutil.which("javac") and shutil.which("mvn"):
            pytest.fail(f"a JDK and Maven are here, yet there is no JVM engine or no {jar}")
        pytest.skip("no JDK or Maven here: no JVM engine and no test jar")
    spark.sql(f"ADD JAR '{jar}'")
    return spark


@pytest.mark.parametrize("sql", [WINDOWS, LABELS], ids=["windows", "labels"])
def test_java_functions_equal_python_ones(java_udfs: Any, rng: np.random.Generator,  # noqa: ANN401
                                          tmp_path: Path, sql: str) -> None:
    table = trades(rng, 20_000)
    df = spark_frame(java_udfs, table, tmp_path / "in")
    out = lspark.run(df, sql, java_functions=JAVA)  # engine="auto": the JVM's
    assert_jvm_plan(out)
    got = rows_of(out)
    python = lspark.run(df, sql, engine="python", functions=python_functions())
    want = rows_of(python)
    assert len(got) > 0
    assert out.columns == python.columns
    assert_same_rows(got, want, out.columns)


STREAM_SQL = SOURCE.replace("WATERMARK FOR ts AS ts", "WATERMARK FOR ts AS ts - INTERVAL '500' "
                            "MILLISECOND") + (
    " CREATE STREAM labels AS SELECT symbol, ts, usd(price) AS usd,"
    " size_label(volume) AS label FROM trades WHERE usd(price) > 15;"
)


def start_stream(spark: Any, inp: Path, out: Path, ckpt: Path,  # noqa: ANN401
                 **options: Any) -> Any:  # noqa: ANN401
    """STREAM_SQL over test_spark_stream's files into a Parquet sink, started."""
    stream = spark.readStream.schema("symbol string, price double, volume long, ts long") \
        .option("maxFilesPerTrigger", 1).parquet(str(inp))
    result = lspark.run(stream, STREAM_SQL, state_location=str(ckpt / "laminardb"), **options)
    return (result.writeStream.format("parquet").option("path", str(out))
            .option("checkpointLocation", str(ckpt)).outputMode("append").start())


def test_java_functions_in_structured_streaming(java_udfs: Any,  # noqa: ANN401
                                                rng: np.random.Generator,
                                                tmp_path: Path) -> None:
    """A stream without windows: each micro-batch's tasks run the JVM stage."""
    tables = feed_files(rng)
    add_files(tmp_path / "in", tables, 0)
    query = start_stream(java_udfs, tmp_path / "in", tmp_path / "out", tmp_path / "ckpt",
                         java_functions=JAVA)  # engine="auto": the JVM's
    run_to_end(query)
    plan = executed_plan(query)
    assert "LaminarStage" in plan, plan
    assert "MapInArrow" not in plan, plan
    assert "Python" not in plan, plan
    got = sink_rows(java_udfs, tmp_path / "out")
    assert len(got) > 0
    python = start_stream(java_udfs, tmp_path / "in", tmp_path / "out-py", tmp_path / "ckpt-py",
                          engine="python", functions=python_functions())
    run_to_end(python)
    columns = ["symbol", "ts", "usd", "label"]
    assert_same_rows(sink_rows(java_udfs, tmp_path / "out-py"), got, columns)


def test_engine_choice_with_java_functions(java_udfs: Any, tmp_path: Path) -> None:  # noqa: ANN401
    table = trades(np.random.default_rng(7), 100)
    df = spark_frame(java_udfs, table, tmp_path / "in")
    with pytest.raises(laminardb.SQLError) as info:
        lspark.run(df, LABELS, engine="python", java_functions=JAVA)
    assert info.value.code == "LDB-1005"
    assert "java_functions" in str(info.value)
    with pytest.raises(laminardb.SQLError) as info:
        lspark.run(df, LABELS, java_functions=JAVA[:1], functions=python_functions()[1:2])
    assert info.value.code == "LDB-1005"
    with pytest.raises(laminardb.SQLError) as info:  # Python functions stay refused
        lspark.run(df, LABELS, engine="jvm", functions=python_functions())
    assert info.value.code == "LDB-1005"
    with pytest.raises(TypeError):
        lspark.JavaFunction("f", "x.Y", ["NOPE"], "DOUBLE")
    # A class the executors cannot load fails the task, naming function and class.
    missing = lspark.JavaFunction("usd", "org.laminardb.sparktest.Missing", ["DOUBLE"], "DOUBLE")
    with pytest.raises(Exception, match="LDB-6002") as failed:  # noqa: PT011 -- Spark's wrapper
        lspark.run(df, LABELS, java_functions=[missing, *JAVA[1:2]]).collect()
    assert "function 'usd' of class org.laminardb.sparktest.Missing" in str(failed.value)

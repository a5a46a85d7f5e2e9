"""User-defined functions on Spark's executors: ``lspark.run(..., functions=[...])``.

A scalar function, an aggregate and a table function built on the driver
reach every task's engine (pickled by Spark with cloudpickle) and the
stream's output equals DuckDB's over the same rows: the scalar function and
the table function in a plain stream, the aggregate in a windowed GROUP BY
(split in two phases: test_spark_udaf.py covers that path). With the
JVM engine such a run is refused (LDB-1005) when the session has the jar.

Runs in the session's local Spark (conftest ``spark``); marked ``spark``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from _oracle_util import assert_same_rows, duck
from test_spark import rows_of, spark_frame, trades

import laminardb
import laminardb.spark as lspark
from laminardb.aggregates import Aggregate
from laminardb.functions import Function
from laminardb.table_functions import TableFunction

pytestmark = pytest.mark.spark

SOURCE = (
    "CREATE SOURCE trades (symbol VARCHAR NOT NULL, price DOUBLE, volume BIGINT, ts BIGINT, "
    "WATERMARK FOR ts AS ts);"
)


def functions() -> list[Any]:
    """The three functions, defined here so that cloudpickle ships them by
    value (a test module is not importable on the executors)."""
    factor = 1.5  # a closure: travels with the function

    class SumSq:
        """SUM(x * x) over a float state."""

        def init(self) -> float:
            return 0.0

        def update(self, state: float, x: pa.Array) -> float:
            return state + pc.sum(pc.multiply(x, x)).as_py()

        def merge(self, a: float, b: float) -> float:
            return a + b

        def finalize(self, state: float) -> float:
            return state

    def lots(volume: int) -> list[tuple[int]]:
        return [(i,) for i in range(volume % 3)]

    return [
        Function("fx", lambda p: pc.multiply(p, factor), ["DOUBLE"], "DOUBLE"),
        Aggregate("sumsq", SumSq, ["DOUBLE"], "DOUBLE"),
        TableFunction("lots", lots, ["BIGINT"], {"i": "BIGINT"}, kind="row"),
    ]


def test_functions_reach_the_executors(spark: Any, rng: np.random.Generator,  # noqa: ANN401
                                       tmp_path: Path) -> None:
    table = trades(rng, 3_000, symbols=5)
    df = spark_frame(spark, table, tmp_path / "in")
    plain = lspark.run(df, SOURCE + "CREATE STREAM q AS SELECT symbol, ts, fx(price) AS p, "
                       "l.i FROM trades, lots(volume) AS l", functions=functions())
    columns, want = duck("SELECT symbol, ts, price * 1.5 AS p, g.i FROM t, "
                         "generate_series(0, volume % 3 - 1) AS g(i)", t=table)
    assert plain.columns == columns
    assert_same_rows(rows_of(plain), want, columns)

    windows = lspark.run(df, SOURCE + "CREATE STREAM w AS SELECT symbol, window_start, "
                         "sumsq(price) AS sq FROM trades "
                         "GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND)",
                         functions=functions())
    columns, want = duck("SELECT symbol, (ts // 1000) * 1000 AS window_start, "
                         "SUM(price * price) AS sq FROM t GROUP BY ALL", t=table)
    assert_same_rows(rows_of(windows), want, columns)


def test_jvm_engine_refuses_python_functions(spark: Any, tmp_path: Path) -> None:  # noqa: ANN401
    if not lspark.jvm_engine_available(spark):
        pytest.skip("the session has no JVM engine jar")
    df = spark_frame(spark, trades(np.random.default_rng(3), 100), tmp_path / "in", files=1)
    with pytest.raises(laminardb.SQLError) as info:
        lspark.run(df, SOURCE + "CREATE STREAM q AS SELECT fx(price) AS p FROM trades",
                   functions=functions(), engine="jvm")
    assert info.value.code == "LDB-1005"
    assert "engine='jvm' runs no Python functions" in str(info.value)

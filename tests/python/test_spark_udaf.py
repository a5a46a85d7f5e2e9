"""User-defined aggregates in Spark's two phases (``lspark.run(..., functions=[...])``).

A stream whose windowed GROUP BY calls Python aggregates splits like the
built-ins: each input partition's engine emits the aggregates' serialized
states (``__udaf_partial``), only those rows are shuffled, and the final
engines merge them (``__udaf_merge``) and finalize. Checked against DuckDB's
built-in equivalents (``SUM(price * price)``, ``MAX(price) - MIN(price)``) and
the whole-stream path (one engine per key partition), with cores 1 and 2 and
several partitions; in Structured Streaming, across a restart from the
checkpoint (the final engines' states, the aggregates' included, come back
from it).

Runs in the session's local Spark (conftest ``spark``); marked ``spark``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from _oracle_util import assert_same_rows, duck
from test_spark import rows_of, spark_frame, trades
from test_spark_stream import add_files, feed_files, run_to_end, sink_rows

import laminardb
import laminardb.spark as lspark
from laminardb.aggregates import Aggregate

pytestmark = pytest.mark.spark

SOURCE = (
    "CREATE SOURCE trades (symbol VARCHAR NOT NULL, price DOUBLE, volume BIGINT, ts BIGINT, "
    "WATERMARK FOR ts AS ts - INTERVAL '{delay}' MILLISECOND);"
)
STREAM = (
    "CREATE STREAM w AS SELECT symbol, window_start, sumsq(price) AS sq, "
    "spread(price) AS sp, COUNT(*) AS n FROM trades "
    "GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND)"
)
DUCK = (
    "SELECT symbol, (ts // 1000) * 1000 AS window_start, SUM(price * price) AS sq, "
    "MAX(price) - MIN(price) AS sp, COUNT(*) AS n FROM t WHERE symbol <> '~tick' "
    "GROUP BY ALL"
)
COLUMNS = ["symbol", "window_start", "sq", "sp", "n"]


def functions() -> list[Aggregate]:
    """The aggregates, defined here so that cloudpickle ships them by value."""

    class SumSq:
        """SUM(x * x): a float state (pickled by default)."""

        def init(self) -> float:
            return 0.0

        def update(self, state: float, x: pa.Array) -> float:
            return state + pc.sum(pc.multiply(x, x)).as_py()

        def merge(self, a: float, b: float) -> float:
            return a + b

        def finalize(self, state: float) -> float:
            return state

    class Spread:
        """MAX(x) - MIN(x): a (lo, hi) state with its own byte encoding."""

        def init(self) -> tuple[float, float] | None:
            return None

        def update(self, state: tuple[float, float] | None,
                   x: pa.Array) -> tuple[float, float] | None:
            if len(x) == 0:
                return state
            mm = pc.min_max(x)
            lo, hi = mm["min"].as_py(), mm["max"].as_py()
            return (lo, hi) if state is None else (min(state[0], lo), max(state[1], hi))

        def merge(self, a: tuple[float, float] | None,
                  b: tuple[float, float] | None) -> tuple[float, float] | None:
            if a is None or b is None:
                return a if b is None else b
            return (min(a[0], b[0]), max(a[1], b[1]))

        def finalize(self, state: tuple[float, float] | None) -> float | None:
            return None if state is None else state[1] - state[0]

        def serialize(self, state: tuple[float, float] | None) -> bytes:
            import struct
            return b"" if state is None else struct.pack("<dd", *state)

        def deserialize(self, data: bytes) -> tuple[float, float] | None:
            import struct
            return None if not data else struct.unpack("<dd", data)

    return [Aggregate("sumsq", SumSq, ["DOUBLE"], "DOUBLE"),
            Aggregate("spread", Spread, ["DOUBLE"], "DOUBLE")]


def test_two_phase_shows_the_split() -> None:
    with laminardb.open(functions=functions()) as db:
        db.execute(SOURCE.format(delay=0) + STREAM)
        split = {r["role"]: r for r in db.two_phase("w").to_pylist()}
    assert "__udaf_partial('sumsq', \"price\") AS \"__a0\"" in split["partial"]["value"]
    assert "__udaf_merge('spread', \"__a1\")" in split["final"]["value"]


@pytest.mark.parametrize(("cores", "partitions"), [(1, 3), (2, 4), (1, 1)])
def test_batch_two_phase_equals_duckdb_and_one_engine(
        spark: Any, rng: np.random.Generator, tmp_path: Path,  # noqa: ANN401
        cores: int, partitions: int) -> None:
    table = trades(rng, 4_000, symbols=6)
    df = spark_frame(spark, table, tmp_path / "in", files=4)
    sql = SOURCE.format(delay=0) + STREAM
    p = lspark.plan(df, sql, functions=functions())
    assert p.two_phase is not None
    assert "__udaf_partial('spread'" in p.two_phase.partial.sql
    split = lspark.run(df, sql, functions=functions(), partitions=partitions, cores=cores)
    whole = lspark.run(df, sql, functions=functions(), partitions=partitions, cores=cores,
                       two_phase=False)
    columns, want = duck(DUCK, t=table)
    assert split.columns == columns
    got = rows_of(split)
    assert_same_rows(got, want, COLUMNS)
    assert_same_rows(rows_of(whole), got, COLUMNS)


def test_stream_two_phase_restart_equals_duckdb(
        spark: Any, rng: np.random.Generator, tmp_path: Path) -> None:  # noqa: ANN401
    tables = feed_files(rng)
    inp, out, ckpt = tmp_path / "in", tmp_path / "out", tmp_path / "ckpt"
    sql = SOURCE.format(delay=500) + STREAM

    def start() -> Any:  # noqa: ANN401
        stream = spark.readStream.schema("symbol string, price double, volume long, ts long") \
            .option("maxFilesPerTrigger", 1).parquet(str(inp))
        result = lspark.run(stream, sql, state_location=str(ckpt / "laminardb"),
                            functions=functions(), partitions=3)
        return (result.writeStream.format("parquet").option("path", str(out))
                .option("checkpointLocation", str(ckpt)).outputMode("append").start())

    add_files(inp, tables[:2], 0)
    run_to_end(start())
    first = sink_rows(spark, out)
    # Windows still open in the final engines now live in the checkpoint only.
    add_files(inp, tables[2:], 2)
    run_to_end(start())
    got = sink_rows(spark, out)
    assert len(set(got)) == len(got)
    assert set(first) <= set(got)
    _, want = duck(DUCK, t=pa.concat_tables(tables))
    assert_same_rows(got, want, COLUMNS)
    # The state kept was the two-phase path's (partial states merged in the final).
    stored = json.loads((ckpt / "laminardb" / "query.json").read_text(encoding="utf-8"))
    assert stored["two_phase"] is True

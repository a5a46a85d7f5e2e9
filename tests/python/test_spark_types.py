"""laminardb.spark with DATE, SMALLINT, TINYINT, DECIMAL, REAL and BLOB columns (issue 25
item 1): Spark's DateType / ShortType / ByteType / DecimalType pass through the
adapter as Arrow date32 / int16 / int8 / decimal128 (no conversion), a window
keyed by the date or the decimal equals DuckDB's answer, and the output
DataFrame has the same Spark types back (a DECIMAL SUM as decimal(38,s)).

Runs in the session's local Spark (conftest ``spark``); marked ``spark``.
"""

from __future__ import annotations

import decimal
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _oracle_util import assert_same_rows, duck

import laminardb.spark as lspark

pytestmark = pytest.mark.spark

SQL = """
CREATE SOURCE t (d DATE, s SMALLINT, b TINYINT, ts BIGINT, WATERMARK FOR ts AS ts);
CREATE STREAM w AS
  SELECT d, window_start, MIN(s) AS lo, MAX(b) AS hb, COUNT(*) AS n
  FROM t GROUP BY d, tumble(ts, INTERVAL '1' SECOND);
"""
DUCK = (
    "SELECT d, (ts // 1000) * 1000 AS window_start, MIN(s), MAX(b), COUNT(*) "
    "FROM t GROUP BY ALL"
)


def test_date_and_small_int_columns_pass_through(spark: Any, rng: np.random.Generator,  # noqa: ANN401
                                                 tmp_path: Path) -> None:
    n = 3000
    table = pa.table({
        "d": pa.array(rng.integers(-1000, 30000, size=n).astype(np.int32) // 97 * 97,
                      pa.int32(), mask=rng.random(n) < 0.05).cast(pa.date32()),
        "s": pa.array(rng.integers(-(2**15), 2**15, size=n).astype(np.int16), pa.int16(),
                      mask=rng.random(n) < 0.05),
        "b": pa.array(rng.integers(-128, 128, size=n).astype(np.int8), pa.int8()),
        "ts": pa.array(np.sort(rng.integers(0, 20_000, size=n)), pa.int64()),
    })
    (tmp_path / "in").mkdir()
    for i in range(3):
        pq.write_table(table.slice(i * 1000, 1000), tmp_path / "in" / f"part-{i}.parquet")
    df = spark.read.parquet(str(tmp_path / "in"))
    assert [f.dataType.typeName() for f in df.schema.fields] == ["date", "short", "byte", "long"]
    out = lspark.run(df, SQL, source="t", stream="w")
    types = {f.name: f.dataType.typeName() for f in out.schema.fields}
    assert (types["d"], types["lo"], types["hb"]) == ("date", "short", "byte")
    columns, want = duck(DUCK, t=table)
    assert_same_rows([tuple(r) for r in out.collect()], want, columns)


DEC_SQL = """
CREATE SOURCE t (k DECIMAL(10,2), p DECIMAL(18,4), ts BIGINT, WATERMARK FOR ts AS ts);
CREATE STREAM w AS
  SELECT k, window_start, SUM(p) AS total, MIN(p) AS lo, MAX(p) AS hi, AVG(p) AS mean,
         COUNT(*) AS n
  FROM t GROUP BY k, tumble(ts, INTERVAL '1' SECOND);
"""
DEC_DUCK = (
    "SELECT k, (ts // 1000) * 1000 AS window_start, SUM(p), MIN(p), MAX(p), AVG(p), "
    "COUNT(*) FROM t GROUP BY ALL"
)


def test_decimal_columns_pass_through(spark: Any, rng: np.random.Generator,  # noqa: ANN401
                                      tmp_path: Path) -> None:
    """Spark's DecimalType runs through the Python engine as Arrow decimal128."""
    n = 3000
    keys = [decimal.Decimal(int(x)).scaleb(-2) for x in rng.integers(-500, 500, size=n) // 50]
    prices = [decimal.Decimal(int(x)).scaleb(-4)
              for x in rng.integers(-(10**17), 10**17, size=n)]
    table = pa.table({
        "k": pa.array(keys, pa.decimal128(10, 2), mask=rng.random(n) < 0.05),
        "p": pa.array(prices, pa.decimal128(18, 4), mask=rng.random(n) < 0.05),
        "ts": pa.array(np.sort(rng.integers(0, 20_000, size=n)), pa.int64()),
    })
    (tmp_path / "in").mkdir()
    for i in range(3):
        pq.write_table(table.slice(i * 1000, 1000), tmp_path / "in" / f"part-{i}.parquet")
    df = spark.read.parquet(str(tmp_path / "in"))
    assert [f.dataType.simpleString() for f in df.schema.fields] == [
        "decimal(10,2)", "decimal(18,4)", "bigint"]
    out = lspark.run(df, DEC_SQL, source="t", stream="w", engine="python")
    types = {f.name: f.dataType.simpleString() for f in out.schema.fields}
    assert (types["k"], types["total"], types["lo"], types["mean"]) == (
        "decimal(10,2)", "decimal(38,4)", "decimal(18,4)", "double")
    columns, want = duck(DEC_DUCK, t=table)
    assert_same_rows([tuple(r) for r in out.collect()], want, columns)


REAL_SQL = """
CREATE SOURCE t (r REAL, v REAL, ts BIGINT, WATERMARK FOR ts AS ts);
CREATE STREAM w AS
  SELECT r, window_start, MIN(v) AS lo, MAX(v) AS hi, SUM(v) AS total, COUNT(*) AS n
  FROM t GROUP BY r, tumble(ts, INTERVAL '1' SECOND);
"""
REAL_DUCK = (
    "SELECT r, (ts // 1000) * 1000 AS window_start, MIN(v), MAX(v), SUM(v), COUNT(*) "
    "FROM t GROUP BY ALL"
)


def test_float_columns_pass_through(spark: Any, rng: np.random.Generator,  # noqa: ANN401
                                    tmp_path: Path) -> None:
    """Spark's FloatType is Arrow float32, a REAL column: keys and MIN / MAX stay float."""
    n = 3000
    table = pa.table({
        "r": pa.array((rng.integers(-20, 20, size=n) / 4).astype(np.float32), pa.float32(),
                      mask=rng.random(n) < 0.05),
        "v": pa.array((rng.standard_normal(n) * 1e6).astype(np.float32), pa.float32(),
                      mask=rng.random(n) < 0.05),
        "ts": pa.array(np.sort(rng.integers(0, 20_000, size=n)), pa.int64()),
    })
    (tmp_path / "in").mkdir()
    for i in range(3):
        pq.write_table(table.slice(i * 1000, 1000), tmp_path / "in" / f"part-{i}.parquet")
    df = spark.read.parquet(str(tmp_path / "in"))
    assert [f.dataType.typeName() for f in df.schema.fields] == ["float", "float", "long"]
    out = lspark.run(df, REAL_SQL, source="t", stream="w")
    types = {f.name: f.dataType.typeName() for f in out.schema.fields}
    assert (types["r"], types["lo"], types["hi"], types["total"]) == (
        "float", "float", "float", "double")
    columns, want = duck(REAL_DUCK, t=table)
    assert_same_rows([tuple(r) for r in out.collect()], want, columns)


BLOB_SQL = """
CREATE SOURCE t (b BLOB, v BLOB, ts BIGINT, WATERMARK FOR ts AS ts);
CREATE STREAM w AS
  SELECT b, window_start, MIN(v) AS lo, MAX(v) AS hi, COUNT(*) AS n
  FROM t GROUP BY b, tumble(ts, INTERVAL '1' SECOND);
"""
BLOB_DUCK = (
    "SELECT b, (ts // 1000) * 1000 AS window_start, MIN(v), MAX(v), COUNT(*) "
    "FROM t GROUP BY ALL"
)


def test_binary_columns_pass_through(spark: Any, rng: np.random.Generator,  # noqa: ANN401
                                     tmp_path: Path) -> None:
    """Spark's BinaryType is Arrow binary, a VARBINARY column: keys and MIN / MAX stay binary."""
    n = 3000
    keys = [bytes([i, 0, 255 - i]) for i in range(12)] + [b""]
    values = [bytes(rng.integers(0, 256, size=int(rng.integers(0, 5))).tolist())
              for _ in range(n)]
    table = pa.table({
        "b": pa.array([keys[int(i)] for i in rng.integers(0, len(keys), size=n)], pa.binary()),
        "v": pa.array([None if rng.random() < 0.05 else x for x in values], pa.binary()),
        "ts": pa.array(np.sort(rng.integers(0, 20_000, size=n)), pa.int64()),
    })
    (tmp_path / "in").mkdir()
    for i in range(3):
        pq.write_table(table.slice(i * 1000, 1000), tmp_path / "in" / f"part-{i}.parquet")
    df = spark.read.parquet(str(tmp_path / "in"))
    assert [f.dataType.typeName() for f in df.schema.fields] == ["binary", "binary", "long"]
    out = lspark.run(df, BLOB_SQL, source="t", stream="w")
    types = {f.name: f.dataType.typeName() for f in out.schema.fields}
    assert (types["b"], types["lo"], types["hi"]) == ("binary", "binary", "binary")
    columns, want = duck(BLOB_DUCK, t=table)
    got = [tuple(bytes(x) if isinstance(x, (bytearray, memoryview)) else x for x in r)
           for r in out.collect()]
    assert_same_rows(got, want, columns)

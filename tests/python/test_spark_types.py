"""laminardb.spark with DATE, SMALLINT and TINYINT columns (issue 25 item 1):
Spark's DateType / ShortType / ByteType pass through the adapter as Arrow
date32 / int16 / int8 (no conversion), a window keyed by the date equals
DuckDB's answer, and the output DataFrame has the same Spark types back.

Runs in the session's local Spark (conftest ``spark``); marked ``spark``.
"""

from __future__ import annotations

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

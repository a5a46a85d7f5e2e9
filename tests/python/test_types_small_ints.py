"""SMALLINT and TINYINT against DuckDB (issue 25 item 1; docs/SQL.md "Types").

They are storage types: columns, keys and MIN / MAX keep them (int16 / int8
out), arithmetic promotes them to INT as C does (DuckDB keeps SMALLINT, so its
side casts to INT first). Seeded rows hold NULLs and both ends of each range.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from _oracle_util import (
    FINAL_WATERMARK,
    announce_seed,
    assert_same_rows,
    close_as,
    duck,
    examples,
    rows_of,
    run_engine,
    seed_strategy_bounds,
    split_batches,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import laminardb

SEEDS = st.integers(*seed_strategy_bounds())
SOURCE = "CREATE SOURCE t (s SMALLINT, b TINYINT, x INT, ts BIGINT, WATERMARK FOR ts AS ts);"


def small_table(rng: np.random.Generator, n: int) -> pa.Table:
    """Rows ``s`` (int16), ``b`` (int8), ``x`` (int32), ``ts``: extremes, zeros, NULLs."""

    def column(lo: int, hi: int, dtype: type, typ: pa.DataType) -> pa.Array:
        edges = np.array([lo, lo + 1, -1, 0, 1, hi - 1, hi])
        values = np.where(rng.random(n) < 0.3, edges[rng.integers(0, len(edges), size=n)],
                          rng.integers(lo, hi + 1, size=n))
        return pa.array(values.astype(dtype), typ, mask=rng.random(n) < 0.1)

    return pa.table({
        "s": column(-(2**15), 2**15 - 1, np.int16, pa.int16()),
        "b": column(-128, 127, np.int8, pa.int8()),
        "x": column(-70000, 70000, np.int32, pa.int32()),
        "ts": pa.array(np.cumsum(rng.integers(0, 30, size=n)), pa.int64()),
    })


#: (ours, DuckDB's): DuckDB computes SMALLINT / TINYINT in their own width, so
#: its side says INT where ours promotes.
EXPRESSIONS = [
    ("s", None),
    ("b", None),
    ("s + b", "CAST(s AS INT) + b"),
    ("s - b", "CAST(s AS INT) - b"),
    ("s * b", "CAST(s AS INT) * b"),
    ("b * b * b", "CAST(b AS INT) * b * b"),
    ("-s", "-CAST(s AS INT)"),
    ("s % b", "TRY(CAST(s AS INT) % b)"),
    ("s / b", None),
    ("s + x", None),
    ("s * 100000", "TRY(CAST(s AS INT) * 100000)"),  # INT overflow: NULL
    ("abs(b)", "abs(CAST(b AS INT))"),
    ("CAST(x AS SMALLINT)", "TRY_CAST(x AS SMALLINT)"),
    ("CAST(x AS TINYINT)", "TRY_CAST(x AS TINYINT)"),
    ("CAST(s AS TINYINT)", "TRY_CAST(s AS TINYINT)"),
    ("CAST(s AS VARCHAR)", None),
    ("CAST(CAST(b AS VARCHAR) AS TINYINT)", None),
    ("CAST(s AS DOUBLE)", None),
    ("s < b", None),
    ("s = b", None),
    ("b >= -128", None),
    ("s BETWEEN b AND x", None),
    ("coalesce(s, b)", None),
    ("CASE WHEN b > 0 THEN s ELSE b END", None),
]


@settings(max_examples=examples(5), deadline=None)
@given(seed=SEEDS)
def test_small_int_expressions_match_duckdb(seed: int) -> None:
    announce_seed(seed)
    rng = np.random.default_rng(seed)
    table = small_table(rng, int(rng.integers(1, 800)))
    items = ", ".join(f"{ours} AS c{i}" for i, (ours, _) in enumerate(EXPRESSIONS))
    got = run_engine(SOURCE + f"CREATE STREAM w AS SELECT ts, {items} FROM t;",
                     split_batches(rng, table), final_watermark=False).table
    assert got.schema.field("c0").type == pa.int16()
    assert got.schema.field("c1").type == pa.int8()
    theirs = ", ".join(f"{th or ours} AS c{i}" for i, (ours, th) in enumerate(EXPRESSIONS))
    _, want = duck(f"SELECT ts, {theirs} FROM t", t=table)
    columns = ["ts"] + [f"c{i}" for i in range(len(EXPRESSIONS))]
    assert_same_rows(rows_of(got, columns), want, columns, seed=seed)


@pytest.mark.parametrize("cores", [1, 2])
@settings(max_examples=examples(4), deadline=None)
@given(seed=SEEDS)
def test_window_keyed_by_small_ints_matches_duckdb(cores: int, seed: int) -> None:
    announce_seed(seed)
    rng = np.random.default_rng(seed)
    table = small_table(rng, int(rng.integers(0, 1500)))
    size = int(rng.choice([1, 40, 1000]))
    ours = (SOURCE + "CREATE STREAM w AS SELECT b, window_start, MIN(s) AS lo, MAX(s) AS hi, "
            "SUM(s) AS total, COUNT(s) AS n FROM t "
            f"GROUP BY b, tumble(ts, INTERVAL '{size}' MILLISECOND) EMIT ON WINDOW CLOSE;")
    got = run_engine(ours, split_batches(rng, table), cores=cores).table
    assert [got.schema.field(c).type for c in ("b", "lo", "hi")] == [pa.int8(), pa.int16(),
                                                                   pa.int16()]
    start = f"(ts - ((ts % {size}) + {size}) % {size})"
    _, want = duck(f"SELECT b, {start}, MIN(s), MAX(s), SUM(s), COUNT(s) FROM t "
                   f"GROUP BY b, {start}", t=table)
    columns = ["b", "window_start", "lo", "hi", "total", "n"]
    assert_same_rows(rows_of(got, columns), want, columns, seed=seed)


RUNNING = (SOURCE + "CREATE MATERIALIZED VIEW r AS SELECT s, b, MIN(x) AS lo, MAX(b) AS hb, "
           "COUNT(*) AS n FROM t GROUP BY s, b;")
RUNNING_DUCK = "SELECT s, b, MIN(x), MAX(b), COUNT(*) FROM t GROUP BY s, b"
RUNNING_COLUMNS = ["s", "b", "lo", "hb", "n"]


@pytest.mark.parametrize("close", ["clean", "kill -9"])
@settings(max_examples=examples(3), deadline=None)
@given(seed=SEEDS)
def test_small_int_keys_survive_checkpoint_and_restart(
    tmp_path_factory: pytest.TempPathFactory, close: str, seed: int
) -> None:
    announce_seed(seed)
    rng = np.random.default_rng(seed)
    table = small_table(rng, int(rng.integers(1, 1500)))
    batches = split_batches(rng, table)
    cut = int(rng.integers(0, len(batches) + 1))
    data = tmp_path_factory.mktemp("small_ckpt") / "db"
    options = {"wal_mode": "sync", "checkpoint_interval": "1 hour"}
    db = laminardb.open(data, **options)
    db.execute(RUNNING)
    for i, batch in enumerate(batches[:cut]):
        db.insert("t", batch)
        db.run_until_idle()
        if i == cut // 2:
            db.checkpoint()
    close_as(db, data, crash=close == "kill -9")
    with laminardb.open(data, **options) as db:
        for batch in batches[cut:]:
            db.insert("t", batch)
        db.source("t").watermark(FINAL_WATERMARK)
        db.run_until_idle()
        got = db.query("SELECT * FROM r")
    _, want = duck(RUNNING_DUCK, t=table)
    assert_same_rows(rows_of(got, RUNNING_COLUMNS), want, RUNNING_COLUMNS, seed=seed)


def test_python_refuses_values_outside_the_column() -> None:
    with laminardb.open() as db:
        db.execute("CREATE SOURCE t (s SMALLINT, b TINYINT); CREATE STREAM w AS SELECT * FROM t;")
        sub = db.subscribe("w")
        for row in ({"s": 40000, "b": 1}, {"s": 1, "b": 200}, {"s": 1.5, "b": 1}):
            with pytest.raises(laminardb.IngestError) as info:
                db.insert("t", [row])
            assert info.value.code == "LDB-3004"
        db.insert("t", [{"s": -32768, "b": -128}, {"s": 2.0, "b": None}])
        db.run_until_idle()
        batch = sub.poll(0)
        assert batch.to_pylist() == [{"s": -32768, "b": -128}, {"s": 2, "b": None}]
        assert batch.schema.types == [pa.int16(), pa.int8()]
        assert sub.poll(0) is None

"""REAL / FLOAT4 against DuckDB (issue 25 item 1; docs/SQL.md "Types").

A storage type (Arrow float32) computed as DuckDB computes FLOAT: REAL op REAL
(or an integer) is REAL, with a DOUBLE it is DOUBLE, SUM / AVG are DOUBLE and
MIN / MAX keep REAL. Seeded rows hold NULLs, -0.0, both ends of the float
range, subnormals and infinities; keys go through windows (cores 1 and 2) and a
running aggregate through a checkpoint and a restart.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from _oracle_util import (
    announce_seed,
    assert_same_rows,
    duck,
    examples,
    rows_of,
    run_engine,
    run_with_restart,
    seed_strategy_bounds,
    split_batches,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import laminardb

SEEDS = st.integers(*seed_strategy_bounds())
SOURCE = "CREATE SOURCE t (r REAL, q FLOAT4, x INT, d DOUBLE, ts BIGINT, WATERMARK FOR ts AS ts);"
EDGES = np.array(
    [
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.1,
        3.4028235e38,
        -3.4028235e38,
        1.4e-45,
        -1e-40,
        1.17549435e-38,
        np.inf,
        -np.inf,
    ],
    np.float32,
)


def real_table(rng: np.random.Generator, n: int, keys: int = 0) -> pa.Table:
    """Rows ``r``, ``q`` (float32), ``x`` (int32), ``d`` (double), ``ts``.

    With ``keys`` > 0, ``r`` takes that many distinct values (group keys).
    """

    def floats(edge_share: float) -> np.ndarray:
        wide = (rng.standard_normal(n) * 10.0 ** rng.integers(-6, 30, size=n)).astype(np.float32)
        return np.where(
            rng.random(n) < edge_share, EDGES[rng.integers(0, len(EDGES), size=n)], wide
        )

    r = floats(0.3)
    if keys > 0:
        r = np.concatenate([EDGES[:4], (rng.standard_normal(keys) * 100).astype(np.float32)])
        r = r[rng.integers(0, len(r), size=n)]
    return pa.table(
        {
            "r": pa.array(r, pa.float32(), mask=rng.random(n) < 0.1),
            "q": pa.array(floats(0.2), pa.float32(), mask=rng.random(n) < 0.1),
            "x": pa.array(
                rng.integers(-(2**31), 2**31, size=n).astype(np.int32),
                pa.int32(),
                mask=rng.random(n) < 0.1,
            ),
            "d": pa.array(rng.standard_normal(n) * 1e5, pa.float64(), mask=rng.random(n) < 0.1),
            "ts": pa.array(np.cumsum(rng.integers(0, 30, size=n)), pa.int64()),
        }
    )


#: (expression, its Arrow type here and DuckDB's result type)
EXPRESSIONS = [
    ("r", pa.float32()),
    ("r + q", pa.float32()),
    ("r - q", pa.float32()),
    ("r * q", pa.float32()),
    ("r / q", pa.float32()),
    ("r % q", pa.float32()),
    ("-r", pa.float32()),
    ("r + x", pa.float32()),
    ("x * q", pa.float32()),
    ("r + d", pa.float64()),
    ("r * 2", pa.float32()),
    ("r < q", pa.bool_()),
    ("r = q", pa.bool_()),
    ("r >= x", pa.bool_()),
    ("r BETWEEN q AND d", pa.bool_()),
    ("coalesce(r, q)", pa.float32()),
    ("CASE WHEN r > 0 THEN r ELSE x END", pa.float32()),
    ("CAST(r AS DOUBLE)", pa.float64()),
    ("CAST(d AS REAL)", pa.float32()),
    ("CAST(x AS REAL)", pa.float32()),
    ("CAST(CAST(r AS VARCHAR) AS REAL)", pa.float32()),
    ("CAST(r AS VARCHAR)", pa.string()),
]


@settings(max_examples=examples(6), deadline=None)
@given(seed=SEEDS)
def test_real_expressions_match_duckdb(seed: int) -> None:
    announce_seed(seed)
    rng = np.random.default_rng(seed)
    table = real_table(rng, int(rng.integers(1, 800)))
    items = ", ".join(f"{e} AS c{i}" for i, (e, _) in enumerate(EXPRESSIONS))
    got = run_engine(
        SOURCE + f"CREATE STREAM w AS SELECT ts, {items} FROM t;",
        split_batches(rng, table),
        final_watermark=False,
    ).table
    assert [got.schema.field(f"c{i}").type for i in range(len(EXPRESSIONS))] == [
        t for _, t in EXPRESSIONS
    ]
    _, want = duck(f"SELECT ts, {items} FROM t", t=table)
    columns = ["ts"] + [f"c{i}" for i in range(len(EXPRESSIONS))]

    # exactly: float results are compared bit for bit (as Python floats); the
    # text of a REAL is the shortest that reads back, which DuckDB's sometimes
    # is not (docs/SQL.md "Types"): both must read back as the same float
    def exact(rows: list[tuple]) -> list[str]:
        return sorted(
            repr((*r[:-1], r[-1] if r[-1] is None else float(np.float32(r[-1])))) for r in rows
        )

    ours = rows_of(got, columns)
    assert exact(ours) == exact(want), f"seed {seed}"


def test_real_result_types_are_duckdbs() -> None:
    table = pa.table(
        {"r": pa.array([1.5], pa.float32()), "d": pa.array([1.0]), "x": pa.array([1], pa.int32())}
    )
    row = ["r + r", "r + d", "r / r", "x / r", "-r"]
    agg = ["sum(r)", "avg(r)", "min(r)", "max(r)"]
    _, want_row = duck("SELECT " + ", ".join(f"typeof({e})" for e in row) + " FROM t", t=table)
    _, want_agg = duck("SELECT " + ", ".join(f"typeof({e})" for e in agg) + " FROM t", t=table)
    want = [(*want_row[0], *want_agg[0])]
    arrow_of = {"FLOAT": pa.float32(), "DOUBLE": pa.float64()}
    with laminardb.open() as db:
        db.execute(
            "CREATE SOURCE t (r REAL, d DOUBLE, x INT, ts BIGINT, WATERMARK FOR ts AS ts);"
            "CREATE MATERIALIZED VIEW v AS SELECT r + r AS c0, r + d AS c1, r / r AS c2, "
            "x / r AS c3, -r AS c4 FROM t;"
            "CREATE MATERIALIZED VIEW a AS SELECT sum(r) AS c5, avg(r) AS c6, "
            "min(r) AS c7, max(r) AS c8 FROM t GROUP BY x;"
        )
        db.insert("t", [{"r": 1.5, "d": 1.0, "x": 1, "ts": 1}])
        db.run_until_idle()
        types = list(db.query("SELECT * FROM v").schema.types)
        types += list(db.query("SELECT * FROM a").schema.types)
    assert types == [arrow_of[t] for t in want[0]]


@pytest.mark.parametrize("cores", [1, 2])
@settings(max_examples=examples(4), deadline=None)
@given(seed=SEEDS)
def test_window_keyed_by_real_matches_duckdb(cores: int, seed: int) -> None:
    announce_seed(seed)
    rng = np.random.default_rng(seed)
    table = real_table(rng, int(rng.integers(0, 1500)), keys=int(rng.integers(1, 20)))
    size = int(rng.choice([1, 40, 1000]))
    ours = (
        SOURCE + "CREATE STREAM w AS SELECT r, window_start, MIN(q) AS lo, MAX(q) AS hi, "
        "SUM(x) AS total, AVG(q) AS mean, COUNT(q) AS n FROM t "
        f"GROUP BY r, tumble(ts, INTERVAL '{size}' MILLISECOND) EMIT ON WINDOW CLOSE;"
    )
    got = run_engine(ours, split_batches(rng, table), cores=cores).table
    assert [got.schema.field(c).type for c in ("r", "lo", "hi", "mean")] == [
        pa.float32(),
        pa.float32(),
        pa.float32(),
        pa.float64(),
    ]
    start = f"(ts - ((ts % {size}) + {size}) % {size})"
    _, want = duck(
        f"SELECT r, {start}, MIN(q), MAX(q), SUM(x), AVG(q), COUNT(q) FROM t GROUP BY r, {start}",
        t=table,
    )
    columns = ["r", "window_start", "lo", "hi", "total", "mean", "n"]
    assert_same_rows(rows_of(got, columns), want, columns, seed=seed)


RUNNING = (
    SOURCE + "CREATE MATERIALIZED VIEW v AS SELECT r, MIN(q) AS lo, MAX(q) AS hi, "
    "SUM(q) AS total, COUNT(*) AS n FROM t GROUP BY r;"
)
RUNNING_DUCK = "SELECT r, MIN(q), MAX(q), SUM(q), COUNT(*) FROM t GROUP BY r"
RUNNING_COLUMNS = ["r", "lo", "hi", "total", "n"]


@pytest.mark.parametrize("close", ["clean", "kill -9"])
@settings(max_examples=examples(3), deadline=None)
@given(seed=SEEDS)
def test_real_keys_survive_checkpoint_and_restart(
    tmp_path_factory: pytest.TempPathFactory, close: str, seed: int
) -> None:
    announce_seed(seed)
    rng = np.random.default_rng(seed)
    table = real_table(rng, int(rng.integers(1, 1500)), keys=int(rng.integers(1, 30)))
    batches = split_batches(rng, table)
    cut = int(rng.integers(0, len(batches) + 1))
    data = tmp_path_factory.mktemp("real_ckpt") / "db"
    got = run_with_restart(data, RUNNING, batches, cut, crash=close == "kill -9")
    assert got.schema.field("lo").type == pa.float32()
    _, want = duck(RUNNING_DUCK, t=table)
    assert_same_rows(rows_of(got, RUNNING_COLUMNS), want, RUNNING_COLUMNS, seed=seed)


def test_real_order_by_and_nan_keys() -> None:
    """NaN is one group and sorts last, -0.0 and 0.0 are one group (DuckDB's rules)."""
    values = [float("nan"), -0.0, 0.0, -1.5, float("nan"), float("inf"), None, 2.5]
    table = pa.table({"r": pa.array(values, pa.float32()), "ts": pa.array(range(8), pa.int64())})
    with laminardb.open() as db:
        db.execute(
            "CREATE SOURCE t (r REAL, ts BIGINT);"
            "CREATE MATERIALIZED VIEW v AS SELECT r, COUNT(*) AS n FROM t GROUP BY r;"
        )
        db.insert("t", table)
        db.run_until_idle()
        got = db.query("SELECT r, n FROM v ORDER BY r").to_pylist()
    _, want = duck("SELECT r, COUNT(*) FROM t GROUP BY r ORDER BY r", t=table)
    assert [repr((g["r"] if g["r"] != 0 else 0.0, g["n"])) for g in got] == [
        repr((w[0] if w[0] != 0 else 0.0, w[1])) for w in want
    ]

"""TIME against DuckDB (issue 25 item 1; docs/SQL.md "Types").

Arrow time64[us] in and out, compared, cast to and from text and from a
TIMESTAMP; TIME keys through windows (cores 1 and 2) and a running MIN / MAX
through a checkpoint and a restart. Seeded rows hold NULLs, midnight, the last
microsecond of the day and whole seconds.
"""

from __future__ import annotations

import datetime

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
SOURCE = (
    "CREATE SOURCE t (a TIME, b TIME, s VARCHAR, x TIMESTAMP, ts BIGINT, WATERMARK FOR ts AS ts);"
)
DAY = 86_400_000_000


def time_table(rng: np.random.Generator, n: int, keys: int = 0) -> pa.Table:
    """Rows ``a``, ``b`` (time64[us]), ``s`` (time text), ``x`` (timestamp), ``ts``."""

    def times(m: int) -> np.ndarray:
        edges = np.array([0, 1, DAY - 1, 12 * 3_600_000_000, 1_000_000, 999_999])
        whole = rng.integers(0, 86_400, size=m) * 1_000_000
        return np.where(
            rng.random(m) < 0.3,
            edges[rng.integers(0, len(edges), size=m)],
            np.where(rng.random(m) < 0.5, whole, rng.integers(0, DAY, size=m)),
        )

    a = times(n)
    if keys > 0:
        a = times(keys)[rng.integers(0, keys, size=n)]
    texts = [
        f"{int(h)}:{int(m):02d}" + (f":{int(s):02d}.{int(f)}" if f % 2 else "")
        for h, m, s, f in zip(
            rng.integers(0, 24, size=n),
            rng.integers(0, 60, size=n),
            rng.integers(0, 60, size=n),
            rng.integers(0, 10**6, size=n),
        )
    ]
    texts = [t if rng.random() > 0.05 else "25:00" for t in texts]
    return pa.table(
        {
            "a": pa.array(a, pa.int64(), mask=rng.random(n) < 0.1).cast(pa.time64("us")),
            "b": pa.array(times(n), pa.int64(), mask=rng.random(n) < 0.1).cast(pa.time64("us")),
            "s": pa.array(texts),
            "x": pa.array(rng.integers(-(10**15), 10**15, size=n), pa.int64()).cast(
                pa.timestamp("us")
            ),
            "ts": pa.array(np.cumsum(rng.integers(0, 30, size=n)), pa.int64()),
        }
    )


#: (ours, DuckDB's)
EXPRESSIONS = [
    ("a", None),
    ("a < b", None),
    ("a = b", None),
    ("a >= '12:00:00'", None),
    ("CAST(a AS VARCHAR)", None),
    ("CAST(s AS TIME)", "TRY_CAST(s AS TIME)"),
    ("CAST(x AS TIME)", None),
    ("coalesce(a, b)", None),
    ("CASE WHEN a < b THEN a ELSE b END", None),
]


@settings(max_examples=examples(6), deadline=None)
@given(seed=SEEDS)
def test_time_expressions_match_duckdb(seed: int) -> None:
    announce_seed(seed)
    rng = np.random.default_rng(seed)
    table = time_table(rng, int(rng.integers(1, 600)))
    items = ", ".join(f"{ours} AS c{i}" for i, (ours, _) in enumerate(EXPRESSIONS))
    got = run_engine(
        SOURCE + f"CREATE STREAM w AS SELECT ts, {items} FROM t;",
        split_batches(rng, table),
        final_watermark=False,
    ).table
    assert got.schema.field("c0").type == pa.time64("us")
    theirs = ", ".join(f"{th or ours} AS c{i}" for i, (ours, th) in enumerate(EXPRESSIONS))
    _, want = duck(f"SELECT ts, {theirs} FROM t", t=table)
    columns = ["ts"] + [f"c{i}" for i in range(len(EXPRESSIONS))]
    assert sorted(map(repr, rows_of(got, columns))) == sorted(map(repr, want)), f"seed {seed}"


@pytest.mark.parametrize("cores", [1, 2])
@settings(max_examples=examples(4), deadline=None)
@given(seed=SEEDS)
def test_window_keyed_by_time_matches_duckdb(cores: int, seed: int) -> None:
    announce_seed(seed)
    rng = np.random.default_rng(seed)
    table = time_table(rng, int(rng.integers(0, 1500)), keys=int(rng.integers(1, 20)))
    size = int(rng.choice([1, 40, 1000]))
    ours = (
        SOURCE + "CREATE STREAM w AS SELECT a, window_start, MIN(b) AS lo, MAX(b) AS hi, "
        "COUNT(b) AS n FROM t "
        f"GROUP BY a, tumble(ts, INTERVAL '{size}' MILLISECOND) EMIT ON WINDOW CLOSE;"
    )
    got = run_engine(ours, split_batches(rng, table), cores=cores).table
    assert [got.schema.field(c).type for c in ("a", "lo", "hi")] == [pa.time64("us")] * 3
    start = f"(ts - ((ts % {size}) + {size}) % {size})"
    _, want = duck(
        f"SELECT a, {start}, MIN(b), MAX(b), COUNT(b) FROM t GROUP BY a, {start}", t=table
    )
    columns = ["a", "window_start", "lo", "hi", "n"]
    assert_same_rows(rows_of(got, columns), want, columns, seed=seed)


RUNNING = (
    SOURCE + "CREATE MATERIALIZED VIEW v AS SELECT a, MIN(b) AS lo, MAX(b) AS hi, "
    "COUNT(*) AS n FROM t GROUP BY a;"
)
RUNNING_DUCK = "SELECT a, MIN(b), MAX(b), COUNT(*) FROM t GROUP BY a"
RUNNING_COLUMNS = ["a", "lo", "hi", "n"]


@pytest.mark.parametrize("close", ["clean", "kill -9"])
@settings(max_examples=examples(3), deadline=None)
@given(seed=SEEDS)
def test_time_keys_survive_checkpoint_and_restart(
    tmp_path_factory: pytest.TempPathFactory, close: str, seed: int
) -> None:
    announce_seed(seed)
    rng = np.random.default_rng(seed)
    table = time_table(rng, int(rng.integers(1, 1500)), keys=int(rng.integers(1, 30)))
    batches = split_batches(rng, table)
    cut = int(rng.integers(0, len(batches) + 1))
    data = tmp_path_factory.mktemp("time_ckpt") / "db"
    got = run_with_restart(data, RUNNING, batches, cut, crash=close == "kill -9")
    _, want = duck(RUNNING_DUCK, t=table)
    assert_same_rows(rows_of(got, RUNNING_COLUMNS), want, RUNNING_COLUMNS, seed=seed)


def test_python_time_in_and_out() -> None:
    with laminardb.open() as db:
        db.execute("CREATE SOURCE t (a TIME); CREATE STREAM w AS SELECT a FROM t;")
        sub = db.subscribe("w")
        db.insert("t", [{"a": datetime.time(23, 59, 59, 999999)}, {"a": None}])
        db.run_until_idle()
        batch = sub.poll(0)
        assert batch.to_pylist() == [{"a": datetime.time(23, 59, 59, 999999)}, {"a": None}]
        assert batch.schema.types == [pa.time64("us")]

"""Temporal filters: ``WHERE ts > WATERMARK() - INTERVAL ...`` (issue 25, item 3).

A stream or view whose WHERE holds a temporal filter keeps to a sliding horizon
of event time: a row is in while the watermark W is below its time plus the
interval, and is retracted when the watermark gets there. The model is the batch
query with W in place of WATERMARK(): after every batch (followed by the
source's watermark, the largest ``ts`` so far less the delay), a view over the
filter -- its rows, and a GROUP BY over them -- equals DuckDB's answer over
every row pushed so far, and the stream's changelog, added up by weight, equals
it too. Cores 1 and 2, ``>`` and ``>=``, BIGINT and TIMESTAMP time, a restart in
the middle; state stays bounded under an endless stream of new keys; the
refusals name their place.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from _oracle_util import (
    announce_seed,
    assert_same_rows,
    close_as,
    duck,
    examples,
    rows_of,
    seed_strategy_bounds,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import laminardb

SEEDS = st.integers(*seed_strategy_bounds())
SCHEMA = pa.schema([("k", pa.string()), ("x", pa.int64()), ("ts", pa.int64())])
AGG_COLS = ["k", "n", "s", "lo", "hi", "d"]
ROW_COLS = ["k", "x", "ts"]


def ddl(delay: int, horizon: int, op: str) -> str:
    cond = f"ts {op} WATERMARK() - INTERVAL '{horizon}' MILLISECOND"
    return (
        "CREATE SOURCE t (k VARCHAR, x BIGINT, ts BIGINT,"
        f" WATERMARK FOR ts AS ts - INTERVAL '{delay}' MILLISECOND);"
        f"CREATE MATERIALIZED VIEW rows_v AS SELECT k, x, ts FROM t WHERE {cond};"
        "CREATE MATERIALIZED VIEW agg_v AS SELECT k, COUNT(*) AS n, SUM(x) AS s,"
        " MIN(x) AS lo, MAX(x) AS hi, COUNT(DISTINCT x) AS d"
        f" FROM t WHERE x IS NOT NULL AND {cond} GROUP BY k;"
        f"CREATE STREAM rows_s AS SELECT k, x, ts FROM t WHERE {cond};"
    )


def random_batches(rng: np.random.Generator, nbatches: int) -> list[pa.RecordBatch]:
    """Rows over a few keys (NULL among them), times moving forward with jitter
    (some rows behind the watermark, some NULL) and pauses."""
    keys = ["a", "b", "c", None]
    now = 0
    out = []
    for _ in range(nbatches):
        now += int(rng.choice([0, 1, 5, 20, 60]))
        n = int(rng.integers(1, 6))
        ks = [keys[int(rng.integers(len(keys)))] for _ in range(n)]
        xs = [None if rng.random() < 0.1 else int(rng.integers(-5, 6)) for _ in range(n)]
        ts = [
            None if rng.random() < 0.05 else max(0, now - int(rng.integers(0, 40)))
            for _ in range(n)
        ]
        out.append(pa.record_batch([ks, xs, ts], schema=SCHEMA))
    return out


def expected(rows: pa.Table, wm: int | None, horizon: int, op: str) -> tuple[list, list]:
    """DuckDB's answer with the watermark ``wm`` (None: none yet) for WATERMARK()."""
    cond = f"ts {op} {wm} - {horizon}" if wm is not None else "ts IS NOT NULL"
    _, agg = duck(
        "SELECT k, COUNT(*), SUM(x), MIN(x), MAX(x), COUNT(DISTINCT x) FROM rows"
        f" WHERE x IS NOT NULL AND {cond} GROUP BY k",
        rows=rows,
    )
    _, plain = duck(f"SELECT k, x, ts FROM rows WHERE {cond}", rows=rows)
    return agg, plain


def fold(changes: list[pa.RecordBatch]) -> list[tuple]:
    """A changelog added up by weight: the rows it holds."""
    held: Counter = Counter()
    for b in changes:
        for r in b.to_pylist():
            held[(r["k"], r["x"], r["ts"])] += r["_weight"]
    assert all(v >= 0 for v in held.values()), held
    return [row for row, n in held.items() for _ in range(n)]


def drain(sub: laminardb.Subscription, into: list[pa.RecordBatch]) -> None:
    while (b := sub.poll(0)) is not None:
        into.append(b)


def check(
    db: laminardb.Connection,
    seen: pa.Table,
    wm: int | None,
    horizon: int,
    op: str,
    changes: list[pa.RecordBatch],
    seed: int,
) -> None:
    agg, plain = expected(seen, wm, horizon, op)
    assert_same_rows(rows_of(db.query("SELECT * FROM agg_v"), AGG_COLS), agg, AGG_COLS, seed=seed)
    assert_same_rows(
        rows_of(db.query("SELECT * FROM rows_v"), ROW_COLS), plain, ROW_COLS, seed=seed
    )
    assert_same_rows(fold(changes), plain, ROW_COLS, seed=seed)


@settings(max_examples=examples(15), deadline=None)
@given(seed=SEEDS, cores=st.sampled_from([1, 2]), op=st.sampled_from([">", ">="]))
def test_views_and_changelog_match_duckdb(seed: int, cores: int, op: str) -> None:
    announce_seed(seed)
    rng = np.random.default_rng(seed)
    delay, horizon = int(rng.integers(0, 30)), int(rng.integers(1, 120))
    db = laminardb.open(cores=cores)
    db.execute(ddl(delay, horizon, op))
    sub = db.subscribe("rows_s")
    src = db.source("t")
    changes: list[pa.RecordBatch] = []
    seen: list[pa.RecordBatch] = []
    top: int | None = None
    late = 0
    for b in random_batches(rng, int(rng.integers(5, 30))):
        wm = None if top is None else top - delay
        for t in b.column("ts").to_pylist():  # behind the horizon at arrival
            if t is not None and wm is not None and (wm >= t + horizon + (op == ">=")):
                late += 1
        src.push(b)
        seen.append(b)
        ts = [t for t in b.column("ts").to_pylist() if t is not None]
        if ts:
            top = max(ts) if top is None else max(top, max(ts))
        db.run_until_idle()
        drain(sub, changes)
        check(
            db,
            pa.Table.from_batches(seen, SCHEMA),
            None if top is None else top - delay,
            horizon,
            op,
            changes,
            seed,
        )
    late_metric = {
        m["metric"]: m["value"] for m in db.metrics().to_pylist() if m["name"] == "rows_s"
    }["late_rows"]
    assert late_metric == late
    db.close()


def test_timestamp_column_and_interval_forms() -> None:
    """A TIMESTAMP time column, and the condition written the other way round."""
    db = laminardb.open()
    db.execute(
        "CREATE SOURCE t (k VARCHAR, ts TIMESTAMP, WATERMARK FOR ts AS ts);"
        "CREATE MATERIALIZED VIEW v AS SELECT k FROM t"
        " WHERE WATERMARK() - INTERVAL '1' MINUTE < ts + INTERVAL '30' SECOND"
    )
    src = db.source("t")
    base = 1_700_000_000_000_000  # µs
    src.push(
        pa.record_batch(
            [
                ["a", "b", "c"],
                pa.array([base, base + 60_000_000, base + 89_000_000], pa.timestamp("us")),
            ],
            names=["k", "ts"],
        )
    )
    db.run_until_idle()
    # W = base + 89 s: kept while W < ts + 90 s, so all three stay.
    assert sorted(r["k"] for r in db.query("SELECT * FROM v").to_pylist()) == ["a", "b", "c"]
    src.push(
        pa.record_batch(
            [["d"], pa.array([base + 90_000_000], pa.timestamp("us"))], names=["k", "ts"]
        )
    )
    db.run_until_idle()  # W = base + 90 s: 'a' (ts + 90 s == W) leaves
    assert sorted(r["k"] for r in db.query("SELECT * FROM v").to_pylist()) == ["b", "c", "d"]
    plan = db.query("SHOW VIEWS").to_pylist()[0]["plan"]
    assert plan.startswith("temporal_filter(t.ts > watermark - 90000000 us)"), plan
    db.close()


@pytest.mark.parametrize("crash", [False, True])
def test_restart_keeps_the_horizon(tmp_path: Path, *, crash: bool) -> None:
    """Held rows go through a checkpoint and the WAL: after a restart the rows
    are retracted when the watermark passes them, as without it."""
    rng = np.random.default_rng(7 + crash)
    batches = random_batches(rng, 40)
    horizon, delay = 50, 5
    opts = {"checkpoint_interval": "1 hour", "wal_mode": "sync"}
    db = laminardb.open(tmp_path / "d", **opts)
    db.execute(ddl(delay, horizon, ">"))
    top = None
    for i, b in enumerate(batches):
        if i == 20:
            db.run_until_idle()
            db.checkpoint()
        if i == 30:
            db.run_until_idle()
            close_as(db, tmp_path / "d", crash=crash)
            db = laminardb.open(tmp_path / "d", **opts)
        db.source("t").push(b)
        ts = [t for t in b.column("ts").to_pylist() if t is not None]
        if ts:
            top = max(ts) if top is None else max(top, max(ts))
    db.run_until_idle()
    seen = pa.Table.from_batches(batches, SCHEMA)
    agg, plain = expected(seen, top - delay, horizon, ">")
    assert_same_rows(rows_of(db.query("SELECT * FROM agg_v"), AGG_COLS), agg, AGG_COLS)
    assert_same_rows(rows_of(db.query("SELECT * FROM rows_v"), ROW_COLS), plain, ROW_COLS)
    db.close()


def test_state_stays_bounded() -> None:
    """An endless stream of new keys: the rows held (state_groups of the view's
    stream counts the temporal filter's) stay within the horizon's rows."""
    db = laminardb.open()
    db.execute(
        "CREATE SOURCE t (k VARCHAR, x BIGINT, ts BIGINT, WATERMARK FOR ts AS ts);"
        "CREATE MATERIALIZED VIEW v AS SELECT k, COUNT(*) AS n FROM t"
        " WHERE ts > WATERMARK() - INTERVAL '1' SECOND GROUP BY k"
    )
    src = db.source("t")
    peak = {"state_groups": 0, "state_bytes": 0}
    for i in range(200):
        ts = list(range(i * 1000, (i + 1) * 1000))  # 1,000 rows a second, new keys
        src.push(pa.record_batch([[f"k{t}" for t in ts], ts, ts], schema=SCHEMA))
        db.run_until_idle()
        m = {r["metric"]: r["value"] for r in db.metrics().to_pylist() if r["name"] == "v"}
        for key in peak:
            peak[key] = max(peak[key], m[key])
    # W = 199,999: the rows of ts > 198,999 (the last 1,000) and their groups
    assert db.query("SELECT * FROM v").num_rows == 1000
    assert peak["state_groups"] <= 2 * 2000, peak
    assert peak["state_bytes"] < 2_000_000, peak
    db.close()


REFUSALS = [
    ("CREATE STREAM s AS SELECT * FROM t WHERE ts < WATERMARK()", 1005, 42, "lets rows in later"),
    ("CREATE STREAM s AS SELECT WATERMARK() AS w FROM t", 1005, 27, "only in a temporal filter"),
    ("CREATE STREAM s AS SELECT * FROM t WHERE k > WATERMARK()", 2001, 42, "'k' is VARCHAR"),
    (
        "CREATE STREAM s AS SELECT * FROM t WHERE ts > WATERMARK() AND ts >= WATERMARK() - 5",
        1005,
        63,
        "one temporal filter",
    ),
    (
        "CREATE STREAM s AS SELECT * FROM t WHERE ts > WATERMARK() OR k = 'a'",
        1005,
        42,
        "temporal filter is a WHERE condition",
    ),
    (
        "CREATE STREAM s AS SELECT k FROM t WHERE ts > WATERMARK() UNION ALL SELECT k FROM t",
        1005,
        47,
        "only in a temporal filter",
    ),
    (
        "CREATE STREAM s AS SELECT k FROM (SELECT k, ts FROM t) d WHERE ts > WATERMARK()",
        1005,
        64,
        "one source, stream or view by name",
    ),
    (
        "CREATE STREAM s AS SELECT k, ROW_NUMBER() OVER (PARTITION BY k ORDER BY ts) AS r"
        " FROM t WHERE ts > WATERMARK()",
        1005,
        95,
        "window functions",
    ),
]


@pytest.mark.parametrize(("sql", "code", "column", "text"), REFUSALS)
def test_refusals(sql: str, code: int, column: int, text: str) -> None:
    db = laminardb.open()
    db.execute(
        "CREATE SOURCE t (k VARCHAR, ts BIGINT, WATERMARK FOR ts AS ts);"
        "CREATE MATERIALIZED VIEW v AS SELECT k, ts FROM t"
    )
    with pytest.raises(laminardb.LaminarError) as e:
        db.execute(sql)
    assert e.value.code == f"LDB-{code}", e.value
    assert f"column {column}" in str(e.value), e.value
    assert text in str(e.value), e.value
    with pytest.raises(laminardb.LaminarError) as e:  # a one-off SELECT has no watermark
        db.query("SELECT * FROM v WHERE ts > WATERMARK() - 5")
    assert e.value.code == "LDB-1005", e.value
    assert "one-off SELECT" in str(e.value), e.value
    db.close()

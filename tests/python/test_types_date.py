"""DATE end to end against DuckDB (issue 25 item 1; docs/SQL.md "Dates").

Seeded random rows (NULLs, dates from 0001-01-01 to 9999-12-31 and around
the epoch, repeated keys) go through:

* a projection of DATE arithmetic, casts, comparisons and EXTRACT /
  date_trunc, compared row by row with DuckDB;
* a tumbling window keyed by a DATE with MIN / MAX / COUNT of another DATE,
  on 1 and 2 cores, compared with DuckDB's GROUP BY over the window start;
* a running GROUP BY of a DATE in a materialized view, queried at the end;
* the same running aggregate on a durable database checkpointed, closed (or
  left as a kill -9 would) and reopened half way, so DATE keys and MIN / MAX
  state pass through snapshots and WAL records.

Python inserts: ``datetime.date`` in and out of dicts, a ``datetime`` with a
time of day refused (LDB-3004) as a fraction bound for a BIGINT is.
"""

from __future__ import annotations

import datetime as dt

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
EPOCH = dt.date(1970, 1, 1)
#: 0001-01-01 and 9999-12-31 in days since the epoch (DuckDB's and Python's range).
FIRST_DAY = (dt.date(1, 1, 1) - EPOCH).days
LAST_DAY = (dt.date(9999, 12, 31) - EPOCH).days


def date_table(rng: np.random.Generator, n: int) -> pa.Table:
    """Rows ``k`` (string key), ``d`` and ``e`` (date32, NULLs), ``n`` (int32 days, NULLs), ``ts``.

    Dates mix a few repeated days (keys that collide), days near the epoch
    (negative ones too), and the extremes 0001-01-01 / 9999-12-31. ``n`` stays
    small enough that ``d + n`` is a valid date in both engines (the range
    edges are in :func:`test_date_out_of_range_arithmetic_is_null`).
    """
    pool = np.array([0, -1, 1, 59, 365, 10957, 20454, FIRST_DAY + 800, LAST_DAY - 800])
    kinds = rng.integers(0, 3, size=n)
    d = np.where(
        kinds == 0,
        pool[rng.integers(0, len(pool), size=n)],
        np.where(kinds == 1, rng.integers(-3000, 3000, size=n),
                 rng.integers(FIRST_DAY + 800, LAST_DAY - 800, size=n)),
    )
    e = np.where(rng.random(n) < 0.3, d, rng.integers(-40000, 40000, size=n))
    # the extremes, unchanged by arithmetic only through comparisons and casts
    edge = rng.random(n) < 0.02
    d = np.where(edge, rng.choice([FIRST_DAY + 800, LAST_DAY - 800], size=n), d)
    null_frac = float(rng.choice([0.0, 0.1, 0.4]))
    ts = np.cumsum(rng.integers(0, 40, size=n)) + int(rng.integers(-5000, 5000))
    keys = np.array(["a", "b", "c", "ß", ""], dtype=object)
    return pa.table({
        "k": pa.array(keys[rng.integers(0, len(keys), size=n)], pa.string(),
                      mask=rng.random(n) < 0.05),
        "d": pa.array(d.astype(np.int32), pa.int32(),
                      mask=rng.random(n) < null_frac).cast(pa.date32()),
        "e": pa.array(e.astype(np.int32), pa.int32(),
                      mask=rng.random(n) < null_frac).cast(pa.date32()),
        "n": pa.array(rng.integers(-400, 400, size=n).astype(np.int32), pa.int32(),
                      mask=rng.random(n) < 0.1),
        "ts": pa.array(ts, pa.int64()),
    })


SOURCE = "CREATE SOURCE t (k VARCHAR, d DATE, e DATE, n INT, ts BIGINT, WATERMARK FOR ts AS ts);"

#: (our expression, DuckDB's where it is spelled differently)
EXPRESSIONS: list[tuple[str, str | None]] = [
    ("d", None),
    ("d + n", None),
    ("n + d", None),
    ("d - n", None),
    ("d - e", None),
    ("d + 7", None),
    ("CAST(d AS VARCHAR)", None),
    ("CAST(CAST(d AS VARCHAR) AS DATE)", None),
    ("CAST(d AS TIMESTAMP)", None),
    ("CAST(CAST(d AS TIMESTAMP) AS DATE)", None),
    ("d + INTERVAL '36' HOUR", "d + INTERVAL 36 HOUR"),
    ("d - INTERVAL '1' DAY", "d - INTERVAL 1 DAY"),
    ("d < e", None),
    ("d = e", None),
    ("d <> e", None),
    ("d >= '2000-02-29'", None),
    ("d = DATE '1970-01-01'", None),
    ("d < TIMESTAMP '2000-01-01 12:00'", None),
    ("TIMESTAMP '2000-01-01 12:00' - INTERVAL '1' HOUR < d",
     "TIMESTAMP '2000-01-01 12:00' - INTERVAL 1 HOUR < d"),
    ("d BETWEEN e AND e + 100", None),
    ("d IN (DATE '1970-01-01', DATE '2026-01-01', e)", None),
    ("d < CAST(e AS TIMESTAMP) + INTERVAL '1' HOUR", "d < CAST(e AS TIMESTAMP) + INTERVAL 1 HOUR"),
    ("coalesce(d, e)", None),
    ("CASE WHEN n > 0 THEN d ELSE e END", None),
    ("EXTRACT(year FROM d)", None),
    ("EXTRACT(month FROM d)", None),
    ("EXTRACT(day FROM d)", None),
    ("EXTRACT(dow FROM d)", None),
    ("EXTRACT(isodow FROM d)", None),
    ("EXTRACT(doy FROM d)", None),
    ("EXTRACT(week FROM d)", None),
    ("EXTRACT(quarter FROM d)", None),
    ("EXTRACT(hour FROM d)", None),
    ("date_part('epoch', d)", None),
    ("date_trunc('month', d)", None),
    ("date_trunc('week', d)", None),
    ("date_trunc('year', e)", None),
]


@settings(max_examples=examples(5), deadline=None)
@given(seed=SEEDS)
def test_date_expressions_match_duckdb(seed: int) -> None:
    announce_seed(seed)
    rng = np.random.default_rng(seed)
    table = date_table(rng, int(rng.integers(1, 600)))
    items = ", ".join(f"{ours} AS c{i}" for i, (ours, _) in enumerate(EXPRESSIONS))
    ddl = SOURCE + f"CREATE STREAM w AS SELECT ts, {items} FROM t;"
    got = run_engine(ddl, split_batches(rng, table), final_watermark=False).table
    theirs = ", ".join(
        f"{th or ours} AS c{i}" for i, (ours, th) in enumerate(EXPRESSIONS))
    _, want = duck(f"SELECT ts, {theirs} FROM t", t=table)
    columns = ["ts"] + [f"c{i}" for i in range(len(EXPRESSIONS))]
    assert_same_rows(rows_of(got, columns), want, columns, seed=seed)


def _window_sql(size: int) -> tuple[str, str]:
    ours = (
        SOURCE
        + "CREATE STREAM w AS SELECT d, window_start, MIN(e) AS lo, MAX(e) AS hi, "
        "COUNT(e) AS ne, COUNT(*) AS n FROM t "
        f"GROUP BY d, tumble(ts, INTERVAL '{size}' MILLISECOND) EMIT ON WINDOW CLOSE;"
    )
    start = f"(ts - ((ts % {size}) + {size}) % {size})"
    theirs = (
        f"SELECT d, {start} AS window_start, MIN(e), MAX(e), COUNT(e), COUNT(*) FROM t "
        f"GROUP BY d, {start}"
    )
    return ours, theirs


@pytest.mark.parametrize("cores", [1, 2])
@settings(max_examples=examples(4), deadline=None)
@given(seed=SEEDS)
def test_tumbling_window_keyed_by_date_matches_duckdb(cores: int, seed: int) -> None:
    announce_seed(seed)
    rng = np.random.default_rng(seed)
    table = date_table(rng, int(rng.integers(0, 1500)))
    size = int(rng.choice([1, 50, 1000]))
    ours, theirs = _window_sql(size)
    got = run_engine(ours, split_batches(rng, table), cores=cores).table
    _, want = duck(theirs, t=table)
    columns = ["d", "window_start", "lo", "hi", "ne", "n"]
    assert_same_rows(rows_of(got, columns), want, columns, seed=seed)


RUNNING = (
    SOURCE
    + "CREATE MATERIALIZED VIEW r AS SELECT k, d, MIN(e) AS lo, MAX(e) AS hi, COUNT(*) AS n "
    "FROM t GROUP BY k, d;"
)
RUNNING_DUCK = "SELECT k, d, MIN(e), MAX(e), COUNT(*) FROM t GROUP BY k, d"
RUNNING_COLUMNS = ["k", "d", "lo", "hi", "n"]


@pytest.mark.parametrize("cores", [1, 2])
@settings(max_examples=examples(4), deadline=None)
@given(seed=SEEDS)
def test_running_group_by_date_matches_duckdb(cores: int, seed: int) -> None:
    announce_seed(seed)
    rng = np.random.default_rng(seed)
    table = date_table(rng, int(rng.integers(0, 1500)))
    with laminardb.open(cores=cores) as db:
        db.execute(RUNNING)
        for batch in split_batches(rng, table):
            db.insert("t", batch)
            db.run_until_idle()
        got = db.query("SELECT * FROM r")
    _, want = duck(RUNNING_DUCK, t=table)
    assert_same_rows(rows_of(got, RUNNING_COLUMNS), want, RUNNING_COLUMNS, seed=seed)


@pytest.mark.parametrize("close", ["clean", "kill -9"])
@settings(max_examples=examples(3), deadline=None)
@given(seed=SEEDS)
def test_date_state_survives_checkpoint_and_restart(
    tmp_path_factory: pytest.TempPathFactory, close: str, seed: int
) -> None:
    announce_seed(seed)
    rng = np.random.default_rng(seed)
    table = date_table(rng, int(rng.integers(1, 1500)))
    batches = split_batches(rng, table)
    cut = int(rng.integers(0, len(batches) + 1))
    data = tmp_path_factory.mktemp("date_ckpt") / "db"
    options = {"wal_mode": "sync", "checkpoint_interval": "1 hour"}
    db = laminardb.open(data, **options)
    db.execute(RUNNING)
    for i, batch in enumerate(batches[:cut]):
        db.insert("t", batch)
        db.run_until_idle()
        if i == cut // 2:
            db.checkpoint()  # the rest of the first half comes back from the WAL
    close_as(db, data, crash=close == "kill -9")
    with laminardb.open(data, **options) as db:
        for batch in batches[cut:]:
            db.insert("t", batch)
        db.source("t").watermark(FINAL_WATERMARK)
        db.run_until_idle()
        got = db.query("SELECT * FROM r")
    _, want = duck(RUNNING_DUCK, t=table)
    assert_same_rows(rows_of(got, RUNNING_COLUMNS), want, RUNNING_COLUMNS, seed=seed)


def test_date_out_of_range_arithmetic_is_null() -> None:
    """DATE +/- n past the 32-bit day range, and a DATE past the TIMESTAMP range, are NULL."""
    with laminardb.open() as db:
        db.execute(
            "CREATE SOURCE t (d DATE, n BIGINT);"
            "CREATE STREAM w AS SELECT d + n AS moved, CAST(d AS TIMESTAMP) AS ts FROM t;"
        )
        sub = db.subscribe("w")
        src = db.source("t")
        src.push(pa.record_batch({
            "d": pa.array([2**31 - 1, 0, -(2**31), 3_000_000_00], pa.int32()).cast(pa.date32()),
            "n": pa.array([1, 2**40, -1, 0], pa.int64()),
        }))
        db.run_until_idle()
        got = sub.poll(0)
        assert got is not None
        moved = got.column("moved").cast(pa.int32()).to_pylist()
        assert moved == [None, None, None, 3_000_000_00]
        assert got.column("ts").to_pylist() == [None, dt.datetime(1970, 1, 1), None, None]


def test_python_dates_in_and_out() -> None:
    with laminardb.open() as db:
        db.execute("CREATE SOURCE t (id INT, d DATE);"
                   "CREATE STREAM w AS SELECT id, d, d + 1 AS next FROM t;")
        sub = db.subscribe("w")
        db.insert("t", [{"id": 1, "d": dt.date(2026, 1, 2)}, {"id": 2, "d": None},
                        {"id": 3, "d": dt.datetime(2026, 3, 1)}])  # midnight: no loss
        db.insert("t", {"id": 4, "d": dt.date(1, 1, 1)})
        db.run_until_idle()
        rows = []
        while (batch := sub.poll(0)) is not None:
            rows += batch.to_pylist()
        assert rows == [
            {"id": 1, "d": dt.date(2026, 1, 2), "next": dt.date(2026, 1, 3)},
            {"id": 2, "d": None, "next": None},
            {"id": 3, "d": dt.date(2026, 3, 1), "next": dt.date(2026, 3, 2)},
            {"id": 4, "d": dt.date(1, 1, 1), "next": dt.date(1, 1, 2)},
        ]
        assert sub.schema.field("d").type == pa.date32()


def test_python_refuses_a_time_of_day_bound_for_a_date() -> None:
    with laminardb.open() as db:
        db.execute("CREATE SOURCE t (id INT, d DATE); CREATE STREAM w AS SELECT * FROM t;")
        sub = db.subscribe("w")
        with pytest.raises(laminardb.IngestError) as info:
            db.insert("t", [{"id": 1, "d": dt.date(2026, 1, 2)},
                            {"id": 2, "d": dt.datetime(2026, 1, 2, 10, 30)}])
        assert info.value.code == "LDB-3004"
        assert "'d'" in str(info.value)
        assert "row 1" in str(info.value)
        db.run_until_idle()
        assert sub.poll(0) is None  # nothing of the batch was ingested


def test_pushing_another_arrow_type_into_a_date_column_is_refused() -> None:
    with laminardb.open() as db:
        db.execute("CREATE SOURCE t (d DATE);")
        for wrong in (pa.array([1], pa.int32()), pa.array([dt.datetime(2026, 1, 1)])):
            with pytest.raises(laminardb.IngestError) as info:
                db.source("t").push(pa.record_batch({"d": wrong}))
            assert info.value.code == "LDB-3004"
            assert "'d'" in str(info.value)
            assert "DATE" in str(info.value)

"""DECIMAL(p,s) end to end against DuckDB (issue 25 item 1; docs/SQL.md "Decimals").

Seeded random decimals of mixed scales (NULLs, zeros, negatives, repeated
values as keys) go through:

* a projection of DECIMAL arithmetic, casts and comparisons, compared row by
  row with DuckDB (values and the decimal128 result types);
* a tumbling window keyed by a DECIMAL with SUM / MIN / MAX / AVG / COUNT, on
  1 and 2 cores, compared with DuckDB's GROUP BY over the window start; the
  same over hopping and session windows, and SUM of a DECIMAL(30,4);
* the tumbling window split in two phases (partial rows merged by the final
  query, laminar_stream_two_phase);
* an EMIT CHANGES changelog at 1 and 2 cores folded by its weights;
* a running GROUP BY (EMIT CHANGES, retractions folded by a materialized
  view) on 1 and 2 cores;
* the same on a durable database checkpointed and reopened half way, so the
  keys and sums pass through snapshots and WAL records.

Python inserts: ``decimal.Decimal`` in and out of dicts, pyarrow decimal128
columns in and out.
"""

from __future__ import annotations

import decimal

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
from test_two_phase import two_phase_run

import laminardb

SEEDS = st.integers(*seed_strategy_bounds())


def _decimals(rng: np.random.Generator, n: int, digits: int, scale: int,
              null_frac: float) -> pa.Array:
    """n decimal128(digits + scale, scale) values: small and large, repeated, NULLs."""
    lim = 10 ** (digits + scale) - 1
    pool = np.array([0, 1, -1, 5 * 10 ** (scale - 1) if scale else 5, lim // 3, -lim // 7],
                    dtype=object)
    kinds = rng.integers(0, 3, size=n)
    raw = [
        int(pool[rng.integers(0, len(pool))]) if kind == 0
        else int(rng.integers(-1000, 1000)) if kind == 1
        else int(rng.integers(-(10 ** min(digits + scale, 18)) + 1,
                              10 ** min(digits + scale, 18)))
        for kind in kinds
    ]
    values = [decimal.Decimal(x).scaleb(-scale) for x in raw]
    mask = rng.random(n) < null_frac
    return pa.array([None if m else v for v, m in zip(values, mask, strict=True)],
                    pa.decimal128(digits + scale, scale))


def decimal_table(rng: np.random.Generator, n: int) -> pa.Table:
    """Rows ``k`` (string key), ``a`` DECIMAL(10,4), ``b`` DECIMAL(6,2), ``ts``."""
    null_frac = float(rng.choice([0.0, 0.1, 0.4]))
    ts = np.cumsum(rng.integers(0, 40, size=n)) + int(rng.integers(-5000, 5000))
    keys = np.array(["a", "b", "c", "ß", ""], dtype=object)
    b = _decimals(rng, n, 4, 2, null_frac)
    # a few distinct b values so that keys collide
    b = pa.array([None if x is None else x.quantize(decimal.Decimal("0.5")) / 2
                  for x in b.to_pylist()], pa.decimal128(6, 2))
    return pa.table({
        "k": pa.array(keys[rng.integers(0, len(keys), size=n)], pa.string(),
                      mask=rng.random(n) < 0.05),
        "a": _decimals(rng, n, 6, 4, null_frac),
        "b": b,
        "ts": pa.array(ts, pa.int64()),
    })


SOURCE = ("CREATE SOURCE t (k VARCHAR, a DECIMAL(10,4), b DECIMAL(6,2), ts BIGINT, "
          "WATERMARK FOR ts AS ts);")

#: Expressions whose values DuckDB computes without an overflow error here.
EXPRESSIONS = [
    "a",
    "a + b",
    "a - b",
    "b - a",
    "a * b",
    "-a",
    "a + 1",
    "b * 3",
    "a % b",
    "CAST(a AS VARCHAR)",
    "CAST(CAST(a AS VARCHAR) AS DECIMAL(10,4))",
    "CAST(a AS DOUBLE)",
    "CAST(a AS DECIMAL(12,1))",
    "CAST(a AS DECIMAL(20,6))",
    "CAST(b AS BIGINT)",
    "CAST(CAST(b AS DOUBLE) AS DECIMAL(8,1))",
    "a < b",
    "a = b",
    "a >= 1",
    "b <> 0.5",
    "a / b",
    "coalesce(a, b)",
    "CASE WHEN a > 0 THEN a ELSE b END",
    "abs(a)",
    "abs(b - a)",
    "round(a)",
    "round(a, 2)",
    "round(b, 1)",
    "round(a, 6)",
    "floor(a)",
    "ceil(b)",
    "sqrt(abs(a))",
]


@settings(max_examples=examples(5), deadline=None)
@given(seed=SEEDS)
def test_decimal_expressions_match_duckdb(seed: int) -> None:
    announce_seed(seed)
    rng = np.random.default_rng(seed)
    table = decimal_table(rng, int(rng.integers(1, 600)))
    items = ", ".join(f"{e} AS c{i}" for i, e in enumerate(EXPRESSIONS))
    ddl = SOURCE + f"CREATE STREAM w AS SELECT ts, {items} FROM t;"
    got = run_engine(ddl, split_batches(rng, table), final_watermark=False).table
    # DuckDB errors on a % 0; the engine gives NULL (docs: runtime faults)
    theirs = ", ".join(f"TRY({e}) AS c{i}" for i, e in enumerate(EXPRESSIONS))
    _, want = duck(f"SELECT ts, {theirs} FROM t", t=table)
    _, typeof = duck("SELECT " + ", ".join(f"typeof({e})" for e in EXPRESSIONS) +
                     " FROM t LIMIT 1", t=table)
    columns = ["ts"] + [f"c{i}" for i in range(len(EXPRESSIONS))]
    assert_same_rows(rows_of(got, columns), want, columns, seed=seed)
    for i, e in enumerate(EXPRESSIONS):
        field = got.schema.field(f"c{i}")
        if pa.types.is_decimal(field.type):
            want_type = f"DECIMAL({field.type.precision},{field.type.scale})"
            assert typeof[0][i] == want_type, (e, typeof[0][i], want_type)


def _window_sql(size: int) -> tuple[str, str]:
    ours = (
        SOURCE
        + "CREATE STREAM w AS SELECT b, window_start, SUM(a) AS s, MIN(a) AS lo, "
        "MAX(a) AS hi, AVG(a) AS av, COUNT(a) AS n FROM t "
        f"GROUP BY b, tumble(ts, INTERVAL '{size}' MILLISECOND) EMIT ON WINDOW CLOSE;"
    )
    start = f"(ts - ((ts % {size}) + {size}) % {size})"
    theirs = (
        f"SELECT b, {start} AS window_start, SUM(a), MIN(a), MAX(a), AVG(a), COUNT(a) "
        f"FROM t GROUP BY b, {start}"
    )
    return ours, theirs


@pytest.mark.parametrize("cores", [1, 2])
@settings(max_examples=examples(4), deadline=None)
@given(seed=SEEDS)
def test_tumbling_window_keyed_by_decimal_matches_duckdb(cores: int, seed: int) -> None:
    announce_seed(seed)
    rng = np.random.default_rng(seed)
    table = decimal_table(rng, int(rng.integers(0, 1500)))
    size = int(rng.choice([1, 50, 1000]))
    ours, theirs = _window_sql(size)
    result = run_engine(ours, split_batches(rng, table), cores=cores).table
    assert result.schema.field("s").type == pa.decimal128(38, 4)  # DuckDB's SUM type
    assert result.schema.field("av").type == pa.float64()
    _, want = duck(theirs, t=table)
    columns = ["b", "window_start", "s", "lo", "hi", "av", "n"]
    assert_same_rows(rows_of(result, columns), want, columns, seed=seed)


AGGS = "SUM(a) AS s, MIN(a) AS lo, MAX(a) AS hi, AVG(a) AS av, COUNT(a) AS n, " \
    "SUM(CAST(a AS DECIMAL(30,4)) * 1000) AS big"
AGGS_DUCK = "SUM(a), MIN(a), MAX(a), AVG(a), COUNT(a), SUM(CAST(a AS DECIMAL(30,4)) * 1000)"
AGG_COLUMNS = ["s", "lo", "hi", "av", "n", "big"]


@pytest.mark.parametrize("cores", [1, 2])
@settings(max_examples=examples(3), deadline=None)
@given(seed=SEEDS)
def test_hop_and_session_windows_keyed_by_decimal_match_duckdb(cores: int,
                                                               seed: int) -> None:
    announce_seed(seed)
    rng = np.random.default_rng(seed)
    table = decimal_table(rng, int(rng.integers(0, 1500)))
    size = int(rng.choice([50, 1000]))
    hop = size // int(rng.choice([1, 2, 5]))
    gap = int(rng.integers(1, 200))
    batches = split_batches(rng, table)
    hop_sql = (SOURCE + f"CREATE STREAM w AS SELECT b, window_start, {AGGS} FROM t GROUP BY b, "
               f"hop(ts, INTERVAL '{size}' MILLISECOND, INTERVAL '{hop}' MILLISECOND);")
    got = run_engine(hop_sql, batches, cores=cores).table
    assert got.schema.field("big").type == pa.decimal128(38, 4)
    newest = f"(ts - ((ts % {hop}) + {hop}) % {hop})"
    _, want = duck(
        f"WITH p AS (SELECT t.*, {newest} - j * {hop} AS ws FROM t, "
        f"(SELECT unnest(range(0, {-(-size // hop)})) AS j)) "
        f"SELECT b, ws, {AGGS_DUCK} FROM p WHERE ws > ts - {size} GROUP BY ALL", t=table)
    columns = ["b", "window_start", *AGG_COLUMNS]
    assert_same_rows(rows_of(got, columns), want, columns, seed=seed)
    session_sql = (SOURCE + f"CREATE STREAM w AS SELECT b, window_start, {AGGS} FROM t "
                   f"GROUP BY b, session(ts, INTERVAL '{gap}' MILLISECOND);")
    got = run_engine(session_sql, batches, cores=cores).table
    seq = table.append_column("seq", pa.array(range(table.num_rows), pa.int64()))
    _, want = duck(
        "WITH o AS (SELECT *, CASE WHEN ts - lag(ts) OVER (PARTITION BY b ORDER BY ts, seq) "
        f"< {gap} THEN 0 ELSE 1 END AS brk FROM t), "
        "s AS (SELECT *, sum(brk) OVER (PARTITION BY b ORDER BY ts, seq ROWS UNBOUNDED "
        "PRECEDING) AS sid FROM o) "
        f"SELECT b, min(ts), {AGGS_DUCK} FROM s GROUP BY b, sid", t=seq)
    assert_same_rows(rows_of(got, columns), want, columns, seed=seed)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_two_phase_decimal_window_matches_duckdb(seed: int) -> None:
    announce_seed(seed)
    rng = np.random.default_rng(seed)
    table = decimal_table(rng, int(rng.integers(200, 1500)))
    ours, theirs = _window_sql(100)
    got = two_phase_run(ours, "w", table, rng, parts=int(rng.integers(1, 5)),
                        finals=int(rng.integers(1, 4)))
    one = run_engine(ours, split_batches(rng, table))
    assert got.schema == one.table.schema  # DECIMAL(38,4) sums through the merge
    _, want = duck(theirs, t=table)
    columns = ["b", "window_start", "s", "lo", "hi", "av", "n"]
    assert_same_rows(rows_of(got, columns), want, columns, seed=seed)


@pytest.mark.parametrize("cores", [1, 2])
@settings(max_examples=examples(4), deadline=None)
@given(seed=SEEDS)
def test_emit_changes_folds_to_duckdb(cores: int, seed: int) -> None:
    """The changelog of a running GROUP BY, each row counted by its weight."""
    announce_seed(seed)
    rng = np.random.default_rng(seed)
    table = decimal_table(rng, int(rng.integers(0, 1500)))
    ddl = (SOURCE + "CREATE STREAM c AS SELECT k, SUM(a) AS s, MIN(b) AS lo, MAX(b) AS hi, "
           "COUNT(*) AS n FROM t GROUP BY k EMIT CHANGES;")
    with laminardb.open(cores=cores) as db:
        db.execute(ddl)
        sub = db.subscribe("c")
        rows: dict[tuple, int] = {}
        for batch in split_batches(rng, table):
            db.insert("t", batch)
            db.run_until_idle()
            while (out := sub.poll(0)) is not None:
                for r in out.to_pylist():
                    key = (r["k"], r["s"], r["lo"], r["hi"], r["n"])
                    rows[key] = rows.get(key, 0) + r["_weight"]
        assert sub.schema.field("s").type == pa.decimal128(38, 4)
    got = [key for key, w in rows.items() for _ in range(w)]
    assert all(w >= 0 for w in rows.values())
    _, want = duck("SELECT k, SUM(a), MIN(b), MAX(b), COUNT(*) FROM t GROUP BY k", t=table)
    columns = ["k", "s", "lo", "hi", "n"]
    assert_same_rows(got, want, columns, seed=seed)


RUNNING = (
    SOURCE
    + "CREATE MATERIALIZED VIEW r AS SELECT k, b, SUM(a) AS s, MIN(a) AS lo, MAX(a) AS hi, "
    "AVG(a) AS av, COUNT(*) AS n FROM t GROUP BY k, b;"
)
RUNNING_DUCK = "SELECT k, b, SUM(a), MIN(a), MAX(a), AVG(a), COUNT(*) FROM t GROUP BY k, b"
RUNNING_COLUMNS = ["k", "b", "s", "lo", "hi", "av", "n"]


@pytest.mark.parametrize("cores", [1, 2])
@settings(max_examples=examples(4), deadline=None)
@given(seed=SEEDS)
def test_running_group_by_decimal_matches_duckdb(cores: int, seed: int) -> None:
    announce_seed(seed)
    rng = np.random.default_rng(seed)
    table = decimal_table(rng, int(rng.integers(0, 1500)))
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
def test_decimal_state_survives_checkpoint_and_restart(
    tmp_path_factory: pytest.TempPathFactory, close: str, seed: int
) -> None:
    announce_seed(seed)
    rng = np.random.default_rng(seed)
    table = decimal_table(rng, int(rng.integers(1, 1500)))
    batches = split_batches(rng, table)
    cut = int(rng.integers(0, len(batches) + 1))
    data = tmp_path_factory.mktemp("dec_ckpt") / "db"
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
        assert got.schema.field("b").type == pa.decimal128(6, 2)  # restored as declared
    _, want = duck(RUNNING_DUCK, t=table)
    assert_same_rows(rows_of(got, RUNNING_COLUMNS), want, RUNNING_COLUMNS, seed=seed)


def test_python_decimals_in_and_out() -> None:
    with laminardb.open() as db:
        db.execute("CREATE SOURCE t (id INT, p DECIMAL(18,4));"
                   "CREATE STREAM w AS SELECT id, p, p * 2 AS twice FROM t;")
        sub = db.subscribe("w")
        db.insert("t", [{"id": 1, "p": decimal.Decimal("12.3456")}, {"id": 2, "p": None}])
        db.insert("t", {"id": 3, "p": decimal.Decimal("-0.0001")})
        db.run_until_idle()
        rows = []
        while (batch := sub.poll(0)) is not None:
            rows += batch.to_pylist()
        assert rows == [
            {"id": 1, "p": decimal.Decimal("12.3456"), "twice": decimal.Decimal("24.6912")},
            {"id": 2, "p": None, "twice": None},
            {"id": 3, "p": decimal.Decimal("-0.0001"), "twice": decimal.Decimal("-0.0002")},
        ]
        assert sub.schema.field("p").type == pa.decimal128(18, 4)


def test_pushing_another_decimal_type_is_refused() -> None:
    with laminardb.open() as db:
        db.execute("CREATE SOURCE t (p DECIMAL(18,4));")
        for wrong in (pa.array([decimal.Decimal("1.5")], pa.decimal128(18, 2)),
                      pa.array([1.5], pa.float64())):
            with pytest.raises(laminardb.IngestError) as info:
                db.source("t").push(pa.record_batch({"p": wrong}))
            assert info.value.code == "LDB-3004"
            assert "'p'" in str(info.value)
            assert "DECIMAL(18,4)" in str(info.value)

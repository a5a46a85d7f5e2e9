"""Streaming results against DuckDB's batch answer over the same rows (DESIGN §5b).

Tumbling windows after the final watermark equal DuckDB's ``GROUP BY key,
floor(ts / size) * size``; plain filter/project streams equal DuckDB's ``SELECT
... WHERE ...`` row for row, NULL logic included. Inputs are seeded random
(hypothesis draws the seed; ``LAMINAR_TEST_SEED`` replays one): many keys, NULL
keys and values, disorder within the watermark delay, empty stretches, plain
and dictionary-encoded string keys, random batch sizes (some empty), negative
and epoch-scale times. The inline and threaded drivers must give the same
output, and rows behind the watermark are dropped and counted.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pyarrow as pa
import pytest
from _oracle_util import (
    FINAL_WATERMARK,
    WindowData,
    announce_seed,
    assert_same_rows,
    dictionary_keys,
    duck,
    examples,
    rows_of,
    run_engine,
    seed_strategy_bounds,
    split_batches,
    window_table,
)
from hypothesis import given, note, settings
from hypothesis import strategies as st

import laminardb

SEEDS = st.integers(*seed_strategy_bounds())

#: (LaminarDB select item, DuckDB select item) of the window tests; names are
#: the aliases both sides use.
AGGREGATES = [
    ("COUNT(*)", "COUNT(*)", "n"),
    ("COUNT(x)", "COUNT(x)", "nx"),
    ("COUNT(y)", "COUNT(y)", "ny"),
    ("COUNT(s)", "COUNT(s)", "ns"),
    ("SUM(x)", "SUM(x)", "sx"),
    ("SUM(y)", "SUM(y)", "sy"),
    ("AVG(x)", "AVG(x)", "ax"),
    ("AVG(y)", "AVG(y)", "ay"),
    ("MIN(x)", "MIN(x)", "mnx"),
    ("MAX(x)", "MAX(x)", "mxx"),
    ("MIN(y)", "MIN(y)", "mny"),
    ("MAX(y)", "MAX(y)", "mxy"),
    ("MIN(s)", "MIN(s)", "mns"),
    ("MAX(s)", "MAX(s)", "mxs"),
    ("SUM(x * 2 + 1)", "SUM(x * 2 + 1)", "sx2"),
    ("SUM(y * x)", "SUM(y * x)", "syx"),
]

#: WHERE clauses of the window tests (the same text on both sides).
WINDOW_FILTERS = [
    "",
    "WHERE x > 0",
    "WHERE y IS NULL OR x < -100",
    "WHERE NOT (x > 0 AND y > 0)",
    "WHERE k IS NOT NULL AND s <> 'a'",
    "WHERE x BETWEEN -10 AND 500",
    "WHERE s IN ('a', 'zz', 'ß') OR y > 100",
]

#: GROUP BY keys of the window tests (besides the window).
GROUPINGS = [["k"], ["k", "g"], ["g"]]

WINDOW_SOURCE = """
CREATE SOURCE t (k VARCHAR, g BIGINT, x BIGINT, y DOUBLE, s VARCHAR, ts BIGINT NOT NULL,
                 WATERMARK FOR ts AS ts - INTERVAL '{delay}' MILLISECOND);
"""


def window_case(
    seed: int,
    *,
    data: WindowData | None = None,
    keys: list[str] | None = None,
    where: str | None = None,
) -> dict:
    """Draw one window test case (data, SQL for both sides) from ``seed``."""
    rng = np.random.default_rng(seed)
    data = data if data is not None else window_table(rng)
    keys = keys if keys is not None else GROUPINGS[int(rng.integers(len(GROUPINGS)))]
    where = where if where is not None else WINDOW_FILTERS[int(rng.integers(len(WINDOW_FILTERS)))]
    size = data.size_ms
    items = ", ".join(f"{ours} AS {alias}" for ours, _, alias in AGGREGATES)
    ddl = WINDOW_SOURCE.format(delay=data.delay_ms) + (
        f"CREATE STREAM w AS SELECT {', '.join(keys)}, window_start, window_end, {items} "
        f"FROM t {where} GROUP BY {', '.join(keys)}, tumble(ts, INTERVAL '{size}' MILLISECOND) "
        "EMIT ON WINDOW CLOSE;"
    )
    start = f"(ts - ((ts % {size}) + {size}) % {size})"  # floor to the window, any sign
    duck_items = ", ".join(f"{theirs} AS {alias}" for _, theirs, alias in AGGREGATES)
    oracle = (
        f"SELECT {', '.join(keys)}, {start} AS window_start, {start} + {size} AS window_end, "
        f"{duck_items} FROM t {where} GROUP BY ALL"
    )
    columns = [*keys, "window_start", "window_end", *(alias for _, _, alias in AGGREGATES)]
    print(f"case: size={size} delay={data.delay_ms} keys={keys} {where!r}")
    return {"rng": rng, "data": data, "ddl": ddl, "oracle": oracle, "columns": columns}


def check_window_case(seed: int, *, encoding: str, driver: str = "inline") -> None:
    """Run one window case through LaminarDB and DuckDB and compare."""
    announce_seed(seed)
    case = window_case(seed)
    rng, data = case["rng"], case["data"]
    pushed = dictionary_keys(data.table) if encoding == "dictionary" else data.table
    batches = split_batches(rng, pushed)
    run_every = int(rng.choice([1, 1, 2, 5]))
    result = run_engine(case["ddl"], batches, driver=driver, run_every=run_every)
    names, expected = duck(case["oracle"], t=data.table)
    assert names == case["columns"]
    assert result.late_rows == 0, f"seed {seed}: no row was behind the watermark"
    assert_same_rows(rows_of(result.table, names), expected, names, seed=seed)


@pytest.mark.parametrize("encoding", ["plain", "dictionary"])
@settings(max_examples=examples(25), deadline=None)
@given(seed=SEEDS)
def test_tumbling_matches_duckdb(encoding, seed):
    check_window_case(seed, encoding=encoding)


@settings(max_examples=examples(5), deadline=None)
@given(seed=SEEDS)
def test_tumbling_threaded_matches_duckdb(seed):
    """The reactor thread (start/stop) gives DuckDB's answer too."""
    check_window_case(seed, encoding="plain", driver="threaded")


def test_tumbling_large_many_keys_matches_duckdb():
    """One bigger fixed case: 500 keys, 50k rows, 100 ms windows, dictionary keys."""
    seed = 20240601
    data = window_table(np.random.default_rng(seed), rows=50_000, keys=500, size_ms=100)
    case = window_case(seed, data=data, keys=["k"], where="")
    batches = split_batches(case["rng"], dictionary_keys(data.table), max_rows=4096)
    result = run_engine(case["ddl"], batches)
    names, expected = duck(case["oracle"], t=data.table)
    assert len(expected) > 10_000
    assert result.late_rows == 0
    assert_same_rows(rows_of(result.table, names), expected, names, seed=seed)


def _key_sequences(table: pa.Table, keys: list[str]) -> dict[tuple, list[tuple]]:
    """Rows grouped by key, each group in arrival order."""
    groups: dict[tuple, list[tuple]] = defaultdict(list)
    for row in table.to_pylist():
        groups[tuple(row[k] for k in keys)].append(tuple(row.values()))
    return dict(groups)


@settings(max_examples=examples(10), deadline=None)
@given(seed=SEEDS)
def test_inline_and_threaded_drivers_agree(seed):
    """Same input, same output: same multiset and, per key, the same order."""
    announce_seed(seed)
    case = window_case(seed)
    keys = case["columns"][: case["columns"].index("window_start")]
    batches = split_batches(case["rng"], case["data"].table)
    inline = run_engine(case["ddl"], batches, driver="inline")
    threaded = run_engine(case["ddl"], batches, driver="threaded")
    assert inline.table.schema == threaded.table.schema
    assert inline.table.num_rows == threaded.table.num_rows
    # Exact equality, floats included: both drivers run the same operators.
    assert _key_sequences(inline.table, keys) == _key_sequences(threaded.table, keys), seed
    for rows in _key_sequences(inline.table, keys).values():
        starts = [row[len(keys)] for row in rows]
        assert starts == sorted(starts), f"seed {seed}: windows of one key out of order"


# ---------------------------------------------------------------------------
# Plain filter/project streams
# ---------------------------------------------------------------------------

#: (LaminarDB expression, DuckDB expression, alias). Operands stay far from
#: BIGINT overflow (LaminarDB gives NULL there, DuckDB raises).
PROJECTIONS = [
    ("x + 1", "x + 1", "a1"),
    ("x - y", "x - y", "a2"),
    ("x * 3 - g", "x * 3 - g", "a3"),
    ("y * 2.5", "y * 2.5", "a4"),
    ("x / y", "x / y", "d1"),
    ("y / x", "y / x", "d2"),
    ("x / 7", "x / 7", "d3"),
    ("x % 7", "x % 7", "m1"),
    ("x % g", "TRY(x % g)", "m2"),  # g may be 0: DuckDB raises, LaminarDB gives NULL
    ("y % 2.5", "y % 2.5", "m3"),
    ("-x", "-x", "neg"),
    (
        "CASE WHEN x > 0 THEN 'pos' WHEN x < 0 THEN 'neg' ELSE 'zero or null' END",
        "CASE WHEN x > 0 THEN 'pos' WHEN x < 0 THEN 'neg' ELSE 'zero or null' END",
        "c1",
    ),
    (
        "CASE g WHEN 0 THEN y WHEN 1 THEN x ELSE NULL END",
        "CASE g WHEN 0 THEN y WHEN 1 THEN x ELSE NULL END",
        "c2",
    ),
    ("CASE WHEN y > 0 THEN x END", "CASE WHEN y > 0 THEN x END", "c3"),
    ("CAST(x AS DOUBLE)", "CAST(x AS DOUBLE)", "t1"),
    ("CAST(x AS VARCHAR)", "CAST(x AS VARCHAR)", "t2"),
    ("CAST(s AS BIGINT)", "TRY_CAST(s AS BIGINT)", "t3"),
    ("CAST(g AS BOOLEAN)", "CAST(g AS BOOLEAN)", "t4"),
    ("y IS NULL", "y IS NULL", "b1"),
    ("x IS NOT NULL AND y > 0", "x IS NOT NULL AND y > 0", "b2"),
    ("x > 0 OR y > 0", "x > 0 OR y > 0", "b3"),
    ("NOT (x > 0)", "NOT (x > 0)", "b4"),
    ("x BETWEEN -5 AND 5", "x BETWEEN -5 AND 5", "b5"),
    ("x IN (1, 2, 3, 0)", "x IN (1, 2, 3, 0)", "b6"),
    ("s < 'b'", "s < 'b'", "b7"),
    ("k = s", "k = s", "b8"),
    ("x <> 0 AND NOT y IS NULL", "x <> 0 AND NOT y IS NULL", "b9"),
    ("COALESCE(x, -1)", "COALESCE(x, -1)", "f1"),
    ("COALESCE(y, x, 0)", "COALESCE(y, x, 0)", "f2"),
    ("s || k", "s || k", "f3"),
]

PROJECT_FILTERS = [
    "",
    "WHERE price > 100 OR volume < 10",
    "WHERE NOT (x > 0)",
    "WHERE x / y > 1",
    "WHERE y IS NULL",
    "WHERE s IN ('a', 'b') OR x IS NULL",
    "WHERE CASE WHEN x > 0 THEN y > 0 ELSE y < 0 END",
    "WHERE x % 3 = 0 AND k IS NOT NULL",
]


def project_table(rng: np.random.Generator) -> pa.Table:
    """Random rows for the filter/project tests, with a row id ``i``."""
    n = int(rng.integers(0, 2000))
    null_frac = float(rng.choice([0.0, 0.2, 0.6]))

    def mask() -> np.ndarray:
        return rng.random(n) < null_frac

    x = rng.integers(-1000, 1001, size=n)
    x[rng.random(n) < 0.1] = 0
    y = np.where(rng.random(n) < 0.5, rng.integers(-40, 41, size=n) / 4.0, rng.normal(0, 300, n))
    y[rng.random(n) < 0.1] = 0.0
    pool = np.array(["a", "b", "12", "-7", " 3", "x1", "", "ß"], dtype=object)
    return pa.table(
        {
            "i": pa.array(np.arange(n), type=pa.int64()),
            "k": pa.array(pool[rng.integers(0, len(pool), size=n)], mask=mask(), type=pa.string()),
            "g": pa.array(rng.integers(0, 3, size=n), type=pa.int64()),
            "x": pa.array(x, mask=mask(), type=pa.int64()),
            "y": pa.array(y, mask=mask(), type=pa.float64()),
            "s": pa.array(pool[rng.integers(0, len(pool), size=n)], mask=mask(), type=pa.string()),
            "price": pa.array(rng.uniform(50, 150, size=n), mask=mask(), type=pa.float64()),
            "volume": pa.array(rng.integers(0, 30, size=n), mask=mask(), type=pa.int64()),
        }
    )


PROJECT_SOURCE = """
CREATE SOURCE t (i BIGINT NOT NULL, k VARCHAR, g BIGINT, x BIGINT, y DOUBLE, s VARCHAR,
                 price DOUBLE, volume BIGINT);
"""


@settings(max_examples=examples(25), deadline=None)
@given(seed=SEEDS)
def test_filter_project_matches_duckdb(seed):
    """Projection and WHERE, NULL logic and faults-as-NULL included, row for row."""
    announce_seed(seed)
    rng = np.random.default_rng(seed)
    table = project_table(rng)
    chosen = [PROJECTIONS[j] for j in sorted(rng.choice(len(PROJECTIONS), 12, replace=False))]
    where = PROJECT_FILTERS[int(rng.integers(len(PROJECT_FILTERS)))]
    note(f"LAMINAR_TEST_SEED={seed} {where!r} {[alias for _, _, alias in chosen]}")
    ours = ", ".join(f"{expr} AS {alias}" for expr, _, alias in chosen)
    theirs = ", ".join(f"{expr} AS {alias}" for _, expr, alias in chosen)
    ddl = PROJECT_SOURCE + f"CREATE STREAM w AS SELECT i, {ours} FROM t {where};"
    encoded = dictionary_keys(table) if rng.random() < 0.5 else table
    result = run_engine(ddl, split_batches(rng, encoded), driver="inline", final_watermark=False)
    names, expected = duck(f"SELECT i, {theirs} FROM t {where} ORDER BY i", t=table)
    ids = result.table.column("i").to_pylist()
    assert ids == sorted(ids), f"seed {seed}: a plain stream keeps the input order"
    assert_same_rows(rows_of(result.table, names), expected, names, seed=seed)


def test_every_projection_and_filter_once():
    """Each projection and each WHERE clause on one fixed data set (no sampling)."""
    rng = np.random.default_rng(7)
    table = project_table(rng)
    while table.num_rows < 500:
        table = project_table(rng)
    for where in PROJECT_FILTERS:
        ours = ", ".join(f"{expr} AS {alias}" for expr, _, alias in PROJECTIONS)
        theirs = ", ".join(f"{expr} AS {alias}" for _, expr, alias in PROJECTIONS)
        ddl = PROJECT_SOURCE + f"CREATE STREAM w AS SELECT i, {ours} FROM t {where};"
        result = run_engine(ddl, split_batches(rng, table), final_watermark=False)
        names, expected = duck(f"SELECT i, {theirs} FROM t {where}", t=table)
        assert_same_rows(rows_of(result.table, names), expected, names, seed=7)


def test_cast_double_to_bigint_rounds_like_duckdb():
    """CAST(DOUBLE AS BIGINT) rounds like DuckDB: to nearest, ties to even; NULL if out of range."""
    values = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999999999999994, 2.4, -2.6, 1e300, None]
    table = pa.table({"i": pa.array(range(len(values)), pa.int64()), "y": values})
    result = run_engine(
        "CREATE SOURCE t (i BIGINT NOT NULL, y DOUBLE);"
        "CREATE STREAM w AS SELECT i, CAST(y AS BIGINT) AS c FROM t;",
        table.to_batches(),
        final_watermark=False,
    )
    names, expected = duck("SELECT i, TRY_CAST(y AS BIGINT) AS c FROM t", t=table)
    assert_same_rows(rows_of(result.table, names), expected, names)


# ---------------------------------------------------------------------------
# Late rows
# ---------------------------------------------------------------------------


def test_late_rows_are_dropped_and_counted():
    """A row whose window closed before it arrived is dropped and counted."""
    ddl = (
        "CREATE SOURCE t (k VARCHAR, v BIGINT, ts BIGINT, WATERMARK FOR ts AS ts);"
        "CREATE STREAM w AS SELECT k, window_start, SUM(v) AS total, COUNT(*) AS n FROM t "
        "GROUP BY k, tumble(ts, INTERVAL '10' MILLISECOND) EMIT ON WINDOW CLOSE;"
    )
    schema = pa.schema([("k", pa.string()), ("v", pa.int64()), ("ts", pa.int64())])
    batches = [
        pa.RecordBatch.from_pylist(
            [{"k": "a", "v": 1, "ts": 5}, {"k": "a", "v": 2, "ts": 25}], schema
        ),
        # Watermark is now 25: window [0, 10) and [10, 20) are closed.
        pa.RecordBatch.from_pylist(
            [
                {"k": "a", "v": 100, "ts": 9},  # late: [0, 10) closed
                {"k": "b", "v": 200, "ts": 19},  # late: [10, 20) closed
                {"k": "b", "v": 3, "ts": 20},  # on time: [20, 30) is open
                {"k": "c", "v": 400, "ts": None},  # no time: dropped and counted
            ],
            schema,
        ),
    ]
    result = run_engine(ddl, batches)
    assert result.late_rows == 3
    got = sorted((r["k"], r["window_start"], r["total"], r["n"]) for r in result.table.to_pylist())
    assert got == [("a", 0, 1, 1), ("a", 20, 2, 1), ("b", 20, 3, 1)]


@settings(max_examples=examples(25), deadline=None)
@given(seed=SEEDS)
def test_random_late_rows_match_a_watermark_model(seed):
    """Rows beyond the delay: the dropped ones are exactly those behind the watermark.

    The model: the watermark is ``max(ts) - delay`` over the batches pushed
    before, and a row is late when its window's end is at or below it.
    """
    announce_seed(seed)
    rng = np.random.default_rng(seed)
    size = int(rng.choice([5, 10, 100]))
    delay = int(rng.integers(0, 2 * size))
    n = int(rng.integers(1, 1500))
    clock = np.cumsum(rng.integers(0, 4, size=n))
    # Most rows on time; some far behind (up to 5 windows beyond the delay).
    behind = np.where(rng.random(n) < 0.15, rng.integers(0, delay + 5 * size + 1, size=n), 0)
    ts = clock - behind
    keys = np.array(["a", "b", "c", "d", "e"], dtype=object)[rng.integers(0, 5, size=n)]
    table = pa.table(
        {"k": pa.array(keys, pa.string()), "v": pa.array(rng.integers(0, 100, n)), "ts": ts}
    )
    batches = split_batches(rng, table, max_rows=50)

    on_time = np.ones(n, dtype=bool)
    watermark = None
    offset = 0
    for batch in batches:
        chunk = ts[offset : offset + batch.num_rows]
        if watermark is not None:
            window_end = chunk - (chunk % size) + size
            on_time[offset : offset + batch.num_rows] = window_end > watermark
        if batch.num_rows:
            top = int(chunk.max()) - delay
            watermark = top if watermark is None else max(watermark, top)
        offset += batch.num_rows

    ddl = (
        "CREATE SOURCE t (k VARCHAR, v BIGINT, ts BIGINT, "
        f"WATERMARK FOR ts AS ts - INTERVAL '{delay}' MILLISECOND);"
        "CREATE STREAM w AS SELECT k, window_start, SUM(v) AS total, COUNT(*) AS n, "
        "MIN(ts) AS first_ts FROM t "
        f"GROUP BY k, tumble(ts, INTERVAL '{size}' MILLISECOND) EMIT ON WINDOW CLOSE;"
    )
    result = run_engine(ddl, batches, run_every=int(rng.choice([1, 3])))
    assert result.late_rows == int((~on_time).sum()), f"seed {seed}"
    kept = table.filter(pa.array(on_time))
    names, expected = duck(
        f"SELECT k, ts - ((ts % {size}) + {size}) % {size} AS window_start, "
        "SUM(v) AS total, COUNT(*) AS n, "
        "MIN(ts) AS first_ts FROM t GROUP BY ALL",
        t=kept,
    )
    assert_same_rows(rows_of(result.table, names), expected, names, seed=seed)


def test_late_rows_of_unknown_stream_raises():
    with laminardb.open() as db:
        with pytest.raises(laminardb.SQLError) as info:
            db.late_rows("nope")
        assert info.value.code == "LDB-1002"


def test_final_watermark_closes_everything_once():
    """A second INT64_MAX watermark emits nothing more."""
    ddl = WINDOW_SOURCE.format(delay=5000) + (
        "CREATE STREAM w AS SELECT k, window_start, COUNT(*) AS n FROM t "
        "GROUP BY k, tumble(ts, INTERVAL '1' SECOND) EMIT ON WINDOW CLOSE;"
    )
    table = window_table(np.random.default_rng(3), rows=300, size_ms=1000).table
    with laminardb.open() as db:
        db.execute(ddl)
        src = db.source("t")
        sub = db.subscribe("w")
        src.push(table)
        src.watermark(FINAL_WATERMARK)
        db.run_until_idle()
        first = sub.to_arrow_table()
        src.watermark(FINAL_WATERMARK)
        db.run_until_idle()
        assert sub.to_arrow_table().num_rows == 0
    names, expected = duck(
        "SELECT k, ts - ((ts % 1000) + 1000) % 1000 AS window_start, COUNT(*) AS n "
        "FROM t GROUP BY ALL",
        t=table,
    )
    assert_same_rows(rows_of(first, names), expected, names)

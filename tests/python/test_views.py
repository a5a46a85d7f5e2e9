"""Materialized views, ad-hoc SELECT, named sinks, EXPLAIN and ${VAR} substitution.

Oracles: DuckDB over the same rows (a view over a tumbling aggregate equals
DuckDB's GROUP BY; SELECT ... ORDER BY ... NULLS FIRST|LAST LIMIT/OFFSET over a
view equals the same query in DuckDB, row for row) and, for changelog input, a
Python model of the Z-set (hypothesis draws the insert/retract sequences).
"""

from __future__ import annotations

import collections
import math

import numpy as np
import pyarrow as pa
import pytest
from _oracle_util import (
    FINAL_WATERMARK,
    assert_same_rows,
    duck,
    examples,
    rows_of,
    split_batches,
    values_equal,
    window_table,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import laminardb

WINDOW_SOURCE = (
    "CREATE SOURCE t (k VARCHAR, g BIGINT, x BIGINT, y DOUBLE, s VARCHAR, ts BIGINT, "
    "WATERMARK FOR ts AS ts - INTERVAL '{delay}' MILLISECOND)"
)


def _push_all(db: laminardb.Connection, batches: list[pa.RecordBatch], *, close: bool) -> None:
    source = db.source("t")
    for batch in batches:
        source.push(batch)
        db.run_until_idle()
    if close:
        source.watermark(FINAL_WATERMARK)
    db.run_until_idle()


# ---------------------------------------------------------------------------
# Views over aggregates and cascades, against DuckDB
# ---------------------------------------------------------------------------


def test_view_over_tumbling_aggregate_equals_duckdb(rng: np.random.Generator) -> None:
    data = window_table(rng, rows=2500)
    size = data.size_ms
    with laminardb.open() as db:
        db.execute(
            WINDOW_SOURCE.format(delay=data.delay_ms) + ";"
            "CREATE STREAM w AS SELECT k, window_start, COUNT(*) AS n, SUM(x) AS sx, "
            "MIN(y) AS mny, MAX(s) AS mxs FROM t "
            f"GROUP BY k, tumble(ts, INTERVAL '{size}' MILLISECOND);"
            "CREATE MATERIALIZED VIEW wv AS SELECT * FROM w;"
            # Cascade: windows ten times as wide, built from w's rows.
            "CREATE STREAM w10 AS SELECT k, window_start, SUM(n) AS n, SUM(sx) AS sx FROM w "
            f"GROUP BY k, tumble(window_start, INTERVAL '{10 * size}' MILLISECOND);"
            "CREATE MATERIALIZED VIEW w10v AS SELECT k, window_start, n, sx FROM w10"
        )
        _push_all(db, split_batches(rng, data.table), close=True)
        got = db.query("SELECT * FROM wv")
        got10 = db.query("SELECT * FROM w10v WHERE n > 0")
        assert db.late_rows("w") == 0
    start = f"(ts - (((ts % {size}) + {size}) % {size}))"
    names, want = duck(
        f"SELECT k, {start} AS ws, COUNT(*), SUM(x), MIN(y), MAX(s) FROM t GROUP BY k, ws",
        t=data.table,
    )
    assert_same_rows(rows_of(got, got.column_names), want, names)
    big = 10 * size
    start10 = f"(ts - (((ts % {big}) + {big}) % {big}))"
    names, want10 = duck(
        f"SELECT k, {start10} AS ws, COUNT(*), SUM(x) FROM t GROUP BY k, ws", t=data.table
    )
    assert_same_rows(rows_of(got10, got10.column_names), want10, names)


# ---------------------------------------------------------------------------
# SELECT ... ORDER BY ... LIMIT ... OFFSET over a view, against DuckDB
# ---------------------------------------------------------------------------

#: Each query lists every column last in ORDER BY, so only identical rows tie.
ORDERED_QUERIES = [
    "SELECT * FROM mv ORDER BY k, g, x, y, s, ts",
    "SELECT * FROM mv ORDER BY k DESC, g DESC, x DESC, y DESC, s DESC, ts DESC",
    "SELECT k, x FROM mv ORDER BY x DESC NULLS FIRST, k NULLS LAST, g, y, s, ts LIMIT 50",
    "SELECT s, y * 2 AS y2 FROM mv WHERE x > 0 "
    "ORDER BY s DESC, y2 NULLS FIRST, k, g, x, ts LIMIT 20 OFFSET 5",
    "SELECT k, g FROM mv WHERE k IS NOT NULL ORDER BY 2 DESC, 1, x, y, s, ts OFFSET 7",
    "SELECT * FROM mv ORDER BY y NULLS FIRST, k DESC NULLS FIRST, g, x, s, ts LIMIT 1000",
    "SELECT k || '-' || s AS ks, x FROM mv WHERE s <> '' OR s IS NULL "
    "ORDER BY ks NULLS FIRST, x DESC NULLS LAST, k, g, y, s, ts",
    "SELECT CASE WHEN x < 0 THEN 'neg' ELSE 'pos' END AS sign, coalesce(x, -1) AS cx "
    "FROM mv ORDER BY sign, cx, k, g, x, y, s, ts LIMIT 100 OFFSET 3",
    "SELECT g FROM mv ORDER BY g DESC LIMIT 30",
    "SELECT x FROM mv ORDER BY x NULLS FIRST LIMIT 10 OFFSET 2",
    "SELECT y FROM mv ORDER BY y DESC NULLS FIRST",
    "SELECT ts, x FROM mv WHERE x BETWEEN -100 AND 100 ORDER BY ts, x, k, g, y, s LIMIT 5",
    "SELECT k FROM mv ORDER BY k LIMIT 0",
    "SELECT k FROM mv ORDER BY k OFFSET 100000",
]


def _with_specials(table: pa.Table, rng: np.random.Generator) -> pa.Table:
    """Add rows with NaN, -0.0, 0.0, infinities and exact duplicates."""
    n = 12
    extra = pa.table(
        {
            "k": pa.array(["nan", "nz", "pz", "inf", "ninf", None] * 2, type=pa.string()),
            "g": pa.array([1] * n, type=pa.int64()),
            "x": pa.array([5] * n, type=pa.int64()),
            "y": pa.array([math.nan, -0.0, 0.0, math.inf, -math.inf, None] * 2, type=pa.float64()),
            "s": pa.array(["é", "e", "E", "", "ß", None] * 2, type=pa.string()),
            "ts": pa.array([7] * n, type=pa.int64()),
        }
    )
    return pa.concat_tables([table, extra, table.slice(0, int(rng.integers(0, 50)))])


def test_select_order_by_limit_matches_duckdb(rng: np.random.Generator) -> None:
    table = _with_specials(window_table(rng, rows=1500).table, rng)
    with laminardb.open() as db:
        db.execute(
            "CREATE SOURCE t (k VARCHAR, g BIGINT, x BIGINT, y DOUBLE, s VARCHAR, ts BIGINT);"
            "CREATE MATERIALIZED VIEW mv AS SELECT * FROM t"
        )
        _push_all(db, split_batches(rng, table), close=False)
        for sql in ORDERED_QUERIES:
            got = db.query(sql)
            names, want = duck(sql.replace("FROM mv", "FROM t"), t=table)
            assert got.column_names == names, sql
            got_rows = rows_of(got, got.column_names)
            assert len(got_rows) == len(want), sql
            for i, (a, b) in enumerate(zip(got_rows, want)):
                assert all(values_equal(x, y) for x, y in zip(a, b)), (
                    f"{sql}\nrow {i}: LaminarDB {a}, DuckDB {b}"
                )


# ---------------------------------------------------------------------------
# Changelog input: random inserts and retractions against a Python Z-set
# ---------------------------------------------------------------------------

KEYS = st.sampled_from(["a", "b", "c", None])
VALUES = st.one_of(st.none(), st.integers(-2, 3))
WEIGHTS = st.one_of(st.integers(-3, 3), st.none())
DELTA = st.tuples(KEYS, VALUES, WEIGHTS)
BATCHES = st.lists(st.lists(DELTA, min_size=0, max_size=12), min_size=1, max_size=8)


class ZSet:
    """The view's specification: rows with multiplicities, applied row by row.

    A weight takes a row's multiplicity up or down; below zero it stops at zero
    and counts one error, as does a NULL weight (ignored).
    """

    def __init__(self) -> None:
        self.rows: collections.Counter[tuple] = collections.Counter()
        self.errors = 0

    def apply(self, row: tuple, weight: int | None) -> None:
        if weight is None:
            self.errors += 1
            return
        now = self.rows[row] + weight
        if now < 0:
            self.errors += 1
            now = 0
        self.rows[row] = now
        if now == 0:
            del self.rows[row]


def _bag(table: pa.Table) -> collections.Counter[tuple]:
    return collections.Counter(rows_of(table, table.column_names))


def _consolidate(batches: list[pa.RecordBatch]) -> collections.Counter[tuple]:
    total: collections.Counter[tuple] = collections.Counter()
    for batch in batches:
        for *row, weight in rows_of(pa.Table.from_batches([batch]), batch.schema.names):
            total[tuple(row)] += weight
    return +total  # drops zero entries (and would drop negatives: none may remain)


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches=BATCHES)
def test_random_changelog_matches_zset_model(batches: list[list[tuple]]) -> None:
    whole, positive, cascade = ZSet(), ZSet(), ZSet()
    schema = pa.schema([("k", pa.string()), ("v", pa.int64()), ("_weight", pa.int64())])
    with laminardb.open() as db:
        db.execute(
            "CREATE SOURCE cl (k VARCHAR, v BIGINT, _weight BIGINT);"
            "CREATE MATERIALIZED VIEW mv AS SELECT k, v FROM cl;"
            "CREATE MATERIALIZED VIEW pos AS SELECT k, v * 10 AS v10 FROM cl WHERE v > 0;"
            "CREATE STREAM s AS SELECT k, v FROM mv WHERE k <> 'c' OR k IS NULL;"
            "CREATE MATERIALIZED VIEW mv2 AS SELECT * FROM s"
        )
        sub = db.subscribe("s")
        deltas: list[pa.RecordBatch] = []
        for batch in batches:
            db.insert(
                "cl",
                pa.Table.from_pylist(
                    [{"k": k, "v": v, "_weight": w} for k, v, w in batch], schema=schema
                ),
            )
            db.run_until_idle()
            deltas.extend(iter(lambda: sub.poll(0), None))
            for k, v, w in batch:
                whole.apply((k, v), w)
                if v is not None and v > 0:
                    positive.apply((k, v * 10), w)
            # The cascade sees what mv applied, so it never errs itself.
            cascade.rows = collections.Counter({r: c for r, c in whole.rows.items() if r[0] != "c"})
            assert _bag(db.query("SELECT * FROM mv")) == whole.rows
        assert _bag(db.query("SELECT * FROM pos")) == positive.rows
        assert _bag(db.query("SELECT * FROM mv2")) == cascade.rows
        assert _consolidate(deltas) == cascade.rows
        metrics = {(r["name"], r["metric"]): r["value"] for r in db.metrics().to_pylist()}
        assert metrics[("mv", "retract_errors")] == whole.errors
        assert metrics[("pos", "retract_errors")] == positive.errors
        assert metrics[("mv2", "retract_errors")] == 0
        assert metrics[("mv", "view_rows")] == len(whole.rows)


def test_view_state_survives_restart(tmp_path: object) -> None:
    options = {"checkpoint_interval": "1 hour", "wal_mode": "sync"}
    with laminardb.open(tmp_path, **options) as db:
        db.execute(
            "CREATE SOURCE cl (k VARCHAR, v BIGINT, _weight BIGINT);"
            "CREATE MATERIALIZED VIEW mv AS SELECT k, v FROM cl;"
            "CREATE SINK feed FROM mv"
        )
        db.insert("cl", {"k": ["a", "a", "b"], "v": [1, 1, 2], "_weight": [1, 1, 1]})
        db.run_until_idle()
        db.checkpoint()  # the view's rows go into the checkpoint ...
        db.insert("cl", {"k": ["a", "zz"], "v": [1, 9], "_weight": [-1, -1]})
        db.run_until_idle()  # ... these two only into the WAL
        before = db.query("SELECT * FROM mv ORDER BY k")
    with laminardb.open(tmp_path, **options) as db:
        db.run_until_idle()
        assert db.query("SELECT * FROM mv ORDER BY k") == before
        assert before.to_pylist() == [{"k": "a", "v": 1}, {"k": "b", "v": 2}]
        metrics = {(r["name"], r["metric"]): r["value"] for r in db.metrics().to_pylist()}
        assert metrics[("mv", "retract_errors")] == 1
        assert db.query("SHOW SINKS").to_pylist() == [
            {"name": "feed", "input": "mv", "kind": "subscribe"}
        ]


def test_select_while_running_and_sink_subscription() -> None:
    with laminardb.open() as db:
        db.execute(
            "CREATE SOURCE t (k VARCHAR, v BIGINT);"
            "CREATE MATERIALIZED VIEW mv AS SELECT k, SUM(v) AS total, window_start FROM t "
            "GROUP BY k, tumble(v, INTERVAL '100' MILLISECOND);"
            "CREATE SINK changes FROM mv"
        )
        sub = db.subscribe("changes")
        assert sub.schema.names == ["k", "total", "window_start", "_weight"]
        db.start()
        db.insert("t", {"k": ["a", "b", "a"], "v": [10, 20, 150]})
        db.source("t").watermark(100)
        db.stop()  # finishes what is queued
        db.start()
        assert db.query("SELECT k, total FROM mv ORDER BY k").to_pylist() == [
            {"k": "a", "total": 10},
            {"k": "b", "total": 20},
        ]
        batch = sub.poll(5)
        assert batch is not None
        assert batch.column("_weight").to_pylist() == [1, 1]
        db.stop()


# ---------------------------------------------------------------------------
# Errors, EXPLAIN, variables
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sql", "code", "line", "column"),
    [
        ("SELECT k FROM s", "LDB-1030", 1, 15),
        ("SELECT k\nFROM t", "LDB-1030", 2, 6),
        ("SELECT k FROM nothing", "LDB-1002", 1, 15),
        ("SELECT k FROM mv ORDER BY 9", "LDB-1003", 1, 27),
        ("SELECT sum(v) FROM mv", "LDB-1005", 1, 8),
        ("SELECT k FROM mv WHERE k = ${MISSING}", "LDB-1031", 1, 28),
        ("SELECT k FROM mv LIMIT 'x'", "LDB-1001", 1, 24),
        ("EXPLAIN missing", "LDB-1002", 1, 9),
    ],
)
def test_query_errors(sql: str, code: str, line: int, column: int) -> None:
    with laminardb.open() as db:
        db.execute(
            "CREATE SOURCE t (k VARCHAR, v BIGINT); CREATE STREAM s AS SELECT k FROM t;"
            "CREATE MATERIALIZED VIEW mv AS SELECT k, v FROM t"
        )
        db.insert("t", {"k": ["a"], "v": [1]})
        db.run_until_idle()
        with pytest.raises(laminardb.SQLError) as info:
            db.query(sql)
        assert (info.value.code, info.value.line, info.value.column) == (code, line, column)
        assert f"line {line}, column {column}" in str(info.value)
        # Nothing was lost: the view still answers.
        assert db.query("SELECT k, v FROM mv").to_pylist() == [{"k": "a", "v": 1}]


def test_explain_lists_operators() -> None:
    with laminardb.open() as db:
        db.execute(
            "CREATE SOURCE t (k VARCHAR, v BIGINT, ts BIGINT);"
            "CREATE STREAM w AS SELECT k, COUNT(*) AS n FROM t WHERE v > 0 "
            "GROUP BY k, tumble(ts, INTERVAL '1' MINUTE);"
            "CREATE MATERIALIZED VIEW mv AS SELECT k, n FROM w"
        )
        table = db.query("EXPLAIN mv")
        assert table.column_names == ["id", "operator", "details", "input", "output", "section"]
        plan = table.to_pylist()
        assert [r["operator"] for r in plan if r["section"] == "logical"] == [
            "stream",
            "project",
            "materialize",
            "output",
        ]
        assert [r["operator"] for r in plan if r["section"] == "physical"] == [
            "chain",
            "partitioning",
            "two_phase",
        ]
        assert plan[4]["details"].startswith("map -> materialize")
        plan = db.query("EXPLAIN w").to_pylist()
        logical = [r for r in plan if r["section"] == "logical"]
        assert [r["operator"] for r in logical] == [
            "source",
            "window_aggregate",
            "project",
            "output",
        ]
        assert "tumble(ts, 60000 ms) GROUP BY k" in plan[1]["details"]
        assert [(r["input"], r["output"]) for r in logical] == [
            ("push", "2"),
            ("1", "3"),
            ("2", "4"),
            ("3", "materialized view mv"),
        ]
        physical = {r["operator"]: r for r in plan if r["section"] == "physical"}
        assert physical["chain"]["details"].startswith("window -> map")
        assert physical["partitioning"]["details"] == "unpartitioned: cores = 1"
        assert physical["two_phase"]["details"].startswith("split: ")
        sql = "EXPLAIN CREATE MATERIALIZED VIEW x AS SELECT k FROM t WHERE v < 0"
        plan = db.query(sql).to_pylist()
        assert [r["operator"] for r in plan if r["section"] == "logical"] == [
            "source",
            "filter",
            "project",
            "materialize",
            "output",
        ]
        assert db.query("SHOW VIEWS").column("name").to_pylist() == ["mv"]


def test_variables_from_open_and_config() -> None:
    with laminardb.open(vars={"SRC": "trades", "MIN": 2}, config={"var.VIEW": "big"}) as db:
        db.execute(
            "CREATE SOURCE ${SRC} (k VARCHAR, v BIGINT);"
            "CREATE MATERIALIZED VIEW ${VIEW} AS SELECT k, v FROM ${SRC} WHERE v >= ${MIN}"
        )
        db.insert("trades", {"k": ["a", "b", "c"], "v": [1, 2, 3]})
        db.run_until_idle()
        got = db.query("SELECT k, '$${SRC}' AS raw FROM ${VIEW} ORDER BY k")
        assert got.to_pylist() == [{"k": "b", "raw": "${SRC}"}, {"k": "c", "raw": "${SRC}"}]
        with pytest.raises(laminardb.SQLError) as info:
            db.execute("DROP SOURCE\n  ${NOPE}")
        assert (info.value.code, info.value.line, info.value.column) == ("LDB-1031", 2, 3)
    with pytest.raises(laminardb.ConfigError) as bad:
        laminardb.open(vars={"not-a-name": 1})
    assert bad.value.code == "LDB-6001"

"""SELECT DISTINCT and DISTINCT ON against DuckDB (issue 25 item 4).

Windowed (``GROUP BY tumble/hop(...)``): one row per distinct tuple per window
at the window's close. Without a window: a changelog (``_weight``) in which a
tuple's ``+1`` comes when it is first seen and, over a changelog input, its
``-1`` when its last row is retracted; an insert-only input gives only ``+1``
rows, each tuple once. ``DISTINCT ON (k)`` keeps each key's first row by event
time (its last with ``ORDER BY k, ts DESC``) per window, or its first by
arrival without a window; a SELECT over a view or table applies DISTINCT and
DISTINCT ON to its rows as DuckDB does.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from _oracle_util import (
    announce_seed,
    duck,
    examples,
    rows_of,
    run_engine,
    seed_strategy_bounds,
    split_batches,
    window_table,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from test_emit_changes import Deltas, random_window
from test_quantile_aggs import SOURCE
from test_windows import arrival_watermarks, hop_oracle

import laminardb

SEEDS = st.integers(*seed_strategy_bounds())

#: (ours, DuckDB's, alias): the distinct items besides the window.
ITEMS = [("k", "k", "k"), ("x % 3", "x % 3", "m"), ("s", "s", "s")]


def _items(*, duckdb_side: bool) -> str:
    return ", ".join(f"{d if duckdb_side else o} AS {a}" for o, d, a in ITEMS)


def _sorted(rows: list[tuple]) -> list[tuple]:
    return sorted(rows, key=lambda r: tuple((v is None, "" if v is None else str(v)) for v in r))


@pytest.mark.parametrize("cores", [1, 2])
@settings(max_examples=examples(10), deadline=None)
@given(seed=SEEDS)
def test_windowed_distinct_matches_duckdb(cores, seed):
    """One row per distinct (k, x % 3, s) per tumbling or hopping window."""
    announce_seed(seed)
    rng = np.random.default_rng(seed)
    size, hop, window = random_window(rng)
    data = window_table(rng, size_ms=size, keys=int(rng.integers(1, 20)))
    ddl = SOURCE.format(delay=data.delay_ms) + (
        f"CREATE STREAM w AS SELECT DISTINCT window_start, {_items(duckdb_side=False)} "
        f"FROM t GROUP BY {window};"
    )
    batches = split_batches(rng, data.table)
    result = run_engine(ddl, batches, cores=cores)
    assert result.late_rows == 0
    keys = [f"{d} AS {a}" for _, d, a in ITEMS]
    oracle = hop_oracle(keys, "", size, hop, 0, aggregates=[("count(*)", "count(*)", "n")])
    names, expected = duck(oracle, t=arrival_watermarks(batches, data.delay_ms))
    columns = ["window_start", *(a for _, _, a in ITEMS)]
    expected = [tuple(row[names.index(c)] for c in columns) for row in expected]
    got = rows_of(result.table, columns)
    assert len(set(got)) == len(got), f"seed {seed}: a tuple twice in one window"
    assert _sorted(got) == _sorted(expected), f"seed {seed}"


@pytest.mark.parametrize("cores", [1, 2])
@settings(max_examples=examples(10), deadline=None)
@given(seed=SEEDS)
def test_running_distinct_emits_each_tuple_once(cores, seed):
    """Without a window every delta is a +1 of a tuple not seen before, and
    after each batch they add up to DuckDB's SELECT DISTINCT of the rows so far."""
    announce_seed(seed)
    rng = np.random.default_rng(seed)
    data = window_table(rng, rows=int(rng.integers(1, 2000)), keys=int(rng.integers(1, 30)))
    ddl = SOURCE.format(delay=0) + (
        f"CREATE STREAM w AS SELECT DISTINCT {_items(duckdb_side=False)} FROM t;"
    )
    oracle = f"SELECT DISTINCT {_items(duckdb_side=True)} FROM t"
    columns = [a for _, _, a in ITEMS]
    batches = split_batches(rng, data.table, max_rows=400)
    with laminardb.open(cores=cores) as db:
        db.execute(ddl)
        sub = db.subscribe("w")
        seen: list[tuple] = []
        src = db.source("t")
        for i, batch in enumerate(batches):
            src.push(batch)
            db.run_until_idle()
            while (b := sub.poll(0)) is not None:
                table = pa.Table.from_batches([b])
                assert set(table.column("_weight").to_pylist()) <= {1}, seed
                seen.extend(rows_of(table, columns))
            _, expected = duck(oracle, t=pa.Table.from_batches(batches[: i + 1]))
            assert _sorted(seen) == _sorted(expected), f"seed {seed}: batch {i}"


@settings(max_examples=examples(10), deadline=None)
@given(seed=SEEDS)
def test_distinct_over_a_changelog_retracts(seed):
    """Over an EMIT CHANGES input a tuple leaves (-1) when its last row is retracted."""
    announce_seed(seed)
    rng = np.random.default_rng(seed)
    data = window_table(rng, rows=int(rng.integers(1, 1500)), keys=int(rng.integers(2, 40)))
    inner = "SELECT k, g, SUM(x) % 5 AS v FROM t GROUP BY k, g"
    ddl = SOURCE.format(delay=0) + (
        f"CREATE STREAM u AS {inner} EMIT CHANGES;CREATE STREAM w AS SELECT DISTINCT g, v FROM u;"
    )
    oracle = f"SELECT DISTINCT g, v FROM ({inner})"
    batches = split_batches(rng, data.table, max_rows=300)
    with laminardb.open() as db:
        db.execute(ddl)
        deltas = Deltas(db.subscribe("w"), ["g", "v"])
        src = db.source("t")
        for i, batch in enumerate(batches):
            src.push(batch)
            db.run_until_idle()
            deltas.take()
            _, expected = duck(oracle, t=pa.Table.from_batches(batches[: i + 1]))
            assert _sorted(deltas.current()) == _sorted(expected), f"seed {seed}: batch {i}"


@pytest.mark.parametrize(
    ("stream", "why"),
    [
        ("SELECT DISTINCT * FROM t", "name the columns"),
        ("SELECT DISTINCT k, count(*) AS n FROM t GROUP BY k", "over aggregates"),
        ("SELECT DISTINCT k FROM t GROUP BY k", "GROUP BY may hold the window only"),
        (
            "SELECT DISTINCT k FROM t GROUP BY tumble(ts, INTERVAL '1' SECOND) HAVING k > 'a'",
            "no HAVING",
        ),
    ],
)
def test_distinct_refusals(stream, why):
    with laminardb.open() as db:
        db.execute(SOURCE.format(delay=0))
        with pytest.raises(laminardb.SQLError) as e:
            db.execute(f"CREATE STREAM w AS {stream}")
        assert e.value.code == "LDB-1005"
        assert why in str(e.value)
        db.execute("CREATE STREAM w AS SELECT DISTINCT k FROM t")


def test_windowed_distinct_does_not_split_in_two_phases():
    with laminardb.open() as db:
        db.execute(
            SOURCE.format(delay=0) + "CREATE STREAM w AS SELECT DISTINCT k, window_start "
            "FROM t GROUP BY tumble(ts, INTERVAL '1' SECOND);"
        )
        with pytest.raises(laminardb.SQLError) as e:
            db.two_phase("w")
        assert e.value.code == "LDB-1005"
        assert "SELECT DISTINCT does not decompose" in str(e.value)


def _distinct_on_oracle(size: int, hop: int, direction: str) -> str:
    """DuckDB: per window and k, the row of least (ts, push order) -- or greatest
    with DESC -- among the rows not late (``wm`` from arrival_watermarks)."""
    per = -(-size // hop)
    newest = f"(ts - ((ts % {hop}) + {hop}) % {hop})"
    return f"""
        WITH pairs AS (
          SELECT t.*, {newest} - j * {hop} AS ws
          FROM t, (SELECT unnest(range(0, {per})) AS j) WHERE ts IS NOT NULL
        )
        SELECT DISTINCT ON (ws, k) ws AS window_start, k, x, s, ts FROM pairs
        WHERE ws > ts - {size} AND ws + {size} > wm
        ORDER BY ws, k, ts {direction}, seq {direction}"""


@pytest.mark.parametrize("cores", [1, 2])
@pytest.mark.parametrize("direction", ["ASC", "DESC"])
@settings(max_examples=examples(8), deadline=None)
@given(seed=SEEDS)
def test_windowed_distinct_on_matches_duckdb(cores, direction, seed):
    """DISTINCT ON (k) per tumbling or hopping window: the key's first (ASC) or
    last (DESC) row by event time, ties by arrival."""
    announce_seed(seed)
    rng = np.random.default_rng(seed)
    size, hop, window = random_window(rng)
    data = window_table(rng, size_ms=size, keys=int(rng.integers(1, 20)))
    order = "" if direction == "ASC" and rng.random() < 0.5 else f" ORDER BY k, ts {direction}"
    ddl = SOURCE.format(delay=data.delay_ms) + (
        "CREATE STREAM w AS SELECT DISTINCT ON (k) window_start, k, x, s, ts "
        f"FROM t GROUP BY {window}{order};"
    )
    batches = split_batches(rng, data.table)
    result = run_engine(ddl, batches, cores=cores)
    assert result.late_rows == 0
    columns = ["window_start", "k", "x", "s", "ts"]
    _, expected = duck(
        _distinct_on_oracle(size, hop, direction), t=arrival_watermarks(batches, data.delay_ms)
    )
    got = rows_of(result.table, columns)
    assert _sorted(got) == _sorted(expected), f"seed {seed}"


@pytest.mark.parametrize("cores", [1, 2])
@settings(max_examples=examples(8), deadline=None)
@given(seed=SEEDS)
def test_running_distinct_on_keeps_each_keys_first_row(cores, seed):
    """Without a window: each key's first row by arrival (the changelog may
    re-send an unchanged row as -1/+1; it adds up to one row per key), after
    every batch."""
    announce_seed(seed)
    rng = np.random.default_rng(seed)
    data = window_table(rng, rows=int(rng.integers(1, 2000)), keys=int(rng.integers(1, 30)))
    ddl = SOURCE.format(delay=0) + "CREATE STREAM w AS SELECT DISTINCT ON (k, g) * FROM t;"
    columns = ["k", "g", "x", "y", "s", "ts"]
    batches = split_batches(rng, data.table, max_rows=400)
    oracle = f"SELECT DISTINCT ON (k, g) {', '.join(columns)} FROM t ORDER BY k, g, seq"
    with laminardb.open(cores=cores) as db:
        db.execute(ddl)
        deltas = Deltas(db.subscribe("w"), columns)
        for i, batch in enumerate(batches):
            db.source("t").push(batch)
            db.run_until_idle()
            deltas.take()
            so_far = pa.Table.from_batches(batches[: i + 1])
            so_far = so_far.append_column("seq", pa.array(range(so_far.num_rows), pa.int64()))
            _, expected = duck(oracle, t=so_far)
            assert _sorted(deltas.current()) == _sorted(expected), f"seed {seed}: batch {i}"


#: (query over the table r, whether its order is total): DuckDB gives the same rows.
SELECTS = [
    ("SELECT DISTINCT g, s FROM r", False),
    ("SELECT DISTINCT g, s FROM r ORDER BY s DESC, g LIMIT 5", True),
    ("SELECT DISTINCT x % 3 AS m FROM r ORDER BY 1 NULLS FIRST", True),
    ("SELECT DISTINCT ON (g) g, id, x FROM r ORDER BY g, x DESC NULLS LAST, id", True),
    ("SELECT DISTINCT ON (s) * FROM r ORDER BY s, id DESC", True),
    ("SELECT DISTINCT ON (g, s) id FROM r WHERE x > 0 ORDER BY g, s, id LIMIT 4 OFFSET 1", True),
    ("SELECT DISTINCT ON (g) g, id FROM r ORDER BY g DESC, id", True),
]


@settings(max_examples=examples(15), deadline=None)
@given(seed=SEEDS)
def test_select_distinct_over_a_table_matches_duckdb(seed):
    """Ad-hoc SELECT DISTINCT [ON] over a table's current rows."""
    announce_seed(seed)
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 300))
    rows = pa.table(
        {
            "id": pa.array(rng.permutation(n), pa.int64()),
            "g": pa.array(rng.integers(0, 4, n), mask=rng.random(n) < 0.1, type=pa.int64()),
            "s": pa.array(
                rng.choice(["a", "b", "", "zz"], n).astype(object),
                mask=rng.random(n) < 0.1,
                type=pa.string(),
            ),
            "x": pa.array(rng.integers(-5, 6, n), mask=rng.random(n) < 0.2, type=pa.int64()),
        }
    )
    with laminardb.open() as db:
        db.execute("CREATE TABLE r (id BIGINT PRIMARY KEY, g BIGINT, s VARCHAR, x BIGINT)")
        if n:
            db.upsert("r", rows)
        db.run_until_idle()
        for sql, total in SELECTS:
            got = db.query(sql)
            names, expected = duck(sql, r=rows)
            got_rows = rows_of(got, names)
            if total:
                assert got_rows == expected, f"seed {seed}: {sql}"
            else:
                assert _sorted(got_rows) == _sorted(expected), f"seed {seed}: {sql}"


@pytest.mark.parametrize(
    ("sql", "code", "where"),
    [
        (
            "CREATE STREAM e AS SELECT DISTINCT ON (k) k, x FROM t ORDER BY x",
            "LDB-1005",
            (1, 64),
        ),
        (
            "CREATE STREAM e AS SELECT DISTINCT ON (k) k, x FROM t "
            "GROUP BY tumble(ts, INTERVAL '1' SECOND) ORDER BY k, x",
            "LDB-1005",
            (1, 108),
        ),
        ("CREATE STREAM e AS SELECT DISTINCT ON (count(*)) k FROM t", "LDB-1005", (1, 40)),
        ("SELECT DISTINCT g FROM r ORDER BY id", "LDB-1006", (1, 35)),
    ],
)
def test_distinct_on_refusals(sql, code, where):
    with laminardb.open() as db:
        db.execute(SOURCE.format(delay=0))
        db.execute("CREATE TABLE r (id BIGINT PRIMARY KEY, g BIGINT)")
        with pytest.raises(laminardb.SQLError) as e:
            db.execute(sql) if sql.startswith("CREATE") else db.query(sql)
        assert e.value.code == code
        assert (e.value.line, e.value.column) == where

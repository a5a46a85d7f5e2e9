"""SELECT DISTINCT on streams against DuckDB (issue 25 item 4).

Windowed (``GROUP BY tumble/hop(...)``): one row per distinct tuple per window
at the window's close. Without a window: a changelog (``_weight``) in which a
tuple's ``+1`` comes when it is first seen and, over a changelog input, its
``-1`` when its last row is retracted; an insert-only input gives only ``+1``
rows, each tuple once.
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

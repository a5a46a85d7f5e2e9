"""Thread-per-core: ``cores = 2`` gives what ``cores = 1`` gives.

The SQL suite's stream shapes (tumbling with the oracle's aggregates and
filters, hop, session, EMIT CHANGES running and windowed, late rows) run on
one reactor and on two or three (inline and with the reactor threads); the
outputs must hold the same rows and, per key, the same rows in the same order
(partitions concatenate per message, so rows of different keys may
interleave differently). Float aggregates are compared exactly: each key's
rows are aggregated in the same order whatever the partition.

The whole oracle suite can also run on two reactors: ``LAMINAR_TEST_CORES=2``
makes every in-memory ``laminardb.open()`` of the tests use ``cores = 2``
(conftest.py).
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pyarrow as pa
import pytest
from _oracle_util import (
    EngineResult,
    announce_seed,
    examples,
    run_engine,
    seed_strategy_bounds,
    split_batches,
    window_table,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from test_oracle import AGGREGATES, GROUPINGS, WINDOW_FILTERS, window_case

import laminardb

SEEDS = st.integers(*seed_strategy_bounds())

SOURCE = (
    "CREATE SOURCE t (k VARCHAR, g BIGINT, x BIGINT, y DOUBLE, s VARCHAR, ts BIGINT,"
    " WATERMARK FOR ts AS ts - INTERVAL '{delay}' MILLISECOND);"
)


def per_key(table: pa.Table, keys: list[str]) -> dict[tuple, list[tuple]]:
    """Rows grouped by ``keys``, each group in arrival order."""
    groups: dict[tuple, list[tuple]] = defaultdict(list)
    for row in table.to_pylist():
        groups[tuple(row[k] for k in keys)].append(tuple(row.values()))
    return dict(groups)


def assert_same(one: EngineResult, many: EngineResult, keys: list[str], seed: int) -> None:
    """Same schema, same late rows, and per key the same rows in the same order."""
    assert one.table.schema == many.table.schema
    assert one.late_rows == many.late_rows, seed
    assert one.table.num_rows == many.table.num_rows, seed
    assert per_key(one.table, keys) == per_key(many.table, keys), seed


def compare(ddl: str, batches: list[pa.RecordBatch], keys: list[str], seed: int,
            run_every: int = 1) -> EngineResult:
    """Run on 1 core inline, then 2 cores inline and threaded, 3 cores inline."""
    one = run_engine(ddl, batches, run_every=run_every)
    for cores, driver in [(2, "inline"), (2, "threaded"), (3, "inline")]:
        many = run_engine(ddl, batches, run_every=run_every, driver=driver, cores=cores)
        assert_same(one, many, keys, seed)
    return one


@settings(max_examples=examples(15), deadline=None)
@given(seed=SEEDS)
def test_tumbling_oracle_cases_agree(seed):
    """test_oracle's window cases (every aggregate, its filters and groupings)."""
    announce_seed(seed)
    case = window_case(seed)
    keys = case["columns"][: case["columns"].index("window_start") + 1]
    batches = split_batches(case["rng"], case["data"].table)
    one = compare(case["ddl"], batches, keys, seed, run_every=int(case["rng"].choice([1, 3])))
    assert one.table.num_rows > 0 or case["data"].table.num_rows == 0


@settings(max_examples=examples(10), deadline=None)
@given(seed=SEEDS)
def test_hop_and_session_agree(seed):
    """Hopping (panes) and session windows, out-of-order rows within the delay."""
    announce_seed(seed)
    rng = np.random.default_rng(seed)
    size = int(rng.choice([10, 100, 1000]))
    data = window_table(rng, size_ms=size)
    keys = GROUPINGS[int(rng.integers(len(GROUPINGS)))]
    where = WINDOW_FILTERS[int(rng.integers(len(WINDOW_FILTERS)))]
    items = ", ".join(f"{ours} AS {alias}" for ours, _, alias in AGGREGATES[:10])
    hop = int(rng.choice([size // 2, size // 5]))
    window = (
        f"hop(ts, INTERVAL '{size}' MILLISECOND, INTERVAL '{hop}' MILLISECOND)"
        if rng.integers(2)
        else f"session(ts, INTERVAL '{int(rng.integers(1, 3 * size + 1))}' MILLISECOND)"
    )
    ddl = SOURCE.format(delay=data.delay_ms) + (
        f"CREATE STREAM w AS SELECT {', '.join(keys)}, window_start, window_end, {items} "
        f"FROM t {where} GROUP BY {', '.join(keys)}, {window};"
    )
    print(f"case: {window} keys={keys} {where!r}")
    compare(ddl, split_batches(rng, data.table), [*keys, "window_start"], seed)


@pytest.mark.parametrize("windowed", [False, True])
@settings(max_examples=examples(10), deadline=None)
@given(seed=SEEDS)
def test_emit_changes_agree(windowed, seed):
    """EMIT CHANGES (running GROUP BY and tumbling): the same -1/+1 deltas per key."""
    announce_seed(seed)
    rng = np.random.default_rng(seed)
    data = window_table(rng, rows=int(rng.integers(1, 2500)), size_ms=100)
    keys = GROUPINGS[int(rng.integers(len(GROUPINGS)))]
    items = ", ".join(f"{ours} AS {alias}" for ours, _, alias in AGGREGATES)
    window = ", tumble(ts, INTERVAL '100' MILLISECOND)" if windowed else ""
    bounds = "window_start, " if windowed else ""
    ddl = SOURCE.format(delay=data.delay_ms) + (
        f"CREATE STREAM w AS SELECT {', '.join(keys)}, {bounds}{items} "
        f"FROM t GROUP BY {', '.join(keys)}{window} EMIT CHANGES;"
    )
    key_cols = [*keys, "window_start"] if windowed else keys
    compare(ddl, split_batches(rng, data.table, max_rows=400), key_cols, seed)


def test_late_rows_and_mixed_streams_agree():
    """Late rows are counted once over the partitions; a keyed stream, a plain
    stream and a stream reading the keyed one, side by side on one source."""
    rng = np.random.default_rng(7)
    data = window_table(rng, rows=20_000, keys=300, size_ms=100)
    table = data.table
    ts = table.column("ts").to_numpy().copy()
    late = rng.random(len(ts)) < 0.03
    ts[late] -= 10 * 100 + data.delay_ms
    table = table.set_column(table.schema.get_field_index("ts"), "ts", pa.array(ts))
    ddl = SOURCE.format(delay=data.delay_ms) + (
        "CREATE STREAM w AS SELECT k, window_start, COUNT(*) AS n, SUM(x) AS sx "
        "FROM t GROUP BY k, tumble(ts, INTERVAL '100' MILLISECOND);"
        "CREATE STREAM plain AS SELECT k, x FROM t WHERE x > 0;"
        "CREATE STREAM big AS SELECT k, window_start, n FROM w WHERE n > 1;"
    )
    batches = split_batches(rng, table, max_rows=1000)
    for stream, keys in [("w", ["k", "window_start"]), ("big", ["k", "window_start"]),
                         ("plain", ["k"])]:
        one = run_engine(ddl, batches, stream=stream)
        if stream == "w":
            assert one.late_rows > 0
        for cores, driver in [(2, "inline"), (2, "threaded")]:
            many = run_engine(ddl, batches, stream=stream, driver=driver, cores=cores)
            assert_same(one, many, keys, seed=7)


def test_keyed_streams_sharing_a_source_agree():
    """Several keyed streams on one source: the router hashes, sorts rows by
    partition and evaluates computed aggregate arguments once per message for
    the first (its partitions get the batch with their rows as a selection);
    a second grouping alike shares the routing but not those arguments, a
    third grouping by other columns routes for itself."""
    rng = np.random.default_rng(11)
    data = window_table(rng, rows=20_000, keys=300, size_ms=100)
    ddl = SOURCE.format(delay=data.delay_ms) + (
        "CREATE STREAM a AS SELECT k, window_start, SUM(x * 2 + 1) AS s, SUM(y * x) AS p,"
        " COUNT(*) AS n FROM t GROUP BY k, tumble(ts, INTERVAL '100' MILLISECOND);"
        "CREATE STREAM b AS SELECT k, window_start, SUM(x - 3) AS s, MAX(y + 1) AS m"
        " FROM t WHERE x > 0 GROUP BY k, hop(ts, INTERVAL '200' MILLISECOND,"
        " INTERVAL '100' MILLISECOND);"
        "CREATE STREAM c AS SELECT g, window_start, SUM(x * g) AS s, MIN(s) AS ms"
        " FROM t GROUP BY g, tumble(ts, INTERVAL '100' MILLISECOND);"
    )
    batches = split_batches(rng, data.table, max_rows=1000)
    for stream, keys in [("a", ["k", "window_start"]), ("b", ["k", "window_start"]),
                         ("c", ["g", "window_start"])]:
        one = run_engine(ddl, batches, stream=stream)
        assert one.table.num_rows > 0
        for cores, driver in [(2, "inline"), (2, "threaded"), (3, "inline")]:
            many = run_engine(ddl, batches, stream=stream, driver=driver, cores=cores)
            assert_same(one, many, keys, seed=11)


def test_partitions_and_reactor_metrics():
    """Which streams are split, and the per-reactor counters."""
    with laminardb.open(cores=2) as db:
        db.execute(
            SOURCE.format(delay=0)
            + "CREATE STREAM w AS SELECT k, COUNT(*) AS n FROM t "
            "GROUP BY k, tumble(ts, INTERVAL '10' MILLISECOND);"
            "CREATE STREAM e AS SELECT COUNT(*) AS n FROM t "
            "GROUP BY ts % 7, tumble(ts, INTERVAL '10' MILLISECOND);"
            "CREATE STREAM p AS SELECT k FROM t;"
            "CREATE MATERIALIZED VIEW v AS SELECT k, COUNT(*) AS n FROM t GROUP BY k;"
        )
        data = window_table(np.random.default_rng(3), rows=5000, keys=50, size_ms=10)
        db.source("t").push(data.table)
        db.run_until_idle()
        m = {(r["kind"], r["name"], r["metric"]): r["value"] for r in db.metrics().to_pylist()}
    assert m[("stream", "w", "partitions")] == 2  # GROUP BY a plain column
    assert m[("stream", "e", "partitions")] == 1  # expression key: reactor 0
    assert m[("stream", "p", "partitions")] == 1  # no state
    assert m[("stream", "v", "partitions")] == 1  # a view's rows stay queryable in one place
    rows = [m[("reactor", str(i), "rows")] for i in range(2)]
    assert all(r > 0 for r in rows), rows
    assert sum(rows) == 5000, rows
    assert m[("reactor", "1", "rounds")] > 0


@pytest.mark.parametrize(
    ("options", "code"),
    [({"cores": 0}, "LDB-6002"), ({"cores": 65}, "LDB-6002"), ({"cores": "x"}, "LDB-6002"),
     ({"core_affinity": "sometimes"}, "LDB-6002")],
)
def test_bad_core_options(options, code):
    with pytest.raises(laminardb.ConfigError, match=code):
        laminardb.open(**options)


def test_pinned_reactors_run():
    """core_affinity pins each reactor (cpu metric) and the data still flows."""
    with laminardb.open(cores=2, core_affinity=True) as db:
        db.execute(SOURCE.format(delay=0) + "CREATE STREAM w AS SELECT k, COUNT(*) AS n "
                   "FROM t GROUP BY k EMIT CHANGES;")
        sub = db.subscribe("w")
        db.start()
        db.source("t").push(window_table(np.random.default_rng(1), rows=1000).table)
        got = sub.recv_timeout(5.0)
        db.stop()
        assert got is not None
        assert got.num_rows > 0
        m = {(r["kind"], r["name"], r["metric"]): r["value"] for r in db.metrics().to_pylist()}
    assert m[("reactor", "0", "cpu")] >= 0
    assert m[("reactor", "1", "cpu")] >= 0

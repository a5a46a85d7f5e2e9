"""Order statistics and sketches against DuckDB (issue 25 item 2, DESIGN §5b).

``median``, ``quantile_cont``, ``quantile_disc`` (``quantile``),
``approx_quantile`` / ``approx_percentile`` and ``approx_count_distinct`` over
random rows (NULLs, zeros, repeated values, strings, one-row groups) in
tumbling, hopping and session windows, as running aggregates (EMIT CHANGES),
over a changelog input (retractions), with one and two cores and across a
checkpoint and restart.

The exact ones are DuckDB's: ``quantile_disc`` equal, ``median`` and
``quantile_cont`` (one interpolation, the same formula) within ``1e-12`` of
the value's magnitude. The approximate ones are held to their documented
bounds (docs/SQL.md): ``approx_quantile(x, q)`` within 1% of DuckDB's
``quantile_disc(x, q)`` (relative to its magnitude, exactly 0 for 0), and
``approx_count_distinct(x)`` within ``5% + 1`` of ``count(DISTINCT x)`` in the
small random groups here, within 3 standard errors (4.9%) over 10^5 values.
"""

from __future__ import annotations

import math
from pathlib import Path

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
from test_emit_changes import random_window
from test_stats_aggs import run_changes, run_with_restart
from test_windows import arrival_watermarks, hop_oracle, session_oracle

import laminardb

SEEDS = st.integers(*seed_strategy_bounds())

#: The quantile sketch's relative accuracy (docs/SQL.md).
SKETCH_ALPHA = 0.01

#: (ours, DuckDB's, alias, kind): kind says how a value is compared.
EXACT = [
    ("median(y)", "median(y)", "med_y", "interp"),
    ("median(x)", "median(x)", "med_x", "interp"),
    ("quantile_cont(y, 0.25)", "quantile_cont(y, 0.25)", "qc_y", "interp"),
    ("quantile_cont(x, 0.9)", "quantile_cont(x, 0.9)", "qc_x", "interp"),
    ("quantile_disc(x, 0.5)", "quantile_disc(x, 0.5)", "qd_x", "exact"),
    ("quantile_disc(y, 0.1)", "quantile_disc(y, 0.1)", "qd_y", "exact"),
    ("quantile(s, 0.75)", "quantile_disc(s, 0.75)", "qd_s", "exact"),
    ("quantile_disc(x, 0)", "quantile_disc(x, 0)", "qd_0", "exact"),
    ("quantile_disc(y, 1)", "quantile_disc(y, 1)", "qd_1", "exact"),
    ("approx_quantile(y, 0.5)", "quantile_disc(y, 0.5)", "aq_y", "sketch"),
    ("approx_percentile(x, 0.99)", "quantile_disc(x, 0.99)", "ap_x", "sketch"),
]

#: Not retractable (refused over a changelog).
HLL = [("approx_count_distinct(s)", "count(DISTINCT s)", "acd_s", "hll")]

ALL = EXACT + HLL

SOURCE = (
    "CREATE SOURCE t (k VARCHAR, g BIGINT, x BIGINT, y DOUBLE, s VARCHAR, ts BIGINT,"
    " WATERMARK FOR ts AS ts - INTERVAL '{delay}' MILLISECOND);"
)


def _items(aggs: list[tuple[str, str, str, str]], *, duckdb_side: bool) -> str:
    return ", ".join(f"{d if duckdb_side else o} AS {a}" for o, d, a, _ in aggs)


def _close(a: object, b: object, kind: str) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    if kind == "exact":
        return a == b
    assert isinstance(a, (int, float)), (a, b)
    assert isinstance(b, (int, float)), (a, b)
    if kind == "interp":
        return abs(a - b) <= 1e-12 * max(abs(a), abs(b), 1.0)
    if kind == "sketch":
        return abs(a - b) <= SKETCH_ALPHA * abs(b) * (1 + 1e-9)
    assert kind == "hll"
    return abs(a - b) <= 0.05 * b + 1


def _key(row: tuple) -> tuple:
    return tuple((v is None, "" if v is None else str(v)) for v in row)


def assert_match(
    got: list[tuple],
    want: list[tuple],
    nkeys: int,
    aggs: list[tuple[str, str, str, str]],
    seed: int,
) -> None:
    """Rows identified by their first ``nkeys`` columns; the rest compared by kind."""
    got_by = {row[:nkeys]: row for row in got}
    want_by = {row[:nkeys]: row for row in want}
    assert len(got_by) == len(got), f"seed {seed}: one row per group"
    assert sorted(got_by, key=_key) == sorted(want_by, key=_key), (
        f"seed {seed}: groups differ: {len(got_by)} vs {len(want_by)}; "
        f"only ours {sorted(set(got_by) - set(want_by), key=_key)[:3]}, "
        f"only DuckDB's {sorted(set(want_by) - set(got_by), key=_key)[:3]}"
    )
    for k, w in want_by.items():
        g = got_by[k]
        for (_, _, alias, kind), a, b in zip(aggs, g[nkeys:], w[nkeys:]):
            assert _close(a, b, kind), f"seed {seed}: group {k} {alias}: ours {a!r}, DuckDB {b!r}"


# ---------------------------------------------------------------------------
# Windows
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("cores", [1, 2])
@settings(max_examples=examples(12), deadline=None)
@given(seed=SEEDS)
def test_tumble_and_hop_match_duckdb(cores, seed):
    """Tumbling windows (one pass) and hopping ones (pane multisets merged)."""
    announce_seed(seed)
    rng = np.random.default_rng(seed)
    size, hop, window = random_window(rng)
    data = window_table(rng, size_ms=size)
    table = data.table
    keys = [["k"], ["k", "g"], ["g"]][int(rng.integers(3))]
    where = ["", "WHERE x > 0", "WHERE y IS NULL OR x < -100"][int(rng.integers(3))]
    ddl = SOURCE.format(delay=data.delay_ms) + (
        f"CREATE STREAM w AS SELECT {', '.join(keys)}, window_start, "
        f"{_items(ALL, duckdb_side=False)} FROM t {where} "
        f"GROUP BY {', '.join(keys)}, {window} EMIT ON WINDOW CLOSE;"
    )
    print(f"case: size={size} hop={hop} keys={keys} {where!r}")
    batches = split_batches(rng, table)
    result = run_engine(ddl, batches, cores=cores)
    assert result.late_rows == 0
    oracle = hop_oracle(keys, where, size, hop, 0, aggregates=[(d, d, a) for _, d, a, _ in ALL])
    names, expected = duck(oracle, t=arrival_watermarks(batches, data.delay_ms))
    columns = [*keys, "window_start", *(a for _, _, a, _ in ALL)]
    expected = [tuple(row[names.index(c)] for c in columns) for row in expected]
    got = rows_of(result.table, columns)
    assert_match(got, expected, len(keys) + 1, ALL, seed)


@settings(max_examples=examples(10), deadline=None)
@given(seed=SEEDS)
def test_sessions_match_duckdb(seed):
    """Sessions: a row that bridges two sessions merges their multisets and sketches."""
    announce_seed(seed)
    rng = np.random.default_rng(seed)
    gap = int(rng.choice([5, 50, 500]))
    data = window_table(rng, size_ms=gap)
    batches = split_batches(rng, data.table)
    ddl = SOURCE.format(delay=data.delay_ms) + (
        f"CREATE STREAM w AS SELECT k, window_start, {_items(ALL, duckdb_side=False)} "
        f"FROM t GROUP BY k, session(ts, INTERVAL '{gap}' MILLISECOND);"
    )
    result = run_engine(ddl, batches)
    assert result.late_rows == 0
    oracle = session_oracle(["k"], "", gap, aggregates=[(d, d, a) for _, d, a, _ in ALL])
    names, expected = duck(oracle, t=arrival_watermarks(batches, 0))
    columns = ["k", "window_start", *(a for _, _, a, _ in ALL)]
    expected = [tuple(row[names.index(c)] for c in columns) for row in expected]
    got = rows_of(result.table, columns)
    assert_match(got, expected, 2, ALL, seed)


# ---------------------------------------------------------------------------
# Running aggregates and changelogs
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("cores", [1, 2])
@settings(max_examples=examples(10), deadline=None)
@given(seed=SEEDS)
def test_running_aggregate_matches_duckdb(cores, seed):
    """GROUP BY without a window: after random batches the deltas so far add up
    to DuckDB's answer over the rows pushed so far."""
    announce_seed(seed)
    rng = np.random.default_rng(seed)
    data = window_table(rng, rows=int(rng.integers(1, 2000)), keys=int(rng.integers(1, 60)))
    keys = [["k"], ["g"], ["k", "g"]][int(rng.integers(3))]
    ddl = SOURCE.format(delay=0) + (
        f"CREATE STREAM w AS SELECT {', '.join(keys)}, {_items(ALL, duckdb_side=False)} "
        f"FROM t GROUP BY {', '.join(keys)} EMIT CHANGES;"
    )
    oracle = f"SELECT {', '.join(keys)}, {_items(ALL, duckdb_side=True)} FROM t GROUP BY ALL"
    columns = [*keys, *(a for _, _, a, _ in ALL)]
    batches = split_batches(rng, data.table, max_rows=400)
    check_at = {len(batches) - 1, int(rng.integers(len(batches)))}

    def check(current: list[tuple], pushed: pa.Table) -> None:
        _, expected = duck(oracle, t=pushed)
        assert_match(current, expected, len(keys), ALL, seed)

    run_changes(ddl, batches, columns, check_at, check, cores=cores)


@settings(max_examples=examples(10), deadline=None)
@given(seed=SEEDS)
def test_changelog_input_retracts(seed):
    """Over an EMIT CHANGES input every update of a group retracts its old row:
    the multisets (values and sketch buckets) lose it and still match DuckDB."""
    announce_seed(seed)
    rng = np.random.default_rng(seed)
    data = window_table(rng, rows=int(rng.integers(1, 1500)), keys=int(rng.integers(2, 40)))
    # (MAX(y), not AVG(y): an exact input, so that quantile_disc can be compared exactly)
    inner = "SELECT k, g, SUM(x) AS x, MAX(y) AS y, MIN(s) AS s FROM t GROUP BY k, g"
    ddl = SOURCE.format(delay=0) + (
        f"CREATE STREAM u AS {inner} EMIT CHANGES;"
        f"CREATE STREAM w AS SELECT g, {_items(EXACT, duckdb_side=False)} FROM u "
        "GROUP BY g EMIT CHANGES;"
    )
    oracle = f"SELECT g, {_items(EXACT, duckdb_side=True)} FROM ({inner}) GROUP BY g"
    columns = ["g", *(a for _, _, a, _ in EXACT)]
    batches = split_batches(rng, data.table, max_rows=300)

    def check(current: list[tuple], pushed: pa.Table) -> None:
        _, expected = duck(oracle, t=pushed)
        assert_match(current, expected, 1, EXACT, seed)

    run_changes(ddl, batches, columns, set(range(len(batches))), check)


# ---------------------------------------------------------------------------
# Checkpoint and restart
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("cores", [(1, 1), (1, 2)])
@settings(max_examples=examples(4), deadline=None)
@given(seed=SEEDS)
def test_restart_keeps_the_state(tmp_path_factory, cores, seed):
    """Windows open at a checkpoint restore their multisets and registers: the
    output of a run closed and reopened in the middle is DuckDB's."""
    announce_seed(seed)
    root: Path = tmp_path_factory.mktemp("quantiles")
    rng = np.random.default_rng(seed)
    size = int(rng.choice([100, 1000]))
    data = window_table(rng, size_ms=size, rows=int(rng.integers(50, 1500)))
    table = data.table
    batches = split_batches(rng, table)
    stop = int(rng.integers(0, len(batches) + 1))
    ddl = SOURCE.format(delay=data.delay_ms) + (
        f"CREATE STREAM w AS SELECT k, window_start, {_items(ALL, duckdb_side=False)} "
        f"FROM t GROUP BY k, tumble(ts, INTERVAL '{size}' MILLISECOND) EMIT ON WINDOW CLOSE;"
    )
    columns = ["k", "window_start", *(a for _, _, a, _ in ALL)]
    got = run_with_restart(root, ddl, batches, stop, columns, cores)
    start = f"(ts - ((ts % {size}) + {size}) % {size})"
    oracle = (
        f"SELECT k, {start} AS window_start, {_items(ALL, duckdb_side=True)} FROM t GROUP BY ALL"
    )
    _, expected = duck(oracle, t=table)
    assert_match(got, expected, 2, ALL, seed)


# ---------------------------------------------------------------------------
# The approximations' error bounds over 10^5 values
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("dist", ["lognormal", "normal", "uniform_int", "heavy_repeats"])
def test_approximations_hold_their_bounds_over_1e5_values(dist):
    """One window of 10^5 values: approx_quantile at several q within 1% of
    quantile_disc, approx_count_distinct within 3 standard errors (4.9%)."""
    seed = 25
    announce_seed(seed)
    rng = np.random.default_rng(seed)
    n = 100_000
    if dist == "lognormal":
        v = rng.lognormal(3, 2, n)
    elif dist == "normal":
        v = rng.normal(0, 1e6, n)
    elif dist == "uniform_int":
        v = rng.integers(-(10**9), 10**9, n).astype(float)
    else:
        v = rng.integers(0, 30_000, n) / 8.0
    table = pa.table(
        {"k": pa.array(["a"] * n), "y": pa.array(v), "ts": pa.array(np.arange(n), pa.int64())}
    )
    qs = [0.0, 0.01, 0.25, 0.5, 0.9, 0.99, 0.999, 1.0]
    ours = ", ".join(f"approx_quantile(y, {q}) AS q{i}" for i, q in enumerate(qs))
    theirs = ", ".join(f"quantile_disc(y, {q}) AS q{i}" for i, q in enumerate(qs))
    ddl = (
        "CREATE SOURCE t (k VARCHAR, y DOUBLE, ts BIGINT, WATERMARK FOR ts AS ts);"
        f"CREATE STREAM w AS SELECT k, {ours}, approx_count_distinct(y) AS d FROM t "
        "GROUP BY k, tumble(ts, INTERVAL '1' HOUR) EMIT ON WINDOW CLOSE;"
    )
    result = run_engine(ddl, table.to_batches(max_chunksize=4096))
    got = rows_of(result.table, [f"q{i}" for i in range(len(qs))] + ["d"])
    _, want = duck(f"SELECT {theirs}, count(DISTINCT y) FROM t", t=table)
    assert len(got) == 1
    for i, q in enumerate(qs):
        a, b = got[0][i], want[0][i]
        assert abs(a - b) <= SKETCH_ALPHA * abs(b) * (1 + 1e-9), (dist, q, a, b)
    a, b = got[0][-1], want[0][-1]
    print(f"{dist}: approx_count_distinct {a} vs {b} ({(a - b) / b:+.4%})")
    assert abs(a - b) <= 3 * 1.04 / math.sqrt(4096) * b, (dist, a, b)


# ---------------------------------------------------------------------------
# Edges and refusals
# ---------------------------------------------------------------------------


def test_small_groups_and_nulls():
    """DuckDB's edge results: quantiles of no value are NULL, of one value that
    value; quantile_disc picks a held value, quantile_cont interpolates."""
    rows = [
        {"k": "one", "x": 3, "ts": 1},
        {"k": "two", "x": 1, "ts": 1},
        {"k": "two", "x": 4, "ts": 2},
        {"k": "nulls", "x": None, "ts": 1},
        {"k": "four", "x": 1, "ts": 1},
        {"k": "four", "x": 2, "ts": 1},
        {"k": "four", "x": 3, "ts": 1},
        {"k": "four", "x": 4, "ts": 1},
    ]
    table = pa.Table.from_pylist(
        rows, schema=pa.schema([("k", pa.string()), ("x", pa.int64()), ("ts", pa.int64())])
    )
    aggs = [
        ("median(x)", "median(x)", "m", "interp"),
        ("quantile_cont(x, 0.3)", "quantile_cont(x, 0.3)", "qc", "interp"),
        ("quantile_disc(x, 0.25)", "quantile_disc(x, 0.25)", "qd", "exact"),
        ("approx_count_distinct(x)", "count(DISTINCT x)", "d", "exact"),
    ]
    ddl = (
        "CREATE SOURCE t (k VARCHAR, x BIGINT, ts BIGINT, WATERMARK FOR ts AS ts);"
        f"CREATE STREAM w AS SELECT k, {_items(aggs, duckdb_side=False)} FROM t "
        "GROUP BY k, tumble(ts, INTERVAL '1' SECOND) EMIT ON WINDOW CLOSE;"
    )
    result = run_engine(ddl, table.to_batches())
    columns = ["k", *(a for _, _, a, _ in aggs)]
    _, expected = duck(f"SELECT k, {_items(aggs, duckdb_side=True)} FROM t GROUP BY k", t=table)
    got = rows_of(result.table, columns)
    assert_match(got, expected, 1, aggs, -1)
    by = {r[0]: dict(zip(columns, r)) for r in got}
    assert by["nulls"]["m"] is None
    assert by["nulls"]["d"] == 0
    assert by["two"]["m"] == 2.5
    assert by["four"]["qc"] == pytest.approx(1.9)
    assert by["four"]["qd"] == 1


@pytest.mark.parametrize(
    ("item", "code"),
    [
        ("quantile_cont(x)", "LDB-1102"),
        ("median(x, 0.5)", "LDB-1102"),
        ("quantile_disc(x, 1.5)", "LDB-1102"),
        ("quantile_cont(x, y)", "LDB-1102"),
        ("approx_quantile(x, -0.1)", "LDB-1102"),
        ("median(s)", "LDB-2001"),
        ("approx_percentile(s, 0.5)", "LDB-2001"),
        ("median(median(x))", "LDB-1006"),
        ("list(x)", "LDB-1005"),
        ("array_agg(s)", "LDB-1005"),
        ("string_agg(x, ',')", "LDB-2001"),
        ("string_agg(s, s)", "LDB-1102"),
        ("string_agg(s, ',', ';')", "LDB-1102"),
    ],
)
def test_bad_calls_are_refused(item, code):
    with laminardb.open() as db:
        db.execute(SOURCE.format(delay=0))
        with pytest.raises(laminardb.LaminarError) as e:
            db.execute(f"CREATE STREAM w AS SELECT k, {item} AS v FROM t GROUP BY k")
        assert e.value.code == code, str(e.value)
        # the refusal left the catalog as it was: the name is still free
        db.execute("CREATE STREAM w AS SELECT k, median(x) AS v FROM t GROUP BY k")


def test_approx_count_distinct_over_a_changelog_is_refused():
    """HyperLogLog registers cannot forget a value: over an EMIT CHANGES input
    approx_count_distinct is LDB-1005, the stream the input comes from stays."""
    with laminardb.open() as db:
        db.execute(SOURCE.format(delay=0))
        db.execute("CREATE STREAM u AS SELECT k, g, SUM(x) AS x FROM t GROUP BY k, g EMIT CHANGES")
        with pytest.raises(laminardb.SQLError) as e:
            db.execute(
                "CREATE STREAM w AS SELECT g, approx_count_distinct(x) AS v FROM u GROUP BY g"
            )
        assert e.value.code == "LDB-1005"
        assert "cannot forget a value" in str(e.value)
        db.execute("CREATE STREAM w AS SELECT g, median(x) AS v FROM u GROUP BY g")


def test_explain_names_the_fraction():
    with laminardb.open() as db:
        db.execute(
            SOURCE.format(delay=0)
            + "CREATE STREAM w AS SELECT k, quantile_cont(y, 0.25) AS q, median(x) AS m, "
            "approx_percentile(y, 0.99) AS p FROM t GROUP BY k, tumble(ts, INTERVAL '1' SECOND);"
        )
        details = " ".join(db.query("EXPLAIN w").column("details").to_pylist())
        assert "quantile_cont(y, 0.25)" in details
        assert "median(x)" in details
        assert "approx_quantile(y, 0.99)" in details


def test_exact_quantiles_count_against_max_state_bytes():
    """An exact median holds every distinct value: over an endless run of new
    values it meets max_state_bytes (LDB-3008), and the refused batch leaves the
    view's median that of the rows accepted (DuckDB's)."""
    with laminardb.open() as db:
        db.execute(
            "CREATE SOURCE t (k VARCHAR, v BIGINT);"
            "CREATE MATERIALIZED VIEW mv AS SELECT k, median(v) AS m, quantile_disc(v, 0.9) "
            "AS q FROM t GROUP BY k WITH (max_state_bytes = '1 MB')"
        )
        src = db.source("t")
        accepted: list[pa.RecordBatch] = []
        error = None
        for b in range(200):
            batch = pa.record_batch(
                {"k": pa.array(["a"] * 1000), "v": pa.array(range(b * 1000, b * 1000 + 1000))}
            )
            src.push(batch)
            try:
                db.run_until_idle()
            except laminardb.LaminarError as e:
                error = e
                break
            accepted.append(batch)
        assert error is not None, "no batch was refused"
        assert error.code == "LDB-3008"
        assert "max_state_bytes" in str(error)
        assert 1 < len(accepted) < 100
        got = db.query("SELECT k, m, q FROM mv").to_pylist()
        _, want = duck(
            "SELECT k, median(v), quantile_disc(v, 0.9) FROM t GROUP BY k",
            t=pa.Table.from_batches(accepted),
        )
        assert [(r["k"], r["m"], r["q"]) for r in got] == want

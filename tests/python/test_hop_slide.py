"""Hopping windows that slide, against DuckDB over the same rows (DESIGN §5b).

When every aggregate of a hopping window can slide (COUNT, COUNT(*), SUM, AVG,
MIN/MAX of numbers; src/agg/slide.h), the closing windows are built from one
per-key state that each pane enters once and leaves once (src/op/hop.c)
instead of from merges of their panes. test_windows.py's hop cases select
kinds that do not slide as well, so these cases use only sliding ones, with
data aimed at what subtracting can get wrong: DOUBLE sums whose big terms
leave the window while small ones stay (cancellation: DuckDB's answer is a
fresh sum), infinities and NaNs entering and leaving, BIGINT sums beyond
BIGINT in some windows only, NULLs, ties, and late rows within the allowed
lateness into panes the sliding state already holds.
"""

from __future__ import annotations

import math

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
    seed_strategy_bounds,
    split_batches,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from test_windows import arrival_watermarks, hop_case, hop_oracle

SEEDS = st.integers(*seed_strategy_bounds())

#: (LaminarDB select item, DuckDB select item, alias): the kinds that slide.
SLIDING = [
    ("COUNT(*)", "COUNT(*)", "n"),
    ("COUNT(y)", "COUNT(y)", "ny"),
    ("SUM(x)", "SUM(x)", "sx"),
    ("SUM(y)", "SUM(y)", "sy"),
    ("AVG(x)", "AVG(x)", "ax"),
    ("AVG(y)", "AVG(y)", "ay"),
    ("MIN(x)", "MIN(x)", "mnx"),
    ("MAX(x)", "MAX(x)", "mxx"),
    ("MIN(y)", "MIN(y)", "mny"),
    ("MAX(y)", "MAX(y)", "mxy"),
]


@settings(max_examples=examples(25), deadline=None)
@given(seed=SEEDS)
def test_sliding_hop_matches_duckdb(seed):
    """Random hop/slide cases (2..16 panes a window, or hop_case's own sizes,
    which include hops that are not a divisor of the size), NULLs, filters,
    late rows, and allowed lateness that sends rows into panes the sliding
    state holds (it must be rebuilt)."""
    rng = np.random.default_rng(seed)
    panes = int(rng.choice([0, 2, 3, 5, 10, 16]))
    hop_case(
        seed,
        late_frac=float(rng.choice([0.0, 0.05, 0.1])),
        lateness=bool(rng.integers(2)),
        panes_per_window=panes or None,
        aggregates=SLIDING,
    )


#: Positive DOUBLEs of far apart magnitudes: a fresh sum of them is exact to a
#: few ulps, while a plain running sum that subtracts 1e300 when it leaves the
#: window keeps nothing of the 1.0 and 3.25 beside it.
MAGNITUDES = [1e300, 1e200, 1e20, 1.0, 3.25, 1e-300, 0.0]


def _slide_run(table: pa.Table, seed: int, rng: np.random.Generator, items: list) -> None:
    """Push ``table`` (k, x, y, ts in time order) through hop windows of 2, 3
    and 10 panes and compare with DuckDB."""
    batches = split_batches(rng, table)
    select = ", ".join(f"{ours} AS {alias}" for ours, _, alias in items)
    for size, hop in [(20, 10), (30, 10), (100, 10)]:
        ddl = (
            "CREATE SOURCE t (k VARCHAR, x BIGINT, y DOUBLE, ts BIGINT, WATERMARK FOR ts AS ts);"
            f"CREATE STREAM w AS SELECT k, window_start, window_end, {select} FROM t "
            f"GROUP BY k, hop(ts, INTERVAL '{size}' MILLISECOND, INTERVAL '{hop}' MILLISECOND);"
        )
        result = run_engine(ddl, batches, run_every=int(rng.choice([1, 2])))
        t = arrival_watermarks(batches, 0)
        names, expected = duck(hop_oracle(["k"], "", size, hop, 0, aggregates=items), t=t)
        assert_same_rows(rows_of(result.table, names), expected, names, seed=seed)


@settings(max_examples=examples(15), deadline=None)
@given(seed=SEEDS)
def test_sliding_sums_of_huge_and_tiny_doubles(seed):
    """SUM/AVG/MIN/MAX of DOUBLE over values 1e-300 .. 1e300, a few +-inf and
    NaN, NULLs: every window equals DuckDB's fresh aggregate, also after the
    huge terms (or an infinity, or a NaN) left it."""
    announce_seed(seed)
    rng = np.random.default_rng(seed)
    n = 1500
    y = np.array(MAGNITUDES)[rng.integers(len(MAGNITUDES), size=n)]
    y = y * rng.choice([1.0, 1.5, 2.0], size=n)
    special = rng.random(n)
    y[special < 0.01] = math.inf
    y[(special >= 0.01) & (special < 0.015)] = -math.inf
    y[(special >= 0.015) & (special < 0.02)] = math.nan
    ys = [None if null else float(v) for null, v in zip(rng.random(n) < 0.05, y)]
    table = pa.table(
        {
            "k": pa.array([f"k{i}" for i in rng.integers(0, 3, size=n)], pa.string()),
            "x": pa.array(rng.integers(-5, 6, size=n), pa.int64()),
            "y": pa.array(ys, pa.float64()),
            "ts": pa.array(np.sort(rng.integers(0, 1500, size=n)), pa.int64()),
        }
    )
    items = [a for a in SLIDING if "y" in a[0]]
    _slide_run(table, seed, rng, items)


@settings(max_examples=examples(10), deadline=None)
@given(seed=SEEDS)
def test_sliding_bigint_sums_beyond_bigint(seed):
    """SUM(BIGINT) is NULL in the windows whose total does not fit BIGINT and
    exact again once the big terms left; AVG and MIN/MAX of the same values."""
    announce_seed(seed)
    rng = np.random.default_rng(seed)
    n = 800
    big = rng.choice([2**62, -(2**62), 2**61, 7, -3, 2**63 - 1, -(2**63)], size=n)
    xs = [None if null else int(v) for null, v in zip(rng.random(n) < 0.05, big)]
    table = pa.table(
        {
            "k": pa.array([f"k{i}" for i in rng.integers(0, 3, size=n)], pa.string()),
            "x": pa.array(xs, pa.int64()),
            "y": pa.array(rng.normal(0, 10, size=n), pa.float64()),
            "ts": pa.array(np.sort(rng.integers(0, 800, size=n)), pa.int64()),
        }
    )
    fits = "BETWEEN -9223372036854775808 AND 9223372036854775807"
    items = [
        ("SUM(x)", f"CASE WHEN SUM(x) {fits} THEN SUM(x)::BIGINT END", "sx"),
        ("AVG(x)", "AVG(x)", "ax"),
        ("MIN(x)", "MIN(x)", "mnx"),
        ("MAX(x)", "MAX(x)", "mxx"),
        ("COUNT(x)", "COUNT(x)", "nx"),
    ]
    _slide_run(table, seed, rng, items)


@pytest.mark.parametrize(
    ("size", "hop"),
    [(10, 5), (10, 10), (15, 10), (12, 9)],
    ids=["sliding", "tumble", "panes-not-sliding", "panes-gcd"],
)
def test_windows_at_the_ends_of_time(size: int, hop: int):
    """Rows a few ms from INT64_MIN and INT64_MAX: window bounds and pane
    numbers near the ends do not overflow; every window that exists (a start
    representable as BIGINT) holds exactly its rows. A row whose newest window
    would start before INT64_MIN (less than a hop above it) has no window that
    can be represented: it is dropped and counted as late."""
    lo, hi = -(2**63), 2**63 - 1
    ts = [lo, lo + 1, lo + 2, lo + 3, lo + 4, lo + 7, lo + 12, lo + 23, hi - 12, hi - 7, hi - 1, hi]
    ks = ["a", "b", "a", "a", "b", "a", "a", "b", "a", "b", "a", "a"]
    vs = list(range(1, len(ts) + 1))
    clause = (
        f"tumble(ts, INTERVAL '{size}' MILLISECOND)"
        if size == hop
        else f"hop(ts, INTERVAL '{size}' MILLISECOND, INTERVAL '{hop}' MILLISECOND)"
    )
    ddl = (
        "CREATE SOURCE t (k VARCHAR, v BIGINT, ts BIGINT, WATERMARK FOR ts AS ts);"
        "CREATE STREAM w AS SELECT k, window_start, COUNT(*) AS n, SUM(v) AS sv, MIN(v) AS mn,"
        f" MAX(v) AS mx FROM t GROUP BY k, {clause}"
    )
    batch = pa.RecordBatch.from_pydict(
        {"k": ks, "v": vs, "ts": ts},
        schema=pa.schema([("k", pa.string()), ("v", pa.int64()), ("ts", pa.int64())]),
    )
    result = run_engine(ddl, [batch])
    expected: dict[tuple[str, int], list[int]] = {}
    late = 0
    for k, v, t in zip(ks, vs, ts):
        ws = t - t % hop  # the newest window's start (Python's % is the floor's)
        if ws < lo:
            late += 1
            continue
        while ws >= lo and ws > t - size:
            expected.setdefault((k, ws), []).append(v)
            ws -= hop
    want = sorted((k, ws, len(v), sum(v), min(v), max(v)) for (k, ws), v in expected.items())
    got = sorted(rows_of(result.table, ["k", "window_start", "n", "sv", "mn", "mx"]))
    assert got == want
    assert late > 0
    assert result.late_rows == late

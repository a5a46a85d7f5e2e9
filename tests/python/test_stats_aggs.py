"""Statistical aggregates against DuckDB (issue 25 item 2, DESIGN §5b).

``var_samp``/``var_pop``/``variance``, ``stddev_samp``/``stddev_pop``/``stddev``,
``covar_samp``/``covar_pop``, ``corr``, ``regr_slope``/``regr_intercept``/
``regr_r2``/``regr_count`` and ``bool_and``/``bool_or`` over random rows (NULLs,
zeros, one-row groups, constant groups) in tumbling, hopping and session
windows, as running aggregates (EMIT CHANGES), over a changelog input (the
inverse update), with one and two cores and across a checkpoint and restart.

Floating-point tolerance: LaminarDB and DuckDB both update a count, means and
centered sums of squares (Welford) and merge partial states (Chan), but in
different orders (batches, partitions, panes), so results agree to rounding:
a value ``v`` matches DuckDB's ``d`` when ``|v - d| <= REL * |d| + ABS``, with
``REL = 1e-9`` and ``ABS = 1e-9 * scale``, ``scale`` being the squared largest
magnitude of the arguments for second moments (variances, covariances), that
magnitude for standard deviations and regression intercepts, and 1e3 for the
ratios (``corr``, ``regr_r2``, ``regr_slope``), whose conditioning depends on
the data; over a changelog input (retractions) ``ABS``
is 1e-7 times the scale. NaN equals NaN (``corr`` of a constant column), NULL
only NULL.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from _oracle_util import (
    FINAL_WATERMARK,
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
from test_windows import arrival_watermarks, hop_oracle, session_oracle

import laminardb

SEEDS = st.integers(*seed_strategy_bounds())

REL = 1e-9

#: (ours, DuckDB's, alias, kind): kind picks the absolute tolerance's scale.
STATS = [
    ("var_samp(y)", "var_samp(y)", "vsy", "sq"),
    ("var_pop(x)", "var_pop(x)", "vpx", "sq"),
    ("variance(x)", "variance(x)", "vx", "sq"),
    ("stddev(y)", "stddev(y)", "sdy", "lin"),
    ("stddev_samp(x)", "stddev_samp(x)", "ssx", "lin"),
    ("stddev_pop(y)", "stddev_pop(y)", "spy", "lin"),
    ("covar_samp(y, x)", "covar_samp(y, x)", "csyx", "sq"),
    ("covar_pop(x, y)", "covar_pop(x, y)", "cpxy", "sq"),
    ("corr(y, x)", "corr(y, x)", "cor", "ratio"),
    ("regr_slope(y, x)", "regr_slope(y, x)", "rsl", "ratio"),
    ("regr_intercept(y, x)", "regr_intercept(y, x)", "rin", "lin"),
    ("regr_r2(y, x)", "regr_r2(y, x)", "rr2", "ratio"),
    ("regr_count(y, x)", "regr_count(y, x)", "rco", "exact"),
    ("bool_and(x > 0)", "bool_and(x > 0)", "band", "exact"),
    ("bool_or(y < 0)", "bool_or(y < 0)", "bor", "exact"),
]

#: Not retractable (refused over a changelog): ``by`` is unique (``id``: the
#: row's position), so no tie makes the answer depend on the order rows are seen.
ARG = [
    ("arg_min(s, id)", "arg_min(s, id)", "amn_s", "exact"),
    ("arg_max(y, CAST(id AS VARCHAR))", "arg_max(y, CAST(id AS VARCHAR))", "amx_y", "exact"),
    ("arg_min(x, id * 0.5)", "arg_min(x, id * 0.5)", "amn_x", "exact"),
    ("arg_max(k, -id)", "arg_max(k, -id)", "amx_k", "exact"),
]

ALL = STATS + ARG

SOURCE = (
    "CREATE SOURCE t (k VARCHAR, g BIGINT, x BIGINT, y DOUBLE, s VARCHAR, ts BIGINT,"
    " id BIGINT, WATERMARK FOR ts AS ts - INTERVAL '{delay}' MILLISECOND);"
)


def with_ids(table: pa.Table) -> pa.Table:
    """``table`` with an ``id`` column: each row's position."""
    return table.append_column("id", pa.array(range(table.num_rows), pa.int64()))


def _items(stats: list[tuple[str, str, str, str]], *, duckdb_side: bool) -> str:
    return ", ".join(f"{d if duckdb_side else o} AS {a}" for o, d, a, _ in stats)


def _scale(table: pa.Table, columns: tuple[str, ...] = ("x", "y")) -> float:
    """The largest magnitude of the aggregated columns (1 at least)."""
    biggest = 1.0
    for c in columns:
        values = [abs(v) for v in table.column(c).to_pylist() if v is not None]
        biggest = max([biggest, *values])
    return biggest


def _abs_tol(kind: str, scale: float, factor: float) -> float:
    if kind == "sq":
        return factor * scale * scale
    if kind == "lin":
        return factor * scale
    return factor * 1e3 if kind == "ratio" else 0.0


def _close(a: object, b: object, kind: str, scale: float, factor: float) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if kind == "exact":
        return a == b
    assert isinstance(a, float), (a, b)
    assert isinstance(b, (int, float)), (a, b)
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) <= REL * abs(b) + _abs_tol(kind, scale, factor)


def _key(row: tuple) -> tuple:
    return tuple((v is None, "" if v is None else str(v)) for v in row)


def assert_stats_match(
    got: list[tuple],
    want: list[tuple],
    nkeys: int,
    stats: list[tuple[str, str, str, str]],
    scale: float,
    seed: int,
    *,
    factor: float = 1e-9,
    retracted: bool = False,
) -> None:
    """Rows identified by their first ``nkeys`` columns; the rest compared by kind.

    ``retracted``: where DuckDB's ratio (corr, regr_slope, regr_intercept,
    regr_r2) is NaN or NULL (a constant x or y), retractions leave a ratio of
    rounding residues instead (docs/SQL.md); such a group's ratios are not
    compared.
    """
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
        degenerate = retracted and any(
            b is None or (isinstance(b, float) and math.isnan(b))
            for (ours, _, _, _), b in zip(stats, w[nkeys:])
            if ours.startswith(("corr", "regr_slope"))
        )
        for (ours, _, alias, kind), a, b in zip(stats, g[nkeys:], w[nkeys:]):
            if degenerate and ours.startswith(("corr", "regr_s", "regr_i", "regr_r")):
                continue
            assert _close(a, b, kind, scale, factor), (
                f"seed {seed}: group {k} {alias}: LaminarDB {a!r}, DuckDB {b!r} (scale {scale})"
            )


# ---------------------------------------------------------------------------
# Windows
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("cores", [1, 2])
@settings(max_examples=examples(12), deadline=None)
@given(seed=SEEDS)
def test_tumble_and_hop_match_duckdb(cores, seed):
    """Tumbling windows (one pass) and hopping ones (panes merged by Chan's rule)."""
    announce_seed(seed)
    rng = np.random.default_rng(seed)
    size, hop, window = random_window(rng)
    data = window_table(rng, size_ms=size)
    table = with_ids(data.table)
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
    duck_stats = [(d, d, a, k) for _, d, a, k in ALL]
    oracle = hop_oracle(keys, where, size, hop, 0, aggregates=[s[:3] for s in duck_stats])
    names, expected = duck(oracle, t=arrival_watermarks(batches, data.delay_ms))
    columns = [*keys, "window_start", *(a for _, _, a, _ in ALL)]
    expected = [tuple(row[names.index(c)] for c in columns) for row in expected]
    got = rows_of(result.table, columns)
    assert_stats_match(got, expected, len(keys) + 1, ALL, _scale(table), seed)


@settings(max_examples=examples(10), deadline=None)
@given(seed=SEEDS)
def test_sessions_match_duckdb(seed):
    """Sessions: a row that bridges two sessions merges their moments."""
    announce_seed(seed)
    rng = np.random.default_rng(seed)
    gap = int(rng.choice([5, 50, 500]))
    data = window_table(rng, size_ms=gap)
    table = with_ids(data.table)
    batches = split_batches(rng, table)
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
    assert_stats_match(got, expected, 2, ALL, _scale(table), seed)


# ---------------------------------------------------------------------------
# Running aggregates and changelogs
# ---------------------------------------------------------------------------


def run_changes(
    ddl: str,
    batches: list[pa.RecordBatch],
    columns: list[str],
    check_at: set[int],
    check: Callable[[list[tuple], pa.Table], None],
    *,
    cores: int = 1,
) -> None:
    """Push ``batches`` one by one into a database running ``ddl``; after each
    batch in ``check_at``, ``check`` the rows stream ``w``'s deltas add up to
    against the rows pushed so far."""
    with laminardb.open(cores=cores) as db:
        db.execute(ddl)
        deltas = Deltas(db.subscribe("w"), columns)
        src = db.source("t")
        for i, batch in enumerate(batches):
            src.push(batch)
            db.run_until_idle()
            deltas.take()
            if i in check_at:
                check(deltas.current(), pa.Table.from_batches(batches[: i + 1]))


@pytest.mark.parametrize("cores", [1, 2])
@settings(max_examples=examples(10), deadline=None)
@given(seed=SEEDS)
def test_running_aggregate_matches_duckdb(cores, seed):
    """GROUP BY without a window: after random batches the deltas so far add up
    to DuckDB's answer over the rows pushed so far."""
    announce_seed(seed)
    rng = np.random.default_rng(seed)
    data = window_table(rng, rows=int(rng.integers(1, 2000)), keys=int(rng.integers(1, 60)))
    table = with_ids(data.table)
    keys = [["k"], ["g"], ["k", "g"]][int(rng.integers(3))]
    ddl = SOURCE.format(delay=0) + (
        f"CREATE STREAM w AS SELECT {', '.join(keys)}, {_items(ALL, duckdb_side=False)} "
        f"FROM t GROUP BY {', '.join(keys)} EMIT CHANGES;"
    )
    oracle = f"SELECT {', '.join(keys)}, {_items(ALL, duckdb_side=True)} FROM t GROUP BY ALL"
    columns = [*keys, *(a for _, _, a, _ in ALL)]
    batches = split_batches(rng, table, max_rows=400)
    check_at = {len(batches) - 1, int(rng.integers(len(batches)))}

    def check(current: list[tuple], pushed: pa.Table) -> None:
        _, expected = duck(oracle, t=pushed)
        assert_stats_match(current, expected, len(keys), ALL, _scale(pushed), seed)

    run_changes(ddl, batches, columns, check_at, check, cores=cores)


@settings(max_examples=examples(10), deadline=None)
@given(seed=SEEDS)
def test_changelog_input_retracts(seed):
    """Over an EMIT CHANGES input every update of a group retracts its old row:
    the moments take the inverse update and still match DuckDB."""
    announce_seed(seed)
    rng = np.random.default_rng(seed)
    data = window_table(rng, rows=int(rng.integers(1, 1500)), keys=int(rng.integers(2, 40)))
    table = with_ids(data.table)
    inner = "SELECT k, g, SUM(x) AS x, AVG(y) AS y FROM t GROUP BY k, g"
    ddl = SOURCE.format(delay=0) + (
        f"CREATE STREAM u AS {inner} EMIT CHANGES;"
        f"CREATE STREAM w AS SELECT g, {_items(STATS, duckdb_side=False)} FROM u "
        "GROUP BY g EMIT CHANGES;"
    )
    oracle = f"SELECT g, {_items(STATS, duckdb_side=True)} FROM ({inner}) GROUP BY g"
    columns = ["g", *(a for _, _, a, _ in STATS)]
    batches = split_batches(rng, table, max_rows=300)

    def check(current: list[tuple], pushed: pa.Table) -> None:
        _, expected = duck(oracle, t=pushed)
        _, inner_rows = duck(inner, t=pushed)
        scale = max([1.0, *(abs(v) for r in inner_rows for v in r[2:] if v is not None)])
        assert_stats_match(current, expected, 1, STATS, scale, seed, factor=1e-7, retracted=True)

    run_changes(ddl, batches, columns, set(range(len(batches))), check)


# ---------------------------------------------------------------------------
# Checkpoint and restart
# ---------------------------------------------------------------------------


def run_with_restart(
    root: Path,
    ddl: str,
    batches: list[pa.RecordBatch],
    stop: int,
    columns: list[str],
    cores: tuple[int, int],
) -> list[tuple]:
    """Run ``ddl`` durably in ``root`` with ``cores[0]`` cores over ``batches[:stop]``,
    checkpoint and close; reopen with ``cores[1]``, push the rest and close every
    window: the rows (``columns``) stream ``w`` gave in both runs."""
    options = {"checkpoint_interval": "1 hour", "wal_mode": "sync"}
    got: list[tuple] = []

    def drain(sub: laminardb.Subscription) -> None:
        while (b := sub.poll(0)) is not None:
            got.extend(rows_of(pa.Table.from_batches([b]), columns))

    with laminardb.open(root, cores=cores[0], **options) as db:
        db.execute(ddl)
        sub = db.subscribe("w")
        src = db.source("t")
        for batch in batches[:stop]:
            src.push(batch)
            db.run_until_idle()
            drain(sub)
        db.checkpoint()
    with laminardb.open(root, cores=cores[1], **options) as db:
        sub = db.subscribe("w")
        src = db.source("t")
        assert src.offset - 1 == stop
        for batch in batches[stop:]:
            src.push(batch)
            db.run_until_idle()
            drain(sub)
        src.watermark(FINAL_WATERMARK)
        db.run_until_idle()
        drain(sub)
    return got


@pytest.mark.parametrize("cores", [(1, 1), (1, 2)])
@settings(max_examples=examples(4), deadline=None)
@given(seed=SEEDS)
def test_restart_keeps_the_moments(tmp_path_factory, cores, seed):
    """Windows open at a checkpoint restore their moments: the output of a run
    closed and reopened in the middle is DuckDB's."""
    announce_seed(seed)
    root: Path = tmp_path_factory.mktemp("stats")
    rng = np.random.default_rng(seed)
    size = int(rng.choice([100, 1000]))
    data = window_table(rng, size_ms=size, rows=int(rng.integers(50, 1500)))
    table = with_ids(data.table)
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
    assert_stats_match(got, expected, 2, ALL, _scale(table), seed)


# ---------------------------------------------------------------------------
# Edges and errors
# ---------------------------------------------------------------------------


def test_one_row_null_and_constant_groups():
    """DuckDB's edge results: sample statistics of one row are NULL, population
    ones 0; a constant x makes corr and regr_slope NaN, regr_intercept and
    regr_r2 NULL; rows with a NULL argument do not count."""
    rows = [
        {"k": "one", "x": 3, "y": 1.5, "ts": 1},
        {"k": "const", "x": 2, "y": 1.0, "ts": 1},
        {"k": "const", "x": 2, "y": 4.0, "ts": 2},
        {"k": "nulls", "x": None, "y": 1.0, "ts": 1},
        {"k": "nulls", "x": 5, "y": None, "ts": 2},
        {"k": "flat_y", "x": 1, "y": 7.0, "ts": 1},
        {"k": "flat_y", "x": 4, "y": 7.0, "ts": 2},
    ]
    table = pa.Table.from_pylist(
        rows,
        schema=pa.schema(
            [("k", pa.string()), ("x", pa.int64()), ("y", pa.float64()), ("ts", pa.int64())]
        ),
    )
    ddl = (
        "CREATE SOURCE t (k VARCHAR, x BIGINT, y DOUBLE, ts BIGINT,"
        " WATERMARK FOR ts AS ts);"
        f"CREATE STREAM w AS SELECT k, {_items(STATS, duckdb_side=False)} FROM t "
        "GROUP BY k, tumble(ts, INTERVAL '1' SECOND) EMIT ON WINDOW CLOSE;"
    )
    result = run_engine(ddl, table.to_batches())
    columns = ["k", *(a for _, _, a, _ in STATS)]
    _, expected = duck(f"SELECT k, {_items(STATS, duckdb_side=True)} FROM t GROUP BY k", t=table)
    got = rows_of(result.table, columns)
    assert_stats_match(got, expected, 1, STATS, 10.0, -1)
    by = {r[0]: dict(zip(columns, r)) for r in got}
    assert by["one"]["vsy"] is None
    assert by["one"]["spy"] == 0.0
    assert math.isnan(by["const"]["cor"])
    assert by["const"]["rin"] is None
    assert by["nulls"]["rco"] == 0
    assert by["nulls"]["cor"] is None
    assert by["flat_y"]["rr2"] == 1.0


@pytest.mark.parametrize(
    ("item", "code"),
    [
        ("covar_pop(x)", "LDB-1102"),
        ("var_pop(x, y)", "LDB-1102"),
        ("stddev(s)", "LDB-2001"),
        ("corr(y, s)", "LDB-2001"),
        ("bool_and(x)", "LDB-2001"),
        ("var_pop(var_pop(x))", "LDB-1006"),
        ("arg_min(x)", "LDB-1102"),
        ("arg_max(x, y, s)", "LDB-1102"),
    ],
)
def test_bad_calls_are_refused(item, code):
    with laminardb.open() as db:
        db.execute(SOURCE.format(delay=0))
        with pytest.raises(laminardb.LaminarError) as e:
            db.execute(f"CREATE STREAM w AS SELECT k, {item} AS v FROM t GROUP BY k")
        assert e.value.code == code, str(e.value)
        # the refusal left the catalog as it was: the name is still free
        db.execute("CREATE STREAM w AS SELECT k, var_pop(x) AS v FROM t GROUP BY k")


@pytest.mark.parametrize("item", ["arg_min(x, y)", "arg_max(s, x)"])
def test_arg_min_max_over_a_changelog_is_refused(item):
    """arg_min / arg_max cannot take a retraction (the row before the best is
    not kept): over an EMIT CHANGES input they are LDB-1005, the stream the
    input comes from stays."""
    with laminardb.open() as db:
        db.execute(SOURCE.format(delay=0))
        db.execute(
            "CREATE STREAM u AS SELECT k, g, SUM(x) AS x, AVG(y) AS y, MIN(s) AS s FROM t "
            "GROUP BY k, g EMIT CHANGES"
        )
        with pytest.raises(laminardb.SQLError) as e:
            db.execute(f"CREATE STREAM w AS SELECT g, {item} AS v FROM u GROUP BY g")
        assert e.value.code == "LDB-1005"
        assert "take retractions" in str(e.value)
        db.execute("CREATE STREAM w AS SELECT g, var_pop(x) AS v FROM u GROUP BY g")


def test_explain_names_both_arguments():
    """EXPLAIN shows a two-argument aggregate with both arguments, (y, x) in order."""
    with laminardb.open() as db:
        db.execute(
            SOURCE.format(delay=0)
            + "CREATE STREAM w AS SELECT k, corr(y, x) AS c, arg_max(s, y) AS a, "
            "var_pop(y) AS v FROM t GROUP BY k, tumble(ts, INTERVAL '1' SECOND);"
        )
        details = " ".join(db.query("EXPLAIN w").column("details").to_pylist())
        assert "corr(y, CAST(x AS DOUBLE))" in details
        assert "arg_max(s, y)" in details
        assert "var_pop(y)" in details

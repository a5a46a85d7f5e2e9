"""Hopping windows against DuckDB over the same rows (DESIGN §5b).

DuckDB has no hopping window, so the oracle builds one: every row is joined
with the ``ceil(size / hop)`` window starts ``floor(ts / hop) * hop - j * hop``
(an unnested range) and kept where ``start > ts - size``; the aggregates are a
plain ``GROUP BY key, start``. Late rows follow the engine's documented model,
written in SQL too: each row carries the watermark it met (the watermark after
the batch before it), and a (row, window) pair counts when the window's end
plus the allowed lateness is above it. A row none of whose windows is open is
late and counted (NULL times too).
"""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest
from _oracle_util import (
    WindowData,
    announce_seed,
    assert_same_rows,
    duck,
    examples,
    rows_of,
    run_engine,
    seed_strategy_bounds,
    split_batches,
    window_table,
)
from hypothesis import example, given, settings
from hypothesis import strategies as st

import laminardb

SEEDS = st.integers(*seed_strategy_bounds())

#: (LaminarDB select item, DuckDB select item, alias).
AGGREGATES = [
    ("COUNT(*)", "COUNT(*)", "n"),
    ("COUNT(x)", "COUNT(x)", "nx"),
    ("SUM(x)", "SUM(x)", "sx"),
    ("SUM(y)", "SUM(y)", "sy"),
    ("AVG(y)", "AVG(y)", "ay"),
    ("MIN(x)", "MIN(x)", "mnx"),
    ("MAX(y)", "MAX(y)", "mxy"),
    ("MIN(s)", "MIN(s)", "mns"),
    ("MAX(s)", "MAX(s)", "mxs"),
]

#: FIRST/LAST (by event time, ties by arrival: DuckDB orders by ``ts, seq``, the
#: push position) and COUNT(DISTINCT), added to the window cases.
ORDERED = [
    ("FIRST_VALUE(x)", "first(x ORDER BY ts, seq)", "fx"),
    ("LAST(s)", "last(s ORDER BY ts, seq)", "ls"),
    ("FIRST(y)", "first(y ORDER BY ts, seq)", "fy"),
    ("LAST_VALUE(k)", "last(k ORDER BY ts, seq)", "lk"),
    ("COUNT(DISTINCT s)", "COUNT(DISTINCT s)", "cds"),
    ("COUNT(DISTINCT x)", "COUNT(DISTINCT x)", "cdx"),
    ("COUNT(DISTINCT y)", "COUNT(DISTINCT y)", "cdy"),
]
WINDOW_AGGREGATES = AGGREGATES + ORDERED

FILTERS = ["", "WHERE x > 0", "WHERE y IS NULL OR x < -100", "WHERE k IS NOT NULL"]
GROUPINGS = [["k"], ["k", "g"], ["g"]]


def with_late_rows(rng: np.random.Generator, data: WindowData, frac: float) -> pa.Table:
    """Move a fraction of the rows further back than the watermark delay.

    Some of them land in windows still open (hopping windows overlap, so a row
    may lose its older windows and keep its newer ones), others are late.
    """
    table = data.table
    n = table.num_rows
    ts = np.array(table.column("ts").to_pylist(), dtype=np.int64)
    moved = rng.random(n) < frac
    back = data.delay_ms + rng.integers(1, 3 * data.size_ms + 2, size=n)
    ts = np.where(moved, ts - back, ts)
    return table.set_column(table.schema.get_field_index("ts"), "ts", pa.array(ts, pa.int64()))


def arrival_watermarks(batches: list[pa.RecordBatch], delay: int) -> pa.Table:
    """The rows in push order with the watermark each met (``wm``; INT64_MIN first).

    The source's watermark is ``max(ts) - delay`` over the batches pushed before,
    applied after each batch (docs/SQL.md, "Watermarks").
    """
    wm = -(2**63)
    high = None
    marks: list[int] = []
    for batch in batches:
        marks.extend([wm] * batch.num_rows)
        values = [v for v in batch.column("ts").to_pylist() if v is not None]
        if values:
            high = max(values) if high is None else max(high, max(values))
            wm = max(wm, high - delay)
    table = pa.Table.from_batches(batches) if batches else None
    assert table is not None
    table = table.append_column("seq", pa.array(range(table.num_rows), pa.int64()))
    return table.append_column("wm", pa.array(marks, pa.int64()))


def hop_oracle(
    keys: list[str],
    where: str,
    size: int,
    hop: int,
    lateness: int,
    *,
    aggregates: list[tuple[str, str, str]] = AGGREGATES,
) -> str:
    """DuckDB SQL: the hopping-window aggregates of ``t`` (with its ``wm`` column)."""
    per = -(-size // hop)
    newest = f"(ts - ((ts % {hop}) + {hop}) % {hop})"  # floor to the hop, any sign
    cond = where.replace("WHERE", "AND") if where else ""
    items = ", ".join(f"{theirs} AS {alias}" for _, theirs, alias in aggregates)
    return f"""
        WITH pairs AS (
          SELECT t.*, {newest} - j * {hop} AS ws
          FROM t, (SELECT unnest(range(0, {per})) AS j)
          WHERE ts IS NOT NULL {cond}
        )
        SELECT {", ".join(keys)}, ws AS window_start, ws + {size} AS window_end, {items}
        FROM pairs
        WHERE ws > ts - {size} AND ws + {size} + {lateness} > wm
        GROUP BY ALL"""


def late_oracle(where: str, size: int, hop: int, lateness: int) -> str:
    """DuckDB SQL: rows (passing WHERE) with a NULL time or no open window."""
    per = -(-size // hop)
    newest = f"(ts - ((ts % {hop}) + {hop}) % {hop})"
    cond = where.replace("WHERE", "AND") if where else ""
    return f"""
        WITH r AS (SELECT row_number() OVER () AS id, * FROM t),
        pairs AS (
          SELECT r.id, r.ts, r.wm, {newest} - j * {hop} AS ws
          FROM r, (SELECT unnest(range(0, {per})) AS j) WHERE true {cond}
        )
        SELECT count(*) FROM (
          SELECT id FROM pairs WHERE ts IS NULL OR ws > ts - {size}
          GROUP BY id
          HAVING bool_and(ts IS NULL OR ws + {size} + {lateness} <= wm)
        )"""


def timestamp_batches(batches: list[pa.RecordBatch]) -> list[pa.RecordBatch]:
    """The batches with ``ts`` as ``timestamp[ms]`` (same instants)."""
    return [
        b.set_column(b.schema.get_field_index("ts"), "ts", b.column("ts").cast(pa.timestamp("ms")))
        for b in batches
    ]


def bounds_to_ms(table: pa.Table) -> pa.Table:
    """``window_start`` / ``window_end`` of TIMESTAMP output as epoch ms (BIGINT)."""
    for col in ("window_start", "window_end"):
        assert table.schema.field(col).type == pa.timestamp("us")
        micros = table.column(col).cast(pa.int64()).to_numpy()
        table = table.set_column(table.schema.get_field_index(col), col, pa.array(micros // 1000))
    return table


def hop_case(
    seed: int,
    *,
    late_frac: float = 0.0,
    timestamp: bool = False,
    lateness: bool = False,
    panes_per_window: int | None = None,
    aggregates: list[tuple[str, str, str]] = WINDOW_AGGREGATES,
) -> None:
    """One random hopping-window case through LaminarDB and DuckDB.

    With ``lateness``, an allowed lateness (0 .. 2 windows) is declared on the
    source or on the stream: windows close that much later and take late rows
    until then. ``panes_per_window`` fixes the hop at size / that.
    ``aggregates``: the select items (the default includes kinds that do not
    slide, so windows merge their panes).
    """
    announce_seed(seed)
    rng = np.random.default_rng(seed)
    size = int(rng.choice([10, 60, 100, 1000, 60_000]))
    hop = int(rng.choice([size // 10, size // 4, size // 3 + 1, size // 2, size, size + 7]))
    if panes_per_window is not None:
        size = max(size, panes_per_window)
        hop = size // panes_per_window
    data = window_table(rng, size_ms=size)
    keys = GROUPINGS[int(rng.integers(len(GROUPINGS)))]
    where = FILTERS[int(rng.integers(len(FILTERS)))]
    fn = str(rng.choice(["hop", "slide"]))
    table = with_late_rows(rng, data, late_frac) if late_frac else data.table
    batches = split_batches(rng, table)
    print(f"case: {fn} size={size} hop={hop} delay={data.delay_ms} keys={keys} {where!r}")
    ts_type = "TIMESTAMP" if timestamp else "BIGINT"
    pushed = timestamp_batches(batches) if timestamp else batches
    items = ", ".join(f"{ours} AS {alias}" for ours, _, alias in aggregates)
    allowed = int(rng.integers(0, 2 * size + 1)) if lateness else 0
    on_source = bool(rng.integers(2))
    late_src = f" WITH (allowed_lateness = INTERVAL '{allowed}' MILLISECOND)" if on_source else ""
    late_stream = "" if on_source else f" WITH (allowed_lateness = {allowed})"
    ddl = (
        f"CREATE SOURCE t (k VARCHAR, g BIGINT, x BIGINT, y DOUBLE, s VARCHAR, ts {ts_type},"
        f" WATERMARK FOR ts AS ts - INTERVAL '{data.delay_ms}' MILLISECOND){late_src};"
        f"CREATE STREAM w AS SELECT {', '.join(keys)}, window_start, window_end, {items} "
        f"FROM t {where} GROUP BY {', '.join(keys)}, {fn}(ts, INTERVAL '{size}' MILLISECOND, "
        f"INTERVAL '{hop}' MILLISECOND){late_stream};"
    )
    result = run_engine(ddl, pushed, run_every=int(rng.choice([1, 3])))
    t = arrival_watermarks(batches, data.delay_ms)
    names, expected = duck(hop_oracle(keys, where, size, hop, allowed, aggregates=aggregates), t=t)
    got = bounds_to_ms(result.table) if timestamp else result.table
    assert_same_rows(rows_of(got, names), expected, names, seed=seed)
    _, late = duck(late_oracle(where, size, hop, allowed), t=t)
    assert result.late_rows == late[0][0], f"seed {seed}"
    if not late_frac:
        assert result.late_rows == 0


@settings(max_examples=examples(25), deadline=None)
@given(seed=SEEDS)
def test_hop_matches_duckdb(seed):
    hop_case(seed)


@settings(max_examples=examples(15), deadline=None)
@given(seed=SEEDS)
def test_hop_late_rows_match_duckdb(seed):
    """Rows beyond the watermark delay: open windows still count them, the rest is late."""
    hop_case(seed, late_frac=0.05)


@settings(max_examples=examples(15), deadline=None)
@given(seed=SEEDS)
def test_allowed_lateness_matches_duckdb(seed):
    """allowed_lateness (on the source or the stream) keeps windows open for late rows."""
    hop_case(seed, late_frac=0.08, lateness=True)


@settings(max_examples=examples(20), deadline=None)
@given(seed=SEEDS)
def test_hop_shared_merges_match_duckdb(seed):
    """Windows of 3..12 panes are built from merges shared between overlapping
    windows (suffixes of a block of panes plus a running prefix); rows that
    arrive late into panes already merged (allowed lateness, rows behind the
    watermark) must make those merges be rebuilt."""
    rng = np.random.default_rng(seed)
    hop_case(seed, late_frac=0.1, lateness=True, panes_per_window=int(rng.integers(3, 13)))


@settings(max_examples=examples(5), deadline=None)
@given(seed=SEEDS)
def test_hop_timestamp_matches_duckdb(seed):
    """A TIMESTAMP time column gives TIMESTAMP window bounds and the same windows."""
    hop_case(seed, late_frac=0.02, timestamp=True)


def test_hop_null_times_and_duplicates_by_hand():
    """A row is in every window containing it; NULL times are counted late."""
    ddl = (
        "CREATE SOURCE t (k VARCHAR, v BIGINT, ts BIGINT,"
        " WATERMARK FOR ts AS ts - INTERVAL '0' MILLISECOND);"
        "CREATE STREAM w AS SELECT k, window_start, window_end, COUNT(*) AS n, SUM(v) AS sv"
        " FROM t GROUP BY k, slide(ts, INTERVAL '25' MILLISECOND, INTERVAL '10' MILLISECOND)"
    )
    batch = pa.RecordBatch.from_pydict(
        {"k": ["a", "a", "a", "b", None], "v": [1, 1, 5, 7, 9], "ts": [14, 14, None, 16, 30]},
        schema=pa.schema([("k", pa.string()), ("v", pa.int64()), ("ts", pa.int64())]),
    )
    result = run_engine(ddl, [batch])
    assert result.late_rows == 1
    got = sorted(
        rows_of(result.table, ["k", "window_start", "window_end", "n", "sv"]),
        key=lambda r: (r[0] or "", r[1]),
    )
    assert got == [
        (None, 10, 35, 1, 9),
        (None, 20, 45, 1, 9),
        (None, 30, 55, 1, 9),
        ("a", -10, 15, 2, 2),
        ("a", 0, 25, 2, 2),
        ("a", 10, 35, 2, 2),
        ("b", 0, 25, 1, 7),
        ("b", 10, 35, 1, 7),
    ]


@pytest.mark.parametrize(
    ("group_by", "code", "column"),
    [
        ("hop(ts, INTERVAL '10' SECOND)", "LDB-1001", 52),
        ("hop(k, INTERVAL '10' SECOND, INTERVAL '1' SECOND)", "LDB-2001", 56),
        ("hop(ts, INTERVAL '10' SECOND, INTERVAL '0' SECOND)", "LDB-2001", 82),
        ("hop(ts, INTERVAL '1' DAY, INTERVAL '1' MILLISECOND)", "LDB-1005", 78),
    ],
)
def test_bad_hop_fails_at_create(group_by, code, column):
    with laminardb.open() as db:
        db.execute("CREATE SOURCE t (k VARCHAR, ts BIGINT)")
        with pytest.raises(laminardb.LaminarError) as info:
            db.execute(f"CREATE STREAM w AS SELECT COUNT(*) FROM t GROUP BY {group_by}")
        assert info.value.code == code
        assert (info.value.line, info.value.column) == (1, column), str(info.value)


# ---------------------------------------------------------------------------
# Session windows
# ---------------------------------------------------------------------------


def session_oracle(
    keys: list[str],
    where: str,
    gap: int,
    *,
    aggregates: list[tuple[str, str, str]] = WINDOW_AGGREGATES,
) -> str:
    """DuckDB SQL: sessions as gaps and islands (a new session where the gap to
    the key's previous row is at least ``gap``). Both window functions order
    by ``ts, seq`` so that rows with equal times fall in the same order."""
    cond = where.replace("WHERE", "AND") if where else ""
    part = f"PARTITION BY {', '.join(keys)}" if keys else ""
    items = ", ".join(f"{theirs} AS {alias}" for _, theirs, alias in aggregates)
    return f"""
        WITH f AS (SELECT * FROM t WHERE ts IS NOT NULL {cond}),
        o AS (
          SELECT *, CASE WHEN ts - lag(ts) OVER ({part} ORDER BY ts, seq) < {gap} THEN 0 ELSE 1 END
                    AS brk
          FROM f),
        s AS (
          SELECT *, sum(brk) OVER ({part} ORDER BY ts, seq ROWS UNBOUNDED PRECEDING) AS sid
          FROM o)
        SELECT {", ".join(keys)}, min(ts) AS window_start, max(ts) + {gap} AS window_end, {items}
        FROM s GROUP BY {", ".join(keys)}, sid"""


def session_case(seed: int, *, timestamp: bool = False, late_frac: float = 0.0) -> None:
    """One random session case; no row is late: rows are out of order within the
    delay, or (``late_frac``) beyond it but within the allowed lateness, where a
    late row may bridge two sessions still open."""
    announce_seed(seed)
    rng = np.random.default_rng(seed)
    size = int(rng.choice([10, 100, 1000]))
    data = window_table(rng, size_ms=size)
    gap = int(rng.integers(1, 3 * size + 1))
    table = with_late_rows(rng, data, late_frac) if late_frac else data.table
    # A row is at most delay + 3 * size + 1 behind the watermark (with_late_rows).
    allowed = data.delay_ms + 3 * size + 2 if late_frac else 0
    keys = GROUPINGS[int(rng.integers(len(GROUPINGS)))]
    where = FILTERS[int(rng.integers(len(FILTERS)))]
    batches = split_batches(rng, table)
    print(f"case: session gap={gap} delay={data.delay_ms} keys={keys} {where!r}")
    ts_type = "TIMESTAMP" if timestamp else "BIGINT"
    pushed = timestamp_batches(batches) if timestamp else batches
    items = ", ".join(f"{ours} AS {alias}" for ours, _, alias in WINDOW_AGGREGATES)
    ddl = (
        f"CREATE SOURCE t (k VARCHAR, g BIGINT, x BIGINT, y DOUBLE, s VARCHAR, ts {ts_type},"
        f" WATERMARK FOR ts AS ts - INTERVAL '{data.delay_ms}' MILLISECOND);"
        f"CREATE STREAM w AS SELECT {', '.join(keys)}, window_start, window_end, {items} "
        f"FROM t {where} GROUP BY {', '.join(keys)}, session(ts, INTERVAL '{gap}' MILLISECOND)"
        f" WITH (allowed_lateness = {allowed});"
    )
    result = run_engine(ddl, pushed, run_every=int(rng.choice([1, 3])))
    names, expected = duck(session_oracle(keys, where, gap), t=arrival_watermarks(batches, 0))
    got = bounds_to_ms(result.table) if timestamp else result.table
    assert result.late_rows == 0
    assert_same_rows(rows_of(got, names), expected, names, seed=seed)


@settings(max_examples=examples(25), deadline=None)
@given(seed=SEEDS)
def test_session_matches_duckdb(seed):
    session_case(seed)


@settings(max_examples=examples(15), deadline=None)
@given(seed=SEEDS)
@example(seed=12153880)  # draws no rows at all
def test_session_late_rows_within_lateness_match_duckdb(seed):
    """Rows beyond the delay but within allowed_lateness join (and bridge) open sessions."""
    session_case(seed, late_frac=0.1)


@settings(max_examples=examples(5), deadline=None)
@given(seed=SEEDS)
def test_session_timestamp_matches_duckdb(seed):
    session_case(seed, timestamp=True)


def test_session_bridge_merges_and_late_rows_count():
    """An out-of-order row within the delay bridges two open sessions of its key;
    a row whose session already closed is late, and so is a NULL time."""
    ddl = (
        "CREATE SOURCE t (k VARCHAR, v BIGINT, ts BIGINT,"
        " WATERMARK FOR ts AS ts - INTERVAL '50' MILLISECOND);"
        "CREATE STREAM w AS SELECT k, window_start, window_end, COUNT(*) AS n, SUM(v) AS sv,"
        " MAX(v) AS mx FROM t GROUP BY k, session(ts, INTERVAL '10' MILLISECOND)"
    )
    schema = pa.schema([("k", pa.string()), ("v", pa.int64()), ("ts", pa.int64())])
    batches = [
        pa.RecordBatch.from_pydict(
            {"k": ["a", "a", "b", "a"], "v": [1, 2, 3, 4], "ts": [0, 5, 3, 30]}, schema=schema
        ),
        # 22 joins [30, 40); 13 then bridges [0, 15) and [22, 40)
        pa.RecordBatch.from_pydict({"k": ["a", "a"], "v": [7, 8], "ts": [22, 13]}, schema=schema),
        pa.RecordBatch.from_pydict({"k": ["a"], "v": [9], "ts": [200]}, schema=schema),
        # watermark is 150: [0, 40) has closed, so 1 is late; NULL time is late
        pa.RecordBatch.from_pydict({"k": ["a", "b"], "v": [9, 1], "ts": [1, None]}, schema=schema),
    ]
    result = run_engine(ddl, batches)
    assert result.late_rows == 2
    assert result.table.to_pylist() == [
        {"k": "a", "window_start": 0, "window_end": 40, "n": 5, "sv": 22, "mx": 8},
        {"k": "b", "window_start": 3, "window_end": 13, "n": 1, "sv": 3, "mx": 3},
        {"k": "a", "window_start": 200, "window_end": 210, "n": 1, "sv": 9, "mx": 9},
    ]


@settings(max_examples=examples(10), deadline=None)
@given(seed=SEEDS)
def test_group_by_expressions_match_duckdb(seed):
    """GROUP BY expressions (not just columns), repeated in the select list."""
    announce_seed(seed)
    rng = np.random.default_rng(seed)
    data = window_table(rng, size_ms=100)
    exprs = ["upper(k)", "x % 3", "coalesce(s, 'none') || '/' || CAST(g AS VARCHAR)"]
    keys = [str(e) for e in rng.choice(exprs, size=int(rng.integers(1, 3)), replace=False)]
    aliased = ", ".join(f"{e} AS key{i}" for i, e in enumerate(keys))
    ddl = (
        f"CREATE SOURCE t (k VARCHAR, g BIGINT, x BIGINT, y DOUBLE, s VARCHAR, ts BIGINT,"
        f" WATERMARK FOR ts AS ts - INTERVAL '{data.delay_ms}' MILLISECOND);"
        f"CREATE STREAM w AS SELECT {aliased}, window_start, COUNT(*) AS n, SUM(y) AS sy"
        f" FROM t GROUP BY {', '.join(keys)}, tumble(ts, INTERVAL '100' MILLISECOND);"
    )
    result = run_engine(ddl, split_batches(rng, data.table))
    start = "(ts - ((ts % 100) + 100) % 100)"
    names, expected = duck(
        f"SELECT {aliased}, {start} AS window_start, COUNT(*) AS n, SUM(y) AS sy FROM t "
        f"GROUP BY {', '.join(keys)}, {start}",
        t=data.table,
    )
    assert_same_rows(rows_of(result.table, names), expected, names, seed=seed)


SPECIAL_DOUBLES = [math.nan, math.inf, -math.inf, -0.0, 0.0, 1.5, -2.5, 1e300, None]


@settings(max_examples=examples(10), deadline=None)
@given(seed=SEEDS)
def test_min_max_of_specials_match_duckdb(seed):
    """MIN/MAX of DOUBLE with NaN (above every number), +-inf, -0.0 and NULLs,
    in tumbling windows and in hopping ones built from shared pane merges."""
    announce_seed(seed)
    rng = np.random.default_rng(seed)
    n = 600
    picks = rng.integers(len(SPECIAL_DOUBLES), size=n)
    table = pa.table(
        {
            "k": pa.array([f"k{i}" for i in rng.integers(0, 5, size=n)], pa.string()),
            "y": pa.array([SPECIAL_DOUBLES[i] for i in picks], pa.float64()),
            "ts": pa.array(np.sort(rng.integers(0, 400, size=n)), pa.int64()),
        }
    )
    batches = split_batches(rng, table)
    aggs = [("MIN(y)", "MIN(y)", "mn"), ("MAX(y)", "MAX(y)", "mx"), ("COUNT(y)", "COUNT(y)", "c")]
    items = ", ".join(f"{ours} AS {alias}" for ours, _, alias in aggs)
    for size, hop in [(10, 10), (30, 10), (40, 10)]:
        ddl = (
            "CREATE SOURCE t (k VARCHAR, y DOUBLE, ts BIGINT, WATERMARK FOR ts AS ts);"
            f"CREATE STREAM w AS SELECT k, window_start, window_end, {items} FROM t GROUP BY k, "
            f"hop(ts, INTERVAL '{size}' MILLISECOND, INTERVAL '{hop}' MILLISECOND);"
        )
        result = run_engine(ddl, batches, run_every=int(rng.choice([1, 2])))
        t = arrival_watermarks(batches, 0)
        names, expected = duck(hop_oracle(["k"], "", size, hop, 0, aggregates=aggs), t=t)
        assert_same_rows(rows_of(result.table, names), expected, names, seed=seed)

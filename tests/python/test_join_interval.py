"""Interval joins against DuckDB's batch join over the same rows.

Two sources, ``a`` (left) and ``b`` (right), each with its own watermark
delay; rows arrive out of order within the delay, in batches of random sizes,
the two sources' batches interleaved at random (inline driver with random run
points, or the reactor thread; one or two reactors). After the final
watermark on both, the stream's rows must equal DuckDB's ``[INNER | LEFT |
RIGHT | FULL] JOIN`` with the same ON (equality keys, NULL keys among them, a
bound on the time difference written as BETWEEN or as a pair of inequalities,
strict or not, and optionally a residual condition), for many keys and rows
inside and beyond the bound. Other tests: late rows counted, bounded state
(metrics per side), a restart in the middle equal to the uninterrupted run,
a window over the join's output, and the errors with code, line and column.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pyarrow as pa
import pytest
from _oracle_util import (
    FINAL_WATERMARK,
    announce_seed,
    assert_same_rows,
    close_as,
    duck,
    examples,
    feed_join_steadily,
    rows_of,
    rows_to_batches,
    run_two_inputs,
    seed_strategy_bounds,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import laminardb

A = pa.schema([("k", pa.string()), ("g", pa.int64()), ("ts", pa.int64()), ("x", pa.int64())])
B = pa.schema([("k", pa.string()), ("g", pa.int64()), ("ts", pa.int64()), ("y", pa.int64())])
TYPES = ["JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN"]
COLS = ["ak", "ats", "x", "bk", "bts", "y"]
SELECT = "SELECT a.k AS ak, a.ts AS ats, a.x, b.k AS bk, b.ts AS bts, b.y"


def gen_side(rng: random.Random, n: int, keys: list[str], delay: int, id0: int) -> list[tuple]:
    """Rows (k, g, ts, id) whose disorder stays within ``delay`` (none late)."""
    rows = []
    clock = rng.randrange(0, 20)
    for i in range(n):
        clock += rng.randrange(0, 8)
        ts = max(0, clock - rng.randrange(0, delay + 1))
        k = None if rng.random() < 0.08 else rng.choice(keys)
        rows.append((k, rng.randrange(0, 3), ts, id0 + i))
    return rows


def run_join(
    rng: random.Random,
    left: list[tuple],
    right: list[tuple],
    select: str,
    delays: tuple[int, int],
    *,
    cores: int,
    threaded: bool,
) -> tuple[list[pa.RecordBatch], int]:
    """Push both sides interleaved at random; return the output and late rows."""
    ddl = (
        f"CREATE SOURCE a (k VARCHAR, g BIGINT, ts BIGINT, x BIGINT, "
        f"WATERMARK FOR ts AS ts - INTERVAL '{delays[0]}' MILLISECOND);"
        f"CREATE SOURCE b (k VARCHAR, g BIGINT, ts BIGINT, y BIGINT, "
        f"WATERMARK FOR ts AS ts - INTERVAL '{delays[1]}' MILLISECOND);"
        f"CREATE STREAM j AS {select}"
    )
    sides = [("a", rows_to_batches(rng, left, A)), ("b", rows_to_batches(rng, right, B))]
    return run_two_inputs(rng, ddl, sides, cores=cores, threaded=threaded)


def plus(n: int, *, interval: bool = True) -> str:
    """``+ n`` as an offset of a time: an INTERVAL or a plain integer."""
    sign = "+" if n >= 0 else "-"
    return f"{sign} INTERVAL '{abs(n)}' MILLISECOND" if interval else f"{sign} {abs(n)}"


def bound_condition(rng: random.Random, lo: int, hi: int) -> str:
    """``lo <= b.ts - a.ts <= hi`` in one of the spellings users write."""
    shape = rng.randrange(4)
    if shape == 0:
        return f"b.ts BETWEEN a.ts {plus(lo)} AND a.ts {plus(hi)}"
    if shape == 1:  # strict, on the other side: a.ts > b.ts - (hi + 1) ...
        return f"a.ts > b.ts {plus(-hi - 1)} AND a.ts {plus(lo - 1)} < b.ts"
    if shape == 2:
        return f"b.ts <= a.ts {plus(hi, interval=False)} AND b.ts >= a.ts {plus(lo)}"
    return f"a.ts >= b.ts {plus(-hi)} AND a.ts <= b.ts {plus(-lo, interval=False)}"


def duck_on(on: str) -> str:
    """The same condition for DuckDB, whose BIGINT times take no INTERVAL."""
    return re.sub(r"INTERVAL '(\d+)' MILLISECOND", r"\1", on)


@settings(max_examples=examples(40), deadline=None)
@given(
    seed=st.integers(*seed_strategy_bounds()),
    jtype=st.sampled_from(TYPES),
    residual=st.booleans(),
    two_keys=st.booleans(),
    cores=st.sampled_from([1, 2]),
    threaded=st.booleans(),
)
def test_interval_join_matches_duckdb(
    seed: int, jtype: str, *, residual: bool, two_keys: bool, cores: int, threaded: bool
) -> None:
    """Every join type, every spelling of the bound, equals DuckDB's batch join."""
    announce_seed(seed)
    rng = random.Random(seed)
    keys = [f"s{i}" for i in range(rng.choice([1, 3, 20, 200]))]
    delays = (rng.choice([0, 3, 20]), rng.choice([0, 5, 30]))
    left = gen_side(rng, rng.randrange(0, 250), keys, delays[0], 0)
    right = gen_side(rng, rng.randrange(0, 300), keys, delays[1], 100000)
    lo = rng.randrange(-30, 5)
    hi = lo + rng.randrange(0, 40)
    on = "a.k = b.k" + (" AND a.g = b.g" if two_keys else "")
    on += " AND " + bound_condition(rng, lo, hi)
    if residual:
        on += " AND a.x % 3 <> b.y % 2"
    select = f"{SELECT} FROM a {jtype} b ON {on}"
    out, late = run_join(rng, left, right, select, delays, cores=cores, threaded=threaded)
    assert late == 0, f"no row is late by construction, got {late} (seed {seed})"
    got = rows_of(pa.Table.from_batches(out), COLS) if out else []
    ta = pa.Table.from_pylist([dict(zip(A.names, r)) for r in left], A)
    tb = pa.Table.from_pylist([dict(zip(B.names, r)) for r in right], B)
    _, want = duck(f"{SELECT} FROM ta a {jtype} tb b ON {duck_on(on)}", ta=ta, tb=tb)
    assert_same_rows(got, want, COLS, seed=seed)


def window_join_input(rng: random.Random) -> tuple[tuple[int, int], list, list]:
    """A window join test's watermark delays and left and right rows."""
    keys = [f"s{i}" for i in range(rng.choice([1, 4, 50]))]
    delays = (rng.choice([0, 5, 30]), rng.choice([0, 10]))
    left = gen_side(rng, rng.randrange(0, 250), keys, delays[0], 0)
    right = gen_side(rng, rng.randrange(0, 250), keys, delays[1], 100000)
    return delays, left, right


@settings(max_examples=examples(25), deadline=None)
@given(
    seed=st.integers(*seed_strategy_bounds()),
    jtype=st.sampled_from(TYPES),
    cores=st.sampled_from([1, 2]),
    threaded=st.booleans(),
)
def test_window_join_matches_duckdb(seed: int, jtype: str, cores: int, *, threaded: bool) -> None:
    """FROM tumble(a) JOIN tumble(b) ON window_start and keys equals DuckDB's
    join on ``ts - ts % size`` for every join type."""
    announce_seed(seed)
    rng = random.Random(seed)
    delays, left, right = window_join_input(rng)
    size = rng.choice([7, 25, 100])
    cols = ["ak", "aws", "awe", "ats", "x", "bk", "bws", "bts", "y"]
    items = (
        "a.k AS ak, a.window_start AS aws, a.window_end AS awe, a.ts AS ats, a.x, "
        "b.k AS bk, b.window_start AS bws, b.ts AS bts, b.y"
    )
    select = (
        f"SELECT {items} FROM tumble(a, ts, INTERVAL '{size}' MILLISECOND) {jtype} "
        f"tumble(b, ts, INTERVAL '{size}' MILLISECOND) "
        "ON a.window_start = b.window_start AND a.k = b.k"
    )
    out, late = run_join(rng, left, right, select, delays, cores=cores, threaded=threaded)
    assert late == 0, f"no row is late by construction, got {late} (seed {seed})"
    got = rows_of(pa.Table.from_batches(out), cols) if out else []
    ta = pa.Table.from_pylist([dict(zip(A.names, r)) for r in left], A)
    tb = pa.Table.from_pylist([dict(zip(B.names, r)) for r in right], B)
    win = f"SELECT *, ts - ts % {size} AS window_start, ts - ts % {size} + {size} AS window_end"
    _, want = duck(
        f"SELECT {items} FROM ({win} FROM ta) a {jtype} ({win} FROM tb) b "
        "ON a.window_start = b.window_start AND a.k = b.k",
        ta=ta,
        tb=tb,
    )
    assert_same_rows(got, want, cols, seed=seed)


# A TIMESTAMP time column in each unit: (arrow unit, SQL unit of one tick,
# arrow value of one tick, microseconds of one tick).
TS_UNITS = {
    "s": ("SECOND", 1, 1_000_000),
    "ms": ("MILLISECOND", 1, 1000),
    "us": ("MILLISECOND", 1000, 1000),
    "ns": ("MILLISECOND", 1_000_000, 1000),
}


def windows_of(ts: int | None, size: int, slide: int) -> list[int | None]:
    """The starts of the windows holding ``ts`` (multiples of ``slide``); a
    NULL time is in one window of NULL start (its row is emitted once)."""
    if ts is None:
        return [None]
    last = ts - ts % slide
    return [w for w in range(last - size + 1, last + 1) if w % slide == 0 and w > ts - size]


def explode(rows: list[tuple], size: int, slide: int) -> list[tuple]:
    """Each row once per window of its time: (k, g, ts, v, window_start, window_end)."""
    return [
        (*r, w, None if w is None else w + size)
        for r in rows
        for w in windows_of(r[2], size, slide)
    ]


def ticks(table: pa.Table, column: str, tick_us: int) -> list:
    """A column's values; a TIMESTAMP's as integers, its microseconds in ticks
    of ``tick_us``."""
    col = table.column(column)
    if not pa.types.is_timestamp(col.type):
        return col.to_pylist()
    us = col.cast(pa.timestamp("us")).cast(pa.int64()).to_pylist()
    return [None if v is None else v // tick_us for v in us]


@settings(max_examples=examples(30), deadline=None)
@given(
    seed=st.integers(*seed_strategy_bounds()),
    jtype=st.sampled_from(TYPES),
    time_type=st.sampled_from(["BIGINT", "s", "ms", "us", "ns"]),
    hop=st.booleans(),
    residual=st.booleans(),
    cores=st.sampled_from([1, 2]),
    threaded=st.booleans(),
)
def test_window_join_hop_and_timestamp_match_duckdb(
    seed: int,
    jtype: str,
    time_type: str,
    *,
    hop: bool,
    residual: bool,
    cores: int,
    threaded: bool,
) -> None:
    """FROM hop(a) JOIN hop(b) (or tumble) ON window_start and keys, over a
    BIGINT or a TIMESTAMP time column of any unit, equals DuckDB's join of
    the two sides with each row repeated once per window of its time."""
    announce_seed(seed)
    rng = random.Random(seed)
    delays, left, right = window_join_input(rng)
    size = rng.choice([7, 25, 60])
    slide = rng.choice([d for d in (1, 2, 3, 5, 7, 10, 25) if d <= size]) if hop else size
    unit, scale, tick_us = TS_UNITS.get(time_type, ("MILLISECOND", 1, 1))
    ts_type = pa.int64() if time_type == "BIGINT" else pa.timestamp(time_type)
    sql_type = "BIGINT" if time_type == "BIGINT" else "TIMESTAMP"
    sa = pa.schema([("k", pa.string()), ("g", pa.int64()), ("ts", ts_type), ("x", pa.int64())])
    sb = pa.schema([("k", pa.string()), ("g", pa.int64()), ("ts", ts_type), ("y", pa.int64())])

    def scaled(rows: list[tuple]) -> list[tuple]:
        return [(k, g, ts * scale, v) for k, g, ts, v in rows]

    def win(src: str) -> str:
        args = f"{src}, ts, INTERVAL '{size}' {unit}"
        return f"hop({args}, INTERVAL '{slide}' {unit})" if hop else f"tumble({args})"

    cols = ["ak", "aws", "awe", "ats", "x", "bk", "bws", "bwe", "bts", "y"]
    items = (
        "a.k AS ak, a.window_start AS aws, a.window_end AS awe, a.ts AS ats, a.x, "
        "b.k AS bk, b.window_start AS bws, b.window_end AS bwe, b.ts AS bts, b.y"
    )
    on = "a.window_start = b.window_start AND a.k = b.k"
    if residual:
        on += " AND a.x % 3 <> b.y % 2"
    ddl = (
        f"CREATE SOURCE a (k VARCHAR, g BIGINT, ts {sql_type}, x BIGINT, "
        f"WATERMARK FOR ts AS ts - INTERVAL '{delays[0]}' {unit});"
        f"CREATE SOURCE b (k VARCHAR, g BIGINT, ts {sql_type}, y BIGINT, "
        f"WATERMARK FOR ts AS ts - INTERVAL '{delays[1]}' {unit});"
        f"CREATE STREAM j AS SELECT {items} FROM {win('a')} {jtype} {win('b')} ON {on}"
    )
    sides = [
        ("a", rows_to_batches(rng, scaled(left), sa)),
        ("b", rows_to_batches(rng, scaled(right), sb)),
    ]
    out, late = run_two_inputs(rng, ddl, sides, cores=cores, threaded=threaded)
    assert late == 0, f"no row is late by construction, got {late} (seed {seed})"
    table = pa.Table.from_batches(out) if out else None
    got = list(zip(*(ticks(table, c, tick_us) for c in cols))) if table is not None else []
    xs = pa.schema([*A, ("window_start", pa.int64()), ("window_end", pa.int64())])
    ys = pa.schema([*B, ("window_start", pa.int64()), ("window_end", pa.int64())])
    ta = pa.Table.from_pylist([dict(zip(xs.names, r)) for r in explode(left, size, slide)], xs)
    tb = pa.Table.from_pylist([dict(zip(ys.names, r)) for r in explode(right, size, slide)], ys)
    _, want = duck(f"SELECT {items} FROM ta a {jtype} tb b ON {on}", ta=ta, tb=tb)
    assert_same_rows(got, want, cols, seed=seed)


def test_window_join_outer_rows_when_the_window_closes() -> None:
    """A window join emits a window when it closes on both sides: its pairs,
    then the unmatched rows of an outer side."""
    with laminardb.open() as db:
        open_ab(
            db,
            "CREATE STREAM j AS SELECT a.window_start, a.ts, b.ts AS bts "
            "FROM tumble(a, ts, INTERVAL '1' SECOND) LEFT JOIN "
            "tumble(b, ts, INTERVAL '1' SECOND) ON a.window_start = b.window_start "
            "AND a.k = b.k",
        )
        sub = db.subscribe("j")
        db.insert("a", [{"k": "p", "ts": 100, "x": 0}, {"k": "q", "ts": 200, "x": 0}])
        db.insert("b", [{"k": "p", "ts": 999, "y": 0}])
        db.run_until_idle()
        assert drain(sub) == []  # both rows of p are in, the window is open
        db.insert("b", [{"k": "p", "ts": 1000, "y": 0}])  # closed on b, open on a
        db.run_until_idle()
        assert drain(sub) == []
        db.insert("a", [{"k": "p", "ts": 1000, "x": 0}])  # closed on both
        db.run_until_idle()
        assert drain(sub) == [
            {"window_start": 0, "ts": 100, "bts": 999},
            {"window_start": 0, "ts": 200, "bts": None},
        ]


def open_ab(db: laminardb.Connection, stream: str) -> None:
    db.execute(
        "CREATE SOURCE a (k VARCHAR, ts BIGINT, x BIGINT, WATERMARK FOR ts);"
        "CREATE SOURCE b (k VARCHAR, ts BIGINT, y BIGINT, WATERMARK FOR ts);" + stream
    )


def drain(sub: laminardb.Subscription) -> list[dict]:
    rows: list[dict] = []
    while (got := sub.poll(0)) is not None:
        rows += got.to_pylist()
    return rows


def test_interval_join_emits_pairs_at_once_and_outer_rows_on_watermark() -> None:
    """A pair leaves as soon as both rows are in; an unmatched row when the
    other side's watermark passes its time plus the bound."""
    with laminardb.open() as db:
        open_ab(
            db,
            "CREATE STREAM j AS SELECT a.ts AS ats, b.ts AS bts FROM a LEFT JOIN b "
            "ON a.k = b.k AND b.ts BETWEEN a.ts AND a.ts + INTERVAL '10' MILLISECOND",
        )
        sub = db.subscribe("j")
        db.insert("a", [{"k": "p", "ts": 100, "x": 1}, {"k": "q", "ts": 100, "x": 2}])
        db.insert("b", [{"k": "p", "ts": 105, "y": 1}])
        db.run_until_idle()
        assert drain(sub) == [{"ats": 100, "bts": 105}]
        db.insert("b", [{"k": "z", "ts": 110, "y": 0}])  # b's watermark 110: q may match
        db.run_until_idle()
        assert drain(sub) == []
        db.insert("b", [{"k": "z", "ts": 111, "y": 0}])  # 111 > 100 + 10: q is final
        db.run_until_idle()
        assert drain(sub) == [{"ats": 100, "bts": None}]


def test_interval_join_late_rows_counted() -> None:
    """Rows behind their own side's watermark are dropped and counted."""
    with laminardb.open() as db:
        open_ab(
            db,
            "CREATE STREAM j AS SELECT a.ts AS ats, b.ts AS bts FROM a FULL JOIN b "
            "ON a.k = b.k AND b.ts BETWEEN a.ts - 5 AND a.ts + 5",
        )
        sub = db.subscribe("j")
        db.insert("a", [{"k": "p", "ts": 100, "x": 0}])
        db.insert("a", [{"k": "p", "ts": 90, "x": 1}])  # late: behind 100
        db.insert("b", [{"k": "p", "ts": 102, "y": 0}])
        db.insert("b", [{"k": "p", "ts": 97, "y": 1}])  # late: behind 102
        for s in ("a", "b"):
            db.source(s).watermark(FINAL_WATERMARK)
        db.run_until_idle()
        assert drain(sub) == [{"ats": 100, "bts": 102}]
        assert db.late_rows("j") == 2


@pytest.mark.parametrize(
    ("join", "joined"),
    [
        (
            "FROM a FULL JOIN b ON a.k = b.k AND b.ts BETWEEN a.ts - 5 AND a.ts + 5",
            {("p", 100, 102)},
        ),
        (
            "FROM hop(a, ts, INTERVAL '20' MILLISECOND, INTERVAL '10' MILLISECOND) "
            "FULL JOIN hop(b, ts, INTERVAL '20' MILLISECOND, INTERVAL '10' MILLISECOND) "
            "ON a.window_start = b.window_start AND a.k = b.k",
            {("p", 100, 102)},
        ),
        (  # 97 would be 100's quote, but it is late
            "FROM a LEFT ASOF JOIN b MATCH_CONDITION(a.ts >= b.ts) ON a.k = b.k",
            {("p", 100, None)},
        ),
    ],
)
def test_join_late_rows_go_to_late_output(join: str, joined: set) -> None:
    """WITH (late_output = TRUE) on a join (interval, window or ASOF): each
    row behind its own input's watermark goes to the late stream, in arrival
    order, as a joined row whose other side is NULL; the join's answer is
    that without them."""
    with laminardb.open() as db:
        open_ab(
            db,
            "CREATE STREAM j AS SELECT a.k AS ak, a.ts AS ats, b.ts AS bts "
            f"{join} WITH (late_output = TRUE)",
        )
        sub, late = db.subscribe("j"), db.subscribe("j_late")
        db.insert("a", [{"k": "p", "ts": 100, "x": 0}])
        db.insert("a", [{"k": "p", "ts": 90, "x": 1}, {"k": "q", "ts": 101, "x": 2}])
        db.insert("b", [{"k": "p", "ts": 102, "y": 0}])
        db.insert("b", [{"k": "p", "ts": 97, "y": 1}, {"k": None, "ts": 60, "y": 2}])
        for s in ("a", "b"):
            db.source(s).watermark(FINAL_WATERMARK)
        db.run_until_idle()
        names = late.schema.names
        got = []
        while (batch := late.poll(0)) is not None:
            got += list(zip(*(c.to_pylist() for c in batch.columns)))
        # a's columns (k, ts, x, then its windows in a window join), then b's
        nb = names.index("y") - names.index("x")
        assert names[:3] == ["k", "ts", "x"], names
        assert names[nb : nb + 2] == ["k", "ts"], names
        yc = names.index("y")
        sides = [(r[:3], (*r[nb : nb + 2], r[yc])) for r in got]
        assert sides == [
            (("p", 90, 1), (None, None, None)),
            ((None, None, None), ("p", 97, 1)),
            ((None, None, None), (None, 60, 2)),
        ], got
        assert db.late_rows("j") == 3
        got_joined = {(r["ak"], r["ats"], r["bts"]) for r in drain(sub) if r["ats"] != 101}
        assert got_joined == joined, got_joined


def test_interval_join_state_is_bounded() -> None:
    """Rows and bytes held per side stay under a bound while the input grows tenfold."""
    nkeys = 50
    with laminardb.open() as db:
        open_ab(
            db,
            "CREATE STREAM j AS SELECT a.k, a.ts, b.y FROM a FULL JOIN b ON a.k = b.k "
            "AND b.ts BETWEEN a.ts - INTERVAL '20' MILLISECOND AND a.ts + INTERVAL "
            "'20' MILLISECOND",
        )
        sub = db.subscribe("j")
        emitted, samples = feed_join_steadily(
            db, sub, ("a", "x", 1), ("b", "y", 1), nkeys=nkeys, seed=11
        )
        held = [
            tuple(
                m[("stream", "j", f"join_{side}_{what}")]
                for side in ("left", "right")
                for what in ("rows", "bytes")
            )
            for m in samples
        ]
    # Each side holds at most the rows of the last bound (20 ms) plus a batch.
    for lrows, lbytes, rrows, rbytes in held:
        assert 0 < lrows <= 700, held
        assert 0 < rrows <= 700, held
        assert 0 < lbytes <= 700 * 64, held
        assert 0 < rbytes <= 700 * 64, held
    assert held[1][0] <= held[0][0] * 2 + 100, held
    assert held[1][2] <= held[0][2] * 2 + 100, held
    assert emitted > 50000


def test_interval_join_window_over_its_output() -> None:
    """A windowed GROUP BY over the join (in one query and as a cascade) closes
    its windows by the join's output watermark: min(a's, b's - the bound)."""
    with laminardb.open() as db:
        open_ab(
            db,
            "CREATE STREAM w AS SELECT a.k, window_start, COUNT(*) AS n FROM a JOIN b "
            "ON a.k = b.k AND b.ts BETWEEN a.ts - 50 AND a.ts + 50 "
            "GROUP BY a.k, tumble(a.ts, INTERVAL '1' SECOND);"
            "CREATE STREAM j AS SELECT a.k, a.ts, b.y FROM a JOIN b "
            "ON a.k = b.k AND b.ts BETWEEN a.ts - 50 AND a.ts + 50;"
            "CREATE STREAM c AS SELECT k, window_start, COUNT(*) AS n FROM j "
            "GROUP BY k, tumble(ts, INTERVAL '1' SECOND)",
        )
        subs = [db.subscribe("w"), db.subscribe("c")]
        db.insert("a", [{"k": "p", "ts": t, "x": 0} for t in (900, 990)])
        db.insert("b", [{"k": "p", "ts": t, "y": 0} for t in (940, 1030)])
        db.insert("a", [{"k": "p", "ts": 1500, "x": 0}])
        db.insert("b", [{"k": "p", "ts": 1040, "y": 0}])
        db.run_until_idle()
        # b's watermark 1040 - 50 = 990 holds the join's output at 990: window 0 open
        assert [drain(s) for s in subs] == [[], []]
        db.insert("b", [{"k": "p", "ts": 1051, "y": 0}])
        db.run_until_idle()
        # pairs (900,940) (990,940) (990,1030) (990,1040) → 4 in window 0
        want = [{"k": "p", "window_start": 0, "n": 4}]
        assert [drain(s) for s in subs] == [want, want]


@pytest.mark.parametrize(
    "join",
    [
        "a FULL JOIN b ON a.k = b.k AND b.ts BETWEEN a.ts - 15 AND a.ts + 5",
        "hop(a, ts, INTERVAL '20' MILLISECOND, INTERVAL '5' MILLISECOND) FULL JOIN "
        "hop(b, ts, INTERVAL '20' MILLISECOND, INTERVAL '5' MILLISECOND) "
        "ON a.window_start = b.window_start AND a.k = b.k",
    ],
)
def test_interval_join_restart_equals_uninterrupted(tmp_path: Path, join: str) -> None:
    """Checkpoint, WAL, kill -9 in the middle, restart (on one reactor or two,
    the same number or another): the sink's rows equal an uninterrupted run's
    (join state in the checkpoint, split by key hash across partitions, the
    rest replayed), for an interval join and a hopping window join (rows
    held across the windows a restore finds open again)."""
    rng = random.Random(5)
    keys = [f"s{i}" for i in range(7)]
    left = gen_side(rng, 400, keys, 10, 0)
    right = gen_side(rng, 500, keys, 10, 100000)
    ab = rows_to_batches(rng, left, A)
    bb = rows_to_batches(rng, right, B)
    ddl = (
        "CREATE SOURCE a (k VARCHAR, g BIGINT, ts BIGINT, x BIGINT, "
        "WATERMARK FOR ts AS ts - INTERVAL '10' MILLISECOND);"
        "CREATE SOURCE b (k VARCHAR, g BIGINT, ts BIGINT, y BIGINT, "
        "WATERMARK FOR ts AS ts - INTERVAL '10' MILLISECOND);"
        f"CREATE STREAM j AS {SELECT} FROM {join};"
    )

    def run(root: Path, stop: int | None, cores: tuple[int, int] = (1, 1)) -> list[tuple]:
        out = root.with_name(root.name + "-out")
        opts = {"checkpoint_interval": "1 hour", "wal_mode": "sync", "cores": cores[0]}
        n = max(len(ab), len(bb))
        db = laminardb.open(root, **opts)
        db.execute(ddl + f"CREATE SINK s FROM j INTO FILE (path = '{out}', format = 'jsonl')")
        start = 0
        if stop is not None:
            for i in range(stop):
                for src, bs in (("a", ab), ("b", bb)):
                    if i < len(bs):
                        db.source(src).push(bs[i])
                db.run_until_idle()
                if i == stop // 2:
                    db.checkpoint()
            close_as(db, root, crash=True)
            opts["cores"] = cores[1]
            db = laminardb.open(root, **opts)
            start = stop
        for i in range(start, n):
            for src, bs in (("a", ab), ("b", bb)):
                if i < len(bs):
                    db.source(src).push(bs[i])
            db.run_until_idle()
        for src in ("a", "b"):
            db.source(src).watermark(FINAL_WATERMARK)
        db.run_until_idle()
        db.checkpoint()
        db.close()
        rows = []
        for part in sorted(out.glob("part-*.jsonl")):
            rows += [
                tuple(json.loads(line)[c] for c in COLS) for line in part.read_text().splitlines()
            ]
        return rows

    whole = run(tmp_path / "whole", None)
    assert len(whole) > 300
    # Partitioned by the key on two reactors, and reopened on another number.
    for stop, cores in ((7, (1, 1)), (23, (1, 1)), (7, (2, 2)), (11, (1, 2)), (23, (2, 1))):
        again = run(tmp_path / f"cut{stop}-{cores[0]}{cores[1]}", stop, cores)
        assert sorted(again, key=repr) == sorted(whole, key=repr), (stop, cores)


def test_interval_join_errors_carry_codes_and_positions() -> None:
    """Joins it cannot run fail with their code at the line and column."""
    with laminardb.open() as db:
        db.execute(
            "CREATE SOURCE a (k VARCHAR, ts BIGINT, n INT, t2 BIGINT, WATERMARK FOR ts);"
            "CREATE SOURCE b (k VARCHAR, ts BIGINT, n BIGINT, t2 BIGINT, WATERMARK FOR ts);"
        )
        cases = [
            # no time bound at all, or on one end only
            ("SELECT a.k FROM a JOIN b ON a.k = b.k", "LDB-1010", "JOIN"),
            ("SELECT a.k FROM a FULL JOIN b ON a.k = b.k AND b.ts >= a.ts", "LDB-1010", "FULL"),
            ("SELECT a.k FROM a LEFT OUTER JOIN b ON a.ts < b.ts + 5", "LDB-1010", "LEFT"),
            # keys whose types do not meet
            (
                "SELECT a.k FROM a JOIN b ON a.k = b.n AND b.ts BETWEEN a.ts AND a.ts + 1",
                "LDB-2001",
                "a.k = b.n",
            ),
            # two pairs of time columns
            (
                "SELECT a.k FROM a JOIN b ON b.ts >= a.ts AND b.t2 <= a.t2 + 5",
                "LDB-1009",
                "b.t2 <=",
            ),
            # a bound on a column that is not the source's watermark column
            (
                "SELECT a.k FROM a JOIN b ON b.t2 BETWEEN a.t2 AND a.t2 + 5",
                "LDB-1009",
                "a JOIN",
            ),
            # window joins: without window_start in ON, of two sizes or slides, a key over
            # a window column, one side
            (
                "SELECT a.k FROM tumble(a, ts, INTERVAL '1' SECOND) JOIN "
                "tumble(b, ts, INTERVAL '1' SECOND) ON a.k = b.k",
                "LDB-1009",
                "JOIN",
            ),
            (
                "SELECT a.k FROM tumble(a, ts, INTERVAL '1' SECOND) JOIN "
                "tumble(b, ts, INTERVAL '2' SECOND) ON a.window_start = b.window_start",
                "LDB-1009",
                "tumble(b",
            ),
            (
                "SELECT a.k FROM hop(a, ts, INTERVAL '2' SECOND, INTERVAL '1' SECOND) "
                "JOIN hop(b, ts, INTERVAL '2' SECOND, INTERVAL '500' MILLISECOND) "
                "ON a.window_start = b.window_start",
                "LDB-1009",
                "hop(b",
            ),
            (
                "SELECT a.k FROM hop(a, ts, INTERVAL '2' SECOND, INTERVAL '1' SECOND) "
                "JOIN hop(b, ts, INTERVAL '2' SECOND, INTERVAL '1' SECOND) "
                "ON a.window_start = b.window_start AND a.window_end = b.ts",
                "LDB-1005",
                "JOIN",
            ),
            (
                "SELECT a.k FROM a JOIN tumble(b, ts, INTERVAL '1' SECOND) "
                "ON a.k = b.k AND b.ts BETWEEN a.ts AND a.ts + 1",
                "LDB-1005",
                "tumble",
            ),
            ("SELECT a.k FROM tumble(a, ts, INTERVAL '1' SECOND)", "LDB-1005", "tumble"),
            # CROSS join
            ("SELECT a.k FROM a CROSS JOIN b", "LDB-1005", "CROSS"),
        ]
        prefix = "CREATE STREAM e AS "
        for select, code, at in cases:
            with pytest.raises(laminardb.LaminarError) as info:
                db.execute(prefix + select)
            e = info.value
            assert e.code == code, (select, str(e))
            assert (e.line, e.column) == (1, len(prefix) + select.index(at) + 1), (
                select,
                str(e),
            )
        db.execute(
            "CREATE STREAM ok AS SELECT a.k FROM a RIGHT JOIN b ON a.k = b.k "
            "AND b.ts BETWEEN a.ts AND a.ts + 5"
        )


def test_interval_join_partitioned_by_its_keys() -> None:
    """With cores = 2 a join on plain key columns runs one partition per
    reactor, both inputs routed by their key columns; a computed key keeps it
    whole."""
    with laminardb.open(cores=2) as db:
        open_ab(
            db,
            "CREATE STREAM j AS SELECT a.k, b.y FROM a JOIN b ON a.k = b.k "
            "AND b.ts BETWEEN a.ts AND a.ts + 5;"
            "CREATE STREAM u AS SELECT a.k, b.y FROM a JOIN b ON upper(a.k) = b.k "
            "AND b.ts BETWEEN a.ts AND a.ts + 5",
        )
        for name, want in (("j", "2 partitions"), ("u", "unpartitioned")):
            plan = db.query(f"EXPLAIN {name}").to_pylist()
            part = [r["details"] for r in plan if r["operator"] == "partitioning"]
            assert want in part[0], part


def test_interval_join_partitioned_with_a_group_by_only_on_its_keys() -> None:
    """With cores = 2 a GROUP BY after a join splits with it only when keyed
    by a join key of a side never padded with NULLs (each partition then
    holds all of a group's rows); otherwise the stream runs whole, saying why."""
    window = "tumble(a.ts, INTERVAL '100' MILLISECOND)"
    on = "ON a.k = b.k AND b.ts BETWEEN a.ts AND a.ts + 5"
    streams = {
        "inner_a": ("a JOIN b", "a.k", "2 partitions"),
        "inner_b": ("a JOIN b", "b.k", "2 partitions"),
        "left_a": ("a LEFT JOIN b", "a.k", "2 partitions"),
        "left_b": ("a LEFT JOIN b", "b.k", "after the join without its keys"),
        "full_a": ("a FULL JOIN b", "a.k", "after the join without its keys"),
        "other": ("a JOIN b", "b.y", "after the join without its keys"),
    }
    with laminardb.open(cores=2) as db:
        open_ab(
            db,
            ";".join(
                f"CREATE STREAM {name} AS SELECT {key} AS g, COUNT(*) AS n "
                f"FROM {join} {on} GROUP BY {key}, {window}"
                for name, (join, key, _) in streams.items()
            ),
        )
        for name, (_, _, want) in streams.items():
            plan = db.query(f"EXPLAIN {name}").to_pylist()
            part = [r["details"] for r in plan if r["operator"] == "partitioning"]
            assert want in part[0], (name, part)


def test_interval_join_refused_where_it_cannot_run_split() -> None:
    """Splitting a join across engines (Spark) is refused with LDB-1005, naming it."""
    with laminardb.open() as db:
        open_ab(
            db,
            "CREATE STREAM j AS SELECT a.k, b.y FROM a JOIN b ON a.k = b.k "
            "AND b.ts BETWEEN a.ts AND a.ts + 5",
        )
        for call in (db.partitioning, db.two_phase):
            with pytest.raises(laminardb.LaminarError) as info:
                call("j")
            assert info.value.code == "LDB-1005"
            assert "interval join" in str(info.value)

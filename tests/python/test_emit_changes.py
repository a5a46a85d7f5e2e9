"""EMIT CHANGES and GROUP BY over changelogs against DuckDB (DESIGN §5b).

An ``EMIT CHANGES`` stream is a Z-set changelog: each changed group retracts
its previous row (``_weight`` -1) and inserts its new one (+1). The proof is
the one the issue asks for: after every batch of the input (a checkpoint),
the sum of all deltas received so far (rows added up by their weights) equals
DuckDB's answer over the rows pushed so far — for running aggregates (GROUP
BY without a window), windowed ones (tumble and hop, with rows late or
within the delay) and aggregates over a changelog input (inserts and
retractions of earlier rows), which views over them must follow too.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict

import numpy as np
import pyarrow as pa
import pytest
from _oracle_util import (
    announce_seed,
    assert_same_rows,
    duck,
    examples,
    rows_of,
    seed_strategy_bounds,
    split_batches,
    window_table,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from test_windows import (
    AGGREGATES,
    GROUPINGS,
    WINDOW_AGGREGATES,
    arrival_watermarks,
    hop_oracle,
    session_oracle,
    with_late_rows,
)

import laminardb

SEEDS = st.integers(*seed_strategy_bounds())

#: Aggregates of the running (insert-only) cases: (ours, DuckDB's, alias).
RUNNING = AGGREGATES

#: Retractable aggregates (over a changelog input).
RETRACTABLE = [  # COUNT, SUM, AVG, MIN, MAX and COUNT(DISTINCT) (FIRST/LAST: FIRST_LAST)
    *AGGREGATES,
    ("COUNT(DISTINCT s)", "COUNT(DISTINCT s)", "cds"),
    ("COUNT(DISTINCT x)", "COUNT(DISTINCT x)", "cdx"),
    ("COUNT(DISTINCT y)", "COUNT(DISTINCT y)", "cdy"),
]

SOURCE = (
    "CREATE SOURCE t (k VARCHAR, g BIGINT, x BIGINT, y DOUBLE, s VARCHAR, ts BIGINT,"
    " WATERMARK FOR ts AS ts - INTERVAL '{delay}' MILLISECOND);"
)


def _nan_free(row: tuple) -> tuple:
    """NaN as a marker, so that the retraction of a row holding NaN cancels it."""
    return tuple("NaN" if isinstance(v, float) and math.isnan(v) else v for v in row)


def _nan_back(row: tuple) -> tuple:
    return tuple(math.nan if isinstance(v, str) and v == "NaN" else v for v in row)


class Deltas:
    """A subscription's changelog added up: row -> multiplicity (NaN-safe)."""

    def __init__(self, subscription: laminardb.Subscription, columns: list[str]) -> None:
        self.subscription = subscription
        self.columns = columns
        self.state: Counter[tuple] = Counter()
        self.rows = 0

    def take(self) -> None:
        """Apply every batch queued now."""
        while (batch := self.subscription.poll(0)) is not None:
            table = pa.Table.from_batches([batch])
            for row, weight in zip(
                rows_of(table, self.columns), table.column("_weight").to_pylist()
            ):
                assert weight in (-1, 1), weight
                self.state[_nan_free(row)] += weight
                self.rows += 1

    def current(self) -> list[tuple]:
        """The rows held now; every multiplicity must be 0 or 1 (one row per group)."""
        assert all(m in (0, 1) for m in self.state.values()), [
            (r, m) for r, m in self.state.items() if m not in (0, 1)
        ][:3]
        return [_nan_back(row) for row, m in self.state.items() if m == 1]


def random_window(rng: np.random.Generator) -> tuple[int, int, str]:
    """A random window size (10, 100 or 1000 ms), hop (the size: a tumble, or a
    half or a fifth of it) and the GROUP BY window call over ``ts``."""
    size = int(rng.choice([10, 100, 1000]))
    hop = int(rng.choice([size, size // 2, size // 5]))
    window = (
        f"tumble(ts, INTERVAL '{size}' MILLISECOND)"
        if hop == size
        else f"hop(ts, INTERVAL '{size}' MILLISECOND, INTERVAL '{hop}' MILLISECOND)"
    )
    return size, hop, window


def checkpoints(nbatches: int, rng: np.random.Generator) -> set[int]:
    """Batch indexes after which the state is compared (about 6, always the last)."""
    picks = set(rng.choice(nbatches, size=min(nbatches, 5), replace=False).tolist())
    return picks | {nbatches - 1}


def assert_deltas_track(
    ddl: str,
    batches: list[pa.RecordBatch],
    columns: list[str],
    marked: pa.Table,
    oracle: str,
    seed: int,
    rng: np.random.Generator,
    what: str,
) -> int:
    """Push ``batches`` one by one into a fresh database running ``ddl``; after
    every checkpoint batch the deltas of stream ``w`` summed so far equal
    DuckDB's ``oracle`` over the rows pushed so far (``marked``: the batches
    with their arrival watermarks); the final watermark then emits nothing
    more (closing ``what`` emits nothing). Returns the stream's late rows."""
    check_at = checkpoints(len(batches), rng)
    with laminardb.open() as db:
        db.execute(ddl)
        deltas = Deltas(db.subscribe("w"), columns)
        src = db.source("t")
        pushed_rows = 0
        for i, batch in enumerate(batches):
            src.push(batch)
            db.run_until_idle()
            deltas.take()
            pushed_rows += batch.num_rows
            if i in check_at:
                names, expected = duck(oracle, t=marked.slice(0, pushed_rows))
                assert_same_rows(deltas.current(), expected, names, seed=seed)
        src.watermark(2**63 - 1)
        db.run_until_idle()
        before = deltas.rows
        deltas.take()
        assert deltas.rows == before, f"closing a {what} emits nothing more"
        return db.late_rows("w")


@settings(max_examples=examples(15), deadline=None)
@given(seed=SEEDS)
def test_running_aggregate_deltas_sum_to_duckdb(seed):
    """GROUP BY without a window: a running aggregate, checked after random batches."""
    announce_seed(seed)
    rng = np.random.default_rng(seed)
    data = window_table(rng, rows=int(rng.integers(1, 2500)))
    keys = [["k"], ["k", "g"], ["g"], []][int(rng.integers(4))]
    where = ["", "WHERE x > 0", "WHERE k IS NOT NULL AND y < 100"][int(rng.integers(3))]
    items = ", ".join(f"{ours} AS {alias}" for ours, _, alias in RUNNING)
    select = ", ".join([*keys, items])
    group = f"GROUP BY {', '.join(keys)}" if keys else ""
    ddl = (
        SOURCE.format(delay=0)
        + f"CREATE STREAM w AS SELECT {select} FROM t {where} {group} EMIT CHANGES;"
    )
    columns = [*keys, *(alias for _, _, alias in RUNNING)]
    oracle = (
        f"SELECT {', '.join([*keys, ', '.join(f'{d} AS {a}' for _, d, a in RUNNING)])} "
        f"FROM t {where} {group}"
    )
    batches = split_batches(rng, data.table, max_rows=400)
    check_at = checkpoints(len(batches), rng) if batches else set()
    with laminardb.open() as db:
        db.execute(ddl)
        deltas = Deltas(db.subscribe("w"), columns)
        src = db.source("t")
        for i, batch in enumerate(batches):
            src.push(batch)
            db.run_until_idle()
            deltas.take()
            if i in check_at:
                pushed = pa.Table.from_batches(batches[: i + 1])
                names, expected = duck(oracle, t=pushed)
                if not keys and expected and expected[0][0] == 0:
                    expected = []  # no row yet: no group (DuckDB's global aggregate has one)
                assert_same_rows(deltas.current(), expected, names, seed=seed)
        assert db.late_rows("w") == 0


@pytest.mark.parametrize("late_frac", [0.0, 0.05])
@settings(max_examples=examples(10), deadline=None)
@given(seed=SEEDS)
def test_windowed_changes_sum_to_duckdb(late_frac, seed):
    """Tumbling and hopping windows with EMIT CHANGES: every window's last delta stands."""
    announce_seed(seed)
    rng = np.random.default_rng(seed)
    size, hop, window = random_window(rng)
    data = window_table(rng, size_ms=size)
    table = with_late_rows(rng, data, late_frac) if late_frac else data.table
    keys = [["k"], ["k", "g"]][int(rng.integers(2))]
    items = ", ".join(f"{ours} AS {alias}" for ours, _, alias in RUNNING)
    ddl = SOURCE.format(delay=data.delay_ms) + (
        f"CREATE STREAM w AS SELECT {', '.join(keys)}, window_start, window_end, {items} "
        f"FROM t GROUP BY {', '.join(keys)}, {window} EMIT CHANGES;"
    )
    columns = [*keys, "window_start", "window_end", *(alias for _, _, alias in RUNNING)]
    batches = split_batches(rng, table, max_rows=500)
    if not batches:
        return
    marked = arrival_watermarks(batches, data.delay_ms)
    oracle = hop_oracle(keys, "", size, hop, 0, aggregates=RUNNING)
    assert_deltas_track(ddl, batches, columns, marked, oracle, seed, rng, "window")


@pytest.mark.parametrize("late_frac", [0.0, 0.1])
@settings(max_examples=examples(12), deadline=None)
@given(seed=SEEDS)
def test_session_changes_sum_to_duckdb(late_frac, seed):
    """Session windows with EMIT CHANGES: after every checked batch the deltas
    add up to DuckDB's sessionization of the rows pushed so far. With
    ``late_frac`` rows come beyond the watermark delay but within the allowed
    lateness, so they grow and bridge open sessions (a merge retracts both old
    rows and inserts the merged one); closing emits nothing more."""
    announce_seed(seed)
    rng = np.random.default_rng(seed)
    size = int(rng.choice([10, 100, 1000]))
    data = window_table(rng, size_ms=size)
    gap = int(rng.integers(1, 3 * size + 1))
    table = with_late_rows(rng, data, late_frac) if late_frac else data.table
    # A row is at most delay + 3 * size + 1 behind the watermark (with_late_rows):
    # no row is late, so every session is the batch answer's.
    allowed = data.delay_ms + 3 * size + 2 if late_frac else 0
    keys = GROUPINGS[int(rng.integers(len(GROUPINGS)))]
    where = ["", "WHERE x > 0", "WHERE k IS NOT NULL"][int(rng.integers(3))]
    items = ", ".join(f"{ours} AS {alias}" for ours, _, alias in WINDOW_AGGREGATES)
    ddl = SOURCE.format(delay=data.delay_ms) + (
        f"CREATE STREAM w AS SELECT {', '.join(keys)}, window_start, window_end, {items} "
        f"FROM t {where} GROUP BY {', '.join(keys)}, session(ts, INTERVAL '{gap}' MILLISECOND) "
        f"EMIT CHANGES WITH (allowed_lateness = {allowed});"
    )
    print(f"case: session gap={gap} delay={data.delay_ms} allowed={allowed} {keys} {where!r}")
    columns = [*keys, "window_start", "window_end", *(a for _, _, a in WINDOW_AGGREGATES)]
    batches = split_batches(rng, table, max_rows=300)
    if not batches:
        return
    marked = arrival_watermarks(batches, 0)
    oracle = session_oracle(keys, where, gap)
    assert assert_deltas_track(ddl, batches, columns, marked, oracle, seed, rng, "session") == 0


def test_session_bridge_retracts_both_sessions():
    """A bridging row merges two open sessions: both old rows are retracted and
    the merged one inserted; a session over a changelog is still LDB-1005."""
    db = laminardb.open()
    db.execute("""
        CREATE SOURCE t (k VARCHAR, v BIGINT, ts BIGINT,
                         WATERMARK FOR ts AS ts - INTERVAL '50' MILLISECOND);
        CREATE STREAM w AS SELECT k, window_start, window_end, COUNT(*) AS n, SUM(v) AS sv
          FROM t GROUP BY k, session(ts, INTERVAL '10' MILLISECOND) EMIT CHANGES;
    """)
    out = db.subscribe("w")

    def step(k: list[str], v: list[int], ts: list[int]) -> list[tuple]:
        db.insert("t", {"k": k, "v": v, "ts": ts})
        db.run_until_idle()
        return [tuple(r.values()) for r in out.to_arrow_table().to_pylist()]

    assert step(["a", "a", "b", "a"], [1, 2, 3, 4], [0, 5, 3, 30]) == [
        ("a", 0, 15, 2, 3, 1),
        ("b", 3, 13, 1, 3, 1),
        ("a", 30, 40, 1, 4, 1),
    ]
    assert step(["a"], [7], [22]) == [("a", 30, 40, 1, 4, -1), ("a", 22, 40, 2, 11, 1)]
    assert step(["a"], [8], [13]) == [  # bridges [0, 15) and [22, 40)
        ("a", 0, 15, 2, 3, -1),
        ("a", 22, 40, 2, 11, -1),
        ("a", 0, 40, 5, 22, 1),
    ]
    db.source("t").watermark(2**63 - 1)
    assert step([], [], []) == []  # closing emits nothing
    with pytest.raises(laminardb.SQLError) as e:
        db.execute(
            "CREATE STREAM again AS SELECT k, COUNT(*) AS n FROM w "
            "GROUP BY k, session(window_start, INTERVAL '1' SECOND)"
        )
    assert e.value.code == "LDB-1005"
    db.close()


def test_session_changes_survive_restart(tmp_path):
    """Open sessions and their emitted rows survive a checkpoint: after the
    restart a bridging row retracts both sessions emitted before it."""
    options = {"checkpoint_interval": "1 hour"}
    with laminardb.open(str(tmp_path), **options) as db:
        db.execute("""
            CREATE SOURCE t (k VARCHAR, v BIGINT, ts BIGINT,
                             WATERMARK FOR ts AS ts - INTERVAL '50' MILLISECOND);
            CREATE STREAM w AS SELECT k, window_start, window_end, SUM(v) AS sv
              FROM t GROUP BY k, session(ts, INTERVAL '10' MILLISECOND) EMIT CHANGES;
        """)
        db.insert("t", {"k": ["a", "a"], "v": [1, 2], "ts": [0, 15]})
        db.run_until_idle()
        db.checkpoint()
    with laminardb.open(str(tmp_path), **options) as db:
        out = db.subscribe("w")
        db.insert("t", {"k": ["a"], "v": [4], "ts": [7]})
        db.run_until_idle()
        assert [tuple(r.values()) for r in out.to_arrow_table().to_pylist()] == [
            ("a", 0, 10, 1, -1),
            ("a", 15, 25, 2, -1),
            ("a", 0, 25, 7, 1),
        ]


def changelog_batches(rng: np.random.Generator, n: int) -> list[pa.RecordBatch]:
    """A valid random changelog: inserts, and retractions of rows inserted before."""
    present: list[tuple] = []
    batches = []
    schema = pa.schema(
        [
            ("k", pa.string()),
            ("x", pa.int64()),
            ("y", pa.float64()),
            ("ts", pa.int64()),
            ("s", pa.string()),
            ("_weight", pa.int64()),
        ]
    )
    clock = 0
    for _ in range(n):
        rows = []
        for _ in range(int(rng.integers(0, 60))):
            clock += int(rng.integers(0, 30))
            if present and rng.random() < 0.4:
                row = present.pop(int(rng.integers(len(present))))
                rows.append((*row, -1))
            else:
                k = None if rng.random() < 0.05 else f"k{int(rng.integers(0, 12))}"
                x = None if rng.random() < 0.1 else int(rng.integers(-50, 51))
                y = None if rng.random() < 0.1 else float(rng.integers(-400, 401)) / 4
                s = None if rng.random() < 0.1 else ["a", "b", "zz", "é", ""][int(rng.integers(5))]
                row = (k, x, y, clock, s)
                if rng.random() < 0.1 and present:  # an exact duplicate of a held row
                    row = present[int(rng.integers(len(present)))]
                present.append(row)
                rows.append((*row, 1))
        cols = list(zip(*rows)) if rows else [[]] * 6
        batches.append(
            pa.RecordBatch.from_arrays(
                [pa.array(list(c), f.type) for c, f in zip(cols, schema)], schema=schema
            )
        )
    return batches


def net_rows(batches: list[pa.RecordBatch]) -> pa.Table:
    """The rows a changelog holds after ``batches`` (bag semantics)."""
    held: Counter[tuple] = Counter()
    for batch in batches:
        for row in batch.to_pylist():
            held[(row["k"], row["x"], row["y"], row["ts"], row["s"])] += row["_weight"]
    rows = [r for r, m in held.items() for _ in range(m)]
    cols = list(zip(*rows)) if rows else [[]] * 5
    return pa.table(
        {
            "k": pa.array(list(cols[0]), pa.string()),
            "x": pa.array(list(cols[1]), pa.int64()),
            "y": pa.array(list(cols[2]), pa.float64()),
            "ts": pa.array(list(cols[3]), pa.int64()),
            "s": pa.array(list(cols[4]), pa.string()),
        }
    )


@settings(max_examples=examples(10), deadline=None)
@given(seed=SEEDS)
def test_group_by_over_changelog_matches_duckdb(seed):
    """Retractions of earlier rows: streams, views and a cascade follow them exactly."""
    announce_seed(seed)
    rng = np.random.default_rng(seed)
    batches = changelog_batches(rng, int(rng.integers(1, 16)))
    items = ", ".join(f"{ours} AS {alias}" for ours, _, alias in RETRACTABLE)
    duck_items = ", ".join(f"{d} AS {a}" for _, d, a in RETRACTABLE)
    columns = ["k", *(a for _, _, a in RETRACTABLE)]
    with laminardb.open() as db:
        db.execute(
            "CREATE SOURCE c (k VARCHAR, x BIGINT, y DOUBLE, ts BIGINT, s VARCHAR, _weight BIGINT);"
            f"CREATE STREAM agg AS SELECT k, {items} FROM c GROUP BY k EMIT CHANGES;"
            f"CREATE MATERIALIZED VIEW agg_view AS SELECT k, {items} FROM c GROUP BY k;"
            # A cascade: how many keys have each count, over the changelog of `agg`.
            "CREATE MATERIALIZED VIEW histogram AS SELECT n, COUNT(*) AS keys, SUM(sx) AS total"
            " FROM agg GROUP BY n;"
        )
        deltas = Deltas(db.subscribe("agg"), columns)
        src = db.source("c")
        for i, batch in enumerate(batches):
            src.push(batch)
            db.run_until_idle()
            deltas.take()
            held = net_rows(batches[: i + 1])
            names, expected = duck(f"SELECT k, {duck_items} FROM c GROUP BY k", c=held)
            assert_same_rows(deltas.current(), expected, names, seed=seed)
            view = db.query("SELECT * FROM agg_view")
            assert_same_rows(rows_of(view, names), expected, names, seed=seed)
            names2, expected2 = duck(
                "SELECT n, COUNT(*) AS keys, SUM(sx) AS total FROM "
                "(SELECT k, COUNT(*) AS n, SUM(x) AS sx FROM c GROUP BY k) GROUP BY n",
                c=held,
            )
            hist = db.query("SELECT * FROM histogram")
            assert_same_rows(rows_of(hist, names2), expected2, names2, seed=seed)


#: FIRST/LAST over a changelog: (ours, DuckDB's function, argument, alias).
FIRST_LAST = [
    ("FIRST_VALUE(x)", "first", "x", "fx"),
    ("LAST(x)", "last", "x", "lx"),
    ("FIRST(y)", "first", "y", "fy"),
    ("LAST_VALUE(s)", "last", "s", "ls"),
    ("FIRST(s)", "first", "s", "fs"),
]


def held_copies(batches: list[pa.RecordBatch], column: str, *, by_time: bool) -> pa.Table:
    """The copies a FIRST/LAST over ``column`` holds after a changelog.

    Every row arrives at the next position (``arrival``); ``+w`` adds ``w``
    copies of (k, event time, value) arriving there, ``-w`` removes ``w``
    copies equal in (k, event time, value), the latest arrival first (the
    documented tie rule). Without a window (``by_time`` false) the event time
    plays no part: the entries are (k, value), ordered by arrival alone.
    """
    stacks: defaultdict[tuple, list[int]] = defaultdict(list)
    arrival = 0
    for batch in batches:
        for row in batch.to_pylist():
            key = (row["k"], row["ts"] if by_time else 0, row[column])
            w = row["_weight"]
            if w > 0:
                stacks[key].extend([arrival] * w)
            else:
                del stacks[key][len(stacks[key]) + w :]
            arrival += 1
    rows = [(*key, a) for key, held in stacks.items() for a in held]
    cols = list(zip(*rows)) if rows else [[]] * 4
    value_type = {"x": pa.int64(), "y": pa.float64(), "s": pa.string()}[column]
    return pa.table(
        {
            "k": pa.array(list(cols[0]), pa.string()),
            "ts": pa.array(list(cols[1]), pa.int64()),
            "v": pa.array(list(cols[2]), value_type),
            "arrival": pa.array(list(cols[3]), pa.int64()),
        }
    )


def first_last_oracle(
    batches: list[pa.RecordBatch], size: int | None
) -> tuple[list[str], list[tuple]]:
    """DuckDB's FIRST_LAST per group (k, and the tumbling window of ``size`` ms
    if given) from the copies held: ``first/last(v ORDER BY ts, arrival)``."""
    window = f", ts // {size} * {size} AS window_start" if size else ""
    group = "k, window_start" if size else "k"
    per_group: dict[tuple, list[object]] = {}
    for i, (_, fn, column, _) in enumerate(FIRST_LAST):
        held = held_copies(batches, column, by_time=size is not None)
        _, rows = duck(
            f"SELECT k{window}, {fn}(v ORDER BY ts, arrival) FROM h GROUP BY {group}", h=held
        )
        for row in rows:
            per_group.setdefault(row[:-1], [None] * len(FIRST_LAST))[i] = row[-1]
    names = ["k", *(["window_start"] if size else []), *(a for *_, a in FIRST_LAST)]
    return names, [(*g, *values) for g, values in per_group.items()]


@settings(max_examples=examples(10), deadline=None)
@given(seed=SEEDS)
def test_first_last_over_changelog_match_duckdb(seed):
    """FIRST/LAST take retractions: after every batch of a random changelog
    (inserts, retractions of held rows, exact duplicates) a running aggregate
    (arrival order), a view of it and a tumbling window with EMIT CHANGES (event
    time, ties by arrival) equal DuckDB's first/last over the copies still held."""
    announce_seed(seed)
    rng = np.random.default_rng(seed)
    batches = changelog_batches(rng, int(rng.integers(1, 16)))
    size = int(rng.choice([1, 7, 50, 400]))
    items = ", ".join(f"{ours} AS {alias}" for ours, _, _, alias in FIRST_LAST)
    with laminardb.open() as db:
        db.execute(
            "CREATE SOURCE c (k VARCHAR, x BIGINT, y DOUBLE, ts BIGINT, s VARCHAR, _weight BIGINT);"
            f"CREATE STREAM agg AS SELECT k, {items} FROM c GROUP BY k EMIT CHANGES;"
            f"CREATE MATERIALIZED VIEW agg_view AS SELECT k, {items} FROM c GROUP BY k;"
            f"CREATE STREAM win AS SELECT k, window_start, {items} FROM c"
            f" GROUP BY k, tumble(ts, INTERVAL '{size}' MILLISECOND) EMIT CHANGES;"
        )
        names, _ = first_last_oracle([], None)
        wnames, _ = first_last_oracle([], size)
        deltas = Deltas(db.subscribe("agg"), names)
        wdeltas = Deltas(db.subscribe("win"), wnames)
        src = db.source("c")
        for i, batch in enumerate(batches):
            src.push(batch)
            db.run_until_idle()
            deltas.take()
            wdeltas.take()
            _, expected = first_last_oracle(batches[: i + 1], None)
            assert_same_rows(deltas.current(), expected, names, seed=seed)
            view = db.query("SELECT * FROM agg_view")
            assert_same_rows(rows_of(view, names), expected, names, seed=seed)
            _, wexpected = first_last_oracle(batches[: i + 1], size)
            assert_same_rows(wdeltas.current(), wexpected, wnames, seed=seed)


def test_first_last_retraction_removes_latest_equal_arrival():
    """The tie rule by hand: a retraction removes the most recent copy equal in
    (event time, value); FIRST/LAST then go by (event time, arrival) among the
    copies left, NULL values included."""
    with laminardb.open() as db:
        db.execute(
            "CREATE SOURCE c (k VARCHAR, v VARCHAR, ts BIGINT, _weight BIGINT);"
            "CREATE MATERIALIZED VIEW m AS SELECT k, window_start, FIRST(v) AS f, LAST(v) AS l"
            " FROM c GROUP BY k, tumble(ts, INTERVAL '100' MILLISECOND) EMIT CHANGES;"
            "CREATE MATERIALIZED VIEW r AS SELECT k, FIRST(v) AS f, LAST(v) AS l"
            " FROM c GROUP BY k;"
        )

        def step(v: list[str | None], ts: list[int], w: list[int]) -> tuple[list, list]:
            db.insert("c", {"k": ["a"] * len(v), "v": v, "ts": ts, "_weight": w})
            db.run_until_idle()
            return (
                [tuple(x.values()) for x in db.query("SELECT f, l FROM m").to_pylist()],
                [tuple(x.values()) for x in db.query("SELECT f, l FROM r").to_pylist()],
            )

        # Arrivals at ts 5: A(0) B(1) A(2) None(3); C at ts 9, Z at ts 1.
        assert step(["A", "B", "A", None], [5, 5, 5, 5], [1, 1, 1, 1]) == (
            [("A", None)],
            [("A", None)],
        )
        # Retracting (5, NULL) and one (5, A): the A that arrived last (2) goes,
        # so LAST is B (1) and FIRST still A (0).
        assert step([None, "A"], [5, 5], [-1, -1]) == ([("A", "B")], [("A", "B")])
        # Two more A at ts 5 arrive (4, 5) in one row of weight 2; a later time wins LAST.
        assert step(["A", "C"], [5, 9], [2, 1]) == ([("A", "C")], [("A", "C")])
        # Retract C and two A (5 and 4, LIFO): LAST falls back to B (1), the
        # newest at ts 5; by arrival alone (r) B is the newest too.
        assert step(["C", "A"], [9, 5], [-1, -2]) == ([("A", "B")], [("A", "B")])
        # Retract the last A: FIRST is B; Z at an earlier time becomes FIRST in m
        # but arrives last, so it is LAST by arrival in r.
        assert step(["A"], [5], [-1]) == ([("B", "B")], [("B", "B")])
        assert step(["Z"], [1], [1]) == ([("Z", "B")], [("B", "Z")])
        # Retracting everything empties the group.
        assert step(["Z", "B"], [1, 5], [-1, -1]) == ([], [])


def test_windowed_aggregate_over_changelog_leaves_out_emptied_groups():
    """EMIT ON WINDOW CLOSE over a changelog: a group whose rows were all retracted is gone."""
    with laminardb.open() as db:
        db.execute(
            "CREATE SOURCE c (k VARCHAR, x BIGINT, ts BIGINT, _weight BIGINT);"
            "CREATE STREAM w AS SELECT k, window_start, COUNT(*) AS n, SUM(x) AS sx, AVG(x) AS ax"
            " FROM c GROUP BY k, tumble(ts, INTERVAL '10' MILLISECOND);"
        )
        out = db.subscribe("w")
        db.insert(
            "c",
            {
                "k": ["a", "b", "a", "b", "a"],
                "x": [1, 2, 3, 2, None],
                "ts": [1, 2, 3, 2, 4],
                "_weight": [1, 1, 1, -1, 1],
            },
        )
        db.insert("c", {"k": ["a", "a"], "x": [3, None], "ts": [3, 4], "_weight": [-1, 0]})
        db.source("c").watermark(100)
        db.run_until_idle()
        assert out.to_arrow_table().to_pylist() == [
            {"k": "a", "window_start": 0, "n": 2, "sx": 1, "ax": 1.0}
        ]


def test_emit_changes_state_survives_restart(tmp_path):
    """Durable: after recovery the next delta retracts the row emitted before the restart."""
    options = {"checkpoint_interval": "1 hour"}
    ddl = (
        "CREATE SOURCE t (k VARCHAR, v BIGINT);"
        "CREATE STREAM w AS SELECT k, COUNT(*) AS n, SUM(v) AS sv FROM t GROUP BY k EMIT CHANGES;"
    )
    with laminardb.open(str(tmp_path), **options) as db:
        db.execute(ddl)
        db.insert("t", {"k": ["a", "a", "b"], "v": [1, 2, 3]})
        db.run_until_idle()
        db.checkpoint()
    with laminardb.open(str(tmp_path), **options) as db:
        sub = db.subscribe("w")
        db.insert("t", {"k": ["a"], "v": [10]})
        db.run_until_idle()
        assert sub.to_arrow_table().to_pylist() == [
            {"k": "a", "n": 2, "sv": 3, "_weight": -1},
            {"k": "a", "n": 3, "sv": 13, "_weight": 1},
        ]


@pytest.mark.parametrize(
    ("sql", "code", "line", "column"),
    [
        ("CREATE STREAM x AS SELECT k FROM t EMIT CHANGES", "LDB-1005", 1, 1),
        (
            "CREATE STREAM x AS SELECT k, COUNT(*) FROM t GROUP BY k EMIT ON WINDOW CLOSE",
            "LDB-1006",
            1,
            55,
        ),
        (
            "CREATE STREAM x AS SELECT k, window_start, COUNT(*) FROM t GROUP BY k EMIT CHANGES",
            "LDB-1006",
            1,
            30,
        ),
        (
            "CREATE STREAM x AS SELECT k, COUNT(*) AS _weight FROM t GROUP BY k EMIT CHANGES",
            "LDB-1005",
            1,
            1,
        ),
    ],
)
def test_bad_emit_changes_fails_at_create(sql, code, line, column):
    with laminardb.open() as db:
        db.execute(
            "CREATE SOURCE t (k VARCHAR, v BIGINT);"
            "CREATE SOURCE c (k VARCHAR, x BIGINT, _weight BIGINT)"
        )
        with pytest.raises(laminardb.LaminarError) as info:
            db.execute(sql)
        assert (info.value.code, info.value.line, info.value.column) == (code, line, column), str(
            info.value
        )


def test_first_last_over_changelog_survive_restart(tmp_path):
    """FIRST/LAST over a changelog keep their entries and arrival order across a
    checkpoint: after recovery a retraction still removes the latest equal
    arrival, and later arrivals count as later than every restored one."""
    options = {"checkpoint_interval": "1 hour"}
    ddl = (
        "CREATE SOURCE c (k VARCHAR, v BIGINT, y DOUBLE, ts BIGINT, _weight BIGINT);"
        "CREATE MATERIALIZED VIEW m AS SELECT k, FIRST(v) AS f, LAST(v) AS l,"
        " LAST(y) AS ly FROM c GROUP BY k;"
        "CREATE MATERIALIZED VIEW w AS SELECT k, window_start, FIRST(v) AS f, LAST(y) AS ly"
        " FROM c GROUP BY k, tumble(ts, INTERVAL '100' MILLISECOND) EMIT CHANGES;"
    )
    with laminardb.open(str(tmp_path), **options) as db:
        db.execute(ddl)
        db.insert(
            "c",
            {
                "k": ["a", "a", "a", "a"],
                "v": [1, 2, 1, None],
                "y": [-0.0, 2.5, 1.5, None],
                "ts": [7, 7, 7, 3],
                "_weight": [1, 1, 1, 1],
            },
        )
        db.run_until_idle()
        db.checkpoint()
        assert db.query("SELECT f, l, ly FROM m").to_pylist() == [{"f": 1, "l": None, "ly": None}]
    with laminardb.open(str(tmp_path), **options) as db:
        assert db.query("SELECT f, ly FROM w").to_pylist() == [{"f": None, "ly": 1.5}]

        def step(v: int | None, y: float | None, ts: int, w: int) -> tuple[dict, dict]:
            db.insert("c", {"k": ["a"], "v": [v], "y": [y], "ts": [ts], "_weight": [w]})
            db.run_until_idle()
            (m,) = db.query("SELECT f, l, ly FROM m").to_pylist()
            (win,) = db.query("SELECT f, ly FROM w").to_pylist()
            return m, win

        # The first arrival after the restart is later than every restored one.
        m, win = step(5, -0.0, 7, 1)
        assert (m, win) == ({"f": 1, "l": 5, "ly": -0.0}, {"f": None, "ly": -0.0})
        assert math.copysign(1.0, m["ly"]) == -1.0  # -0.0 kept as it came
        # Retracting (7, v=1, y=1.5) removes the later copy of v=1.
        step(1, 1.5, 7, -1)
        m, win = step(None, None, 3, -1)
        assert (m, win) == ({"f": 1, "l": 5, "ly": -0.0}, {"f": 1, "ly": -0.0})
        # Retracting the new row: y = -0.0 keeps its restored copy, LAST(y) is 2.5.
        m, win = step(5, -0.0, 7, -1)
        assert (m, win) == ({"f": 1, "l": 2, "ly": 2.5}, {"f": 1, "ly": 2.5})


def test_min_max_over_changelog_survive_restart(tmp_path):
    """MIN/MAX and COUNT(DISTINCT) over a changelog keep every value's multiplicity
    across a checkpoint: retracting the current minimum after recovery falls back
    to the next value, and a value retracted as often as inserted is no longer
    counted."""
    options = {"checkpoint_interval": "1 hour"}
    ddl = (
        "CREATE SOURCE c (k VARCHAR, v BIGINT, s VARCHAR, _weight BIGINT);"
        "CREATE MATERIALIZED VIEW m AS SELECT k, MIN(v) AS lo, MAX(s) AS hi, COUNT(*) AS n,"
        " COUNT(DISTINCT v) AS dv, COUNT(DISTINCT s) AS ds FROM c GROUP BY k;"
    )
    with laminardb.open(str(tmp_path), **options) as db:
        db.execute(ddl)
        db.insert(
            "c",
            {
                "k": ["a", "a", "a", "a"],
                "v": [1, 1, 5, 9],
                "s": ["x", "z", "y", "x"],
                "_weight": [1, 1, 1, 1],
            },
        )
        db.run_until_idle()
        db.checkpoint()
        assert db.query("SELECT dv, ds FROM m").to_pylist() == [{"dv": 3, "ds": 3}]
    with laminardb.open(str(tmp_path), **options) as db:
        db.insert("c", {"k": ["a", "a"], "v": [1, 1], "s": ["x", "z"], "_weight": [-1, -1]})
        db.run_until_idle()
        assert db.query("SELECT * FROM m").to_pylist() == [
            {"k": "a", "lo": 5, "hi": "y", "n": 2, "dv": 2, "ds": 2}
        ]

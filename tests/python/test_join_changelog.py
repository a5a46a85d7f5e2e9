"""Joins over changelogs against DuckDB's batch join over the inputs' current content.

Two sources ``a`` (left) and ``b`` (right), either or both a changelog (a last
column ``_weight BIGINT``), take random batches of inserts and of retractions
of rows they hold (never behind their watermark), the two sides interleaved
at random. After every batch the join's changelog, folded (the sum of the
weights of each row), must equal DuckDB's join of the rows each input holds
then: every pair at once, and an outer side's unmatched row once the other
side's watermark has made it final (its key NULL, or its time past the bound).
The same for a materialized view over the join (``SELECT`` reads it), on one
reactor or two, and across a restart in the middle. Lookup joins carry the
stream's weight through; an ASOF join reads a changelog on its left.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest
from _oracle_util import (
    FINAL_WATERMARK,
    announce_seed,
    close_as,
    duck,
    examples,
    rows_of,
    seed_strategy_bounds,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import laminardb

COLS = ["ak", "ats", "x", "bk", "bts", "y"]
SELECT = "SELECT a.k AS ak, a.ts AS ats, a.x, b.k AS bk, b.ts AS bts, b.y"
LO, HI = 5, 10  # b.ts BETWEEN a.ts - LO AND a.ts + HI
DELAY = 8  # each source's watermark: its greatest time - DELAY
NO_WM = -(2**62)
TYPES = ["JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN"]


def on_clause(*, residual: bool) -> str:
    """The join condition: key, time bound, and optionally a residual."""
    return f"ON a.k = b.k AND b.ts BETWEEN a.ts - {LO} AND a.ts + {HI}" + (
        " AND a.x <> b.y" if residual else ""
    )


def schema_of(value: str, *, weighted: bool) -> pa.Schema:
    """A side's Arrow schema (value column ``value``), with ``_weight`` when weighted."""
    fields = [("k", pa.int64()), ("ts", pa.int64()), (value, pa.int64())]
    return pa.schema(fields + ([("_weight", pa.int64())] if weighted else []))


def ddl_of(name: str, value: str, *, weighted: bool) -> str:
    """CREATE SOURCE for a side."""
    weight = ", _weight BIGINT" if weighted else ""
    return (
        f"CREATE SOURCE {name} (k BIGINT, ts BIGINT, {value} BIGINT{weight}, "
        f"WATERMARK FOR ts AS ts - INTERVAL '{DELAY}' MILLISECOND);"
    )


class Side:
    """One input: the rows it holds (a multiset), its clock and watermark."""

    def __init__(self, name: str, value: str, *, weighted: bool) -> None:
        self.name, self.value, self.weighted = name, value, weighted
        self.live: Counter[tuple] = Counter()
        self.clock = 0
        self.max_ts: int | None = None

    def watermark(self) -> int:
        return NO_WM if self.max_ts is None else self.max_ts - DELAY

    def batch(self, rng: random.Random) -> list[tuple]:
        """Random inserts (some repeating a held row) and retractions of held
        rows not behind the watermark; applied to ``live``."""
        self.clock += rng.randrange(0, 5)
        floor = self.watermark()
        rows: list[tuple] = []
        retractions: list[tuple] = []
        for _ in range(rng.randrange(0, 6)):
            held = [r for r in self.live if r[1] >= floor]
            if held and rng.random() < 0.2:
                row = rng.choice(held)
            else:
                k = None if rng.random() < 0.08 else rng.randrange(0, 4)
                ts = max(floor, self.clock - rng.randrange(0, DELAY + 1), 0)
                row = (k, ts, rng.randrange(0, 3))
            rows.append((*row, 1))
            self.live[row] += 1
        if self.weighted:
            for _ in range(rng.randrange(0, 4)):
                held = [r for r in self.live if r[1] >= floor and self.live[r] > 0]
                if not held:
                    break
                row = rng.choice(sorted(held, key=repr))
                retractions.append((*row, -1))
                self.live[row] -= 1
                if self.live[row] == 0:
                    del self.live[row]
            if rng.random() < 0.1:  # weight 0 changes nothing
                rows.append((rng.randrange(0, 4), max(floor, self.clock), 9, 0))
        # inserts in any order, then retractions (one may take back an insert
        # of the same batch: it comes after it, as in any changelog)
        rng.shuffle(rows)
        rng.shuffle(retractions)
        rows += retractions
        for r in rows:
            self.max_ts = r[1] if self.max_ts is None else max(self.max_ts, r[1])
        return rows

    def arrow(self, rows: list[tuple]) -> pa.RecordBatch:
        schema = schema_of(self.value, weighted=self.weighted)
        cols = list(zip(*rows)) if rows else [[] for _ in range(4)]
        n = len(schema.names)
        return pa.RecordBatch.from_arrays(
            [pa.array(list(cols[i]), pa.int64()) for i in range(n)], schema=schema
        )

    def table(self) -> pa.Table:
        """The rows held now, each as often as it is held."""
        rows = [r for r, n in sorted(self.live.items(), key=repr) for _ in range(n)]
        cols = list(zip(*rows)) if rows else [[], [], []]
        return pa.table(
            {c: pa.array(list(cols[i]), pa.int64()) for i, c in enumerate(["k", "ts", self.value])}
        )


def expected(kind: str, a: Side, b: Side, *, residual: bool, final: bool) -> Counter:
    """DuckDB's join over the held rows; unmatched outer rows only once final."""
    wa = FINAL_WATERMARK if final else a.watermark()
    wb = FINAL_WATERMARK if final else b.watermark()
    sql = (
        f"{SELECT} FROM a {kind} b {on_clause(residual=residual)} "
        "WHERE (a.ts IS NOT NULL AND b.ts IS NOT NULL) "
        f"OR (b.ts IS NULL AND (a.k IS NULL OR a.ts + {HI} < {wb})) "
        f"OR (a.ts IS NULL AND (b.k IS NULL OR b.ts + {LO} < {wa}))"
    )
    _, rows = duck(sql, a=a.table(), b=b.table())
    return Counter(rows)


def fold(batches: list[pa.RecordBatch], cols: list[str]) -> Counter:
    """Sum the weights of each row of a changelog; rows summing to 0 leave."""
    out: Counter[tuple] = Counter()
    for batch in batches:
        t = pa.Table.from_batches([batch])
        for row, w in zip(rows_of(t, cols), t.column("_weight").to_pylist(), strict=True):
            out[row] += w
    assert all(n >= 0 for n in out.values()), "a row retracted more often than emitted"
    return +out


def drain(sub: laminardb.Subscription, into: list[pa.RecordBatch]) -> None:
    while (batch := sub.poll(0)) is not None:
        into.append(batch)


@settings(max_examples=examples(16), deadline=None)
@given(
    seed=st.integers(*seed_strategy_bounds()),
    kind=st.sampled_from(TYPES),
    weighted=st.sampled_from([(True, True), (True, False), (False, True)]),
    cores=st.sampled_from([1, 2]),
    residual=st.booleans(),
)
def test_join_over_changelogs_matches_duckdb_after_every_batch(
    seed: int, kind: str, weighted: tuple[bool, bool], cores: int, *, residual: bool
) -> None:
    announce_seed(seed)
    rng = random.Random(seed)
    a, b = Side("a", "x", weighted=weighted[0]), Side("b", "y", weighted=weighted[1])
    with laminardb.open(cores=cores) as db:
        query = f"{SELECT} FROM a {kind} b {on_clause(residual=residual)}"
        db.execute(
            ddl_of("a", "x", weighted=a.weighted)
            + ddl_of("b", "y", weighted=b.weighted)
            + f"CREATE STREAM j AS {query}; CREATE MATERIALIZED VIEW mv AS {query};"
        )
        assert db.schema("j").names == [*COLS, "_weight"]
        sub = db.subscribe("j")
        out: list[pa.RecordBatch] = []
        for step in range(25):
            side = a if rng.random() < 0.5 else b
            db.source(side.name).push(side.arrow(side.batch(rng)))
            db.run_until_idle()
            drain(sub, out)
            want = expected(kind, a, b, residual=residual, final=False)
            assert fold(out, COLS) == want, (seed, step)
            view = db.query("SELECT * FROM mv")
            assert Counter(rows_of(view, COLS)) == want, (seed, step)
        for s in ("a", "b"):
            db.source(s).watermark(FINAL_WATERMARK)
        db.run_until_idle()
        drain(sub, out)
        want = expected(kind, a, b, residual=residual, final=True)
        assert fold(out, COLS) == want
        assert Counter(rows_of(db.query("SELECT * FROM mv"), COLS)) == want


def test_window_join_over_a_changelog_matches_duckdb() -> None:
    """A window join over changelogs: each closed window's pairs (and FULL's
    unmatched rows) with the product of the weights, folded = DuckDB's."""
    for seed in (1, 2, 3):
        rng = random.Random(seed)
        a, b = Side("a", "x", weighted=True), Side("b", "y", weighted=True)
        with laminardb.open() as db:
            db.execute(
                ddl_of("a", "x", weighted=True)
                + ddl_of("b", "y", weighted=True)
                + "CREATE STREAM j AS SELECT a.k AS ak, a.ts AS ats, a.x, b.k AS bk, "
                "b.ts AS bts, b.y FROM tumble(a, ts, INTERVAL '10' MILLISECOND) a "
                "FULL JOIN tumble(b, ts, INTERVAL '10' MILLISECOND) b "
                "ON a.window_start = b.window_start AND a.k = b.k;"
            )
            sub = db.subscribe("j")
            out: list[pa.RecordBatch] = []
            for _ in range(40):
                side = a if rng.random() < 0.5 else b
                db.source(side.name).push(side.arrow(side.batch(rng)))
                db.run_until_idle()
            for s in ("a", "b"):
                db.source(s).watermark(FINAL_WATERMARK)
            db.run_until_idle()
            drain(sub, out)
            _, rows = duck(
                f"{SELECT} FROM a FULL JOIN b ON a.k = b.k AND a.ts - a.ts % 10 = b.ts - b.ts % 10",
                a=a.table(),
                b=b.table(),
            )
            assert fold(out, COLS) == Counter(rows), seed


def test_join_over_changelogs_restart_equals_uninterrupted(tmp_path: Path) -> None:
    """Checkpoint, WAL, kill -9 in the middle, restart on one reactor or two:
    the sink's changelog, folded, equals the uninterrupted run's and DuckDB's."""
    rng = random.Random(11)
    a, b = Side("a", "x", weighted=True), Side("b", "y", weighted=True)
    batches = []
    for _ in range(60):
        side = a if rng.random() < 0.5 else b
        batches.append((side.name, side.arrow(side.batch(rng))))
    ddl = (
        ddl_of("a", "x", weighted=True)
        + ddl_of("b", "y", weighted=True)
        + f"CREATE STREAM j AS {SELECT} FROM a FULL JOIN b {on_clause(residual=False)};"
    )

    def run(root: Path, stop: int | None, cores: tuple[int, int]) -> Counter:
        out = root.with_name(root.name + "-out")
        opts = {"checkpoint_interval": "1 hour", "wal_mode": "sync", "cores": cores[0]}
        db = laminardb.open(root, **opts)
        db.execute(ddl + f"CREATE SINK s FROM j INTO FILE (path = '{out}', format = 'jsonl')")
        start = 0
        if stop is not None:
            for i in range(stop):
                db.source(batches[i][0]).push(batches[i][1])
                db.run_until_idle()
                if i == stop // 2:
                    db.checkpoint()
            close_as(db, root, crash=True)
            db = laminardb.open(root, **{**opts, "cores": cores[1]})
            start = stop
        for name, batch in batches[start:]:
            db.source(name).push(batch)
            db.run_until_idle()
        for s in ("a", "b"):
            db.source(s).watermark(FINAL_WATERMARK)
        db.run_until_idle()
        db.checkpoint()
        db.close()
        folded: Counter[tuple] = Counter()
        for part in sorted(out.glob("part-*.jsonl")):
            for line in part.read_text().splitlines():
                row = json.loads(line)
                folded[tuple(row[c] for c in COLS)] += row["_weight"]
        return +folded

    whole = run(tmp_path / "whole", None, (1, 1))
    assert whole == expected("FULL JOIN", a, b, residual=False, final=True)
    assert sum(whole.values()) > 50
    for stop, cores in ((20, (1, 1)), (35, (2, 2)), (20, (1, 2))):
        assert run(tmp_path / f"cut{stop}-{cores[0]}{cores[1]}", stop, cores) == whole


@settings(max_examples=examples(12), deadline=None)
@given(seed=st.integers(*seed_strategy_bounds()), left=st.booleans())
def test_lookup_join_carries_the_stream_weight(seed: int, *, left: bool) -> None:
    """A changelog joined with a table: each joined row has its input row's
    weight; folded, DuckDB's join of the held rows with the table."""
    announce_seed(seed)
    rng = random.Random(seed)
    a = Side("a", "x", weighted=True)
    kind = "LEFT JOIN" if left else "JOIN"
    with laminardb.open() as db:
        db.execute(
            ddl_of("a", "x", weighted=True) + "CREATE TABLE t (k BIGINT PRIMARY KEY, v BIGINT);"
            f"CREATE STREAM j AS SELECT a.k, a.ts, a.x, t.v FROM a {kind} t ON a.k = t.k;"
        )
        table = pa.table({"k": [0, 1, 2], "v": [10, 11, 12]})
        db.upsert("t", table)
        db.run_until_idle()
        assert db.schema("j").names == ["k", "ts", "x", "v", "_weight"]
        sub = db.subscribe("j")
        out: list[pa.RecordBatch] = []
        for step in range(20):
            db.source("a").push(a.arrow(a.batch(rng)))
            db.run_until_idle()
            drain(sub, out)
            _, rows = duck(
                f"SELECT a.k, a.ts, a.x, t.v FROM a {kind} t ON a.k = t.k", a=a.table(), t=table
            )
            assert fold(out, ["k", "ts", "x", "v"]) == Counter(rows), (seed, step)


def test_asof_join_reads_a_changelog_on_its_left() -> None:
    """ASOF over a changelog left side: each row's match is final when emitted,
    so its weight passes through; folded, DuckDB's ASOF JOIN of the held rows."""
    for seed in (3, 4, 5):
        rng = random.Random(seed)
        a, b = Side("a", "x", weighted=True), Side("b", "y", weighted=False)
        with laminardb.open() as db:
            db.execute(
                ddl_of("a", "x", weighted=True)
                + ddl_of("b", "y", weighted=False)
                + "CREATE STREAM j AS SELECT a.k, a.ts, a.x, b.ts AS bts, b.y "
                "FROM a LEFT ASOF JOIN b MATCH_CONDITION(a.ts >= b.ts) ON a.k = b.k;"
            )
            sub = db.subscribe("j")
            out: list[pa.RecordBatch] = []
            for _ in range(30):
                side = a if rng.random() < 0.5 else b
                db.source(side.name).push(side.arrow(side.batch(rng)))
                db.run_until_idle()
            for s in ("a", "b"):
                db.source(s).watermark(FINAL_WATERMARK)
            db.run_until_idle()
            drain(sub, out)
            _, rows = duck(
                "SELECT a.k, a.ts, a.x, b.ts AS bts, b.y FROM a ASOF LEFT JOIN b "
                "ON a.k = b.k AND a.ts >= b.ts",
                a=a.table(),
                b=b.table(),
            )
            assert fold(out, ["k", "ts", "x", "bts", "y"]) == Counter(rows), seed


def test_asof_join_refuses_a_changelog_on_its_right() -> None:
    """A retracted right row would change matches already emitted: LDB-1005."""
    with laminardb.open() as db:
        db.execute(ddl_of("a", "x", weighted=False) + ddl_of("b", "y", weighted=True))
        with pytest.raises(laminardb.SQLError) as e:
            db.execute(
                "CREATE STREAM j AS SELECT a.k, b.y\n"
                "FROM a ASOF JOIN b MATCH_CONDITION(a.ts >= b.ts) ON a.k = b.k"
            )
        assert e.value.code == "LDB-1005"
        assert (e.value.line, e.value.column) == (2, 18)
        assert "'b'" in str(e.value)
        assert "left side only" in str(e.value)


def test_temporal_join_carries_the_stream_weight() -> None:
    """FOR SYSTEM_TIME AS OF over a changelog: each row meets the version of
    its time, final when emitted, so its weight passes through; folded, the
    DuckDB ASOF JOIN of the held rows with the table's writes."""
    for seed in (6, 7, 8):
        rng = random.Random(seed)
        a = Side("a", "x", weighted=True)
        writes: list[tuple] = []
        with laminardb.open() as db:
            db.execute(
                ddl_of("a", "x", weighted=True)
                + "CREATE TABLE t (k BIGINT, v BIGINT, ts BIGINT, WATERMARK FOR ts AS ts, "
                "PRIMARY KEY (k));"
                "CREATE STREAM j AS SELECT a.k, a.ts, a.x, t.v FROM a "
                "LEFT JOIN t FOR SYSTEM_TIME AS OF a.ts AS t ON a.k = t.k;"
            )
            sub = db.subscribe("j")
            out: list[pa.RecordBatch] = []
            clock = 0
            for _ in range(30):
                if rng.random() < 0.5:
                    db.source("a").push(a.arrow(a.batch(rng)))
                else:
                    clock += rng.randrange(1, 6)  # one write per time: no ties
                    w = (rng.randrange(0, 4), rng.randrange(0, 100), clock)
                    writes.append(w)
                    db.upsert("t", {"k": [w[0]], "v": [w[1]], "ts": [w[2]]})
                db.run_until_idle()
            db.upsert("t", {"k": [99], "v": [0], "ts": [FINAL_WATERMARK - 1]})
            db.source("a").watermark(FINAL_WATERMARK)
            db.run_until_idle()
            drain(sub, out)
            t = pa.table(
                {c: pa.array([w[i] for w in writes], pa.int64()) for i, c in enumerate("kvt")}
            )
            _, rows = duck(
                "SELECT a.k, a.ts, a.x, t.v FROM a ASOF LEFT JOIN t ON a.k = t.k AND a.ts >= t.t",
                a=a.table(),
                t=t,
            )
            assert fold(out, ["k", "ts", "x", "v"]) == Counter(rows), seed


def test_join_reads_views_and_emit_changes_streams() -> None:
    """The inputs may be a materialized view and a stream over a changelog:
    the join of their changelogs equals DuckDB's join of their rows."""
    rng = random.Random(9)
    a, b = Side("a", "x", weighted=True), Side("b", "y", weighted=True)
    with laminardb.open() as db:
        db.execute(
            ddl_of("a", "x", weighted=True)
            + ddl_of("b", "y", weighted=True)
            + "CREATE MATERIALIZED VIEW va AS SELECT k, ts, x FROM a;"
            "CREATE STREAM sb AS SELECT k, ts, y FROM b;"
            f"CREATE MATERIALIZED VIEW mv AS {SELECT} FROM va a JOIN sb b "
            f"{on_clause(residual=False)};"
        )
        for step in range(30):
            side = a if rng.random() < 0.5 else b
            db.source(side.name).push(side.arrow(side.batch(rng)))
            db.run_until_idle()
            want = expected("JOIN", a, b, residual=False, final=False)
            assert Counter(rows_of(db.query("SELECT * FROM mv"), COLS)) == want, step
        assert sum(want.values()) > 10


def test_group_by_over_a_join_of_changelogs_matches_duckdb() -> None:
    """A windowed GROUP BY in the joining stream counts each pair by its
    weight: after the final watermark, DuckDB's aggregate of the batch join."""
    for seed in (12, 13):
        rng = random.Random(seed)
        a, b = Side("a", "x", weighted=True), Side("b", "y", weighted=True)
        with laminardb.open() as db:
            db.execute(
                ddl_of("a", "x", weighted=True)
                + ddl_of("b", "y", weighted=True)
                + "CREATE STREAM g AS SELECT a.k, window_start, COUNT(*) AS n, "
                "SUM(a.x * 10 + b.y) AS s FROM a JOIN b "
                f"{on_clause(residual=False)} "
                "GROUP BY a.k, tumble(a.ts, INTERVAL '10' MILLISECOND) EMIT ON WINDOW CLOSE;"
            )
            sub = db.subscribe("g")
            out: list[pa.RecordBatch] = []
            for _ in range(40):
                side = a if rng.random() < 0.5 else b
                db.source(side.name).push(side.arrow(side.batch(rng)))
                db.run_until_idle()
            for s in ("a", "b"):
                db.source(s).watermark(FINAL_WATERMARK)
            db.run_until_idle()
            drain(sub, out)
            got = [
                r
                for batch in out
                for r in rows_of(pa.Table.from_batches([batch]), ["k", "window_start", "n", "s"])
            ]
            _, rows = duck(
                "SELECT a.k, a.ts - a.ts % 10 AS ws, COUNT(*), SUM(a.x * 10 + b.y) FROM a JOIN b "
                f"{on_clause(residual=False)} GROUP BY 1, 2",
                a=a.table(),
                b=b.table(),
            )
            assert sorted(got, key=repr) == sorted(rows, key=repr), seed
            assert len(rows) >= 3

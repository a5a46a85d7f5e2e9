"""Idle inputs of a UNION ALL against DuckDB's batch answer (issue 26 item 1).

Two sources feed a window over their union: ``busy`` keeps sending rows,
``quiet`` sends a few, is declared idle (``Source.set_idle(True)``) while busy
goes on, then comes back with rows of which some are behind the watermark
the union reached meanwhile. A model replays the engine's rule message by
message: a row is late when its window ends at or before the larger of its
source's watermark and the union's; the union's watermark is the least of
its *active* inputs' and never goes back. While quiet is idle, the windows
the busy source's watermark passed must be out and equal DuckDB's
``GROUP BY k, ts // size`` over the accepted rows; at the end, every window.
Seeded (hypothesis), cores 1 and 2.
"""

from __future__ import annotations

import random

import pyarrow as pa
import pytest
from _oracle_util import (
    FINAL_WATERMARK,
    announce_seed,
    assert_same_rows,
    duck,
    examples,
    rows_of,
    seed_strategy_bounds,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import laminardb

SIZE_MS = 100
DELAY = {"busy": 30, "quiet": 0}
SCHEMA = pa.schema([("k", pa.string()), ("v", pa.int64()), ("ts", pa.int64())])
COLUMNS = ["k", "window_start", "n", "sv"]


class Model:
    """The engine's watermark and lateness rule, message by message."""

    def __init__(self) -> None:
        """Both inputs active, neither has a watermark yet."""
        self.wm: dict[str, int | None] = {"busy": None, "quiet": None}
        self.idle = {"busy": False, "quiet": False}
        self.union: int | None = None
        self.kept: list[tuple] = []
        self.late = 0

    def _advance(self) -> None:
        active = [self.wm[s] for s in self.wm if not self.idle[s]]
        if not active or any(w is None for w in active):
            return
        least = min(w for w in active if w is not None)
        self.union = least if self.union is None else max(self.union, least)

    def batch(self, src: str, rows: list[tuple]) -> None:
        """Rows of one push: judged, then the source's watermark and activity."""
        floors = [w for w in (self.wm[src], self.union) if w is not None]
        floor = max(floors) if floors else None
        for row in rows:
            end = (row[2] // SIZE_MS) * SIZE_MS + SIZE_MS
            if floor is not None and end <= floor:
                self.late += 1
            else:
                self.kept.append(row)
        cand = max(r[2] for r in rows) - DELAY[src]
        self.wm[src] = cand if self.wm[src] is None else max(self.wm[src], cand)
        self.idle[src] = False
        self._advance()

    def set_idle(self, src: str, *, idle: bool) -> None:
        """A set_idle call."""
        self.idle[src] = idle
        self._advance()


def make_rows(rng: random.Random, start: int, n: int, delay: int) -> list[tuple]:
    """Rows from ``start``: times mostly rising, some behind by up to 3x the delay."""
    rows = []
    t = start
    for _ in range(n):
        t += rng.randrange(0, 25)
        behind = rng.randrange(0, 3 * delay + 60) if rng.random() < 0.2 else 0
        rows.append((rng.choice("abc"), rng.randrange(-5, 50), max(0, t - behind)))
    return rows


def to_batch(rows: list[tuple]) -> pa.RecordBatch:
    """An Arrow batch of (k, v, ts) rows."""
    return pa.record_batch(
        [
            pa.array([r[0] for r in rows]),
            pa.array([r[1] for r in rows], pa.int64()),
            pa.array([r[2] for r in rows], pa.int64()),
        ],
        schema=SCHEMA,
    )


def window_answer(kept: list[tuple], upto: int | None = None) -> list[tuple]:
    """DuckDB's tumbling windows over the rows, those ending at or before ``upto``."""
    table = pa.table(
        {
            "k": pa.array([r[0] for r in kept], pa.string()),
            "v": pa.array([r[1] for r in kept], pa.int64()),
            "ts": pa.array([r[2] for r in kept], pa.int64()),
        }
    )
    where = "" if upto is None else f"WHERE (ts // {SIZE_MS}) * {SIZE_MS} + {SIZE_MS} <= {upto}"
    _, want = duck(
        f"SELECT k, (ts // {SIZE_MS}) * {SIZE_MS} AS ws, COUNT(*) AS n, SUM(v) AS sv "
        f"FROM t {where} GROUP BY k, ws",
        t=table,
    )
    return want


def chunks(rng: random.Random, rows: list[tuple]) -> list[list[tuple]]:
    """Split rows into pushes of 1 to 8 rows."""
    out = []
    i = 0
    while i < len(rows):
        n = rng.randrange(1, 9)
        out.append(rows[i : i + n])
        i += n
    return out


def got_rows(out: list[pa.RecordBatch]) -> list[tuple]:
    """The window rows emitted so far."""
    return rows_of(pa.Table.from_batches(out), COLUMNS) if out else []


def take(db: laminardb.Connection, sub: laminardb.Subscription, out: list) -> None:
    """Run inline and take what the window emitted."""
    db.run_until_idle()
    while (batch := sub.poll(0)) is not None:
        out.append(batch)


@settings(max_examples=examples(10), deadline=None)
@given(seed=st.integers(*seed_strategy_bounds()), cores=st.sampled_from([1, 2]))
def test_idle_input_lets_union_windows_close(seed: int, cores: int) -> None:
    """Windows close on the busy input while the quiet one is idle; DuckDB agrees."""
    announce_seed(seed)
    rng = random.Random(seed)
    ddl = "".join(
        f"CREATE SOURCE {s} (k VARCHAR, v BIGINT, ts BIGINT, "
        f"WATERMARK FOR ts AS ts - INTERVAL '{d}' MILLISECOND);"
        for s, d in DELAY.items()
    )
    ddl += (
        "CREATE STREAM w AS SELECT k, window_start, COUNT(*) AS n, SUM(v) AS sv "
        "FROM (SELECT k, v, ts FROM busy UNION ALL SELECT k, v, ts FROM quiet) "
        f"GROUP BY k, tumble(ts, INTERVAL '{SIZE_MS}' MILLISECOND);"
        # With 2 cores a keyed stream partitions quiet: its messages run as rounds.
        "CREATE STREAM kq AS SELECT k, COUNT(*) AS n FROM quiet "
        f"GROUP BY k, tumble(ts, INTERVAL '{SIZE_MS}' MILLISECOND);"
    )
    model = Model()
    out: list[pa.RecordBatch] = []
    with laminardb.open(cores=cores) as db:
        db.execute(ddl)
        src = {s: db.source(s) for s in DELAY}
        sub = db.subscribe("w")

        def push(name: str, rows: list[tuple]) -> None:
            src[name].push(to_batch(rows))
            model.batch(name, rows)
            take(db, sub, out)

        # 1. Both send; quiet stops early.
        for part in chunks(rng, make_rows(rng, 0, rng.randrange(5, 30), DELAY["quiet"])):
            push("quiet", part)
        quiet_end = max(r[2] for r in model.kept) if model.kept else 0
        for part in chunks(rng, make_rows(rng, 0, rng.randrange(20, 60), DELAY["busy"])):
            push("busy", part)
        # 2. Quiet is declared idle; busy goes on well past quiet's rows.
        src["quiet"].set_idle(True)
        model.set_idle("quiet", idle=True)
        take(db, sub, out)
        start = max(quiet_end, model.wm["busy"] or 0) + 200
        for part in chunks(rng, make_rows(rng, start, rng.randrange(20, 60), DELAY["busy"])):
            push("busy", part)
        assert model.union is not None
        assert model.union > quiet_end
        assert_same_rows(got_rows(out), window_answer(model.kept, model.union), COLUMNS, seed=seed)
        # 3. Quiet comes back, partly behind the union's watermark (late rows).
        back = max(0, model.union - 400)
        for part in chunks(rng, make_rows(rng, back, rng.randrange(10, 40), DELAY["quiet"])):
            push("quiet", part)
        # 4. The end of input closes every window.
        for s in DELAY:
            src[s].watermark(FINAL_WATERMARK)
        take(db, sub, out)
        late = db.late_rows("w")
    assert late == model.late, f"late rows {late}, want {model.late} (seed {seed})"
    assert model.late > 0 or back >= model.union
    assert_same_rows(got_rows(out), window_answer(model.kept), COLUMNS, seed=seed)


def test_idle_timeout_option_and_set_idle_errors() -> None:
    """idle_timeout is a source option; set_idle takes a bool, codes on misuse."""
    with laminardb.open() as db:
        db.execute(
            "CREATE SOURCE a (v BIGINT, ts BIGINT, WATERMARK FOR ts) "
            "WITH (idle_timeout = '5 s');"
            "CREATE SOURCE b (v BIGINT, ts BIGINT, WATERMARK FOR ts);"
        )
        with pytest.raises(laminardb.ConfigError) as info:
            db.execute("CREATE SOURCE c (ts BIGINT) WITH (idle_timeout = 'later')")
        assert info.value.code == "LDB-6002"
        with pytest.raises(laminardb.ConfigError) as info:
            db.execute("CREATE STREAM s AS SELECT v FROM a WITH (idle_timeout = '1 s')")
        assert info.value.code == "LDB-6001"
        src = db.source("b")
        with pytest.raises(TypeError):
            src.set_idle(1)  # type: ignore[arg-type]
        src.set_idle(True)
        src.close()
        with pytest.raises(laminardb.LaminarError) as info:
            src.set_idle(False)
        assert info.value.code == "LDB-9002"


def test_alignment_group_holds_back_and_releases() -> None:
    """A source more than max_drift ahead of its group's slowest is held back."""
    aligned = "WITH (alignment_group = 'g', max_drift = INTERVAL '1' SECOND)"
    with laminardb.open() as db:
        db.execute(
            f"CREATE SOURCE a (v BIGINT, ts BIGINT, WATERMARK FOR ts) {aligned};"
            f"CREATE SOURCE b (v BIGINT, ts BIGINT, WATERMARK FOR ts) {aligned};"
        )
        a, b = db.source("a"), db.source("b")
        b.push({"v": [1], "ts": [0]})
        a.push({"v": [1], "ts": [900]})
        db.run_until_idle()
        assert a.has_capacity()  # 900 - 0 is within the drift
        a.try_push({"v": [1], "ts": [1500]})
        db.run_until_idle()
        assert not a.has_capacity()
        assert a.free_slots == 0
        with pytest.raises(laminardb.QueueFull) as info:
            a.try_push({"v": [1], "ts": [1600]})
        assert info.value.code == "LDB-3006"
        assert "alignment group 'g'" in str(info.value)
        assert b.has_capacity()  # the slowest is never held
        b.push({"v": [1], "ts": [700]})  # the group's least: 700, a's limit 1700
        db.run_until_idle()
        assert a.has_capacity()
        a.try_push({"v": [1], "ts": [1600]})
        with pytest.raises(laminardb.ConfigError) as info:
            db.execute("CREATE SOURCE c (ts BIGINT) WITH (max_drift = 10)")
        assert info.value.code == "LDB-6003"

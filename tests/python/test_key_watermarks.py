"""Per-key watermarks (``WITH (watermark_key = 'k')``) against DuckDB.

Many keys with different rates and time skews (some far behind the others),
rows out of order within and beyond the watermark delay, in batches of random
sizes. A tumbling window grouped by the key closes each key's windows on that
key's own watermark -- max(its largest time - delay, the source's watermark),
the source's being the least over the keys that are not idle (idle: more than
idle_timeout behind the source's largest time, in event time) -- so a slow key
is not made late by a fast one. The model below replays both watermarks batch
by batch to decide which rows are late (per key) and where each key's
watermark ends; DuckDB aggregates the accepted rows, and the oracle keeps per
key the windows whose end is at or below that key's watermark. Run with one
and two reactors, and restarted in the middle (closed, or as a kill -9 leaves
it) with its state from the checkpoint and the WAL.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import pyarrow as pa
import pytest
from _oracle_util import (
    announce_seed,
    assert_same_rows,
    close_as,
    duck,
    examples,
    row_batches,
    rows_of,
    seed_strategy_bounds,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import laminardb

SIZE_MS = 100
SCHEMA = pa.schema([("k", pa.string()), ("v", pa.int64()), ("ts", pa.int64())])
COLUMNS = ["k", "window_start", "n", "sv"]


def ddl(delay: int, idle: int | None, *, view: bool = False, hop: int = SIZE_MS) -> str:
    """The source (per-key watermarks on k) and the window grouped by k.

    ``hop`` below SIZE_MS: a hopping window (windows every ``hop`` ms).
    """
    idle_opt = f", idle_timeout = '{idle} ms'" if idle is not None else ""
    window = (
        f"tumble(ts, INTERVAL '{SIZE_MS}' MILLISECOND)"
        if hop == SIZE_MS
        else f"hop(ts, INTERVAL '{SIZE_MS}' MILLISECOND, INTERVAL '{hop}' MILLISECOND)"
    )
    text = (
        f"CREATE SOURCE s (k VARCHAR, v BIGINT, ts BIGINT, "
        f"WATERMARK FOR ts AS ts - INTERVAL '{delay}' MILLISECOND) "
        f"WITH (watermark_key = 'k'{idle_opt});"
        "CREATE STREAM w AS SELECT k, window_start, COUNT(*) AS n, SUM(v) AS sv "
        f"FROM s GROUP BY k, {window} "
        "EMIT ON WINDOW CLOSE;"
    )
    if view:
        text += "CREATE MATERIALIZED VIEW wv AS SELECT k, window_start, n, sv FROM w;"
    return text


def make_batches(rng: random.Random, delay: int) -> list[pa.RecordBatch]:
    """Rows of many keys: each its own rate and skew, some rows out of order."""
    nkeys = rng.randrange(2, 25)
    keys = [f"k{i}" for i in range(nkeys)]
    skew = {k: rng.choice([0, 0, rng.randrange(0, 2000)]) for k in keys}
    rate = {k: rng.choice([1, 2, 5, 20]) for k in keys}
    clock = {k: 0 for k in keys}
    rows: list[tuple[str, int, int]] = []
    for _ in range(rng.randrange(30, 300)):
        k = rng.choices(keys, weights=[rate[x] for x in keys])[0]
        clock[k] += rng.randrange(0, 40)
        behind = rng.randrange(0, 3 * delay + 150) if rng.random() < 0.2 else 0
        rows.append((k, rng.randrange(-5, 50), max(0, clock[k] + skew[k] - behind)))
    return row_batches(rng, rows, SCHEMA, 16)


@dataclass
class Model:
    """The engine's per-key and source watermarks, replayed batch by batch."""

    delay: int
    idle: int | None
    hop: int = SIZE_MS
    source_wm: int | None = None
    top: int | None = None
    source_keys: dict[str, int] = field(default_factory=dict)  # not idle: largest time
    key_max: dict[str, int] = field(default_factory=dict)  # the window's keys
    kept: list[tuple] = field(default_factory=list)
    late: int = 0

    def key_wm(self, k: str) -> int | None:
        """Key k's watermark: max(its largest time - delay, the source's)."""
        own = self.key_max[k] - self.delay if k in self.key_max else None
        cands = [x for x in (own, self.source_wm) if x is not None]
        return max(cands) if cands else None

    def batch(self, batch: pa.RecordBatch) -> None:
        """One pushed batch: judge its rows per key, then raise the watermarks."""
        rows = list(zip(*(batch.column(c).to_pylist() for c in ("k", "v", "ts"))))
        for row in rows:
            wm = self.key_wm(row[0])
            end = (row[2] // self.hop) * self.hop + SIZE_MS  # of its last window
            if wm is not None and end <= wm:
                self.late += 1
            else:  # it counts in its windows still open: those ending after wm
                self.kept.append((*row, wm if wm is not None else -(2**62)))
        for k, _, ts in rows:
            self.key_max[k] = max(self.key_max.get(k, ts), ts)
            self.source_keys[k] = max(self.source_keys.get(k, ts), ts)
            self.top = ts if self.top is None else max(self.top, ts)
        assert self.top is not None
        active = {
            k: t
            for k, t in self.source_keys.items()
            if self.idle is None or self.top - t <= self.idle
        }
        self.source_keys = active  # idle keys are forgotten: they start anew
        cand = min(active.values()) - self.delay
        self.source_wm = cand if self.source_wm is None else max(self.source_wm, cand)

    def answer(self) -> list[tuple]:
        """DuckDB over the accepted rows: per key, the windows its watermark closed."""
        table = pa.table(
            {
                "k": pa.array([r[0] for r in self.kept], pa.string()),
                "v": pa.array([r[1] for r in self.kept], pa.int64()),
                "ts": pa.array([r[2] for r in self.kept], pa.int64()),
                "floor": pa.array([r[3] for r in self.kept], pa.int64()),
            }
        )
        keys = sorted(self.key_max)
        marks = pa.table(
            {
                "k": pa.array(keys, pa.string()),
                "wm": pa.array([self.key_wm(k) for k in keys], pa.int64()),
            }
        )
        # Each row in every window [ws, ws + size) containing it (ws a multiple
        # of hop) that was open when it came (end > floor) and that its key's
        # watermark closed (end <= wm).
        _, want = duck(
            "WITH w AS (SELECT t.k, v, ts, floor, wm, "
            f"unnest(range((ts // {self.hop} - {SIZE_MS // self.hop + 1}) * {self.hop}, "
            f"(ts // {self.hop}) * {self.hop} + 1, {self.hop})) AS ws "
            "FROM t JOIN marks USING (k)) "
            "SELECT k, ws, COUNT(*) AS n, SUM(v) AS sv FROM w "
            f"WHERE ts < ws + {SIZE_MS} AND ws + {SIZE_MS} > floor "
            f"AND ws + {SIZE_MS} <= wm GROUP BY k, ws",
            t=table,
            marks=marks,
        )
        return want


def collect(sub: laminardb.Subscription, out: list[tuple]) -> None:
    """Take every batch queued on ``sub`` now into ``out``."""
    while (batch := sub.poll(0)) is not None:
        out += rows_of(pa.Table.from_batches([batch]), COLUMNS)


@settings(max_examples=examples(15), deadline=None)
@given(
    seed=st.integers(*seed_strategy_bounds()),
    cores=st.sampled_from([1, 2]),
    delay=st.sampled_from([0, 30, 120]),
    idle=st.sampled_from([None, 300, 1500]),
    hop=st.sampled_from([SIZE_MS, SIZE_MS, 40, 25]),
)
def test_per_key_windows_match_duckdb(
    seed: int, cores: int, delay: int, idle: int | None, hop: int
) -> None:
    """Each key's windows close on its own watermark; late rows judged per key.

    Tumbling windows, and hopping ones (a row in every window containing it).
    """
    announce_seed(seed)
    rng = random.Random(seed)
    batches = make_batches(rng, delay)
    model = Model(delay, idle, hop)
    got: list[tuple] = []
    with laminardb.open(cores=cores) as db:
        db.execute(ddl(delay, idle, hop=hop))
        sub = db.subscribe("w")
        src = db.source("s")
        for batch in batches:
            src.push(batch)
            model.batch(batch)
            if rng.random() < 0.3:
                db.run_until_idle()
                collect(sub, got)
        db.run_until_idle()
        collect(sub, got)
        assert db.late_rows("w") == model.late, seed
        metrics = {
            (r["kind"], r["metric"]): r["value"]
            for r in db.metrics().to_pylist()
            if r["name"] in ("s", "w")
        }
        assert metrics[("source", "watermark_ms")] == model.source_wm
        assert metrics[("source", "watermark_keys")] == len(model.source_keys)
        assert 0 < metrics[("stream", "watermark_keys")] <= len(model.key_max)
    assert len(got) == len(set(got)), "a (key, window) emitted twice"
    assert_same_rows(got, model.answer(), COLUMNS, seed=seed)


def test_quiet_key_is_not_made_late_by_a_busy_one() -> None:
    """A slow symbol's rows stay on time while a fast one runs ahead."""
    with laminardb.open() as db:
        db.execute(ddl(0, None))
        sub = db.subscribe("w")
        db.insert("s", {"k": ["fast", "slow"], "v": [1, 1], "ts": [10, 10]})
        db.insert("s", {"k": ["fast"], "v": [1], "ts": [500]})  # fast closes [0, 100)
        db.run_until_idle()
        got: list[tuple] = []
        collect(sub, got)
        assert got == [("fast", 0, 1, 1)]
        db.insert("s", {"k": ["slow"], "v": [5], "ts": [50]})  # on time for slow
        db.insert("s", {"k": ["slow"], "v": [1], "ts": [130]})  # slow closes [0, 100)
        db.run_until_idle()
        collect(sub, got)
        assert got == [("fast", 0, 1, 1), ("slow", 0, 2, 6)]
        assert db.late_rows("w") == 0


def test_option_errors_carry_codes() -> None:
    """Bad watermark_key settings and queries it cannot run are refused."""
    with laminardb.open() as db:
        db.execute(ddl(0, None))
        cases = [
            (
                "CREATE SOURCE x (a BIGINT, ts BIGINT, WATERMARK FOR ts) "
                "WITH (watermark_key = 'nope')",
                "LDB-1003",
            ),
            ("CREATE SOURCE x (a BIGINT, ts BIGINT) WITH (watermark_key = 'a')", "LDB-6003"),
            (
                "CREATE SOURCE x (a DOUBLE, ts BIGINT, WATERMARK FOR ts) "
                "WITH (watermark_key = 'a')",
                "LDB-6003",
            ),
            (
                "CREATE STREAM e AS SELECT window_start, COUNT(*) AS n FROM s "
                "GROUP BY tumble(ts, INTERVAL '10' MILLISECOND) EMIT ON WINDOW CLOSE",
                "LDB-1006",
            ),
            (
                "CREATE STREAM e AS SELECT k, window_start, COUNT(*) AS n FROM s "
                "GROUP BY k, session(ts, INTERVAL '10' MILLISECOND)",
                "LDB-1005",
            ),
            (
                "CREATE STREAM e AS SELECT k, window_start, COUNT(*) AS n FROM s "
                "GROUP BY k, tumble(ts, INTERVAL '10' MILLISECOND) EMIT CHANGES",
                "LDB-1005",
            ),
        ]
        for sql, code in cases:
            with pytest.raises(laminardb.LaminarError) as info:
                db.execute(sql)
            assert info.value.code == code, (sql, str(info.value))
        # A plain stream over the source follows the source's watermark.
        db.execute("CREATE STREAM p AS SELECT k, ts FROM s")
        # Grouped by more than the key, a split of the input (the Spark
        # adapter's) keeps each key's rows together: the key column alone.
        db.execute(
            "CREATE STREAM kv AS SELECT k, v, window_start, COUNT(*) AS n FROM s "
            "GROUP BY k, v, tumble(ts, INTERVAL '10' MILLISECOND) EMIT ON WINDOW CLOSE"
        )
        keys = [r["name"] for r in db.partitioning("kv").to_pylist() if r["role"] == "key"]
        assert keys == ["k"]


@settings(max_examples=examples(8), deadline=None)
@given(
    seed=st.integers(*seed_strategy_bounds()),
    cores=st.sampled_from([1, 2]),
    cores_after=st.sampled_from([1, 2, 3]),
    idle=st.sampled_from([None, 400]),
    crash=st.booleans(),
)
def test_restart_in_the_middle_equals_the_model(
    tmp_path_factory: pytest.TempPathFactory,
    seed: int,
    cores: int,
    cores_after: int,
    idle: int | None,
    *,
    crash: bool,
) -> None:
    """Checkpoint in the first half, restart (WAL replay of the rest), go on.

    The per-key state -- the source's key table and each key's windows and
    watermark -- comes back from the checkpoint, the WAL replays the pushes
    after it, so the view over the window equals the uninterrupted answer.
    """
    announce_seed(seed)
    rng = random.Random(seed)
    delay = 30
    batches = make_batches(rng, delay)
    model = Model(delay, idle)
    for batch in batches:
        model.batch(batch)
    half = len(batches) // 2
    data = tmp_path_factory.mktemp("keywm") / "data"
    options = {"checkpoint_interval": "1 hour", "wal_mode": "sync", "cores": cores}
    db = laminardb.open(data, **options)
    db.execute(ddl(delay, idle, view=True))
    src = db.source("s")
    for step, batch in enumerate(batches[:half]):
        src.push(batch)
        db.run_until_idle()
        if step == half // 2:
            db.checkpoint()
    close_as(db, data, crash=crash)
    with laminardb.open(data, **{**options, "cores": cores_after}) as db:
        db.execute(ddl(delay, idle, view=True))  # already there
        src = db.source("s")
        assert src.offset - 1 == half
        for batch in batches[half:]:
            src.push(batch)
            db.run_until_idle()
        got = rows_of(db.query("SELECT k, window_start, n, sv FROM wv"), COLUMNS)
        assert db.late_rows("w") == model.late, seed
    assert_same_rows(got, model.answer(), COLUMNS, seed=seed)


def test_key_tables_stay_bounded() -> None:
    """Quiet keys leave both key tables once they hold nothing back."""
    with laminardb.open() as db:
        db.execute(ddl(0, 500))
        sub = db.subscribe("w")
        keys = [f"k{i}" for i in range(100)]
        db.insert("s", {"k": keys, "v": [1] * 100, "ts": [10] * 100})
        db.run_until_idle()
        counts = {
            (r["kind"], r["metric"]): r["value"]
            for r in db.metrics().to_pylist()
            if r["metric"] == "watermark_keys"
        }
        assert counts == {("source", "watermark_keys"): 100, ("stream", "watermark_keys"): 100}
        # "hot" runs 5 s ahead: the others are idle (more than 500 ms behind),
        # the source's watermark follows "hot" and closes their windows.
        db.insert("s", {"k": ["hot"], "v": [1], "ts": [5000]})
        db.run_until_idle()
        got: list[tuple] = []
        collect(sub, got)
        assert sorted(got) == sorted((k, 0, 1, 1) for k in keys)
        counts = {
            (r["kind"], r["metric"]): r["value"]
            for r in db.metrics().to_pylist()
            if r["metric"] == "watermark_keys"
        }
        # Only "hot" is left: it has an open window.
        assert counts == {("source", "watermark_keys"): 1, ("stream", "watermark_keys"): 1}

"""State lifetimes: ``WITH (state_ttl = ...)`` on running aggregates (DESIGN §5b).

A running aggregate (``GROUP BY`` without a window, ``EMIT CHANGES``) with a
state TTL forgets a key once the watermark is ``ttl`` or more past the largest
event time among the rows that built its current state, and retracts the row it
emitted last. The model: replay the same batches, each followed by its
watermark (the source's: the largest ``ts`` so far less the delay); a key's
rows since it was last forgotten make its state, and a key whose largest time
plus ``ttl`` is at or below a new watermark is dropped. After every batch the
changelog received so far, added up by weight, must equal DuckDB's GROUP BY over
the rows the model holds — at cores 1 and 2, and through a checkpoint and
restart. A stream of ever new keys keeps its state flat (metrics).
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pyarrow as pa
import pytest
from _oracle_util import announce_seed, duck, examples, rows_of, seed_strategy_bounds
from hypothesis import given, settings
from hypothesis import strategies as st

import laminardb

SEEDS = st.integers(*seed_strategy_bounds())

SCHEMA = pa.schema([("k", pa.string()), ("x", pa.int64()), ("ts", pa.int64())])

#: (ours, DuckDB's) aggregates over a key's current rows.
AGGS = [
    ("COUNT(*)", "COUNT(*)"),
    ("SUM(x)", "SUM(x)"),
    ("MIN(x)", "MIN(x)"),
    ("MAX(x)", "MAX(x)"),
    ("COUNT(DISTINCT x)", "COUNT(DISTINCT x)"),
    ("MEDIAN(x)", "MEDIAN(x)"),
    ("STRING_AGG(CAST(x AS VARCHAR), '|')", "STRING_AGG(CAST(x AS VARCHAR), '|' ORDER BY rn)"),
]
MEDIAN_COL = 1 + [ours for ours, _ in AGGS].index("MEDIAN(x)")
#: Aggregates whose states are fixed-width: under EMIT CHANGES their updated
#: copies are copied back slot by slot (a path of its own in the window operator).
FLAT_AGGS = AGGS[:4]


def ddl(delay: int, ttl: int, *, view: bool = False, aggs: list = AGGS) -> str:
    items = ", ".join(f"{ours} AS a{i}" for i, (ours, _) in enumerate(aggs))
    kind = "MATERIALIZED VIEW" if view else "STREAM"
    return (
        "CREATE SOURCE t (k VARCHAR, x BIGINT, ts BIGINT,"
        f" WATERMARK FOR ts AS ts - INTERVAL '{delay}' MILLISECOND);"
        f"CREATE {kind} w AS SELECT k, {items} FROM t GROUP BY k EMIT CHANGES"
        f" WITH (state_ttl = INTERVAL '{ttl}' MILLISECOND);"
    )


def random_batches(rng: np.random.Generator, nbatches: int) -> list[pa.RecordBatch]:
    """Batches of rows over a few keys (NULL among them), times moving forward
    with jitter and pauses, so that keys go idle for longer than the TTL and
    come back."""
    keys = ["a", "b", "c", "d", "e", None]
    now = 0
    batches = []
    for _ in range(nbatches):
        now += int(rng.choice([0, 1, 5, 20, 60]))
        n = int(rng.integers(1, 6))
        active = keys[: int(rng.integers(1, len(keys) + 1))]
        ks = [active[int(rng.integers(len(active)))] for _ in range(n)]
        xs = [None if rng.random() < 0.15 else int(rng.integers(-5, 6)) for _ in range(n)]
        ts = [max(0, now - int(rng.integers(0, 15))) for _ in range(n)]
        batches.append(pa.record_batch([ks, xs, ts], schema=SCHEMA))
    return batches


class Model:
    """The reference: each key's rows since it was last forgotten."""

    def __init__(self, delay: int, ttl: int, aggs: list = AGGS) -> None:
        self.delay, self.ttl, self.aggs = delay, ttl, aggs
        self.rows: dict[object, list[tuple]] = {}
        self.rn = 0  # arrival number of the next row
        self.last: dict[object, int] = {}
        self.max_ts: int | None = None
        self.wm: int | None = None

    def push(self, batch: pa.RecordBatch) -> None:
        for k, x, ts in rows_of(pa.Table.from_batches([batch]), ["k", "x", "ts"]):
            self.rows.setdefault(k, []).append((k, x, ts, self.rn))
            self.rn += 1
            self.last[k] = max(self.last.get(k, ts), ts)
            self.max_ts = ts if self.max_ts is None else max(self.max_ts, ts)
        wm = self.max_ts - self.delay
        if self.wm is None or wm > self.wm:
            self.wm = wm
            for k in [k for k, t in self.last.items() if t + self.ttl <= wm]:
                del self.rows[k], self.last[k]

    def expected(self) -> list[tuple]:
        held = [r for rows in self.rows.values() for r in rows]
        table = pa.Table.from_pylist(
            [dict(zip(["k", "x", "ts", "rn"], r)) for r in held],
            schema=SCHEMA.append(pa.field("rn", pa.int64())),
        )
        items = ", ".join(theirs for _, theirs in self.aggs)
        return duck(f"SELECT k, {items} FROM cur GROUP BY k", cur=table)[1]


def folded(state: Counter, sub: laminardb.Subscription, columns: list[str]) -> None:
    while (batch := sub.poll(0)) is not None:
        table = pa.Table.from_batches([batch])
        for row, weight in zip(rows_of(table, columns), table.column("_weight").to_pylist()):
            state[row] += weight


def held(state: Counter) -> list[tuple]:
    assert all(m in (0, 1) for m in state.values()), state
    return sorted((r for r, m in state.items() if m == 1), key=repr)


def normal(rows: list[tuple]) -> list[tuple]:
    """MEDIAN is DOUBLE in both; the rest are whole numbers."""
    return sorted(
        (
            tuple(float(v) if i == MEDIAN_COL and v is not None else v for i, v in enumerate(r))
            for r in rows
        ),
        key=repr,
    )


COLUMNS = ["k"] + [f"a{i}" for i in range(len(AGGS))]


@pytest.mark.parametrize("aggs", [AGGS, FLAT_AGGS], ids=["all", "flat"])
@pytest.mark.parametrize("cores", [1, 2])
@settings(max_examples=examples(8), deadline=None)
@given(seed=SEEDS)
def test_running_aggregate_forgets_idle_keys(seed: int, cores: int, aggs: list) -> None:
    """After every batch, the changelog folded equals DuckDB over the rows of
    each key since it was last forgotten (all aggregates, and only fixed-width
    ones)."""
    announce_seed(seed)
    rng = np.random.default_rng(seed)
    delay, ttl = int(rng.choice([0, 3, 10])), int(rng.choice([1, 10, 30]))
    batches = random_batches(rng, int(rng.integers(5, 30)))
    model = Model(delay, ttl, aggs)
    columns = ["k"] + [f"a{i}" for i in range(len(aggs))]
    state: Counter = Counter()
    with laminardb.open(cores=cores) as db:
        db.execute(ddl(delay, ttl, aggs=aggs))
        sub = db.subscribe("w")
        for batch in batches:
            db.source("t").push(batch)
            db.run_until_idle()
            model.push(batch)
            folded(state, sub, columns)
            assert normal(held(state)) == normal(model.expected()), (seed, delay, ttl)


@settings(max_examples=examples(6), deadline=None)
@given(seed=SEEDS)
def test_view_forgets_idle_keys(seed: int) -> None:
    """A materialized view over a running aggregate with a TTL holds, after
    every batch, DuckDB's answer over the rows the model holds."""
    announce_seed(seed)
    rng = np.random.default_rng(seed)
    delay, ttl = int(rng.choice([0, 5])), int(rng.choice([5, 20]))
    model = Model(delay, ttl)
    with laminardb.open() as db:
        db.execute(ddl(delay, ttl, view=True))
        for batch in random_batches(rng, int(rng.integers(5, 25))):
            db.source("t").push(batch)
            db.run_until_idle()
            model.push(batch)
            got = rows_of(db.query("SELECT * FROM w"), COLUMNS)
            assert normal(got) == normal(model.expected()), (seed, delay, ttl)


@pytest.mark.parametrize("cores", [1, 2])
def test_ttl_state_survives_restart(tmp_path, cores: int) -> None:
    """Keys' last event times are checkpointed: after a restart the same keys
    are forgotten at the same watermarks as in an uninterrupted run."""
    rng = np.random.default_rng(7)
    batches = random_batches(rng, 40)
    delay, ttl = 3, 10

    def run(split: int | None) -> list[list[tuple]]:
        data = tmp_path / f"d{split}-{cores}"
        options = {"checkpoint_interval": "1 hour", "cores": cores}
        states: list[list[tuple]] = []
        state: Counter = Counter()
        db = laminardb.open(str(data), **options)
        db.execute(ddl(delay, ttl))
        sub = db.subscribe("w")
        for i, batch in enumerate(batches):
            if i == split:
                db.run_until_idle()
                folded(state, sub, COLUMNS)
                db.checkpoint()
                db.close()
                db = laminardb.open(str(data), **options)
                sub = db.subscribe("w")
            db.source("t").push(batch)
            db.run_until_idle()
            folded(state, sub, COLUMNS)
            states.append(held(state))
        db.close()
        return states

    model = Model(delay, ttl)
    whole = run(None)
    for batch, got in zip(batches, whole):
        model.push(batch)
        assert normal(got) == normal(model.expected())
    assert run(17) == whole


@pytest.mark.parametrize("cores", [1, 2])
def test_endless_new_keys_keep_state_flat(cores: int) -> None:
    """Every batch brings keys never seen before; with a TTL the groups held
    (and their bytes) stop growing once the first keys expire."""
    with laminardb.open(cores=cores) as db:
        db.execute(
            "CREATE SOURCE t (k VARCHAR, x BIGINT, ts BIGINT,"
            " WATERMARK FOR ts AS ts - INTERVAL '0' MILLISECOND);"
            "CREATE STREAM w AS SELECT k, COUNT(*) AS n, SUM(x) AS s, MEDIAN(x) AS m"
            " FROM t GROUP BY k WITH (state_ttl = INTERVAL '100' MILLISECOND);"
        )
        sub = db.subscribe("w")
        per_batch, groups, sizes = 300, [], []
        for b in range(120):
            keys = [f"key-{b}-{i}" for i in range(per_batch)]
            db.source("t").push(
                {"k": keys, "x": list(range(per_batch)), "ts": [b * 10] * per_batch}
            )
            db.run_until_idle()
            while sub.poll(0) is not None:
                pass
            m = {
                r["metric"]: r["value"]
                for r in db.metrics().to_pylist()
                if r["kind"] == "stream" and r["name"] == "w"
            }
            groups.append(m["state_groups"])
            sizes.append(m["accounted_state_bytes"])
        # 100 ms of keys (10 batches) live at once, forgotten slots at most as many.
        assert max(groups[20:]) <= 2 * 11 * per_batch + 64, groups[-20:]
        assert max(sizes[100:]) <= 1.5 * max(sizes[20:100]), (sizes[20:100], sizes[100:])


def test_state_ttl_errors() -> None:
    with laminardb.open() as db:
        db.execute(
            "CREATE SOURCE t (k VARCHAR, ts BIGINT, WATERMARK FOR ts AS ts);"
            "CREATE SOURCE u (k VARCHAR, ts BIGINT);"
        )
        with pytest.raises(laminardb.LaminarError) as e:  # a window forgets by itself
            db.execute(
                "CREATE STREAM a AS SELECT k, COUNT(*) AS n FROM t "
                "GROUP BY k, tumble(ts, INTERVAL '1' SECOND) "
                "WITH (state_ttl = INTERVAL '1' MINUTE)"
            )
        assert e.value.code == "LDB-6003"
        assert "state_ttl" in str(e.value)
        with pytest.raises(laminardb.LaminarError) as e:  # no event time
            db.execute(
                "CREATE STREAM b AS SELECT k, COUNT(*) AS n FROM u GROUP BY k "
                "WITH (state_ttl = INTERVAL '1' MINUTE)"
            )
        assert e.value.code == "LDB-6003"
        assert "'u'" in str(e.value)
        with pytest.raises(laminardb.LaminarError) as e:
            db.execute(
                "CREATE STREAM c AS SELECT k, COUNT(*) AS n FROM t GROUP BY k "
                "WITH (state_ttl = 'soon')"
            )
        assert e.value.code == "LDB-6002"


def test_explain_shows_state_ttl() -> None:
    with laminardb.open() as db:
        db.execute(ddl(0, 60_000))
        details = [r["details"] for r in db.query("EXPLAIN w").to_pylist()]
        assert any("60000 ms in event time forgotten (state_ttl)" in d for d in details)

"""UNION ALL over two and three sources against DuckDB's batch answer.

Each source has its own watermark delay; rows arrive out of order within and
beyond it, in batches of random sizes, and the sources' batches interleave at
random. A window over the union (a derived table) must equal DuckDB's
``GROUP BY k, ts // size`` over the rows the engine accepted, where a row is
late by its *own* source's watermark (the model below replays each source's
watermark batch by batch); the late-row count must match the model, whatever
the interleaving. A materialized view over a union must hold DuckDB's
``UNION ALL`` of every row. Run with one and two reactors, inline and with
the reactor thread taking the pushes as they come.
"""

from __future__ import annotations

import random
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
    row_batches,
    rows_of,
    seed_strategy_bounds,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import laminardb

SIZE_MS = 100
DELAYS_MS = [0, 150, 40]
SCHEMA = pa.schema([("k", pa.string()), ("v", pa.int64()), ("ts", pa.int64())])


def make_batches(rng: random.Random, delay: int) -> list[pa.RecordBatch]:
    """Rows of one source: times mostly rising, some behind by up to 3x the delay."""
    rows: list[tuple[str, int, int]] = []
    t = rng.randrange(0, 50)
    for _ in range(rng.randrange(20, 120)):
        t += rng.randrange(0, 30)
        behind = rng.randrange(0, 3 * delay + 60) if rng.random() < 0.25 else 0
        rows.append((rng.choice("abcde"), rng.randrange(-5, 50), max(0, t - behind)))
    return row_batches(rng, rows, SCHEMA, 12)


def accepted_rows(batches: list[pa.RecordBatch], delay: int) -> tuple[list[tuple], int]:
    """The rows a window accepts from one source, and how many are late.

    A row is late when its window's end is at or behind its source's watermark
    as it stood before the row's batch (a batch's own rows raise it after).
    """
    wm = None
    kept: list[tuple] = []
    late = 0
    for batch in batches:
        rows = list(zip(*(batch.column(c).to_pylist() for c in ("k", "v", "ts"))))
        for row in rows:
            end = (row[2] // SIZE_MS) * SIZE_MS + SIZE_MS
            if wm is not None and end <= wm:
                late += 1
            else:
                kept.append(row)
        if rows:
            cand = max(r[2] for r in rows) - delay
            wm = cand if wm is None else max(wm, cand)
    return kept, late


def window_answer(kept: list[tuple]) -> list[tuple]:
    """DuckDB's tumbling-window answer over the accepted (k, v, ts) rows."""
    table = pa.table(
        {
            "k": pa.array([r[0] for r in kept], pa.string()),
            "v": pa.array([r[1] for r in kept], pa.int64()),
            "ts": pa.array([r[2] for r in kept], pa.int64()),
        }
    )
    _, want = duck(
        f"SELECT k, (ts // {SIZE_MS}) * {SIZE_MS} AS ws, COUNT(*) AS n, SUM(v) AS sv "
        "FROM t GROUP BY k, ws",
        t=table,
    )
    return want


def drain(sub: laminardb.Subscription, out: list[pa.RecordBatch]) -> int:
    """Take every batch queued on ``sub`` now; return how many."""
    taken = 0
    while (batch := sub.poll(0)) is not None:
        out.append(batch)
        taken += 1
    return taken


def partitions(db: laminardb.Connection, stream: str) -> int:
    """How many partitions (reactors) stream ``stream`` runs as."""
    rows = db.metrics().to_pylist()
    return next(r["value"] for r in rows if r["name"] == stream and r["metric"] == "partitions")


def pump(db: laminardb.Connection, sub: laminardb.Subscription, out: list) -> None:
    """Run inline until the input is consumed and the output taken."""
    db.run_until_idle()
    while drain(sub, out) > 0:
        db.run_until_idle()


@settings(max_examples=examples(12), deadline=None)
@given(
    seed=st.integers(*seed_strategy_bounds()),
    ninputs=st.sampled_from([2, 3]),
    cores=st.sampled_from([1, 2]),
    threaded=st.booleans(),
)
def test_union_window_and_view_match_duckdb(
    seed: int, ninputs: int, cores: int, *, threaded: bool
) -> None:
    """A window and a view over a union equal DuckDB's answer; late rows counted."""
    announce_seed(seed)
    rng = random.Random(seed)
    names = [f"s{i}" for i in range(ninputs)]
    per_source = [make_batches(rng, DELAYS_MS[i]) for i in range(ninputs)]
    ddl = "".join(
        f"CREATE SOURCE {n} (k VARCHAR, v BIGINT, ts BIGINT, "
        f"WATERMARK FOR ts AS ts - INTERVAL '{DELAYS_MS[i]}' MILLISECOND);"
        for i, n in enumerate(names)
    )
    branches = " UNION ALL ".join(f"SELECT k, v, ts FROM {n}" for n in names)
    ddl += (
        f"CREATE STREAM w AS SELECT k, window_start, COUNT(*) AS n, SUM(v) AS sv "
        f"FROM ({branches}) GROUP BY k, tumble(ts, INTERVAL '{SIZE_MS}' MILLISECOND);"
    )
    view_branches = " UNION ALL ".join(
        [f"SELECT k, v FROM {names[0]} WHERE v > 5", f"SELECT k, v * 2 FROM {names[1]}"]
        + [f"SELECT k AS kk, v FROM {n}" for n in names[2:]]
    )
    ddl += f"CREATE MATERIALIZED VIEW mv AS {view_branches};"
    # Interleave the sources' batches at random, each source in its own order.
    queues = [list(b) for b in per_source]
    order: list[tuple[int, pa.RecordBatch]] = []
    while any(queues):
        i = rng.choice([j for j, q in enumerate(queues) if q])
        order.append((i, queues[i].pop(0)))
    out: list[pa.RecordBatch] = []
    with laminardb.open(cores=cores) as db:
        db.execute(ddl)
        # The window over the union runs as one partition per reactor.
        assert partitions(db, "w") == cores
        sources = [db.source(n) for n in names]
        sub = db.subscribe("w")
        if threaded:  # the reactor takes the pushes as they come
            db.start()
        for i, batch in order:
            sources[i].push(batch)
            if not threaded and rng.random() < 0.5:
                db.run_until_idle()
            drain(sub, out)
        if threaded:
            db.stop()
        pump(db, sub, out)
        view_rows = rows_of(db.query("SELECT k, v FROM mv"), ["k", "v"])
        for src in sources:
            src.watermark(FINAL_WATERMARK)
        pump(db, sub, out)
        late = db.late_rows("w")
    kept: list[tuple] = []
    want_late = 0
    for i in range(ninputs):
        rows, n_late = accepted_rows(per_source[i], DELAYS_MS[i])
        kept += rows
        want_late += n_late
    assert late == want_late, f"late rows {late}, want {want_late} (seed {seed})"
    want = window_answer(kept)
    columns = ["k", "window_start", "n", "sv"]
    got = rows_of(pa.Table.from_batches(out), columns) if out else []
    assert_same_rows(got, want, columns, seed=seed)
    # The view: every row of every input, no lateness.
    tables = {n: pa.Table.from_batches(per_source[i], schema=SCHEMA) for i, n in enumerate(names)}
    view_sql = " UNION ALL ".join(
        [f"SELECT k, v FROM {names[0]} WHERE v > 5", f"SELECT k, v * 2 FROM {names[1]}"]
        + [f"SELECT k, v FROM {n}" for n in names[2:]]
    )
    _, want_view = duck(view_sql, **tables)
    assert_same_rows(view_rows, want_view, ["k", "v"], seed=seed)


def test_union_errors_carry_codes() -> None:
    """Branches that do not fit fail with their LDB code; earlier objects stay."""
    with laminardb.open() as db:
        db.execute(
            "CREATE SOURCE a (k VARCHAR, v BIGINT, ts BIGINT, WATERMARK FOR ts);"
            "CREATE SOURCE b (k VARCHAR, v BIGINT, ts BIGINT, WATERMARK FOR ts);"
        )
        cases = [
            ("SELECT k, v FROM a UNION ALL SELECT k FROM b", "LDB-2001"),
            ("SELECT k FROM a UNION ALL SELECT v FROM b", "LDB-2001"),
            ("SELECT k FROM a UNION SELECT k FROM b", "LDB-1005"),
            (
                "SELECT k, COUNT(*) AS n FROM (SELECT k, ts, v FROM a UNION ALL "
                "SELECT k, v, ts FROM b) GROUP BY k, tumble(ts, INTERVAL '1' SECOND)",
                "LDB-1006",
            ),
        ]
        for select, code in cases:
            with pytest.raises(laminardb.LaminarError) as info:
                db.execute(f"CREATE STREAM e AS {select}")
            assert info.value.code == code, (select, str(info.value))
        db.execute("CREATE STREAM ok AS SELECT k FROM a UNION ALL SELECT k FROM b")


@settings(max_examples=examples(8), deadline=None)
@given(
    seed=st.integers(*seed_strategy_bounds()),
    cores=st.sampled_from([1, 2]),
    cores_after=st.sampled_from([1, 2, 3]),
    crash=st.booleans(),
)
def test_union_restart_in_the_middle(
    tmp_path_factory: pytest.TempPathFactory,
    seed: int,
    cores: int,
    cores_after: int,
    *,
    crash: bool,
) -> None:
    """A durable union restarted mid-run (closed, or copied as a crash leaves it).

    Two sources, a window over their union, a view over the window; a
    checkpoint in the first half, then a restart on ``cores_after`` reactors
    (the window's partitions re-split by key hash), each source resumed from
    its own ``offset``: the view equals DuckDB's answer over the accepted rows.
    """
    announce_seed(seed)
    rng = random.Random(seed)
    names = ["s0", "s1"]
    per_source = [make_batches(rng, DELAYS_MS[i]) for i in range(2)]
    ddl = "".join(
        f"CREATE SOURCE {n} (k VARCHAR, v BIGINT, ts BIGINT, "
        f"WATERMARK FOR ts AS ts - INTERVAL '{DELAYS_MS[i]}' MILLISECOND);"
        for i, n in enumerate(names)
    )
    ddl += (
        "CREATE STREAM w AS SELECT k, window_start, COUNT(*) AS n, SUM(v) AS sv "
        "FROM (SELECT k, v, ts FROM s0 UNION ALL SELECT k, v, ts FROM s1) "
        f"GROUP BY k, tumble(ts, INTERVAL '{SIZE_MS}' MILLISECOND);"
        "CREATE MATERIALIZED VIEW wv AS SELECT k, window_start, n, sv FROM w;"
    )
    queues = [list(b) for b in per_source]
    order: list[int] = []
    while any(queues):
        i = rng.choice([j for j, q in enumerate(queues) if q])
        queues[i].pop(0)
        order.append(i)
    half = len(order) // 2
    data = tmp_path_factory.mktemp("union") / "data"
    options = {"checkpoint_interval": "1 hour", "wal_mode": "sync", "cores": cores}
    db = laminardb.open(data, **options)
    db.execute(ddl)
    sources = [db.source(n) for n in names]
    sent = [0, 0]
    for step, i in enumerate(order[:half]):
        sources[i].push(per_source[i][sent[i]])
        sent[i] += 1
        db.run_until_idle()
        if step == half // 2:
            db.checkpoint()
    close_as(db, data, crash=crash)  # or as a kill -9 leaves it
    with laminardb.open(data, **{**options, "cores": cores_after}) as db:
        db.execute(ddl)  # the stored statements: already there
        assert partitions(db, "w") == cores_after
        sources = [db.source(n) for n in names]
        for i in range(2):
            assert sources[i].offset - 1 == sent[i]
        for i in order[half:]:
            sources[i].push(per_source[i][sent[i]])
            sent[i] += 1
            db.run_until_idle()
        for src in sources:
            src.watermark(FINAL_WATERMARK)
        db.run_until_idle()
        columns = ["k", "window_start", "n", "sv"]
        got = rows_of(db.query("SELECT k, window_start, n, sv FROM wv"), columns)
    kept: list[tuple] = []
    for i in range(2):
        kept += accepted_rows(per_source[i], DELAYS_MS[i])[0]
    want = window_answer(kept)
    assert_same_rows(got, want, columns, seed=seed)


@settings(max_examples=examples(8), deadline=None)
@given(seed=st.integers(*seed_strategy_bounds()), cores=st.sampled_from([1, 2]))
def test_query_over_a_union_of_views_matches_duckdb(seed: int, cores: int) -> None:
    """``db.query`` reads a UNION ALL of views, and a derived table over one.

    Two views over their sources and a view over a stream that reads a union;
    ad-hoc SELECTs combining them (WHERE per branch, ORDER BY and LIMIT of the
    set, a derived table with an outer WHERE) equal DuckDB's answer over the
    same rows.
    """
    announce_seed(seed)
    rng = random.Random(seed)
    per_source = [make_batches(rng, 0), make_batches(rng, 0)]
    with laminardb.open(cores=cores) as db:
        db.execute(
            "CREATE SOURCE a (k VARCHAR, v BIGINT, ts BIGINT, WATERMARK FOR ts);"
            "CREATE SOURCE b (k VARCHAR, v BIGINT, ts BIGINT, WATERMARK FOR ts);"
            "CREATE STREAM u AS SELECT k, v FROM a UNION ALL SELECT k, v * 3 FROM b;"
            "CREATE MATERIALIZED VIEW vu AS SELECT k, v FROM u;"
            "CREATE MATERIALIZED VIEW va AS SELECT k, v FROM a;"
            "CREATE MATERIALIZED VIEW vb AS SELECT k, v, ts FROM b;"
        )
        for name, batches in zip(["a", "b"], per_source):
            for batch in batches:
                db.insert(name, batch)
        db.run_until_idle()
        got_sets = [
            rows_of(db.query(q), ["k", "v"])
            for q in (
                "SELECT k, v FROM vu",
                "SELECT k, v FROM va WHERE v > 10 UNION ALL SELECT k, v FROM vb "
                "UNION ALL SELECT k, v FROM vu ORDER BY v DESC, k LIMIT 7 OFFSET 2",
                "SELECT upper(k) AS k, v FROM (SELECT k, v FROM va UNION ALL "
                "SELECT k, ts FROM vb) WHERE v % 2 = 0",
            )
        ]
    tables = {n: pa.Table.from_batches(b, schema=SCHEMA) for n, b in zip(["a", "b"], per_source)}
    union = "SELECT k, v FROM a UNION ALL SELECT k, v * 3 AS v FROM b"
    want_sets = [
        duck(union, **tables)[1],
        duck(
            f"SELECT k, v FROM (SELECT k, v FROM a WHERE v > 10 UNION ALL SELECT k, v FROM b "
            f"UNION ALL ({union})) ORDER BY v DESC, k LIMIT 7 OFFSET 2",
            **tables,
        )[1],
        duck(
            "SELECT upper(k) AS k, v FROM (SELECT k, v FROM a UNION ALL SELECT k, ts FROM b) "
            "WHERE v % 2 = 0",
            **tables,
        )[1],
    ]
    for got, want in zip(got_sets, want_sets):
        assert_same_rows(got, want, ["k", "v"], seed=seed)


@pytest.mark.parametrize("cores", [1, 2])
@pytest.mark.parametrize("threaded", [False, True])
def test_idle_input_closes_a_keyed_union_at_once(cores: int, *, threaded: bool) -> None:
    """An input declared idle releases a keyed union's windows without another push.

    With two reactors the union runs as key partitions; the change reaches them
    (and their merge) as it is applied, not at the next advance of an input.
    """
    with laminardb.open(cores=cores) as db:
        db.execute(
            "CREATE SOURCE a (k VARCHAR, ts BIGINT, WATERMARK FOR ts);"
            "CREATE SOURCE b (k VARCHAR, ts BIGINT, WATERMARK FOR ts);"
            "CREATE STREAM u AS SELECT k, window_start, COUNT(*) AS n "
            "FROM (SELECT k, ts FROM a UNION ALL SELECT k, ts FROM b) "
            "GROUP BY k, tumble(ts, INTERVAL '100' MILLISECOND) EMIT ON WINDOW CLOSE;"
        )
        assert partitions(db, "u") == cores
        sub = db.subscribe("u")
        db.insert("b", {"k": ["x"], "ts": [10]})
        db.insert("a", {"k": ["x", "y"], "ts": [20, 350]})
        db.run_until_idle()
        assert sub.poll(0) is None  # b at 10 holds the union
        if threaded:
            db.start()
            db.source("b").set_idle(True)
            batch = sub.poll(10.0)
            db.stop()
        else:
            db.source("b").set_idle(True)
            db.run_until_idle()
            batch = sub.poll(0)
        assert batch is not None
        assert batch.to_pylist() == [{"k": "x", "window_start": 0, "n": 2}]


#: A union over a and b where b goes idle after the checkpoint, a's rows
#: close windows meanwhile, and b comes back with a row those windows missed
#: (late by the live run's judgement) and more.
IDLE_DDL = (
    "CREATE SOURCE a (k VARCHAR, ts BIGINT, WATERMARK FOR ts);"
    "CREATE SOURCE b (k VARCHAR, ts BIGINT, WATERMARK FOR ts);"
    "CREATE STREAM u AS SELECT k, window_start, COUNT(*) AS n "
    "FROM (SELECT k, ts FROM a UNION ALL SELECT k, ts FROM b) "
    "GROUP BY k, tumble(ts, INTERVAL '100' MILLISECOND) EMIT ON WINDOW CLOSE;"
    "CREATE MATERIALIZED VIEW uv AS SELECT k, window_start, n FROM u;"
)
IDLE_STEPS: list[tuple] = [
    ("push", "b", "x", 10),
    ("push", "a", "x", 20),
    ("checkpoint",),
    ("idle", "b"),
    ("push", "a", "x", 250),
    ("push", "a", "y", 260),  # b idle: the union at 260 closes [0, 100), [100, 200)
    ("push", "b", "x", 150),  # b back: behind the union's watermark, late
    ("push", "b", "y", 170),  # late too: the union's watermark does not go back
    ("push", "a", "x", 320),
    ("push", "b", "x", 330),
    ("idle", "b"),
    ("push", "a", "y", 520),
    ("push", "b", "y", 410),  # late again
    ("push", "a", "x", 610),
]


def run_idle_steps(db: laminardb.Connection, steps: list[tuple]) -> None:
    """Apply ``steps`` (pushes, idleness, checkpoints), running the graph after each."""
    for step in steps:
        if step[0] == "push":
            db.insert(step[1], {"k": [step[2]], "ts": [step[3]]})
        elif step[0] == "idle":
            db.source(step[1]).set_idle(True)
        else:
            db.checkpoint()
        db.run_until_idle()


@pytest.mark.parametrize("cores", [1, 2])
@pytest.mark.parametrize("crash", [False, True])
def test_idleness_replays_the_same(tmp_path: Path, cores: int, *, crash: bool) -> None:
    """A restart replays each idleness change where it took effect.

    The changes after the checkpoint are logged with every source's position;
    the WAL replay applies them there, so the rows the live run counted late
    (b's, behind the watermark a reached while b was idle) are late again and
    the view equals an uninterrupted run's.
    """
    options = {"checkpoint_interval": "1 hour", "wal_mode": "sync", "cores": cores}
    columns = ["k", "window_start", "n"]
    with laminardb.open(tmp_path / "whole", **options) as db:
        db.execute(IDLE_DDL)
        run_idle_steps(db, IDLE_STEPS)
        want_late = db.late_rows("u")
        for name in ("a", "b"):
            db.source(name).watermark(FINAL_WATERMARK)
        db.run_until_idle()
        want = rows_of(db.query("SELECT k, window_start, n FROM uv"), columns)
    assert want_late == 3
    data = tmp_path / "restarted"
    db = laminardb.open(data, **options)
    db.execute(IDLE_DDL)
    cut = len(IDLE_STEPS) - 3
    run_idle_steps(db, IDLE_STEPS[:cut])
    close_as(db, data, crash=crash)
    with laminardb.open(data, **options) as db:
        db.execute(IDLE_DDL)  # already there
        run_idle_steps(db, IDLE_STEPS[cut:])
        assert db.late_rows("u") == want_late
        for name in ("a", "b"):
            db.source(name).watermark(FINAL_WATERMARK)
        db.run_until_idle()
        got = rows_of(db.query("SELECT k, window_start, n FROM uv"), columns)
    assert sorted(got) == sorted(want)

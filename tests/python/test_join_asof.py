"""ASOF JOIN against DuckDB's batch ASOF JOIN over the same rows.

Two sources, trades (left) and quotes (right), each with its own watermark
delay; rows arrive out of order within the delay, in batches of random sizes,
and the two sources' batches interleave at random (inline driver with random
run points, or the reactor thread taking them as they come; one or two
reactors). After the final watermark on both, the stream's rows must equal
DuckDB's ``ASOF [LEFT] JOIN`` for every ordering (>=, >, <=, <), with many
keys, NULL keys, ties on time between the sides, and a tolerance (DuckDB's
answer with matches farther than the tolerance dropped, or NULL-padded for
LEFT). Quote times are unique per key so that the match is one row (DuckDB
picks among equal times arbitrarily). A bounded-state test checks the rows
the join holds stay under a bound as the input grows; error tests check the
codes with line and column.
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
    feed_join_steadily,
    rows_of,
    rows_to_batches,
    run_two_inputs,
    seed_strategy_bounds,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import laminardb

TRADES = pa.schema([("k", pa.string()), ("ts", pa.int64()), ("p", pa.int64())])
QUOTES = pa.schema([("k", pa.string()), ("ts", pa.int64()), ("b", pa.float64())])
OPS = [">=", ">", "<=", "<"]


def gen_side(rng: random.Random, n: int, keys: list[str], delay: int, *, unique: bool) -> list:
    """Rows (k, ts, value) whose disorder stays within ``delay`` (none late)."""
    rows = []
    seen: set[tuple] = set()
    clock = rng.randrange(0, 20)
    for i in range(n):
        clock += rng.randrange(0, 6)
        ts = max(0, clock - rng.randrange(0, delay + 1))
        k = None if rng.random() < 0.08 else rng.choice(keys)
        if unique:
            if (k, ts) in seen:
                continue
            seen.add((k, ts))
        rows.append((k, ts, i if not unique else rng.randrange(-500, 500) / 4.0))
    return rows


def oracle(trades: list, quotes: list, op: str, *, left: bool, tol: int | None) -> list[tuple]:
    """DuckDB's ASOF JOIN; a tolerance drops (or NULL-pads) farther matches."""
    tt = pa.Table.from_pylist([dict(zip(["k", "ts", "p"], r)) for r in trades], TRADES)
    qq = pa.Table.from_pylist([dict(zip(["k", "ts", "b"], r)) for r in quotes], QUOTES)
    kind = "ASOF LEFT JOIN" if left else "ASOF JOIN"
    _, rows = duck(
        f"SELECT t.k, t.ts, t.p, q.ts AS qts, q.b FROM t {kind} q ON t.k = q.k AND t.ts {op} q.ts",
        t=tt,
        q=qq,
    )
    if tol is None:
        return rows
    out = []
    for r in rows:
        if r[3] is not None and abs(r[1] - r[3]) > tol:
            if left:
                out.append((*r[:3], None, None))
            continue
        out.append(r)
    return out


def run_join(
    rng: random.Random,
    trades: list,
    quotes: list,
    select: str,
    delays: tuple[int, int],
    *,
    cores: int,
    threaded: bool,
) -> tuple[list[pa.RecordBatch], int]:
    """Push both sides interleaved at random; return the output and late rows."""
    ddl = (
        f"CREATE SOURCE trades (k VARCHAR, ts BIGINT, p BIGINT, "
        f"WATERMARK FOR ts AS ts - INTERVAL '{delays[0]}' MILLISECOND);"
        f"CREATE SOURCE quotes (k VARCHAR, ts BIGINT, b DOUBLE, "
        f"WATERMARK FOR ts AS ts - INTERVAL '{delays[1]}' MILLISECOND);"
        f"CREATE STREAM j AS {select}"
    )
    sides = [
        ("trades", rows_to_batches(rng, trades, TRADES)),
        ("quotes", rows_to_batches(rng, quotes, QUOTES)),
    ]
    return run_two_inputs(rng, ddl, sides, cores=cores, threaded=threaded)


@settings(max_examples=examples(40), deadline=None)
@given(
    seed=st.integers(*seed_strategy_bounds()),
    op=st.sampled_from(OPS),
    left=st.booleans(),
    use_tol=st.booleans(),
    cores=st.sampled_from([1, 2]),
    threaded=st.booleans(),
    duck_spelling=st.booleans(),
)
def test_asof_join_matches_duckdb(
    seed: int,
    op: str,
    *,
    left: bool,
    use_tol: bool,
    cores: int,
    threaded: bool,
    duck_spelling: bool,
) -> None:
    """Every ordering, inner and LEFT, with and without tolerance, equals DuckDB."""
    announce_seed(seed)
    rng = random.Random(seed)
    keys = [f"s{i}" for i in range(rng.choice([1, 3, 20, 200]))]
    delays = (rng.choice([0, 3, 20]), rng.choice([0, 5, 30]))
    trades = gen_side(rng, rng.randrange(0, 300), keys, delays[0], unique=False)
    quotes = gen_side(rng, rng.randrange(0, 400), keys, delays[1], unique=True)
    tol = rng.choice([0, 2, 10]) if use_tol else None
    kind = "LEFT ASOF JOIN" if left else "ASOF JOIN"
    if tol is None:
        cond = f"t.ts {op} q.ts"
    elif op in (">=", ">"):
        cond = f"t.ts {op} q.ts AND t.ts - q.ts <= INTERVAL '{tol}' MILLISECOND"
    else:
        cond = f"t.ts {op} q.ts AND q.ts - t.ts <= INTERVAL '{tol}' MILLISECOND"
    if duck_spelling:
        on = f"ON t.k = q.k AND {cond}"
    else:
        on = f"MATCH_CONDITION({cond}) ON t.k = q.k"
    select = f"SELECT t.k, t.ts, t.p, q.ts AS qts, q.b FROM trades t {kind} quotes q {on}"
    out, late = run_join(rng, trades, quotes, select, delays, cores=cores, threaded=threaded)
    assert late == 0, f"no row is late by construction, got {late} (seed {seed})"
    cols = ["k", "ts", "p", "qts", "b"]
    got = rows_of(pa.Table.from_batches(out), cols) if out else []
    want = oracle(trades, quotes, op, left=left, tol=tol)
    assert_same_rows(got, want, cols, seed=seed)


def test_asof_join_output_in_event_time_order_per_release() -> None:
    """One release (a right watermark) emits the left rows it frees by time."""
    with laminardb.open() as db:
        db.execute(
            "CREATE SOURCE trades (k VARCHAR, ts BIGINT, p BIGINT, "
            "WATERMARK FOR ts AS ts - INTERVAL '100' MILLISECOND);"
            "CREATE SOURCE quotes (k VARCHAR, ts BIGINT, b DOUBLE, WATERMARK FOR ts);"
            "CREATE STREAM j AS SELECT t.ts, t.p, q.b FROM trades t ASOF JOIN quotes q "
            "MATCH_CONDITION(t.ts >= q.ts) ON t.k = q.k"
        )
        sub = db.subscribe("j")
        db.insert("quotes", [{"k": "a", "ts": 0, "b": 1.0}])
        db.insert("trades", [{"k": "a", "ts": t, "p": i} for i, t in enumerate([50, 10, 30, 20])])
        db.run_until_idle()
        assert sub.poll(0) is None  # the quotes' watermark (0) proves no match final
        db.insert("quotes", [{"k": "a", "ts": 60, "b": 2.0}])
        db.run_until_idle()
        batch = sub.poll(0)
        assert batch is not None
        assert sub.poll(0) is None
        assert batch.column("ts").to_pylist() == [10, 20, 30, 50]
        assert batch.column("b").to_pylist() == [1.0] * 4


def test_asof_join_late_rows_counted() -> None:
    """Rows behind their own side's watermark are dropped and counted."""
    with laminardb.open() as db:
        db.execute(
            "CREATE SOURCE trades (k VARCHAR, ts BIGINT, p BIGINT, WATERMARK FOR ts);"
            "CREATE SOURCE quotes (k VARCHAR, ts BIGINT, b DOUBLE, WATERMARK FOR ts);"
            "CREATE STREAM j AS SELECT t.ts, q.b FROM trades t ASOF LEFT JOIN quotes q "
            "MATCH_CONDITION(t.ts >= q.ts) ON t.k = q.k"
        )
        sub = db.subscribe("j")
        db.insert("quotes", [{"k": "a", "ts": 100, "b": 1.0}])
        db.insert("quotes", [{"k": "a", "ts": 50, "b": 9.0}])  # late: behind 100
        db.insert("trades", [{"k": "a", "ts": 80, "p": 0}])
        db.insert("trades", [{"k": "a", "ts": 70, "p": 1}])  # late: behind 80
        db.source("quotes").watermark(FINAL_WATERMARK)
        db.run_until_idle()
        rows = []
        while (b := sub.poll(0)) is not None:
            rows += rows_of(pa.Table.from_batches([b]), ["ts", "b"])
        assert rows == [(80, None)]
        assert db.late_rows("j") == 2


def test_asof_join_state_is_bounded() -> None:
    """Rows held stay under a bound while the input grows tenfold."""
    nkeys = 50
    with laminardb.open() as db:
        db.execute(
            "CREATE SOURCE trades (k VARCHAR, ts BIGINT, p BIGINT, WATERMARK FOR ts);"
            "CREATE SOURCE quotes (k VARCHAR, ts BIGINT, b DOUBLE, WATERMARK FOR ts);"
            "CREATE STREAM j AS SELECT t.k, t.ts, q.b FROM trades t ASOF JOIN quotes q "
            "MATCH_CONDITION(t.ts >= q.ts) ON t.k = q.k"
        )
        sub = db.subscribe("j")
        emitted, samples = feed_join_steadily(
            db, sub, ("trades", "p", 1), ("quotes", "b", 1.0), nkeys=nkeys, seed=7
        )
        held_at = [
            m[("stream", "j", "join_left_rows")] + m[("stream", "j", "join_right_rows")]
            for m in samples
        ]
    # Per key at most the newest quote plus a batch's worth; no growth with input.
    bound = nkeys * 2 + 1000
    assert all(h <= bound for h in held_at), held_at
    assert held_at[1] <= held_at[0] * 2 + 100, held_at
    assert emitted > 20000


def test_asof_join_errors_carry_codes_and_positions() -> None:
    """Conditions it cannot run fail with their code at the line and column."""
    with laminardb.open() as db:
        db.execute(
            "CREATE SOURCE trades (k VARCHAR, ts BIGINT, p BIGINT, n INT, WATERMARK FOR ts);"
            "CREATE SOURCE quotes (k VARCHAR, ts BIGINT, b DOUBLE, at BIGINT, "
            "WATERMARK FOR ts);"
            "CREATE SOURCE nowm (k VARCHAR, ts BIGINT);"
        )
        # (select, code, the text the error points at: its first occurrence)
        cases = [
            # no ordering condition: at ASOF
            ("SELECT t.k FROM trades t ASOF JOIN quotes q ON t.k = q.k", "LDB-1009", "ASOF"),
            # type mismatch in ON: at the comparison
            (
                "SELECT t.k FROM trades t ASOF JOIN quotes q ON t.p = q.k AND t.ts >= q.ts",
                "LDB-2001",
                "t.p =",
            ),
            # a non-time ordering column
            (
                "SELECT t.k FROM trades t ASOF JOIN quotes q "
                "MATCH_CONDITION(t.ts >= q.b) ON t.k = q.k",
                "LDB-2001",
                "q.b",
            ),
            # an ordering column that is not the right side's watermark column
            (
                "SELECT t.k FROM trades t ASOF JOIN quotes q "
                "MATCH_CONDITION(t.ts >= q.at) ON t.k = q.k",
                "LDB-1009",
                "quotes",
            ),
            # a condition on one side only
            (
                "SELECT t.k FROM trades t ASOF JOIN quotes q "
                "MATCH_CONDITION(t.ts >= q.ts) ON t.k = q.k AND t.p > 3",
                "LDB-1009",
                "t.p",
            ),
            # an ambiguous column
            (
                "SELECT t.k FROM trades t ASOF JOIN quotes q "
                "MATCH_CONDITION(t.ts >= q.ts) ON t.k = q.k WHERE ts > 0",
                "LDB-1003",
                "ts > 0",
            ),
            # a right side without a watermark
            (
                "SELECT t.k FROM trades t ASOF JOIN nowm q "
                "MATCH_CONDITION(t.ts >= q.ts) ON t.k = q.k",
                "LDB-1009",
                "nowm",
            ),
            # a join that is neither ASOF nor bounded in time
            ("SELECT t.k FROM trades t JOIN quotes q ON t.k = q.k", "LDB-1010", "JOIN"),
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
            "CREATE STREAM ok AS SELECT t.k FROM trades t ASOF JOIN quotes q "
            "MATCH_CONDITION(t.ts >= q.ts) ON t.k = q.k"
        )


def test_asof_join_star_per_side_and_self_join() -> None:
    """``t.*`` is one side's columns; a source joined with itself by aliases."""
    with laminardb.open() as db:
        db.execute(
            "CREATE SOURCE trades (k VARCHAR, ts BIGINT, p BIGINT, WATERMARK FOR ts);"
            "CREATE SOURCE quotes (k VARCHAR, ts BIGINT, b DOUBLE, WATERMARK FOR ts);"
            "CREATE STREAM j AS SELECT t.*, q.b FROM trades t ASOF JOIN quotes q "
            "MATCH_CONDITION(t.ts >= q.ts) ON t.k = q.k;"
            "CREATE STREAM prev AS SELECT a.ts, a.p, b.p AS before FROM trades a "
            "ASOF JOIN trades b MATCH_CONDITION(a.ts > b.ts) ON a.k = b.k"
        )
        sub, prev = db.subscribe("j"), db.subscribe("prev")
        db.insert("quotes", [{"k": "x", "ts": 1, "b": 2.5}])
        db.insert("trades", [{"k": "x", "ts": t, "p": t * 10} for t in (2, 5, 9)])
        for s in ("quotes", "trades"):
            db.source(s).watermark(FINAL_WATERMARK)
        db.run_until_idle()
        got = pa.Table.from_batches(list(iter(lambda: sub.poll(0), None)))
        assert got.schema.names == ["k", "ts", "p", "b"]
        assert rows_of(got, ["ts", "b"]) == [(2, 2.5), (5, 2.5), (9, 2.5)]
        got = pa.Table.from_batches(list(iter(lambda: prev.poll(0), None)))
        assert rows_of(got, ["ts", "before"]) == [(5, 20), (9, 50)]


def test_asof_join_split_by_each_inputs_key_not_in_two_phases() -> None:
    """Across engines (Spark) a join splits by each input's own key; no two phases."""
    with laminardb.open() as db:
        db.execute(
            "CREATE SOURCE trades (k VARCHAR, ts BIGINT, p BIGINT, WATERMARK FOR ts);"
            "CREATE SOURCE quotes (sym VARCHAR, ts BIGINT, b DOUBLE, WATERMARK FOR ts);"
            "CREATE STREAM j AS SELECT t.k, q.b FROM trades t ASOF JOIN quotes q "
            "MATCH_CONDITION(t.ts >= q.ts) ON t.k = q.sym;"
            "CREATE STREAM self AS SELECT t.k, q.p FROM trades t ASOF JOIN trades q "
            "MATCH_CONDITION(t.ts > q.ts) ON t.k = q.k"
        )
        rows = [(r["role"], r["name"]) for r in db.partitioning("j").to_pylist()]
        assert rows == [
            ("source", "trades"),
            ("event_time", "ts"),
            ("key", "k"),
            ("source", "quotes"),
            ("event_time", "ts"),
            ("key", "sym"),
            ("partitioning", "key"),
        ]
        with pytest.raises(laminardb.LaminarError) as info:
            db.partitioning("self")  # one source on both sides
        assert info.value.code == "LDB-1005"
        assert "joins a source with itself" in str(info.value)
        with pytest.raises(laminardb.LaminarError) as info:
            db.two_phase("j")
        assert info.value.code == "LDB-1005"
        assert "ASOF JOIN" in str(info.value)


def test_asof_join_meets_max_state_bytes() -> None:
    """Quotes no trade has passed pile up; past the bound a batch is refused whole."""
    with laminardb.open() as db:
        db.execute(
            "CREATE SOURCE trades (k VARCHAR, ts BIGINT, p BIGINT, WATERMARK FOR ts);"
            "CREATE SOURCE quotes (k VARCHAR, ts BIGINT, b DOUBLE, WATERMARK FOR ts);"
            "CREATE STREAM j AS SELECT t.k, q.b FROM trades t ASOF JOIN quotes q "
            "MATCH_CONDITION(t.ts >= q.ts) ON t.k = q.k WITH (max_state_bytes = '256KB')"
        )
        src = db.source("quotes")
        accepted = 0
        error = None
        for i in range(1000):
            src.push(
                pa.record_batch(
                    {
                        "k": pa.array([f"k{r % 50}" for r in range(1000)]),
                        "ts": pa.array(range(i * 1000, i * 1000 + 1000), pa.int64()),
                        "b": pa.array([1.0] * 1000),
                    }
                )
            )
            try:
                db.run_until_idle()
            except laminardb.LaminarError as e:
                error = e
                break
            accepted += 1000
        assert error is not None
        assert error.code == "LDB-3008"
        assert "'j'" in str(error)
        assert "max_state_bytes" in str(error)
        m = {(r["kind"], r["name"], r["metric"]): r["value"] for r in db.metrics().to_pylist()}
        assert m[("stream", "j", "join_right_rows")] == accepted  # the refused batch: none
        assert 0 < m[("stream", "j", "accounted_state_bytes")] <= 256 * 1024


def test_asof_join_idle_right_input_releases_nothing() -> None:
    """An idle right input does not make a waiting left row's match final."""
    with laminardb.open() as db:
        db.execute(
            "CREATE SOURCE trades (k VARCHAR, ts BIGINT, p BIGINT, WATERMARK FOR ts);"
            "CREATE SOURCE quotes (k VARCHAR, ts BIGINT, b DOUBLE, WATERMARK FOR ts);"
            "CREATE STREAM j AS SELECT t.ts, q.b FROM trades t ASOF JOIN quotes q "
            "MATCH_CONDITION(t.ts >= q.ts) ON t.k = q.k"
        )
        sub = db.subscribe("j")
        db.insert("quotes", [{"k": "a", "ts": 10, "b": 1.0}])
        db.insert("trades", [{"k": "a", "ts": 50, "p": 1}])
        db.source("quotes").set_idle(True)  # noqa: FBT003 -- the API's one argument
        db.insert("trades", [{"k": "a", "ts": 90, "p": 2}])
        db.run_until_idle()
        assert sub.poll(0) is None  # a quote at 10..50 may still come
        db.insert("quotes", [{"k": "a", "ts": 60, "b": 2.0}])  # active again
        db.run_until_idle()
        assert rows_of(sub.poll(0), ["ts", "b"]) == [(50, 1.0)]


def join_partitioning(db: laminardb.Connection, stream: str) -> str:
    """The EXPLAIN partitioning row of a stream."""
    rows = db.query(f"EXPLAIN {stream}").to_pylist()
    return next(r["details"] for r in rows if r["operator"] == "partitioning")


@settings(max_examples=examples(25), deadline=None)
@given(
    seed=st.integers(*seed_strategy_bounds()),
    op=st.sampled_from(OPS),
    left=st.booleans(),
    threaded=st.booleans(),
)
def test_asof_join_partitioned_by_key_at_two_cores(
    seed: int, op: str, *, left: bool, threaded: bool
) -> None:
    """cores = 2: each input routed by its own key; every interleaving equals DuckDB."""
    announce_seed(seed)
    rng = random.Random(seed)
    keys = [f"s{i}" for i in range(rng.choice([1, 5, 50]))]
    delays = (rng.choice([0, 10]), rng.choice([0, 20]))
    trades = gen_side(rng, rng.randrange(1, 300), keys, delays[0], unique=False)
    quotes = gen_side(rng, rng.randrange(1, 400), keys, delays[1], unique=True)
    kind = "LEFT ASOF JOIN" if left else "ASOF JOIN"
    select = (
        f"SELECT t.k, t.ts, t.p, q.ts AS qts, q.b FROM trades t {kind} quotes q "
        f"MATCH_CONDITION(t.ts {op} q.ts) ON t.k = q.k"
    )
    want = oracle(trades, quotes, op, left=left, tol=None)
    cols = ["k", "ts", "p", "qts", "b"]
    for _ in range(3):  # several interleavings of the same rows
        out, late = run_join(rng, trades, quotes, select, delays, cores=2, threaded=threaded)
        assert late == 0, f"no row is late by construction, got {late} (seed {seed})"
        got = rows_of(pa.Table.from_batches(out), cols) if out else []
        assert_same_rows(got, want, cols, seed=seed)
    with laminardb.open(cores=2) as db:
        db.execute(
            "CREATE SOURCE trades (k VARCHAR, ts BIGINT, p BIGINT, WATERMARK FOR ts);"
            "CREATE SOURCE quotes (k VARCHAR, ts BIGINT, b DOUBLE, WATERMARK FOR ts);"
            f"CREATE STREAM j AS {select}"
        )
        assert join_partitioning(db, "j") == (
            "2 partitions by hash of trades.k / quotes.k (cores = 2)"
        )


def test_asof_join_partitioning_at_two_cores_and_its_refusals() -> None:
    """A window keyed by the join key splits with it; no key or another key: whole."""
    with laminardb.open(cores=2) as db:
        db.execute(
            "CREATE SOURCE trades (k VARCHAR, ts BIGINT, p BIGINT, WATERMARK FOR ts);"
            "CREATE SOURCE quotes (k VARCHAR, ts BIGINT, b DOUBLE, WATERMARK FOR ts);"
            "CREATE STREAM keyed AS SELECT t.k, COUNT(*) AS n, SUM(q.b) AS sb "
            "FROM trades t ASOF JOIN quotes q MATCH_CONDITION(t.ts >= q.ts) ON t.k = q.k "
            "GROUP BY t.k, tumble(t.ts, INTERVAL '10' MILLISECOND);"
            "CREATE STREAM other AS SELECT t.p, COUNT(*) AS n "
            "FROM trades t ASOF JOIN quotes q MATCH_CONDITION(t.ts >= q.ts) ON t.k = q.k "
            "GROUP BY t.p, tumble(t.ts, INTERVAL '10' MILLISECOND);"
            "CREATE STREAM nokey AS SELECT t.k, q.b "
            "FROM trades t ASOF JOIN quotes q ON t.ts >= q.ts;"
            "CREATE STREAM after AS SELECT k, n FROM keyed"
        )
        assert join_partitioning(db, "keyed").startswith("2 partitions by hash of trades.k")
        assert "without its keys" in join_partitioning(db, "other")
        assert "without equality keys" in join_partitioning(db, "nokey")
        # The windows close on the least watermark every partition promises:
        # a stream reading the join sees each window once, complete.
        sub = db.subscribe("after")
        rng = random.Random(7)
        quotes = [{"k": f"s{i % 9}", "ts": i, "b": 1.0} for i in range(0, 200, 2)]
        trades = [{"k": f"s{i % 9}", "ts": i, "p": i} for i in range(1, 200, 3)]
        for i in range(10):
            db.insert("quotes", quotes[i * 10 : i * 10 + 10])
            db.insert("trades", trades[i * 7 : i * 7 + 7])
            if rng.random() < 0.5:
                db.run_until_idle()
        for name in ("trades", "quotes"):
            db.source(name).watermark(FINAL_WATERMARK)
        db.run_until_idle()
        got = []
        while (b := sub.poll(0)) is not None:
            got.extend(b.to_pylist())
        assert db.late_rows("keyed") == 0
        part = db.metrics().to_pylist()
        assert {"kind": "stream", "name": "keyed", "metric": "partitions", "value": 2} in part
    tt = pa.Table.from_pylist(trades, TRADES)
    qq = pa.Table.from_pylist(quotes, QUOTES)
    _, want = duck(
        "SELECT t.k, COUNT(*) AS n FROM t ASOF JOIN q ON t.k = q.k AND t.ts >= q.ts "
        "GROUP BY t.k, t.ts - t.ts % 10",
        t=tt,
        q=qq,
    )
    assert sorted((r["k"], r["n"]) for r in got) == sorted(want)

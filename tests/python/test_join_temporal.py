"""Temporal joins (``JOIN t FOR SYSTEM_TIME AS OF s.ts``) against DuckDB.

A table ``rates`` with an event time and a watermark takes versions (upserts
and deletes, each at its own time, out of order within the table's delay);
a source ``orders`` is joined with the version of its key valid at each
order's time. DuckDB's answer over the same rows: an ASOF JOIN (``o.ts >=
v.ts``) of the orders with every version of the table, a delete being a
version of "no row" (a tombstone). The two sides are written in random
interleavings, run inline at random points, on one or two reactors, INNER and
LEFT, and some runs close (or crash) in the middle and reopen; each order is
emitted once, and a row emitted again by the replay after a crash is the
same row. A bounded-state test checks that versions older than the newest one
at or below the stream's watermark are dropped; error tests check the codes
with line and column.
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
    rows_to_batches,
    seed_strategy_bounds,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import laminardb

ORDERS = pa.schema([("id", pa.int64()), ("cur", pa.string()), ("ts", pa.int64())])
VERSIONS = pa.schema(
    [("cur", pa.string()), ("ts", pa.int64()), ("rate", pa.int64()), ("gone", pa.bool_())]
)
COLUMNS = ["id", "cur", "ts", "rate", "rts"]


def ddl(delays: tuple[int, int], *, left: bool) -> str:
    """The orders source, the versioned rates table and the join stream ``j``."""
    kind = "LEFT JOIN" if left else "JOIN"
    return (
        f"CREATE SOURCE orders (id BIGINT, cur VARCHAR, ts BIGINT, "
        f"WATERMARK FOR ts AS ts - INTERVAL '{delays[0]}' MILLISECOND);"
        f"CREATE TABLE rates (cur VARCHAR, rate BIGINT, ts BIGINT, "
        f"WATERMARK FOR ts AS ts - INTERVAL '{delays[1]}' MILLISECOND, PRIMARY KEY (cur));"
        f"CREATE STREAM j AS SELECT o.id, o.cur, o.ts, r.rate, r.ts AS rts "
        f"FROM orders o {kind} rates FOR SYSTEM_TIME AS OF o.ts AS r ON o.cur = r.cur;"
    )


def gen_orders(rng: random.Random, n: int, keys: list[str], delay: int) -> list[tuple]:
    """Orders (id, cur, ts), out of order within ``delay``, some keys NULL."""
    rows = []
    clock = rng.randrange(0, 20)
    for i in range(n):
        clock += rng.randrange(0, 6)
        ts = max(0, clock - rng.randrange(0, delay + 1))
        rows.append((i, None if rng.random() < 0.05 else rng.choice(keys), ts))
    return rows


def gen_versions(rng: random.Random, n: int, keys: list[str], delay: int) -> list[tuple]:
    """Versions (cur, ts, rate, gone): upserts, and deletes (gone) of a key;
    out of order within ``delay``; one version per key and time (a tie would
    leave the match to the arrival order, which DuckDB does not know)."""
    rows = []
    seen: set[tuple] = set()
    clock = rng.randrange(0, 20)
    for _ in range(n):
        clock += rng.randrange(0, 6)
        ts = max(0, clock - rng.randrange(0, delay + 1))
        k = rng.choice(keys)
        if (k, ts) in seen:
            continue
        seen.add((k, ts))
        gone = rng.random() < 0.15
        rows.append((k, ts, None if gone else rng.randrange(1, 1000), gone))
    return rows


def oracle(orders: list[tuple], versions: list[tuple], *, left: bool) -> list[tuple]:
    """DuckDB: each order with its key's latest version at or before its time."""
    oo = pa.Table.from_pylist([dict(zip(ORDERS.names, r)) for r in orders], ORDERS)
    vv = pa.Table.from_pylist([dict(zip(VERSIONS.names, r)) for r in versions], VERSIONS)
    _, rows = duck(
        "SELECT o.id, o.cur, o.ts, v.rate, v.ts AS rts, v.gone "
        "FROM o ASOF LEFT JOIN v ON o.cur = v.cur AND o.ts >= v.ts",
        o=oo,
        v=vv,
    )
    out = []
    for oid, cur, ts, rate, rts, gone in rows:
        matched = rts is not None and not gone
        if matched:
            out.append((oid, cur, ts, rate, rts))
        elif left:
            out.append((oid, cur, ts, None, None))
    return out


def write(db: laminardb.Connection, side: int, batch: pa.RecordBatch) -> None:
    """Push orders (side 0) or write table versions (side 1) one batch."""
    if side == 0:
        db.insert("orders", batch)
        return
    for v in batch.to_pylist():  # upserts and deletes, in order
        if v["gone"]:
            db.delete("rates", {"cur": [v["cur"]], "ts": [v["ts"]]})
        else:
            db.upsert("rates", [{"cur": v["cur"], "rate": v["rate"], "ts": v["ts"]}])


def collect(sub: laminardb.Subscription, into: dict[int, tuple]) -> None:
    """Rows of ``sub`` by order id; a row emitted twice (a replay) is the same."""
    while (got := sub.poll(0)) is not None:
        for r in got.to_pylist():
            row = tuple(r[c] for c in COLUMNS)
            assert into.setdefault(row[0], row) == row, (into[row[0]], row)


def finish(db: laminardb.Connection) -> None:
    """The final watermark on both sides, then run."""
    for name in ("orders", "rates"):
        with db.source(name) as src:
            src.watermark(FINAL_WATERMARK)
    db.run_until_idle()


@settings(max_examples=examples(40), deadline=None)
@given(
    seed=st.integers(*seed_strategy_bounds()),
    left=st.booleans(),
    cores=st.sampled_from([1, 2]),
    restart=st.sampled_from(["none", "close", "crash", "threaded"]),
)
def test_temporal_join_matches_duckdb(
    tmp_path_factory: pytest.TempPathFactory, seed: int, *, left: bool, cores: int, restart: str
) -> None:
    """INNER and LEFT, random interleavings, 1 or 2 cores, a restart (or the
    reactor threads taking the writes as they come): DuckDB's answer."""
    announce_seed(seed)
    rng = random.Random(seed)
    keys = [f"c{i}" for i in range(rng.choice([1, 3, 20]))]
    delays = (rng.choice([0, 3, 20]), rng.choice([0, 5, 30]))
    orders = gen_orders(rng, rng.randrange(0, 200), keys, delays[0])
    versions = gen_versions(rng, rng.randrange(0, 150), keys, delays[1])
    queues = [
        [(0, b) for b in rows_to_batches(rng, orders, ORDERS)],
        [(1, b) for b in rows_to_batches(rng, versions, VERSIONS)],
    ]
    steps = []  # each side in its own order, interleaved at random
    while any(queues):
        steps.append(rng.choice([q for q in queues if q]).pop(0))
    data: Path = tmp_path_factory.mktemp("temporal") / "data"
    options = {"checkpoint_interval": "1 hour", "wal_mode": "sync", "cores": cores}
    out: dict[int, tuple] = {}
    threaded = restart == "threaded"
    half = len(steps) // 2 if restart in ("close", "crash") else len(steps)
    db = laminardb.open(data, **options)
    db.execute(ddl(delays, left=left))
    sub = db.subscribe("j")
    if threaded:
        db.start()
    for i, (side, b) in enumerate(steps[:half]):
        write(db, side, b)
        if threaded:
            collect(sub, out)
        elif rng.random() < 0.4:
            db.run_until_idle()
            collect(sub, out)
        if i == half // 2:
            db.checkpoint()
    if threaded:
        for name in ("orders", "rates"):
            with db.source(name) as src:
                src.watermark(FINAL_WATERMARK)
        db.stop()
    if restart in ("close", "crash"):
        db.run_until_idle()
        collect(sub, out)
        sub.close()
        close_as(db, data, crash=restart == "crash")
        db = laminardb.open(data, **{**options, "cores": rng.choice([1, 2])})
        sub = db.subscribe("j")
        db.run_until_idle()
        collect(sub, out)
        for side, b in steps[half:]:
            write(db, side, b)
            if rng.random() < 0.4:
                db.run_until_idle()
                collect(sub, out)
    finish(db)
    collect(sub, out)
    db.close()
    assert_same_rows(out.values(), oracle(orders, versions, left=left), COLUMNS, seed=seed)


def test_state_is_bounded() -> None:
    """Versions older than the newest at or below the orders' watermark go."""
    with laminardb.open() as db:
        db.execute(ddl((0, 0), left=True))
        sub = db.subscribe("j")
        held = []
        for step in range(1, 201):
            ts = step * 10
            db.upsert("rates", [{"cur": f"c{i}", "rate": step, "ts": ts} for i in range(5)])
            db.insert("orders", [{"id": step, "cur": "c1", "ts": ts}])
            db.run_until_idle()
            while sub.poll(0) is not None:
                pass
            if step in (20, 200):
                m = {
                    (r["kind"], r["name"], r["metric"]): r["value"]
                    for r in db.metrics().to_pylist()
                }
                held.append(m[("stream", "j", "join_right_rows")])
        # Five keys, one or two versions each: the same after 10x the input.
        assert 0 < held[1] <= 10, held
        assert held[1] <= held[0] + 5, held


@pytest.mark.parametrize(
    ("select", "code", "at"),
    [
        # a table without event time
        (
            "SELECT * FROM orders o JOIN plain FOR SYSTEM_TIME AS OF o.ts ON o.cur = plain.cur",
            "LDB-1009",
            "o.ts ON",
        ),
        # ON not covering the key
        (
            "SELECT * FROM orders o JOIN pairs FOR SYSTEM_TIME AS OF o.ts ON o.cur = pairs.a",
            "LDB-1021",
            "o.cur = pairs.a",
        ),
        # AS OF not a time column of the stream
        (
            "SELECT * FROM orders o JOIN rates FOR SYSTEM_TIME AS OF o.cur ON o.cur = rates.cur",
            "LDB-1009",
            "o.cur ON",
        ),
        # a source is no table
        (
            "SELECT * FROM orders o JOIN orders FOR SYSTEM_TIME AS OF o.ts ON o.id = orders.id",
            "LDB-1005",
            "orders FOR",
        ),
    ],
)
def test_refusals(select: str, code: str, at: str) -> None:
    """Each refusal: its code, at the line and column of what is wrong (``at``)."""
    sql = f"CREATE STREAM bad AS {select}"
    with laminardb.open() as db:
        db.execute(ddl((0, 0), left=False))
        db.execute("CREATE TABLE plain (cur VARCHAR, rate BIGINT, PRIMARY KEY (cur))")
        db.execute(
            "CREATE TABLE pairs (a VARCHAR, b VARCHAR, ts BIGINT, WATERMARK FOR ts AS ts, "
            "PRIMARY KEY (a, b))"
        )
        with pytest.raises(laminardb.LaminarError) as info:
            db.execute(sql)
        assert info.value.code == code, info.value
        assert (info.value.line, info.value.column) == (1, sql.index(at) + 1), info.value


def test_explain_and_show_name_the_table() -> None:
    """EXPLAIN and SHOW STREAMS say temporal join and name the table."""
    with laminardb.open() as db:
        db.execute(ddl((0, 0), left=True))
        ops = [r["operator"] for r in db.query("EXPLAIN j").to_pylist()]
        assert "left temporal join" in ops, ops
        (row,) = [r for r in db.query("SHOW STREAMS").to_pylist() if r["name"] == "j"]
        assert row["input"] == "orders, rates", row
        assert row["plan"].startswith("left_temporal_join(orders, rates: 1 keys, AS OF"), row

"""Tables (CREATE TABLE ... PRIMARY KEY): upserts and deletes against a DuckDB model.

Random sequences of upserts and deletes, written through SQL (INSERT /
DELETE) and through ``Connection.upsert`` / ``Connection.delete``, are
replayed into a DuckDB table with a primary key (``INSERT OR REPLACE`` /
``DELETE``). After each step the table's content (``SELECT *``), a
materialized view aggregating it, and the net changelog a stream reading it
delivered must equal DuckDB's batch answer -- with one or two cores, and
across a restart of a durable database in the middle. Lookup joins: stream
rows pushed between the writes join the table as it is then, as DuckDB's
batch join of those rows with the model table at that step.
"""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest
from _oracle_util import announce_seed, close_as, examples, seed_strategy_bounds
from hypothesis import given, settings
from hypothesis import strategies as st

import laminardb

TABLE_SQL = """
CREATE TABLE t (k1 INT, k2 VARCHAR, g VARCHAR, v DOUBLE, PRIMARY KEY (k1, k2));
CREATE MATERIALIZED VIEW per_g AS
  SELECT g, COUNT(*) AS n, SUM(v) AS s FROM t GROUP BY g EMIT CHANGES;
CREATE STREAM big AS SELECT k1, k2, v FROM t WHERE v > 0;
"""

DUCK_SQL = "CREATE TABLE t (k1 INTEGER, k2 VARCHAR, g VARCHAR, v DOUBLE, PRIMARY KEY (k1, k2))"


def sql_literal(value: object) -> str:
    """Render a Python value as a SQL literal (both engines read it alike)."""
    if value is None:
        return "NULL"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return repr(value)


def random_ops(rng: random.Random, n: int) -> list[tuple[str, list[dict]]]:
    """``n`` operations: ("upsert" | "delete", rows), each via SQL or Python at random."""
    ops = []
    for _ in range(n):
        kind = rng.choice(["upsert", "upsert", "delete"])
        rows = []
        for _ in range(rng.randint(1, 6)):
            key = {"k1": rng.randint(0, 5), "k2": rng.choice(["a", "b", "c'd"])}
            if kind == "upsert":
                key["g"] = rng.choice(["x", "y", None])
                key["v"] = rng.choice([None, round(rng.uniform(-5, 5), 2), 1.0])
            rows.append(key)
        via = rng.choice(["sql", "python"])
        ops.append((f"{kind}:{via}", rows))
    return ops


def apply_laminar(db: laminardb.Connection, op: str, rows: list[dict]) -> None:
    """Write one operation to the LaminarDB table."""
    kind, via = op.split(":")
    if via == "python":
        (db.upsert if kind == "upsert" else db.delete)("t", rows)
        return
    if kind == "upsert":
        values = ", ".join(
            "(" + ", ".join(sql_literal(r[c]) for c in ("k1", "k2", "g", "v")) + ")"
            for r in rows
        )
        db.execute(f"INSERT INTO t VALUES {values}")
    else:
        for r in rows:
            db.execute(f"DELETE FROM t WHERE k2 = {sql_literal(r['k2'])} AND k1 = {r['k1']}")


def apply_duckdb(con: duckdb.DuckDBPyConnection, op: str, rows: list[dict]) -> None:
    """Replay one operation in the model, row by row in order."""
    for r in rows:
        if op.startswith("upsert"):
            con.execute("INSERT OR REPLACE INTO t VALUES (?, ?, ?, ?)",
                        [r["k1"], r["k2"], r["g"], r["v"]])
        else:
            con.execute("DELETE FROM t WHERE k1 = ? AND k2 = ?", [r["k1"], r["k2"]])


def sorted_rows(rows: list[tuple]) -> list[tuple]:
    return sorted(rows, key=repr)


def check(db: laminardb.Connection, con: duckdb.DuckDBPyConnection) -> None:
    """The table and the view over it equal the model's batch answers."""
    got = [tuple(r.values()) for r in db.query("SELECT k1, k2, g, v FROM t").to_pylist()]
    want = con.execute("SELECT k1, k2, g, v FROM t").fetchall()
    assert sorted_rows(got) == sorted_rows(want)
    got = [tuple(r.values()) for r in db.query("SELECT g, n, s FROM per_g").to_pylist()]
    want = con.execute("SELECT g, COUNT(*), SUM(v) FROM t GROUP BY g").fetchall()
    got = [(g, n, None if s is None else round(s, 6)) for g, n, s in got]
    want = [(g, n, None if s is None else round(s, 6)) for g, n, s in want]
    assert sorted_rows(got) == sorted_rows(want)


def net(batches: list[pa.RecordBatch]) -> Counter:
    """The rows a changelog leaves: each row's summed weight, zeros dropped."""
    total: Counter = Counter()
    for b in batches:
        for r in b.to_pylist():
            w = r.pop("_weight")
            total[tuple(r.values())] += w
    return Counter({k: w for k, w in total.items() if w != 0})


class Run:
    """One randomized run: the operations, the model, a durable database."""

    def __init__(self, tmp_path_factory, cores: int, seed: int, nops: int, sql: str) -> None:
        self.rng = random.Random(seed)
        self.ops = random_ops(self.rng, self.rng.randint(1, nops))
        self.cut = self.rng.randint(0, len(self.ops))
        self.con = duckdb.connect()
        self.con.execute(DUCK_SQL)
        self.path: Path = tmp_path_factory.mktemp("tables") / "db"
        self.settings = {"checkpoint_interval": "1 hour", "wal_mode": "sync", "cores": cores}
        self.db = laminardb.open(self.path, **self.settings)
        self.db.execute(sql)

    def restart(self, subs: list[laminardb.Subscription]) -> None:
        """Close or crash (after a checkpoint, or with the WAL alone); open again."""
        if self.rng.random() < 0.5:
            self.db.checkpoint()
        for sub in subs:
            sub.close()
        close_as(self.db, self.path, crash=self.rng.random() < 0.5)
        self.db = laminardb.open(self.path, **self.settings)
        self.db.run_until_idle()


@pytest.mark.parametrize("cores", [1, 2])
@settings(max_examples=examples(12), deadline=None)
@given(seed=st.integers(*seed_strategy_bounds()), restart=st.booleans())
def test_tables_match_duckdb_model(tmp_path_factory, cores, seed, restart):
    announce_seed(seed)
    print(f"cores={cores} restart={restart}")
    run = Run(tmp_path_factory, cores, seed, 25, TABLE_SQL)
    sub = run.db.subscribe("big")
    changes: list[pa.RecordBatch] = []
    for i, (op, rows) in enumerate(run.ops):
        if restart and i == run.cut:
            run.restart([sub])
            check(run.db, run.con)
        apply_laminar(run.db, op, rows)
        apply_duckdb(run.con, op, rows)
        run.db.run_until_idle()
        check(run.db, run.con)
        if not restart:
            while (batch := sub.poll(0)) is not None:
                changes.append(batch)
    if not restart:
        # The stream over the table: its changelog nets to the batch answer.
        want = Counter(run.con.execute("SELECT k1, k2, v FROM t WHERE v > 0").fetchall())
        assert net(changes) == want
    run.db.close()


JOIN_SQL = """
CREATE SOURCE s (id BIGINT, a INT, b VARCHAR, x DOUBLE);
CREATE STREAM j AS SELECT s.id, s.x, t.g, t.v FROM s JOIN t ON s.a = t.k1 AND t.k2 = s.b;
CREATE STREAM lj AS SELECT id, g, v FROM s LEFT JOIN t tt ON tt.k2 = s.b AND s.a = tt.k1;
"""


def join_model(con: duckdb.DuckDBPyConnection, rows: list[dict]) -> tuple[Counter, Counter]:
    """DuckDB's answer for pushed stream rows against the model table now."""
    con.execute("CREATE OR REPLACE TEMP TABLE s (id BIGINT, a INTEGER, b VARCHAR, x DOUBLE)")
    con.executemany("INSERT INTO s VALUES (?, ?, ?, ?)",
                    [[r["id"], r["a"], r["b"], r["x"]] for r in rows])
    inner = con.execute(
        "SELECT s.id, s.x, t.g, t.v FROM s JOIN t ON s.a = t.k1 AND t.k2 = s.b"
    ).fetchall()
    left = con.execute(
        "SELECT s.id, t.g, t.v FROM s LEFT JOIN t ON s.a = t.k1 AND t.k2 = s.b"
    ).fetchall()
    return Counter(inner), Counter(left)


def drained(sub: laminardb.Subscription) -> Counter:
    rows: Counter = Counter()
    while (batch := sub.poll(0)) is not None:
        rows.update(tuple(r.values()) for r in batch.to_pylist())
    return rows


@pytest.mark.parametrize("cores", [1, 2])
@settings(max_examples=examples(12), deadline=None)
@given(seed=st.integers(*seed_strategy_bounds()), restart=st.booleans())
def test_lookup_join_matches_duckdb_model(tmp_path_factory, cores, seed, restart):
    """Stream rows interleaved with table writes: each batch joins the table as it is."""
    announce_seed(seed)
    print(f"cores={cores} restart={restart}")
    run = Run(tmp_path_factory, cores, seed, 20, TABLE_SQL + JOIN_SQL)
    rng = run.rng
    subs = [run.db.subscribe("j"), run.db.subscribe("lj")]
    want_inner: Counter = Counter()
    want_left: Counter = Counter()
    got_inner: Counter = Counter()
    got_left: Counter = Counter()
    next_id = 0
    for i, (op, rows) in enumerate(run.ops):
        if restart and i == run.cut:
            run.restart(subs)
            subs = [run.db.subscribe("j"), run.db.subscribe("lj")]
        apply_laminar(run.db, op, rows)
        apply_duckdb(run.con, op, rows)
        run.db.run_until_idle()
        # Stream rows, some with keys the table has, some without, NULL keys.
        stream = []
        for _ in range(rng.randint(0, 5)):
            next_id += 1
            stream.append({"id": next_id, "a": rng.choice([0, 1, 2, 5, None]),
                           "b": rng.choice(["a", "b", "c'd", None]),
                           "x": rng.choice([None, 1.5, -2.0])})
        if stream:
            run.db.insert("s", stream)
            run.db.run_until_idle()
            inner, left = join_model(run.con, stream)
            want_inner += inner
            want_left += left
        got_inner += drained(subs[0])
        got_left += drained(subs[1])
    assert got_inner == want_inner
    assert got_left == want_left
    run.db.close()


ONE_KEY_SQL = """
CREATE TABLE u (k BIGINT PRIMARY KEY, g VARCHAR, v DOUBLE);
CREATE SOURCE s (id BIGINT, a BIGINT);
CREATE STREAM j AS SELECT s.id, u.k, u.g, u.v FROM s LEFT JOIN u ON u.k = s.a;
"""


@pytest.mark.parametrize("cores", [1, 2])
@settings(max_examples=examples(8), deadline=None)
@given(seed=st.integers(*seed_strategy_bounds()), restart=st.booleans(),
       sparse=st.booleans())
def test_lookup_join_one_integer_key(tmp_path_factory, cores, seed, restart, sparse):
    """A table keyed by one BIGINT (the probe's columnar image, issue 21): batches of
    upserts and deletes, many of them, interleaved with stream rows, against a dict
    model of the table -- keys dense (0 ..) or spread out, across a restart."""
    announce_seed(seed)
    print(f"cores={cores} restart={restart} sparse={sparse}")
    run = Run(tmp_path_factory, cores, seed, 1, ONE_KEY_SQL)
    rng = run.rng
    space = [k * 1_000_000_007 if sparse else k for k in range(3000)]
    model: dict[int, tuple[str | None, float | None]] = {}
    sub = run.db.subscribe("j")
    got: Counter = Counter()
    want: Counter = Counter()
    next_id = 0
    rounds = 12
    cut = rng.randint(1, rounds - 1)
    for i in range(rounds):
        if restart and i == cut:
            got += drained(sub)
            run.restart([sub])
            sub = run.db.subscribe("j")
        keys = [rng.choice(space) for _ in range(rng.randint(1, 3000 if i == 0 else 600))]
        if i > 0 and rng.random() < 0.3:
            run.db.delete("u", {"k": keys})
            for k in keys:
                model.pop(k, None)
        else:
            rows = [{"k": k, "g": rng.choice(["x", "yy", None]),
                     "v": rng.choice([None, float(i), round(rng.uniform(-5, 5), 2)])}
                    for k in keys]
            run.db.upsert("u", rows)
            for r in rows:
                model[r["k"]] = (r["g"], r["v"])
        run.db.run_until_idle()
        stream = []
        for _ in range(rng.randint(1, 60)):
            next_id += 1
            a = rng.choice([rng.choice(space), rng.choice(space), -5 - next_id, None])
            stream.append({"id": next_id, "a": a})
            k, (g, v) = (a, model[a]) if a in model else (None, (None, None))
            want[(next_id, k, g, v)] += 1
        run.db.insert("s", stream)
        run.db.run_until_idle()
        got += drained(sub)
    assert got == want
    run.db.close()


def test_sql_errors_carry_codes_and_positions(db):
    db.execute("CREATE TABLE t (k BIGINT, j INT, v DOUBLE NOT NULL, PRIMARY KEY (k, j))")
    cases = [
        ("DELETE FROM t", "LDB-1020", 1, 1),
        ("DELETE FROM t WHERE k = 1", "LDB-1020", 1, 21),
        ("DELETE FROM t\nWHERE k = 1 AND v = 2", "LDB-1020", 2, 17),
        ("INSERT INTO t VALUES (1, 'x', 2.0)", "LDB-2001", 1, 26),
        ("INSERT INTO t VALUES (NULL, 1, 2.0)", "LDB-3005", 1, 23),
        ("CREATE TABLE u (a BIGINT, PRIMARY KEY (b))", "LDB-1003", 1, 40),
    ]
    for sql, code, line, column in cases:
        with pytest.raises(laminardb.LaminarError) as info:
            db.execute(sql)
        assert (info.value.code, info.value.line, info.value.column) == (code, line, column), sql
    with pytest.raises(laminardb.IngestError) as info:
        db.delete("t", {"k": [1]})  # not the whole key
    assert info.value.code == "LDB-3003"

"""Table functions: ``FROM s, f(s.x)`` with built-ins and Python functions.

DuckDB is the oracle: the same query over the same rows with DuckDB's own
``generate_series`` / ``unnest(string_split(...))``, and a Python table
function emulated in DuckDB by a join with ``generate_series``. Hypothesis
generates the rows (NULLs, empty strings, ranges that make no rows); streams
run on cores 1 and 2, a windowed GROUP BY reads the function's rows, a
durable database restarts in the middle with the function re-registered,
and a SELECT over a view calls one. Fault cases: an exception (LDB-3010 with
the traceback), a ``_row`` out of range or going down and a column of the
wrong type (LDB-3011 naming the row or column), each leaving the stream
going on with nothing of the failed batch emitted.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from _oracle_util import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import laminardb
from laminardb.table_functions import TableFunction

SOURCE = (
    "CREATE SOURCE t (id BIGINT, k VARCHAR, a BIGINT, b BIGINT, s VARCHAR, ts BIGINT, "
    "WATERMARK FOR ts AS ts)"
)
SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("k", pa.string()),
        ("a", pa.int64()),
        ("b", pa.int64()),
        ("s", pa.string()),
        ("ts", pa.int64()),
    ]
)

rows_strategy = st.lists(
    st.tuples(
        st.sampled_from(["x", "y", "z"]),
        st.one_of(st.none(), st.integers(-3, 6)),
        st.one_of(st.none(), st.integers(-3, 6)),
        st.one_of(st.none(), st.sampled_from(["", ",", "a,b", "a,,b", "ÄÖ,ü", "abc"])),
    ),
    max_size=30,
)


def _table(rows: list[tuple[object, ...]], first_id: int = 0) -> pa.Table:
    n = len(rows)
    cols = list(zip(*rows, strict=True)) if rows else [[], [], [], []]
    return pa.Table.from_arrays(
        [
            pa.array(range(first_id, first_id + n), type=pa.int64()),
            pa.array(cols[0], type=pa.string()),
            pa.array(cols[1], type=pa.int64()),
            pa.array(cols[2], type=pa.int64()),
            pa.array(cols[3], type=pa.string()),
            pa.array([(first_id + i) * 7 for i in range(n)], type=pa.int64()),
        ],
        schema=SCHEMA,
    )


def _duckdb(table: pa.Table, sql: str) -> Counter[tuple[object, ...]]:
    con = duckdb.connect()
    try:
        con.register("t", table)
        return Counter(con.sql(sql).fetchall())
    finally:
        con.close()


def _rows(sub: laminardb.Subscription, names: list[str]) -> Counter[tuple[object, ...]]:
    got: Counter[tuple[object, ...]] = Counter()
    while (batch := sub.poll(0)) is not None:
        for r in batch.to_pylist():
            got[tuple(r[n] for n in names)] += 1
    return got


def pieces(s: pa.Array, n: pa.Array) -> pa.RecordBatch:
    """A Python table function (kind arrow): for each row, n rows (i, s || i)."""
    rows: list[int] = []
    i_col: list[int] = []
    p_col: list[str] = []
    for r, (x, k) in enumerate(zip(s.to_pylist(), n.to_pylist(), strict=True)):
        for i in range(k):
            rows.append(r)
            i_col.append(i)
            p_col.append(f"{x}{i}")
    return pa.RecordBatch.from_pydict(
        {"_row": pa.array(rows, pa.int32()), "i": i_col, "p": p_col},
        schema=pa.schema([("_row", pa.int32()), ("i", pa.int64()), ("p", pa.string())]),
    )


PIECES_PARAMS = ["VARCHAR", "BIGINT"]
PIECES_COLUMNS = {"i": "BIGINT", "p": "VARCHAR"}

# (the stream's select, DuckDB's, the columns compared)
QUERIES = [
    (
        "SELECT id, g.x FROM t, generate_series(t.a, t.b) AS g(x)",
        "SELECT id, g.x FROM t, generate_series(t.a, t.b) AS g(x)",
        ["id", "x"],
    ),
    (
        "SELECT id, x FROM t CROSS JOIN LATERAL generate_series(a, b, 2) AS g(x)",
        "SELECT id, x FROM t, generate_series(t.a, t.b, 2) AS g(x)",
        ["id", "x"],
    ),
    (
        "SELECT id, x FROM t, range(a, b) AS r(x) WHERE x % 2 = 0",
        "SELECT id, x FROM t, range(t.a, t.b) AS r(x) WHERE x % 2 = 0",
        ["id", "x"],
    ),
    (
        "SELECT id, unnest FROM t, unnest(string_split(t.s, ','))",
        "SELECT id, unnest FROM t, unnest(string_split(t.s, ','))",
        ["id", "unnest"],
    ),
    (
        "SELECT id, w.piece AS piece FROM t, LATERAL string_split_to_rows(s, '') AS w(piece)",
        "SELECT id, piece FROM t, unnest(string_split(t.s, '')) AS w(piece)",
        ["id", "piece"],
    ),
    (
        "SELECT id, e.i, e.p FROM t, pieces(t.k, t.b) AS e",
        "SELECT id, g.i, t.k || g.i FROM t, generate_series(0, t.b - 1) AS g(i) "
        "WHERE t.k IS NOT NULL",
        ["id", "i", "p"],
    ),
]


@pytest.fixture(params=[1, 2], ids=["cores1", "cores2"])
def cores(request: pytest.FixtureRequest) -> int:
    return int(request.param)


@settings(max_examples=examples(20), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches=st.lists(rows_strategy, min_size=1, max_size=3))
def test_streams_equal_duckdb(batches: list[list[tuple[object, ...]]]) -> None:
    """Each query over generated batches equals DuckDB's over all the rows."""
    tables: list[pa.Table] = []
    for rows in batches:
        tables.append(_table(rows, sum(x.num_rows for x in tables)))
    whole = pa.concat_tables(tables)
    for cores in (1, 2):
        with laminardb.open(cores=cores) as db:
            db.create_table_function("pieces", pieces, PIECES_PARAMS, PIECES_COLUMNS)
            db.execute(SOURCE)
            subs = []
            for n, (ours, _, _) in enumerate(QUERIES):
                db.execute(f"CREATE STREAM q{n} AS {ours}")
                subs.append(db.subscribe(f"q{n}"))
            for table in tables:
                db.insert("t", table)
                db.run_until_idle()
            for sub, (ours, theirs, names) in zip(subs, QUERIES, strict=True):
                assert _rows(sub, names) == _duckdb(whole, theirs), (cores, ours)


def _window_stream(fn: str) -> str:
    return (
        "CREATE STREAM w AS SELECT k, window_start, COUNT(*) AS n, SUM(e.i) AS si, "
        f"MAX(e.p) AS mp FROM t, {fn}(t.k, t.b) AS e "
        "GROUP BY k, tumble(ts, INTERVAL '50' MILLISECOND) EMIT ON WINDOW CLOSE"
    )


WINDOW_DUCKDB = (
    "SELECT k, ts - ts % 50, COUNT(*), SUM(g.i), MAX(t.k || g.i) "
    "FROM t, generate_series(0, t.b - 1) AS g(i) WHERE t.k IS NOT NULL GROUP BY ALL"
)


def _random_table(rng: np.random.Generator, n: int) -> pa.Table:
    rows = [
        (
            str(rng.choice(["x", "y", "z"])),
            int(rng.integers(-2, 5)),
            int(rng.integers(-1, 5)),
            None,
        )
        for _ in range(n)
    ]
    return _table(rows)


def test_window_over_function_rows(cores: int, rng: np.random.Generator) -> None:
    """A windowed GROUP BY reads the function's rows at their parent's time."""
    table = _random_table(rng, 1500)
    with laminardb.open(cores=cores) as db:
        db.create_table_function("pieces", pieces, PIECES_PARAMS, PIECES_COLUMNS)
        db.execute(SOURCE)
        db.execute(_window_stream("pieces"))
        sub = db.subscribe("w")
        for start in range(0, table.num_rows, 97):
            db.insert("t", table.slice(start, 97))
            db.run_until_idle()
        db.source("t").watermark(2**62)
        db.run_until_idle()
        got = _rows(sub, ["k", "window_start", "n", "si", "mp"])
    assert got == _duckdb(table, WINDOW_DUCKDB)


def test_row_kind_and_view_select(db: laminardb.Connection) -> None:
    """kind="row" yields tuples; a SELECT over a view calls a table function."""

    def split_pairs(s: str | None, n: int) -> Iterator[tuple[int, str]]:
        for i in range(n):
            yield (i, f"{s}{i}")

    db.create_table_function("rpieces", split_pairs, PIECES_PARAMS, PIECES_COLUMNS, kind="row")
    db.execute(SOURCE)
    db.execute("CREATE MATERIALIZED VIEW v AS SELECT id, k, b, ts FROM t")
    table = _table([("x", 0, 3, None), ("y", 0, 0, None), ("z", 0, 2, "q"), ("x", 1, 1, "")])
    db.insert("t", table)
    db.run_until_idle()
    got = db.query("SELECT id, e.i, e.p FROM v, rpieces(v.k, v.b) AS e ORDER BY id, i")
    want = _duckdb(
        table,
        "SELECT id, g.i, t.k || g.i FROM t, generate_series(0, t.b - 1) AS g(i)",
    )
    assert Counter(tuple(r.values()) for r in got.to_pylist()) == want
    assert got.num_rows == 6
    shown = {r["name"]: r for r in db.query("SHOW FUNCTIONS").to_pylist()}
    assert shown["rpieces"]["flags"] == "table"
    assert shown["rpieces"]["returns"] == "TABLE(i BIGINT, p VARCHAR)"


def test_restart_in_the_middle(data_dir, rng: np.random.Generator) -> None:  # noqa: ANN001
    """A checkpoint and a restart mid-window: the function re-registered by
    open(functions=...), the windows equal DuckDB's over all rows."""

    def functions() -> list[TableFunction]:
        return [TableFunction("pieces", pieces, PIECES_PARAMS, PIECES_COLUMNS)]

    options = {"checkpoint_interval": "10 min", "wal_mode": "sync"}
    table = _random_table(rng, 1200)
    half = 613
    with laminardb.open(data_dir, functions=functions(), **options) as db:
        db.execute(SOURCE)
        db.execute(_window_stream("pieces"))
        sub = db.subscribe("w")
        db.insert("t", table.slice(0, half))
        db.run_until_idle()
        before = _rows(sub, ["k", "window_start", "n", "si", "mp"])
        db.checkpoint()
        db.insert("t", table.slice(half, 40))  # in the WAL only
    with pytest.raises(laminardb.StorageError) as info:
        laminardb.open(data_dir, **options)
    assert "pieces" in str(info.value)
    with laminardb.open(data_dir, functions=functions(), **options) as db:
        sub = db.subscribe("w")
        db.insert("t", table.slice(half + 40))
        db.source("t").watermark(2**62)
        db.run_until_idle()
        after = _rows(sub, ["k", "window_start", "n", "si", "mp"])
    got, want = before + after, _duckdb(table, WINDOW_DUCKDB)
    assert not got - want  # every window emitted is whole and right
    # The windows the WAL's rows close while the reopen replays them are
    # emitted before anyone subscribes (as for any stream): only those.
    closed_before, closed_by_replay = (half - 1) * 7, (half + 39) * 7
    missing = want - got
    assert all(closed_before < ws + 50 <= closed_by_replay for _, ws, *_ in missing)
    assert sum(after.values()) > 0


def _bad_row(s: pa.Array, n: pa.Array) -> dict[str, pa.Array]:
    return {"_row": pa.array([len(s)], pa.int64()), "i": pa.array([0]), "p": pa.array(["x"])}


def _descending(s: pa.Array, n: pa.Array) -> dict[str, pa.Array]:
    m = len(s)
    return {
        "_row": pa.array(list(range(m - 1, -1, -1)), pa.int64()),
        "i": pa.array([0] * m),
        "p": pa.array(["x"] * m),
    }


def _wrong_type(s: pa.Array, n: pa.Array) -> dict[str, pa.Array]:
    return {"_row": pa.array([0], pa.int64()), "i": pa.array([0.5]), "p": pa.array(["x"])}


def _raises(s: pa.Array, n: pa.Array) -> pa.RecordBatch:
    raise RuntimeError("model down")


def _no_row_column(s: pa.Array, n: pa.Array) -> dict[str, pa.Array]:
    return {"i": pa.array([0]), "p": pa.array(["x"])}


@pytest.mark.parametrize(
    ("fn", "code", "text"),
    [
        (_bad_row, "LDB-3011", "parent row 2 at output row 0 is out of range (the call had 2"),
        (_descending, "LDB-3011", "parent rows must not go down: 0 after 1 at output row 1"),
        (_wrong_type, "LDB-3011", "column 'i' returned an invalid result: it returned format 'g'"),
        (_raises, "LDB-3010", "RuntimeError: model down"),
        (_no_row_column, "LDB-3010", "returned no column '_row'"),
    ],
    ids=["row_out_of_range", "row_descending", "wrong_type", "raises", "no_row_column"],
)
def test_faults(db: laminardb.Connection, fn: object, code: str, text: str) -> None:
    calls = []

    def once(s: pa.Array, n: pa.Array) -> object:
        """Misbehaves on its first call only."""
        calls.append(len(s))
        return fn(s, n) if len(calls) == 1 else pieces(s, n)  # type: ignore[operator]

    db.create_table_function("f", once, PIECES_PARAMS, PIECES_COLUMNS)
    db.execute(SOURCE)
    db.execute("CREATE STREAM q AS SELECT id, e.i FROM t, f(k, b) AS e")
    sub = db.subscribe("q")
    db.insert("t", _table([("x", 0, 1, None), ("y", 0, 2, None)]))
    with pytest.raises(laminardb.LaminarError) as info:
        db.run_until_idle()
    assert info.value.code == code
    assert "stream 'q'" in str(info.value)
    assert "function 'f'" in str(info.value)
    assert text in str(info.value)
    assert sub.poll(0) is None  # nothing of the failed batch
    # The stream goes on with the next batch.
    db.insert("t", _table([("z", 0, 2, None)], first_id=10))
    db.run_until_idle()
    assert _rows(sub, ["id", "i"]) == Counter({(10, 0): 1, (10, 1): 1})


def test_sql_errors(db: laminardb.Connection) -> None:
    db.create_table_function("pieces", pieces, PIECES_PARAMS, PIECES_COLUMNS)
    db.execute(SOURCE)
    cases = [
        ("SELECT * FROM t, pieces(k)", "LDB-1102", "pieces() takes 2 arguments"),
        ("SELECT pieces(k, b) AS x FROM t", "LDB-1101", "is a table function"),
        ("SELECT * FROM t, nosuch(k)", "LDB-1101", "unknown table function 'nosuch'"),
        ("SELECT * FROM t, unnest(k)", "LDB-1005", "unnest() in FROM takes string_split"),
        ("SELECT * FROM t, generate_series(1, 2) AS g(x, y)", "LDB-1102", "has 1 column"),
        ("SELECT * FROM t, pieces(b, b)", "LDB-2001", "pieces"),
    ]
    for select, code, text in cases:
        with pytest.raises(laminardb.LaminarError) as info:
            db.execute(f"CREATE STREAM e AS {select}")
        assert info.value.code == code, (select, str(info.value))
        assert text in str(info.value), (select, str(info.value))
    with pytest.raises(laminardb.SQLError) as info:
        db.create_table_function("generate_series", pieces, PIECES_PARAMS, PIECES_COLUMNS)
    assert info.value.code == "LDB-1004"
    db.execute("CREATE STREAM ok AS SELECT id FROM t, pieces(k, b)")
    with pytest.raises(laminardb.SQLError) as info:
        db.remove_function("pieces")
    assert info.value.code == "LDB-1007"


def _consolidated(sub: laminardb.Subscription, names: list[str]) -> Counter[tuple[object, ...]]:
    """A changelog's rows with their weights summed (rows that cancel left out)."""
    got: Counter[tuple[object, ...]] = Counter()
    while (batch := sub.poll(0)) is not None:
        for r in batch.to_pylist():
            got[tuple(r[n] for n in names)] += r["_weight"]
    return Counter({row: w for row, w in got.items() if w != 0})


# Over a changelog: (the stream, DuckDB's query over the final rows, columns).
# c is SUM(b) per k with EMIT CHANGES, v a view of MAX(a) per k.
CHANGELOG_QUERIES = [
    (
        "SELECT k, g.x FROM c, generate_series(1, c.n) AS g(x)",
        "SELECT k, g.x FROM c, generate_series(1, c.n) AS g(x)",
        ["k", "x"],
    ),
    (
        "SELECT k, e.i, e.p FROM c, pieces(c.k, c.n) AS e",
        "SELECT k, g.i, k || g.i FROM c, generate_series(0, c.n - 1) AS g(i) "
        "WHERE k IS NOT NULL",
        ["k", "i", "p"],
    ),
    (
        "SELECT v.k, r.x FROM v, range(0, v.m) AS r(x) WHERE r.x % 2 = 0",
        "SELECT v.k, r.x FROM v, range(0, v.m) AS r(x) WHERE r.x % 2 = 0",
        ["k", "x"],
    ),
    (
        "SELECT k, COUNT(*) AS cnt, SUM(g.x) AS sx FROM c, generate_series(1, c.n) AS g(x) "
        "GROUP BY k EMIT CHANGES",
        "SELECT k, COUNT(*), SUM(g.x) FROM c, generate_series(1, c.n) AS g(x) GROUP BY k",
        ["k", "cnt", "sx"],
    ),
]


@pytest.mark.parametrize("cores", [1, 2])
@pytest.mark.parametrize(("select", "duck", "names"), CHANGELOG_QUERIES)
def test_over_a_changelog_rows_carry_their_weight(
    cores: int, rng: np.random.Generator, select: str, duck: str, names: list[str]
) -> None:
    """A table function over an EMIT CHANGES stream or a view: each joined row
    weighs what its input row does, so the consolidated output is the function
    over the input's final rows (DuckDB over the same GROUP BY)."""
    table = _random_table(rng, 600)
    with laminardb.open(cores=cores) as db:
        db.create_table_function("pieces", pieces, PIECES_PARAMS, PIECES_COLUMNS)
        db.execute(SOURCE)
        db.execute("CREATE STREAM c AS SELECT k, SUM(b) AS n FROM t GROUP BY k EMIT CHANGES")
        db.execute("CREATE MATERIALIZED VIEW v AS SELECT k, MAX(a) AS m FROM t GROUP BY k")
        db.execute(f"CREATE STREAM e AS {select}")
        assert db.schema("e").names[-1] == "_weight"
        sub = db.subscribe("e")
        for start in range(0, table.num_rows, 53):
            db.insert("t", table.slice(start, 53))
            db.run_until_idle()
        got = _consolidated(sub, names)
    final = (
        "WITH c AS (SELECT k, CAST(SUM(b) AS BIGINT) AS n FROM t GROUP BY k), "
        "v AS (SELECT k, MAX(a) AS m FROM t GROUP BY k) "
    )
    assert got == _duckdb(table, final + duck)
    assert got


# Beside a derived table (of one input, or a UNION ALL of two): (the stream,
# DuckDB's query, columns). u has t's columns.
DERIVED_QUERIES = [
    (
        "SELECT d.id, g.x FROM (SELECT id, a + 1 AS lo, b AS hi FROM t WHERE k <> 'z') d, "
        "generate_series(d.lo, d.hi) AS g(x)",
        "SELECT d.id, g.x FROM (SELECT id, a + 1 AS lo, b AS hi FROM t WHERE k <> 'z') d, "
        "generate_series(d.lo, d.hi) AS g(x)",
        ["id", "x"],
    ),
    (
        "SELECT d.id, e.i, e.p FROM (SELECT id, k, b FROM t UNION ALL "
        "SELECT id + 100000, k, a FROM u) AS d CROSS JOIN LATERAL pieces(d.k, d.b) AS e",
        "SELECT d.id, g.i, d.k || g.i FROM (SELECT id, k, b FROM t UNION ALL "
        "SELECT id + 100000, k, a FROM u) AS d, generate_series(0, d.b - 1) AS g(i) "
        "WHERE d.k IS NOT NULL",
        ["id", "i", "p"],
    ),
    (
        "SELECT d.k, COUNT(*) AS n, SUM(g.x) AS sx FROM (SELECT k, b FROM t WHERE a > 0) d, "
        "generate_series(1, d.b) AS g(x) GROUP BY d.k EMIT CHANGES",
        "SELECT d.k, COUNT(*), SUM(g.x) FROM (SELECT k, b FROM t WHERE a > 0) d, "
        "generate_series(1, d.b) AS g(x) GROUP BY d.k",
        ["k", "n", "sx"],
    ),
]


@pytest.mark.parametrize("cores", [1, 2])
@pytest.mark.parametrize(("select", "duck", "names"), DERIVED_QUERIES)
def test_beside_a_derived_table_equals_duckdb(
    cores: int, rng: np.random.Generator, select: str, duck: str, names: list[str]
) -> None:
    """FROM (SELECT ...) d, f(d.x): the derived table's rows (a UNION ALL's
    too) joined with the function's, as DuckDB joins them; a SELECT over a
    view does the same."""
    t, u = _random_table(rng, 500), _random_table(rng, 300)
    with laminardb.open(cores=cores) as db:
        db.create_table_function("pieces", pieces, PIECES_PARAMS, PIECES_COLUMNS)
        db.execute(SOURCE)
        db.execute(SOURCE.replace("SOURCE t", "SOURCE u"))
        db.execute(f"CREATE STREAM e AS {select}")
        operators = db.query("EXPLAIN e").column("operator").to_pylist()
        assert "table function" in operators
        sub = db.subscribe("e")
        for start in range(0, 500, 61):
            db.insert("t", t.slice(start, 61))
            db.insert("u", u.slice(start, 61))
            db.run_until_idle()
        if "EMIT CHANGES" in select:
            got = _consolidated(sub, names)
        else:
            got = _rows(sub, names)
        db.execute("CREATE MATERIALIZED VIEW mt AS SELECT * FROM t")
        db.insert("t", t)
        db.run_until_idle()
        viewed = db.query(
            "SELECT d.id, g.x FROM (SELECT id, a AS lo, b AS hi FROM mt WHERE k <> 'z') d, "
            "generate_series(d.lo, d.hi) AS g(x)"
        )
    con = duckdb.connect()
    con.register("t", t)
    con.register("u", u)
    assert got == Counter(con.sql(duck).fetchall())
    assert got
    want_view = Counter(
        con.sql(
            "SELECT d.id, g.x FROM (SELECT id, a AS lo, b AS hi FROM t WHERE k <> 'z') d, "
            "generate_series(d.lo, d.hi) AS g(x)"
        ).fetchall()
    )
    assert Counter(zip(*(viewed.column(n).to_pylist() for n in ["id", "x"]), strict=True)) == (
        want_view
    )


# FROM t JOIN u ON ... , f(...): the stream's query and DuckDB's over the same rows.
JOIN_ON = (
    "FROM t JOIN u ON t.k = u.k AND u.ts BETWEEN t.ts - INTERVAL '21' MILLISECOND "
    "AND t.ts + INTERVAL '14' MILLISECOND"
)
DUCK_JOIN_ON = "FROM t JOIN u ON t.k = u.k AND u.ts BETWEEN t.ts - 21 AND t.ts + 14"
JOIN_QUERIES = [
    (
        f"SELECT t.id, u.id AS uid, g.x {JOIN_ON}, generate_series(t.a, u.b) AS g(x)",
        f"SELECT t.id, u.id AS uid, g.x {DUCK_JOIN_ON}, generate_series(t.a, u.b) AS g(x)",
        ["id", "uid", "x"],
    ),
    (
        f"SELECT t.id, u.id AS uid, piece {JOIN_ON} "
        "CROSS JOIN LATERAL unnest(string_split(u.s, ',')) AS w(piece) WHERE t.a > 0",
        f"SELECT t.id, u.id AS uid, piece {DUCK_JOIN_ON} "
        "CROSS JOIN LATERAL unnest(string_split(u.s, ',')) AS w(piece) WHERE t.a > 0",
        ["id", "uid", "piece"],
    ),
    (
        f"SELECT t.id, u.id AS uid, e.i, e.p {JOIN_ON}, pieces(u.s, t.b) AS e",
        f"SELECT t.id, u.id AS uid, g.i, u.s || g.i {DUCK_JOIN_ON}, "
        "generate_series(0, t.b - 1) AS g(i) WHERE u.s IS NOT NULL",
        ["id", "uid", "i", "p"],
    ),
]


@pytest.mark.parametrize(("select", "duck", "names"), JOIN_QUERIES)
def test_beside_a_join_equals_duckdb(
    cores: int, rng: np.random.Generator, select: str, duck: str, names: list[str]
) -> None:
    """FROM a JOIN b ON ..., f(a.x) / CROSS JOIN LATERAL f(...): the function
    over each joined row, as DuckDB runs it (an interval join of two sources,
    the function's arguments from both sides)."""

    def table(n: int, first_id: int) -> pa.Table:
        words = ["a,b", "", "x", None, "p,,q", "ÄÖ,ü"]
        rows = [
            (str(rng.choice(["x", "y", "z"])), int(rng.integers(-2, 5)),
                int(rng.integers(-1, 5)), words[int(rng.integers(0, len(words)))])
            for _ in range(n)
        ]
        return _table(rows, first_id)

    t, u = table(400, 0), table(400, 1000)
    u = u.set_column(5, "ts", pa.array([i * 7 + 3 for i in range(400)], type=pa.int64()))
    with laminardb.open(cores=cores) as db:
        db.create_table_function("pieces", pieces, PIECES_PARAMS, PIECES_COLUMNS)
        db.execute(SOURCE)
        db.execute(SOURCE.replace("SOURCE t", "SOURCE u"))
        db.execute(f"CREATE STREAM e AS {select}")
        operators = db.query("EXPLAIN e").column("operator").to_pylist()
        assert "table function" in operators
        sub = db.subscribe("e")
        for start in range(0, 400, 53):
            db.insert("t", t.slice(start, 53))
            db.insert("u", u.slice(start, 53))
            db.run_until_idle()
        for src in ("t", "u"):
            db.source(src).watermark(2**62)
        db.run_until_idle()
        got = _rows(sub, names)
    con = duckdb.connect()
    con.register("t", t)
    con.register("u", u)
    assert got == Counter(con.sql(duck).fetchall())
    assert got


def test_beside_asof_and_lookup_joins_equal_duckdb(cores: int, rng: np.random.Generator) -> None:
    """The function over an ASOF join's rows and over a lookup join's (a
    table loaded before the stream's rows), as DuckDB's ASOF JOIN and JOIN."""
    n = 300
    t = pa.table({"k": pa.array([str(rng.choice(["x", "y", "z", "w"])) for _ in range(n)]),
                  "a": pa.array(rng.integers(-1, 4, n), pa.int64()),
                  "ts": pa.array(np.arange(n) * 10, pa.int64())})
    q = pa.table({"k": pa.array([str(rng.choice(["x", "y", "z"])) for _ in range(n)]),
                  "m": pa.array(rng.integers(0, 4, n), pa.int64()),
                  "ts": pa.array(np.arange(n) * 10 - 5, pa.int64())})
    r = pa.table({"k": ["x", "y", "w"], "c": pa.array([2, 0, 3], pa.int64())})
    with laminardb.open(cores=cores) as db:
        db.execute(
            "CREATE SOURCE t (k VARCHAR, a BIGINT, ts BIGINT, WATERMARK FOR ts AS ts);"
            "CREATE SOURCE q (k VARCHAR, m BIGINT, ts BIGINT, WATERMARK FOR ts AS ts);"
            "CREATE TABLE r (k VARCHAR PRIMARY KEY, c BIGINT);"
            "CREATE STREAM s1 AS SELECT t.ts, q.m, g.i FROM t ASOF JOIN q "
            "MATCH_CONDITION(t.ts >= q.ts) ON t.k = q.k, generate_series(t.a, q.m) AS g(i);"
            "CREATE STREAM s2 AS SELECT t.ts, r.c, i FROM t JOIN r ON t.k = r.k "
            "CROSS JOIN LATERAL range(t.a, r.c) AS g(i)"
        )
        db.upsert("r", r)
        db.run_until_idle()
        subs = [db.subscribe("s1"), db.subscribe("s2")]
        for start in range(0, n, 37):
            db.insert("q", q.slice(start, 37))
            db.insert("t", t.slice(start, 37))
            db.run_until_idle()
        for src in ("t", "q"):
            db.source(src).watermark(2**62)
        db.run_until_idle()
        got = [_rows(subs[0], ["ts", "m", "i"]), _rows(subs[1], ["ts", "c", "i"])]
    con = duckdb.connect()
    for name, table in (("t", t), ("q", q), ("r", r)):
        con.register(name, table)
    want = [
        con.sql("SELECT t.ts, q.m, g.i FROM t ASOF JOIN q ON t.k = q.k AND t.ts >= q.ts, "
                "generate_series(t.a, q.m) AS g(i)").fetchall(),
        con.sql("SELECT t.ts, r.c, g.i FROM t JOIN r ON t.k = r.k, "
                "range(t.a, r.c) AS g(i)").fetchall(),
    ]
    assert got == [Counter(w) for w in want]
    assert got[0]
    assert got[1]


def test_beside_a_join_of_a_changelog_is_refused(db: laminardb.Connection) -> None:
    db.execute(
        "CREATE SOURCE t (sym VARCHAR, n BIGINT, ts BIGINT, WATERMARK FOR ts AS ts);"
        "CREATE SOURCE q (sym VARCHAR, m BIGINT, ts BIGINT, WATERMARK FOR ts AS ts);"
        "CREATE STREAM c AS SELECT sym, COUNT(*) AS m, MAX(ts) AS ts FROM q GROUP BY sym "
        "EMIT CHANGES"
    )
    with pytest.raises(laminardb.SQLError) as info:
        db.execute(
            "CREATE STREAM x AS SELECT t.sym, g.i FROM t JOIN c ON t.sym = c.sym AND c.ts "
            "BETWEEN t.ts - INTERVAL '1' SECOND AND t.ts, generate_series(1, c.m) AS g(i)"
        )
    assert info.value.code == "LDB-1005"
    assert "a table function beside a window join or a join of a changelog" in str(info.value)

"""User-defined scalar functions from Python (``Connection.create_function``).

The same Python function is registered in LaminarDB and in DuckDB (the oracle,
``create_function(..., type="arrow")``) and both evaluate it over the same
generated rows (NULLs, empty batches, every engine type): the streams' rows
equal DuckDB's. Also: the row kind against a pure-Python computation, GROUP BY
keys, aggregate arguments and HAVING, calls from the reactor thread, and the
error cases -- an exception, a wrong type or length -- each an LDB error
naming the function while data before it survives.
"""

from __future__ import annotations

import datetime
import math

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from _oracle_util import examples
from conftest import drain
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import laminardb

SOURCE = "CREATE SOURCE t (x DOUBLE, n BIGINT, s VARCHAR, b BOOLEAN, i INT, ts TIMESTAMP, k BIGINT)"
SCHEMA = pa.schema(
    [
        ("x", pa.float64()),
        ("n", pa.int64()),
        ("s", pa.string()),
        ("b", pa.bool_()),
        ("i", pa.int32()),
        ("ts", pa.timestamp("us")),
        ("k", pa.int64()),
    ]
)


# The functions, vectorized with pyarrow.compute (what a user writes).
def fx(x: pa.Array, n: pa.Array) -> pa.Array:
    """x * 1.5 + n."""
    return pc.add(pc.multiply(x, 1.5), pc.cast(n, pa.float64()))


def label(s: pa.Array, b: pa.Array) -> pa.Array:
    """upper(s) || '!' when b, else s."""
    return pc.if_else(b, pc.binary_join_element_wise(pc.utf8_upper(s), "!", ""), s)


def later(ts: pa.Array, i: pa.Array) -> pa.Array:
    """ts + i seconds."""
    seconds = pc.multiply(pc.cast(i, pa.int64()), 1_000_000)
    return pc.cast(pc.add(pc.cast(ts, pa.int64()), seconds), pa.timestamp("us"))


FUNCTIONS = [
    ("fx", fx, ["DOUBLE", "BIGINT"], "DOUBLE", "fx(x, n)"),
    ("label", label, ["VARCHAR", "BOOLEAN"], "VARCHAR", "label(s, b)"),
    ("later", later, ["TIMESTAMP", "INT"], "TIMESTAMP", "later(ts, i)"),
]

rows_strategy = st.lists(
    st.tuples(
        st.one_of(st.none(), st.floats(-1e6, 1e6, allow_nan=False)),
        st.one_of(st.none(), st.integers(-(2**40), 2**40)),
        st.one_of(st.none(), st.text(max_size=6)),
        st.one_of(st.none(), st.booleans()),
        st.one_of(st.none(), st.integers(-1000, 1000)),
        st.one_of(
            st.none(),
            st.datetimes(datetime.datetime(1970, 1, 1), datetime.datetime(2100, 1, 1)),
        ),
    ),
    max_size=40,
)


def _table(rows: list[tuple[object, ...]]) -> pa.Table:
    columns = list(zip(*rows, strict=True)) if rows else [[]] * 6
    arrays = [pa.array(list(c), type=f.type) for c, f in zip(columns, SCHEMA, strict=False)]
    arrays.append(pa.array(range(len(rows)), type=pa.int64()))
    return pa.Table.from_arrays(arrays, schema=SCHEMA)


def _duckdb_rows(table: pa.Table, sql: str) -> list[tuple[object, ...]]:
    con = duckdb.connect()
    try:
        for name, fn, params, returns, _ in FUNCTIONS:
            con.create_function(name, fn, params, returns, type="arrow")
        con.register("t", table)
        return con.sql(sql).fetchall()
    finally:
        con.close()


def _same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)
    return a == b


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches=st.lists(rows_strategy, min_size=1, max_size=4))
def test_arrow_functions_equal_duckdb(batches: list[list[tuple[object, ...]]]) -> None:
    """Each function over generated batches (NULLs, empty ones) equals DuckDB."""
    select = ", ".join(f"{call} AS {name}" for name, _, _, _, call in FUNCTIONS)
    with laminardb.open() as db:
        for name, fn, params, returns, _ in FUNCTIONS:
            db.create_function(name, fn, params, returns)
        db.execute(SOURCE)
        db.execute(f"CREATE STREAM q AS SELECT k, {select} FROM t")
        sub = db.subscribe("q")
        tables = [_table(rows) for rows in batches]
        total = 0
        for table in tables:
            # k numbers the rows across batches.
            table = table.set_column(6, "k", pa.array(range(total, total + table.num_rows)))
            db.insert("t", table)
            total += table.num_rows
        db.run_until_idle()
        got = drain(sub, total).to_pylist() if total else []
    whole = pa.concat_tables([_table(rows) for rows in batches])
    whole = whole.set_column(6, "k", pa.array(range(whole.num_rows), type=pa.int64()))
    want = _duckdb_rows(whole, f"SELECT k, {select} FROM t ORDER BY k")
    assert len(got) == len(want)
    for g, w in zip(sorted(got, key=lambda r: r["k"]), want, strict=True):
        assert all(_same(a, b) for a, b in zip(g.values(), w, strict=True)), (g, w)


def test_row_kind_and_type_hints_against_python(db: laminardb.Connection, rng) -> None:  # noqa: ANN001
    """kind='row' with type hints: per-row Python, NULL in -> NULL out."""
    calls: list[tuple[float, int]] = []

    def score(x: float, n: int) -> float:
        calls.append((x, n))
        return x * 2 + n % 7

    db.create_function("score", score, kind="row", deterministic=True)
    db.execute(SOURCE)
    db.execute("CREATE STREAM q AS SELECT k, score(x, n) AS y FROM t WHERE score(x, 1) > 0")
    sub = db.subscribe("q")
    n = 300
    xs = [None if v < 0.1 else float(v * 100 - 50) for v in rng.random(n)]
    ns = [int(v) for v in rng.integers(0, 1000, n)]
    table = _table([(x, m, None, None, None, None) for x, m in zip(xs, ns, strict=True)])
    db.insert("t", table)
    db.run_until_idle()
    want = {
        k: x * 2 + m % 7
        for k, (x, m) in enumerate(zip(xs, ns, strict=True))
        if x is not None and x * 2 + 1 % 7 > 0
    }
    got = drain(sub, len(want)).to_pylist() if want else []
    assert {r["k"]: r["y"] for r in got} == pytest.approx(want)
    assert all(x is not None for x, _ in calls)  # NULL rows were never passed


def test_group_by_aggregate_having_equal_duckdb(db: laminardb.Connection, rng) -> None:  # noqa: ANN001
    """A function as GROUP BY key, inside SUM, and in HAVING, against DuckDB."""

    def bucket(n: pa.Array) -> pa.Array:
        return pc.cast(pc.bit_wise_and(n, 3), pa.int32())

    db.create_function("bucket", bucket, ["BIGINT"], "INT")
    db.create_function("fx", fx, ["DOUBLE", "BIGINT"], "DOUBLE")
    db.execute(
        "CREATE SOURCE s (x DOUBLE, n BIGINT, ts BIGINT, "
        "WATERMARK FOR ts AS ts - INTERVAL '0' SECOND)"
    )
    db.execute(
        "CREATE STREAM g AS SELECT window_start, bucket(n) AS b, SUM(fx(x, n)) AS total, "
        "COUNT(*) AS c FROM s GROUP BY bucket(n), tumble(ts, INTERVAL '1' SECOND) "
        "HAVING fx(MAX(x), 0) > 10 EMIT ON WINDOW CLOSE"
    )
    sub = db.subscribe("g")
    n = 2000
    table = pa.table(
        {
            "x": pa.array([None if v < 0.05 else float(v * 20) for v in rng.random(n)]),
            "n": pa.array([int(v) for v in rng.integers(0, 100, n)], type=pa.int64()),
            "ts": pa.array(sorted(int(v) for v in rng.integers(0, 5000, n)), type=pa.int64()),
        }
    )
    for chunk in table.to_batches(max_chunksize=250):
        db.insert("s", chunk)
    db.source("s").watermark(2**63 - 1)
    db.run_until_idle()
    con = duckdb.connect()
    try:
        con.create_function("bucket", bucket, ["BIGINT"], "INTEGER", type="arrow")
        con.create_function("fx", fx, ["DOUBLE", "BIGINT"], "DOUBLE", type="arrow")
        con.register("s", table)
        want = con.sql(
            "SELECT ts - ts % 1000 AS ws, bucket(n) AS b, SUM(fx(x, n)), COUNT(*) FROM s "
            "GROUP BY ws, bucket(n) HAVING fx(MAX(x), 0) > 10 ORDER BY ws, b"
        ).fetchall()
    finally:
        con.close()
    got = drain(sub, len(want)).to_pylist() if want else []
    got_rows = sorted((r["window_start"], r["b"], r["total"], r["c"]) for r in got)
    assert len(got_rows) == len(want)
    for g, w in zip(got_rows, want, strict=True):
        assert g[:2] == w[:2]
        assert g[3] == w[3]
        assert g[2] == pytest.approx(w[2], rel=1e-9)


def test_null_handling_special_and_on_error_null(db: laminardb.Connection) -> None:
    seen: list[object] = []

    def nz(x: float | None) -> float:
        seen.append(x)
        return -1.0 if x is None else x

    def fragile(x: float) -> float:
        if x > 2:
            raise ValueError("too big")
        return x

    db.create_function("nz", nz, ["DOUBLE"], "DOUBLE", kind="row", null_handling="special")
    db.create_function("fragile", fragile, ["DOUBLE"], "DOUBLE", kind="row", on_error="null")
    # An arrow function whose result has NULLs of its own (rows 1 and 3).
    db.create_function(
        "capped",
        lambda x: pc.if_else(pc.greater(x, 2.0), pa.scalar(None, pa.float64()), x),
        ["DOUBLE"],
        "DOUBLE",
    )
    db.execute("CREATE SOURCE u (x DOUBLE)")
    db.execute("CREATE STREAM q AS SELECT nz(x) AS a, fragile(x) AS b, capped(x) AS c FROM u")
    sub = db.subscribe("q")
    db.insert("u", {"x": [1.0, None, 3.0]})
    db.insert("u", {"x": [4.0, 0.5, 2.5]})
    db.run_until_idle()
    rows = drain(sub, 6).to_pylist()
    assert rows == [
        {"a": 1.0, "b": 1.0, "c": 1.0},
        {"a": -1.0, "b": None, "c": None},
        {"a": 3.0, "b": None, "c": None},
        {"a": 4.0, "b": None, "c": None},
        {"a": 0.5, "b": 0.5, "c": 0.5},
        {"a": 2.5, "b": None, "c": None},
    ]
    assert seen == [1.0, None, 3.0, 4.0, 0.5, 2.5]


def test_exception_fails_the_batch_and_data_before_survives(db: laminardb.Connection) -> None:
    state = {"fail": False}

    def maybe(x: pa.Array) -> pa.Array:
        if state["fail"]:
            raise RuntimeError("model not loaded")
        return pc.multiply(x, 2.0)

    db.create_function("maybe", maybe, ["DOUBLE"], "DOUBLE")
    db.execute("CREATE SOURCE u (x DOUBLE)")
    db.execute("CREATE STREAM q AS SELECT maybe(x) AS y FROM u")
    sub = db.subscribe("q")
    db.insert("u", {"x": [1.0, 2.0]})
    db.run_until_idle()
    state["fail"] = True
    db.insert("u", {"x": [10.0]})
    with pytest.raises(laminardb.IngestError) as info:
        db.run_until_idle()
    assert info.value.code == "LDB-3010"
    assert info.value.object == "q"
    assert "function 'maybe' failed: RuntimeError: model not loaded" in str(info.value)
    assert "Traceback" in str(info.value)
    state["fail"] = False
    db.insert("u", {"x": [3.0]})
    db.run_until_idle()
    assert drain(sub, 3).column("y").to_pylist() == [2.0, 4.0, 6.0]  # 10.0 not applied


@pytest.mark.parametrize(
    ("fn", "text"),
    [
        (lambda x: pc.cast(x, pa.int64()), "returned format 'l', declared 'g'"),
        (lambda x: pa.concat_arrays([x, x]), "returned 4 rows for 2"),
        (lambda x: pc.cast(x, pa.float32()), "returned format 'f'"),
    ],
    ids=["type", "length", "float32"],
)
def test_bad_results_are_ldb_3011(db: laminardb.Connection, fn: object, text: str) -> None:
    db.create_function("bad", fn, ["DOUBLE"], "DOUBLE")  # type: ignore[arg-type]
    db.execute("CREATE SOURCE u (x DOUBLE)")
    db.execute("CREATE STREAM q AS SELECT bad(x) AS y FROM u")
    db.insert("u", {"x": [1.0, 2.0]})
    with pytest.raises(laminardb.IngestError) as info:
        db.run_until_idle()
    assert info.value.code == "LDB-3011"
    assert "function 'bad' returned an invalid result" in str(info.value)
    assert text in str(info.value)


def test_reactor_thread_calls_python(db: laminardb.Connection) -> None:
    """After start() the reactor thread calls the function (GIL taken per call)."""
    db.create_function("half", lambda x: pc.divide(x, 2.0), ["DOUBLE"], "DOUBLE")
    db.create_function("nope", lambda x: 1 / 0, ["DOUBLE"], "DOUBLE")
    db.execute("CREATE SOURCE u (x DOUBLE)")
    db.execute("CREATE STREAM q AS SELECT half(x) AS y FROM u")
    db.execute("CREATE STREAM bad AS SELECT nope(x) AS y FROM u")
    sub = db.subscribe("q")
    db.start()
    for i in range(50):
        db.insert("u", {"x": [float(i), float(i + 1)]})
    got = drain(sub, 100).column("y").to_pylist()
    assert sorted(got) == sorted([i / 2 for i in range(50)] + [(i + 1) / 2 for i in range(50)])
    with pytest.raises(laminardb.IngestError) as info:
        db.stop()
    assert info.value.code == "LDB-3010"
    assert "function 'nope' failed: ZeroDivisionError" in str(info.value)


def test_registration_errors_and_lifecycle(db: laminardb.Connection) -> None:
    with pytest.raises(TypeError, match="no type hint"):
        db.create_function("f", lambda x: x)
    with pytest.raises(TypeError, match="no engine type"):
        db.create_function("f", lambda x: x, [complex], "DOUBLE")
    with pytest.raises(ValueError, match="kind"):
        db.create_function("f", lambda x: x, ["DOUBLE"], "DOUBLE", kind="pandas")  # type: ignore[arg-type]
    with pytest.raises(laminardb.SQLError) as info:
        db.create_function("upper", lambda x: x, ["VARCHAR"], "VARCHAR")
    assert info.value.code == "LDB-1004"
    db.create_function("f", lambda x: x, [pa.float64()], pa.float64())
    db.create_function("f", lambda x: pc.negate(x), [float], float)  # replaced: unused
    db.execute("CREATE SOURCE u (x DOUBLE)")
    db.execute("CREATE STREAM q AS SELECT f(x) AS y FROM u")
    with pytest.raises(laminardb.SQLError) as info:
        db.create_function("f", lambda x: x, ["DOUBLE"], "DOUBLE")
    assert info.value.code == "LDB-1007"
    assert "stream 'q'" in str(info.value)
    with pytest.raises(laminardb.SQLError) as info:
        db.remove_function("f")
    assert info.value.code == "LDB-1007"
    shown = db.query("SHOW FUNCTIONS").to_pylist()
    assert shown == [
        {
            "name": "f",
            "arguments": "DOUBLE",
            "returns": "DOUBLE",
            "flags": "volatile",
            "used_by": "q",
        }
    ]
    with pytest.raises(laminardb.SQLError) as info:
        db.execute("DROP FUNCTION f")
    assert info.value.code == "LDB-1007"
    with pytest.raises(laminardb.SQLError) as info:
        db.execute("CREATE STREAM r AS SELECT g(x) FROM u")
    assert info.value.code == "LDB-1101"
    assert "'g'" in str(info.value)
    with pytest.raises(laminardb.SQLError) as info:
        db.execute("CREATE STREAM r AS SELECT f(x, 1) FROM u")
    assert info.value.code == "LDB-1102"
    assert "f(DOUBLE) -> DOUBLE" in str(info.value)
    with pytest.raises(laminardb.SchemaError) as info:
        db.execute("CREATE STREAM r AS SELECT f(x > 1) FROM u")
    assert info.value.code == "LDB-2001"
    db.execute("DROP STREAM q")
    db.remove_function("f")
    with pytest.raises(laminardb.SQLError) as info:
        db.remove_function("f")
    assert info.value.code == "LDB-1101"
    db.create_function("f", lambda x: x, ["DOUBLE"], "DOUBLE")
    db.execute("DROP FUNCTION IF EXISTS nothing; DROP FUNCTION f")
    assert db.query("SHOW FUNCTIONS").num_rows == 0


def test_durable_reopen_needs_the_functions(data_dir) -> None:  # noqa: ANN001
    """Stored streams calling a function recover when open() is given it."""
    from laminardb.functions import Function

    def usd() -> Function:
        return Function("usd", lambda p: pc.multiply(p, 2.0), ["DOUBLE"], "DOUBLE")

    options = {"checkpoint_interval": "10 min", "wal_mode": "sync"}
    with laminardb.open(data_dir, functions=[usd()], **options) as db:
        db.execute("CREATE SOURCE u (p DOUBLE)")
        db.execute("CREATE MATERIALIZED VIEW v AS SELECT usd(p) AS d FROM u")
        db.insert("u", {"p": [1.0]})
        db.run_until_idle()
        db.checkpoint()
        db.insert("u", {"p": [2.0]})  # in the WAL only: replayed through usd at open
    with pytest.raises(laminardb.StorageError) as info:
        laminardb.open(data_dir, **options)
    assert info.value.code == "LDB-5002"
    assert "unknown function 'usd'" in str(info.value)
    with laminardb.open(data_dir, functions=[usd()], **options) as db:
        db.insert("u", {"p": [3.0]})
        db.run_until_idle()
        assert db.query("SELECT d FROM v ORDER BY d").column("d").to_pylist() == [2.0, 4.0, 6.0]

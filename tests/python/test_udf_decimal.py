"""DECIMAL arguments and results of Python functions (scalar, aggregate, table).

A DECIMAL(p, s) travels as a pyarrow ``decimal128(p, s)`` array (kind
``arrow``) or as ``decimal.Decimal`` values (kind ``row``), both ways. DuckDB
is the oracle: the same arrow function registered in DuckDB over the same
rows, DuckDB's exact ``SUM`` of a DECIMAL against a Python aggregate, and
DuckDB's ``unnest`` against a table function; narrow (p <= 18) and wide
(p > 18) decimals, NULLs, cores 1 and 2. A result of another scale, or a
value past the declared precision, is LDB-3011 naming the function.
"""

from __future__ import annotations

from collections import Counter
from decimal import Decimal

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import laminardb
from laminardb.functions import arrow_format

SOURCE = (
    "CREATE SOURCE t (k BIGINT, x DECIMAL(12,2), w DECIMAL(30,4), ts BIGINT, "
    "WATERMARK FOR ts AS ts - INTERVAL '0' SECOND)"
)
SCHEMA = pa.schema(
    [
        ("k", pa.int64()),
        ("x", pa.decimal128(12, 2)),
        ("w", pa.decimal128(30, 4)),
        ("ts", pa.int64()),
    ]
)


def _table(rng: np.random.Generator, n: int) -> pa.Table:
    """n rows: k in 0..3, x up to +-10^9 with cents and NULLs, w past 18 digits."""
    cents = rng.integers(-(10**11), 10**11, n)
    x = [None if rng.random() < 0.15 else Decimal(int(c)).scaleb(-2) for c in cents]
    big = [int(a) * 10**12 + int(b) for a, b in zip(
        rng.integers(-(10**12), 10**12, n), rng.integers(0, 10**12, n), strict=True)]
    w = [None if rng.random() < 0.1 else Decimal(v).scaleb(-4) for v in big]
    return pa.table(
        {
            "k": pa.array(rng.integers(0, 4, n), pa.int64()),
            "x": pa.array(x, pa.decimal128(12, 2)),
            "w": pa.array(w, pa.decimal128(30, 4)),
            "ts": pa.array(np.arange(n) * 3, pa.int64()),
        },
        schema=SCHEMA,
    )


def _feed(db: laminardb.Connection, table: pa.Table, chunk: int = 61) -> None:
    for start in range(0, table.num_rows, chunk):
        db.insert("t", table.slice(start, chunk))
        db.run_until_idle()


def _rows(sub: laminardb.Subscription, names: list[str]) -> Counter[tuple[object, ...]]:
    got: Counter[tuple[object, ...]] = Counter()
    while (batch := sub.poll(0)) is not None:
        for r in batch.to_pylist():
            got[tuple(r[n] for n in names)] += 1
    return got


# The functions, vectorized with pyarrow.compute (what a user writes).
def fee(x: pa.Array) -> pa.Array:
    """x * 0.015, rounded to 3 places: DECIMAL(12,2) -> DECIMAL(18,3)."""
    product = pc.multiply(x, pa.scalar(Decimal("0.015"), pa.decimal128(4, 3)))
    return pc.cast(pc.round(product, 3), pa.decimal128(18, 3))


def nudge(w: pa.Array) -> pa.Array:
    """w + 0.0001: DECIMAL(30,4) -> DECIMAL(30,4), the wide layout both ways."""
    total = pc.add(w, pa.scalar(Decimal("0.0001"), pa.decimal128(5, 4)))
    return pc.cast(total, pa.decimal128(30, 4))


def test_formats() -> None:
    assert arrow_format("DECIMAL(12, 2)") == "d:12,2"
    assert arrow_format("numeric(38,0)") == "d:38,0"
    assert arrow_format(pa.decimal128(30, 4)) == "d:30,4"
    with pytest.raises(TypeError, match="precision and scale"):
        arrow_format(Decimal)
    with pytest.raises(TypeError, match="1 <= p <= 38"):
        arrow_format("DECIMAL(39, 2)")


@pytest.mark.parametrize("cores", [1, 2])
def test_arrow_functions_equal_duckdb(cores: int, rng: np.random.Generator) -> None:
    table = _table(rng, 700)
    with laminardb.open(cores=cores) as db:
        db.create_function("fee", fee, ["DECIMAL(12,2)"], "DECIMAL(18,3)")
        db.create_function("nudge", nudge, [pa.decimal128(30, 4)], pa.decimal128(30, 4))
        db.execute(SOURCE)
        db.execute("CREATE STREAM s AS SELECT k, ts, fee(x) AS f, nudge(w) AS n FROM t")
        sub = db.subscribe("s")
        assert sub.schema.field("f").type == pa.decimal128(18, 3)
        assert sub.schema.field("n").type == pa.decimal128(30, 4)
        _feed(db, table)
        got = _rows(sub, ["k", "ts", "f", "n"])
    con = duckdb.connect()
    con.create_function("fee", fee, [duckdb.decimal_type(12, 2)], duckdb.decimal_type(18, 3),
                        type="arrow")
    con.create_function("nudge", nudge, [duckdb.decimal_type(30, 4)],
                        duckdb.decimal_type(30, 4), type="arrow")
    con.register("t", table)
    want = Counter(con.sql("SELECT k, ts, fee(x), nudge(w) FROM t").fetchall())
    assert got == want
    assert sum(1 for r in got if r[2] is None) > 0
    assert sum(1 for r in got if r[3] is not None and abs(r[3]) >= 10**18) > 0


def test_row_kind_gets_decimal_values(rng: np.random.Generator) -> None:
    table = _table(rng, 300)
    seen: list[object] = []

    def triple(x: Decimal) -> Decimal:
        seen.append(x)
        return x * 3

    with laminardb.open() as db:
        db.create_function("triple", triple, ["DECIMAL(12,2)"], "DECIMAL(13,2)", kind="row")
        db.execute(SOURCE)
        db.execute("CREATE STREAM s AS SELECT ts, triple(x) AS y FROM t")
        sub = db.subscribe("s")
        _feed(db, table)
        got = _rows(sub, ["ts", "y"])
    assert seen
    assert all(isinstance(v, Decimal) for v in seen)
    con = duckdb.connect()
    con.register("t", table)
    want = Counter(con.sql("SELECT ts, CAST(x * 3 AS DECIMAL(13,2)) FROM t").fetchall())
    assert got == want


class DecSum:
    """SUM(x) exactly, over ``decimal.Decimal`` values; NULL without rows."""

    def init(self) -> Decimal | None:
        return None

    def update(self, state: Decimal | None, x: pa.Array) -> Decimal | None:
        assert x.type == pa.decimal128(12, 2)
        total = pc.sum(x).as_py()
        if total is None:
            return state
        return total if state is None else state + total

    def merge(self, a: Decimal | None, b: Decimal | None) -> Decimal | None:
        if a is None or b is None:
            return a if b is None else b
        return a + b

    def finalize(self, state: Decimal | None) -> Decimal | None:
        return state


@pytest.mark.parametrize("cores", [1, 2])
def test_aggregate_equals_duckdb_sum(cores: int, rng: np.random.Generator) -> None:
    table = _table(rng, 2000)
    with laminardb.open(cores=cores) as db:
        db.create_aggregate("dsum", DecSum, ["DECIMAL(12,2)"], "DECIMAL(38,2)")
        db.execute(SOURCE)
        db.execute(
            "CREATE STREAM w AS SELECT k, window_start, dsum(x) AS total FROM t "
            "GROUP BY k, tumble(ts, INTERVAL '100' MILLISECOND) EMIT ON WINDOW CLOSE"
        )
        sub = db.subscribe("w")
        assert sub.schema.field("total").type == pa.decimal128(38, 2)
        _feed(db, table)
        db.source("t").watermark(2**62)
        db.run_until_idle()
        got = _rows(sub, ["k", "window_start", "total"])
    con = duckdb.connect()
    con.register("t", table)
    want = Counter(
        con.sql("SELECT k, ts - ts % 100, SUM(x) FROM t GROUP BY ALL").fetchall()
    )
    assert got == want
    assert any(r[2] is not None for r in got)


def steps(x: pa.Array) -> pa.RecordBatch:
    """For each row: x and -x (a DECIMAL column), as DuckDB's unnest([x, -x])."""
    rows = np.repeat(np.arange(len(x), dtype=np.int32), 2)
    values = pc.take(x, pa.array(rows))
    signs = pa.array([i % 2 == 1 for i in range(len(rows))], pa.bool_())
    out = pc.if_else(signs, pc.negate(values), values)
    return pa.RecordBatch.from_pydict({"_row": pa.array(rows), "v": out})


def test_table_function_decimal_column(rng: np.random.Generator) -> None:
    table = _table(rng, 400)
    with laminardb.open() as db:
        db.create_table_function("steps", steps, ["DECIMAL(12,2)"], {"v": "DECIMAL(12,2)"})
        db.execute(SOURCE)
        db.execute("CREATE STREAM s AS SELECT ts, e.v FROM t, steps(t.x) AS e")
        sub = db.subscribe("s")
        _feed(db, table)
        got = _rows(sub, ["ts", "v"])
    con = duckdb.connect()
    con.register("t", table)
    want = Counter(
        con.sql("SELECT ts, unnest([x, -x]) FROM t WHERE x IS NOT NULL").fetchall()
    )
    assert got == want


def test_wrong_scale_and_too_many_digits_are_ldb_3011() -> None:
    with laminardb.open() as db:
        db.create_function(
            "rescale", lambda x: pc.cast(x, pa.decimal128(14, 3)), ["DECIMAL(12,2)"],
            "DECIMAL(14,2)")
        db.execute(SOURCE)
        db.execute("CREATE STREAM a AS SELECT rescale(x) AS y FROM t")
        db.insert("t", {"k": [1], "x": [Decimal("1.50")], "w": [None], "ts": [1]})
        with pytest.raises(laminardb.LaminarError) as info:
            db.run_until_idle()
        assert info.value.code == "LDB-3011"
        assert "'rescale'" in str(info.value)
        assert "d:14,2" in str(info.value)
    with laminardb.open() as db:
        db.create_function(
            "grow", lambda x: pc.cast(
                pc.multiply(x, pa.scalar(Decimal(1000), pa.decimal128(4, 0))),
                pa.decimal128(13, 2), safe=False),
            ["DECIMAL(12,2)"], "DECIMAL(13,2)")
        db.execute(SOURCE)
        db.execute("CREATE STREAM b AS SELECT grow(x) AS y FROM t")
        db.insert("t", {"k": [1], "x": [Decimal("123456789.50")], "w": [None], "ts": [1]})
        with pytest.raises(laminardb.LaminarError) as info:
            db.run_until_idle()
        assert info.value.code == "LDB-3011"
        assert "'grow'" in str(info.value)
        assert "more than 13 digits" in str(info.value)

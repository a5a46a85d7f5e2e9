"""User-defined aggregate functions from Python (``Connection.create_aggregate``).

Python aggregates -- a sum of squares (with ``retract``) and a geometric mean
(pickled state) -- computed by the engine over generated streams equal
DuckDB's built-ins over the same rows and groups: tumbling windows on cores 1
and 2, a changelog input (EMIT CHANGES retractions), a checkpoint and restart
in the middle. Hop and session windows compare each result with the engine's
built-in twin in the same row. Fault cases: an exception (LDB-3010 naming the
function, the stream and the traceback, the stream going on), a wrong result
type, ``on_error="null"``, a callback that re-enters the database, and the
registration errors.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Iterator

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import laminardb
from laminardb.aggregates import Aggregate

SOURCE = (
    "CREATE SOURCE trades (symbol VARCHAR, price DOUBLE, volume BIGINT, ts BIGINT, "
    "WATERMARK FOR ts AS ts - INTERVAL '0' SECOND)"
)

# The two aggregates per symbol and 100 ms tumbling window.
TUMBLE = (
    "CREATE STREAM w AS SELECT symbol, window_start, sumsq(price) AS sq, "
    "geomean(price) AS gm FROM trades "
    "GROUP BY symbol, tumble(ts, INTERVAL '100' MILLISECOND) EMIT ON WINDOW CLOSE"
)


class SumSq:
    """SUM(x * x), vectorized with pyarrow.compute; retractable. The state is
    (sum, rows): NULL when no row is held, as SUM."""

    def init(self) -> tuple[float, int]:
        return (0.0, 0)

    def update(self, state: tuple[float, int], x: pa.Array) -> tuple[float, int]:
        return (state[0] + pc.sum(pc.multiply(x, x)).as_py(), state[1] + len(x))

    def retract(self, state: tuple[float, int], x: pa.Array) -> tuple[float, int]:
        return (state[0] - pc.sum(pc.multiply(x, x)).as_py(), state[1] - len(x))

    def merge(self, a: tuple[float, int], b: tuple[float, int]) -> tuple[float, int]:
        return (a[0] + b[0], a[1] + b[1])

    def finalize(self, state: tuple[float, int]) -> float | None:
        return state[0] if state[1] else None


class GeoMean:
    """exp(avg(ln x)) over a (sum of logs, count) state; NULL for no rows."""

    def init(self) -> list[float]:
        return [0.0, 0]

    def update(self, state: list[float], x: pa.Array) -> list[float]:
        state[0] += pc.sum(pc.ln(x)).as_py()
        state[1] += len(x)
        return state

    def merge(self, a: list[float], b: list[float]) -> list[float]:
        return [a[0] + b[0], a[1] + b[1]]

    def finalize(self, state: list[float]) -> float | None:
        return math.exp(state[0] / state[1]) if state[1] else None


def _register(db: laminardb.Connection) -> None:
    db.create_aggregate("sumsq", SumSq, ["DOUBLE"], "DOUBLE")
    db.create_aggregate("geomean", GeoMean, ["DOUBLE"], "DOUBLE")


def _trades(rng: np.random.Generator, n: int) -> pa.Table:
    """n rows, ts ascending with gaps, 4 symbols, prices > 0 with NULLs."""
    ts = np.cumsum(rng.integers(1, 6, n)) + np.repeat(np.arange(n // 50 + 1) * 40, 50)[:n]
    price = rng.uniform(1.0, 100.0, n).round(2)
    nulls = rng.random(n) < 0.15
    return pa.table(
        {
            "symbol": pa.array(rng.choice(["A", "B", "C", "D"], n)),
            "price": pa.array(price, mask=nulls),
            "volume": pa.array(rng.integers(1, 100, n), type=pa.int64()),
            "ts": pa.array(ts, type=pa.int64()),
        }
    )


def _feed(db: laminardb.Connection, table: pa.Table, chunk: int = 97) -> None:
    for start in range(0, table.num_rows, chunk):
        db.insert("trades", table.slice(start, chunk))
        db.run_until_idle()


def _close_all(db: laminardb.Connection) -> None:
    db.source("trades").watermark(2**62)
    db.run_until_idle()


def _sub_table(sub: laminardb.Subscription) -> pa.Table:
    batches = []
    while (batch := sub.poll(0)) is not None:
        batches.append(batch)
    return pa.Table.from_batches(batches) if batches else pa.table({})


def _close(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-6)


def _duckdb_tumble(table: pa.Table) -> dict[tuple[str, int], tuple[float, float]]:
    con = duckdb.connect()
    con.register("trades", table)
    rows = con.sql(
        "SELECT symbol, ts - ts % 100 AS ws, SUM(price * price), exp(avg(ln(price))) "
        "FROM trades GROUP BY ALL"
    ).fetchall()
    return {(s, ws): (sq, gm) for s, ws, sq, gm in rows}


@pytest.fixture(params=[1, 2], ids=["cores1", "cores2"])
def cores_db(request: pytest.FixtureRequest) -> Iterator[laminardb.Connection]:
    with laminardb.open(cores=request.param) as db:
        yield db


def test_tumble_equals_duckdb(cores_db: laminardb.Connection, rng: np.random.Generator) -> None:
    db = cores_db
    _register(db)
    db.execute(SOURCE)
    db.execute(TUMBLE)
    sub = db.subscribe("w")
    table = _trades(rng, 3000)
    _feed(db, table)
    _close_all(db)
    got = {
        (r["symbol"], r["window_start"]): (r["sq"], r["gm"]) for r in _sub_table(sub).to_pylist()
    }
    want = _duckdb_tumble(table)
    assert got.keys() == want.keys()
    for key, (sq, gm) in want.items():
        assert _close(got[key][0], sq), key
        assert _close(got[key][1], gm), key


class Symbols:
    """The distinct symbols of a group, sorted and joined by '|' (VARCHAR)."""

    def init(self) -> set[str]:
        return set()

    def update(self, state: set[str], x: pa.Array) -> set[str]:
        return state | set(x.to_pylist())

    def merge(self, a: set[str], b: set[str]) -> set[str]:
        return a | b

    def finalize(self, state: set[str]) -> str | None:
        return "|".join(sorted(state)) if state else None


class DayOf:
    """DATE '2020-01-01' plus the group's row count in days (a DATE result)."""

    def init(self) -> int:
        return 0

    def update(self, state: int, x: pa.Array) -> int:
        return state + len(x)

    def merge(self, a: int, b: int) -> int:
        return a + b

    def finalize(self, state: int) -> datetime.date:
        return datetime.date(2020, 1, 1) + datetime.timedelta(days=state)


def test_varchar_and_date_results_equal_duckdb(
    cores_db: laminardb.Connection, rng: np.random.Generator
) -> None:
    db = cores_db
    db.create_aggregate("symbols", Symbols, ["VARCHAR"], "VARCHAR")
    db.create_aggregate("day_of", DayOf, ["DOUBLE"], "DATE")
    db.execute(SOURCE)
    db.execute(
        "CREATE STREAM w AS SELECT volume % 3 AS k, window_start, symbols(symbol) AS syms, "
        "day_of(price) AS d FROM trades "
        "GROUP BY volume % 3, tumble(ts, INTERVAL '100' MILLISECOND) EMIT ON WINDOW CLOSE"
    )
    sub = db.subscribe("w")
    table = _trades(rng, 2000)
    _feed(db, table)
    _close_all(db)
    out = _sub_table(sub)
    assert out.schema.field("syms").type == pa.string()
    assert out.schema.field("d").type == pa.date32()
    got = {(r["k"], r["window_start"]): (r["syms"], r["d"]) for r in out.to_pylist()}
    con = duckdb.connect()
    con.register("trades", table)
    want = {
        (k, ws): (syms, d)
        for k, ws, syms, d in con.sql(
            "SELECT volume % 3, ts - ts % 100, string_agg(DISTINCT symbol, '|' ORDER BY symbol), "
            "DATE '2020-01-01' + CAST(COUNT(price) AS INTEGER) FROM trades GROUP BY ALL"
        ).fetchall()
    }
    assert got == want


@pytest.mark.parametrize(
    "window",
    [
        "hop(ts, INTERVAL '100' MILLISECOND, INTERVAL '30' MILLISECOND)",
        "session(ts, INTERVAL '20' MILLISECOND)",
    ],
    ids=["hop", "session"],
)
def test_hop_and_session_equal_builtins(
    cores_db: laminardb.Connection, rng: np.random.Generator, window: str
) -> None:
    db = cores_db
    _register(db)
    db.execute(SOURCE)
    db.execute(
        "CREATE STREAM w AS SELECT symbol, sumsq(price) AS sq, SUM(price * price) AS b_sq, "
        "geomean(price) AS gm, exp(AVG(ln(price))) AS b_gm FROM trades "
        f"GROUP BY symbol, {window} HAVING sumsq(price) > 100 EMIT ON WINDOW CLOSE"
    )
    sub = db.subscribe("w")
    _feed(db, _trades(rng, 2000))
    _close_all(db)
    rows = _sub_table(sub).to_pylist()
    assert rows
    for r in rows:
        assert r["sq"] > 100
        assert _close(r["sq"], r["b_sq"]), r
        assert _close(r["gm"], r["b_gm"]), r


def test_emit_changes_retractions_equal_duckdb(
    cores_db: laminardb.Connection, rng: np.random.Generator
) -> None:
    """A running total per symbol (a changelog) and the sum of the totals' squares."""
    db = cores_db
    _register(db)
    db.execute(SOURCE)
    db.execute(
        "CREATE STREAM totals AS SELECT symbol, SUM(price) AS t FROM trades "
        "GROUP BY symbol EMIT CHANGES"
    )
    db.execute(
        "CREATE MATERIALIZED VIEW sq AS SELECT sumsq(t) AS s, SUM(t * t) AS b FROM totals "
        "EMIT CHANGES"
    )
    with pytest.raises(laminardb.SQLError) as info:  # geomean has no retract
        db.execute("CREATE STREAM g AS SELECT geomean(t) AS g FROM totals EMIT CHANGES")
    assert info.value.code == "LDB-1005"
    assert "'geomean' has no retract callback" in str(info.value)
    table = _trades(rng, 1500)
    for start in range(0, table.num_rows, 150):
        _feed(db, table.slice(start, 150))
        row = db.query("SELECT s, b FROM sq").to_pylist()[0]
        con = duckdb.connect()
        con.register("done", table.slice(0, start + 150))
        (oracle,) = con.sql(
            "SELECT SUM(t * t) FROM (SELECT SUM(price) AS t FROM done GROUP BY symbol "
            "HAVING COUNT(price) > 0)"
        ).fetchall()[0]
        assert _close(row["s"], oracle)
        assert _close(row["b"], oracle)


def test_checkpoint_restart_in_the_middle(data_dir, rng: np.random.Generator) -> None:  # noqa: ANN001
    def aggregates() -> list[Aggregate]:
        return [
            Aggregate("sumsq", SumSq, ["DOUBLE"], "DOUBLE"),
            Aggregate("geomean", GeoMean, ["DOUBLE"], "DOUBLE"),
        ]

    options = {"checkpoint_interval": "10 min", "wal_mode": "sync"}
    table = _trades(rng, 2000)
    half = 1037  # inside a window
    with laminardb.open(data_dir, functions=aggregates(), **options) as db:
        db.execute(SOURCE)
        db.execute(TUMBLE)
        sub = db.subscribe("w")
        _feed(db, table.slice(0, half))
        before = _sub_table(sub).to_pylist()
        db.checkpoint()
    with pytest.raises(laminardb.StorageError) as info:
        laminardb.open(data_dir, **options)
    assert "unknown function" in str(info.value)
    with laminardb.open(data_dir, functions=aggregates(), **options) as db:
        sub = db.subscribe("w")
        _feed(db, table.slice(half))
        _close_all(db)
        after = _sub_table(sub).to_pylist()
    got = {(r["symbol"], r["window_start"]): (r["sq"], r["gm"]) for r in before + after}
    want = _duckdb_tumble(table)
    assert sorted(got) == sorted(want)
    for key, (sq, gm) in want.items():
        assert _close(got[key][0], sq), key
        assert _close(got[key][1], gm), key


class Flaky(SumSq):
    """SumSq that raises while ``fail`` is set."""

    fail = False

    def update(self, state: tuple[float, int], x: pa.Array) -> tuple[float, int]:
        if Flaky.fail:
            raise ValueError("risk model diverged")
        return super().update(state, x)


class Picky:
    """SUM(x) over a list state changed in place; update raises on a negative x."""

    def init(self) -> list[float]:
        return [0.0]

    def update(self, state: list[float], x: pa.Array) -> list[float]:
        if pc.any(pc.less(x, 0)).as_py():
            raise ValueError("negative price")
        state[0] += pc.sum(x).as_py()
        return state

    def merge(self, a: list[float], b: list[float]) -> list[float]:
        return [a[0] + b[0]]

    def finalize(self, state: list[float]) -> float:
        return state[0]


@pytest.mark.parametrize("emit", ["EMIT ON WINDOW CLOSE", "EMIT CHANGES"])
def test_failed_update_leaves_every_group_as_before(db: laminardb.Connection, emit: str) -> None:
    """An update that raises for a later group of a chunk leaves the earlier
    groups (updated in place) as before the chunk: the failed batch counts
    for none of them."""
    db.create_aggregate("picky", Picky, ["DOUBLE"], "DOUBLE")
    db.execute(SOURCE)
    db.execute(
        "CREATE STREAM w AS SELECT symbol, picky(price) AS p FROM trades "
        f"GROUP BY symbol, tumble(ts, INTERVAL '1000' MILLISECOND) {emit}"
    )
    sub = db.subscribe("w")
    batches = [
        {"symbol": ["A", "B", "C"], "price": [1.0, 2.0, 3.0]},
        {"symbol": ["A", "C", "B"], "price": [10.0, 20.0, -1.0]},  # B raises: A, C first
        {"symbol": ["A", "B", "C"], "price": [100.0, 5.0, 7.0]},
    ]
    for i, b in enumerate(batches):
        db.insert("trades", {**b, "volume": [1, 1, 1], "ts": [3 * i, 3 * i + 1, 3 * i + 2]})
        if i == 1:
            with pytest.raises(laminardb.IngestError) as info:
                db.run_until_idle()
            assert info.value.code == "LDB-3010"
            assert "negative price" in str(info.value)
        else:
            db.run_until_idle()
    _close_all(db)
    rows = _sub_table(sub).to_pylist()
    final = {r["symbol"]: r["p"] for r in rows if r.get("_weight", 1) > 0}
    assert final == {"A": 101.0, "B": 7.0, "C": 10.0}


def test_exception_is_ldb_3010_with_traceback(db: laminardb.Connection) -> None:
    db.create_aggregate("flaky", Flaky, ["DOUBLE"], "DOUBLE")
    db.execute(SOURCE)
    db.execute(
        "CREATE STREAM q AS SELECT symbol, flaky(price) AS s FROM trades "
        "GROUP BY symbol, tumble(ts, INTERVAL '100' MILLISECOND) EMIT ON WINDOW CLOSE"
    )
    sub = db.subscribe("q")
    db.insert("trades", {"symbol": ["a"], "price": [2.0], "volume": [1], "ts": [10]})
    db.run_until_idle()
    Flaky.fail = True
    try:
        db.insert("trades", {"symbol": ["a"], "price": [3.0], "volume": [1], "ts": [20]})
        with pytest.raises(laminardb.IngestError) as info:
            db.run_until_idle()
    finally:
        Flaky.fail = False
    assert info.value.code == "LDB-3010"
    text = str(info.value)
    assert "stream 'q'" in text
    assert "function 'flaky' failed in update: ValueError: risk model diverged" in text
    assert "Traceback" in text
    # The stream goes on.
    db.insert("trades", {"symbol": ["a"], "price": [4.0], "volume": [1], "ts": [300]})
    db.run_until_idle()
    db.source("trades").watermark(1000)
    db.run_until_idle()
    assert _sub_table(sub).column("s").to_pylist() == [4.0, 16.0]


class WrongType(SumSq):
    def finalize(self, state: tuple[float, int]) -> str:  # type: ignore[override]
        return "not a number"


class Raises(SumSq):
    def update(self, state: tuple[float, int], x: pa.Array) -> tuple[float, int]:
        raise ZeroDivisionError("no rows")


def test_wrong_result_type_and_on_error_null(db: laminardb.Connection) -> None:
    db.create_aggregate("wrong", WrongType, ["DOUBLE"], "DOUBLE")
    db.create_aggregate("nulled", Raises, ["DOUBLE"], "DOUBLE", on_error="null")
    db.execute(SOURCE)
    db.execute(
        "CREATE MATERIALIZED VIEW ok AS SELECT symbol, nulled(price) AS n, COUNT(*) AS c "
        "FROM trades GROUP BY symbol"
    )
    db.execute(
        "CREATE STREAM bad AS SELECT symbol, wrong(price) AS w FROM trades "
        "GROUP BY symbol, tumble(ts, INTERVAL '100' MILLISECOND) EMIT ON WINDOW CLOSE"
    )
    db.insert("trades", {"symbol": ["a", "b"], "price": [1.0, 2.0], "volume": [1, 1], "ts": [1, 2]})
    db.source("trades").watermark(500)
    with pytest.raises(laminardb.IngestError) as info:
        db.run_until_idle()
    assert info.value.code == "LDB-3010"
    assert "function 'wrong' failed in finalize" in str(info.value)
    assert "stream 'bad'" in str(info.value)
    rows = db.query("SELECT symbol, n, c FROM ok ORDER BY symbol").to_pylist()
    assert rows == [{"symbol": "a", "n": None, "c": 1}, {"symbol": "b", "n": None, "c": 1}]


def test_reentering_the_database_fails_cleanly(db: laminardb.Connection) -> None:
    """A callback that calls the database raises inside; the batch fails, no deadlock."""

    class Reenter(SumSq):
        def update(self, state: tuple[float, int], x: pa.Array) -> tuple[float, int]:
            db.query("SHOW FUNCTIONS")
            return super().update(state, x)

    db.create_aggregate("reenter", Reenter, ["DOUBLE"], "DOUBLE")
    db.execute(SOURCE)
    db.execute(
        "CREATE MATERIALIZED VIEW m AS SELECT symbol, reenter(price) AS s FROM trades "
        "GROUP BY symbol"
    )
    db.insert("trades", {"symbol": ["a"], "price": [1.0], "volume": [1], "ts": [1]})
    with pytest.raises(laminardb.LaminarError) as info:
        db.run_until_idle()
    assert "function 'reenter' failed in update" in str(info.value)
    assert "called the database from inside its callback" in str(info.value)
    assert db.query("SHOW FUNCTIONS").num_rows == 1  # the database still answers


def test_registration_errors_and_catalog(db: laminardb.Connection) -> None:
    class NoMerge:
        def init(self) -> int:
            return 0

        def update(self, s: int, x: pa.Array) -> int:
            return s

        def finalize(self, s: int) -> int:
            return s

    with pytest.raises(TypeError, match="no merge"):
        db.create_aggregate("nm", NoMerge, ["BIGINT"], "BIGINT")
    with pytest.raises(TypeError, match="no engine type.*1 <= p <= 38"):
        db.create_aggregate("s", SumSq, ["DOUBLE"], "DECIMAL(40, 2)")
    with pytest.raises(ValueError, match="1 or 2 parameters"):
        db.create_aggregate("s", SumSq, [], "DOUBLE")
    with pytest.raises(laminardb.SQLError) as info:
        db.create_aggregate("sum", SumSq, ["DOUBLE"], "DOUBLE")
    assert info.value.code == "LDB-1004"
    _register(db)
    db.execute(SOURCE)
    with pytest.raises(laminardb.SQLError) as info:
        db.execute("CREATE STREAM x AS SELECT symbol FROM trades WHERE sumsq(price) > 1")
    db.execute("CREATE MATERIALIZED VIEW v AS SELECT symbol, price FROM trades")
    with pytest.raises(laminardb.SQLError) as info:  # as for a built-in aggregate
        db.query("SELECT sumsq(price) AS s FROM v")
    assert "aggregates, GROUP BY and HAVING in a SELECT over a view" in str(info.value)
    db.execute("CREATE STREAM y AS SELECT symbol, sumsq(price) AS s FROM trades GROUP BY symbol")
    db.execute(TUMBLE)
    split = {r["role"]: r["value"] for r in db.two_phase("w").to_pylist()}  # states shipped
    assert "__udaf_partial('sumsq', \"price\")" in split["partial"]
    assert "__udaf_merge('geomean', " in split["final"]
    flags = {r["name"]: r["flags"] for r in db.query("SHOW FUNCTIONS").to_pylist()}
    assert flags == {"sumsq": "aggregate, retractable", "geomean": "aggregate"}
    with pytest.raises(laminardb.SQLError) as info:
        db.remove_function("sumsq")
    assert info.value.code == "LDB-1007"
    db.execute("DROP STREAM w")
    db.remove_function("geomean")
    assert [r["name"] for r in db.query("SHOW FUNCTIONS").to_pylist()] == ["sumsq"]

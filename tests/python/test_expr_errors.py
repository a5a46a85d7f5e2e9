"""Bad expressions fail at CREATE STREAM with their code and line:column, and
leave the database as it was: earlier streams keep running on earlier data.

Runtime faults never fail a stream: the faulting row gets NULL (checked here
end to end; test_expr_oracle.py checks each rule against DuckDB)."""

from __future__ import annotations

import pyarrow as pa
import pytest

import laminardb

SOURCE = (
    "CREATE SOURCE t (i INT, b BIGINT, d DOUBLE, s VARCHAR, ts TIMESTAMP, p BOOLEAN);\n"
    "CREATE STREAM ok AS SELECT i, upper(s) AS us FROM t;"
)

#: (select text after "CREATE STREAM bad AS\n", error class, LDB number, line, column, text)
BAD = [
    ("SELECT frobnicate(i) FROM t", laminardb.SQLError, 1101, 2, 8, "unknown function"),
    ("SELECT i,\n  power(d) FROM t", laminardb.SQLError, 1102, 3, 3, "takes 2 arguments, got 1"),
    ("SELECT round(d, 1, 2) FROM t", laminardb.SQLError, 1102, 2, 8, "1 to 2 arguments"),
    ("SELECT nullif(i, 1, 2) FROM t", laminardb.SQLError, 1102, 2, 8, "nullif() takes 2"),
    ("SELECT lower(i) FROM t", laminardb.SchemaError, 2001, 2, 14, "needs VARCHAR"),
    ("SELECT substring(s, d) FROM t", laminardb.SchemaError, 2001, 2, 21, "an integer"),
    ("SELECT starts_with(s, p) FROM t", laminardb.SchemaError, 2001, 2, 23, "got BOOLEAN"),
    ("SELECT date_trunc('hour', s) FROM t", laminardb.SchemaError, 2001, 2, 27, "a TIMESTAMP"),
    ("SELECT ts = b FROM t", laminardb.SchemaError, 2001, 2, 8, "cannot compare"),
    ("SELECT i FROM t\nWHERE s LIKE 5", laminardb.SchemaError, 2001, 3, 14, "pattern"),
    ("SELECT date_trunc('week_of_doom', ts) FROM t", laminardb.SQLError, 1102, 2, 19, "unit"),
    ("SELECT extract(nope FROM ts) FROM t", laminardb.SQLError, 1102, 2, 16, "date part"),
    ("SELECT s ILIKE 'x!' ESCAPE '!' FROM t", laminardb.SQLError, 1102, 2, 16, "must not end"),
    ("SELECT s LIKE 'x' ESCAPE '!!' FROM t", laminardb.SQLError, 1102, 2, 26, "one character"),
    ("SELECT CAST(s AS UUID) FROM t", laminardb.SchemaError, 2002, 2, 18, "not a type"),
    ("SELECT i FROM t WHERE upper(s) = MAX(s)", laminardb.SQLError, 1006, 2, 23, "WHERE"),
    ("SELECT substring(s FROM) FROM t", laminardb.SQLError, 1001, 2, 24, "expression"),
]


def _rows(i: int, s: str) -> pa.Table:
    """One row of ``t``: ``i`` and ``s`` set, the other columns NULL."""
    return pa.table(
        {
            "i": pa.array([i], pa.int32()),
            "b": pa.array([None], pa.int64()),
            "d": pa.array([None], pa.float64()),
            "s": pa.array([s], pa.string()),
            "ts": pa.array([None], pa.timestamp("us")),
            "p": pa.array([None], pa.bool_()),
        }
    )


@pytest.mark.parametrize(("select", "cls", "number", "line", "column", "text"), BAD)
def test_bad_expression_fails_at_create(
    select: str, cls: type, number: int, line: int, column: int, text: str
) -> None:
    with laminardb.open() as db:
        db.execute(SOURCE)
        sub = db.subscribe("ok")
        db.insert("t", _rows(1, "a"))
        db.run_until_idle()
        with pytest.raises(cls) as info:
            db.execute(f"CREATE STREAM bad AS\n{select}")
        error = info.value
        assert error.code == f"LDB-{number}"
        assert (error.line, error.column) == (line, column), str(error)
        assert text in str(error)
        assert f"line {line}, column {column}" in str(error)
        # Nothing was created; the earlier stream still runs, its data intact.
        assert "bad" not in [row["name"] for row in db.query("SHOW STREAMS").to_pylist()]
        db.insert("t", _rows(2, "é"))
        db.run_until_idle()
        rows = [r for batch in iter(lambda: sub.poll(0), None) for r in batch.to_pylist()]
        assert rows == [{"i": 1, "us": "A"}, {"i": 2, "us": "É"}]


def test_runtime_faults_give_null_and_the_stream_goes_on() -> None:
    """Overflow, % 0, an unconvertible CAST, a LIKE pattern ending with its
    escape: NULL for that row, the rest of the batch and later batches flow."""
    with laminardb.open() as db:
        db.execute(
            "CREATE SOURCE t (i INT, b BIGINT, s VARCHAR, pat VARCHAR);"
            "CREATE STREAM w AS SELECT i + 1 AS a, b % i AS m, CAST(s AS INT) AS c,"
            "  s LIKE pat ESCAPE '!' AS l, abs(b) AS ab FROM t"
        )
        sub = db.subscribe("w")
        db.insert(
            "t",
            pa.table(
                {
                    "i": pa.array([2147483647, 0, 5], pa.int32()),
                    "b": pa.array([-(2**63), 7, 12], pa.int64()),
                    "s": ["x", "42", " 7 "],
                    "pat": ["x!", "4%", "%"],
                }
            ),
        )
        db.run_until_idle()
        rows = sub.poll(1).to_pylist()
        assert rows == [
            {"a": None, "m": -2, "c": None, "l": None, "ab": None},
            {"a": 1, "m": None, "c": 42, "l": True, "ab": 7},
            {"a": 6, "m": 2, "c": 7, "l": True, "ab": 12},
        ]

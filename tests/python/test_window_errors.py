"""Bad streaming SQL fails at CREATE with a specific code and line:column.

Every case runs after a valid stream was created and fed: the failure leaves
the database as it was (the earlier stream still runs, nothing it ingested is
lost).
"""

from __future__ import annotations

import pytest

import laminardb

SOURCES = """
CREATE SOURCE t (k VARCHAR, v BIGINT, d DOUBLE, ts BIGINT, tt TIMESTAMP,
                 WATERMARK FOR ts AS ts - INTERVAL '1' SECOND);
CREATE SOURCE nowm (k VARCHAR, ts BIGINT);
CREATE STREAM ok AS SELECT k, COUNT(*) AS n FROM t GROUP BY k EMIT CHANGES;
"""

#: (statement, code, line, column): the position is the culprit's.
CASES = [
    # a window function outside GROUP BY
    (
        "CREATE STREAM x AS SELECT k FROM t\nWHERE tumble(ts, INTERVAL '1' SECOND) > 0",
        "LDB-1006",
        2,
        7,
    ),
    ("CREATE STREAM x AS SELECT hop(ts, 10, 5) FROM t", "LDB-1006", 1, 27),
    # an aggregate in GROUP BY, in WHERE, nested
    (
        "CREATE STREAM x AS SELECT COUNT(*) FROM t\n"
        "GROUP BY SUM(v), tumble(ts, INTERVAL '1' SECOND)",
        "LDB-1006",
        2,
        10,
    ),
    ("CREATE STREAM x AS SELECT k FROM t WHERE COUNT(*) > 1", "LDB-1006", 1, 42),
    ("CREATE STREAM x AS SELECT SUM(COUNT(*)) FROM t GROUP BY k", "LDB-1006", 1, 31),
    # a non-time column in a window
    (
        "CREATE STREAM x AS SELECT COUNT(*) FROM t GROUP BY tumble(k, INTERVAL '1' SECOND)",
        "LDB-2001",
        1,
        59,
    ),
    (
        "CREATE STREAM x AS SELECT COUNT(*) FROM t\n  GROUP BY session(d, INTERVAL '1' SECOND)",
        "LDB-2001",
        2,
        20,
    ),
    ("CREATE STREAM x AS SELECT COUNT(*) FROM t GROUP BY hop(v + 1, 10, 5)", "LDB-1005", 1, 56),
    ("CREATE STREAM x AS SELECT COUNT(*) FROM t GROUP BY tumble(ts, 'soon')", "LDB-2001", 1, 63),
    (
        "CREATE STREAM x AS SELECT COUNT(*) FROM t GROUP BY session(ts, INTERVAL '0' SECOND)",
        "LDB-2001",
        1,
        64,
    ),
    (
        "CREATE STREAM x AS SELECT COUNT(*) FROM t\nGROUP BY tumble(ts, INTERVAL '1' SECOND),"
        " hop(ts, 10, 5)",
        "LDB-1006",
        2,
        43,
    ),
    # EMIT ON WINDOW CLOSE without a watermark, or without a window
    (
        "CREATE STREAM x AS SELECT COUNT(*) FROM nowm\nGROUP BY tumble(ts, INTERVAL '1' SECOND)\n"
        "EMIT ON WINDOW CLOSE",
        "LDB-1006",
        3,
        1,
    ),
    (
        "CREATE STREAM x AS SELECT COUNT(*) FROM nowm GROUP BY tumble(ts, 1000) EMIT FINAL",
        "LDB-1006",
        1,
        72,
    ),
    ("CREATE STREAM x AS SELECT k FROM t EMIT ON WINDOW CLOSE", "LDB-1006", 1, 1),
    # unknown function, mismatched types, ungrouped column
    ("CREATE STREAM x AS SELECT k, frobnicate(v) FROM t", "LDB-1101", 1, 30),
    (
        "CREATE STREAM x AS SELECT COUNT(*) FROM t\nGROUP BY k, tumble(ts, 1000) HAVING k > 1",
        "LDB-2001",
        2,
        37,
    ),
    (
        "CREATE STREAM x AS SELECT k, v, COUNT(*) FROM t GROUP BY k, tumble(ts, 1000)",
        "LDB-1006",
        1,
        30,
    ),
    ("CREATE STREAM x AS SELECT SUM(k) FROM t GROUP BY tumble(ts, 1000)", "LDB-2001", 1, 27),
    # window bounds without a window; DISTINCT beyond COUNT; options
    ("CREATE STREAM x AS SELECT k, window_end FROM t GROUP BY k", "LDB-1006", 1, 30),
    (
        "CREATE STREAM x AS SELECT SUM(DISTINCT v) FROM t GROUP BY tumble(ts, 1000)",
        "LDB-1005",
        1,
        27,
    ),
    # SELECT DISTINCT: named columns, no aggregates, only the window in GROUP BY
    ("CREATE STREAM x AS SELECT DISTINCT * FROM t", "LDB-1005", 1, 36),
    ("CREATE STREAM x AS SELECT DISTINCT k, COUNT(*) FROM t GROUP BY k", "LDB-1005", 1, 39),
    ("CREATE STREAM x AS SELECT DISTINCT k FROM t GROUP BY k", "LDB-1005", 1, 54),
    (
        "CREATE STREAM x AS SELECT COUNT(*) FROM t GROUP BY tumble(ts, 1000)\n"
        "WITH (allowed_lateness = -5)",
        "LDB-6002",
        2,
        26,
    ),
    (
        "CREATE STREAM x AS SELECT COUNT(*) FROM t GROUP BY tumble(ts, 1000)\n"
        "WITH (allowed_lateness = 'late')",
        "LDB-6002",
        2,
        26,
    ),
]


@pytest.mark.parametrize(("sql", "code", "line", "column"), CASES)
def test_bad_streaming_sql_fails_at_create(sql, code, line, column):
    with laminardb.open() as db:
        db.execute(SOURCES)
        sub = db.subscribe("ok")
        db.insert("t", {"k": ["a"], "v": [1], "d": [1.0], "ts": [5], "tt": [None]})
        with pytest.raises(laminardb.LaminarError) as info:
            db.execute(sql)
        got = (info.value.code, info.value.line, info.value.column)
        assert got == (code, line, column), str(info.value)
        assert f"line {line}, column {column}" in str(info.value)
        # Nothing was created, nothing ingested was lost, the stream goes on.
        assert "x" not in db.query("SHOW STREAMS").column("name").to_pylist()
        db.insert("t", {"k": ["a"], "v": [2], "d": [2.0], "ts": [6], "tt": [None]})
        db.run_until_idle()
        rows = sub.to_arrow_table().to_pylist()
        assert rows[-1] == {"k": "a", "n": 2, "_weight": 1}

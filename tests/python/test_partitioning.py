"""Connection.partitioning (laminar_stream_partitioning) from Python: the root
source, event-time column and delay, hash key, and the LDB-1002 error. The C
tests (test_partition.c) cover the tracing through streams; this checks the
binding. Runs without Spark (and in the ASan pass)."""

from __future__ import annotations

import pytest

import laminardb


def test_partitioning_rows(db: laminardb.Connection) -> None:
    db.execute("""
        CREATE SOURCE t (k VARCHAR, g BIGINT, v DOUBLE, ts TIMESTAMP,
                         WATERMARK FOR ts AS ts - INTERVAL '2' SECOND);
        CREATE STREAM by_k AS SELECT k, g, SUM(v) AS s FROM t
          GROUP BY g, k, tumble(ts, INTERVAL '1' MINUTE);
        CREATE STREAM flat AS SELECT k, v * 2 AS w FROM t WHERE v > 0;
    """)
    rows = [tuple(r.values()) for r in db.partitioning("by_k").to_pylist()]
    assert rows == [("source", "t", ""), ("event_time", "ts", "2000"), ("key", "k", ""),
                    ("key", "g", ""), ("partitioning", "key", "")]
    flat = db.partitioning("flat")
    assert flat.schema.names == ["role", "name", "value"]
    assert flat.column("role").to_pylist()[-1] == "partitioning"
    assert flat.column("name").to_pylist()[-1] == "any"
    with pytest.raises(laminardb.SQLError) as info:
        db.partitioning("t")
    assert info.value.code == "LDB-1002"
    assert info.value.object == "t"

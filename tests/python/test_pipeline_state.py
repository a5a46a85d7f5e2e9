"""Observability: ``db.pipeline_state()`` and the per-stream / per-reactor metrics."""

from __future__ import annotations

import pyarrow as pa
import pytest

import laminardb

DDL = (
    "CREATE SOURCE t (k VARCHAR, x BIGINT, ts BIGINT, WATERMARK FOR ts AS ts);"
    "CREATE STREAM w AS SELECT k, COUNT(*) AS n FROM t "
    "GROUP BY k, tumble(ts, INTERVAL '10' MILLISECOND);"
    "CREATE STREAM p AS SELECT k, x FROM t;"
    "CREATE MATERIALIZED VIEW v AS SELECT k, SUM(x) AS sx FROM t GROUP BY k;"
)


def rows(n: int, start: int = 0) -> pa.RecordBatch:
    return pa.record_batch({
        "k": [f"k{i % 7}" for i in range(start, start + n)],
        "x": list(range(start, start + n)),
        "ts": list(range(start, start + n)),
    })


def state(db: laminardb.Connection) -> dict[tuple[str, str], dict]:
    return {(r["kind"], r["name"]): r for r in db.pipeline_state().to_pylist()}


def metrics(db: laminardb.Connection) -> dict[tuple[str, str, str], int]:
    return {(r["kind"], r["name"], r["metric"]): r["value"] for r in db.metrics().to_pylist()}


def test_schema_and_rows():
    with laminardb.open(cores=2) as db:
        db.execute(DDL)
        table = db.pipeline_state()
        assert table.schema.names == ["kind", "name", "state", "input", "watermark_ms",
                                      "queue_depth", "queue_capacity", "partitions"]
        s = state(db)
    assert set(s) == {("runtime", ""), ("source", "t"), ("stream", "w"), ("stream", "p"),
                      ("materialized view", "v"), ("reactor", "0"), ("reactor", "1")}
    assert s[("runtime", "")]["partitions"] == 2
    assert s[("stream", "w")]["partitions"] == 2
    assert s[("stream", "p")]["partitions"] == 1
    assert s[("stream", "w")]["input"] == "t"
    assert s[("source", "t")]["watermark_ms"] is None  # nothing seen yet
    assert s[("stream", "p")]["queue_depth"] is None  # no subscriber


def test_inline_states_follow_the_data():
    with laminardb.open() as db:
        db.execute(DDL)
        sub = db.subscribe("w")
        src = db.source("t")
        s = state(db)
        assert s[("runtime", "")]["state"] == "stopped"
        assert s[("source", "t")]["state"] == "idle"
        assert s[("subscription", "w")]["state"] == "caught_up"
        src.push(rows(100))
        s = state(db)
        assert s[("source", "t")]["state"] == "waiting"
        assert s[("source", "t")]["queue_depth"] == 1
        assert s[("stream", "w")]["state"] == "waiting"
        assert s[("runtime", "")]["queue_depth"] == 1
        db.run_until_idle()
        s = state(db)
        assert s[("source", "t")]["state"] == "idle"
        assert s[("source", "t")]["queue_depth"] == 0
        assert s[("source", "t")]["watermark_ms"] == 99
        assert s[("stream", "w")]["watermark_ms"] == 99
        assert s[("subscription", "w")]["state"] == "lagging"  # closed windows wait
        depth = s[("subscription", "w")]["queue_depth"]
        assert depth >= 1
        while sub.poll(0) is not None:
            pass
        assert state(db)[("subscription", "w")]["state"] == "caught_up"


def test_blocked_and_full():
    """A subscriber that does not read blocks the pipeline; the source queue fills."""
    with laminardb.open(buffer_size=2) as db:
        db.execute(DDL)
        sub = db.subscribe("p")  # never read
        src = db.source("t")
        src.push(rows(5))
        db.run_until_idle()  # one batch for p: its queue of 2 has no headroom now
        src.push(rows(5, 5))
        src.push(rows(5, 10))
        db.run_until_idle()  # cannot take input: the subscriber lacks room
        s = state(db)
        assert s[("subscription", "p")]["state"] == "blocking"
        assert s[("stream", "p")]["state"] == "blocked"
        assert s[("source", "t")]["state"] == "blocked"
        assert s[("source", "t")]["queue_depth"] == 2
        with pytest.raises(laminardb.QueueFull):
            src.push(rows(1, 15))
        assert sub.poll(0) is not None


def test_dropping_subscriber_is_not_blocking():
    with laminardb.open(buffer_size=2) as db:
        db.execute(DDL)
        sub = db.subscribe("p", slow_subscriber="drop")
        src = db.source("t")
        for i in range(4):
            src.push(rows(5, i * 5))
            db.run_until_idle()
        s = state(db)
        assert s[("subscription", "p")]["state"] == "full_dropping"
        assert s[("source", "t")]["state"] == "idle"
        assert sub.poll(0) is not None


def test_threaded_states():
    with laminardb.open(cores=2) as db:
        db.execute(DDL)
        db.start()
        s = state(db)
        assert s[("runtime", "")]["state"] in ("idle", "active")
        assert s[("reactor", "1")]["state"] == "running"
        db.stop()
        assert state(db)[("reactor", "0")]["state"] == "stopped"


@pytest.mark.parametrize("cores", [1, 2])
def test_stream_state_metrics(cores):
    """state_groups / state_bytes grow with the groups held and fall when windows
    close; rows_in / rows_out are summed over the partitions."""
    with laminardb.open(cores=cores) as db:
        db.execute(DDL)
        src = db.source("t")
        sub = db.subscribe("w")
        src.push(rows(5))  # ts 0..4: one window, 5 keys
        db.run_until_idle()
        m = metrics(db)
        assert m[("stream", "w", "state_groups")] == 5
        small = m[("stream", "w", "state_bytes")]
        assert small > 0
        src.push(rows(5, 5))  # ts 5..9: same window, 2 more keys (k5, k6)
        db.run_until_idle()
        m = metrics(db)
        assert m[("stream", "w", "state_groups")] == 7
        assert m[("stream", "w", "state_bytes")] > small
        assert m[("stream", "w", "rows_in")] == 10
        assert m[("stream", "v", "state_bytes")] > 0
        src.watermark(2**63 - 1)
        db.run_until_idle()
        m = metrics(db)
        assert m[("stream", "w", "state_groups")] == 0
        assert m[("stream", "w", "rows_out")] == 7
        assert m[("stream", "w", "partitions")] == cores
        assert sum(m[("reactor", str(i), "rows")] for i in range(cores)) == (10 if cores > 1 else 0)
        assert all(("reactor", str(i), "busy_pct") in m for i in range(cores))
        assert sum(b.num_rows for b in iter(lambda: sub.poll(0), None)) == 7


def test_full_source_queue():
    with laminardb.open(buffer_size=2) as db:
        db.execute(DDL)
        src = db.source("t")
        src.push(rows(1))
        src.push(rows(1, 1))
        s = state(db)
        assert s[("source", "t")]["state"] == "full"
        assert s[("source", "t")]["queue_capacity"] == 2
        db.run_until_idle()
        assert state(db)[("source", "t")]["state"] == "idle"


def test_closed_database():
    db = laminardb.open()
    db.close()
    with pytest.raises(laminardb.LaminarError):
        db.pipeline_state()

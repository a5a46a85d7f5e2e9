"""Ctrl-C (SIGINT) stops a blocked push, watermark or close; cached source handles
follow DROP + CREATE; dict input refuses a fraction in a whole-number column.

The SIGINT cases run in a child interpreter (a push that cannot be interrupted
would hang this one), with a durable database and a sync WAL so that offsets
and a reopen account for every acknowledged push: each child prints one JSON
line of what it saw.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pytest

import laminardb

# Shared by the children: a saturated pipeline. Queues of 2 slots, a stream
# whose subscriber never reads: the reactor blocks on it, the source queue
# fills, and a blocking push would wait forever. `acked` counts the pushes
# that returned (values 0..acked-1), `wait_blocked` waits until the engine
# reports the pipeline blocked and the source queue full.
_PRELUDE = textwrap.dedent(
    """
    import json, os, signal, sys, threading, time
    import laminardb

    def threads():
        return len(os.listdir("/proc/self/task"))

    base_threads = threads()  # before any database
    d = sys.argv[1]
    opts = dict(checkpoint_interval="1 hour", wal_mode="sync", buffer_size=2)
    db = laminardb.open(d, **opts)
    db.execute(
        "CREATE SOURCE t (v BIGINT);"
        "CREATE STREAM s AS SELECT v FROM t;"
        "CREATE MATERIALIZED VIEW tot AS SELECT COUNT(*) AS n, SUM(v) AS s FROM t EMIT CHANGES"
    )
    sub = db.subscribe("s", buffer_size=2)
    db.start()
    src = db.source("t")
    acked = 0

    def states():
        rows = db.pipeline_state().to_pylist()
        return {(r["kind"], r["name"]): r for r in rows}

    deadline = time.monotonic() + 10
    while True:
        try:
            src.try_push({"v": [acked]})
            acked += 1
            continue
        except laminardb.QueueFull:
            pass
        st = states()
        t = st[("source", "t")]
        if t["queue_depth"] == t["queue_capacity"] and st[("runtime", "")]["state"] == "blocked":
            break
        assert time.monotonic() < deadline, st
        time.sleep(0.01)

    def interrupt_after(seconds):
        timer = threading.Timer(seconds, os.kill, (os.getpid(), signal.SIGINT))
        timer.start()
        return timer

    def interrupted(call):
        # call() with a SIGINT 0.2 s in (the process's, as Ctrl-C sends it)
        offset = src.offset
        timer = interrupt_after(0.2)
        t0 = time.monotonic()
        try:
            call()
            result = {"raised": False}
        except KeyboardInterrupt as exc:
            result = {"raised": True, "notes": getattr(exc, "__notes__", [])}
        result["seconds"] = time.monotonic() - t0
        timer.join()
        result["offset_unchanged"] = src.offset == offset
        return result
    """
)


def _run_child(body: str, tmp_path: Path) -> dict[str, object]:
    """Run ``_PRELUDE + body`` in a child over a fresh data directory.

    Returns:
        The JSON object the child printed last.
    """
    script = _PRELUDE + textwrap.dedent(body)
    try:
        done = subprocess.run(
            [sys.executable, "-c", script, str(tmp_path / "db")],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"the child hung (SIGINT did not get through): {exc.stderr!r}")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _reopened_totals(path: Path) -> tuple[int, int, int]:
    """Reopen the child's database: (offset of t, COUNT(*), SUM(v)) after recovery."""
    with laminardb.open(path, checkpoint_interval="1 hour", wal_mode="sync") as db:
        offset = db.source("t").offset
        db.run_until_idle()
        rows = db.query("SELECT n, s FROM tot").to_pylist()
    n = sum(r["n"] for r in rows) if rows else 0
    s = sum(r["s"] for r in rows) if rows else 0
    return offset, n, s


def _acknowledged(acked: int, messages: int) -> tuple[int, int, int]:
    """What recovery must give after pushes of 0..acked-1 and `messages` logged in all."""
    return messages + 1, acked, acked * (acked - 1) // 2


def test_ctrl_c_stops_a_blocked_push(tmp_path: Path) -> None:
    out = _run_child(
        """
        result = interrupted(lambda: src.push({"v": [acked]}))
        # Usable: the reader goes away, the same push goes in.
        sub.close()
        src.push({"v": [acked]})
        acked += 1
        db.stop()
        result["acked"] = acked
        result["view"] = db.query("SELECT n, s FROM tot").to_pylist()
        db.close()
        print(json.dumps(result))
        """,
        tmp_path,
    )
    acked = out["acked"]
    assert out["raised"] is True
    assert out["seconds"] < 2.0
    assert any("was not ingested" in note for note in out["notes"]), out["notes"]
    assert out["offset_unchanged"] is True
    assert [tuple(row.values()) for row in out["view"]] == [_acknowledged(acked, acked)[1:]]
    assert _reopened_totals(tmp_path / "db") == _acknowledged(acked, acked)


def test_ctrl_c_stops_a_blocked_table_push(tmp_path: Path) -> None:
    out = _run_child(
        """
        import pyarrow as pa
        result = interrupted(lambda: src.push(pa.table({"v": [acked, acked + 1]})))
        result["acked"] = acked
        sub.close()  # else stopping waits ~1 s for it
        db.close()
        print(json.dumps(result))
        """,
        tmp_path,
    )
    assert out["raised"] is True
    assert any("0 batch(es) of this input were ingested" in n for n in out["notes"]), out
    assert out["offset_unchanged"] is True
    assert _reopened_totals(tmp_path / "db") == _acknowledged(out["acked"], out["acked"])


def test_ctrl_c_stops_a_blocked_push_batch(tmp_path: Path) -> None:
    out = _run_child(
        """
        import pyarrow as pa
        batches = [pa.record_batch({"v": [acked + i]}) for i in range(2)]
        result = interrupted(lambda: src.push_batch(batches))
        # Usable: the reader goes away, the same batches go in.
        sub.close()
        src.push_batch(batches)
        acked += 2
        result["acked"] = acked
        db.close()
        print(json.dumps(result))
        """,
        tmp_path,
    )
    assert out["raised"] is True
    assert out["seconds"] < 2.0
    assert any("0 of the 2 batch(es) were ingested" in n for n in out["notes"]), out
    assert out["offset_unchanged"] is True
    assert _reopened_totals(tmp_path / "db") == _acknowledged(out["acked"], out["acked"])


def test_ctrl_c_stops_a_blocked_watermark(tmp_path: Path) -> None:
    out = _run_child(
        """
        result = interrupted(lambda: src.watermark(10_000))
        offset = src.offset
        sub.close()
        src.watermark(10_000)
        result["logged_after"] = src.offset - offset
        result["acked"] = acked
        db.close()
        print(json.dumps(result))
        """,
        tmp_path,
    )
    assert out["raised"] is True
    assert out["seconds"] < 2.0
    assert out["offset_unchanged"] is True
    assert out["logged_after"] == 1
    assert _reopened_totals(tmp_path / "db") == _acknowledged(out["acked"], out["acked"] + 1)


def test_ctrl_c_during_close_finishes_the_close(tmp_path: Path) -> None:
    out = _run_child(
        """
        result = {"threads_open": threads()}
        timer = interrupt_after(0.2)
        t0 = time.monotonic()
        try:
            db.close()  # stopping waits ~1 s for the subscriber nobody reads
            result["raised"] = False
        except KeyboardInterrupt:
            result["raised"] = True
        result["seconds"] = time.monotonic() - t0
        timer.join()
        result["closed"] = db.closed
        result["threads_after_close"] = threads()
        db.close()  # a second close is harmless
        result["threads_after_second_close"] = threads()
        result["acked"] = acked
        result["threads_baseline"] = base_threads
        print(json.dumps(result))
        """,
        tmp_path,
    )
    assert out["raised"] is True
    assert out["closed"] is True
    assert out["threads_open"] > out["threads_baseline"]
    assert out["threads_after_close"] == out["threads_baseline"], out
    assert out["threads_after_second_close"] == out["threads_baseline"], out
    assert _reopened_totals(tmp_path / "db") == _acknowledged(out["acked"], out["acked"])


# -- cached handles after DROP + CREATE ----------------------------------------------


def test_insert_after_drop_and_create_uses_the_new_source() -> None:
    with laminardb.open() as db:
        db.execute("CREATE SOURCE t (v BIGINT)")
        db.insert("t", {"v": [1]})
        old = db.source("t")
        db.execute(
            "DROP SOURCE t; CREATE SOURCE t (s VARCHAR);"
            "CREATE MATERIALIZED VIEW m AS SELECT s FROM t"
        )
        db.insert("t", {"s": ["x"]})
        db.insert("t", [{"s": "y"}])
        db.run_until_idle()
        assert sorted(db.query("SELECT s FROM m").column("s").to_pylist()) == ["x", "y"]
        new = db.source("t")
        assert new is not old
        assert not old.closed
        with pytest.raises(laminardb.IngestError) as info:
            old.push({"v": [2]})  # the handle of the dropped source says so
        assert info.value.code == "LDB-3007"
        # Other DDL keeps the cached handle.
        db.execute("CREATE SOURCE u (v BIGINT)")
        assert db.source("t") is new
    assert old.closed
    assert new.closed


def test_insert_after_drop_names_the_missing_source() -> None:
    with laminardb.open() as db:
        db.execute("CREATE SOURCE t (v BIGINT)")
        db.insert("t", {"v": [1]})
        db.execute("DROP SOURCE t")
        with pytest.raises(laminardb.SQLError) as info:
            db.insert("t", {"v": [2]})
        assert info.value.code == "LDB-1002"
        db.execute("CREATE SOURCE t (v BIGINT); CREATE MATERIALIZED VIEW m AS SELECT v FROM t")
        db.insert("t", {"v": [3]})
        db.run_until_idle()
        assert db.query("SELECT v FROM m").column("v").to_pylist() == [3]


def test_drop_create_on_a_durable_database_keeps_inserting(tmp_path: Path) -> None:
    opts = {"checkpoint_interval": "1 hour", "wal_mode": "sync"}
    with laminardb.open(tmp_path, **opts) as db:
        db.execute("CREATE SOURCE t (v BIGINT)")
        db.insert("t", {"v": [1]})
        db.execute("DROP SOURCE t; CREATE SOURCE t (v BIGINT)")
        for v in range(3):
            db.insert("t", {"v": [v]})
        assert db.source("t").offset == 4


# -- fractions into whole-number columns ---------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        {"v": [1, 1.5]},
        [{"v": 1}, {"v": 1.5}],
        {"v": (2, 1.5)},
    ],
    ids=["columns", "rows", "tuple"],
)
def test_a_fraction_into_bigint_is_refused(data: object) -> None:
    # As pyarrow's array conversions (numpy, cast): 1.5 is refused for int64,
    # a whole float is taken (its list conversion alone truncates 1.5 to 1).
    with pytest.raises(pa.ArrowInvalid):
        pa.array([1.5]).cast(pa.int64())
    assert pa.array([2.0]).cast(pa.int64()).to_pylist() == [2]
    with laminardb.open() as db:
        db.execute("CREATE SOURCE t (v BIGINT); CREATE MATERIALIZED VIEW m AS SELECT v FROM t")
        db.insert("t", {"v": [7, 2.0]})
        with pytest.raises(laminardb.IngestError) as info:
            db.insert("t", data)
        err = info.value
        assert isinstance(err, ValueError)
        assert err.code == "LDB-3004"
        assert err.object == "t"
        assert err.column_name == "v"
        assert "1.5" in str(err)
        assert "row 1" in str(err)
        db.run_until_idle()
        assert sorted(db.query("SELECT v FROM m").column("v").to_pylist()) == [2, 7]

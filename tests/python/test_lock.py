"""One owner per data directory, and read-only opens (issue 20, item 1).

A durable database holds its directory until ``close()``: a second open in the
same process or another one raises ``StorageError`` LDB-5003 naming the
directory and the holder's pid; closing it, or killing its process, frees it.
Two processes racing to push into one directory lose no acknowledged row.
``read_only=True`` opens share a directory, answer queries, refuse writes with
LDB-5004 and change no file.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import laminardb

SETTINGS = {"checkpoint_interval": "1 hour", "wal_mode": "sync"}
DDL = (
    "CREATE SOURCE t (v BIGINT);"
    "CREATE MATERIALIZED VIEW tot AS SELECT COUNT(*) AS n, SUM(v) AS s FROM t EMIT CHANGES"
)

#: A child process: wait for the start file, open, push ``count`` one-row sync
#: batches from ``first`` on, close; print what happened as JSON.
RACER = """
import json, os, sys, time
import laminardb
data, go, first, count = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
while not os.path.exists(go):
    time.sleep(0.001)
try:
    db = laminardb.open(data, checkpoint_interval="1 hour", wal_mode="sync")
except laminardb.LaminarError as e:
    print(json.dumps({"opened": False, "code": e.code, "message": str(e)}))
    sys.exit(0)
src = db.source("t")
acked = 0
for v in range(first, first + count):
    src.push({"v": [v]})
    acked += 1
db.close()
print(json.dumps({"opened": True, "acked": acked}))
"""

#: A child process that opens, pushes 10 rows, says so and waits to be killed.
HOLDER = """
import sys, time
import laminardb
db = laminardb.open(sys.argv[1], checkpoint_interval="1 hour", wal_mode="sync")
src = db.source("t")
for v in range(1, 11):
    src.push({"v": [v]})
print("ready", flush=True)
time.sleep(600)
"""


def _make_db(path: Path) -> None:
    with laminardb.open(path, **SETTINGS) as db:
        db.execute(DDL)


def _totals(db: laminardb.Connection) -> dict[str, int]:
    db.run_until_idle()
    (row,) = db.query("SELECT n, s FROM tot").to_pylist()
    return row


def _files(path: Path) -> dict[str, tuple[int, int, bytes]]:
    """Every file under path with its size, mtime and contents."""
    return {
        str(p.relative_to(path)): (p.stat().st_size, p.stat().st_mtime_ns, p.read_bytes())
        for p in sorted(path.rglob("*"))
        if p.is_file()
    }


def test_second_open_in_this_process_is_refused(data_dir: Path) -> None:
    _make_db(data_dir)
    db = laminardb.open(data_dir, **SETTINGS)
    for kwargs in (SETTINGS, {"read_only": True}):
        with pytest.raises(laminardb.StorageError) as e:
            laminardb.open(data_dir, **kwargs)
        assert e.value.code == "LDB-5003"
        assert str(data_dir) in str(e.value)
        assert f"pid {os.getpid()}, this process" in str(e.value)
    db.insert("t", {"v": [1, 2, 3]})  # the holder is unharmed
    db.close()
    with laminardb.open(data_dir, **SETTINGS) as again:  # closed: free again
        assert _totals(again) == {"n": 3, "s": 6}


def test_two_processes_racing_lose_no_acknowledged_row(data_dir: Path, tmp_path: Path) -> None:
    _make_db(data_dir)
    go = tmp_path / "go"
    children = [
        subprocess.Popen(  # noqa: S603 -- our own interpreter and script
            [sys.executable, "-c", RACER, str(data_dir), str(go), str(first), "300"],
            stdout=subprocess.PIPE,
            text=True,
        )
        for first in (1, 1001)
    ]
    go.touch()
    reports = []
    for child in children:
        out, _ = child.communicate(timeout=120)
        assert child.returncode == 0
        reports.append(json.loads(out))
    acked = sum(r["acked"] for r in reports if r["opened"])
    for r in reports:
        if not r["opened"]:
            assert r["code"] == "LDB-5003"
            assert any(f"pid {c.pid}" in r["message"] for c in children)
    with laminardb.open(data_dir, **SETTINGS) as db:
        got = _totals(db)["n"]
    print(f"race: reports={reports} acked={acked} recovered={got} lost={acked - got}")
    assert acked >= 300
    assert got == acked


def test_a_killed_holder_releases_the_directory(data_dir: Path) -> None:
    _make_db(data_dir)
    child = subprocess.Popen(  # noqa: S603 -- our own interpreter and script
        [sys.executable, "-c", HOLDER, str(data_dir)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
        with pytest.raises(laminardb.StorageError) as e:
            laminardb.open(data_dir, **SETTINGS)
        assert e.value.code == "LDB-5003"
        assert f"pid {child.pid})" in str(e.value)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=60)
    assert child.returncode == -signal.SIGKILL
    with laminardb.open(data_dir, **SETTINGS) as db:
        assert _totals(db) == {"n": 10, "s": 55}


def test_read_only_opens_share_and_cannot_write(data_dir: Path) -> None:
    _make_db(data_dir)
    with laminardb.open(data_dir, **SETTINGS) as db:
        db.insert("t", {"v": [1, 2, 3, 4]})
        db.run_until_idle()
        db.checkpoint()
        db.insert("t", {"v": [5, 6]})  # in the WAL only
    before = _files(data_dir)
    time.sleep(0.01)  # a rewrite would show in the mtimes
    r1 = laminardb.open(data_dir, read_only=True)
    r2 = laminardb.open(data_dir, read_only=True, **SETTINGS)
    assert _totals(r1) == _totals(r2) == {"n": 6, "s": 21}
    with pytest.raises(laminardb.StorageError) as e:
        laminardb.open(data_dir, **SETTINGS)
    assert e.value.code == "LDB-5003"
    assert "read-only" in str(e.value)
    writes = [
        lambda: r1.execute("CREATE SOURCE u (v BIGINT)"),
        lambda: r1.execute("DROP MATERIALIZED VIEW tot"),
        lambda: r1.insert("t", {"v": [7]}),
        lambda: r1.source("t"),
        r1.checkpoint,
    ]
    for write in writes:
        with pytest.raises(laminardb.StorageError) as e:
            write()
        assert e.value.code == "LDB-5004"
    r1.execute(DDL)  # the stored DDL again: a no-op
    assert _totals(r1) == {"n": 6, "s": 21}
    r1.close()
    r2.close()
    assert _files(data_dir) == before
    with laminardb.open(data_dir, **SETTINGS) as db:
        assert _totals(db) == {"n": 6, "s": 21}


def test_read_only_needs_an_existing_directory(tmp_path: Path) -> None:
    with pytest.raises(laminardb.StorageError) as e:
        laminardb.open(tmp_path / "none", read_only=True)
    assert e.value.code == "LDB-5001"
    assert not (tmp_path / "none").exists()
    with pytest.raises(laminardb.ConfigError) as c:
        laminardb.open(read_only=True)
    assert c.value.code == "LDB-6003"

"""Python connector sinks (issue 6): the two-phase protocol as the engine drives
it, the Parquet sink across restarts and kill -9 (compared with DuckDB's batch
answer), and connector failures surfacing as LDB-5001."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_durability import DDL, expected, finish_from_offset, make_batches

import laminardb
import laminardb.sinks
from laminardb.sinks import ParquetSink

SETTINGS = {"checkpoint_interval": "1 hour", "wal_mode": "sync"}


class Recorder:
    """A connector that records the calls it gets."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []
        self.fail: str | None = None

    def _note(self, step: str, value: int) -> None:
        self.calls.append((step, value))
        if self.fail == step:
            raise RuntimeError(f"{step} failed on purpose")

    def begin_epoch(self, epoch: int) -> None:
        self._note("begin", epoch)

    def write(self, batch: pa.RecordBatch) -> None:
        self._note("write", batch.num_rows)

    def pre_commit(self, epoch: int) -> None:
        self._note("pre_commit", epoch)

    def commit(self, epoch: int) -> None:
        self._note("commit", epoch)

    def rollback(self, epoch: int) -> None:
        self._note("rollback", epoch)

    def recover(self, checkpointed_epoch: int) -> None:
        self._note("recover", checkpointed_epoch)


def parquet_rows(path: Path) -> list[tuple[str, int, float, int]]:
    rows = []
    for part in ParquetSink(path).parts():
        for r in pq.read_table(part).to_pylist():
            vwap = round(r["vwap"], 9) if r["vwap"] is not None else None
            rows.append((r["symbol"], r["window_start"], vwap, r["n"]))
    return rows


def test_protocol_order(tmp_path: Path) -> None:
    rec = Recorder()
    with laminardb.open(tmp_path, **SETTINGS) as db:
        db.execute(DDL)
        db.add_sink("rec", "vwap", rec)
        src = db.source("trades")
        for batch in make_batches(1, nbatches=4):
            src.push(batch)
        src.watermark(2**63 - 1)
        db.run_until_idle()
        db.checkpoint()
        db.checkpoint()  # an empty epoch
    steps = [step for step, _ in rec.calls]
    assert rec.calls[0] == ("recover", 0)
    assert rec.calls[1] == ("begin", 1)
    assert set(steps[2 : steps.index("pre_commit")]) == {"write"}
    tail = [c for c in rec.calls if c[0] != "write"]
    assert tail[2:] == [
        ("pre_commit", 1), ("begin", 2), ("commit", 1),
        ("pre_commit", 2), ("begin", 3), ("commit", 2),
        ("rollback", 3),  # closed with epoch 3 open
    ]


def test_parquet_sink_across_a_restart(tmp_path: Path) -> None:
    batches = make_batches(5)
    out = tmp_path / "pq"
    with laminardb.open(tmp_path / "db", **SETTINGS) as db:
        db.execute(DDL)
        db.add_sink("pq", "vwap", ParquetSink(out))
        src = db.source("trades")
        for i, batch in enumerate(batches[:17]):
            src.push(batch)
            db.run_until_idle()
            if i % 5 == 4:
                db.checkpoint()
    # Rows after the last checkpoint are staged or unwritten; the reopen
    # settles them and the WAL replay produces them again, once.
    sinks = {"pq": ("vwap", ParquetSink(out))}
    with laminardb.open(tmp_path / "db", sinks=sinks, **SETTINGS) as db:
        finish_from_offset(db, batches)
    rows = parquet_rows(out)
    assert len(rows) == len(set(rows))
    assert set(rows) == expected(batches)


@pytest.mark.parametrize("cores", [1, 2])
def test_parquet_sink_on_started_reactors(tmp_path: Path, cores: int) -> None:
    """With the runtime started, a checkpoint's barrier closes the epoch on
    the reactor that writes to the sink (pre_commit runs there, taking the
    GIL while db.checkpoint() waits), then the caller publishes it."""
    batches = make_batches(6, nbatches=12)
    out = tmp_path / "pq"
    with laminardb.open(tmp_path / "db", cores=cores, **SETTINGS) as db:
        db.execute(DDL)
        db.add_sink("pq", "vwap", ParquetSink(out))
        db.start()
        src = db.source("trades")
        for batch in batches:
            src.push(batch)
            db.checkpoint()
        src.watermark(2**63 - 1)
        db.stop()
        db.checkpoint()
    rows = parquet_rows(out)
    assert len(rows) == len(set(rows))
    assert set(rows) == expected(batches)


def test_connector_failures_are_reported(tmp_path: Path) -> None:
    with laminardb.open(tmp_path, **SETTINGS) as db:
        db.execute(DDL)
        bad = Recorder()
        bad.fail = "recover"
        with pytest.raises(laminardb.StorageError) as e:
            db.add_sink("s", "vwap", bad)
        assert e.value.code == "LDB-5001"
        assert "'s'" in str(e.value)
        assert "recover failed on purpose" in str(laminardb.sinks.last_error())
        rec = Recorder()
        db.add_sink("s", "vwap", rec)  # the name was not taken by the failure
        with pytest.raises(laminardb.SQLError) as e:
            db.add_sink("s", "vwap", Recorder())
        assert e.value.code == "LDB-1004"
        with pytest.raises(laminardb.SQLError) as e:
            db.add_sink("t", "nope", Recorder())
        assert e.value.code == "LDB-1002"
        rec.fail = "commit"
        with pytest.raises(laminardb.StorageError):
            db.checkpoint()
        rec.fail = None
        db.checkpoint()  # publishes what the failed one did not
        commits = [v for step, v in rec.calls if step == "commit"]
        assert commits[-2:] == [1, 2]
        db.execute("DROP SINK s")
    with laminardb.open() as db:
        db.execute(DDL)
        with pytest.raises(laminardb.ConfigError) as e:
            db.add_sink("s", "vwap", Recorder())
    assert e.value.code == "LDB-6003"


CHILD = textwrap.dedent(
    """
    import sys
    import time
    import laminardb
    from laminardb.sinks import ParquetSink
    from test_durability import DDL, make_batches

    root, out = sys.argv[1], sys.argv[2]
    settings = {"checkpoint_interval": "1 hour", "wal_mode": "sync"}
    sink = ParquetSink(out)
    fresh = not (__import__("pathlib").Path(root) / "catalog.sql").exists()
    db = laminardb.open(root, sinks={} if fresh else {"pq": ("vwap", sink)}, **settings)
    if fresh:
        db.execute(DDL)
        db.add_sink("pq", "vwap", sink)
    src = db.source("trades")
    batches = make_batches(9)
    for i in range(src.offset - 1, len(batches)):
        src.push(batches[i])
        db.run_until_idle()
        if i % 4 == 3:
            db.checkpoint()
        time.sleep(0.03)  # a run lasts > 0.9 s: every kill lands mid-run
    src.watermark(2**63 - 1)
    db.run_until_idle()
    db.checkpoint()
    db.close()
    print("done")
    """
)


def test_parquet_sink_survives_kill_9(tmp_path: Path) -> None:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).parent))
    root, out = tmp_path / "db", tmp_path / "pq"
    rng = np.random.default_rng(int(os.environ.get("LAMINAR_TEST_SEED", "11")))
    kills = 0
    for _ in range(40):
        proc = subprocess.Popen(
            [sys.executable, str(script), str(root), str(out)], env=env, stdout=subprocess.PIPE
        )
        if kills < 8:
            # Shorter than any run (imports plus 30 batches at >= 30 ms each),
            # so every kill lands mid-run: during imports, recovery or work.
            time.sleep(float(rng.uniform(0.1, 0.9)))
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                kills += 1
                continue
        stdout, _ = proc.communicate(timeout=120)
        assert proc.returncode == 0
        assert b"done" in stdout
        break
    assert kills == 8
    rows = parquet_rows(out)
    assert len(rows) == len(set(rows)), "a window was published twice"
    assert set(rows) == expected(make_batches(9))

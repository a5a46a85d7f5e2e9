"""Checkpoints taken while rows keep arriving (docs/DURABILITY.md, copy-on-write
windows): the reactor runs and takes pushes while another thread checkpoints
back to back, so windows frozen by one checkpoint take rows while it is being
encoded. The process then stops without a last checkpoint, a restart restores
the newest one and replays the WAL after it, and the published output must be
DuckDB's batch answer over all rows, each window once: a checkpoint holding a
row from after its barrier would count it twice after the replay."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from test_durability import (
    DDL,
    committed,
    expected,
    finish_from_offset,
    make_batches,
    sink_sql,
)

import laminardb

OPTIONS = {"checkpoint_interval": "1 hour", "wal_mode": "sync"}


def reopen_and_finish(root: Path, batches: list[pa.RecordBatch]) -> int:
    """Reopen (newest checkpoint + WAL replay), push the batches from the
    source's offset on, close every window, and check the published rows
    against DuckDB's answer, each once. Returns the batches the restart found."""
    with laminardb.open(root, **OPTIONS) as db:
        resume = finish_from_offset(db, batches)
    rows = committed(root)
    assert len(rows) == len(set(rows)), "a window was published twice"
    assert set(rows) == expected(batches)
    return resume


@pytest.mark.parametrize("seed", [11, 12])
def test_checkpoints_while_rows_arrive_restore_the_barrier_state(
    tmp_path: Path, seed: int
) -> None:
    batches = make_batches(seed, nbatches=40)
    stop_at = int(np.random.default_rng(seed).integers(20, 35))
    root = tmp_path / "db"
    taken = 0
    with laminardb.open(root, **OPTIONS) as db:
        db.execute(DDL)
        db.execute(sink_sql(root))
        src = db.source("trades")
        db.start()
        done = threading.Event()

        def checkpoints() -> None:
            nonlocal taken
            while not done.is_set():
                db.checkpoint()
                taken += 1

        t = threading.Thread(target=checkpoints)
        t.start()
        try:
            for batch in batches[:stop_at]:
                src.push(batch)
        finally:
            done.set()
            t.join()
        db.stop()
    assert taken > 0
    assert reopen_and_finish(root, batches) == stop_at


def test_repeated_checkpoints_without_change_restore_the_same_state(tmp_path: Path) -> None:
    batches = make_batches(21, nbatches=20)
    root = tmp_path / "db"
    with laminardb.open(root, **OPTIONS) as db:
        db.execute(DDL)
        db.execute(sink_sql(root))
        src = db.source("trades")
        for batch in batches[:12]:
            src.push(batch)
        db.run_until_idle()
        for _ in range(4):
            db.checkpoint()
        files = sorted((root / "checkpoints").glob("ckpt-*.bin"))
        assert len({f.stat().st_size for f in files}) == 1
    assert reopen_and_finish(root, batches) == 12

"""Checkpoints taken while rows keep arriving (docs/DURABILITY.md, copy-on-write
windows, sessions and views): the reactor runs and takes pushes while another thread checkpoints
back to back, so windows frozen by one checkpoint take rows while it is being
encoded. The process then stops without a last checkpoint, a restart restores
the newest one and replays the WAL after it, and the published output must be
DuckDB's batch answer over all rows, each window once: a checkpoint holding a
row from after its barrier would count it twice after the replay."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import duckdb
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


class BackToBack:
    """Checkpoints back to back on a thread of its own from construction until
    stop(); at least one whatever the timing (an in-band barrier completes
    only when every reactor has passed it, which a loaded machine delays)."""

    def __init__(self, db: laminardb.Connection) -> None:
        self._db = db
        self._done = threading.Event()
        self.taken = 0
        self._thread = threading.Thread(target=self._run)
        self._thread.start()

    def _run(self) -> None:
        while True:
            self._db.checkpoint()
            self.taken += 1
            if self._done.is_set():
                return

    def stop(self) -> None:
        self._done.set()

    def join(self) -> None:
        self._thread.join()


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
    with laminardb.open(root, **OPTIONS) as db:
        db.execute(DDL)
        db.execute(sink_sql(root))
        src = db.source("trades")
        db.start()
        ckpt = BackToBack(db)
        try:
            for batch in batches[:stop_at]:
                src.push(batch)
        finally:
            ckpt.stop()
            ckpt.join()
        db.stop()
    assert ckpt.taken > 0
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


# Session windows and a materialized view are copy-on-write too: their whole
# state is held by the checkpoint's stall and copied by the reactor before its
# first change while the checkpoint is being encoded.
SESSION_VIEW_DDL = """
CREATE SOURCE trades (symbol VARCHAR NOT NULL, price DOUBLE, volume BIGINT, ts BIGINT,
                      WATERMARK FOR ts AS ts - INTERVAL '50' MILLISECOND);
CREATE STREAM bursts AS
  SELECT symbol, window_start, window_end, COUNT(*) AS n, SUM(volume) AS v
  FROM trades GROUP BY symbol, session(ts, INTERVAL '10' MILLISECOND);
CREATE MATERIALIZED VIEW totals AS
  SELECT symbol, COUNT(*) AS n, SUM(volume) AS v, MAX(price) AS hi
  FROM trades GROUP BY symbol;
"""
GAP_MS = 10


def expected_sessions(batches: list[pa.RecordBatch]) -> set[tuple[str, int, int, int, int]]:
    """DuckDB's sessions: per symbol, a row less than the gap after the one
    before it (by time) joins its session, [first, last + gap). Rows of equal
    time are ordered by a row id numbered once, so both windows see them in
    the same order (DuckDB 2.0.0 ordered such ties differently for LAG and
    the running SUM, which put a session's first row into the one before)."""
    trades_tbl = pa.Table.from_batches(batches)  # noqa: F841 -- read by DuckDB by name
    rows = duckdb.sql(
        f"""
        WITH r AS (SELECT *, row_number() OVER () AS rid FROM trades_tbl),
        o AS (
          SELECT *, CASE WHEN ts - LAG(ts) OVER (PARTITION BY symbol ORDER BY ts, rid)
                              < {GAP_MS}
                    THEN 0 ELSE 1 END AS first
          FROM r),
        s AS (
          SELECT *, SUM(first) OVER (PARTITION BY symbol ORDER BY ts, rid
                                     ROWS UNBOUNDED PRECEDING) AS sid
          FROM o)
        SELECT symbol, MIN(ts), MAX(ts) + {GAP_MS}, COUNT(*), SUM(volume)
        FROM s GROUP BY symbol, sid
        """
    ).fetchall()
    return {(s, a, b, n, int(v) if v is not None else None) for s, a, b, n, v in rows}


def expected_totals(batches: list[pa.RecordBatch]) -> set[tuple[str, int, int, float]]:
    trades_tbl = pa.Table.from_batches(batches)  # noqa: F841 -- read by DuckDB by name
    rows = duckdb.sql(
        "SELECT symbol, COUNT(*), SUM(volume), MAX(price) FROM trades_tbl GROUP BY symbol"
    ).fetchall()
    return {(s, n, int(v), hi) for s, n, v, hi in rows}


def committed_sessions(root: Path) -> list[tuple[str, int, int, int, int]]:
    out = []
    for part in sorted((root.parent / "bursts").glob("part-*.jsonl")):
        for line in part.read_text().splitlines():
            r = json.loads(line)
            out.append((r["symbol"], r["window_start"], r["window_end"], r["n"], r["v"]))
    return out


def many_key_batches(seed: int, nbatches: int = 40, rows: int = 4000) -> list[pa.RecordBatch]:
    """make_batches' trades over 3,000 symbols: state big enough that the
    reactor takes rows while a checkpoint is still encoding it."""
    rng = np.random.default_rng(seed)
    out = []
    for b in make_batches(seed, nbatches=nbatches, rows=rows):
        symbols = pa.array([f"S{k}" for k in rng.integers(0, 3000, rows)])
        out.append(b.set_column(0, "symbol", symbols))
    return out


@pytest.mark.parametrize("seed", [31, 32])
def test_sessions_and_views_checkpointed_while_rows_arrive(tmp_path: Path, seed: int) -> None:
    batches = many_key_batches(seed)
    stop_at = int(np.random.default_rng(seed).integers(20, 35))
    root = tmp_path / "db"
    sink = (
        f"CREATE SINK bursts_out FROM bursts INTO FILE (path = '{root.parent / 'bursts'}',"
        " format = 'jsonl')"
    )
    with laminardb.open(root, **OPTIONS) as db:
        db.execute(SESSION_VIEW_DDL)
        db.execute(sink)
        src = db.source("trades")
        db.start()
        ckpt = BackToBack(db)
        try:
            for batch in batches[: stop_at - 8]:
                src.push(batch)
        finally:
            ckpt.stop()
        # The reactor still works through the batches queued while the last
        # checkpoints encode; more batches go to the WAL only.
        for batch in batches[stop_at - 8 : stop_at]:
            src.push(batch)
        ckpt.join()
        db.stop()
    assert ckpt.taken > 0
    with laminardb.open(root, **OPTIONS) as db:
        assert finish_from_offset(db, batches) == stop_at
        totals = db.query("SELECT symbol, n, v, hi FROM totals").to_pylist()
    # A checkpoint holding a row from after its barrier would count it twice
    # after the WAL replay; one missing a row from before would lose it.
    assert {(r["symbol"], r["n"], r["v"], r["hi"]) for r in totals} == expected_totals(batches)
    rows = committed_sessions(root)
    assert len(rows) == len(set(rows)), "a session was published twice"
    assert set(rows) == expected_sessions(batches)


BIG_DDL = """
CREATE SOURCE trades (symbol VARCHAR NOT NULL, price DOUBLE, volume BIGINT, ts BIGINT,
                      WATERMARK FOR ts AS ts - INTERVAL '50' MILLISECOND);
CREATE STREAM big AS
  SELECT symbol, window_start, COUNT(*) AS n, SUM(volume) AS v, MAX(price) AS hi
  FROM trades GROUP BY symbol, tumble(ts, INTERVAL '1' HOUR);
"""


def test_big_window_copied_by_blocks_while_rows_arrive(tmp_path: Path) -> None:
    """One window of ~25,000 groups of numeric aggregates (big enough to be
    copied by blocks of groups) checkpointed back to back while rows arrive;
    after a restart each group is published once, as DuckDB counts. Timing
    decides how often the reactor meets a frozen window here: the C tests
    (test_op_window frozen_copied_by_blocks) place that deterministically."""
    rng = np.random.default_rng(41)
    batches = []
    for b in make_batches(41, nbatches=40, rows=4000):
        symbols = pa.array([f"S{k}" for k in rng.integers(0, 30000, 4000)])
        batches.append(b.set_column(0, "symbol", symbols))
    root = tmp_path / "db"
    sink = (
        f"CREATE SINK big_out FROM big INTO FILE (path = '{root.parent / 'big'}', format = 'jsonl')"
    )
    with laminardb.open(root, **OPTIONS) as db:
        db.execute(BIG_DDL)
        db.execute(sink)
        src = db.source("trades")
        db.start()
        ckpt = BackToBack(db)
        try:
            for batch in batches[:24]:
                src.push(batch)
        finally:
            ckpt.stop()
        for batch in batches[24:30]:
            src.push(batch)
        ckpt.join()
        db.stop()
    assert ckpt.taken > 0
    with laminardb.open(root, **OPTIONS) as db:
        assert finish_from_offset(db, batches) == 30
    rows = []
    for part in sorted((root.parent / "big").glob("part-*.jsonl")):
        for line in part.read_text().splitlines():
            r = json.loads(line)
            rows.append((r["symbol"], r["n"], r["v"], r["hi"]))
    assert len(rows) == len({r[0] for r in rows}), "a group was published twice"
    trades_tbl = pa.Table.from_batches(batches)  # noqa: F841 -- read by DuckDB by name
    want = duckdb.sql(
        "SELECT symbol, COUNT(*), SUM(volume), MAX(price) FROM trades_tbl GROUP BY symbol"
    ).fetchall()
    assert len(want) > 20000
    assert set(rows) == {(s, n, int(v) if v is not None else None, hi) for s, n, v, hi in want}

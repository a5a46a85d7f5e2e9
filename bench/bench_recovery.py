"""Recovery time of a durable database (issue 6): open windows holding many
groups are checkpointed, more input goes only to the WAL, the database is
closed, and ``laminardb.open`` on the directory is timed: catalog, checkpoint
load and restore, WAL replay. Prints the checkpoint and WAL sizes, the time to
take the checkpoint, and the recovery time.

    .venv/bin/python bench/bench_recovery.py --groups 4000000 --wal-rows 4000000
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

import laminardb

DDL = """
CREATE SOURCE t (k VARCHAR NOT NULL, v DOUBLE, ts BIGINT,
                 WATERMARK FOR ts AS ts - INTERVAL '1' SECOND);
CREATE STREAM s AS SELECT k, COUNT(*) AS n, SUM(v) AS total, MIN(v) AS lo, MAX(v) AS hi
  FROM t GROUP BY k, tumble(ts, INTERVAL '1' DAY);
"""


def batches(first: int, count: int, distinct: int, size: int) -> list[pa.RecordBatch]:
    """Rows first..first+count with keys drawn from `distinct` names; all in one
    day, so no window closes and every group stays in state."""
    out = []
    rng = np.random.default_rng(first)
    for start in range(first, first + count, size):
        n = min(size, first + count - start)
        ids = np.arange(start, start + n) % distinct
        keys = pa.array(np.char.add("key-", ids.astype(str)))
        out.append(
            pa.record_batch(
                {
                    "k": keys,
                    "v": pa.array(rng.random(n)),
                    "ts": pa.array(np.full(n, 1_000, dtype=np.int64)),
                }
            )
        )
    return out


def dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", type=int, default=2_000_000, help="groups in the checkpoint")
    ap.add_argument("--wal-rows", type=int, default=2_000_000, help="rows logged after it")
    ap.add_argument("--dir", default=None, help="parent directory (default: a temp dir)")
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(dir=args.dir, prefix="lm_recovery_"))
    settings = {"checkpoint_interval": "1 hour", "wal_mode": "async"}
    try:
        with laminardb.open(root, **settings) as db:
            db.execute(DDL)
            src = db.source("t")
            for b in batches(0, args.groups, args.groups, 65536):
                src.push(b)
                db.run_until_idle()
            t0 = time.perf_counter()
            db.checkpoint()
            ckpt_s = time.perf_counter() - t0
            for b in batches(args.groups, args.wal_rows, args.groups, 65536):
                src.push(b)
            src.close()
        ckpt = dir_bytes(root / "checkpoints")
        wal = dir_bytes(root / "wal")
        t0 = time.perf_counter()
        with laminardb.open(root, **settings) as db:
            recovery_s = time.perf_counter() - t0
            offset = db.source("t").offset
        expected = -(-args.groups // 65536) + -(-args.wal_rows // 65536) + 1
        print(
            f"RESULT recovery groups={args.groups} wal_rows={args.wal_rows} "
            f"checkpoint={ckpt / 1e6:.0f} MB wal={wal / 1e6:.0f} MB (files, preallocation "
            f"included) take_checkpoint={ckpt_s:.2f} s recovery={recovery_s:.2f} s "
            f"offset={offset} ({'ok' if offset == expected else f'expected {expected}'})"
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()

"""Durability through the Python package (issue 6): WAL, checkpoints, recovery,
exactly-once file sinks, source offsets, and the errors of bad settings and
unrecoverable state. Results are checked against DuckDB over the same rows."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import laminardb

DDL = """
CREATE SOURCE trades (symbol VARCHAR NOT NULL, price DOUBLE, volume BIGINT, ts BIGINT,
                      WATERMARK FOR ts AS ts - INTERVAL '50' MILLISECOND);
CREATE STREAM vwap AS
  SELECT symbol, window_start, SUM(price * volume) / SUM(volume) AS vwap, COUNT(*) AS n
  FROM trades GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND);
"""


def sink_dir(root: Path) -> Path:
    """Where the file sink of the database in ``root`` writes: beside it (a
    file sink inside the data directory is refused)."""
    return root.with_name(f"{root.name}-out")


def sink_sql(root: Path) -> str:
    return f"CREATE SINK out FROM vwap INTO FILE (path = '{sink_dir(root)}', format = 'jsonl')"


def make_batches(seed: int, nbatches: int = 30, rows: int = 200) -> list[pa.RecordBatch]:
    """Seeded trades: many symbols, NULL prices and volumes, disorder inside the
    watermark delay, time moving forward across batches."""
    rng = np.random.default_rng(seed)
    batches = []
    t = 0
    for _ in range(nbatches):
        ts = t + np.sort(rng.integers(0, 300, rows)) - rng.integers(0, 40, rows)
        t += 300
        price = rng.uniform(1, 100, rows).round(2)
        volume = rng.integers(1, 1000, rows)
        batches.append(
            pa.record_batch(
                {
                    "symbol": pa.array([f"S{k}" for k in rng.integers(0, 12, rows)]),
                    "price": pa.array(price, mask=rng.random(rows) < 0.05),
                    "volume": pa.array(volume, mask=rng.random(rows) < 0.05),
                    "ts": pa.array(ts + 1_000, pa.int64()),
                }
            )
        )
    return batches


def expected(batches: list[pa.RecordBatch]) -> set[tuple[str, int, float, int]]:
    """DuckDB's batch answer for the stream (VWAP rounded for comparison)."""
    trades_tbl = pa.Table.from_batches(batches)  # noqa: F841 -- read by DuckDB by name
    rows = duckdb.sql(
        "SELECT symbol, ts - ts % 1000 AS window_start,"
        " SUM(price * volume) / SUM(volume) AS vwap, COUNT(*) AS n"
        " FROM trades_tbl GROUP BY ALL"
    ).fetchall()
    return {(s, w, round(v, 9) if v is not None else None, n) for s, w, v, n in rows}


def committed(root: Path) -> list[tuple[str, int, float, int]]:
    """Every row the sink published, from its part files in epoch order."""
    out = []
    for part in sorted(sink_dir(root).glob("part-*.jsonl")):
        for line in part.read_text().splitlines():
            r = json.loads(line)
            vwap = round(r["vwap"], 9) if r["vwap"] is not None else None
            out.append((r["symbol"], r["window_start"], vwap, r["n"]))
    return out


def finish_from_offset(db: laminardb.Connection, batches: list[pa.RecordBatch]) -> int:
    """After a restart: push the batches from the source's offset on, close
    every window and checkpoint (publishing everything). Returns where it
    resumed."""
    src = db.source("trades")
    resume = src.offset - 1
    for batch in batches[resume:]:
        src.push(batch)
        db.run_until_idle()
    src.watermark(2**63 - 1)
    db.run_until_idle()
    db.checkpoint()
    return resume


def run_with_restart(
    root: Path,
    batches: list[pa.RecordBatch],
    wal_mode: str,
    checkpoint_every: int,
    stop_at: int,
    wal_io: str = "auto",
    wal_direct_io: str = "auto",
    cores: tuple[int, int] = (1, 1),
) -> None:
    """Feed the batches, checkpointing every few; close after ``stop_at``
    batches; reopen (the catalog comes back: no DDL) and finish from the
    source's offset. ``cores``: reactors before and after the restart."""
    options: dict[str, str | int] = {
        "checkpoint_interval": "1 hour",
        "wal_mode": wal_mode,
        "wal_io": wal_io,
        "wal_direct_io": wal_direct_io,
        "cores": cores[0],
    }
    with laminardb.open(root, **options) as db:
        db.execute(DDL)
        db.execute(sink_sql(root))
        src = db.source("trades")
        assert src.offset == 1
        for i, batch in enumerate(batches[:stop_at]):
            src.push(batch)
            db.run_until_idle()
            if (i + 1) % checkpoint_every == 0:
                db.checkpoint()
    options["cores"] = cores[1]
    with laminardb.open(root, **options) as db:
        db.execute(DDL)  # the same DDL again is harmless
        src = db.source("trades")
        resume = src.offset - 1
        assert resume == stop_at
        for i in range(resume, len(batches)):
            src.push(batches[i])
            db.run_until_idle()
            if (i + 1) % checkpoint_every == 0:
                db.checkpoint()
        src.watermark(2**63 - 1)
        db.run_until_idle()
        db.checkpoint()


def io_uring_works(root: Path) -> bool:
    """Whether this kernel (and its seccomp policy) gives the WAL a ring."""
    probe = root / "probe"
    try:
        options = {"checkpoint_interval": "1 hour", "wal_mode": "sync", "wal_io": "io_uring"}
        with laminardb.open(probe, **options) as db:
            db.execute("CREATE SOURCE p (a BIGINT)")
    except laminardb.StorageError:
        return False
    return True


@pytest.mark.parametrize(
    ("wal_io", "wal_direct_io"), [("io_uring", "auto"), ("pwrite", "auto"), ("pwrite", "off")]
)
@pytest.mark.parametrize("wal_mode", ["sync", "async"])
@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize(
    "cores", [(1, 1), (2, 2), (1, 2), (2, 1)], ids=lambda c: f"cores{c[0]}to{c[1]}"
)
def test_restart_gives_the_batch_answer_once(
    tmp_path: Path,
    wal_mode: str,
    wal_io: str,
    wal_direct_io: str,
    seed: int,
    cores: tuple[int, int],
) -> None:
    """Also across thread-per-core: each reactor's partition is checkpointed,
    and a restart with another ``cores`` splits the state by key hash again."""
    if wal_io == "io_uring" and not io_uring_works(tmp_path):
        pytest.skip("io_uring is refused here; the pwrite runs cover the WAL")
    batches = make_batches(seed)
    rng = np.random.default_rng(seed + 100)
    stop_at = int(rng.integers(1, len(batches)))
    every = int(rng.integers(2, 9))
    root = tmp_path / "db"
    run_with_restart(root, batches, wal_mode, every, stop_at, wal_io, wal_direct_io, cores)
    rows = committed(root)
    assert len(rows) == len(set(rows)), "a window was published twice"
    assert set(rows) == expected(batches)


def test_settings_conflict_and_bad_values(tmp_path: Path) -> None:
    with pytest.raises(laminardb.ConfigError) as e:
        laminardb.open(wal_mode="sync")
    assert e.value.code == "LDB-6003"
    assert "checkpoint_interval" in str(e.value)
    with pytest.raises(laminardb.ConfigError) as e:
        laminardb.open(checkpoint_interval="1s")
    assert e.value.code == "LDB-6003"
    with pytest.raises(laminardb.ConfigError) as e:
        laminardb.open(tmp_path, checkpoint_interval="soonish")
    assert e.value.code == "LDB-6002"
    with laminardb.open() as db:
        assert db.checkpoint() == 0  # in memory: nothing to make durable, epoch 0
        db.execute(DDL)
        with pytest.raises(laminardb.ConfigError) as e:
            db.execute(sink_sql(tmp_path))
        assert e.value.code == "LDB-6003"
        assert e.value.line == 1
        assert db.source("trades").offset == 0  # no WAL: nothing is logged


def test_unrecoverable_catalog_is_reported(tmp_path: Path) -> None:
    with laminardb.open(tmp_path, checkpoint_interval="1 hour", wal_mode="sync") as db:
        db.execute(DDL)
    (tmp_path / "catalog.sql").write_text("CREATE STREAM x AS SELECT a FROM nowhere;\n")
    with pytest.raises(laminardb.StorageError) as e:
        laminardb.open(tmp_path, checkpoint_interval="1 hour", wal_mode="sync")
    assert e.value.code == "LDB-5002"
    assert "catalog.sql" in str(e.value)


@pytest.mark.parametrize("cores", [1, 2])
def test_interval_checkpoints_publish_without_being_asked(tmp_path: Path, cores: int) -> None:
    batches = make_batches(7, nbatches=6)
    options = {"checkpoint_interval": "50 ms", "wal_mode": "async", "cores": cores}
    with laminardb.open(tmp_path, **options) as db:
        db.execute(DDL)
        db.execute(sink_sql(tmp_path))
        db.start()
        src = db.source("trades")
        for batch in batches:
            src.push(batch)
        src.watermark(2**63 - 1)
        # The background thread checkpoints every 50 ms; wait for the output.
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and set(committed(tmp_path)) != expected(batches):
            time.sleep(0.05)
        db.stop()
    assert set(committed(tmp_path)) == expected(batches)
    assert list((tmp_path / "checkpoints").glob("ckpt-*.bin")), "no checkpoint was written"


@pytest.mark.parametrize("cores", [1, 2])
def test_checkpoints_while_a_producer_pushes(tmp_path: Path, cores: int) -> None:
    """In-band barriers (docs/DURABILITY.md): checkpoints taken back to back
    from this thread while a producer thread pushes into the started
    reactors; a reopen (the last checkpoint plus the WAL) finishes from the
    source's offset, and the sink holds DuckDB's answer, each window once."""
    batches = make_batches(11, nbatches=50)
    stop_at = 35
    options = {"checkpoint_interval": "1 hour", "wal_mode": "sync", "cores": cores}
    root = tmp_path / "db"
    with laminardb.open(root, **options) as db:
        db.execute(DDL)
        db.execute(sink_sql(root))
        src = db.source("trades")
        db.start()

        def produce() -> None:
            for batch in batches[:stop_at]:
                src.push(batch)
                time.sleep(0.002)

        producer = threading.Thread(target=produce)
        producer.start()
        taken = 0
        while producer.is_alive():
            db.checkpoint()
            taken += 1
        producer.join()
        assert taken > 0
        db.stop()
    with laminardb.open(root, **options) as db:
        assert finish_from_offset(db, batches) == stop_at
    rows = committed(root)
    assert len(rows) == len(set(rows)), "a window was published twice"
    assert set(rows) == expected(batches)


def test_cut_wal_tail_is_reported(tmp_path: Path) -> None:
    settings = {"checkpoint_interval": "1 hour", "wal_mode": "sync"}
    batches = make_batches(3, nbatches=5)
    with laminardb.open(tmp_path, **settings) as db:
        db.execute(DDL)
        src = db.source("trades")
        for batch in batches:
            src.push(batch)
        assert db.durability_report() == ""
    segment = sorted((tmp_path / "wal" / "trades").glob("*.wal"))[-1]
    data = bytearray(segment.read_bytes())
    data[200:208] = b"garbage!"  # inside the first record: its CRC breaks
    segment.write_bytes(bytes(data))
    with laminardb.open(tmp_path, **settings) as db:
        report = db.durability_report()
        assert "source 'trades': WAL cut at the last good record" in report
        assert "CRC mismatch" in report
        assert db.source("trades").offset == 1  # nothing before the damage survived


def test_try_push_refuses_a_full_queue_and_logs_nothing(tmp_path: Path) -> None:
    settings = {"checkpoint_interval": "1 hour", "wal_mode": "sync", "buffer_size": 2}
    with laminardb.open(tmp_path, **settings) as db:
        db.execute(DDL)
        src = db.source("trades")
        one = {"symbol": ["A"], "price": [1.0], "volume": [1], "ts": [1_000]}
        assert src.free_slots == 2
        src.try_push(one)
        src.try_push(one)
        assert src.free_slots == 0
        with pytest.raises(laminardb.QueueFull) as e:
            src.try_push(one)
        assert e.value.code == "LDB-3006"
        assert src.offset == 3  # the refused batch was not logged
        db.run_until_idle()
        assert src.free_slots == 2
        src.try_push(one)
        assert src.offset == 4

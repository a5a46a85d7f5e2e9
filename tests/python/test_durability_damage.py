"""Damage behind the checkpoint (issue 20 items 3 and 4): WAL records the
newest checkpoint covers, and lost newest checkpoints, with and without a file
sink. A producer resumes from ``Source.offset`` as documented; the committed
output must equal an uninterrupted run's, or the open must refuse naming the
damaged file."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import laminardb

OPTS = {"checkpoint_interval": "1 hour", "wal_mode": "sync"}
DDL = (
    "CREATE SOURCE t (k VARCHAR, v BIGINT, ts BIGINT, WATERMARK FOR ts AS ts);"
    "CREATE MATERIALIZED VIEW tot AS SELECT COUNT(*) AS n, SUM(v) AS s FROM t EMIT CHANGES;"
    "CREATE STREAM w AS SELECT k, window_start, COUNT(*) AS n, SUM(v) AS s"
    "  FROM t GROUP BY k, tumble(ts, INTERVAL '10' MILLISECOND)"
)
BATCHES = 40
SEGMENT = "00000000000000000001.wal"


def batch(i: int) -> dict[str, list[object]]:
    return {"k": [f"k{i % 3}", f"k{i % 5}"], "v": [i, 2 * i], "ts": [i, i]}


def sink_dir(d: Path) -> Path:
    """The file sink's directory: beside the data directory (never inside it)."""
    return d.with_name(d.name + "-out")


def as_crashed(d: Path, db: laminardb.Connection) -> None:
    """Close db, then put back the data directory and the sink's as they were
    before the close: as a kill -9 leaves them (a close would checkpoint)."""
    saved = [(p, p.with_name(p.name + "_crash")) for p in (d, sink_dir(d))]
    for p, copy in saved:
        if p.exists():
            shutil.copytree(p, copy)
    db.close()
    for p, copy in saved:
        shutil.rmtree(p, ignore_errors=True)
        if copy.exists():
            copy.rename(p)


def open_db(d: Path, *, sink: bool) -> laminardb.Connection:
    db = laminardb.open(d, **OPTS)
    db.execute(DDL)
    if sink:
        db.execute(f"CREATE SINK out FROM w INTO FILE (path = '{sink_dir(d)}', format = 'jsonl')")
    return db


def push(db: laminardb.Connection, start: int, stop: int) -> None:
    src = db.source("t")
    for i in range(start, stop):
        src.push(batch(i))
        db.run_until_idle()
        if (i + 1) % 10 == 0:
            db.checkpoint()


def result(db: laminardb.Connection, d: Path) -> tuple[list[dict[str, object]], list[str]]:
    """Finish (the last watermark, a checkpoint), close; the view and the sink's
    committed lines (sorted: epoch boundaries depend on timing)."""
    db.source("t").watermark(10**12)
    db.run_until_idle()
    db.checkpoint()
    view = db.query("SELECT * FROM tot").to_pylist()
    db.close()
    parts = sorted(sink_dir(d).glob("part-*.jsonl"))
    lines = sorted(line for p in parts for line in p.read_text().splitlines())
    return view, lines


def crashed_at(d: Path, stop: int, *, sink: bool) -> None:
    """Batches 0..stop-1 (checkpoints after 10 and 20), then the directory as a
    kill -9 leaves it (a close would checkpoint)."""
    db = open_db(d, sink=sink)
    push(db, 0, stop)
    as_crashed(d, db)


def record_offset(wal: Path, seq: int) -> int:
    """Byte offset of record `seq` in a WAL segment (wal.h's framing)."""
    b = wal.read_bytes()
    off = 32
    while off + 32 <= len(b):
        n = int.from_bytes(b[off : off + 4], "little")
        s = int.from_bytes(b[off + 8 : off + 16], "little")
        pad = b[off + 24 : off + 26] == b"\xff\xff"
        if s == seq and not pad:
            return off
        if n == 0 and s == 0 and not pad:
            break
        off += 32 + (n + 7) // 8 * 8
    raise AssertionError(f"record {seq} not in {wal}")


def test_flipped_bit_behind_the_checkpoint_does_not_double(tmp_path: Path) -> None:
    """The issue's reproducer: one flipped bit in a record checkpoint 1 covers."""
    d = tmp_path / "db"
    db = laminardb.open(d, **OPTS)
    db.execute(
        "CREATE SOURCE t (v BIGINT); CREATE MATERIALIZED VIEW tot AS SELECT COUNT(*) AS n, "
        "SUM(v) AS s FROM t EMIT CHANGES"
    )
    src = db.source("t")
    for i in range(100):
        src.push({"v": [i]})
    db.run_until_idle()
    db.checkpoint()
    for i in range(100, 120):
        src.push({"v": [i]})
    db.run_until_idle()
    db.close()
    w = d / "wal" / "t" / SEGMENT
    b = bytearray(w.read_bytes())
    b[4096 + 20] ^= 1
    w.write_bytes(bytes(b))
    db = laminardb.open(d, **OPTS)
    src = db.source("t")
    assert src.offset == 121
    assert "skipped" in db.durability_report()
    for i in range(src.offset - 1, 120):
        src.push({"v": [i]})
    db.run_until_idle()
    assert db.query("SELECT * FROM tot").to_pylist() == [{"n": 120, "s": sum(range(120))}]
    db.close()


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> dict[bool, object]:
    out: dict[bool, object] = {}
    for sink in (False, True):
        d = tmp_path_factory.mktemp("ref") / "db"
        db = open_db(d, sink=sink)
        push(db, 0, BATCHES)
        out[sink] = result(db, d)
    return out


def damage(path: Path, kind: str, at: int) -> None:
    if kind == "delete":
        path.unlink()
        return
    b = bytearray(path.read_bytes())
    if kind == "flip":
        b[at] ^= 0x10
    elif kind == "overwrite16":
        b[at : at + 16] = b"\xa5" * 16
    else:
        del b[at:]
    path.write_bytes(bytes(b))


#: (where, kind): deleting the log's one segment is the same case whichever
#: record was meant, so it is swept once, as wal_covered.
DAMAGE_CASES = [
    (where, kind)
    for where in ("wal_covered", "wal_after", "ckpt_newest", "ckpt_older")
    for kind in ("flip", "overwrite16", "truncate", "delete")
    if not (where == "wal_after" and kind == "delete")
]


@pytest.mark.parametrize("output", ["view", "file_sink"])
@pytest.mark.parametrize(("where", "kind"), DAMAGE_CASES)
def test_damage_sweep(
    tmp_path: Path, uninterrupted: dict[bool, object], output: str, kind: str, where: str
) -> None:
    sink = output == "file_sink"
    d = tmp_path / "db"
    crashed_at(d, 25, sink=sink)  # checkpoints cover records 1..20
    if where.startswith("wal"):
        f = d / "wal" / "t" / SEGMENT
        off = record_offset(f, 5 if where == "wal_covered" else 23)
        damage(f, kind, off + (48 if kind == "flip" else 8))
    else:
        epoch = 2 if where == "ckpt_newest" else 1
        f = d / "checkpoints" / f"ckpt-{epoch:020d}.bin"
        damage(f, kind, 100 if kind == "flip" else 40)
    db = open_db(d, sink=sink)
    src = db.source("t")
    # After the damage (23): cut there. A covered record whose bytes are
    # gone with everything after it: the checkpoint's offset + 1. Else
    # nothing is lost: after the last record (25).
    want = 26
    if where == "wal_after":
        want = 23
    elif where == "wal_covered" and kind in ("truncate", "delete"):
        want = 21
    assert src.offset == want, db.durability_report()
    if where in ("wal_covered", "ckpt_newest"):
        assert db.durability_report() != ""
    push(db, src.offset - 1, BATCHES)
    assert result(db, d) == uninterrupted[sink]


def test_lost_checkpoint_and_positions_with_a_sink_refuse(tmp_path: Path) -> None:
    """Both the newest checkpoint and its positions lost while the sink has
    published that epoch: refused, naming the checkpoint."""
    d = tmp_path / "db"
    crashed_at(d, 25, sink=True)
    (d / "checkpoints" / f"ckpt-{2:020d}.bin").unlink()
    (d / "checkpoints" / f"pos-{2:020d}.bin").unlink()
    with pytest.raises(laminardb.StorageError) as e:
        open_db(d, sink=True)
    assert e.value.code == "LDB-5002"
    assert f"ckpt-{2:020d}.bin" in str(e.value)


def connector_run(d: Path, *, crash: bool) -> list[tuple[object, ...]]:
    """The pipeline with a Parquet connector sink on `w`: batches 0..24, then
    (crash) the directory as a kill -9 leaves it, the newest checkpoint lost;
    the rest from the resume offset. The committed rows, sorted."""
    import pyarrow.parquet as pq

    from laminardb.sinks import ParquetSink

    def opened() -> laminardb.Connection:  # a restart names the sink at open
        return laminardb.open(d, sinks={"pq": ("w", ParquetSink(d / "pq"))}, **OPTS)

    db = laminardb.open(d, **OPTS)
    db.execute(DDL)
    db.add_sink("pq", "w", ParquetSink(d / "pq"))
    push(db, 0, 25)
    if crash:
        as_crashed(d, db)
        (d / "checkpoints" / f"ckpt-{2:020d}.bin").unlink()
        db = opened()
        assert db.source("t").offset == 26
        assert "ckpt-00000000000000000002.bin) is missing" in db.durability_report()
    push(db, 25, BATCHES)
    result(db, d)
    rows = [r for p in ParquetSink(d / "pq").parts() for r in pq.read_table(p).to_pylist()]
    return sorted(tuple(r.values()) for r in rows)


def test_lost_checkpoint_with_a_connector_sink_publishes_once(tmp_path: Path) -> None:
    """The newest checkpoint lost after its epoch was committed to a connector
    sink: the fallback replays its rows without handing them to the sink."""
    want = connector_run(tmp_path / "ref", crash=False)
    got = connector_run(tmp_path / "db", crash=True)
    assert got == want
    assert len(got) == len(set(got))


def test_offset_without_a_wal_is_the_checkpoints(tmp_path: Path) -> None:
    """wal_mode none: Source.offset counts messages and, after a restart, is
    the checkpoint's position + 1 (input after it is not kept)."""
    d = tmp_path / "db"
    db = laminardb.open(d, checkpoint_interval="1 hour", wal_mode="none")
    db.execute("CREATE SOURCE t (v BIGINT)")
    src = db.source("t")
    assert src.offset == 1
    for i in range(7):
        src.push({"v": [i]})
    db.run_until_idle()
    db.checkpoint()
    src.push({"v": [7]})
    assert src.offset == 9
    shutil.copytree(d, tmp_path / "crash")  # as a kill -9 leaves it
    db.close()
    db = laminardb.open(tmp_path / "crash", checkpoint_interval="1 hour", wal_mode="none")
    assert db.source("t").offset == 8
    db.close()

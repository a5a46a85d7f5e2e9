"""Durable object identity (issue 20, items 2 and 5).

A name dropped and created again is another object: the newest checkpoint's
state and offsets of the dropped one, and its WAL, are never applied to the new
one, with or without a checkpoint between DROP and CREATE -- for sources,
streams, materialized views, sinks and late outputs. A stream or sink created
after the checkpoint is fed by the replay only what it saw live. catalog.sql
carries a CRC: damaged, emptied or deleted beside checkpoints it is refused
(LDB-5002 naming the file), and a checkpointed state whose plan fingerprint
differs from the catalog's is refused naming the stream and the checkpoint.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import laminardb

SETTINGS = {"checkpoint_interval": "1 hour", "wal_mode": "sync"}
SOURCE = "CREATE SOURCE t (k VARCHAR, v BIGINT, ts BIGINT, WATERMARK FOR ts AS ts)"

Row = tuple[str, int, int]

#: What happens between DROP and CREATE: each case runs both ways.
BETWEEN = ("nothing", "checkpoint")


def push(db: laminardb.Connection, rows: list[Row]) -> None:
    """One sync push per row, then run the graph. The handle is closed after
    (a DROP SOURCE may follow)."""
    src = db.source("t")
    for k, v, ts in rows:
        src.push({"k": [k], "v": [v], "ts": [ts]})
    src.close()
    db.run_until_idle()


def rows_between(lo: int, hi: int, base: int) -> list[Row]:
    """Rows with times lo..hi-1 (step 50), keys a/b, values from base."""
    return [("ab"[i % 2], base + i, ts) for i, ts in enumerate(range(lo, hi, 50))]


def part_rows(path: Path) -> list[dict[str, object]]:
    """Every published row of a file sink, in epoch order."""
    return [
        json.loads(line)
        for p in sorted(path.glob("part-*.jsonl"))
        for line in p.read_text().splitlines()
    ]


def drop_and_create(
    db: laminardb.Connection, drop: str, create: str, *, checkpoint_between: bool
) -> list[Row]:
    """Rows before a checkpoint and after it, `drop`, maybe a checkpoint,
    `create`, and rows after: those (the new objects' rows) are returned."""
    push(db, rows_between(0, 500, 0))
    db.checkpoint()
    push(db, rows_between(500, 900, 100))
    db.execute(drop)
    if checkpoint_between:
        db.checkpoint()
    db.execute(create)
    after = rows_between(900, 1500, 1000)
    push(db, after)
    return after


def view(db: laminardb.Connection, name: str) -> list[dict[str, object]]:
    return sorted(db.query(f"SELECT * FROM {name}").to_pylist(), key=lambda r: str(r))


def test_recreated_source_and_view_reproducer(tmp_path: Path) -> None:
    """The issue's reproducer: 10 acknowledged rows of the new source, not 5."""
    db = laminardb.open(tmp_path, **SETTINGS)
    db.execute(
        "CREATE SOURCE t (v BIGINT);"
        "CREATE MATERIALIZED VIEW mv AS SELECT COUNT(*) AS n, SUM(v) AS s FROM t EMIT CHANGES"
    )
    src = db.source("t")
    for i in range(5):
        src.push({"v": [i]})
    src.close()
    db.run_until_idle()
    db.checkpoint()
    db.execute("DROP MATERIALIZED VIEW mv; DROP SOURCE t")
    db.execute(
        "CREATE SOURCE t (s VARCHAR);"
        "CREATE MATERIALIZED VIEW mv AS SELECT COUNT(*) AS n FROM t EMIT CHANGES"
    )
    src = db.source("t")
    for i in range(10):
        src.push({"s": [f"x{i}"]})
    db.run_until_idle()
    db.close()
    with laminardb.open(tmp_path, **SETTINGS) as db:
        assert db.source("t").offset == 11
        assert db.query("SELECT * FROM mv").to_pylist() == [{"n": 10}]


@pytest.mark.parametrize("query", ["same", "another"])
def test_recreated_view(tmp_path: Path, query: str) -> None:
    for between in BETWEEN:
        check_recreated_view(tmp_path / between, between, query)


def check_recreated_view(tmp_path: Path, between: str, query: str) -> None:
    """A view dropped and created again (same query or another) holds only the
    rows pushed after its CREATE, before and after a restart."""
    old = (
        "CREATE MATERIALIZED VIEW mv AS SELECT k, COUNT(*) AS n, SUM(v) AS s FROM t"
        " GROUP BY k EMIT CHANGES"
    )
    new = (
        old
        if query == "same"
        else "CREATE MATERIALIZED VIEW mv AS SELECT k, MIN(v) AS lo, MAX(ts) AS hi FROM t"
        " GROUP BY k EMIT CHANGES"
    )
    db = laminardb.open(tmp_path, **SETTINGS)
    db.execute(f"{SOURCE}; {old}")
    after = drop_and_create(
        db, "DROP MATERIALIZED VIEW mv", new, checkpoint_between=between == "checkpoint"
    )
    live = view(db, "mv")
    db.close()
    want: dict[str, list[Row]] = {}
    for r in after:
        want.setdefault(r[0], []).append(r)
    if query == "same":
        expect = [{"k": k, "n": len(rs), "s": sum(r[1] for r in rs)} for k, rs in want.items()]
    else:
        expect = [
            {"k": k, "lo": min(r[1] for r in rs), "hi": max(r[2] for r in rs)}
            for k, rs in want.items()
        ]
    expect.sort(key=lambda r: str(r))
    assert live == expect
    with laminardb.open(tmp_path, **SETTINGS) as db:
        assert view(db, "mv") == expect
        assert db.source("t").offset == 1 + 10 + 8 + 12


def test_view_created_after_the_checkpoint_sees_what_it_saw_live(tmp_path: Path) -> None:
    """No DROP: a view created after rows that followed the checkpoint is not
    fed those rows by the replay."""
    db = laminardb.open(tmp_path, **SETTINGS)
    db.execute(SOURCE)
    push(db, rows_between(0, 200, 0))
    db.checkpoint()
    push(db, rows_between(200, 400, 10))
    db.execute("CREATE MATERIALIZED VIEW c AS SELECT COUNT(*) AS n FROM t EMIT CHANGES")
    push(db, rows_between(400, 500, 20))
    assert db.query("SELECT * FROM c").to_pylist() == [{"n": 2}]
    db.close()
    with laminardb.open(tmp_path, **SETTINGS) as db:
        assert db.query("SELECT * FROM c").to_pylist() == [{"n": 2}]
        push(db, rows_between(500, 550, 30))
        assert db.query("SELECT * FROM c").to_pylist() == [{"n": 3}]


def window_counts(rows: list[Row], size: int) -> list[dict[str, object]]:
    got: dict[tuple[str, int], int] = {}
    for k, _, ts in rows:
        key = (k, ts - ts % size)
        got[key] = got.get(key, 0) + 1
    return sorted(({"k": k, "window_start": w, "n": n} for (k, w), n in got.items()), key=str)


def test_recreated_stream_with_another_window(tmp_path: Path) -> None:
    """A windowed stream dropped and created with another window size: its
    windows hold only the new rows, the old state is not loaded into it."""
    for between in BETWEEN:
        check_recreated_stream_with_another_window(tmp_path / between, between)


def check_recreated_stream_with_another_window(tmp_path: Path, between: str) -> None:

    def stream(size: int) -> str:
        return (
            "CREATE STREAM w AS SELECT k, window_start, COUNT(*) AS n FROM t"
            f" GROUP BY k, tumble(ts, INTERVAL '{size}' MILLISECOND)"
        )

    db = laminardb.open(tmp_path, **SETTINGS)
    db.execute(f"{SOURCE}; {stream(1000)};")
    db.execute(f"CREATE SINK ws FROM w INTO FILE (path = '{tmp_path / 'ws'}', format = 'jsonl')")
    sink2 = f"CREATE SINK ws2 FROM w INTO FILE (path = '{tmp_path / 'ws2'}', format = 'jsonl')"
    after = drop_and_create(
        db,
        "DROP SINK ws; DROP STREAM w",
        f"{stream(2000)}; {sink2}",
        checkpoint_between=between == "checkpoint",
    )
    db.close()
    with laminardb.open(tmp_path, **SETTINGS) as db:
        db.source("t").watermark(10_000)
        db.run_until_idle()
        db.checkpoint()
    assert sorted(part_rows(tmp_path / "ws2"), key=str) == window_counts(after, 2000)
    assert part_rows(tmp_path / "ws") == []  # the old sink published nothing


def test_recreated_sink_on_the_same_path(tmp_path: Path) -> None:
    """A file sink dropped and created again on its path publishes only what the
    new one received: rows its predecessor had staged never come back."""
    for between in BETWEEN:
        check_recreated_sink_on_the_same_path(tmp_path / between, between)


def check_recreated_sink_on_the_same_path(tmp_path: Path, between: str) -> None:
    db = laminardb.open(tmp_path, **SETTINGS)
    db.execute(
        f"{SOURCE}; CREATE STREAM w AS SELECT k, window_start, COUNT(*) AS n FROM t"
        " GROUP BY k, tumble(ts, INTERVAL '1' SECOND)"
    )
    sink = f"CREATE SINK ws FROM w INTO FILE (path = '{tmp_path / 'ws'}', format = 'jsonl')"
    db.execute(sink)
    push(db, rows_between(0, 500, 0))
    db.checkpoint()
    push(db, rows_between(500, 1000, 100))
    push(db, [("a", 0, 1000)])  # closes [0, 1000): staged in the old sink, not published
    db.execute("DROP SINK ws")
    if between == "checkpoint":
        db.checkpoint()
    db.execute(sink)
    after = rows_between(1000, 1900, 1000)
    push(db, after)
    db.close()
    with laminardb.open(tmp_path, **SETTINGS) as db:
        db.source("t").watermark(10_000)
        db.run_until_idle()
        db.checkpoint()
    want = window_counts([("a", 0, 1000), *after], 1000)
    assert sorted(part_rows(tmp_path / "ws"), key=str) == want


def test_recreated_late_output(tmp_path: Path) -> None:
    """A stream with a late output dropped and created again: the late output's
    reader counts only the new late rows."""
    for between in BETWEEN:
        check_recreated_late_output(tmp_path / between, between)


def check_recreated_late_output(tmp_path: Path, between: str) -> None:
    ddl = (
        "CREATE STREAM w AS SELECT k, window_start, COUNT(*) AS n FROM t"
        " GROUP BY k, tumble(ts, INTERVAL '1' SECOND) WITH (late_output = 'lt');"
        "CREATE MATERIALIZED VIEW lv AS SELECT k, COUNT(*) AS n FROM lt GROUP BY k EMIT CHANGES"
    )
    db = laminardb.open(tmp_path, **SETTINGS)
    db.execute(f"{SOURCE}; {ddl}")
    push(db, [("a", 1, 5000), ("a", 2, 100), ("b", 3, 200)])  # two late rows
    db.checkpoint()
    push(db, [("a", 4, 300)])  # late, after the checkpoint
    db.execute("DROP MATERIALIZED VIEW lv; DROP STREAM w")
    if between == "checkpoint":
        db.checkpoint()
    db.execute(ddl)
    push(db, [("b", 5, 6000), ("b", 6, 400)])  # one late row of the new stream
    assert view(db, "lv") == [{"k": "b", "n": 1}]
    db.close()
    with laminardb.open(tmp_path, **SETTINGS) as db:
        assert view(db, "lv") == [{"k": "b", "n": 1}]


# ---- catalog.sql integrity ---------------------------------------------------------------------


def make_db(root: Path) -> None:
    with laminardb.open(root, **SETTINGS) as db:
        db.execute(
            f"{SOURCE}; CREATE MATERIALIZED VIEW mv AS SELECT k, COUNT(*) AS n FROM t"
            " WHERE v > 3 GROUP BY k EMIT CHANGES"
        )
        db.execute("CREATE MATERIALIZED VIEW total AS SELECT COUNT(*) AS n FROM t EMIT CHANGES")
        push(db, rows_between(0, 400, 0))
        db.checkpoint()
        push(db, rows_between(400, 600, 10))


#: make_db's views: v > 3 leaves 4 of the first 8 rows and the 4 after.
MV = [{"k": "a", "n": 4}, {"k": "b", "n": 4}]


@pytest.mark.parametrize("damage", ["delete", "empty", "drop the last statement", "flip a digit"])
def test_damaged_catalog_is_refused(tmp_path: Path, damage: str) -> None:
    """Each damage still ran on earlier builds as a database with fewer objects
    or another filter (or none): now it is refused, naming the file."""
    make_db(tmp_path)
    cat = tmp_path / "catalog.sql"
    data = cat.read_bytes()
    if damage == "delete":
        cat.unlink()
    elif damage == "empty":
        cat.write_bytes(b"")
    elif damage == "drop the last statement":
        cut = data.rstrip(b"\n").rfind(b"\n", 0, data.rindex(b"CREATE MATERIALIZED VIEW total"))
        cat.write_bytes(data[: cut + 1])
    else:
        at = data.index(b"v > 3") + 4
        cat.write_bytes(data[:at] + b"2" + data[at + 1 :])
    with pytest.raises(laminardb.StorageError) as e:
        laminardb.open(tmp_path, **SETTINGS)
    assert e.value.code == "LDB-5002"
    assert "catalog.sql" in str(e.value)
    cat.write_bytes(data)  # repaired: everything is there
    with laminardb.open(tmp_path, **SETTINGS) as db:
        assert view(db, "mv") == MV
        assert view(db, "total") == [{"n": 12}]
    # A new directory has no catalog, and opens empty (also after a checkpoint:
    # the catalog is written before it).
    fresh = tmp_path / "fresh"
    with laminardb.open(fresh, **SETTINGS) as db:
        assert db.query("SHOW SOURCES").num_rows == 0
        db.checkpoint()
    with laminardb.open(fresh, **SETTINGS) as db:
        assert db.query("SHOW SOURCES").num_rows == 0


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def test_changed_plan_with_a_valid_crc_is_refused(tmp_path: Path) -> None:
    """A window size changed in catalog.sql (CRC made to match): the
    checkpointed window state is not loaded into the other plan."""
    with laminardb.open(tmp_path, **SETTINGS) as db:
        db.execute(
            f"{SOURCE}; CREATE STREAM w AS SELECT k, window_start, COUNT(*) AS n FROM t"
            " GROUP BY k, tumble(ts, INTERVAL '1' SECOND)"
        )
        push(db, rows_between(0, 400, 0))
        db.checkpoint()
    cat = tmp_path / "catalog.sql"
    head, body = cat.read_bytes().split(b"\n", 1)
    body = body.replace(b"INTERVAL '1' SECOND", b"INTERVAL '2' SECOND")
    fields = head.split(b" ")
    fields[-2] = b"bytes=%020d" % len(body)
    fields[-1] = b"crc32c=%08x" % crc32c(body)
    cat.write_bytes(b" ".join(fields) + b"\n" + body)
    with pytest.raises(laminardb.StorageError) as e:
        laminardb.open(tmp_path, **SETTINGS)
    assert e.value.code == "LDB-5002"
    assert "stream 'w'" in str(e.value)
    assert "ckpt-00000000000000000001.bin" in str(e.value)


def test_earlier_catalog_without_header_still_opens(tmp_path: Path) -> None:
    """catalog.sql as earlier builds wrote it (statements only) still opens,
    and is rewritten with its header and identities."""
    make_db(tmp_path)
    cat = tmp_path / "catalog.sql"
    lines = cat.read_bytes().split(b"\n")[1:]
    old = b"".join(line + b"\n" for line in lines if line and not line.startswith(b"--"))
    cat.write_bytes(old)
    shutil.rmtree(tmp_path / "checkpoints")  # this build's checkpoints name identities
    (tmp_path / "checkpoints").mkdir()
    for owner in (tmp_path / "wal").glob("*/.incarnation"):
        owner.unlink()
    with laminardb.open(tmp_path, **SETTINGS) as db:
        assert view(db, "mv") == MV
    assert cat.read_bytes().startswith(b"-- laminardb catalog 2 ")
    with laminardb.open(tmp_path, **SETTINGS) as db:
        assert view(db, "mv") == MV


def test_recreated_sink_does_not_publish_what_its_predecessor_staged(tmp_path: Path) -> None:
    """The dropped sink had flushed rows of its open epoch to its staging file
    (over 1 MiB); the new sink on the same path writes nothing in that epoch:
    its checkpoint publishes nothing of the old one."""
    db = laminardb.open(tmp_path, **SETTINGS)
    db.execute(f"{SOURCE}; CREATE STREAM p AS SELECT k, v, ts FROM t")
    sink = f"CREATE SINK ps FROM p INTO FILE (path = '{tmp_path / 'ps'}', format = 'jsonl')"
    db.execute(sink)
    n = 40_000
    db.source("t").push({"k": ["x" * 20] * n, "v": list(range(n)), "ts": list(range(n))})
    db.run_until_idle()
    db.execute("DROP SINK ps")
    db.execute(sink)
    db.checkpoint()
    db.close()
    assert part_rows(tmp_path / "ps") == []
    assert list((tmp_path / "ps").iterdir()) == []

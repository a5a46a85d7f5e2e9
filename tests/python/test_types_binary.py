"""VARBINARY / BLOB / BYTEA against DuckDB (issue 25 item 1; docs/SQL.md "Types").

Arrow binary in and out, compared bytewise, concatenated, measured, cast to
and from DuckDB's blob text; BLOB keys through windows (cores 1 and 2) and a
running MIN / MAX through a checkpoint and a restart. Seeded rows hold NULLs,
empty values, zero bytes, high bytes and the characters the text escapes.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from _oracle_util import (
    announce_seed,
    assert_same_rows,
    duck,
    examples,
    rows_of,
    run_engine,
    run_with_restart,
    seed_strategy_bounds,
    split_batches,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import laminardb

SEEDS = st.integers(*seed_strategy_bounds())
SOURCE = "CREATE SOURCE t (b BLOB, c BYTEA, ts BIGINT, WATERMARK FOR ts AS ts);"
ALPHABET = np.array([0, 1, 0x22, 0x27, 0x5C, 0x41, 0x61, 0x7E, 0x7F, 0x80, 0xFF], np.uint8)


def blob_table(rng: np.random.Generator, n: int, keys: int = 0) -> pa.Table:
    """Rows ``b`` (binary), ``c`` (large_binary), ``ts``; ``keys`` > 0: ``b`` of that many."""

    def blobs(m: int) -> list[bytes | None]:
        out: list[bytes | None] = []
        for _ in range(m):
            size = int(rng.integers(0, 6))
            out.append(
                None
                if rng.random() < 0.1
                else bytes(ALPHABET[rng.integers(0, len(ALPHABET), size=size)].tolist())
            )
        return out

    b = blobs(n)
    if keys > 0:
        pool = blobs(keys)
        b = [pool[int(i)] for i in rng.integers(0, keys, size=n)]
    return pa.table(
        {
            "b": pa.array(b, pa.binary()),
            "c": pa.array(blobs(n), pa.large_binary()),
            "ts": pa.array(np.cumsum(rng.integers(0, 30, size=n)), pa.int64()),
        }
    )


EXPRESSIONS = [
    ("b", "b"),
    ("c", "c"),
    ("b || c", "b || c"),
    ("b < c", "b < c"),
    ("b = c", "b = c"),
    ("b >= c", "b >= c"),
    ("octet_length(b)", "octet_length(b)"),
    ("length(c)", "octet_length(c)"),  # DuckDB has no length(BLOB)
    ("CAST(b AS VARCHAR)", "CAST(b AS VARCHAR)"),
    ("CAST(CAST(c AS VARCHAR) AS BLOB)", "CAST(CAST(c AS VARCHAR) AS BLOB)"),
    ("b = CAST('\\x00A' AS BLOB)", "b = CAST('\\x00A' AS BLOB)"),
    ("coalesce(b, c)", "coalesce(b, c)"),
    ("CASE WHEN b < c THEN b ELSE c END", "CASE WHEN b < c THEN b ELSE c END"),
]


@settings(max_examples=examples(6), deadline=None)
@given(seed=SEEDS)
def test_blob_expressions_match_duckdb(seed: int) -> None:
    announce_seed(seed)
    rng = np.random.default_rng(seed)
    table = blob_table(rng, int(rng.integers(1, 500)))
    items = ", ".join(f"{ours} AS c{i}" for i, (ours, _) in enumerate(EXPRESSIONS))
    got = run_engine(
        SOURCE + f"CREATE STREAM w AS SELECT ts, {items} FROM t;",
        split_batches(rng, table),
        final_watermark=False,
    ).table
    assert got.schema.field("c2").type == pa.binary()
    theirs = ", ".join(f"{th} AS c{i}" for i, (_, th) in enumerate(EXPRESSIONS))
    _, want = duck(f"SELECT ts, {theirs} FROM t", t=table)
    columns = ["ts"] + [f"c{i}" for i in range(len(EXPRESSIONS))]
    assert sorted(map(repr, rows_of(got, columns))) == sorted(map(repr, want)), f"seed {seed}"


def test_bad_blob_text_is_null() -> None:
    """DuckDB raises on a bad escape or a non-ASCII character; TRY_CAST (ours) gives NULL."""
    texts = ["\\xZZ", "\\x4", "a\\b", "\u00e9", "\\x4a\\x4B"]
    table = pa.table({"s": pa.array(texts), "ts": pa.array(range(len(texts)), pa.int64())})
    got = run_engine(
        "CREATE SOURCE t (s VARCHAR, ts BIGINT);"
        "CREATE STREAM w AS SELECT ts, CAST(s AS BLOB) AS b FROM t;",
        [table],
        final_watermark=False,
    ).table
    _, want = duck("SELECT ts, TRY_CAST(s AS BLOB) FROM t", t=table)
    assert sorted(rows_of(got, ["ts", "b"])) == sorted(want)


@pytest.mark.parametrize("cores", [1, 2])
@settings(max_examples=examples(4), deadline=None)
@given(seed=SEEDS)
def test_window_keyed_by_blob_matches_duckdb(cores: int, seed: int) -> None:
    announce_seed(seed)
    rng = np.random.default_rng(seed)
    table = blob_table(rng, int(rng.integers(0, 1500)), keys=int(rng.integers(1, 20)))
    size = int(rng.choice([1, 40, 1000]))
    ours = (
        SOURCE + "CREATE STREAM w AS SELECT b, window_start, MIN(c) AS lo, MAX(c) AS hi, "
        "COUNT(c) AS n FROM t "
        f"GROUP BY b, tumble(ts, INTERVAL '{size}' MILLISECOND) EMIT ON WINDOW CLOSE;"
    )
    got = run_engine(ours, split_batches(rng, table), cores=cores).table
    assert [got.schema.field(c).type for c in ("b", "lo", "hi")] == [pa.binary()] * 3
    start = f"(ts - ((ts % {size}) + {size}) % {size})"
    _, want = duck(
        f"SELECT b, {start}, MIN(c), MAX(c), COUNT(c) FROM t GROUP BY b, {start}", t=table
    )
    columns = ["b", "window_start", "lo", "hi", "n"]
    assert_same_rows(rows_of(got, columns), want, columns, seed=seed)


RUNNING = (
    SOURCE + "CREATE MATERIALIZED VIEW v AS SELECT b, MIN(c) AS lo, MAX(c) AS hi, "
    "COUNT(*) AS n FROM t GROUP BY b;"
)
RUNNING_DUCK = "SELECT b, MIN(c), MAX(c), COUNT(*) FROM t GROUP BY b"
RUNNING_COLUMNS = ["b", "lo", "hi", "n"]


@pytest.mark.parametrize("close", ["clean", "kill -9"])
@settings(max_examples=examples(3), deadline=None)
@given(seed=SEEDS)
def test_blob_keys_survive_checkpoint_and_restart(
    tmp_path_factory: pytest.TempPathFactory, close: str, seed: int
) -> None:
    announce_seed(seed)
    rng = np.random.default_rng(seed)
    table = blob_table(rng, int(rng.integers(1, 1500)), keys=int(rng.integers(1, 30)))
    batches = split_batches(rng, table)
    cut = int(rng.integers(0, len(batches) + 1))
    data = tmp_path_factory.mktemp("blob_ckpt") / "db"
    got = run_with_restart(data, RUNNING, batches, cut, crash=close == "kill -9")
    _, want = duck(RUNNING_DUCK, t=table)
    assert_same_rows(rows_of(got, RUNNING_COLUMNS), want, RUNNING_COLUMNS, seed=seed)


def test_python_bytes_in_and_out() -> None:
    with laminardb.open() as db:
        db.execute("CREATE SOURCE t (b VARBINARY); CREATE STREAM w AS SELECT b FROM t;")
        sub = db.subscribe("w")
        db.insert("t", [{"b": b"\x00\xff"}, {"b": None}, {"b": b""}])
        db.run_until_idle()
        batch = sub.poll(0)
        assert batch.to_pylist() == [{"b": b"\x00\xff"}, {"b": None}, {"b": b""}]
        assert batch.schema.types == [pa.binary()]


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_file_sink_writes_blob_text(tmp_path: Path, fmt: str) -> None:
    """A CSV / JSON file sink writes a BLOB as its blob text (DuckDB's CAST to VARCHAR)."""
    values = [b"\x00\xff", b"", b"a\"b'c\\d,e", None, bytes(range(30, 40))]
    root = tmp_path
    out = root / "out"
    with laminardb.open(root / "db", checkpoint_interval="1 hour") as db:
        db.execute(
            "CREATE SOURCE t (i BIGINT, b BLOB);"
            "CREATE STREAM w AS SELECT i, b FROM t;"
            f"CREATE SINK f FROM w INTO FILE (path = '{out}', format = '{fmt}');"
        )
        db.insert(
            "t",
            pa.table(
                {"i": pa.array(range(len(values)), pa.int64()), "b": pa.array(values, pa.binary())}
            ),
        )
        db.run_until_idle()
        db.checkpoint()
    text = "".join(p.read_text() for p in sorted(out.rglob("*")) if p.is_file())
    if fmt == "csv":
        got = {int(r[0]): r[1] for r in csv.reader(text.splitlines()) if r and r[0] != "i"}
    else:
        got = {r["i"]: r["b"] for r in map(json.loads, text.splitlines())}
    _, want = duck(
        "SELECT i, CAST(b AS VARCHAR) FROM t",
        t=pa.table(
            {"i": pa.array(range(len(values)), pa.int64()), "b": pa.array(values, pa.binary())}
        ),
    )
    expected = {i: ("" if s is None and fmt == "csv" else s) for i, s in want}
    assert got == expected

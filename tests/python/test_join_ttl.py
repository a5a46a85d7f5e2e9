"""A stream-stream JOIN without a time bound, allowed by ``WITH (state_ttl = ...)``.

Without a bound such a join is refused (LDB-1010): it would hold every row
forever. With a state TTL each side's rows go once the other side's watermark
is the TTL past them, and a pair is joined while both rows are held -- an
approximation of the unbounded join (as Flink's state TTL), exact when every
pair of rows lies within the TTL of each other. The proof: rows whose times lie
within the TTL, the two sides pushed in random interleavings (cores 1 and 2),
equal DuckDB's join of the same rows for INNER, LEFT, RIGHT and FULL; and an
endless stream of rows keeps the rows held bounded (metrics).
"""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest
from _oracle_util import announce_seed, assert_same_rows, duck, examples, rows_of, run_two_inputs
from hypothesis import given, settings
from hypothesis import strategies as st

import laminardb

SEEDS = st.integers(0, 2**31 - 1)
TTL = 1000

DDL = (
    "CREATE SOURCE a (k VARCHAR, x BIGINT, ts BIGINT,"
    f" WATERMARK FOR ts AS ts - INTERVAL '{TTL}' MILLISECOND);"
    "CREATE SOURCE b (k VARCHAR, y BIGINT, ts BIGINT,"
    f" WATERMARK FOR ts AS ts - INTERVAL '{TTL}' MILLISECOND);"
)


def side(rng: np.random.Generator, value: str) -> pa.Table:
    n = int(rng.integers(0, 60))
    keys = [None if rng.random() < 0.1 else f"k{int(rng.integers(0, 8))}" for _ in range(n)]
    return pa.table(
        {
            "k": pa.array(keys, type=pa.string()),
            value: pa.array(rng.integers(-50, 50, size=n), type=pa.int64()),
            "ts": pa.array(rng.integers(0, TTL + 1, size=n), type=pa.int64()),
        }
    )


def batches(rng: np.random.Generator, table: pa.Table) -> list[pa.RecordBatch]:
    out, at = [], 0
    while at < table.num_rows:
        n = int(rng.integers(1, 15))
        out += table.slice(at, n).to_batches()
        at += n
    return out


@pytest.mark.parametrize("cores", [1, 2])
@pytest.mark.parametrize("kind", ["JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN"])
@settings(max_examples=examples(12), deadline=None)
@given(seed=SEEDS)
def test_rows_within_ttl_equal_duckdb(seed: int, kind: str, cores: int) -> None:
    announce_seed(seed)
    rng = np.random.default_rng(seed)
    left, right = side(rng, "x"), side(rng, "y")
    ddl = DDL + (
        "CREATE STREAM j AS SELECT a.k AS lk, x, a.ts AS lt, b.k AS rk, y, b.ts AS rt"
        f" FROM a {kind} b ON a.k = b.k WITH (state_ttl = INTERVAL '{TTL}' MILLISECOND);"
    )
    out, late = run_two_inputs(
        random.Random(seed),
        ddl,
        [("a", batches(rng, left)), ("b", batches(rng, right))],
        cores=cores,
        threaded=False,
    )
    assert late == 0
    cols = ["lk", "x", "lt", "rk", "y", "rt"]
    got = pa.Table.from_batches(out) if out else None
    _, want = duck(
        f"SELECT a.k AS lk, x, a.ts AS lt, b.k AS rk, y, b.ts AS rt FROM a {kind} b ON a.k = b.k",
        a=left,
        b=right,
    )
    assert_same_rows(rows_of(got, cols) if got is not None else [], want, cols, seed=seed)


@pytest.mark.parametrize("cores", [1, 2])
def test_rows_held_stay_bounded(cores: int) -> None:
    """Time moves on and keys keep coming: each side holds about the rows of
    the last TTL, however long the stream runs."""
    with laminardb.open(cores=cores) as db:
        db.execute(
            "CREATE SOURCE a (k VARCHAR, x BIGINT, ts BIGINT, WATERMARK FOR ts AS ts);"
            "CREATE SOURCE b (k VARCHAR, y BIGINT, ts BIGINT, WATERMARK FOR ts AS ts);"
            "CREATE STREAM j AS SELECT a.k, x, y FROM a JOIN b ON a.k = b.k"
            " WITH (state_ttl = INTERVAL '100' MILLISECOND);"
        )
        sub = db.subscribe("j")
        per, held, joined = 200, [], 0
        for t in range(300):
            keys = [f"key{(t * per + i) % 5000}" for i in range(per)]
            ts = [t * 10] * per
            db.source("a").push({"k": keys, "x": list(range(per)), "ts": ts})
            db.source("b").push({"k": keys, "y": list(range(per)), "ts": ts})
            db.run_until_idle()
            while (batch := sub.poll(0)) is not None:
                joined += batch.num_rows
            m = {
                r["metric"]: r["value"]
                for r in db.metrics().to_pylist()
                if r["kind"] == "stream" and r["name"] == "j"
            }
            held.append(m["join_left_rows"] + m["join_right_rows"])
        assert joined >= 300 * per  # every row met its partner pushed with it
        # 100 ms of rows per side (11 pushes), whatever the stream's length.
        assert max(held[20:]) <= 2 * 12 * per, held[-10:]


def test_unbounded_join_refusals() -> None:
    with laminardb.open() as db:
        db.execute(DDL + "CREATE SOURCE c (k VARCHAR, ts BIGINT);")
        with pytest.raises(laminardb.LaminarError) as e:  # no TTL: refused as before
            db.execute("CREATE STREAM j AS SELECT x, y FROM a JOIN b ON a.k = b.k")
        assert e.value.code == "LDB-1010"
        assert "state_ttl" in str(e.value)
        with pytest.raises(laminardb.LaminarError) as e:  # an input without a watermark
            db.execute(
                "CREATE STREAM j AS SELECT x FROM a JOIN c ON a.k = c.k"
                " WITH (state_ttl = INTERVAL '1' SECOND)"
            )
        assert e.value.code == "LDB-1010"
        assert "'c'" in str(e.value)

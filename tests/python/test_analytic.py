"""Analytic functions over streams (OVER) against DuckDB's batch answer.

Rows arrive out of order within the watermark delay, some behind it (late,
dropped and counted); the stream's rows after the final watermark equal
DuckDB's window functions over the rows that were not late. Ties on event
time go in arrival order: DuckDB orders by (ts, id), ``id`` being the arrival
index, and computes LAST_VALUE's last peer over (k, ts) by id.
"""

from __future__ import annotations

import random
from pathlib import Path

import pyarrow as pa
import pytest
from _oracle_util import (
    FINAL_WATERMARK,
    announce_seed,
    assert_same_rows,
    close_as,
    duck,
    examples,
    rows_of,
    seed_strategy_bounds,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import laminardb

SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("k", pa.string()),
        ("g", pa.int64()),
        ("v", pa.int64()),
        ("s", pa.string()),
        ("ts", pa.int64()),
    ]
)

DDL = (
    "CREATE SOURCE t (id BIGINT, k VARCHAR, g BIGINT, v BIGINT, s VARCHAR, ts BIGINT, "
    "WATERMARK FOR ts AS ts - INTERVAL '{delay}' MILLISECOND);"
)

#: The stream under test: every function, one window.
OVER = "OVER (PARTITION BY k, g ORDER BY ts)"
STREAM = (
    "CREATE STREAM a AS SELECT id, k, g, v, s, ts, "
    f"LAG(v) {OVER} AS lag1, LAG(s, 2, 'none') {OVER} AS lag2, "
    f"LEAD(v) {OVER} AS lead1, LEAD(v, 3, -1) {OVER} AS lead3, "
    f"ROW_NUMBER() {OVER} AS rn, RANK() {OVER} AS rk, DENSE_RANK() {OVER} AS dr, "
    f"FIRST_VALUE(s) {OVER} AS fv, LAST_VALUE(v) {OVER} AS lv, "
    f"LAST_VALUE(s) OVER (PARTITION BY k, g ORDER BY ts ROWS BETWEEN UNBOUNDED "
    f"PRECEDING AND CURRENT ROW) AS lvr, v + LAG(v, 1, 0) {OVER} AS vsum "
    "FROM t WHERE v IS NULL OR v <> 7;"
)
COLUMNS = [
    "id", "k", "g", "v", "s", "ts", "lag1", "lag2", "lead1", "lead3", "rn", "rk", "dr",
    "fv", "lv", "lvr", "vsum",
]  # fmt: skip
#: DuckDB's query over the kept rows, ties broken by id.
W = "OVER (PARTITION BY k, g ORDER BY ts, id)"
DUCK = (
    "SELECT id, k, g, v, s, ts, "
    f"LAG(v) {W}, LAG(s, 2, 'none') {W}, LEAD(v) {W}, LEAD(v, 3, -1) {W}, "
    f"ROW_NUMBER() {W}, RANK() OVER (PARTITION BY k, g ORDER BY ts), "
    "DENSE_RANK() OVER (PARTITION BY k, g ORDER BY ts), "
    f"FIRST_VALUE(s) {W}, "
    "LAST_VALUE(v) OVER (PARTITION BY k, g, ts ORDER BY id ROWS BETWEEN UNBOUNDED "
    "PRECEDING AND UNBOUNDED FOLLOWING), s, v + LAG(v, 1, 0) "
    f"{W} FROM t WHERE v IS NULL OR v <> 7"
)


def make_rows(rng: random.Random, delay: int) -> tuple[list[dict], list[int]]:
    """Rows in arrival order and the sizes of the batches they are pushed in.

    Event times advance with jitter within the delay; a few rows are pushed
    far behind (late unless the watermark has not reached them yet).
    """
    nkeys = rng.choice([1, 3, 40])
    n = rng.randint(0, 400)
    base = rng.randint(-1000, 1000)
    rows = []
    for i in range(n):
        base += rng.choice([0, 0, 1, 2, 5])
        ts = base + rng.randint(0, delay - 1) if delay > 0 else base
        if rng.random() < 0.03:
            ts -= rng.randint(delay + 1, 3 * delay + 20)
        rows.append(
            {
                "id": i,
                "k": None if rng.random() < 0.1 else f"k{rng.randrange(nkeys)}",
                "g": rng.choice([None, 0, 1]),
                "v": None if rng.random() < 0.15 else rng.randint(-5, 9),
                "s": None if rng.random() < 0.1 else rng.choice(["x", "yy", "", "zzz"]),
                "ts": ts,
            }
        )
    sizes = []
    left = n
    while left > 0:
        size = min(left, rng.choice([1, 2, 7, 30, 200]))
        sizes.append(size)
        left -= size
    return rows, sizes


def kept_rows(rows: list[dict], sizes: list[int], delay: int) -> tuple[list[dict], int]:
    """The rows not late (behind the watermark of the batches before theirs).

    Late rows are counted among those the stream's WHERE keeps (v <> 7).
    """
    kept, late, wm, at = [], 0, None, 0
    for size in sizes:
        for r in rows[at : at + size]:
            if wm is not None and r["ts"] < wm:
                late += r["v"] != 7
            else:
                kept.append(r)
        at += size
        top = max(r["ts"] for r in rows[:at])
        wm = top - delay if wm is None else max(wm, top - delay)
    return kept, late


def batches(rows: list[dict], sizes: list[int]) -> list[pa.RecordBatch]:
    """The rows cut into record batches of the given sizes."""
    out, at = [], 0
    for size in sizes:
        out.append(pa.RecordBatch.from_pylist(rows[at : at + size], schema=SCHEMA))
        at += size
    return out


def drain(sub: laminardb.Subscription, out: list[pa.RecordBatch]) -> int:
    """Take every batch queued on ``sub`` now; return how many."""
    taken = 0
    while (batch := sub.poll(0)) is not None:
        out.append(batch)
        taken += 1
    return taken


def run_stream(
    rng: random.Random,
    rows: list[dict],
    sizes: list[int],
    ddl: str,
    name: str,
    cores: int,
    *,
    threaded: bool = False,
) -> tuple[list[pa.RecordBatch], int]:
    """Push the rows in their batches (running inline now and then, or on the
    reactor threads), close with the final watermark; return the stream's
    output and late-row count."""
    out: list[pa.RecordBatch] = []
    with laminardb.open(cores=cores) as db:
        db.execute(ddl)
        sub = db.subscribe(name)
        src = db.source("t")
        if threaded:
            db.start()
        for batch in batches(rows, sizes):
            src.push(batch)
            if not threaded and rng.random() < 0.5:
                db.run_until_idle()
            drain(sub, out)
        if threaded:
            db.stop()
        src.watermark(FINAL_WATERMARK)
        db.run_until_idle()
        drain(sub, out)
        return out, db.late_rows(name)


def oracle(kept: list[dict]) -> list[tuple]:
    """DuckDB's answer over the kept rows."""
    table = pa.Table.from_pylist(kept, schema=SCHEMA)
    _, want = duck(DUCK, t=table)
    return want


@settings(max_examples=examples(25), deadline=None)
@given(
    seed=st.integers(*seed_strategy_bounds()),
    delay=st.sampled_from([0, 5, 50]),
    cores=st.sampled_from([1, 2]),
    threaded=st.booleans(),
)
def test_analytic_matches_duckdb(seed: int, delay: int, cores: int, *, threaded: bool) -> None:
    """Every function over many keys, NULLs and disorder equals DuckDB's answer."""
    announce_seed(seed)
    rng = random.Random(seed)
    rows, sizes = make_rows(rng, delay)
    kept, want_late = kept_rows(rows, sizes, delay)
    ddl = DDL.format(delay=delay) + STREAM
    out, late = run_stream(rng, rows, sizes, ddl, "a", cores, threaded=threaded)
    assert late == want_late, f"seed {seed}"
    got = rows_of(pa.Table.from_batches(out), COLUMNS) if out else []
    assert_same_rows(got, oracle(kept), COLUMNS, seed=seed)


#: Aggregates over frames: ROWS n PRECEDING (ties by arrival) and RANGE.
FR = "PARTITION BY k ORDER BY ts"
FRAMES = (
    "CREATE STREAM f AS SELECT id, "
    f"SUM(v) OVER ({FR} ROWS BETWEEN 3 PRECEDING AND CURRENT ROW) AS s4, "
    f"AVG(v) OVER ({FR} ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) AS a2, "
    f"MAX(s) OVER ({FR} ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS mx, "
    f"COUNT(*) OVER ({FR} ROWS BETWEEN CURRENT ROW AND CURRENT ROW) AS one, "
    f"COUNT(*) OVER ({FR} RANGE BETWEEN INTERVAL '7' MILLISECOND PRECEDING AND "
    "CURRENT ROW) AS c7, "
    f"COUNT(v) OVER ({FR} RANGE BETWEEN INTERVAL '7' MILLISECOND PRECEDING AND "
    "CURRENT ROW) AS cv7, "
    f"MIN(s) OVER ({FR} RANGE BETWEEN INTERVAL '7' MILLISECOND PRECEDING AND "
    "CURRENT ROW) AS mn7, "
    f"SUM(v) OVER ({FR} RANGE BETWEEN INTERVAL '0' MILLISECOND PRECEDING AND "
    "CURRENT ROW) AS peers "
    "FROM t;"
)
FRAME_COLUMNS = ["id", "s4", "a2", "mx", "one", "c7", "cv7", "mn7", "peers"]
FW = "PARTITION BY k ORDER BY ts, id"
DUCK_FRAMES = (
    "SELECT id, "
    f"SUM(v) OVER ({FW} ROWS BETWEEN 3 PRECEDING AND CURRENT ROW), "
    f"AVG(v) OVER ({FW} ROWS BETWEEN 1 PRECEDING AND CURRENT ROW), "
    f"MAX(s) OVER ({FW} ROWS BETWEEN 2 PRECEDING AND CURRENT ROW), 1, "
    f"COUNT(*) OVER ({FR} RANGE BETWEEN 7 PRECEDING AND CURRENT ROW), "
    f"COUNT(v) OVER ({FR} RANGE BETWEEN 7 PRECEDING AND CURRENT ROW), "
    f"MIN(s) OVER ({FR} RANGE BETWEEN 7 PRECEDING AND CURRENT ROW), "
    f"SUM(v) OVER ({FR} RANGE BETWEEN CURRENT ROW AND CURRENT ROW) FROM t"
)


@settings(max_examples=examples(20), deadline=None)
@given(
    seed=st.integers(*seed_strategy_bounds()),
    delay=st.sampled_from([0, 5, 50]),
    cores=st.sampled_from([1, 2]),
)
def test_frame_aggregates_match_duckdb(seed: int, delay: int, cores: int) -> None:
    """COUNT/SUM/AVG/MIN/MAX over ROWS and RANGE frames equal DuckDB's answer."""
    announce_seed(seed)
    rng = random.Random(seed)
    rows, sizes = make_rows(rng, delay)
    kept, _ = kept_rows(rows, sizes, delay)
    out, _ = run_stream(rng, rows, sizes, DDL.format(delay=delay) + FRAMES, "f", cores)
    got = rows_of(pa.Table.from_batches(out), FRAME_COLUMNS) if out else []
    _, want = duck(DUCK_FRAMES, t=pa.Table.from_pylist(kept, schema=SCHEMA))
    assert_same_rows(got, want, FRAME_COLUMNS, seed=seed)


#: Top-N per window over a windowed stream, as a subquery and with QUALIFY.
TOPN = (
    "CREATE STREAM w AS SELECT k, g, window_start, SUM(v) AS sv, COUNT(*) AS n FROM t "
    "GROUP BY k, g, tumble(ts, INTERVAL '20' MILLISECOND);"
    "CREATE STREAM top AS SELECT * FROM (SELECT window_start, k, g, sv, ROW_NUMBER() "
    "OVER (PARTITION BY window_start ORDER BY sv DESC, n, k NULLS FIRST, g) AS rn FROM w "
    "WHERE n > 1) WHERE rn <= 3;"
    "CREATE STREAM topq AS SELECT window_start, k, g, sv, RANK() OVER (PARTITION BY "
    "window_start, g ORDER BY sv) AS r, DENSE_RANK() OVER (PARTITION BY window_start, g "
    "ORDER BY sv) AS d FROM w QUALIFY r <= 2 OR d = 3;"
)
DUCK_W = (
    "WITH w AS (SELECT k, g, ts - ((ts % 20) + 20) % 20 AS window_start, SUM(v) AS sv, "
    "COUNT(*) AS n "
    "FROM t GROUP BY ALL)"
)
DUCK_TOP = (
    f"{DUCK_W} SELECT * FROM (SELECT window_start, k, g, sv, ROW_NUMBER() OVER "
    "(PARTITION BY window_start ORDER BY sv DESC NULLS LAST, n, k NULLS FIRST, g NULLS "
    "LAST) AS rn FROM w WHERE n > 1) WHERE rn <= 3"
)
DUCK_TOPQ = (
    f"{DUCK_W} SELECT window_start, k, g, sv, RANK() OVER (PARTITION BY window_start, g "
    "ORDER BY sv NULLS LAST) AS r, DENSE_RANK() OVER (PARTITION BY window_start, g ORDER BY "
    "sv NULLS LAST) AS d FROM w QUALIFY r <= 2 OR d = 3"
)


@settings(max_examples=examples(20), deadline=None)
@given(
    seed=st.integers(*seed_strategy_bounds()),
    delay=st.sampled_from([0, 5, 50]),
    cores=st.sampled_from([1, 2]),
)
def test_top_n_per_window_matches_duckdb(seed: int, delay: int, cores: int) -> None:
    """ROW_NUMBER / RANK / DENSE_RANK per window of a windowed stream equal DuckDB's."""
    announce_seed(seed)
    rng = random.Random(seed)
    rows, sizes = make_rows(rng, delay)
    out: dict[str, list[pa.RecordBatch]] = {"top": [], "topq": []}
    with laminardb.open(cores=cores) as db:
        db.execute(DDL.format(delay=delay) + TOPN)
        subs = {name: db.subscribe(name) for name in out}
        src = db.source("t")
        for batch in batches(rows, sizes):
            src.push(batch)
            if rng.random() < 0.5:
                db.run_until_idle()
            for name, sub in subs.items():
                drain(sub, out[name])
        src.watermark(FINAL_WATERMARK)
        db.run_until_idle()
        for name, sub in subs.items():
            drain(sub, out[name])
        late = db.late_rows("w")
    # The window stream's own late rule: a row is late when its window closed.
    kept, wm, at, nlate = [], None, 0, 0
    for size in sizes:
        for r in rows[at : at + size]:
            if wm is not None and r["ts"] - r["ts"] % 20 + 20 <= wm:
                nlate += 1
            else:
                kept.append(r)
        at += size
        top = max(r["ts"] for r in rows[:at])
        wm = top - delay if wm is None else max(wm, top - delay)
    assert late == nlate, f"seed {seed}"
    table = pa.Table.from_pylist(kept, schema=SCHEMA)
    for name, query, cols in [
        ("top", DUCK_TOP, ["window_start", "k", "g", "sv", "rn"]),
        ("topq", DUCK_TOPQ, ["window_start", "k", "g", "sv", "r", "d"]),
    ]:
        got = rows_of(pa.Table.from_batches(out[name]), cols) if out[name] else []
        _, want = duck(query, t=table)
        assert_same_rows(got, want, cols, seed=seed)


@settings(max_examples=examples(15), deadline=None)
@given(seed=st.integers(*seed_strategy_bounds()))
def test_analytic_releases_in_event_time_order(seed: int) -> None:
    """Without LEAD, rows come out in event-time order, ties in arrival order."""
    announce_seed(seed)
    rng = random.Random(seed)
    rows, sizes = make_rows(rng, 20)
    out: list[pa.RecordBatch] = []
    with laminardb.open() as db:
        db.execute(
            DDL.format(delay=20) + "CREATE STREAM o AS SELECT id, ts, "
            "ROW_NUMBER() OVER (PARTITION BY k ORDER BY ts) AS rn FROM t;"
        )
        sub = db.subscribe("o")
        src = db.source("t")
        for batch in batches(rows, sizes):
            src.push(batch)
            db.run_until_idle()
            drain(sub, out)
        src.watermark(FINAL_WATERMARK)
        db.run_until_idle()
        drain(sub, out)
    got = rows_of(pa.Table.from_batches(out), ["ts", "id"]) if out else []
    assert got == sorted(got), f"seed {seed}"
    kept, _ = kept_rows(rows, sizes, 20)
    assert len(got) == len(kept)


@settings(max_examples=examples(12), deadline=None)
@given(
    seed=st.integers(*seed_strategy_bounds()),
    crash=st.booleans(),
    cores=st.sampled_from([(1, 1), (2, 2), (1, 2), (2, 1)]),
)
def test_analytic_restart_gives_the_uninterrupted_answer(
    tmp_path_factory: pytest.TempPathFactory, seed: int, cores: tuple[int, int], *, crash: bool
) -> None:
    """A durable stream checkpointed mid-run and restarted (with as many or
    another number of cores) equals DuckDB's answer."""
    announce_seed(seed)
    rng = random.Random(seed)
    delay = 5
    rows, sizes = make_rows(rng, delay)
    kept, _ = kept_rows(rows, sizes, delay)
    ddl = (
        DDL.format(delay=delay)
        + STREAM
        + FRAMES
        + "CREATE MATERIALIZED VIEW av AS SELECT * FROM a;"
        + "CREATE MATERIALIZED VIEW fv AS SELECT * FROM f;"
    )
    data: Path = tmp_path_factory.mktemp("analytic") / "data"
    options: dict[str, object] = {"checkpoint_interval": "1 hour", "wal_mode": "sync"}
    parts = batches(rows, sizes)
    half = len(parts) // 2
    db = laminardb.open(data, **options, cores=cores[0])
    db.execute(ddl)
    src = db.source("t")
    for step, batch in enumerate(parts[:half]):
        src.push(batch)
        db.run_until_idle()
        if step == half // 2:
            db.checkpoint()
    close_as(db, data, crash=crash)  # or as a kill -9 leaves it
    with laminardb.open(data, **options, cores=cores[1]) as db:
        db.execute(ddl)
        src = db.source("t")
        for batch in parts[half:]:
            src.push(batch)
            db.run_until_idle()
        src.watermark(FINAL_WATERMARK)
        db.run_until_idle()
        got = rows_of(db.query("SELECT * FROM av"), COLUMNS)
        got_frames = rows_of(db.query("SELECT * FROM fv"), FRAME_COLUMNS)
    assert_same_rows(got, oracle(kept), COLUMNS, seed=seed)
    _, want = duck(DUCK_FRAMES, t=pa.Table.from_pylist(kept, schema=SCHEMA))
    assert_same_rows(got_frames, want, FRAME_COLUMNS, seed=seed)


def test_analytic_errors_carry_codes() -> None:
    """ORDER BY not the event time, frames, misuse: LDB codes with line and column."""
    with laminardb.open() as db:
        db.execute(
            DDL.format(delay=5) + "CREATE SOURCE nw (k VARCHAR, ts BIGINT);"
            "CREATE STREAM plain AS SELECT k, v, ts FROM t;"
            "CREATE SOURCE q (k VARCHAR, p DOUBLE, ts BIGINT, WATERMARK FOR ts AS ts);"
            "CREATE STREAM w AS SELECT k, window_start, COUNT(*) AS n FROM t "
            "GROUP BY k, tumble(ts, INTERVAL '1' SECOND);"
        )
        # (query, code, the text the error points at)
        cases = [
            ("SELECT k, LAG(v) OVER (PARTITION BY k ORDER BY v) FROM t", "LDB-1005", "v) FROM"),
            ("SELECT k,\n ROW_NUMBER() OVER (ORDER BY ts DESC) FROM t", "LDB-1005", "ts DESC"),
            ("SELECT k, ROW_NUMBER() OVER (ORDER BY ts, id) FROM t", "LDB-1005", "ts, id"),
            ("SELECT LAG(v) OVER (PARTITION BY k) FROM t", "LDB-1005", "LAG"),
            (
                "SELECT FIRST_VALUE(v) OVER (ORDER BY ts ROWS BETWEEN 2 PRECEDING AND "
                "CURRENT ROW) FROM t",
                "LDB-1005",
                "ROWS",
            ),
            ("SELECT LAG(v, -1) OVER (ORDER BY ts) FROM t", "LDB-1102", "-1"),
            ("SELECT LAG(s, 1, 5.5) OVER (ORDER BY ts) FROM t", "LDB-2001", "5.5"),
            ("SELECT NTILE(2) OVER (ORDER BY ts) FROM t", "LDB-1005", "NTILE"),
            ("SELECT SUM(v) OVER (PARTITION BY k ORDER BY ts) FROM t", "LDB-1005", "SUM"),
            (
                "SELECT SUM(v) OVER (ORDER BY ts ROWS BETWEEN UNBOUNDED PRECEDING AND "
                "CURRENT ROW) FROM t",
                "LDB-1005",
                "ROWS",
            ),
            (
                "SELECT MAX(v) OVER (ORDER BY ts RANGE BETWEEN 'x' PRECEDING AND "
                "CURRENT ROW) FROM t",
                "LDB-1005",
                "'x'",
            ),
            (
                "SELECT COUNT(v) OVER (ORDER BY ts ROWS BETWEEN 1 PRECEDING AND "
                "1 FOLLOWING) FROM t",
                "LDB-1005",
                "ROWS",
            ),
            ("SELECT AVG(s) OVER (ORDER BY ts ROWS 2 PRECEDING) FROM t", "LDB-2001", "s)"),
            ("SELECT k, RANK() OVER (ORDER BY v) AS r FROM plain", "LDB-1005", "v) AS"),
            (
                "SELECT t.k, ROW_NUMBER() OVER (ORDER BY t.ts) FROM t ASOF JOIN q "
                "MATCH_CONDITION(t.ts >= q.ts) ON t.k = q.k",
                "LDB-1005",
                "ROW_NUMBER",
            ),
            ("SELECT k, RANK() OVER (PARTITION BY k ORDER BY n) FROM w", "LDB-1005", "n) FROM"),
            (
                "SELECT k, LAG(n) OVER (PARTITION BY window_start ORDER BY n) FROM w",
                "LDB-1005",
                "LAG",
            ),
            (
                "SELECT * FROM (SELECT k, RANK() OVER (PARTITION BY window_start ORDER BY n) "
                "AS r FROM w) GROUP BY k",
                "LDB-1005",
                "CREATE",
            ),
            ("SELECT k FROM t WHERE ROW_NUMBER() OVER (ORDER BY ts) = 1", "LDB-1005", "ROW_"),
            ("SELECT k FROM t QUALIFY k = 'a'", "LDB-1005", "k = "),
            ("SELECT k, ROW_NUMBER() OVER (ORDER BY ts) FROM nw", "LDB-1005", "ts)"),
            ("SELECT k, COUNT(*), RANK() OVER (ORDER BY ts) FROM t", "LDB-1005", "RANK"),
            (
                "SELECT LAG(v) OVER (ORDER BY ts), LEAD(v) OVER (PARTITION BY k ORDER BY ts) "
                "FROM t",
                "LDB-1005",
                "LEAD",
            ),
        ]
        prefix = "CREATE STREAM bad AS "
        for query, code, marker in cases:
            sql = prefix + query
            at = sql.index(marker)
            line = sql.count("\n", 0, at) + 1
            column = at - (sql.rfind("\n", 0, at) + 1) + 1
            with pytest.raises(laminardb.LaminarError) as e:
                db.execute(sql + ";")
            assert e.value.code == code, (query, str(e.value))
            assert (e.value.line, e.value.column) == (line, column), (query, str(e.value))
        # The source survived, and a good stream still goes in.
        db.execute("CREATE STREAM ok AS SELECT k, ROW_NUMBER() OVER (ORDER BY ts) AS rn FROM t;")
        explained = db.query("EXPLAIN ok").to_pylist()
        assert any(row["operator"] == "analytic" for row in explained), explained


def test_partitioning_follows_partition_by() -> None:
    """A window function's PARTITION BY keys split the input (Spark adapter), and
    a SELECT over a view refuses OVER instead of computing it wrongly."""
    with laminardb.open() as db:
        db.execute(
            DDL.format(delay=5) + STREAM + TOPN + "CREATE STREAM all_rows AS SELECT id, "
            "ROW_NUMBER() OVER (ORDER BY ts) AS rn FROM t;"
            "CREATE MATERIALIZED VIEW mv AS SELECT k, v FROM t;"
        )

        def split(name: str) -> tuple[str, set[str]]:
            rows = db.partitioning(name).to_pylist()
            kind = next(r["name"] for r in rows if r["role"] == "partitioning")
            return kind, {r["name"] for r in rows if r["role"] == "key"}

        assert split("a") == ("key", {"k", "g"})
        assert split("all_rows") == ("single", set())
        assert split("top") == ("single", set())  # every key of a window together
        assert split("topq") == ("key", {"g"})
        with pytest.raises(laminardb.SQLError) as e:
            db.query("SELECT k, ROW_NUMBER() OVER (ORDER BY v) FROM mv")
        assert e.value.code == "LDB-1005"
    # Thread-per-core: routed by the PARTITION BY columns, one chain otherwise.
    with laminardb.open(cores=2) as db:
        db.execute(DDL.format(delay=5) + STREAM + TOPN)
        parts = {
            r["name"]: r["value"]
            for r in db.metrics().to_pylist()
            if r["kind"] == "stream" and r["metric"] == "partitions"
        }
        assert parts["a"] == 2
        assert parts["top"] == 1


def test_held_rows_meet_max_state_bytes() -> None:
    """Rows held for the watermark count in max_state_bytes: the batch that
    would pass it is refused whole (LDB-3008) and changes nothing; the rows
    accepted before it still give DuckDB's answer, and metrics show them."""
    with laminardb.open() as db:
        db.execute(
            DDL.format(delay=1_000_000) + STREAM.rstrip(";") + " WITH (max_state_bytes = '1 MB');"
        )
        sub = db.subscribe("a")
        src = db.source("t")
        rng = random.Random(7)
        accepted: list[dict] = []
        error: laminardb.LaminarError | None = None
        for b in range(400):
            rows = [
                {"id": b * 50 + i, "k": f"k{rng.randrange(300)}", "g": i % 2, "v": i,
                 "s": "x" * rng.randrange(40), "ts": b * 50 + i}
                for i in range(50)
            ]  # fmt: skip
            src.push(pa.RecordBatch.from_pylist(rows, schema=SCHEMA))
            try:
                db.run_until_idle()
            except laminardb.LaminarError as e:
                error, failed = e, rows
                break
            accepted += rows
        assert error is not None
        assert error.code == "LDB-3008", error
        assert "'a'" in str(error)
        assert "max_state_bytes" in str(error)
        assert len(accepted) > 0
        metrics = {
            r["metric"]: r["value"]
            for r in db.metrics().to_pylist()
            if r["kind"] == "stream" and r["name"] == "a"
        }
        held = [r for r in accepted if r["v"] != 7]  # the stream's WHERE
        assert metrics["held_rows"] == len(held)
        assert metrics["state_groups"] == len({(r["k"], r["g"]) for r in held})
        src.push(pa.RecordBatch.from_pylist(failed, schema=SCHEMA))  # refused alike
        with pytest.raises(laminardb.IngestError):
            db.run_until_idle()
        src.watermark(FINAL_WATERMARK)
        db.run_until_idle()
        out: list[pa.RecordBatch] = []
        drain(sub, out)
    got = rows_of(pa.Table.from_batches(out), COLUMNS)
    assert_same_rows(got, oracle(accepted), COLUMNS)


@settings(max_examples=examples(10), deadline=None)
@given(seed=st.integers(*seed_strategy_bounds()), cores=st.sampled_from([1, 2]))
def test_timestamp_event_time_matches_duckdb(seed: int, cores: int) -> None:
    """A TIMESTAMP event time orders and frames rows to the microsecond (the
    watermark is in milliseconds): peers, ranks and RANGE frames as DuckDB's."""
    announce_seed(seed)
    rng = random.Random(seed)
    delay = 5
    rows, sizes = make_rows(rng, delay)
    for r in rows:  # micros: some rows share a millisecond, some a microsecond
        r["ts"] = r["ts"] * 1000 + rng.choice([0, 0, 500, 999])
    schema = SCHEMA.set(SCHEMA.get_field_index("ts"), pa.field("ts", pa.timestamp("us")))
    # Late: behind the watermark, in ms, of the batches before.
    kept, wm, at = [], None, 0
    for size in sizes:
        kept += [r for r in rows[at : at + size] if wm is None or r["ts"] // 1000 >= wm]
        at += size
        top = max(r["ts"] for r in rows[:at]) // 1000 - delay
        wm = top if wm is None else max(wm, top)
    over = "OVER (PARTITION BY k ORDER BY ts)"
    ddl = (
        "CREATE SOURCE t (id BIGINT, k VARCHAR, g BIGINT, v BIGINT, s VARCHAR, ts TIMESTAMP, "
        f"WATERMARK FOR ts AS ts - INTERVAL '{delay}' MILLISECOND);"
        f"CREATE STREAM a AS SELECT id, RANK() {over} AS rk, LAG(v) OVER (PARTITION BY k "
        "ORDER BY ts) AS lg, COUNT(*) OVER (PARTITION BY k ORDER BY ts RANGE BETWEEN "
        "INTERVAL '7' MILLISECOND PRECEDING AND CURRENT ROW) AS c FROM t;"
    )
    out: list[pa.RecordBatch] = []
    with laminardb.open(cores=cores) as db:
        db.execute(ddl)
        sub = db.subscribe("a")
        src = db.source("t")
        at = 0
        for size in sizes:
            src.push(pa.RecordBatch.from_pylist(rows[at : at + size], schema=schema))
            at += size
            db.run_until_idle()
            drain(sub, out)
        src.watermark(FINAL_WATERMARK)
        db.run_until_idle()
        drain(sub, out)
    columns = ["id", "rk", "lg", "c"]
    got = rows_of(pa.Table.from_batches(out), columns) if out else []
    _, want = duck(
        f"SELECT id, RANK() {over}, LAG(v) OVER (PARTITION BY k ORDER BY ts, id), "
        "COUNT(*) OVER (PARTITION BY k ORDER BY ts RANGE BETWEEN INTERVAL 7 MILLISECOND "
        "PRECEDING AND CURRENT ROW) FROM t",
        t=pa.Table.from_pylist(kept, schema=schema),
    )
    assert_same_rows(got, want, columns, seed=seed)

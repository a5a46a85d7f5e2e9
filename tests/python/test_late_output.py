"""Late side outputs against DuckDB (issue 4, DESIGN §5b).

``CREATE STREAM ... WITH (late_output = 'name' | true)`` delivers the rows its
window operator counts as late to a stream of their own. The proof: over
seeded out-of-order data with rows generated beyond the bound on purpose,

* tumbling and hopping windows: DuckDB picks the late rows by the engine's
  documented model (each row met the watermark after the batch before it; a
  row none of whose windows is open is late, NULL times too) and the side
  output holds exactly those rows, while the stream's result is still DuckDB's
  over the rows in time;
* session windows: late rows are made late by construction (behind every
  session that could be open and the watermark minus gap and lateness), and
  the side output holds exactly them; the sessions are DuckDB's over the rest;

and in every case ``late_rows`` equals the number of rows delivered.
"""

from __future__ import annotations

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
    seed_strategy_bounds,
    split_batches,
    window_table,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from test_windows import (
    FILTERS,
    GROUPINGS,
    WINDOW_AGGREGATES,
    arrival_watermarks,
    hop_oracle,
    session_oracle,
    with_late_rows,
)

import laminardb

SEEDS = st.integers(*seed_strategy_bounds())

#: The input's columns: the late side output carries all of them.
COLUMNS = ["k", "g", "x", "y", "s", "ts"]

SOURCE = (
    "CREATE SOURCE t (k VARCHAR, g BIGINT, x BIGINT, y DOUBLE, s VARCHAR, ts BIGINT,"
    " WATERMARK FOR ts AS ts - INTERVAL '{delay}' MILLISECOND);"
)


def late_rows_oracle(where: str, size: int, hop: int, lateness: int) -> str:
    """DuckDB SQL: the rows of ``t`` (passing WHERE) that are late for windows of
    ``size`` every ``hop``: a NULL time, or every window containing the row had
    closed (end + lateness <= the watermark the row met)."""
    per = -(-size // hop)
    newest = f"(ts - ((ts % {hop}) + {hop}) % {hop})"
    cond = f"AND ({where.removeprefix('WHERE ')})" if where else ""
    return f"""
        WITH pairs AS (
          SELECT seq, ts, wm, {newest} - j * {hop} AS ws
          FROM t, (SELECT unnest(range(0, {per})) AS j) WHERE true {cond}
        ),
        late AS (
          SELECT seq FROM pairs WHERE ts IS NULL OR ws > ts - {size}
          GROUP BY seq
          HAVING bool_and(ts IS NULL OR ws + {size} + {lateness} <= wm)
        )
        SELECT {", ".join(COLUMNS)} FROM t WHERE seq IN (SELECT seq FROM late)"""


def with_null_times(rng: np.random.Generator, table: pa.Table, frac: float) -> pa.Table:
    """Set the time of a fraction of the rows to NULL (late everywhere)."""
    ts = table.column("ts").combine_chunks()
    mask = pa.array(rng.random(table.num_rows) < frac)
    nulled = pa.compute.if_else(mask, pa.scalar(None, pa.int64()), ts)
    return table.set_column(table.schema.get_field_index("ts"), "ts", nulled)


def window_late_case(seed: int, *, hop_kind: bool) -> None:
    """Tumbling (or hopping) windows with rows beyond the bound and NULL times."""
    announce_seed(seed)
    rng = np.random.default_rng(seed)
    size = int(rng.choice([10, 60, 100, 1000]))
    hop = size
    if hop_kind:
        hop = int(rng.choice([size // 10, size // 4, size // 2, size + 7]))
    data = window_table(rng, size_ms=size)
    table = with_null_times(rng, with_late_rows(rng, data, 0.1), 0.01)
    keys = GROUPINGS[int(rng.integers(len(GROUPINGS)))]
    where = FILTERS[int(rng.integers(len(FILTERS)))]
    lateness = int(rng.integers(0, size + 1)) if rng.random() < 0.5 else 0
    named = bool(rng.integers(2))
    late_name = "late_rows_of_w" if named else "w_late"
    option = f"late_output = '{late_name}'" if named else "late_output = TRUE"
    window = (
        f"hop(ts, INTERVAL '{size}' MILLISECOND, INTERVAL '{hop}' MILLISECOND)"
        if hop_kind
        else f"tumble(ts, INTERVAL '{size}' MILLISECOND)"
    )
    items = ", ".join(f"{ours} AS {alias}" for ours, _, alias in WINDOW_AGGREGATES)
    ddl = SOURCE.format(delay=data.delay_ms) + (
        f"CREATE STREAM w AS SELECT {', '.join(keys)}, window_start, window_end, {items} "
        f"FROM t {where} GROUP BY {', '.join(keys)}, {window}"
        f" WITH (allowed_lateness = {lateness}, {option});"
    )
    print(f"case: {window} delay={data.delay_ms} lateness={lateness} keys={keys} {where!r}")
    batches = split_batches(rng, table)
    if not batches:
        return
    # The reactor thread or the inline driver, one reactor or two (a stream with
    # a late output is not partitioned): the same rows are late either way.
    driver = str(rng.choice(["inline", "threaded"]))
    result = run_engine(
        ddl,
        batches,
        driver=driver,
        run_every=int(rng.choice([1, 3])),
        late_stream=late_name,
        cores=int(rng.choice([1, 2])),
    )
    t = arrival_watermarks(batches, data.delay_ms)
    names, expected = duck(
        hop_oracle(keys, where, size, hop, lateness, aggregates=WINDOW_AGGREGATES), t=t
    )
    assert_same_rows(rows_of(result.table, names), expected, names, seed=seed)
    _, late = duck(late_rows_oracle(where, size, hop, lateness), t=t)
    assert result.late is not None
    assert result.late.column_names == COLUMNS
    assert_same_rows(rows_of(result.late, COLUMNS), late, COLUMNS, seed=seed)
    assert result.late_rows == result.late.num_rows == len(late)


@settings(max_examples=examples(20), deadline=None)
@given(seed=SEEDS)
def test_tumble_late_output_matches_duckdb(seed):
    window_late_case(seed, hop_kind=False)


@settings(max_examples=examples(20), deadline=None)
@given(seed=SEEDS)
def test_hop_late_output_matches_duckdb(seed):
    window_late_case(seed, hop_kind=True)


def insert_late_rows(
    rng: np.random.Generator,
    batches: list[pa.RecordBatch],
    *,
    delay: int,
    gap: int,
    lateness: int,
    frac: float,
) -> tuple[list[pa.RecordBatch], pa.Table]:
    """Put rows late for sessions of ``gap`` into the batches, by construction.

    A late row's session ``[t, t + gap)`` ends before every row pushed so far
    (no open session can take it) and closes at or before the watermark it
    meets (``t + gap + lateness <= wm``); some late rows have a NULL time.

    Returns:
        The new batches and the late rows (in push order).
    """
    wm = None
    high = None
    low = None
    out: list[pa.RecordBatch] = []
    late: list[dict] = []
    for batch in batches:
        rows = batch.to_pylist()
        mixed: list[dict] = []
        for row in rows:
            if wm is not None and low is not None and rng.random() < frac:
                extra = int(rng.integers(0, 3 * gap + 1))
                t = min(low - gap, wm - gap - lateness) - extra
                bad = dict(row, ts=None if rng.random() < 0.1 else t)
                mixed.append(bad)
                late.append(bad)
            mixed.append(row)
            low = row["ts"] if low is None else min(low, row["ts"])
        out.append(pa.RecordBatch.from_pylist(mixed, schema=batch.schema))
        values = [r["ts"] for r in rows]
        if values:
            high = max(values) if high is None else max(high, max(values))
            wm = high - delay if wm is None else max(wm, high - delay)
    return out, pa.Table.from_pylist(late, schema=batches[0].schema)


@settings(max_examples=examples(25), deadline=None)
@given(seed=SEEDS)
def test_session_late_output_matches_duckdb(seed):
    """Sessions: the side output holds exactly the rows made late, the sessions
    are DuckDB's over the rest, and the counter agrees."""
    announce_seed(seed)
    rng = np.random.default_rng(seed)
    size = int(rng.choice([10, 100, 1000]))
    data = window_table(rng, size_ms=size)
    gap = int(rng.integers(1, 3 * size + 1))
    lateness = int(rng.integers(0, size + 1)) if rng.random() < 0.5 else 0
    keys = GROUPINGS[int(rng.integers(len(GROUPINGS)))]
    where = FILTERS[int(rng.integers(len(FILTERS)))]
    in_time = split_batches(rng, data.table)
    if not in_time:
        return
    batches, made_late = insert_late_rows(
        rng, in_time, delay=data.delay_ms, gap=gap, lateness=lateness, frac=0.05
    )
    items = ", ".join(f"{ours} AS {alias}" for ours, _, alias in WINDOW_AGGREGATES)
    ddl = SOURCE.format(delay=data.delay_ms) + (
        f"CREATE STREAM w AS SELECT {', '.join(keys)}, window_start, window_end, {items} "
        f"FROM t {where} GROUP BY {', '.join(keys)}, session(ts, INTERVAL '{gap}' MILLISECOND)"
        f" WITH (late_output = 'w_late', allowed_lateness = INTERVAL '{lateness}' MILLISECOND);"
    )
    print(f"case: session gap={gap} delay={data.delay_ms} lateness={lateness} {where!r}")
    result = run_engine(ddl, batches, run_every=int(rng.choice([1, 3])), late_stream="w_late")
    names, expected = duck(session_oracle(keys, where, gap), t=arrival_watermarks(in_time, 0))
    assert_same_rows(rows_of(result.table, names), expected, names, seed=seed)
    # Late rows that fail the WHERE are skipped, not late.
    _, late = duck(f"SELECT {', '.join(COLUMNS)} FROM late {where}", late=made_late)
    assert result.late is not None
    assert_same_rows(rows_of(result.late, COLUMNS), late, COLUMNS, seed=seed)
    assert result.late_rows == result.late.num_rows == len(late)


# ---------------------------------------------------------------------------
# The late stream as a stream; names and errors
# ---------------------------------------------------------------------------


def test_late_output_feeds_a_correction_stream():
    """A late output is a stream like others: a second windowed stream with a
    generous lateness aggregates the late rows (corrections per window)."""
    db = laminardb.open()
    db.execute("""
        CREATE SOURCE clicks (page VARCHAR, ts BIGINT) WITH (watermark = 'ts');
        CREATE STREAM per_10ms AS SELECT page, window_start, COUNT(*) AS n
          FROM clicks GROUP BY page, tumble(ts, INTERVAL '10' MILLISECOND)
          WITH (late_output = true);
        CREATE STREAM corrections AS SELECT page, window_start, COUNT(*) AS late_n
          FROM per_10ms_late GROUP BY page, tumble(ts, INTERVAL '10' MILLISECOND)
          WITH (allowed_lateness = INTERVAL '1' HOUR);
    """)
    late, fixes = db.subscribe("per_10ms_late"), db.subscribe("corrections")
    db.insert("clicks", {"page": ["a", "a"], "ts": [1, 25]})
    db.insert("clicks", {"page": ["a", "b", "a"], "ts": [3, 4, 12]})  # all behind 25
    db.insert("clicks", {"page": ["a"], "ts": [None]})
    db.source("clicks").watermark(2**63 - 1)
    db.run_until_idle()
    assert late.to_arrow_table().to_pylist() == [
        {"page": "a", "ts": 3},
        {"page": "b", "ts": 4},
        {"page": "a", "ts": 12},
        {"page": "a", "ts": None},
    ]
    assert db.late_rows("per_10ms") == 4
    got = sorted(
        (r["page"], r["window_start"], r["late_n"]) for r in fixes.to_arrow_table().to_pylist()
    )
    assert got == [("a", 0, 1), ("a", 10, 1), ("b", 0, 1)]
    assert db.late_rows("corrections") == 1  # the NULL time, late there too
    shown = {r["name"]: r for r in db.query("SHOW STREAMS").to_pylist()}
    assert shown["per_10ms_late"]["plan"] == "late rows of per_10ms"
    described = db.query("DESCRIBE per_10ms_late").to_pylist()
    assert [(r["column_name"], r["column_type"]) for r in described] == [
        ("page", "VARCHAR"),
        ("ts", "BIGINT"),
    ]
    explained = db.query("EXPLAIN per_10ms").to_pylist()
    assert any("late rows to per_10ms_late" in r["details"] for r in explained)
    explained = db.query("EXPLAIN per_10ms_late").to_pylist()
    assert [r["operator"] for r in explained if r["section"] == "logical"] == [
        "source",
        "late_rows",
        "output",
    ]
    # Split across engines by per_10ms's key: its window picks the late rows.
    parts = [(r["role"], r["name"]) for r in db.partitioning("per_10ms_late").to_pylist()]
    assert ("key", "page") in parts
    assert ("partitioning", "key") in parts
    db.close()


@pytest.mark.parametrize(
    ("option", "code"),
    [
        ("late_output = 'clicks'", "LDB-1004"),
        ("late_output = 'W'", "LDB-1004"),
        ("late_output = 'taken'", "LDB-1004"),
        ("late_output = 1", "LDB-6002"),
        ("late_output = ''", "LDB-6002"),
        ("late_output = INTERVAL '1' SECOND", "LDB-6002"),
        ("late_outptu = true", "LDB-6001"),
    ],
)
def test_bad_late_output_fails_at_create(option, code):
    db = laminardb.open()
    db.execute("""
        CREATE SOURCE clicks (page VARCHAR, ts BIGINT) WITH (watermark = 'ts');
        CREATE STREAM taken AS SELECT * FROM clicks;
    """)
    with pytest.raises(laminardb.LaminarError) as e:
        db.execute(
            "CREATE STREAM w AS SELECT page, COUNT(*) AS n FROM clicks\n"
            f"  GROUP BY page, tumble(ts, INTERVAL '1' SECOND) WITH ({option})"
        )
    assert e.value.code == code
    assert e.value.line == 2
    with pytest.raises(laminardb.SQLError):
        db.subscribe("w")  # nothing was created
    db.close()


def test_late_output_needs_a_window():
    db = laminardb.open()
    db.execute("CREATE SOURCE clicks (page VARCHAR, ts BIGINT) WITH (watermark = 'ts');")
    for query in (
        "SELECT page FROM clicks",
        "SELECT page, COUNT(*) AS n FROM clicks GROUP BY page",
    ):
        with pytest.raises(laminardb.ConfigError) as e:
            db.execute(f"CREATE STREAM w AS {query} WITH (late_output = true)")
        assert e.value.code == "LDB-6003"
    db.close()


def test_late_output_drops_with_its_stream():
    db = laminardb.open()
    db.execute("""
        CREATE SOURCE clicks (page VARCHAR, ts BIGINT) WITH (watermark = 'ts');
        CREATE STREAM w AS SELECT page, COUNT(*) AS n FROM clicks
          GROUP BY page, tumble(ts, INTERVAL '1' SECOND) WITH (late_output = true);
        CREATE STREAM reader AS SELECT page FROM w_late;
    """)
    with pytest.raises(laminardb.SQLError) as e:
        db.execute("DROP STREAM w_late")
    assert e.value.code == "LDB-1007"
    with pytest.raises(laminardb.SQLError) as e:
        db.execute("DROP STREAM w")
    assert e.value.code == "LDB-1007"
    assert "reader" in str(e.value)
    db.execute("DROP STREAM reader; DROP STREAM w")
    with pytest.raises(laminardb.SQLError) as e:
        db.subscribe("w_late")
    assert e.value.code == "LDB-1002"
    db.close()


def test_late_output_survives_restart(tmp_path):
    """The catalog brings the late output back with its stream, the counter is
    checkpointed, and late rows after the restart arrive."""
    path = str(tmp_path / "db")
    with laminardb.open(path, checkpoint_interval="1 hour") as db:
        db.execute("""
            CREATE SOURCE clicks (page VARCHAR, ts BIGINT) WITH (watermark = 'ts');
            CREATE STREAM w AS SELECT page, window_start, COUNT(*) AS n FROM clicks
              GROUP BY page, session(ts, INTERVAL '5' MILLISECOND)
              WITH (late_output = 'stragglers');
        """)
        db.insert("clicks", {"page": ["a", "a"], "ts": [1, 100]})
        db.insert("clicks", {"page": ["a"], "ts": [2]})
        db.run_until_idle()
        db.checkpoint()
        assert db.late_rows("w") == 1
    with laminardb.open(path, checkpoint_interval="1 hour") as db:
        assert db.late_rows("w") == 1
        late = db.subscribe("stragglers")
        db.insert("clicks", {"page": ["b"], "ts": [50]})
        db.run_until_idle()
        assert late.to_arrow_table().to_pylist() == [{"page": "b", "ts": 50}]
        assert db.late_rows("w") == 2


def test_late_output_of_a_changelog_keeps_weights():
    """Over a changelog input the late rows keep their ``_weight`` (the late
    stream is a changelog too), with EMIT CHANGES; a view over it applies them."""
    db = laminardb.open()
    db.execute("""
        CREATE SOURCE c (k VARCHAR, ts BIGINT, _weight BIGINT);
        CREATE STREAM w AS SELECT k, window_start, COUNT(*) AS n FROM c
          GROUP BY k, hop(ts, INTERVAL '10' MILLISECOND, INTERVAL '5' MILLISECOND)
          EMIT CHANGES WITH (late_output = true);
        CREATE MATERIALIZED VIEW late_per_key AS SELECT k, COUNT(*) AS n FROM w_late GROUP BY k;
    """)
    late = db.subscribe("w_late")
    db.insert("c", {"k": ["a", "a"], "ts": [1, 40], "_weight": [1, 1]})
    db.source("c").watermark(30)
    db.insert("c", {"k": ["a", "a", "b"], "ts": [2, 2, 36], "_weight": [1, 1, -1]})
    db.insert("c", {"k": ["a"], "ts": [2], "_weight": [-1]})
    db.run_until_idle()
    assert late.to_arrow_table().to_pylist() == [
        {"k": "a", "ts": 2, "_weight": 1},
        {"k": "a", "ts": 2, "_weight": 1},
        {"k": "a", "ts": 2, "_weight": -1},
    ]
    assert db.late_rows("w") == 3
    assert db.query("SELECT * FROM late_per_key").to_pylist() == [{"k": "a", "n": 1}]
    db.close()


def test_materialized_view_late_output():
    """A windowed materialized view takes late_output too; DROP drops both."""
    db = laminardb.open()
    db.execute("""
        CREATE SOURCE c (k VARCHAR, ts BIGINT) WITH (watermark = 'ts');
        CREATE MATERIALIZED VIEW v AS SELECT k, window_start, COUNT(*) AS n FROM c
          GROUP BY k, tumble(ts, INTERVAL '10' MILLISECOND) WITH (late_output = true);
    """)
    late = db.subscribe("v_late")
    db.insert("c", {"k": ["a", "a"], "ts": [1, 50]})
    db.insert("c", {"k": ["b"], "ts": [2]})
    db.run_until_idle()
    assert late.to_arrow_table().to_pylist() == [{"k": "b", "ts": 2}]
    assert db.query("SELECT * FROM v").to_pylist() == [{"k": "a", "window_start": 0, "n": 1}]
    db.execute("DROP MATERIALIZED VIEW v")
    assert db.query("SHOW STREAMS").num_rows == 0
    db.close()

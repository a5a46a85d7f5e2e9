"""STRING_AGG(x [, sep]) against DuckDB (DESIGN §5b).

DuckDB's ``string_agg`` joins a group's non-NULL values in the order it reads
them; the oracle spells that order out (``ORDER BY`` the row's arrival number
``rn``) over the same rows. Covered: tumbling and hopping windows (cores 1 and
2), running aggregates with EMIT CHANGES (the changelog folded after every
batch), a changelog input whose retractions remove the latest arrival of an
equal value (the copies kept are modelled in Python, DuckDB joins them), a
checkpoint and restart in the middle of open groups, the two-phase split (each
part's values joined, then the parts: compared as multisets since a split
reorders rows), and the refusals.
"""

from __future__ import annotations

from collections import Counter

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
from test_two_phase import two_phase_run

import laminardb

SEEDS = st.integers(*seed_strategy_bounds())


def _source(delay: int) -> str:
    return (
        "CREATE SOURCE t (k VARCHAR, g BIGINT, x BIGINT, y DOUBLE, s VARCHAR, ts BIGINT,"
        f" WATERMARK FOR ts AS ts - INTERVAL '{delay}' MILLISECOND);"
    )


def numbered(table: pa.Table) -> pa.Table:
    """The rows with their arrival number ``rn``."""
    return table.append_column("rn", pa.array(np.arange(table.num_rows), type=pa.int64()))


@pytest.mark.parametrize("cores", [1, 2])
@settings(max_examples=examples(10), deadline=None)
@given(seed=SEEDS)
def test_windows_equal_duckdb(seed: int, cores: int) -> None:
    """Tumbling and hopping windows: each window's values in arrival order."""
    announce_seed(seed)
    rng = np.random.default_rng(seed)
    data = window_table(rng, rows=int(rng.integers(0, 1500)), size_ms=int(rng.choice([7, 100])))
    size = data.size_ms
    hop = bool(rng.random() < 0.5)
    window = (
        f"hop(ts, INTERVAL '{3 * size}' MILLISECOND, INTERVAL '{size}' MILLISECOND)"
        if hop
        else f"tumble(ts, INTERVAL '{size}' MILLISECOND)"
    )
    sql = _source(data.delay_ms) + (
        "CREATE STREAM w AS SELECT k, window_start, string_agg(s, ', ') AS l,"
        " string_agg(s) AS l2, COUNT(*) AS n"
        f" FROM t GROUP BY k, {window};"
    )
    ws = (
        f"unnest(range(CAST(ceil((ts - {3 * size} + 1) / {size}) AS BIGINT),"
        f" CAST(floor(ts / {size}) AS BIGINT) + 1)) * {size}"
        if hop
        else f"CAST(floor(ts / {size}) AS BIGINT) * {size}"
    )
    oracle = (
        "SELECT k, ws AS window_start, string_agg(s, ', ' ORDER BY rn) AS l,"
        " string_agg(s, ',' ORDER BY rn) AS l2, COUNT(*) AS n"
        f" FROM (SELECT *, {ws} AS ws FROM t) GROUP BY k, ws"
    )
    cols = ["k", "window_start", "l", "l2", "n"]
    got = run_engine(sql, split_batches(rng, data.table), cores=cores)
    assert got.late_rows == 0
    _, want = duck(oracle, t=numbered(data.table))
    assert_same_rows(rows_of(got.table, cols), want, cols, seed=seed)


def fold(state: Counter, sub: laminardb.Subscription, cols: list[str]) -> None:
    while (batch := sub.poll(0)) is not None:
        table = pa.Table.from_batches([batch])
        for row, w in zip(rows_of(table, cols), table.column("_weight").to_pylist()):
            state[row] += w


def held(state: Counter) -> list[tuple]:
    assert all(m in (0, 1) for m in state.values())
    return [r for r, m in state.items() if m == 1]


@pytest.mark.parametrize("cores", [1, 2])
@settings(max_examples=examples(8), deadline=None)
@given(seed=SEEDS)
def test_running_changes_equal_duckdb(seed: int, cores: int) -> None:
    """GROUP BY without a window: after every batch the changelog folded is
    DuckDB's string_agg over the rows pushed so far."""
    announce_seed(seed)
    rng = np.random.default_rng(seed)
    data = window_table(rng, rows=int(rng.integers(1, 600)), keys=int(rng.integers(1, 20)))
    table = numbered(data.table)
    cols = ["k", "l", "n"]
    state: Counter = Counter()
    pushed = 0
    with laminardb.open(cores=cores) as db:
        db.execute(
            _source(data.delay_ms) + "CREATE STREAM w AS SELECT k, string_agg(s, '|') AS l,"
            " COUNT(s) AS n FROM t GROUP BY k EMIT CHANGES;"
        )
        sub = db.subscribe("w")
        for batch in split_batches(rng, data.table, max_rows=120):
            db.source("t").push(batch)
            db.run_until_idle()
            pushed += batch.num_rows
            fold(state, sub, cols)
            _, want = duck(
                "SELECT k, string_agg(s, '|' ORDER BY rn) AS l, COUNT(s) AS n"
                f" FROM t WHERE rn < {pushed} GROUP BY k",
                t=table,
            )
            assert_same_rows(held(state), want, cols, seed=seed)


@settings(max_examples=examples(12), deadline=None)
@given(seed=SEEDS)
def test_changelog_retractions_equal_model(seed: int) -> None:
    """Over a changelog, a -1 row removes the latest arrival of its value in its
    group (a value not held: nothing); the copies kept, joined by DuckDB in
    arrival order, are what the view holds after every batch."""
    announce_seed(seed)
    rng = np.random.default_rng(seed)
    pool = ["a", "b", "", "cc", "é"]
    kept: list[dict] = []  # the model: rows held, in arrival order
    rn = 0
    with laminardb.open() as db:
        db.execute(
            "CREATE SOURCE c (k VARCHAR, s VARCHAR, _weight BIGINT);"
            "CREATE MATERIALIZED VIEW v AS SELECT k, string_agg(s, ';') AS l,"
            " COUNT(*) AS n FROM c GROUP BY k;"
        )
        for _ in range(int(rng.integers(1, 15))):
            rows = []
            for _ in range(int(rng.integers(1, 12))):
                k = str(rng.choice(["x", "y", "z"]))
                s = None if rng.random() < 0.1 else str(rng.choice(pool))
                w = 1 if rng.random() < 0.65 else -1
                rows.append({"k": k, "s": s, "_weight": w})
                if w == 1:
                    kept.append({"k": k, "s": s, "rn": rn})
                else:  # the latest copy of (k, s) goes; COUNT(*) takes it back too
                    same = [i for i, r in enumerate(kept) if r["k"] == k and r["s"] == s]
                    if same:
                        del kept[same[-1]]
                    else:  # not held: the view clamps; COUNT(*) would go negative
                        rows.pop()
                rn += 1
            if rows:
                db.insert("c", rows)
            db.run_until_idle()
            got = rows_of(db.query("SELECT * FROM v"), ["k", "l", "n"])
            model = pa.Table.from_pylist(
                kept,
                schema=pa.schema([("k", pa.string()), ("s", pa.string()), ("rn", pa.int64())]),
            )
            _, want = duck(
                "SELECT k, string_agg(s, ';' ORDER BY rn) AS l, COUNT(*) AS n FROM m GROUP BY k",
                m=model,
            )
            assert sorted(got, key=repr) == sorted(want, key=repr), seed


@pytest.mark.parametrize("cores", [1, 2])
def test_restart_keeps_values_in_order(tmp_path, cores: int) -> None:
    """Open windows and running groups survive a checkpoint: the output after a
    restart equals an uninterrupted run's."""
    rng = np.random.default_rng(11)
    data = window_table(rng, rows=1200, keys=15, size_ms=100)
    batches = split_batches(rng, data.table, max_rows=100)
    ddl = _source(data.delay_ms) + (
        "CREATE STREAM w AS SELECT k, window_start, string_agg(s, '+') AS l FROM t"
        " GROUP BY k, tumble(ts, INTERVAL '100' MILLISECOND);"
        "CREATE STREAM r AS SELECT k, string_agg(s, '+') AS l FROM t GROUP BY k;"
    )

    def run(split: int | None) -> tuple[list, list]:
        data_dir = tmp_path / f"d{split}"
        options = {"checkpoint_interval": "1 hour", "cores": cores}
        db = laminardb.open(str(data_dir), **options)
        db.execute(ddl)
        windows: list = []
        running: Counter = Counter()
        subs = (db.subscribe("w"), db.subscribe("r"))
        for i, batch in enumerate(batches):
            if i == split:
                db.run_until_idle()
                windows += db_rows(subs[0], ["k", "window_start", "l"])
                fold(running, subs[1], ["k", "l"])
                db.checkpoint()
                db.close()
                db = laminardb.open(str(data_dir), **options)
                subs = (db.subscribe("w"), db.subscribe("r"))
            db.source("t").push(batch)
        db.source("t").watermark(2**63 - 1)
        db.run_until_idle()
        windows += db_rows(subs[0], ["k", "window_start", "l"])
        fold(running, subs[1], ["k", "l"])
        db.close()
        return sorted(windows, key=repr), sorted(held(running), key=repr)

    whole = run(None)
    _, want = duck(
        "SELECT k, string_agg(s, '+' ORDER BY rn) AS l FROM t GROUP BY k",
        t=numbered(data.table),
    )
    assert sorted(whole[1], key=repr) == sorted(want, key=repr)
    assert run(len(batches) // 2) == whole


def db_rows(sub: laminardb.Subscription, cols: list[str]) -> list[tuple]:
    out = []
    while (batch := sub.poll(0)) is not None:
        out += rows_of(pa.Table.from_batches([batch]), cols)
    return out


@pytest.mark.parametrize("seed", [1, 2])
def test_two_phase_joins_partial_strings(seed: int) -> None:
    """Partial string_agg per split, joined again by the final query: each
    window's values are DuckDB's, as a multiset (a split reorders rows)."""
    announce_seed(seed)
    rng = np.random.default_rng(seed)
    data = window_table(rng, rows=800, size_ms=100)
    sql = _source(data.delay_ms) + (
        "CREATE STREAM w AS SELECT k, window_start, string_agg(s, '|') AS l FROM t"
        " GROUP BY k, tumble(ts, INTERVAL '100' MILLISECOND);"
    )
    got = two_phase_run(sql, "w", data.table, rng, parts=3, finals=2)
    _, want = duck(
        "SELECT k, CAST(floor(ts / 100) AS BIGINT) * 100 AS ws, list(s) FILTER (s IS NOT NULL)"
        " FROM t GROUP BY k, ws",
        t=data.table,
    )

    def norm(v: str | None) -> list[str]:
        return sorted(v.split("|")) if v is not None else []

    mine = sorted(
        ((k, w, tuple(norm(v))) for k, w, v in rows_of(got, ["k", "window_start", "l"])),
        key=repr,
    )
    theirs = sorted(((k, w, tuple(sorted(v or []))) for k, w, v in want), key=repr)
    assert mine == theirs


@pytest.mark.parametrize(
    ("item", "code"),
    [
        ("string_agg(x)", "LDB-2001"),
        ("string_agg(s, s)", "LDB-1102"),
        ("string_agg(s, ',', ',')", "LDB-1102"),
        ("string_agg(*)", "LDB-1102"),
        ("array_agg(s)", "LDB-1005"),
        ("list(s)", "LDB-1005"),
    ],
)
def test_refusals(item: str, code: str) -> None:
    with laminardb.open() as db:
        db.execute(_source(0))
        with pytest.raises(laminardb.LaminarError) as e:
            db.execute(f"CREATE STREAM w AS SELECT k, {item} AS v FROM t GROUP BY k")
        assert e.value.code == code, str(e.value)

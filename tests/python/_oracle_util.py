"""Helpers of the DuckDB oracle tests (DESIGN §5b): data, drivers, comparison.

* ``window_table``: seeded random rows for tumbling-window tests (many keys,
  NULL keys and values, disorder within the watermark delay, empty stretches).
* ``split_batches``: cut a table into record batches of random sizes.
* ``run_engine``: push batches into a fresh in-memory database with the inline
  (``run_until_idle``) or the threaded (``start``/``stop``) driver, close every
  window with the final watermark and collect the output and late-row count.
* ``duck``: run a query over Arrow tables in DuckDB (default settings).
* ``assert_same_rows``: compare two row multisets with a float tolerance.
* ``close_as``: close a durable database cleanly, or leave its directory as a
  kill -9 would have.
* ``rows_to_batches`` and ``run_two_inputs``: a join's two sources pushed as
  random batches in a random interleaving, output and late rows collected.
* ``feed_join_steadily``: a join's two sources fed in time order for a while,
  the metrics sampled on the way (bounded-state tests).
"""

from __future__ import annotations

import math
import os
import random
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa

import laminardb

#: The watermark that closes every window (INT64_MAX).
FINAL_WATERMARK = 2**63 - 1

#: The share of each property test's examples this run makes
#: (``LAMINAR_TEST_EXAMPLES``, default 1): the test command's pytest pass over
#: the sanitizer-built core (scripts/test.sh step 5) runs fewer, since what it
#: looks for is memory errors on the paths, which the full pass (step 4) has
#: already checked for answers.
EXAMPLES_SHARE = float(os.environ.get("LAMINAR_TEST_EXAMPLES", "1"))


def examples(n: int) -> int:
    """A property test's ``max_examples``: n scaled by EXAMPLES_SHARE, at least 2."""
    return max(2, round(n * EXAMPLES_SHARE)) if n > 1 else n


#: Relative and absolute tolerance of floating-point comparisons.
REL_TOL = 1e-9
ABS_TOL = 1e-6


def close_as(db: laminardb.Connection, data: Path, *, crash: bool) -> None:
    """Close ``db`` (durable, in ``data``); with ``crash``, leave ``data`` as a kill -9 does.

    The crash is a copy of the directory taken while the database is open (what
    is durable at that moment), put back after the close.
    """
    if not crash:
        db.close()
        return
    copy = data.with_name(data.name + "-crash-copy")
    shutil.copytree(data, copy)
    db.close()
    shutil.rmtree(data)
    copy.rename(data)


def row_batches(
    rng: random.Random, rows: Sequence[tuple], schema: pa.Schema, max_rows: int
) -> list[pa.RecordBatch]:
    """Cut ``rows`` (tuples in ``schema``'s column order) into batches of 1 to
    ``max_rows - 1`` rows, sizes drawn from ``rng``."""
    batches = []
    i = 0
    while i < len(rows):
        part = rows[i : i + rng.randrange(1, max_rows)]
        i += len(part)
        batches.append(
            pa.record_batch(
                [pa.array([r[c] for r in part], schema.field(c).type) for c in range(len(schema))],
                schema=schema,
            )
        )
    return batches


def run_with_restart(
    data: Path,
    ddl: str,
    batches: Sequence[pa.RecordBatch],
    cut: int,
    *,
    crash: bool,
    query: str = "SELECT * FROM v",
) -> pa.Table:
    """Push ``batches`` into source ``t`` of a durable database made by ``ddl``:
    the first ``cut`` with a checkpoint half way, a close (``crash``: as kill -9
    leaves it), a reopen, the rest and the final watermark; ``query``'s answer."""
    options = {"wal_mode": "sync", "checkpoint_interval": "1 hour"}
    db = laminardb.open(data, **options)
    db.execute(ddl)
    for i, batch in enumerate(batches[:cut]):
        db.insert("t", batch)
        db.run_until_idle()
        if i == cut // 2:
            db.checkpoint()
    close_as(db, data, crash=crash)
    with laminardb.open(data, **options) as db:
        for batch in batches[cut:]:
            db.insert("t", batch)
        db.source("t").watermark(FINAL_WATERMARK)
        db.run_until_idle()
        return db.query(query)


def seed_strategy_bounds() -> tuple[int, int]:
    """Return the range of seeds hypothesis draws from (or the replayed seed).

    ``LAMINAR_TEST_SEED`` pins every random test to one seed, as the C tests do.
    """
    env = os.environ.get("LAMINAR_TEST_SEED")
    if env:
        return int(env), int(env)
    return 0, 2**32 - 1


def announce_seed(seed: int) -> None:
    """Print the seed (pytest shows it on failure) in the replayable form."""
    print(f"LAMINAR_TEST_SEED={seed}")


# ---------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class WindowData:
    """Random rows for a tumbling-window test and the parameters they obey.

    Attributes:
        table: Columns ``k`` (string, NULLs), ``g`` (int64 small group id), ``x``
            (int64, NULLs, zeros), ``y`` (float64, NULLs, zeros), ``s``
            (string, NULLs), ``ts`` (int64, never NULL); in push order.
        size_ms: Window size.
        delay_ms: Watermark delay; every row's disorder is within it.
    """

    table: pa.Table
    size_ms: int
    delay_ms: int


def window_table(
    rng: np.random.Generator,
    *,
    rows: int | None = None,
    keys: int | None = None,
    size_ms: int | None = None,
) -> WindowData:
    """Generate rows for a tumbling-window test.

    Event time advances by small random steps with occasional jumps over several
    windows (empty stretches); each row's ``ts`` is its position in time minus a
    random disorder of at most ``delay_ms``, so no row is ever behind the
    watermark ``max(ts) - delay_ms`` when it arrives. The start may be negative.

    Args:
        rng: The seeded generator.
        rows: Row count (random when None).
        keys: Distinct non-NULL keys (random 50..500 when None).
        size_ms: Window size (random when None).

    Returns:
        The data.
    """
    n = int(rng.integers(0, 3000)) if rows is None else rows
    n_keys = int(rng.integers(50, 501)) if keys is None else keys
    size = int(rng.choice([1, 7, 100, 1000, 60_000])) if size_ms is None else size_ms
    delay = int(rng.integers(0, 3 * size + 1))
    start = int(rng.integers(-5 * size, 5 * size)) + int(rng.choice([0, 1_700_000_000_000]))

    steps = rng.integers(0, max(2, size // 4 + 1), size=n)
    jumps = rng.random(n) < 0.01  # empty stretches of 2..10 windows
    steps = steps + jumps * rng.integers(2 * size, 10 * size + 1, size=n)
    clock = start + np.cumsum(steps)
    disorder = rng.integers(0, delay + 1, size=n)
    ts = clock - disorder

    null_frac = float(rng.choice([0.0, 0.1, 0.5, 1.0]))
    key_ids = rng.integers(0, n_keys, size=n)
    key_names = np.array([f"key{i:03d}" for i in range(n_keys)], dtype=object)
    k = [None if null else name for null, name in zip(rng.random(n) < 0.05, key_names[key_ids])]
    x = rng.integers(-1000, 1001, size=n)
    x[rng.random(n) < 0.1] = 0
    # y on a coarse grid mixed with arbitrary doubles, zeros included.
    y = np.where(rng.random(n) < 0.5, rng.integers(-400, 401, size=n) / 4.0, rng.normal(0, 300, n))
    y[rng.random(n) < 0.1] = 0.0
    s_pool = np.array(["", "a", "ab", "b", "zz", "Zeta", "alpha", "éclair", "ß"], dtype=object)
    s = s_pool[rng.integers(0, len(s_pool), size=n)]
    table = pa.table(
        {
            "k": pa.array(k, type=pa.string()),
            "g": pa.array(rng.integers(0, 3, size=n), type=pa.int64()),
            "x": pa.array(x, mask=rng.random(n) < null_frac * 0.3, type=pa.int64()),
            "y": pa.array(y, mask=rng.random(n) < null_frac * 0.3, type=pa.float64()),
            "s": pa.array(s, mask=rng.random(n) < 0.1, type=pa.string()),
            "ts": pa.array(ts, type=pa.int64()),
        }
    )
    return WindowData(table=table, size_ms=size, delay_ms=delay)


def dictionary_keys(table: pa.Table, column: str = "k") -> pa.Table:
    """Return ``table`` with ``column`` dictionary-encoded (int32 indices)."""
    index = table.schema.get_field_index(column)
    encoded = table.column(column).combine_chunks().dictionary_encode()
    return table.set_column(index, column, encoded)


def split_batches(
    rng: np.random.Generator, table: pa.Table, *, max_rows: int = 700
) -> list[pa.RecordBatch]:
    """Cut ``table`` into record batches of random sizes (some empty; one if no rows).

    Batches are zero-copy slices of one batch, so most have a non-zero offset.

    Args:
        rng: The seeded generator.
        table: The rows.
        max_rows: Largest batch.

    Returns:
        The batches, in order.
    """
    whole = table.combine_chunks().to_batches()
    batch = whole[0] if whole else pa.RecordBatch.from_pylist([], schema=table.schema)
    out = []
    offset = 0
    while offset < batch.num_rows:
        size = int(rng.integers(0, max_rows + 1)) if rng.random() < 0.9 else 1
        out.append(batch.slice(offset, size))
        offset += size
    return out or [batch]  # no rows: one empty batch, so the schema still travels


# ---------------------------------------------------------------------------
# Drivers
# ---------------------------------------------------------------------------


@dataclass
class EngineResult:
    """What a stream produced.

    Attributes:
        table: Every output row, in arrival order.
        batches: The output batches, in arrival order.
        late_rows: The stream's ``late_rows`` count.
        late: Every row of the late side output read (``late_stream``), or None.
    """

    table: pa.Table
    batches: list[pa.RecordBatch]
    late_rows: int
    late: pa.Table | None = None


def _drain(subscription: laminardb.Subscription, into: list[pa.RecordBatch]) -> int:
    """Take every batch queued now; return how many were taken."""
    taken = 0
    while True:
        batch = subscription.poll(0)
        if batch is None:
            return taken
        into.append(batch)
        taken += 1


def _pump(db: laminardb.Connection, *pairs: tuple[laminardb.Subscription, list]) -> None:
    """Run the operators inline until the input is consumed and the outputs taken."""
    while True:
        db.run_until_idle()
        if sum(_drain(subscription, into) for subscription, into in pairs) == 0:
            return


def run_engine(
    ddl: str,
    batches: Sequence[pa.RecordBatch],
    *,
    source: str = "t",
    stream: str = "w",
    driver: str = "inline",
    run_every: int = 1,
    final_watermark: bool = True,
    late_stream: str | None = None,
    cores: int = 1,
) -> EngineResult:
    """Push ``batches`` through a fresh in-memory database and collect ``stream``.

    Args:
        ddl: The CREATE SOURCE / CREATE STREAM text.
        batches: The input, in push order.
        source: The source to push into.
        stream: The stream to read.
        driver: ``"inline"`` (``run_until_idle`` after every ``run_every``
            pushes) or ``"threaded"`` (``start``; pushes; ``stop``).
        run_every: Pushes between two inline runs.
        final_watermark: Advance the watermark to INT64_MAX at the end.
        late_stream: A late side output to read as well (``EngineResult.late``).
        cores: The database's reactors (config ``cores``): keyed streams run
            as that many partitions.

    Returns:
        The output and the late-row count.
    """
    out: list[pa.RecordBatch] = []
    late_out: list[pa.RecordBatch] = []
    with laminardb.open(cores=cores) as db:
        db.execute(ddl)
        src = db.source(source)
        subscription = db.subscribe(stream)
        schema = subscription.schema
        pairs = [(subscription, out)]
        if late_stream is not None:
            pairs.append((db.subscribe(late_stream), late_out))
        if driver == "threaded":
            db.start()
            for batch in batches:
                src.push(batch)
                for sub, into in pairs:
                    _drain(sub, into)
            if final_watermark:
                src.watermark(FINAL_WATERMARK)
            db.stop()
            for sub, into in pairs:
                _drain(sub, into)
        elif driver == "inline":
            for i, batch in enumerate(batches):
                src.push(batch)
                if (i + 1) % run_every == 0:
                    _pump(db, *pairs)
            if final_watermark:
                src.watermark(FINAL_WATERMARK)
            _pump(db, *pairs)
        else:
            raise ValueError(f"unknown driver {driver!r}")
        late = db.late_rows(stream)
        late_table = (
            pa.Table.from_batches(late_out, schema=pairs[1][0].schema) if late_stream else None
        )
    return EngineResult(pa.Table.from_batches(out, schema=schema), out, late, late_table)


# ---------------------------------------------------------------------------
# Oracle and comparison
# ---------------------------------------------------------------------------


def duck(sql: str, **tables: pa.Table) -> tuple[list[str], list[tuple]]:
    """Run ``sql`` in DuckDB over Arrow tables registered under their keyword names.

    DuckDB runs with its default settings, whose ``/`` LaminarDB matches (``x / 0``
    is +-inf or NaN). Where DuckDB raises (``%`` by zero, integer overflow) and
    LaminarDB gives NULL, the caller wraps the expression in ``TRY(...)``.

    Returns:
        The column names and the rows.
    """
    con = duckdb.connect()
    try:
        for name, table in tables.items():
            con.register(name, table)
        cursor = con.execute(sql)
        names = [d[0] for d in cursor.description]
        return names, cursor.fetchall()
    finally:
        con.close()


def rows_of(table: pa.Table, columns: Sequence[str]) -> list[tuple]:
    """The rows of an Arrow table as tuples of the named columns."""
    data = [table.column(c).to_pylist() for c in columns]
    return list(zip(*data)) if data else []


def _sort_key(row: tuple) -> tuple:
    """A total order over rows holding None and floats (rounded for stability)."""
    key = []
    for v in row:
        if v is None:
            key.append((0, 0))
        elif isinstance(v, float):
            key.append((1, round(v, 6)))
        elif isinstance(v, (int, bool)):
            key.append((1, v))
        else:
            key.append((2, str(v)))
    return tuple(key)


def values_equal(a: object, b: object) -> bool:
    """Equality with the float tolerance; None equals only None."""
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, float) or isinstance(b, float):
        if not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
            return False
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=ABS_TOL)
    return a == b


def assert_same_rows(
    actual: Iterable[tuple], expected: Iterable[tuple], columns: Sequence[str], *, seed: int = -1
) -> None:
    """Assert two row multisets are equal (floats within tolerance).

    Rows are sorted by every column, the leading columns identifying a row in
    the tests that use this (group keys, window, row id), then compared pairwise.

    Raises:
        AssertionError: Naming the first differing row and column, and the seed.
    """
    got = sorted(actual, key=_sort_key)
    want = sorted(expected, key=_sort_key)
    assert len(got) == len(want), (
        f"seed {seed}: {len(got)} rows from LaminarDB, {len(want)} from DuckDB; "
        f"first rows: {got[:3]} vs {want[:3]}"
    )
    for i, (g, w) in enumerate(zip(got, want)):
        for col, a, b in zip(columns, g, w):
            assert values_equal(a, b), (
                f"seed {seed}: row {i} column {col!r}: LaminarDB {a!r}, DuckDB {b!r}\n"
                f"  LaminarDB row {g}\n  DuckDB row    {w}"
            )


def rows_to_batches(
    rng: random.Random, rows: list[tuple], schema: pa.Schema
) -> list[pa.RecordBatch]:
    """Cut tuples (one value per column of ``schema``) into batches of random sizes."""
    out = []
    i = 0
    while i < len(rows):
        n = rng.randrange(1, 15)
        part = rows[i : i + n]
        i += n
        cols = [pa.array([r[c] for r in part], f.type) for c, f in enumerate(schema)]
        out.append(pa.record_batch(cols, schema=schema))
    return out


def run_two_inputs(
    rng: random.Random,
    ddl: str,
    sides: Sequence[tuple[str, list[pa.RecordBatch]]],
    *,
    cores: int,
    threaded: bool,
) -> tuple[list[pa.RecordBatch], int]:
    """Create ``ddl`` (its stream is ``j``), push each (source, batches) pair in a
    random interleaving that keeps each source's own order, running inline at
    random points (or on the reactor thread), then the final watermark on
    every source; return the stream's output and its late rows."""
    queues = [[(name, b) for b in batches] for name, batches in sides]
    merged: list[tuple[str, pa.RecordBatch]] = []
    while any(queues):
        live = [q for q in queues if q]
        merged.append(rng.choice(live).pop(0))
    out: list[pa.RecordBatch] = []
    with laminardb.open(cores=cores) as db:
        db.execute(ddl)
        src = {name: db.source(name) for name, _ in sides}
        sub = db.subscribe("j")
        if threaded:
            db.start()
        for name, batch in merged:
            src[name].push(batch)
            if not threaded and rng.random() < 0.4:
                db.run_until_idle()
            while (got := sub.poll(0)) is not None:
                out.append(got)
        for s in src.values():
            s.watermark(FINAL_WATERMARK)
        if threaded:
            db.stop()
        db.run_until_idle()
        while (got := sub.poll(0)) is not None:
            out.append(got)
        late = db.late_rows("j")
    return out, late


def feed_join_steadily(
    db: laminardb.Connection,
    sub: laminardb.Subscription,
    left: tuple[str, str, object],
    right: tuple[str, str, object],
    *,
    nkeys: int,
    seed: int,
    sample_at: Sequence[int] = (20, 200),
) -> tuple[int, list[dict[tuple[str, str, str], int]]]:
    """Feed ``max(sample_at)`` steps of 500 rows in time order (1 ms apart, keys
    ``k0..`` at random, 75% to the right source), each side's (source, value
    column, value); run inline and drain ``sub`` after each step. Returns the
    rows emitted and the metrics ((kind, name, metric) -> value) at each step
    of ``sample_at``."""
    rng = random.Random(seed)
    ts = 0
    emitted = 0
    samples = []
    for step in range(1, max(sample_at) + 1):
        rows: tuple[list[dict], list[dict]] = ([], [])
        for _ in range(500):
            ts += 1
            k = f"k{rng.randrange(nkeys)}"
            side = 1 if rng.random() < 0.75 else 0
            name, col, value = (left, right)[side]
            rows[side].append({"k": k, "ts": ts, col: value})
        db.insert(right[0], rows[1])
        db.insert(left[0], rows[0])
        db.run_until_idle()
        while (got := sub.poll(0)) is not None:
            emitted += got.num_rows
        if step in sample_at:
            samples.append(
                {(r["kind"], r["name"], r["metric"]): r["value"] for r in db.metrics().to_pylist()}
            )
    return emitted, samples

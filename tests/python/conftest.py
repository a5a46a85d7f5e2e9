"""Shared fixtures of the Python test suite (pytest, tests/python).

Fixtures: ``db`` (an open in-memory connection, closed after the test),
``data_dir`` (a fresh directory for a durable database), ``rng`` (a seeded
numpy generator; the seed is printed and ``LAMINAR_TEST_SEED`` replays it),
``quickstart_db`` (``db`` with DESIGN §1's ``trades``/``vwap`` declared).
Helpers: ``trades_table`` / ``TRADES`` / ``VWAP_EXPECTED`` (the quick-start
data and its results computed by hand), ``drain`` (read a subscription until it
has produced a number of rows).

Markers: ``slow`` (long randomized runs) is skipped unless ``--run-slow`` is
given; ``spark`` (needs PySpark, tests/python/test_spark*.py) runs when pyspark
is installed (the test requirements install it) or with ``--run-spark``.
``spark`` is a local Spark session (``local[2,2]``: two threads, a failed task
is tried once more) started once for the whole run.

``LAMINAR_TEST_CORES=N`` runs every ``laminardb.open()`` of the tests that
does not choose ``cores`` itself with ``cores = N`` (thread-per-core, durable
databases too), e.g. ``LAMINAR_TEST_CORES=2 pytest tests/python/test_oracle.py``.
"""

from __future__ import annotations

import importlib.util
import os
import random
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import laminardb

REPO_ROOT = Path(__file__).resolve().parents[2]
HEADER = REPO_ROOT / "include" / "laminar.h"

QUICKSTART_SQL = """
  CREATE SOURCE trades (symbol VARCHAR NOT NULL, price DOUBLE, volume BIGINT, ts BIGINT,
                        WATERMARK FOR ts AS ts - INTERVAL '100' MILLISECOND);
  CREATE STREAM vwap AS
    SELECT symbol, window_start, SUM(price * volume) / SUM(volume) AS vwap, COUNT(*) AS n
    FROM trades GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND)
    EMIT ON WINDOW CLOSE;
"""

TRADES_SCHEMA = pa.schema(
    [
        pa.field("symbol", pa.string(), nullable=False),
        pa.field("price", pa.float64()),
        pa.field("volume", pa.int64()),
        pa.field("ts", pa.int64()),
    ]
)

#: (symbol, price, volume, ts): three 1-second windows, two symbols.
TRADES: list[tuple[str, float, int, int]] = [
    ("A", 10.0, 1, 100),
    ("A", 20.0, 3, 500),
    ("B", 5.0, 2, 900),
    ("A", 30.0, 2, 1200),
    ("B", 7.0, 1, 1500),
    ("B", 9.0, 3, 1999),
    ("A", 11.0, 5, 2100),
]

#: The vwap rows (symbol, window_start, vwap, n) once every window has closed,
#: worked out by hand from TRADES: vwap = sum(price * volume) / sum(volume).
VWAP_EXPECTED: list[tuple[str, int, float, int]] = sorted(
    [
        ("A", 0, (10.0 * 1 + 20.0 * 3) / 4, 2),  # 17.5
        ("B", 0, 5.0, 1),
        ("A", 1000, 30.0, 1),
        ("B", 1000, (7.0 * 1 + 9.0 * 3) / 4, 2),  # 8.5
        ("A", 2000, 11.0, 1),
    ]
)

#: A watermark past every window of TRADES.
FINAL_WATERMARK = 10_000


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--run-slow", action="store_true", help="run tests marked slow")
    parser.addoption("--run-spark", action="store_true", help="run tests marked spark")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: long randomized runs (--run-slow)")
    config.addinivalue_line("markers", "spark: needs PySpark (--run-spark)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for marker in ("slow", "spark"):
        if config.getoption(f"--run-{marker}"):
            continue
        if marker == "spark" and importlib.util.find_spec("pyspark") is not None:
            continue
        why = {
            "slow": "a long randomized run: pass --run-slow",
            "spark": "PySpark is not installed (requirements-test.txt has it) and no --run-spark",
        }[marker]
        skip = pytest.mark.skip(reason=why)
        for item in items:
            if marker in item.keywords:
                item.add_marker(skip)


def trades_table(rows: Sequence[tuple[str, float, int, int]] = TRADES) -> pa.Table:
    """The trades rows as a pyarrow Table with the source's schema."""
    symbols, prices, volumes, ts = (list(column) for column in zip(*rows)) if rows else ([],) * 4
    return pa.table(
        {"symbol": symbols, "price": prices, "volume": volumes, "ts": ts}, schema=TRADES_SCHEMA
    )


def vwap_rows(table: pa.Table) -> list[tuple[str, int, float, int]]:
    """Sorted (symbol, window_start, vwap, n) tuples of a vwap result table."""
    return sorted(
        (row["symbol"], row["window_start"], row["vwap"], row["n"]) for row in table.to_pylist()
    )


def drain(sub: laminardb.Subscription, rows: int, timeout: float = 10.0) -> pa.Table:
    """Poll ``sub`` until ``rows`` rows arrived (fails after ``timeout`` seconds idle)."""
    batches: list[pa.RecordBatch] = []
    seen = 0
    while seen < rows:
        batch = sub.poll(timeout=timeout)
        assert batch is not None, f"only {seen} of {rows} rows within {timeout} s"
        batches.append(batch)
        seen += batch.num_rows
    return pa.Table.from_batches(batches, schema=batches[0].schema)


@pytest.fixture(autouse=True)
def _test_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    """``LAMINAR_TEST_CORES``: databases get that many reactors."""
    cores = os.environ.get("LAMINAR_TEST_CORES")
    if not cores:
        return
    real_open = laminardb.open

    def open_with_cores(path: str | None = None, *args: Any, **options: Any) -> Any:  # noqa: ANN401
        chosen = "cores" in options or "cores" in (options.get("config") or {})
        if not args and not chosen:
            options["cores"] = int(cores)
        return real_open(path, *args, **options)

    monkeypatch.setattr(laminardb, "open", open_with_cores)


@pytest.fixture
def db() -> Iterator[laminardb.Connection]:
    """An open in-memory database, closed after the test."""
    connection = laminardb.open()
    try:
        yield connection
    finally:
        connection.close()


@pytest.fixture
def quickstart_db(db: laminardb.Connection) -> laminardb.Connection:
    """``db`` with the quick start's ``trades`` source and ``vwap`` stream."""
    return db.execute(QUICKSTART_SQL)


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """A local Spark session for every Spark test (started once, stopped at the end).

    Python workers run this interpreter (the venv with laminardb installed).
    When the package holds the JVM engine, the session is started the way
    docs/SPARK.md tells users (``laminardb.spark.configure``), so batch runs
    take it by default (``engine="auto"``).
    """
    pytest.importorskip("pyspark")
    from pyspark.sql import SparkSession

    import laminardb.spark as lspark

    os.environ["PYSPARK_PYTHON"] = sys.executable
    builder = SparkSession.builder
    if lspark.jars():
        builder = lspark.configure(builder)
    session = (
        builder.master("local[2,2]")
        .appName("laminardb-tests")
        .config("spark.sql.shuffle.partitions", "3")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "1g")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    """A directory for a durable database (not created yet)."""
    return tmp_path / "data"


@pytest.fixture
def rng() -> np.random.Generator:
    """A seeded numpy generator; prints the seed, ``LAMINAR_TEST_SEED`` replays it."""
    env = os.environ.get("LAMINAR_TEST_SEED")
    seed = int(env) if env else random.SystemRandom().randrange(2**32)
    print(f"LAMINAR_TEST_SEED={seed}")
    return np.random.default_rng(seed)

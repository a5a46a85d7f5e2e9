"""The idioms users bring from sqlite3 and DuckDB (issue 26, item 9).

``laminardb.open(":memory:")`` is the in-memory database; ``insert(name,
{"col": scalar, ...})`` inserts one row; ``checkpoint()`` of an in-memory
database returns epoch 0; compact interval literals (``INTERVAL '100ms'``)
parse, and a malformed one is an SQLError with its position.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pytest
from conftest import FINAL_WATERMARK, TRADES, VWAP_EXPECTED, vwap_rows

import laminardb

# ---------------------------------------------------------------------------
# open(":memory:")
# ---------------------------------------------------------------------------


def test_memory_path_is_the_in_memory_database(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    first = laminardb.open(":memory:")
    second = laminardb.open(":memory:")  # independent: no directory, no lock
    try:
        assert first.path is None
        assert repr(first) == "<laminardb.Connection in-memory open>"
        first.execute("CREATE SOURCE t (x BIGINT)")
        second.execute("CREATE SOURCE t (x BIGINT)")  # its own catalog
        assert first.query("SHOW SOURCES").num_rows == 1
    finally:
        first.close()
        second.close()
    with laminardb.open() as third:  # no path: the same in-memory database
        assert third.path is None
    assert os.listdir(tmp_path) == []  # nothing written where the program runs


def test_memory_database_cannot_be_durable() -> None:
    with pytest.raises(laminardb.ConfigError) as info:
        laminardb.open(":memory:", checkpoint_interval="1 hour")
    assert info.value.code == "LDB-6003"


# ---------------------------------------------------------------------------
# insert(name, {"col": scalar, ...}): one row
# ---------------------------------------------------------------------------


def test_insert_one_row_of_scalars(quickstart_db: laminardb.Connection) -> None:
    sub = quickstart_db.subscribe("vwap")
    for symbol, price, volume, ts in TRADES:
        quickstart_db.insert(
            "trades", {"symbol": symbol, "price": price, "volume": volume, "ts": ts}
        )
    quickstart_db.source("trades").watermark(FINAL_WATERMARK)
    quickstart_db.run_until_idle()
    assert vwap_rows(sub.to_arrow_table()) == VWAP_EXPECTED


def test_insert_one_row_with_null_and_int_for_double() -> None:
    with laminardb.open() as db:
        db.execute(
            "CREATE SOURCE t (k VARCHAR, d DOUBLE, n BIGINT, at TIMESTAMP);"
            "CREATE MATERIALIZED VIEW v AS SELECT k, d, n, at FROM t"
        )
        when = dt.datetime(2026, 1, 2, 3, 4, 5)
        db.insert("t", {"k": "a", "d": 2, "n": None, "at": when})
        db.insert("t", {"k": ["b", "c"], "d": [1.5, 2.5], "n": [1, 2], "at": [when, when]})
        db.run_until_idle()
        rows = db.query("SELECT k, d, n, at FROM v ORDER BY k").to_pylist()
    assert rows == [
        {"k": "a", "d": 2.0, "n": None, "at": when},
        {"k": "b", "d": 1.5, "n": 1, "at": when},
        {"k": "c", "d": 2.5, "n": 2, "at": when},
    ]


@pytest.mark.parametrize(
    ("row", "column"),
    [
        ({"symbol": "A", "price": "ten", "volume": 1, "ts": 0}, "price"),
        ({"symbol": "A", "price": 1.0, "volume": 1.5, "ts": 0}, "volume"),
        ({"symbol": "A", "price": 1.0, "volume": 1, "ts": "noon"}, "ts"),
        ({"symbol": None, "price": 1.0, "volume": 1, "ts": 0}, "symbol"),
    ],
)
def test_insert_one_row_of_wrong_type_is_refused(
    quickstart_db: laminardb.Connection, row: dict, column: str
) -> None:
    with pytest.raises(laminardb.IngestError) as info:
        quickstart_db.insert("trades", row)
    assert info.value.code in ("LDB-3004", "LDB-3005"), str(info.value)
    assert info.value.column_name == column, str(info.value)
    # Nothing of it went in; a good row after it does.
    sub = quickstart_db.subscribe("vwap")
    quickstart_db.insert("trades", {"symbol": "A", "price": 2.0, "volume": 3, "ts": 10})
    quickstart_db.source("trades").watermark(FINAL_WATERMARK)
    quickstart_db.run_until_idle()
    assert vwap_rows(sub.to_arrow_table()) == [("A", 0, 2.0, 1)]


def test_insert_mixing_scalars_and_lists_is_refused(quickstart_db: laminardb.Connection) -> None:
    with pytest.raises(TypeError, match="'symbol'.*'price'"):
        quickstart_db.insert("trades", {"symbol": "A", "price": [1.0], "volume": 1, "ts": 0})


# ---------------------------------------------------------------------------
# checkpoint()
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("path", [None, ":memory:"])
def test_checkpoint_in_memory_returns_epoch_zero(path: str | None) -> None:
    db = laminardb.open(path)
    db.execute("CREATE SOURCE t (x BIGINT)")
    db.insert("t", {"x": 1})
    assert db.checkpoint() == 0
    assert db.checkpoint() == 0
    db.close()
    with pytest.raises(laminardb.LaminarError) as info:
        db.checkpoint()
    assert info.value.code == "LDB-9002"


def test_checkpoint_returns_the_epoch(data_dir: Path) -> None:
    with laminardb.open(data_dir, checkpoint_interval="1 hour") as db:
        db.execute("CREATE SOURCE t (x BIGINT)")
        assert db.checkpoint() == 1
        assert db.checkpoint() == 2
    with laminardb.open(data_dir, checkpoint_interval="1 hour") as db:
        assert db.checkpoint() == 3  # epochs go on after a restart
    # A directory without checkpoint_interval is not in memory: checkpoints are off.
    with laminardb.open(data_dir) as db, pytest.raises(laminardb.InternalError) as info:
        db.checkpoint()
    assert info.value.code == "LDB-9003"


# ---------------------------------------------------------------------------
# Compact interval literals
# ---------------------------------------------------------------------------

COMPACT_SQL = """
  CREATE SOURCE trades (symbol VARCHAR NOT NULL, price DOUBLE, volume BIGINT, ts BIGINT,
                        WATERMARK FOR ts AS ts - INTERVAL '{delay}');
  CREATE STREAM vwap AS
    SELECT symbol, window_start, SUM(price * volume) / SUM(volume) AS vwap, COUNT(*) AS n
    FROM trades GROUP BY symbol, tumble(ts, INTERVAL '{size}')
    EMIT ON WINDOW CLOSE;
"""


@pytest.mark.parametrize(
    ("delay", "size"),
    [("100ms", "1s"), ("100 ms", "1 second"), ("0.1s", "1000 msec"), ("100MS", "1 S")],
)
def test_compact_intervals_run_the_quickstart(delay: str, size: str) -> None:
    with laminardb.open() as db:
        db.execute(COMPACT_SQL.format(delay=delay, size=size))
        sub = db.subscribe("vwap")
        db.insert("trades", [dict(zip(("symbol", "price", "volume", "ts"), t)) for t in TRADES])
        db.source("trades").watermark(FINAL_WATERMARK)
        db.run_until_idle()
        assert vwap_rows(sub.to_arrow_table()) == VWAP_EXPECTED


@pytest.mark.parametrize(
    ("text", "ms"),
    [("5 minutes", 300_000), ("2h", 7_200_000), ("1 day", 86_400_000), ("1h30m", 5_400_000)],
)
def test_compact_intervals_size_a_window(text: str, ms: int) -> None:
    with laminardb.open() as db:
        db.execute(
            "CREATE SOURCE t (k VARCHAR, ts BIGINT, WATERMARK FOR ts AS ts - INTERVAL '0s');"
            f"CREATE STREAM w AS SELECT k, window_start, window_end FROM t "
            f"GROUP BY k, tumble(ts, INTERVAL '{text}') EMIT ON WINDOW CLOSE"
        )
        sub = db.subscribe("w")
        db.insert("t", {"k": "a", "ts": ms + 1})
        db.source("t").watermark(FINAL_WATERMARK + 10 * ms)
        db.run_until_idle()
        assert sub.to_arrow_table().to_pylist() == [
            {"k": "a", "window_start": ms, "window_end": 2 * ms}
        ]


def test_malformed_compact_interval_names_its_position() -> None:
    with laminardb.open() as db, pytest.raises(laminardb.SQLError) as info:
        db.execute(
            "CREATE SOURCE t (k VARCHAR, ts BIGINT);\n"
            "CREATE STREAM w AS SELECT k, COUNT(*) AS n FROM t\n"
            "  GROUP BY k, tumble(ts, INTERVAL '5 fortnights')"
        )
    assert info.value.code == "LDB-1001"
    assert (info.value.line, info.value.column) == (3, 35)
    assert "unknown unit" in str(info.value)
    assert "at character 3" in str(info.value)

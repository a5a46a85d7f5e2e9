"""The Python API as a user meets it: DESIGN §1's quick start, every input kind,
SHOW/DESCRIBE, schemas, lifetimes (context managers, repr, closed handles)."""

from __future__ import annotations

import doctest
import gc
import importlib
import subprocess
import sys
import threading

import nanoarrow as na
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from conftest import (
    FINAL_WATERMARK,
    QUICKSTART_SQL,
    TRADES,
    TRADES_SCHEMA,
    VWAP_EXPECTED,
    drain,
    trades_table,
    vwap_rows,
)

import laminardb

VWAP_SCHEMA = pa.schema(
    [
        pa.field("symbol", pa.string()),
        pa.field("window_start", pa.int64()),
        pa.field("vwap", pa.float64()),
        pa.field("n", pa.int64()),
    ]
)

# ---------------------------------------------------------------------------
# DESIGN §1 quick start
# ---------------------------------------------------------------------------


def test_quickstart_with_runtime():
    """DESIGN §1 verbatim, with the reactor thread: start, insert, watermark, read."""
    db = laminardb.open()  # in-memory
    try:
        db.execute(QUICKSTART_SQL)
        sub = db.subscribe("vwap")  # iterator of pyarrow.RecordBatch
        db.start()
        db.insert("trades", trades_table())
        db.source("trades").watermark(FINAL_WATERMARK)
        result = drain(sub, len(VWAP_EXPECTED), timeout=10.0)
        assert vwap_rows(result) == VWAP_EXPECTED
        assert result.schema.names == VWAP_SCHEMA.names
        assert sub.poll(timeout=0.05) is None  # nothing more
        db.stop()
    finally:
        db.close()


def test_quickstart_iterating_the_subscription():
    """``for batch in sub`` yields the batches and ends when the stream is dropped."""
    with laminardb.open() as db:
        db.execute(QUICKSTART_SQL)
        sub = db.subscribe("vwap")
        db.insert("trades", trades_table())
        db.source("trades").watermark(FINAL_WATERMARK)
        db.run_until_idle()
        db.execute("DROP STREAM vwap")
        rows = [row for batch in sub for row in batch.to_pylist()]
        assert sorted((r["symbol"], r["window_start"], r["vwap"], r["n"]) for r in rows) == (
            VWAP_EXPECTED
        )


def test_quickstart_run_until_idle(quickstart_db):
    """The inline driver gives the same rows, deterministically."""
    db = quickstart_db
    sub = db.subscribe("vwap")
    db.insert("trades", trades_table())
    db.run_until_idle()
    # The source's own watermark (max ts - 100 = 2000) closed the first two windows.
    assert vwap_rows(sub.to_arrow_table()) == [r for r in VWAP_EXPECTED if r[1] < 2000]
    db.source("trades").watermark(FINAL_WATERMARK)
    db.run_until_idle()
    assert vwap_rows(sub.to_arrow_table()) == [r for r in VWAP_EXPECTED if r[1] == 2000]
    assert db.late_rows("vwap") == 0


def test_late_rows_are_counted(quickstart_db):
    db = quickstart_db
    db.insert("trades", trades_table())
    db.source("trades").watermark(FINAL_WATERMARK)
    db.insert("trades", {"symbol": ["A", "B"], "price": [1.0, 2.0], "volume": [1, 1], "ts": [5, 6]})
    db.run_until_idle()
    assert db.late_rows("vwap") == 2


def test_two_subscribers_see_the_same_batches(quickstart_db):
    db = quickstart_db
    first, second = db.subscribe("vwap"), db.subscribe("vwap")
    db.insert("trades", trades_table())
    db.source("trades").watermark(FINAL_WATERMARK)
    db.run_until_idle()
    assert vwap_rows(first.to_arrow_table()) == VWAP_EXPECTED
    assert vwap_rows(second.to_arrow_table()) == VWAP_EXPECTED


# ---------------------------------------------------------------------------
# Every input kind
# ---------------------------------------------------------------------------


def _as_dict(rows):
    return {
        "symbol": [r[0] for r in rows],
        "price": [r[1] for r in rows],
        "volume": [r[2] for r in rows],
        "ts": [r[3] for r in rows],
    }


def _as_dict_with_int_prices(rows):
    # Python ints into the DOUBLE column: converted with the source's schema.
    columns = _as_dict(rows)
    columns["price"] = [int(p) for p in columns["price"]]
    return columns


def _as_rows(rows):
    return [{"symbol": s, "price": p, "volume": v, "ts": t} for s, p, v, t in rows]


def _as_rows_shuffled_keys(rows):
    return [{"ts": t, "volume": v, "symbol": s, "price": p} for s, p, v, t in rows]


def _as_batch(rows):
    return trades_table(rows).to_batches()[0]


def _as_table_in_chunks(rows):
    table = trades_table(rows)
    return pa.concat_tables([table.slice(0, 3), table.slice(3)])


def _as_pandas(rows):
    return pd.DataFrame(_as_dict(rows))


def _as_nanoarrow(rows):
    columns = _as_dict(rows)
    return na.c_array_from_buffers(
        na.struct(
            {
                "symbol": na.string(),
                "price": na.float64(),
                "volume": na.int64(),
                "ts": na.int64(),
            }
        ),
        len(rows),
        [None],
        children=[
            na.c_array(columns["symbol"], na.string()),
            na.c_array(columns["price"], na.float64()),
            na.c_array(columns["volume"], na.int64()),
            na.c_array(columns["ts"], na.int64()),
        ],
    )


def _as_record_batch_reader(rows):
    table = trades_table(rows)
    return pa.RecordBatchReader.from_batches(table.schema, table.to_batches(max_chunksize=2))


INPUT_KINDS = {
    "dict": _as_dict,
    "dict-int-to-double": _as_dict_with_int_prices,
    "list-of-dicts": _as_rows,
    "list-of-dicts-any-key-order": _as_rows_shuffled_keys,
    "record-batch": _as_batch,
    "table-two-chunks": _as_table_in_chunks,
    "record-batch-reader": _as_record_batch_reader,
    "pandas": _as_pandas,
    "nanoarrow-struct-array": _as_nanoarrow,
}


@pytest.mark.parametrize("kind", sorted(INPUT_KINDS))
def test_insert_accepts(quickstart_db, kind):
    db = quickstart_db
    sub = db.subscribe("vwap")
    convert = INPUT_KINDS[kind]
    # Two pushes, so a kind is also checked on a batch that is not the first.
    db.insert("trades", convert(TRADES[:4]))
    db.insert("trades", convert(TRADES[4:]))
    db.source("trades").watermark(FINAL_WATERMARK)
    db.run_until_idle()
    assert vwap_rows(sub.to_arrow_table()) == VWAP_EXPECTED


def test_random_chunking_gives_the_same_result(quickstart_db, rng):
    """However the rows are cut into pushes, the windows come out the same."""
    n = 400
    symbols = rng.choice(["A", "B", "C"], size=n)
    prices = rng.integers(1, 100, size=n).astype(float)
    volumes = rng.integers(1, 10, size=n)
    ts = np.sort(rng.integers(0, 20_000, size=n))
    expected: dict = {}
    for symbol, price, volume, t in zip(symbols, prices, volumes, ts):
        key = (str(symbol), int(t) // 1000 * 1000)
        num, den, count = expected.get(key, (0.0, 0, 0))
        expected[key] = (num + price * volume, den + int(volume), count + 1)
    table = pa.table(
        {"symbol": symbols, "price": prices, "volume": volumes, "ts": ts}, schema=TRADES_SCHEMA
    )
    sub = quickstart_db.subscribe("vwap")
    start = 0
    while start < n:
        size = int(rng.integers(1, 50))
        quickstart_db.insert("trades", table.slice(start, size))
        start += size
        if rng.random() < 0.3:
            quickstart_db.run_until_idle()
    quickstart_db.source("trades").watermark(FINAL_WATERMARK * 10)
    quickstart_db.run_until_idle()
    got = vwap_rows(sub.to_arrow_table())
    assert [(s, w, c) for s, w, _, c in got] == sorted(
        (s, w, c) for (s, w), (_, _, c) in expected.items()
    )
    for symbol, window, vwap, _ in got:
        num, den, _ = expected[(symbol, window)]
        assert vwap == pytest.approx(num / den, rel=1e-12)


def test_insert_pandas_without_capsule_protocol(quickstart_db, monkeypatch):
    """pandas < 2.2 has no __arrow_c_stream__: pyarrow.Table.from_pandas is used,
    without the index (a non-default index is not a column of the source)."""
    monkeypatch.delattr(pd.DataFrame, "__arrow_c_stream__")
    frame = pd.DataFrame(_as_dict(TRADES), index=[10 * i for i in range(len(TRADES))])
    assert not hasattr(frame, "__arrow_c_stream__")
    sub = quickstart_db.subscribe("vwap")
    quickstart_db.insert("trades", frame)
    quickstart_db.source("trades").watermark(FINAL_WATERMARK)
    quickstart_db.run_until_idle()
    assert vwap_rows(sub.to_arrow_table()) == VWAP_EXPECTED


def test_insert_dictionary_and_large_strings(quickstart_db):
    db = quickstart_db
    sub = db.subscribe("vwap")
    table = trades_table()
    dictionary = table.set_column(0, "symbol", table["symbol"].dictionary_encode())
    large = table.set_column(0, "symbol", table["symbol"].cast(pa.large_string()))
    db.insert("trades", dictionary.slice(0, 4))
    db.insert("trades", large.slice(4))
    db.source("trades").watermark(FINAL_WATERMARK)
    db.run_until_idle()
    assert vwap_rows(sub.to_arrow_table()) == VWAP_EXPECTED


def test_push_through_source_handle(quickstart_db):
    db = quickstart_db
    sub = db.subscribe("vwap")
    with db.source("trades") as source:
        assert source is db.source("trades")  # one producer handle per source
        assert source.name == "trades"
        assert source.schema == TRADES_SCHEMA
        source.push(trades_table())
        source.watermark(FINAL_WATERMARK)
    assert source.closed
    db.run_until_idle()
    assert vwap_rows(sub.to_arrow_table()) == VWAP_EXPECTED
    # A closed handle is replaced by a fresh one on the next use.
    assert db.source("trades") is not source
    assert not db.source("trades").closed


def test_empty_list_pushes_nothing(quickstart_db):
    quickstart_db.insert("trades", [])
    quickstart_db.run_until_idle()


@pytest.mark.parametrize("data", [42, "symbol,price", b"bytes", 3.5, [1, 2], object()])
def test_insert_rejects_other_types(quickstart_db, data):
    with pytest.raises(TypeError, match=type(data).__qualname__):
        quickstart_db.insert("trades", data)


def test_watermark_requires_an_int(quickstart_db):
    source = quickstart_db.source("trades")
    with pytest.raises(TypeError):
        source.watermark(1.5)
    with pytest.raises(TypeError):
        source.watermark(True)  # noqa: FBT003 -- the point of the test


# ---------------------------------------------------------------------------
# SHOW, DESCRIBE, schema()
# ---------------------------------------------------------------------------


def test_show_sources(quickstart_db):
    table = quickstart_db.query("SHOW SOURCES")
    assert isinstance(table, pa.Table)
    assert table.column_names == ["name", "columns", "watermark_column"]
    assert table.to_pylist() == [
        {
            "name": "trades",
            "columns": "symbol VARCHAR NOT NULL, price DOUBLE, volume BIGINT, ts BIGINT",
            "watermark_column": "ts",
        }
    ]


def test_show_streams(quickstart_db):
    table = quickstart_db.query("SHOW STREAMS")
    assert table.column_names == ["name", "input", "plan"]
    assert table.column("name").to_pylist() == ["vwap"]
    assert table.column("input").to_pylist() == ["trades"]


def test_describe(quickstart_db):
    table = quickstart_db.query("DESCRIBE trades")
    assert table.to_pydict() == {
        "column_name": ["symbol", "price", "volume", "ts"],
        "column_type": ["VARCHAR", "DOUBLE", "BIGINT", "BIGINT"],
        "null": ["NO", "YES", "YES", "YES"],
    }


def test_query_of_ddl_is_unsupported(quickstart_db):
    with pytest.raises(laminardb.SQLError) as info:
        quickstart_db.query("CREATE SOURCE other (x BIGINT)")
    assert info.value.code == "LDB-1005"


def test_schema(quickstart_db):
    assert quickstart_db.schema("trades") == TRADES_SCHEMA
    vwap = quickstart_db.schema("vwap")
    assert vwap.names == VWAP_SCHEMA.names
    assert vwap.types == VWAP_SCHEMA.types
    assert quickstart_db.subscribe("vwap").schema == vwap


def test_execute_chains(db):
    assert db.execute("CREATE SOURCE a (x BIGINT)").execute("CREATE SOURCE b (y BIGINT)") is db
    assert db.query("SHOW SOURCES").column("name").to_pylist() == ["a", "b"]


def test_open_with_options(data_dir):
    with laminardb.open(data_dir, config={"buffer_size": 4}, buffer_size=8) as db:
        assert db.path == str(data_dir)
        assert repr(db) == f"<laminardb.Connection {str(data_dir)!r} open>"
        db.execute("CREATE SOURCE t (x BIGINT)")
        # buffer_size=8 (the keyword wins over config): 8 batches fit, the 9th does not.
        for i in range(8):
            db.insert("t", {"x": [i]})
        with pytest.raises(laminardb.QueueFull):
            db.insert("t", {"x": [8]})


def test_versions():
    assert laminardb.__version__ == laminardb.core_version()
    assert laminardb.__version__.count(".") == 2


# ---------------------------------------------------------------------------
# Lifetimes: context managers, repr, closed handles
# ---------------------------------------------------------------------------


def test_context_managers_and_repr():
    with laminardb.open() as db:
        assert repr(db) == "<laminardb.Connection in-memory open>"
        db.execute(QUICKSTART_SQL)
        with db.subscribe("vwap") as sub, db.source("trades") as source:
            assert repr(sub) == "<laminardb.Subscription 'vwap' open>"
            assert repr(source) == "<laminardb.Source 'trades' open>"
        assert repr(sub) == "<laminardb.Subscription 'vwap' closed>"
        assert repr(source) == "<laminardb.Source 'trades' closed>"
        assert not db.closed
    assert db.closed
    assert repr(db) == "<laminardb.Connection in-memory closed>"


def _assert_misuse(call):
    with pytest.raises(laminardb.LaminarError) as info:
        call()
    assert info.value.code == "LDB-9002"
    assert info.value.number == 9002
    assert str(info.value).startswith("LDB-9002")
    assert "closed" in str(info.value)


def test_closed_connection_raises_misuse():
    db = laminardb.open()
    db.execute(QUICKSTART_SQL)
    db.close()
    db.close()  # twice is fine
    for call in (
        lambda: db.execute("CREATE SOURCE x (a BIGINT)"),
        lambda: db.query("SHOW SOURCES"),
        lambda: db.schema("trades"),
        lambda: db.insert("trades", trades_table()),
        lambda: db.source("trades"),
        lambda: db.subscribe("vwap"),
        db.start,
        db.stop,
        db.run_until_idle,
        lambda: db.late_rows("vwap"),
    ):
        _assert_misuse(call)


def test_closing_connection_closes_its_handles():
    db = laminardb.open()
    db.execute(QUICKSTART_SQL)
    source = db.source("trades")
    sub = db.subscribe("vwap")
    db.insert("trades", trades_table())
    db.source("trades").watermark(FINAL_WATERMARK)
    db.run_until_idle()
    batch = sub.poll(0)
    db.close()
    assert source.closed
    assert sub.closed
    for call in (
        lambda: source.push(trades_table()),
        lambda: source.watermark(1),
        lambda: sub.poll(0),
        lambda: next(sub),
        sub.to_arrow_table,
        sub.__arrow_c_stream__,
    ):
        _assert_misuse(call)
    # A batch taken before the close owns its buffers.
    batch.validate(full=True)
    assert batch.num_rows > 0
    assert set(vwap_rows(pa.Table.from_batches([batch]))) <= set(VWAP_EXPECTED)


def test_closed_source_and_subscription_raise_misuse(quickstart_db):
    source = quickstart_db.source("trades")
    sub = quickstart_db.subscribe("vwap")
    source.close()
    sub.close()
    _assert_misuse(lambda: source.push(trades_table()))
    _assert_misuse(lambda: sub.poll(0))
    # The connection itself is still usable.
    quickstart_db.insert("trades", trades_table())


def test_close_from_another_thread_ends_iteration(quickstart_db):
    sub = quickstart_db.subscribe("vwap")
    received = []
    finished = threading.Event()

    def consume():
        received.extend(sub)  # blocks: nothing is pushed
        finished.set()

    thread = threading.Thread(target=consume)
    thread.start()
    assert not finished.wait(0.3)
    sub.close()
    thread.join(timeout=5)
    assert finished.is_set()
    assert received == []


def test_threaded_producer_and_consumer(quickstart_db):
    """A producer thread pushes while the reactor runs and a consumer thread iterates."""
    db = quickstart_db
    sub = db.subscribe("vwap")
    windows = 50
    expected = sorted(
        [("A", i * 1000, float(i), 1) for i in range(windows)]
        + [("B", i * 1000, float(2 * i), 1) for i in range(windows)]
    )
    received: list = []
    errors: list = []

    def produce():
        try:
            source = db.source("trades")
            for i in range(windows):
                source.push(
                    {
                        "symbol": ["A", "B"],
                        "price": [float(i), float(2 * i)],
                        "volume": [1, 1],
                        "ts": [i * 1000 + 1, i * 1000 + 2],
                    }
                )
            source.watermark(windows * 1000 + FINAL_WATERMARK)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    def consume():
        for batch in sub:
            received.extend(batch.to_pylist())
            if len(received) >= len(expected):
                break

    db.start()
    threads = [threading.Thread(target=produce), threading.Thread(target=consume)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert not errors
    assert not any(thread.is_alive() for thread in threads)
    assert sorted((r["symbol"], r["window_start"], r["vwap"], r["n"]) for r in received) == (
        expected
    )
    db.stop()


def test_closing_connection_from_another_thread_ends_iteration():
    db = laminardb.open().execute(QUICKSTART_SQL)
    sub = db.subscribe("vwap")
    db.start()
    done = threading.Event()

    def consume():
        for _ in sub:
            pass
        done.set()

    thread = threading.Thread(target=consume)
    thread.start()
    assert not done.wait(0.3)
    db.close()
    thread.join(timeout=5)
    assert done.is_set()
    assert sub.closed


def test_poll_timeout(quickstart_db):
    sub = quickstart_db.subscribe("vwap")
    assert sub.poll(0) is None
    assert sub.poll(timeout=0.15) is None
    with pytest.raises(ValueError, match="timeout"):
        sub.poll(-1)


def test_unclosed_handles_are_collected():
    """Dropping the last reference closes the database without crashing."""
    code = (
        "import laminardb, gc\n"
        "db = laminardb.open()\n"
        f"db.execute({QUICKSTART_SQL!r})\n"
        "sub = db.subscribe('vwap'); src = db.source('trades'); db.start()\n"
        "del db, sub, src\n"
        "gc.collect()\n"
        "print('ok')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_subscription_keeps_connection_alive():
    sub = laminardb.open().execute(QUICKSTART_SQL).subscribe("vwap")
    gc.collect()
    assert not sub.closed
    assert sub.poll(0) is None
    sub.close()


def test_cli_version():
    result = subprocess.run(
        [sys.executable, "-m", "laminardb.cli", "version"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert laminardb.__version__ in result.stdout


@pytest.mark.parametrize(
    "module",
    [
        "laminardb.connection",
        "laminardb.source",
        "laminardb.subscription",
        "laminardb.errors",
        "laminardb.functions",
        "laminardb.table_functions",
        "laminardb.spark.java_functions",
    ],
)
def test_docstring_examples(module):
    """The Examples in the package's docstrings run as written."""
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0


def test_metrics_count_what_went_through(quickstart_db: laminardb.Connection) -> None:
    db = quickstart_db
    sub = db.subscribe("vwap")
    src = db.source("trades")
    src.push(trades_table())
    src.watermark(FINAL_WATERMARK)
    db.run_until_idle()
    assert sub.poll(timeout=0) is not None

    def value(kind: str, name: str, metric: str) -> int:
        rows = db.metrics().to_pylist()
        key = (kind, name, metric)
        hits = [r["value"] for r in rows if (r["kind"], r["name"], r["metric"]) == key]
        assert len(hits) == 1, (kind, name, metric)
        return hits[0]

    n = trades_table().num_rows
    assert value("source", "trades", "pushed_batches") == 1
    assert value("source", "trades", "pushed_rows") == n
    assert value("stream", "vwap", "rows_in") == n
    assert value("stream", "vwap", "subscribers") == 1
    assert value("subscription", "vwap", "delivered_batches") == 1
    assert db.metrics().schema.names == ["kind", "name", "metric", "value"]

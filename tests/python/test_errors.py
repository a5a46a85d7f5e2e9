"""Engine errors in Python: class, ``.code`` and detail of each, and that a
rejected call leaves earlier data intact (STYLE §2.3, §3.2)."""

from __future__ import annotations

import pickle
import re

import numpy as np
import pyarrow as pa
import pytest
from conftest import (
    FINAL_WATERMARK,
    HEADER,
    QUICKSTART_SQL,
    TRADES,
    VWAP_EXPECTED,
    trades_table,
    vwap_rows,
)

import laminardb
from laminardb import errors

# ---------------------------------------------------------------------------
# The code list
# ---------------------------------------------------------------------------


def _header_codes() -> dict[int, str]:
    """The laminar_code enum as written in laminar.h (parsed independently)."""
    text = HEADER.read_text(encoding="utf-8")
    body = re.search(r"typedef enum laminar_code \{(.*?)\} laminar_code;", text, re.DOTALL)
    assert body is not None
    entries = re.findall(r"^\s*(LAMINAR_\w+)\s*=\s*(\d+)", body.group(1), re.MULTILINE)
    return {int(value): name for name, value in entries}


def test_codes_equal_the_header():
    header = _header_codes()
    assert header.pop(0) == "LAMINAR_OK"
    assert errors.CODES == header
    assert laminardb.CODES is errors.CODES


AREA_CLASSES = {
    1: (laminardb.SQLError, ValueError),
    2: (laminardb.SchemaError, TypeError),
    3: (laminardb.IngestError, ValueError),
    4: (laminardb.SubscriptionError, laminardb.LaminarError),
    5: (laminardb.StorageError, OSError),
    6: (laminardb.ConfigError, ValueError),
    9: (laminardb.InternalError, laminardb.LaminarError),
}


@pytest.mark.parametrize("number", sorted(errors.CODES))
def test_every_code_maps_to_its_area_class(number):
    error = errors.error_for(number)
    cls, builtin = AREA_CLASSES[number // 1000]
    assert isinstance(error, cls)
    assert isinstance(error, builtin)
    assert isinstance(error, laminardb.LaminarError)
    assert error.code == f"LDB-{number}"
    assert error.number == number
    assert str(error).startswith(f"LDB-{number}: ")
    assert len(str(error)) > len("LDB-0000: ")  # the engine's text is filled in
    assert (type(error) is laminardb.QueueFull) == (number == 3006)


def test_errors_pickle():
    error = errors.error_for(1001, "LDB-1001: bad", line=2, column=5, object="t", column_name="c")
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is laminardb.SQLError
    assert (copy.code, copy.line, copy.column, copy.object, copy.column_name) == (
        "LDB-1001",
        2,
        5,
        "t",
        "c",
    )


# ---------------------------------------------------------------------------
# SQL errors (1xxx)
# ---------------------------------------------------------------------------


def test_syntax_error_names_line_and_column(db):
    sql = (
        "CREATE SOURCE t (a BIGINT, ts BIGINT);\n"
        "CREATE STREAM s AS\n"
        "  SELEC a FROM t;"  # line 3, column 3
    )
    with pytest.raises(laminardb.SQLError) as info:
        db.execute(sql)
    error = info.value
    assert isinstance(error, ValueError)
    assert error.code == "LDB-1001"
    assert (error.line, error.column) == (3, 3)
    assert str(error).startswith("LDB-1001")
    assert "SELEC" in str(error)
    # The whole text is parsed first: nothing of it was applied.
    with pytest.raises(laminardb.SQLError) as missing:
        db.schema("t")
    assert missing.value.code == "LDB-1002"


def test_failing_statement_keeps_earlier_ones(db):
    sql = "CREATE SOURCE t (a BIGINT);\nCREATE STREAM s AS SELECT nope FROM t;"
    with pytest.raises(laminardb.SQLError) as info:
        db.execute(sql)
    assert info.value.code == "LDB-1003"
    assert info.value.line == 2
    assert db.schema("t").names == ["a"]


@pytest.mark.parametrize(
    "call",
    [
        lambda db: db.insert("nope", {"a": [1]}),
        lambda db: db.source("nope"),
        lambda db: db.subscribe("nope"),
        lambda db: db.schema("nope"),
        lambda db: db.late_rows("nope"),
        lambda db: db.query("DESCRIBE nope"),
    ],
    ids=["insert", "source", "subscribe", "schema", "late_rows", "describe"],
)
def test_unknown_object(quickstart_db, call):
    with pytest.raises(laminardb.SQLError) as info:
        call(quickstart_db)
    assert info.value.code == "LDB-1002"
    assert "nope" in str(info.value)


def test_duplicate_object(quickstart_db):
    with pytest.raises(laminardb.SQLError) as info:
        quickstart_db.execute("CREATE SOURCE trades (x BIGINT)")
    assert info.value.code == "LDB-1004"


def test_subscribe_to_a_source_is_unknown_stream(quickstart_db):
    with pytest.raises(laminardb.SQLError) as info:
        quickstart_db.subscribe("trades")
    assert info.value.code == "LDB-1002"


# ---------------------------------------------------------------------------
# Ingest errors (3xxx): each rejected push leaves earlier data intact
# ---------------------------------------------------------------------------


def _finish(db, sub) -> list:
    db.source("trades").watermark(FINAL_WATERMARK)
    db.run_until_idle()
    return vwap_rows(sub.to_arrow_table())


def _batch(symbol, price, volume=None, ts=None) -> pa.RecordBatch:
    n = len(symbol)
    return pa.RecordBatch.from_arrays(
        [
            symbol,
            price,
            volume if volume is not None else pa.array([1] * n, pa.int64()),
            ts if ts is not None else pa.array([100] * n, pa.int64()),
        ],
        names=["symbol", "price", "volume", "ts"],
    )


def _invalid_utf8_batch() -> pa.RecordBatch:
    # pyarrow checks only the cheap invariants here, not UTF-8.
    symbol = pa.Array.from_buffers(
        pa.string(), 1, [None, pa.py_buffer(np.array([0, 2], np.int32)), pa.py_buffer(b"\xff\xfe")]
    )
    return _batch(symbol, pa.array([1.0]))


def _decreasing_offsets_batch() -> pa.RecordBatch:
    # First and last offsets are in bounds, the middle one goes backwards.
    symbol = pa.Array.from_buffers(
        pa.string(), 2, [None, pa.py_buffer(np.array([0, 3, 1], np.int32)), pa.py_buffer(b"abc")]
    )
    return _batch(symbol, pa.array([1.0, 2.0]))


REJECTED = {
    "wrong-column-type": (
        lambda: _batch(pa.array(["A"]), pa.array(["not a number"])),
        laminardb.IngestError,
        "LDB-3004",
        "price",
    ),
    "wrong-type-from-dict": (
        lambda: {"symbol": ["A"], "price": ["x"], "volume": [1], "ts": [1]},
        laminardb.IngestError,
        "LDB-3004",
        "price",
    ),
    "null-in-not-null": (
        lambda: _batch(pa.array([None], pa.string()), pa.array([1.0])),
        laminardb.IngestError,
        "LDB-3005",
        "symbol",
    ),
    "null-from-rows": (
        lambda: [{"symbol": None, "price": 1.0, "volume": 1, "ts": 1}],
        laminardb.IngestError,
        "LDB-3005",
        "symbol",
    ),
    "invalid-utf8": (_invalid_utf8_batch, laminardb.IngestError, "LDB-3001", "symbol"),
    "decreasing-offsets": (_decreasing_offsets_batch, laminardb.IngestError, "LDB-3001", "symbol"),
    "missing-column": (
        lambda: {"symbol": ["A"], "price": [1.0], "ts": [1]},
        laminardb.IngestError,
        "LDB-3003",
        None,
    ),
    "extra-column": (
        lambda: {"symbol": ["A"], "price": [1.0], "volume": [1], "ts": [1], "extra": [1]},
        laminardb.IngestError,
        "LDB-3003",
        "extra",
    ),
}


@pytest.mark.parametrize("case", sorted(REJECTED))
def test_rejected_push_keeps_earlier_data(quickstart_db, case):
    make, cls, code, column = REJECTED[case]
    db = quickstart_db
    sub = db.subscribe("vwap")
    db.insert("trades", trades_table(TRADES[:4]))
    with pytest.raises(cls) as info:
        db.insert("trades", make())
    error = info.value
    assert error.code == code
    assert str(error).startswith(code)
    assert isinstance(error, ValueError)
    if column is not None:
        assert error.column_name == column
        assert f"'{column}'" in str(error)
    assert error.object == "trades"
    # The same source handle goes on working; nothing of the bad batch arrived.
    db.insert("trades", trades_table(TRADES[4:]))
    assert _finish(db, sub) == VWAP_EXPECTED


def test_rejected_batch_inside_a_stream(quickstart_db):
    """Batches of a stream before a bad one are pushed; the bad one and those after not."""
    db = quickstart_db
    sub = db.subscribe("vwap")
    schema = pa.schema([field.with_nullable(nullable=True) for field in trades_table().schema])
    good = trades_table(TRADES[:4]).cast(schema).to_batches()[0]
    bad = _batch(pa.array([None], pa.string()), pa.array([1.0])).cast(schema)
    later = trades_table(TRADES[4:]).cast(schema).to_batches()[0]
    reader = pa.RecordBatchReader.from_batches(schema, [good, bad, later])
    with pytest.raises(laminardb.IngestError) as info:
        db.insert("trades", reader)
    assert info.value.code == "LDB-3005"
    # Only TRADES[:4] arrived: windows A@0, B@0 and A@1000, as in VWAP_EXPECTED.
    assert _finish(db, sub) == [("A", 0, 17.5, 2), ("A", 1000, 30.0, 1), ("B", 0, 5.0, 1)]


def test_queue_full_then_drained(db):
    # A small source queue (WITH buffer_size) and the default subscriber queues.
    db.execute(
        QUICKSTART_SQL.replace(
            "INTERVAL '100' MILLISECOND);", "INTERVAL '100' MILLISECOND) WITH (buffer_size = 2);"
        )
    )
    sub = db.subscribe("vwap")
    db.insert("trades", trades_table(TRADES[:2]))
    db.insert("trades", trades_table(TRADES[2:4]))
    with pytest.raises(laminardb.QueueFull) as info:
        db.insert("trades", trades_table(TRADES[4:]))
    assert info.value.code == "LDB-3006"
    assert isinstance(info.value, laminardb.IngestError)
    assert info.value.object == "trades" or "trades" in str(info.value)
    db.run_until_idle()
    db.insert("trades", trades_table(TRADES[4:]))
    assert _finish(db, sub) == VWAP_EXPECTED


# ---------------------------------------------------------------------------
# Subscription, config, storage, state errors
# ---------------------------------------------------------------------------


def test_dropped_stream_ends_subscription(quickstart_db):
    db = quickstart_db
    sub = db.subscribe("vwap")
    db.insert("trades", trades_table())
    db.source("trades").watermark(FINAL_WATERMARK)
    db.run_until_idle()
    db.execute("DROP STREAM vwap")
    # Queued batches are still delivered, then the end is reported.
    assert vwap_rows(pa.Table.from_batches(list(sub))) == VWAP_EXPECTED
    with pytest.raises(laminardb.SubscriptionError) as info:
        sub.poll(0)
    assert info.value.code == "LDB-4001"


def test_drop_source_read_by_a_stream(quickstart_db):
    with pytest.raises(laminardb.SQLError) as info:
        quickstart_db.execute("DROP SOURCE trades")
    assert info.value.code == "LDB-1007"


def test_unknown_config_key():
    with pytest.raises(laminardb.ConfigError) as info:
        laminardb.open(no_such_option=1)
    assert info.value.code == "LDB-6001"
    assert isinstance(info.value, ValueError)


def test_invalid_config_value():
    with pytest.raises(laminardb.ConfigError) as info:
        laminardb.open(config={"buffer_size": 3})
    assert info.value.code == "LDB-6002"


def test_data_dir_that_cannot_be_created(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(laminardb.StorageError) as info:
        laminardb.open(blocker / "data")
    assert info.value.code == "LDB-5001"
    assert isinstance(info.value, OSError)


def test_state_errors(quickstart_db):
    db = quickstart_db
    db.start()
    try:
        with pytest.raises(laminardb.InternalError) as twice:
            db.start()
        assert twice.value.code == "LDB-9003"
        with pytest.raises(laminardb.InternalError) as inline:
            db.run_until_idle()
        assert inline.value.code == "LDB-9003"
    finally:
        db.stop()
    db.stop()  # a no-op on a stopped database
    db.run_until_idle()


def test_bad_arguments(quickstart_db):
    with pytest.raises(ValueError, match="NUL"):
        quickstart_db.schema("tra\0des")
    with pytest.raises(TypeError):
        quickstart_db.execute(b"CREATE SOURCE x (a BIGINT)")

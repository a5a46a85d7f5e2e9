"""Arrow across the boundary: round trips of every supported type, validity of
what the core exports (pyarrow full validation and nanoarrow), the PyCapsule
stream protocol of subscriptions, and ownership of pushed capsules (STYLE §2.2,
§3.2)."""

from __future__ import annotations

import datetime as dt

import nanoarrow as na
import numpy as np
import pyarrow as pa
import pytest
from _oracle_util import examples
from conftest import FINAL_WATERMARK, TRADES, VWAP_EXPECTED, trades_table, vwap_rows
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import laminardb
from laminardb._arrow import capsule_pointer
from laminardb._laminar_cffi import ffi

ALL_TYPES_SQL = """
CREATE SOURCE src (
  b BOOLEAN, i INT, l BIGINT, d DOUBLE,
  s VARCHAR, ls VARCHAR, ds VARCHAR,
  t_s TIMESTAMP, t_ms TIMESTAMP, t_us TIMESTAMP, t_ns TIMESTAMP
);
CREATE STREAM out AS SELECT * FROM src;
"""

#: What the core produces for every column (DESIGN/SQL.md type table).
OUTPUT_SCHEMA = pa.schema(
    [
        ("b", pa.bool_()),
        ("i", pa.int32()),
        ("l", pa.int64()),
        ("d", pa.float64()),
        ("s", pa.string()),
        ("ls", pa.string()),
        ("ds", pa.string()),
        ("t_s", pa.timestamp("us")),
        ("t_ms", pa.timestamp("us")),
        ("t_us", pa.timestamp("us")),
        ("t_ns", pa.timestamp("us")),
    ]
)

EPOCH = dt.datetime(1970, 1, 1)


def _all_types_batch(rows: list[dict]) -> pa.RecordBatch:
    """A batch in every accepted input encoding (large strings, dictionaries, units)."""
    column = {name: [row[name] for row in rows] for name in OUTPUT_SCHEMA.names}
    strings = pa.array(column["ds"], pa.string())
    return pa.RecordBatch.from_arrays(
        [
            pa.array(column["b"], pa.bool_()),
            pa.array(column["i"], pa.int32()),
            pa.array(column["l"], pa.int64()),
            pa.array(column["d"], pa.float64()),
            pa.array(column["s"], pa.string()),
            pa.array(column["ls"], pa.large_string()),
            strings.dictionary_encode(),  # dictionary<int32, utf8>
            pa.array(column["t_s"], pa.timestamp("s")),
            pa.array(column["t_ms"], pa.timestamp("ms")),
            pa.array(column["t_us"], pa.timestamp("us")),
            pa.array(column["t_ns"], pa.timestamp("ns")),
        ],
        names=OUTPUT_SCHEMA.names,
    )


def _expected(batch: pa.RecordBatch) -> pa.Table:
    """The input normalized as the core outputs it: utf8 strings, microseconds."""
    columns = []
    for name, field in zip(OUTPUT_SCHEMA.names, OUTPUT_SCHEMA):
        array = batch.column(name)
        if pa.types.is_dictionary(array.type):
            array = array.dictionary_decode()
        columns.append(array.cast(field.type))
    return pa.Table.from_arrays(columns, schema=OUTPUT_SCHEMA)


def _nanoarrow_validate(batch: pa.RecordBatch) -> None:
    """Validate an exported batch with nanoarrow: the struct's layout at nanoarrow's
    default level (``view()``), then every column rebuilt at its full level."""
    c_array = na.c_array(batch)
    assert c_array.schema.format == "+s"
    c_array.view()
    for i in range(c_array.n_children):
        child = c_array.child(i)
        assert child.n_children == 0
        assert child.dictionary is None  # the core exports plain utf8
        view = child.view()
        na.c_array_from_buffers(
            child.schema,
            child.length,
            [view.buffer(j) for j in range(view.n_buffers)],
            null_count=child.null_count,
            offset=child.offset,
            validation_level="full",
        )


def _check_exported(table_or_batches) -> pa.Table:
    batches = (
        table_or_batches.to_batches()
        if isinstance(table_or_batches, pa.Table)
        else list(table_or_batches)
    )
    for batch in batches:
        batch.validate(full=True)
        _nanoarrow_validate(batch)
    return pa.Table.from_batches(batches, schema=OUTPUT_SCHEMA)


ROWS = [
    {
        "b": True,
        "i": -(2**31),
        "l": 2**63 - 1,
        "d": 1.5,
        "s": "plain",
        "ls": "large",
        "ds": "dict-a",
        "t_s": dt.datetime(2024, 1, 2, 3, 4, 5),
        "t_ms": dt.datetime(2024, 1, 2, 3, 4, 5, 123000),
        "t_us": dt.datetime(2024, 1, 2, 3, 4, 5, 123456),
        "t_ns": dt.datetime(2024, 1, 2, 3, 4, 5, 654321),
    },
    {
        "b": None,
        "i": None,
        "l": None,
        "d": None,
        "s": None,
        "ls": None,
        "ds": None,
        "t_s": None,
        "t_ms": None,
        "t_us": None,
        "t_ns": None,
    },
    {
        "b": False,
        "i": 2**31 - 1,
        "l": -(2**63),
        "d": -0.0,
        "s": "ünïcødé ✓ 🚀",
        "ls": "",
        "ds": "dict-a",
        "t_s": EPOCH,
        "t_ms": dt.datetime(1969, 12, 31, 23, 59, 59, 999000),
        "t_us": dt.datetime(2262, 4, 11),
        "t_ns": dt.datetime(1677, 9, 22),
    },
    {
        "b": True,
        "i": 0,
        "l": 0,
        "d": float("inf"),
        "s": "x" * 1000,
        "ls": "y",
        "ds": "dict-b",
        "t_s": dt.datetime(2000, 2, 29),
        "t_ms": EPOCH,
        "t_us": EPOCH,
        "t_ns": EPOCH,
    },
]


def _all_types_db() -> tuple[laminardb.Connection, laminardb.Subscription]:
    db = laminardb.open()
    db.execute(ALL_TYPES_SQL)
    return db, db.subscribe("out")


def test_round_trip_all_types():
    db, sub = _all_types_db()
    with db:
        batch = _all_types_batch(ROWS)
        db.insert("src", batch)
        db.insert("src", batch.slice(1, 2))  # a slice: non-zero offsets on the way in
        db.run_until_idle()
        out = _check_exported([sub.poll(0), sub.poll(0)])
        assert sub.poll(0) is None
        expected = pa.concat_tables([_expected(batch), _expected(batch.slice(1, 2))])
        assert out.equals(expected), (out.to_pylist(), expected.to_pylist())


def test_round_trip_from_dicts_and_nans():
    db, sub = _all_types_db()
    with db:
        db.insert("src", ROWS)  # list of dicts, typed by the source's schema
        db.insert(
            "src", {"d": [float("nan")], **{k: [None] for k in OUTPUT_SCHEMA.names if k != "d"}}
        )
        db.run_until_idle()
        out = _check_exported(sub.to_arrow_table())
        assert out.slice(0, len(ROWS)).to_pylist() == ROWS
        assert np.isnan(out.column("d")[len(ROWS)].as_py())


_text = st.one_of(st.none(), st.text(max_size=20))
_int64 = st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1))
_micros = st.one_of(st.none(), st.integers(-(2**50), 2**50))


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.lists(
        st.fixed_dictionaries(
            {
                "b": st.one_of(st.none(), st.booleans()),
                "i": st.one_of(st.none(), st.integers(-(2**31), 2**31 - 1)),
                "l": _int64,
                "d": st.one_of(st.none(), st.floats(allow_nan=False)),
                "s": _text,
                "ls": _text,
                "ds": st.one_of(st.none(), st.sampled_from(["k1", "k2", "ключ"])),
                "t_s": _micros,
                "t_ms": _micros,
                "t_us": _micros,
                "t_ns": st.one_of(st.none(), st.integers(-(2**40), 2**40)),
            }
        ),
        min_size=1,
        max_size=30,
    )
)
def test_round_trip_property(rows):
    """Any values of every type come back equal (timestamps in whole units)."""
    converted = []
    for row in rows:
        row = dict(row)
        # Integers -> timestamps in the column's own unit, exactly representable in us.
        for name, scale in (("t_s", 1), ("t_ms", 1), ("t_us", 1), ("t_ns", 1000)):
            if row[name] is not None:
                row[name] = row[name] * scale
        converted.append(row)
    column = {name: [r[name] for r in converted] for name in OUTPUT_SCHEMA.names}
    limits = {"t_s": 2**33, "t_ms": 2**43}  # keep s/ms inside the us range
    for name, limit in limits.items():
        column[name] = [None if v is None else v % limit for v in column[name]]
    batch = pa.RecordBatch.from_arrays(
        [
            pa.array(column["b"], pa.bool_()),
            pa.array(column["i"], pa.int32()),
            pa.array(column["l"], pa.int64()),
            pa.array(column["d"], pa.float64()),
            pa.array(column["s"], pa.string()),
            pa.array(column["ls"], pa.large_string()),
            pa.array(column["ds"], pa.string()).dictionary_encode(),
            pa.array(column["t_s"], pa.int64()).cast(pa.timestamp("s")),
            pa.array(column["t_ms"], pa.int64()).cast(pa.timestamp("ms")),
            pa.array(column["t_us"], pa.int64()).cast(pa.timestamp("us")),
            pa.array(column["t_ns"], pa.int64()).cast(pa.timestamp("ns")),
        ],
        names=OUTPUT_SCHEMA.names,
    )
    db, sub = _all_types_db()
    with db:
        db.insert("src", batch)
        db.run_until_idle()
        out = _check_exported(sub.to_arrow_table())
        assert out.equals(_expected(batch))


# ---------------------------------------------------------------------------
# Subscription.__arrow_c_stream__
# ---------------------------------------------------------------------------


@pytest.fixture
def vwap_sub(quickstart_db):
    sub = quickstart_db.subscribe("vwap")
    quickstart_db.insert("trades", trades_table(TRADES[:4]))
    quickstart_db.insert("trades", trades_table(TRADES[4:]))
    quickstart_db.source("trades").watermark(FINAL_WATERMARK)
    quickstart_db.run_until_idle()
    return sub


def test_stream_read_by_pyarrow(vwap_sub):
    reader = pa.RecordBatchReader.from_stream(vwap_sub)
    assert reader.schema == vwap_sub.schema
    table = reader.read_all()
    assert vwap_rows(table) == VWAP_EXPECTED
    for batch in table.to_batches():
        batch.validate(full=True)
    # The stream yielded what was queued: nothing is left.
    assert vwap_sub.poll(0) is None
    assert pa.RecordBatchReader.from_stream(vwap_sub).read_all().num_rows == 0


def test_stream_read_by_pa_table_and_nanoarrow(vwap_sub):
    stream = na.c_array_stream(vwap_sub)
    arrays = list(stream)
    assert sum(a.length for a in arrays) == len(VWAP_EXPECTED)
    assert pa.table(vwap_sub).num_rows == 0  # drained by the first reader


def test_stream_capsule_is_consumed_once(vwap_sub):
    capsule = vwap_sub.__arrow_c_stream__()
    reader = pa.RecordBatchReader._import_from_c_capsule(capsule)
    assert vwap_rows(reader.read_all()) == VWAP_EXPECTED
    with pytest.raises(pa.ArrowInvalid, match="released"):
        pa.RecordBatchReader._import_from_c_capsule(capsule)
    # The capsule's struct is marked released (moved into pyarrow).
    stream = ffi.cast("struct ArrowArrayStream*", capsule_pointer(capsule, "arrow_array_stream"))
    assert stream.release == ffi.NULL


def test_stream_outlives_the_subscription(vwap_sub, quickstart_db):
    capsule = vwap_sub.__arrow_c_stream__()
    vwap_sub.close()
    quickstart_db.close()
    table = pa.RecordBatchReader._import_from_c_capsule(capsule).read_all()
    assert vwap_rows(table) == VWAP_EXPECTED


def test_stream_requested_schema(vwap_sub, quickstart_db):
    same = vwap_sub.__arrow_c_stream__(vwap_sub.schema.__arrow_c_schema__())
    table = pa.RecordBatchReader._import_from_c_capsule(same).read_all()
    assert vwap_rows(table) == VWAP_EXPECTED
    # Drained; queue one more window.
    db = quickstart_db
    db.insert("trades", {"symbol": ["C"], "price": [2.0], "volume": [4], "ts": [20_500]})
    db.source("trades").watermark(FINAL_WATERMARK + 20_000)
    db.run_until_idle()
    narrower = pa.schema(
        [
            ("symbol", pa.string()),
            ("window_start", pa.int64()),
            ("vwap", pa.float32()),
            ("n", pa.int64()),
        ]
    )
    capsule = vwap_sub.__arrow_c_stream__(narrower.__arrow_c_schema__())
    table = pa.RecordBatchReader._import_from_c_capsule(capsule).read_all()
    assert table.schema == narrower
    assert table.to_pylist() == [{"symbol": "C", "window_start": 20_000, "vwap": 2.0, "n": 1}]
    incompatible = pa.schema([("other", pa.int8())])
    with pytest.raises((ValueError, NotImplementedError, pa.ArrowInvalid)):
        vwap_sub.__arrow_c_stream__(incompatible.__arrow_c_schema__())


def test_stream_of_empty_subscription(quickstart_db):
    sub = quickstart_db.subscribe("vwap")
    table = pa.RecordBatchReader.from_stream(sub).read_all()
    assert table.num_rows == 0
    assert table.schema == sub.schema
    assert sub.to_arrow_table().schema == sub.schema


# ---------------------------------------------------------------------------
# Ownership of pushed capsules
# ---------------------------------------------------------------------------


class _FixedCapsules:
    """Hands out the same capsules every time (to observe what a push did to them)."""

    def __init__(self, schema_capsule, array_capsule):
        self.capsules = (schema_capsule, array_capsule)

    def __arrow_c_array__(self, requested_schema=None):
        return self.capsules


class _FixedStream:
    def __init__(self, capsule):
        self.capsule = capsule

    def __arrow_c_stream__(self, requested_schema=None):
        return self.capsule


def _array_struct(capsule):
    return ffi.cast("struct ArrowArray*", capsule_pointer(capsule, "arrow_array"))


def test_pushed_capsule_is_moved(quickstart_db):
    batch = trades_table().to_batches()[0]
    schema_capsule, array_capsule = batch.__arrow_c_array__()
    quickstart_db.insert("trades", _FixedCapsules(schema_capsule, array_capsule))
    assert _array_struct(array_capsule).release == ffi.NULL  # moved into the core
    with pytest.raises(pa.ArrowInvalid, match="released"):
        pa.RecordBatch._import_from_c_capsule(schema_capsule, array_capsule)
    # Pushing the moved capsule again is refused by the core (released array).
    with pytest.raises(laminardb.IngestError) as info:
        quickstart_db.insert("trades", _FixedCapsules(schema_capsule, array_capsule))
    assert info.value.code == "LDB-3002"
    # The core keeps the (zero-copy) buffers alive after the Python objects go.
    sub = quickstart_db.subscribe("vwap")
    del batch, schema_capsule, array_capsule
    quickstart_db.source("trades").watermark(FINAL_WATERMARK)
    quickstart_db.run_until_idle()
    assert vwap_rows(sub.to_arrow_table()) == VWAP_EXPECTED


def test_rejected_capsule_is_still_the_callers(quickstart_db):
    bad = pa.RecordBatch.from_arrays(
        [pa.array([None, "B"]), pa.array([1.0, 2.0]), pa.array([1, 2]), pa.array([1, 2])],
        names=["symbol", "price", "volume", "ts"],
    )
    schema_capsule, array_capsule = bad.__arrow_c_array__()
    with pytest.raises(laminardb.IngestError) as info:
        quickstart_db.insert("trades", _FixedCapsules(schema_capsule, array_capsule))
    assert info.value.code == "LDB-3005"
    assert _array_struct(array_capsule).release != ffi.NULL
    back = pa.RecordBatch._import_from_c_capsule(schema_capsule, array_capsule)
    assert back.equals(bad)


def test_stream_capsule_is_consumed_by_push(quickstart_db):
    capsule = trades_table().__arrow_c_stream__()
    quickstart_db.insert("trades", _FixedStream(capsule))
    stream = ffi.cast("struct ArrowArrayStream*", capsule_pointer(capsule, "arrow_array_stream"))
    assert stream.release == ffi.NULL
    with pytest.raises(laminardb.IngestError) as info:
        quickstart_db.insert("trades", _FixedStream(capsule))
    assert info.value.code == "LDB-3002"


def test_capsule_names_are_checked(quickstart_db):
    schema_capsule, array_capsule = trades_table().to_batches()[0].__arrow_c_array__()
    with pytest.raises(TypeError, match="'arrow_schema'.*'arrow_array'"):
        quickstart_db.insert("trades", _FixedCapsules(array_capsule, schema_capsule))
    with pytest.raises(TypeError, match="'arrow_array_stream'.*'arrow_schema'"):
        quickstart_db.insert("trades", _FixedStream(schema_capsule))
    with pytest.raises(TypeError, match="PyCapsule"):
        quickstart_db.insert("trades", _FixedStream(object()))
    # Nothing was consumed: the capsules still import.
    assert pa.RecordBatch._import_from_c_capsule(schema_capsule, array_capsule).num_rows == len(
        TRADES
    )


def test_package_uses_only_the_public_capsule_protocol():
    """No ctypes into CPython, no private pyarrow entry points (issue 26 item 8): Arrow
    data crosses through capsules and pyarrow's public protocol functions
    (``pa.record_batch(obj)``, ``pa.schema(obj)``, ``RecordBatchReader.from_stream``)."""
    import ast
    from pathlib import Path

    package = Path(laminardb.__file__).resolve().parent
    found = []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                found += [f"{path.name}: import {a.name}" for a in node.names if a.name == "ctypes"]
            elif isinstance(node, ast.ImportFrom) and node.module == "ctypes":
                found.append(f"{path.name}: from ctypes import ...")
            elif isinstance(node, ast.Attribute) and node.attr.startswith(
                ("_import_from_c", "_export_to_c")
            ):
                found.append(f"{path.name}:{node.lineno}: .{node.attr}")
    assert found == []


def test_capsule_names_are_checked_by_the_c_helper():
    from laminardb import _capsule

    schema_capsule, array_capsule = trades_table().to_batches()[0].__arrow_c_array__()
    assert _capsule.pointer(array_capsule, "arrow_array") != 0
    with pytest.raises(TypeError, match="named 'arrow_schema', got one named 'arrow_array'"):
        _capsule.pointer(array_capsule, "arrow_schema")
    with pytest.raises(TypeError, match="named 'arrow_array', got int"):
        _capsule.pointer(42, "arrow_array")
    # A struct moved into a capsule by take() is released by it when nobody imports it
    # (pyarrow's export then frees its buffers: no leak under the ASan run), and the
    # place it was moved from is marked released.
    source = ffi.cast("struct ArrowArray*", _capsule.pointer(array_capsule, "arrow_array"))
    moved = _capsule.take("arrow_array", int(ffi.cast("uintptr_t", source)))
    assert source.release == ffi.NULL
    assert _capsule.pointer(moved, "arrow_array") != 0
    del moved
    with pytest.raises(ValueError, match="not an Arrow capsule name"):
        _capsule.take("arrow_thing", 8)

"""Malformed Arrow from a producer other than pyarrow (issue 20, item 6).

Each batch is crafted with nanoarrow's Python package (``c_array_from_buffers``
without validation; buffers are Python bytes of exactly the declared sizes), so
the object pushed is not pyarrow's: ``push`` has the core validate it first
(``laminar_source_validate``, the one gate), then pyarrow
(``validate(full=True)``), then the push checks it again. An array that lies
about its buffers must get the core's LDB error, never crash inside pyarrow. Every case must be
refused with LDB-3001 naming its column, leave the producer's array live and
its own (released by the capsule, once), and ingest nothing: the view then
holds exactly the valid batch pushed after it.
"""

from __future__ import annotations

import struct
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import nanoarrow as na
import pyarrow as pa
import pytest
from nanoarrow.c_array_stream import CArrayStream

import laminardb
from laminardb._arrow import capsule_pointer
from laminardb._laminar_cffi import ffi

STRUCT = pa.struct(
    [("s", pa.string()), ("v", pa.int64()), ("d", pa.dictionary(pa.int32(), pa.string()))]
)
VALID_ROWS = [{"s": "r0", "v": 0, "d": "x"}, {"s": "r1", "v": 10, "d": "yz"}]


def i32(*values: int) -> bytes:
    return struct.pack(f"<{len(values)}i", *values)


def i64(*values: int) -> bytes:
    return struct.pack(f"<{len(values)}q", *values)


def leaf(arrow_type: pa.DataType, length: int, buffers: list[Any], **kw: Any) -> Any:
    return na.c_array_from_buffers(arrow_type, length, buffers, validation_level="none", **kw)


def dictionary(indices: list[int], values: Any) -> Any:
    encoded = pa.DictionaryArray.from_arrays(pa.array(indices, pa.int32()), values, safe=False)
    return na.c_array(encoded)


def crafted(s: Any = None, v: Any = None, d: Any = None, length: int = 2, **kw: Any) -> Any:
    """A nanoarrow struct array of (s utf8, v int64, d dictionary); valid by default."""
    s = s if s is not None else leaf(pa.string(), 2, [None, i32(0, 2, 4), b"r0r1"])
    v = v if v is not None else leaf(pa.int64(), 2, [None, i64(0, 10)])
    d = d if d is not None else dictionary([0, 1], pa.array(["x", "yz"]))
    return na.c_array_from_buffers(
        STRUCT, length, [None], children=[s, v, d], validation_level="none", **kw
    )


class Capsules:
    """Hands out the same capsules every time (to see what a push did to them)."""

    def __init__(self, source: Any) -> None:
        self.capsules = source.__arrow_c_array__()

    def __arrow_c_array__(self, requested_schema: object | None = None) -> tuple[Any, Any]:
        return self.capsules

    def array(self) -> Any:
        return ffi.cast("struct ArrowArray*", capsule_pointer(self.capsules[1], "arrow_array"))

    def schema(self) -> Any:
        return ffi.cast("struct ArrowSchema*", capsule_pointer(self.capsules[0], "arrow_schema"))


@pytest.fixture
def tdb() -> Iterator[laminardb.Connection]:
    db = laminardb.open()
    db.execute(
        "CREATE SOURCE t (s VARCHAR, v BIGINT, d VARCHAR);"
        "CREATE MATERIALIZED VIEW mv AS SELECT s, v, d FROM t"
    )
    yield db
    db.close()


def assert_only_valid_batch(db: laminardb.Connection) -> None:
    """Push the valid batch (from nanoarrow too): the view must hold it alone."""
    db.insert("t", crafted())
    db.run_until_idle()
    assert db.query("SELECT s, v, d FROM mv ORDER BY v").to_pylist() == VALID_ROWS


def assert_refused(db: laminardb.Connection, data: Any, column: str | None) -> str:
    capsules = Capsules(data)
    with pytest.raises(laminardb.IngestError) as info:
        db.insert("t", capsules)
    assert info.value.code == "LDB-3001", str(info.value)
    assert info.value.column_name == column, str(info.value)
    assert capsules.array().release != ffi.NULL  # refused: still the producer's
    assert_only_valid_batch(db)
    return str(info.value)


CASES = {
    "utf8 offsets not monotone": (dict(s=leaf(pa.string(), 2, [None, i32(0, 7, 4), b"r0r1"])), "s"),
    "utf8 offset 2^31 (negative)": (
        dict(s=leaf(pa.string(), 2, [None, i32(0, 2, -(2**31)), b"r0r1"])),
        "s",
    ),
    "invalid utf8": (dict(s=leaf(pa.string(), 2, [None, i32(0, 2, 4), b"r\xc3r1"])), "s"),
    "dictionary index == length": (dict(d=dictionary([0, 2], pa.array(["x", "yz"]))), "d"),
    "dictionary index -1": (dict(d=dictionary([-1, 0], pa.array(["x", "yz"]))), "d"),
    "dictionary values past their buffer": (
        dict(d=dictionary([0, 1], leaf(pa.string(), 2, [None, i32(0, 5, 3), b"xyz"]))),
        "d",
    ),
    "null_count wrong": (dict(v=leaf(pa.int64(), 2, [b"\x03", i64(0, 10)], null_count=1)), "v"),
    "length -1": (dict(v=leaf(pa.int64(), -1, [None, i64(0, 10)])), "v"),
    "int64 byte size overflow": (
        dict(v=leaf(pa.int64(), 2, [None, i64(0, 10)], offset=2**61)),
        "v",
    ),
    "utf8 offsets size overflow": (
        dict(s=leaf(pa.string(), 2, [None, i32(0, 2, 4), b"r0r1"], offset=2**61)),
        "s",
    ),
    "struct offset past its children": (dict(offset=1), "s"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_malformed_foreign_batch_is_refused(tdb: laminardb.Connection, name: str) -> None:
    kwargs, column = CASES[name]
    assert_refused(tdb, crafted(**kwargs), column)


def test_core_validates_foreign_input_first(tdb: laminardb.Connection) -> None:
    # The core's check says "UTF-8" (pyarrow's full validation says "UTF8"):
    # the foreign batch met the core's validation before pyarrow read it.
    bad = crafted(s=leaf(pa.string(), 2, [None, i32(0, 2, 4), b"r\xc3r1"]))
    message = assert_refused(tdb, bad, "s")
    assert "UTF-8" in message
    assert "UTF8" not in message


# A producer whose utf8 offsets claim far more bytes than its data buffer holds:
# one zeroed page (valid UTF-8) with nothing mapped after it. pyarrow's import
# trusts the last offset and its full validation reads the claimed bytes, past
# the page (SIGSEGV); the core refuses the array first (its probe finds the
# claimed range unmapped), so the producer gets LDB-3001 naming the column.
_LYING_CHILD = """
import ctypes, mmap, struct, sys
import nanoarrow as na, pyarrow as pa
import laminardb

libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                      ctypes.c_int, ctypes.c_long]
libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
size = 64 << 20
base = libc.mmap(None, size, mmap.PROT_READ | mmap.PROT_WRITE,
                 mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)
assert libc.munmap(base + mmap.PAGESIZE, size - mmap.PAGESIZE) == 0
data = (ctypes.c_char * mmap.PAGESIZE).from_address(base)
data[0:4] = b"r0r1"
last = int(sys.argv[1])
s = na.c_array_from_buffers(pa.string(), 2, [None, struct.pack("<3i", 0, 2, last), data],
                            validation_level="none")
v = na.c_array_from_buffers(pa.int64(), 2, [None, struct.pack("<2q", 0, 10)],
                            validation_level="none")
batch = na.c_array_from_buffers(pa.struct([("s", pa.string()), ("v", pa.int64())]), 2, [None],
                                children=[s, v], validation_level="none")
db = laminardb.open()
db.execute("CREATE SOURCE t (s VARCHAR, v BIGINT)")
try:
    db.insert("t", batch)
    print("accepted")
except laminardb.LaminarError as exc:
    print(exc.code, exc.column_name)
"""


@pytest.mark.parametrize("last", [32 << 20, 2**31 - 1])
def test_lying_offsets_get_the_core_error_not_a_crash(last: int) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _LYING_CHILD, str(last)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, f"the child died ({done.returncode}): {done.stderr[-2000:]}"
    assert done.stdout.split() == ["LDB-3001", "s"], done.stdout


def _garbage_metadata(node: Any, words: tuple[int, ...]) -> Any:  # noqa: ANN401 -- cdata
    """Point node.metadata at a blob of exactly these int32 words; return the old."""
    blob = ffi.new("char[]", struct.pack(f"<{len(words)}i", *words))
    old = node.metadata
    node.metadata = blob
    return old, blob


@pytest.mark.parametrize(
    ("where", "words", "column"),
    [
        ("struct", (0x41414141,), None),  # a pair count no 4-byte blob holds
        ("struct", (-1431655766,), None),  # 0xAAAAAAAA
        ("struct", (1, -8, 0), None),
        ("struct", (1, 4, 0x41414141, 2**31 - 1), None),
        ("column v", (2, 0, -1), "v"),
    ],
)
def test_garbage_metadata_is_refused(
    tdb: laminardb.Connection, where: str, words: tuple[int, ...], column: str | None
) -> None:
    capsules = Capsules(crafted())
    schema = capsules.schema()
    node = schema if where == "struct" else schema.children[1]
    old, blob = _garbage_metadata(node, words)
    try:
        with pytest.raises(laminardb.IngestError) as info:
            tdb.insert("t", capsules)
    finally:
        node.metadata = old  # the producer's release frees its own blob
    del blob
    assert info.value.code == "LDB-3001", str(info.value)
    assert info.value.column_name == column
    assert "metadata" in str(info.value)
    assert capsules.array().release != ffi.NULL
    assert_only_valid_batch(tdb)


def test_foreign_stream_refuses_the_bad_batch(tdb: laminardb.Connection) -> None:
    good = crafted()
    bad = crafted(d=dictionary([0, 7], pa.array(["x", "yz"])))
    stream = CArrayStream.from_c_arrays([good, bad], good.schema, validate=False)
    with pytest.raises(laminardb.IngestError) as info:
        tdb.insert("t", stream)
    assert info.value.code == "LDB-3001"
    assert info.value.column_name == "d"
    tdb.run_until_idle()  # the batch before the bad one stays pushed, alone
    assert tdb.query("SELECT s, v, d FROM mv ORDER BY v").to_pylist() == VALID_ROWS


def test_valid_foreign_batches_are_accepted(tdb: laminardb.Connection) -> None:
    # A struct offset (a slice) is honoured, as the core does: row 1 only.
    capsules = Capsules(
        na.c_array_from_buffers(
            STRUCT,
            1,
            [None],
            children=[
                leaf(pa.string(), 2, [None, i32(0, 2, 4), b"r0r1"]),
                leaf(pa.int64(), 2, [None, i64(0, 10)]),
                dictionary([0, 1], pa.array(["x", "yz"])),
            ],
            offset=1,
            validation_level="none",
        )
    )
    tdb.insert("t", capsules)
    assert capsules.array().release == ffi.NULL  # moved into the core
    tdb.run_until_idle()
    assert tdb.query("SELECT s, v, d FROM mv").to_pylist() == [VALID_ROWS[1]]

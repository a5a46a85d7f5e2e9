"""Arrow plumbing between Python objects and the C core's Arrow structs.

In: PyCapsules (Arrow PyCapsule Interface) are opened after an exact name
check (``laminardb._capsule.pointer``, a small C extension: the cffi module
cannot take Python objects) and their struct pointers are handed to the core as
cffi pointers; dicts and lists of dicts are built into a ``pyarrow.RecordBatch``
with the source's schema first.

Out: structs the core fills (``ffi.new``) are moved into capsules of their own
(``laminardb._capsule.take``) and imported by pyarrow's public protocol
functions -- ``pa.record_batch(obj)``, ``pa.schema(obj)``,
``pa.RecordBatchReader.from_stream(obj)`` -- which leave them marked released.
Nothing here calls into CPython through ctypes or uses pyarrow's private
``_import_from_c`` / ``_export_to_c``.

Ownership follows the C Data Interface (STYLE §1.5): a capsule's destructor
releases its struct if it is still live, and the core moves a pushed array only
when the push succeeds, so nothing here frees what the core took.

Checked: an array from a producer other than pyarrow itself (nanoarrow, polars,
a hand-made capsule...) is validated by the core first (``Source._check_foreign``
calls ``laminar_source_validate``: nothing reads it before the core's checks),
then viewed by pyarrow and validated with ``validate(full=True)``
(:func:`check_foreign`), so Python callers get pyarrow's checks on top of the
core's. The view borrows the producer's struct (pyarrow imports, through
``pa.array(obj)``, a copy whose release does nothing), so the array stays the
caller's until the core takes it. pyarrow's own objects skip this: pyarrow made
them.
"""

from __future__ import annotations

import datetime
import decimal
import math
import numbers
from collections.abc import Iterable, Mapping
from typing import Any

import pyarrow as pa

from laminardb import _capsule
from laminardb._laminar_cffi import ffi
from laminardb.errors import COLUMN_TYPE, error_for

__all__ = [
    "address",
    "batch_from_columns",
    "batch_from_rows",
    "capsule_pointer",
    "check_batch",
    "check_foreign",
    "from_pyarrow",
    "import_batch",
    "import_reader",
    "import_schema",
]

def capsule_pointer(capsule: object, name: str) -> int:
    """Return the address a PyCapsule holds, after checking its name exactly.

    Args:
        capsule: The capsule an ``__arrow_c_*__`` method returned.
        name: The name it must carry: ``"arrow_schema"``, ``"arrow_array"`` or
            ``"arrow_array_stream"``.

    Returns:
        The struct's address (never 0).

    Raises:
        TypeError: If ``capsule`` is not a PyCapsule, or is named otherwise
            (the message names the capsule received).
    """
    return _capsule.pointer(capsule, name)


class _Exported:
    """Capsules the core's structs were moved into, for pyarrow's public imports.

    ``pa.record_batch(obj)`` / ``pa.array(obj)`` call ``__arrow_c_array__``,
    ``pa.schema(obj)`` ``__arrow_c_schema__`` and
    ``pa.RecordBatchReader.from_stream(obj)`` ``__arrow_c_stream__``; each
    hands over the capsules as they are (no ``requested_schema`` is asked).
    """

    __slots__ = ("_array", "_schema", "_stream")

    def __init__(
        self, schema: object = None, array: object = None, stream: object = None
    ) -> None:
        self._schema, self._array, self._stream = schema, array, stream

    def __arrow_c_schema__(self) -> object:
        return self._schema

    def __arrow_c_array__(self, requested_schema: object | None = None) -> tuple[object, object]:
        return self._schema, self._array

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        return self._stream


def _take(name: str, struct: Any) -> object:  # noqa: ANN401 -- cdata
    """Move a live Arrow struct into a new capsule named ``name`` (it is left released)."""
    return _capsule.take(name, address(struct))


def address(cdata: object) -> int:
    """Return the address of a cffi pointer as a Python int (for pyarrow).

    Args:
        cdata: A cffi pointer.

    Returns:
        Its address.
    """
    return int(ffi.cast("uintptr_t", cdata))


_ARROW_INVALID = 3001

# pyarrow's own objects: what they export was built by pyarrow, which is the
# check check_foreign would apply, so they are pushed as they are.
_PYARROW_INPUTS = (pa.RecordBatch, pa.Table, pa.RecordBatchReader, pa.Array, pa.ChunkedArray)


def from_pyarrow(data: object) -> bool:
    """Tell whether ``data`` is one of pyarrow's own Arrow objects.

    Args:
        data: A value handed to ``push``.

    Returns:
        True for a ``pyarrow.RecordBatch``, ``Table``, ``RecordBatchReader``,
        ``Array`` (a struct array) or ``ChunkedArray``.
    """
    return isinstance(data, _PYARROW_INPUTS)


@ffi.callback("void(struct ArrowArray*)")
def _release_borrowed_array(array: Any) -> None:  # noqa: ANN401 -- cdata
    array.release = ffi.NULL


@ffi.callback("void(struct ArrowSchema*)")
def _release_borrowed_schema(schema: Any) -> None:  # noqa: ANN401 -- cdata
    schema.release = ffi.NULL


def _borrowed(kind: str, struct: Any, release: Any) -> Any:  # noqa: ANN401 -- cdata
    """A copy of a live Arrow struct whose release does nothing.

    The copy shares the original's buffers, children and private data; pyarrow
    may import (move) it and release it when done while the original stays the
    producer's, to be released by its owner as before.
    """
    copy = ffi.new(f"struct {kind}*")
    ffi.memmove(copy, struct, ffi.sizeof(f"struct {kind}"))
    copy.release = release
    return copy


def _invalid(data: pa.RecordBatch | pa.StructArray, source: str) -> Exception | None:
    """Validate a batch (or a struct array) with pyarrow's full validation.

    Column by column first, so the error names the column that fails; then the
    whole. Returns the error (IngestError, LDB-3001) rather than raising it, so
    no frame of a traceback holds the data.
    """
    if isinstance(data, pa.StructArray):
        names = [field.name for field in data.type]
        columns = [data.field(index) for index in range(len(names))]
    else:
        names, columns = data.schema.names, data.columns
    for name, column in zip(names, columns, strict=True):
        try:
            column.validate(full=True)
        except pa.ArrowException as exc:
            return error_for(
                _ARROW_INVALID,
                f"LDB-3001: source '{source}': column '{name}': {exc}",
                object=source,
                column_name=name,
            )
    try:
        data.validate(full=True)
    except pa.ArrowException as exc:
        return error_for(_ARROW_INVALID, f"LDB-3001: source '{source}': {exc}", object=source)
    return None


def check_batch(batch: pa.RecordBatch, source: str) -> None:
    """Validate a batch with pyarrow's full validation (``validate(full=True)``).

    Args:
        batch: The batch (its buffers are only read).
        source: The source's name, for messages.

    Raises:
        IngestError: LDB-3001 naming the source and the column that fails.
    """
    error = _invalid(batch, source)
    if error is not None:
        raise error


def check_foreign(array: Any, schema: Any, source: str) -> None:  # noqa: ANN401 -- cdata
    """Validate a non-pyarrow producer's struct array with pyarrow, borrowing it.

    Call it only after the core accepted the pair (``laminar_source_validate``,
    see ``Source._check_foreign``): pyarrow's import trusts lengths, offsets
    and metadata the core checks, and would read past a lying buffer. pyarrow
    imports a copy of each struct whose release does nothing, validates the
    struct array as :func:`check_batch` does, and lets go of it before this
    returns, so ``array`` and ``schema`` stay live and the caller's (the core
    moves the array later, on a successful push only). A released array or
    schema is left to the core, which refuses it with LDB-3002.

    Args:
        array: ``struct ArrowArray*``, a struct array (not moved).
        schema: ``struct ArrowSchema*`` describing it (not moved).
        source: The source's name, for messages.

    Raises:
        IngestError: LDB-3001 if pyarrow cannot import the pair or its full
            validation fails (the message names the column where it can).
    """
    if array.release == ffi.NULL or schema.release == ffi.NULL:
        return
    array_copy = _borrowed("ArrowArray", array, _release_borrowed_array)
    schema_copy = _borrowed("ArrowSchema", schema, _release_borrowed_schema)
    view = _Exported(_take("arrow_schema", schema_copy), _take("arrow_array", array_copy))
    try:
        # A struct array, not a RecordBatch: the core honours a struct offset,
        # which pyarrow's RecordBatch import refuses.
        struct = pa.array(view)
    except pa.ArrowException as exc:
        raise error_for(
            _ARROW_INVALID, f"LDB-3001: source '{source}': {exc}", object=source
        ) from None
    error = _invalid(struct, source) if isinstance(struct, pa.StructArray) else None
    del struct  # the view of borrowed buffers goes before the caller's array can
    if error is not None:
        raise error


def import_batch(array: Any, schema: Any) -> pa.RecordBatch:  # noqa: ANN401 -- cdata
    """Move a filled ``struct ArrowArray``/``ArrowSchema`` pair into pyarrow.

    Args:
        array: ``struct ArrowArray*`` (a struct array), filled and live.
        schema: ``struct ArrowSchema*`` describing it, filled and live.

    Returns:
        The batch; both structs are left released (moved).
    """
    try:
        pair = _Exported(_take("arrow_schema", schema), _take("arrow_array", array))
        return pa.record_batch(pair)
    finally:
        # pyarrow moves what it imports; whatever it left live is ours to free.
        if array.release != ffi.NULL:
            array.release(array)
        if schema.release != ffi.NULL:
            schema.release(schema)


def import_schema(schema: Any) -> pa.Schema:  # noqa: ANN401 -- cdata
    """Move a filled ``struct ArrowSchema`` into a ``pyarrow.Schema``.

    Args:
        schema: ``struct ArrowSchema*``, filled and live.

    Returns:
        The schema; the struct is left released.
    """
    try:
        return pa.schema(_Exported(schema=_take("arrow_schema", schema)))
    finally:
        if schema.release != ffi.NULL:
            schema.release(schema)


def import_reader(stream: Any) -> pa.RecordBatchReader:  # noqa: ANN401 -- cdata
    """Move a filled ``struct ArrowArrayStream`` into a ``pyarrow.RecordBatchReader``.

    Args:
        stream: ``struct ArrowArrayStream*``, filled and live.

    Returns:
        The reader, which now owns the stream.
    """
    try:
        capsule = _take("arrow_array_stream", stream)
        return pa.RecordBatchReader.from_stream(_Exported(stream=capsule))
    finally:
        if stream.release != ffi.NULL:
            stream.release(stream)


#: Number kinds that may carry a fraction (float, numpy floats, Fraction, Decimal).
_FRACTIONAL = (numbers.Real, decimal.Decimal)


def _whole_numbers_only(type_: pa.DataType) -> bool:
    """Tell whether a type stores whole numbers (integers, times, dates)."""
    return bool(
        pa.types.is_integer(type_)
        or pa.types.is_timestamp(type_)
        or pa.types.is_date(type_)
        or pa.types.is_time(type_)
        or pa.types.is_duration(type_)
    )


def _lossy(source: str, field: pa.Field, value: object, row: int, why: str) -> Exception:
    """The LDB-3004 for a Python value the column's type cannot hold exactly."""
    return error_for(
        COLUMN_TYPE,
        f"LDB-3004: source '{source}', column '{field.name}' ({field.type}): "
        f"{value!r} in row {row} {why}; nothing was ingested",
        object=source,
        column_name=field.name,
    )


def _check_no_fraction(values: object, field: pa.Field, source: str) -> None:
    """Refuse a Python number with a fraction bound for a whole-number column.

    pyarrow converts a Python list with a target type by truncating floats
    (``pa.array([1.5], pa.int64())`` gives 1), unlike its array conversions,
    which refuse (``pa.array(numpy.array([1.5]), pa.int64())``, ``cast``).
    A whole float such as 2.0 is accepted, as those accept it.

    Args:
        values: The column's values as given.
        field: The source's field they are converted to.
        source: The source's name, for the error.

    Raises:
        IngestError: LDB-3004 naming the source, the column, the value and
            its row.
    """
    if not isinstance(values, (list, tuple)) or not _whole_numbers_only(field.type):
        return
    kinds = set(map(type, values))  # cheap: the common all-int list skips the scan
    if not any(issubclass(k, _FRACTIONAL) and not issubclass(k, numbers.Integral) for k in kinds):
        return
    for row, value in enumerate(values):
        if (
            isinstance(value, _FRACTIONAL)
            and not isinstance(value, numbers.Integral)
            and math.isfinite(value)
            and value != math.floor(value)
        ):
            raise _lossy(source, field, value, row, "is not a whole number")


def _check_whole_days(values: object, field: pa.Field, source: str) -> None:
    """Refuse a ``datetime`` with a time of day bound for a DATE column.

    pyarrow converts it by dropping the time (``pa.array([datetime(2026, 1, 2,
    10)], pa.date32())`` gives 2026-01-02): a silent loss, refused as a
    fraction bound for a BIGINT is. A ``datetime`` at midnight is accepted.
    Arguments and error as :func:`_check_no_fraction`.
    """
    if not isinstance(values, (list, tuple)) or not pa.types.is_date(field.type):
        return
    if not any(issubclass(k, datetime.datetime) for k in set(map(type, values))):
        return  # cheap: a list of dates skips the scan
    for row, value in enumerate(values):
        if isinstance(value, datetime.datetime) and value.timetz().replace(tzinfo=None) != (
            datetime.time()
        ):
            raise _lossy(source, field, value, row, "has a time of day a DATE cannot hold")


def _column(values: object, field: pa.Field | None, source: str) -> pa.Array:
    """Build one column, with the source's type when the values allow it.

    Args:
        values: A sequence of Python values, a numpy array, or a pyarrow array.
        field: The source's field of that name, or None if it has none.
        source: The source's name, for errors.

    Returns:
        The column. pyarrow arrays are kept as they are; other values are
        converted to the field's type, or by inference when they do not convert
        (the core then rejects the column with an LDB-3004 naming it).

    Raises:
        IngestError: LDB-3004 for a number with a fraction bound for a
            whole-number column (BIGINT, TIMESTAMP...), or a ``datetime``
            with a time of day bound for a DATE column.
    """
    if isinstance(values, pa.ChunkedArray):
        return values.combine_chunks()
    if isinstance(values, pa.Array):
        return values
    if field is not None:
        _check_no_fraction(values, field, source)
        _check_whole_days(values, field, source)
        try:
            return pa.array(values, type=field.type)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
            pass
    return pa.array(values)


#: Values that are one cell, not a column: a dict of only these is one row.
_SCALARS = (
    str, bytes, numbers.Number, decimal.Decimal, datetime.date, datetime.time,
    datetime.timedelta, pa.Scalar,
)


def _is_scalar(value: object) -> bool:
    """Tell whether a dict value is one cell (None, str, a number...), not a column."""
    return value is None or isinstance(value, _SCALARS)


def _one_row_if_scalars(columns: Mapping[str, object], source: str) -> Mapping[str, object]:
    """Turn ``{name: scalar}`` into ``{name: [scalar]}`` (one row); keep columns as they are.

    Args:
        columns: The dict given to ``insert``/``push``.
        source: The source's name, for the error.

    Returns:
        The columns: each value wrapped in a one-element list when every value
        is a scalar, else ``columns`` itself.

    Raises:
        TypeError: If scalars and columns are mixed (naming one of each).
    """
    scalars = [name for name, value in columns.items() if _is_scalar(value)]
    if not scalars:
        return columns
    if len(scalars) == len(columns):
        return {name: [value] for name, value in columns.items()}
    column = next(name for name in columns if name not in scalars)
    raise TypeError(
        f"source {source!r}: {scalars[0]!r} is a single value but {column!r} is a column of "
        "values; give every column as a list (rows) or every one as a single value (one row)"
    )


def batch_from_columns(
    columns: Mapping[str, object], schema: pa.Schema, source: str
) -> pa.RecordBatch:
    """Build a record batch from a dict of columns, typed by the source's schema.

    Args:
        columns: ``{column name: values}``; every value has the same length.
            A dict whose values are all scalars (None, str, bytes, numbers,
            dates, times...) is one row: ``{"k": "a", "v": 1}``.
        schema: The source's schema (types and nullability to use).
        source: The source's name, for errors.

    Returns:
        The batch; columns keep the dict's order.

    Raises:
        TypeError: If a key is not a string, or scalars and lists are mixed.
        IngestError: LDB-3004 for a number with a fraction bound for a
            whole-number column.
        pyarrow.ArrowInvalid: If the columns' lengths differ.
    """
    columns = _one_row_if_scalars(columns, source)
    fields: list[pa.Field] = []
    arrays: list[pa.Array] = []
    for name, values in columns.items():
        if not isinstance(name, str):
            raise TypeError(f"column names must be str, got {type(name).__qualname__}")
        index = schema.get_field_index(name)
        field = schema.field(index) if index >= 0 else None
        array = _column(values, field, source)
        nullable = field.nullable if field is not None else True
        fields.append(pa.field(name, array.type, nullable=nullable))
        arrays.append(array)
    return pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields))


def batch_from_rows(
    rows: Iterable[Mapping[str, object]], schema: pa.Schema, source: str
) -> pa.RecordBatch:
    """Build a record batch from a list of dicts, typed by the source's schema.

    Args:
        rows: One mapping per row; a key missing from a row is NULL there.
        schema: The source's schema.
        source: The source's name, for errors.

    Returns:
        The batch; columns in order of first appearance.

    Raises:
        IngestError: As :func:`batch_from_columns`.
    """
    rows = list(rows)
    names: dict[str, None] = {}
    for row in rows:
        names.update(dict.fromkeys(row))
    columns = {name: [row.get(name) for row in rows] for name in names}
    return batch_from_columns(columns, schema, source)

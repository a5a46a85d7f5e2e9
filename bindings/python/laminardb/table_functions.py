"""Python table functions: one input row in, zero or more rows out.

``Connection.create_table_function(name, fn, params, returns)`` registers
``fn`` through ``laminar_table_function_register``; SQL calls it in FROM,
joined to each row of one input: ``FROM s, f(s.x)`` or
``FROM s CROSS JOIN LATERAL f(s.x) AS t(a, b)``.

The convention (``kind="arrow"``, vectorized): ``fn(*arrays)`` gets one
``pyarrow.Array`` per parameter for a chunk of input rows and returns a
``pyarrow.RecordBatch`` or ``Table`` (or a dict of columns) holding a column
``_row`` -- for each output row, the position (0-based, int32 or int64, never
going down) of the input row it came from -- and one column per declared
output column, by name. An input row whose position is absent makes no row.
``kind="row"`` calls ``fn(*values)`` per input row; it returns (or yields) the
row's output rows as tuples (a bare value for a one-column function).

Rows with a NULL argument make no rows and are not passed unless
``null_handling="special"``. An exception is LDB-3010 naming the function,
the stream and the traceback; a result of the wrong type, a ``_row`` out of
range or going down is LDB-3011 (the core checks it, naming the column or
output row). The callback is ``functions.lm_py_udf_call``, as a scalar
function's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal

import pyarrow as pa

from laminardb._arrow import capsule_pointer
from laminardb._handle import c_text
from laminardb._laminar_cffi import ffi, lib
from laminardb.functions import (
    NullHandling,
    TypeSpec,
    _live,
    arrow_format,
    arrow_type,
    register_handle,
)

__all__ = ["ROW_COLUMN", "TableFunction", "TableFunctionKind"]

#: The parent-row column of an ``arrow`` table function's result.
ROW_COLUMN = "_row"

#: ``kind`` of :meth:`laminardb.Connection.create_table_function`.
TableFunctionKind = Literal["arrow", "row"]


class PyTableFunction:
    """What the engine's callback calls: one chunk in, the struct of rows out."""

    def __init__(
        self, name: str, fn: Callable[..., object], columns: pa.Schema, kind: str
    ) -> None:
        self.name = name
        self.fn = fn
        self.columns = columns
        self.kind = kind

    def _rows(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """kind="row": each input row's output tuples, gathered."""
        values = [c.to_pylist() for c in batch.columns]
        parents: list[int] = []
        rows: list[tuple[object, ...]] = []
        single = len(self.columns) == 1
        for i in range(batch.num_rows):
            made = self.fn(*(v[i] for v in values))
            for row in made if made is not None else ():
                rows.append((row,) if single and not isinstance(row, tuple) else tuple(row))
                parents.append(i)
        arrays = [pa.array(parents, type=pa.int64())]
        for c, field in enumerate(self.columns):
            arrays.append(pa.array([r[c] for r in rows], type=field.type))
        return pa.RecordBatch.from_arrays(arrays, names=[ROW_COLUMN, *self.columns.names])

    def _arrow(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """kind="arrow": fn's table, its _row and declared columns in order."""
        result: Any = self.fn(*batch.columns)
        if isinstance(result, Mapping):
            result = pa.table(dict(result))
        if not isinstance(result, (pa.RecordBatch, pa.Table)):
            raise TypeError(
                f"table function {self.name!r} returned {type(result).__name__}; return a "
                f"pyarrow RecordBatch or Table with a {ROW_COLUMN!r} column and "
                f"{', '.join(self.columns.names)}"
            )
        names = [ROW_COLUMN, *self.columns.names]
        missing = [n for n in names if n not in result.column_names]
        if missing:
            raise ValueError(
                f"table function {self.name!r} returned no column {missing[0]!r} (it returns "
                f"{ROW_COLUMN!r}, the input row of each output row, and "
                f"{', '.join(self.columns.names)})"
            )
        columns = [result.column(n) for n in names]
        arrays = [c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c for c in columns]
        return pa.RecordBatch.from_arrays(arrays, names=names)

    def __call__(self, batch: pa.RecordBatch) -> pa.Array:
        out = self._rows(batch) if self.kind == "row" else self._arrow(batch)
        return out.to_struct_array()


def _columns(returns: Mapping[str, TypeSpec] | Sequence[tuple[str, TypeSpec]]) -> pa.Schema:
    """The output columns as a schema of the engine's types (TypeError else)."""
    items: Iterable[tuple[str, TypeSpec]] = (
        returns.items() if isinstance(returns, Mapping) else returns
    )
    fields = [pa.field(str(n), arrow_type(arrow_format(t))) for n, t in items]
    if not fields:
        raise ValueError("a table function returns at least one column")
    return pa.schema(fields)


class TableFunction:
    """A Python table function to register, as ``Connection.create_table_function`` takes it.

    ``laminardb.open(path, functions=[TableFunction(...)])`` registers it
    before a durable database recovers its streams.

    Example:
        >>> from laminardb.table_functions import TableFunction
        >>> t = TableFunction("pairs", lambda x: [(x, 1)], ["BIGINT"],
        ...                   {"v": "BIGINT", "one": "BIGINT"}, kind="row")
        >>> t.name, t.arg_formats, t.columns.names
        ('pairs', ['l'], ['v', 'one'])
    """

    def __init__(
        self,
        name: str,
        fn: Callable[..., object],
        params: Sequence[TypeSpec],
        returns: Mapping[str, TypeSpec] | Sequence[tuple[str, TypeSpec]],
        *,
        kind: TableFunctionKind = "arrow",
        null_handling: NullHandling = "default",
    ) -> None:
        """Check the options and resolve the types (TypeError / ValueError)."""
        c_text(name, "function name")
        if kind not in ("arrow", "row"):
            raise ValueError(f"kind must be 'arrow' or 'row', got {kind!r}")
        if null_handling not in ("default", "special"):
            raise ValueError(f"null_handling must be 'default' or 'special', got {null_handling!r}")
        self.name = name
        self.arg_formats = [arrow_format(p) for p in params]
        self.columns = _columns(returns)
        self.call = PyTableFunction(name, fn, self.columns, kind)
        self.flags = lib.LAMINAR_FUNCTION_CALLED_ON_NULL if null_handling == "special" else 0

    def register(self, register_fn: Any, target: Any, err: Any) -> int:  # noqa: ANN401 -- cffi
        """Register on ``target`` through ``register_fn``.

        ``register_fn`` is ``laminar_table_function_register`` (a database)
        or ``laminar_config_table_function_register`` (a config); returns its
        code.
        """
        capsule = self.columns.__arrow_c_schema__()  # alive for the call
        schema = ffi.cast("struct ArrowSchema*", capsule_pointer(capsule, "arrow_schema"))
        return register_handle(
            _live,
            self.call,
            self.arg_formats,
            lambda handle, types: register_fn(
                target,
                c_text(self.name, "function name"),
                types,
                len(self.arg_formats),
                schema,
                lib.lm_py_udf_call,
                handle,
                lib.lm_py_udf_destroy,
                self.flags,
                err,
            ),
        )

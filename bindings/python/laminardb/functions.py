"""User-defined scalar functions written in Python (``Connection.create_function``).

The engine calls a registered function once per chunk of rows through the C
callback ``lm_py_udf_call`` (``laminar_function_register``): the arguments
arrive as a struct array over the Arrow C Data Interface, imported into
pyarrow zero-copy; the result is exported back the same way and checked by
the core (type, length, validity) before it is used.

``kind="arrow"`` (the fast path) calls ``fn(*columns)`` once per chunk with
``pyarrow.Array`` arguments and expects an array (or anything
``pyarrow.array`` converts) of the rows' count back. ``kind="row"`` calls
``fn(*values)`` once per row with Python values.

Threads and the GIL: the callback runs on the thread evaluating the query --
a reactor thread after ``start()``, the caller of ``run_until_idle()`` or
``query()`` -- and takes the GIL only for the call (cffi's ``extern
"Python"``); the engine's calls into C from Python release it, so a reactor
calling Python never waits on a thread blocked in the engine.

The argument arrays' buffers belong to the engine and are valid only during
the call: a function must not keep them (or arrays sharing their buffers)
after it returns. Compute a new array, as ``pyarrow.compute`` does.
"""

from __future__ import annotations

import datetime
import decimal
import inspect
import re
import traceback
import typing
from collections.abc import Callable, Sequence
from typing import Any, Literal

import pyarrow as pa

from laminardb._arrow import capsule_pointer, import_batch
from laminardb._handle import c_text, in_callback
from laminardb._laminar_cffi import ffi, lib

__all__ = [
    "Function",
    "FunctionKind",
    "NullHandling",
    "OnError",
    "TypeSpec",
    "arrow_format",
    "arrow_type",
]

#: ``kind`` of :meth:`laminardb.Connection.create_function`.
FunctionKind = Literal["arrow", "row"]
#: ``null_handling``: ``"default"`` (NULL in, NULL out: rows with a NULL
#: argument are NULL and never passed) or ``"special"`` (passed; the function
#: decides).
NullHandling = Literal["default", "special"]
#: ``on_error``: ``"raise"`` (the batch fails with LDB-3010) or ``"null"``
#: (the row -- for kind arrow, the chunk -- is NULL).
OnError = Literal["raise", "null"]
#: A parameter or return type: a pyarrow type, an SQL type name or a Python type.
TypeSpec = pa.DataType | str | type

# The engine's types, by the Arrow format the C API takes.
_SQL_NAMES = {
    "BOOLEAN": "b",
    "BOOL": "b",
    "INT": "i",
    "INTEGER": "i",
    "INT4": "i",
    "BIGINT": "l",
    "INT8": "l",
    "DOUBLE": "g",
    "FLOAT8": "g",
    "VARCHAR": "u",
    "TEXT": "u",
    "STRING": "u",
    "TIMESTAMP": "tsu:",
    "DATE": "tdD",
}
_PY_TYPES: dict[object, str] = {
    bool: "b",
    int: "l",
    float: "g",
    str: "u",
    datetime.datetime: "tsu:",
    datetime.date: "tdD",
}
_ARROW_TYPES = {
    pa.bool_(): "b",
    pa.int32(): "i",
    pa.int64(): "l",
    pa.float64(): "g",
    pa.string(): "u",
    pa.large_string(): "u",
    pa.timestamp("us"): "tsu:",
    pa.date32(): "tdD",
}
_FORMAT_TYPES = {
    "b": pa.bool_(),
    "i": pa.int32(),
    "l": pa.int64(),
    "g": pa.float64(),
    "u": pa.string(),
    "tsu:": pa.timestamp("us"),
    "tdD": pa.date32(),
}


#: ``DECIMAL(p, s)`` / ``NUMERIC(p, s)`` as an SQL type name.
_SQL_DECIMAL = re.compile(r"(?:DECIMAL|NUMERIC)\s*\(\s*(\d+)\s*,\s*(\d+)\s*\)")
#: The decimal128 format ``d:p,s`` the engine takes a DECIMAL(p, s) in.
_FORMAT_DECIMAL = re.compile(r"d:(\d+),(\d+)")


def _decimal_format(precision: int, scale: int, spec: object) -> str:
    """``d:p,s`` for DECIMAL(p, s), checked as the engine does (1 <= p <= 38)."""
    if not (1 <= precision <= 38 and 0 <= scale <= precision):
        raise TypeError(
            f"no engine type for {spec!r}: DECIMAL(p, s) takes 1 <= p <= 38 and "
            "0 <= s <= p"
        )
    return f"d:{precision},{scale}"


def arrow_format(spec: TypeSpec) -> str:
    """Return the Arrow format string the engine takes for a parameter type.

    Args:
        spec: A pyarrow type (``pa.float64()``, ``pa.decimal128(10, 2)``), an
            SQL type name (``"DOUBLE"``, ``"DECIMAL(10,2)"``) or a Python type
            (``float``).

    Returns:
        One of ``b``, ``i``, ``l``, ``g``, ``u``, ``tsu:``, ``tdD``, or
        ``d:p,s`` (decimal128) for a DECIMAL(p, s).

    Raises:
        TypeError: For a type the engine has no column type for (and for
            ``decimal.Decimal``, which names no precision and scale).

    Example:
        >>> from laminardb.functions import arrow_format
        >>> arrow_format(float), arrow_format("BIGINT"), arrow_format("DECIMAL(10, 2)")
        ('g', 'l', 'd:10,2')
    """
    if isinstance(spec, pa.Decimal128Type):
        return _decimal_format(spec.precision, spec.scale, spec)
    if isinstance(spec, pa.DataType):
        found = _ARROW_TYPES.get(spec)
    elif isinstance(spec, str):
        dec = _SQL_DECIMAL.fullmatch(spec.strip().upper())
        if dec is not None:
            return _decimal_format(int(dec.group(1)), int(dec.group(2)), spec)
        found = _SQL_NAMES.get(spec.strip().upper())
    elif spec is decimal.Decimal:
        raise TypeError(
            "decimal.Decimal names no precision and scale: pass the type as "
            "'DECIMAL(p, s)' or pa.decimal128(p, s) (params=/returns=)"
        )
    else:
        found = _PY_TYPES.get(spec)
    if found is None:
        raise TypeError(
            f"no engine type for {spec!r}: use BOOLEAN, INT, BIGINT, DOUBLE, VARCHAR, "
            "TIMESTAMP, DATE or DECIMAL(p, s) (pyarrow, SQL name or "
            "bool/int/float/str/datetime/date)"
        )
    return found


def arrow_type(fmt: str) -> pa.DataType:
    """Return the pyarrow type of an engine format (:func:`arrow_format`'s result).

    Args:
        fmt: ``b``, ``i``, ``l``, ``g``, ``u``, ``tsu:``, ``tdD`` or ``d:p,s``.

    Returns:
        The pyarrow type (``pa.decimal128(p, s)`` for ``d:p,s``).

    Example:
        >>> from laminardb.functions import arrow_type
        >>> arrow_type("d:10,2")
        Decimal128Type(decimal128(10, 2))
    """
    dec = _FORMAT_DECIMAL.fullmatch(fmt)
    if dec is not None:
        return pa.decimal128(int(dec.group(1)), int(dec.group(2)))
    return _FORMAT_TYPES[fmt]


def _hinted_types(fn: Callable[..., object]) -> tuple[list[object], object]:
    """The parameter and return annotations of ``fn`` (evaluated)."""
    try:
        hints = typing.get_type_hints(fn)
    except Exception as exc:  # noqa: BLE001 -- any failure to evaluate them
        raise TypeError(f"cannot read the type hints of {fn!r}: {exc}") from exc
    params = []
    for p in inspect.signature(fn).parameters.values():
        if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            raise TypeError(f"{fn!r}: only positional parameters can take SQL arguments")
        if p.name not in hints:
            raise TypeError(f"{fn!r}: parameter {p.name!r} has no type hint; pass params=")
        params.append(hints[p.name])
    if "return" not in hints:
        raise TypeError(f"{fn!r} has no return type hint; pass returns=")
    return params, hints["return"]


def resolve_types(
    fn: Callable[..., object],
    params: Sequence[TypeSpec] | None,
    returns: TypeSpec | None,
) -> tuple[list[str], str]:
    """The Arrow formats of the parameters and the result (type hints fill gaps)."""
    if params is None or returns is None:
        hinted_params, hinted_return = _hinted_types(fn)
        if params is None:
            params = hinted_params  # type: ignore[assignment]
        if returns is None:
            returns = hinted_return  # type: ignore[assignment]
    return [arrow_format(p) for p in params], arrow_format(returns)  # type: ignore[union-attr]


class PyFunction:
    """What the engine's callback calls: the function, its kind and policies."""

    def __init__(
        self,
        name: str,
        fn: Callable[..., object],
        result_format: str,
        *,
        kind: FunctionKind,
        on_error: OnError,
    ) -> None:
        self.name = name
        self.fn = fn
        self.result_type = arrow_type(result_format)
        self.kind = kind
        self.on_error = on_error

    def _call_rows(self, columns: list[pa.Array], n: int) -> list[object]:
        values = [c.to_pylist() for c in columns]
        out: list[object] = []
        for i in range(n):
            try:
                out.append(self.fn(*(v[i] for v in values)))
            except Exception:
                if self.on_error != "null":
                    raise
                out.append(None)
        return out

    def __call__(self, batch: pa.RecordBatch) -> pa.Array:
        """One chunk: the arguments' columns in, one array of their length out."""
        n = batch.num_rows
        columns = list(batch.columns)
        if self.kind == "row":
            return pa.array(self._call_rows(columns, n), type=self.result_type)
        try:
            result = self.fn(*columns)
        except Exception:
            if self.on_error != "null":
                raise
            return pa.nulls(n, type=self.result_type)
        if isinstance(result, pa.ChunkedArray):
            result = result.combine_chunks()
        if not isinstance(result, pa.Array):
            # A list, numpy array or scalar sequence: converted to the declared
            # type (an Array of another type is the core's to refuse).
            result = pa.array(result, type=self.result_type)
        return result


def export_into(result: pa.Array, out: Any, out_schema: Any) -> None:  # noqa: ANN401 -- cdata
    """Move ``result`` into the engine's ``out`` / ``out_schema`` structs."""
    schema_capsule, array_capsule = result.__arrow_c_array__()
    src_schema = ffi.cast("struct ArrowSchema*", capsule_pointer(schema_capsule, "arrow_schema"))
    src_array = ffi.cast("struct ArrowArray*", capsule_pointer(array_capsule, "arrow_array"))
    # Move both into the engine's structs (the capsules are left released).
    ffi.memmove(out, src_array, ffi.sizeof("struct ArrowArray"))
    src_array.release = ffi.NULL
    ffi.memmove(out_schema, src_schema, ffi.sizeof("struct ArrowSchema"))
    src_schema.release = ffi.NULL


def error_text(exc: BaseException) -> str:
    """The exception and the innermost frames of its traceback, for the LDB message.

    The frames nearest the raise come first after the header, so that a
    message cut to the engine's length keeps the user's line.
    """
    head = f"{type(exc).__name__}: {exc}"
    frames = traceback.format_tb(exc.__traceback__)
    if not frames:
        return head
    return f"{head}\nTraceback (most recent call last, innermost first):\n" + "".join(
        reversed(frames[-3:])
    )


def write_error(buf: Any, cap: int, text: str) -> None:  # noqa: ANN401 -- cdata
    data = text.encode("utf-8", "replace")[: max(cap - 1, 0)]
    ffi.memmove(buf, data, len(data))
    buf[len(data)] = b"\0"


def _failed(exc_type: object, exc_value: BaseException | None, tb: object) -> int:
    """An error outside the guarded call (cannot happen in practice): fail it."""
    return -1


@ffi.def_extern(onerror=_failed)
def lm_py_udf_call(
    user: Any,  # noqa: ANN401 -- cdata
    args: Any,  # noqa: ANN401
    args_schema: Any,  # noqa: ANN401
    out: Any,  # noqa: ANN401
    out_schema: Any,  # noqa: ANN401
    error: Any,  # noqa: ANN401
    error_cap: int,
) -> int:
    """``laminar_function_callback`` of every Python function."""
    function: PyFunction = ffi.from_handle(user)
    try:
        # The structs are the engine's, borrowed for the call; their release
        # callbacks free nothing, so pyarrow may take them.
        batch = import_batch(
            ffi.cast("struct ArrowArray*", args), ffi.cast("struct ArrowSchema*", args_schema)
        )
        with in_callback():
            result = function(batch)
        export_into(result, out, out_schema)
    except Exception as exc:  # noqa: BLE001 -- every error becomes the engine's LDB-3010
        write_error(error, int(error_cap), error_text(exc))
        return 1
    return 0


def register_handle(
    live: dict[int, Any],
    call: object,
    arg_formats: Sequence[str],
    register: Callable[[Any, Any], int],
) -> int:
    """Register ``call`` through ``register(handle, arg_types)``, its handle kept.

    The cffi handle of ``call`` stays in ``live`` (by address) until the
    engine's destroy callback drops it, or at once when the registration
    fails (destroy is not called then). Returns the code of ``register``.
    """
    handle = ffi.new_handle(call)
    key = int(ffi.cast("uintptr_t", handle))
    keep = [ffi.new("char[]", f.encode()) for f in arg_formats]
    types = ffi.new("const char*[]", keep) if keep else ffi.NULL
    live[key] = handle
    code = int(register(handle, types))
    if code != 0:
        live.pop(key, None)
    return code


# Live functions' handles, by address: kept until the engine's destroy.
_live: dict[int, Any] = {}


@ffi.def_extern()
def lm_py_udf_destroy(user: Any) -> None:  # noqa: ANN401 -- cdata
    """The engine dropped the function: let its Python object go."""
    _live.pop(int(ffi.cast("uintptr_t", user)), None)


class Function:
    """A Python function to register, as ``Connection.create_function`` takes it.

    ``laminardb.open(path, functions=[Function(...), ...])`` registers them
    before a durable database recovers its streams (which may call them).
    The arguments are those of :meth:`laminardb.Connection.create_function`.

    Example:
        >>> import pyarrow.compute as pc
        >>> from laminardb.functions import Function
        >>> f = Function("twice", lambda x: pc.multiply(x, 2), ["BIGINT"], "BIGINT")
        >>> f.name, f.arg_formats, f.result_format
        ('twice', ['l'], 'l')
    """

    def __init__(
        self,
        name: str,
        fn: Callable[..., object],
        params: Sequence[TypeSpec] | None = None,
        returns: TypeSpec | None = None,
        *,
        kind: FunctionKind = "arrow",
        null_handling: NullHandling = "default",
        on_error: OnError = "raise",
        deterministic: bool = False,
    ) -> None:
        """Check the options and resolve the types (TypeError / ValueError)."""
        c_text(name, "function name")  # a str without NUL, or TypeError / ValueError
        if kind not in ("arrow", "row"):
            raise ValueError(f"kind must be 'arrow' or 'row', got {kind!r}")
        if null_handling not in ("default", "special"):
            raise ValueError(f"null_handling must be 'default' or 'special', got {null_handling!r}")
        if on_error not in ("raise", "null"):
            raise ValueError(f"on_error must be 'raise' or 'null', got {on_error!r}")
        self.name = name
        self.arg_formats, self.result_format = resolve_types(fn, params, returns)
        self.call = PyFunction(name, fn, self.result_format, kind=kind, on_error=on_error)
        self.flags = 0
        if deterministic:
            self.flags |= lib.LAMINAR_FUNCTION_DETERMINISTIC
        if null_handling == "special":
            self.flags |= lib.LAMINAR_FUNCTION_CALLED_ON_NULL

    def register(self, register_fn: Any, target: Any, err: Any) -> int:  # noqa: ANN401 -- cffi
        """Register on ``target`` (a database or a config) through ``register_fn``.

        ``register_fn`` is ``laminar_function_register`` or
        ``laminar_config_function_register``; returns the code it returned.
        """
        return register_handle(
            _live,
            self.call,
            self.arg_formats,
            lambda handle, types: register_fn(
                target,
                c_text(self.name, "function name"),
                types,
                len(self.arg_formats),
                self.result_format.encode(),
                lib.lm_py_udf_call,
                handle,
                lib.lm_py_udf_destroy,
                self.flags,
                err,
            ),
        )

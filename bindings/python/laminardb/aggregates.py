"""User-defined aggregate functions written in Python (``Connection.create_aggregate``).

The user's class gives the aggregate's logic over Python state objects::

    class GeoMean:
        def init(self):                      # the empty state
            return (0.0, 0)
        def update(self, state, x):          # x: a pyarrow.Array of this group's rows
            s, n = state
            return (s + pc.sum(pc.ln(x)).as_py(), n + len(x))
        def merge(self, a, b):               # two partial states into one
            return (a[0] + b[0], a[1] + b[1])
        def finalize(self, state):           # the group's result (None: NULL)
            return math.exp(state[0] / state[1]) if state[1] else None
        # optional: retract(state, *arrays) -> state (changelog input),
        #           serialize(state) -> bytes, deserialize(bytes) -> state
        #           (default: pickle)

Each method returns the new state (it may also change the state it got and
return it). The engine registers it through ``laminar_aggregate_register``
with an 8-byte state per group holding a key into this object's table of
Python states (0: none yet, created by ``init()`` when a group first needs
one); ``destroy_state`` drops a key, ``serialize``/``deserialize`` carry a
state through checkpoints and copies.

Calls: one engine callback per chunk (``update``/``retract``) splits the
chunk's rows by group and calls ``update(state, *arrays)`` once per group
with ``pyarrow.Array`` slices of that group's rows (rows with a NULL argument
left out unless ``null_handling="special"``); ``finalize`` is called per
group when a result is emitted. Threads and the GIL as for scalar functions
(``laminardb.functions``): the GIL is taken for the callback only, and the
core serializes the calls of one aggregate.

Errors: an exception fails the batch with LDB-3010 naming the function, the
callback, the stream and the traceback (``on_error="raise"``); with
``on_error="null"`` the group's state is marked failed instead and its result
is NULL until the group ends.
"""

from __future__ import annotations

import copy
import pickle
from collections.abc import Sequence
from typing import Any, Literal

import pyarrow as pa

from laminardb._arrow import import_batch
from laminardb._handle import c_text, in_callback
from laminardb._laminar_cffi import ffi, lib
from laminardb.functions import (
    TypeSpec,
    arrow_format,
    arrow_type,
    error_text,
    export_into,
    register_handle,
    write_error,
)

__all__ = ["Aggregate", "AggregateOnError"]

#: ``on_error`` of :meth:`laminardb.Connection.create_aggregate`.
AggregateOnError = Literal["raise", "null"]

class _Failed:
    """The state of a group whose callback raised under ``on_error="null"``."""

    __slots__ = ()


_FAILED = _Failed()


class PyAggregate:
    """What the engine's callbacks call: the user's object and the states' table."""

    def __init__(self, name: str, impl: object, result_format: str, on_error: str) -> None:
        self.name = name
        self.impl: Any = impl
        self.result_type = arrow_type(result_format)
        self.on_error = on_error
        self.states: dict[int, object] = {}
        self.next_key = 1
        # The last state serialize encoded past the engine's buffer, by key.
        self.pending: tuple[int, bytes] | None = None

    # -- the table of states ---------------------------------------------------------

    def get(self, key: int) -> object:
        """The state under ``key`` (a fresh ``init()`` one for 0)."""
        if key:
            return self.states[key]
        with in_callback():
            return self.impl.init()

    def put(self, slot: Any, key: int, state: object) -> None:  # noqa: ANN401 -- cdata
        """Keep ``state`` under ``key`` (a new key written to ``slot`` for 0)."""
        if not key:
            key = self.next_key
            self.next_key += 1
            slot[0] = key
        self.states[key] = state

    def apply(self, method: str, state: object, columns: Sequence[pa.Array]) -> object:
        """``update`` or ``retract`` of one group, with the on_error policy."""
        if state is _FAILED:
            return state
        try:
            with in_callback():
                return getattr(self.impl, method)(state, *columns)
        except Exception:
            if self.on_error != "null":
                raise
            return _FAILED

    def copy(self, state: object) -> object:
        """Return a copy of ``state`` an update may change.

        Through ``serialize`` / ``deserialize`` when the class has them, else
        ``copy.deepcopy``.
        """
        if state is _FAILED:
            return state
        enc = getattr(self.impl, "serialize", None)
        dec = getattr(self.impl, "deserialize", None)
        with in_callback():
            if enc is not None and dec is not None:
                return dec(enc(state))
            return copy.deepcopy(state)

    def result(self, state: object) -> object:
        """``finalize`` of one group (None for a failed one)."""
        if state is _FAILED:
            return None
        try:
            with in_callback():
                return self.impl.finalize(state)
        except Exception:
            if self.on_error != "null":
                raise
            return None

    def encode(self, state: object) -> bytes:
        if state is _FAILED:
            return b"\x00"
        enc = getattr(self.impl, "serialize", None)
        with in_callback():
            data = enc(state) if enc is not None else pickle.dumps(state)
        return b"\x01" + bytes(data)

    def decode(self, data: bytes) -> object:
        if data[:1] == b"\x00":
            return _FAILED
        dec = getattr(self.impl, "deserialize", None)
        with in_callback():
            return dec(data[1:]) if dec is not None else pickle.loads(data[1:])  # noqa: S301


def _user(user: Any) -> PyAggregate:  # noqa: ANN401 -- cdata
    agg: PyAggregate = ffi.from_handle(user)
    return agg


def _fail(exc_type: object, exc_value: BaseException | None, tb: object) -> int:
    """An error outside the guarded body (cannot happen in practice): fail it."""
    return -1


def _update(
    user: Any,  # noqa: ANN401 -- cdata
    states: Any,  # noqa: ANN401
    groups: Any,  # noqa: ANN401
    args: Any,  # noqa: ANN401
    args_schema: Any,  # noqa: ANN401
    error: Any,  # noqa: ANN401
    error_cap: int,
    method: str,
) -> int:
    agg = _user(user)
    try:
        batch = import_batch(
            ffi.cast("struct ArrowArray*", args), ffi.cast("struct ArrowSchema*", args_schema)
        )
        n = batch.num_rows
        rows: dict[int, list[int]] = {}
        for j, g in enumerate(ffi.unpack(ffi.cast("uint32_t*", groups), n)):
            rows.setdefault(g, []).append(j)
        keys = ffi.cast("uint64_t*", states)
        columns = batch.columns
        # All or nothing: every group's new state is computed (from a copy of
        # its state: ``update`` may change the one it gets) before any is
        # kept, so an exception leaves every group as before the chunk.
        done: list[tuple[int, int, object]] = []
        for g, idx in rows.items():
            take = pa.array(idx, type=pa.int32())
            # Copies: the engine's buffers are valid only during the call.
            group_columns = [c.take(take) for c in columns]
            key = int(keys[g])
            state = agg.copy(agg.get(key)) if key else agg.get(key)
            done.append((g, key, agg.apply(method, state, group_columns)))
        for g, key, state in done:
            agg.put(keys + g, key, state)
    except Exception as exc:  # noqa: BLE001 -- every error becomes the engine's LDB-3010
        write_error(error, int(error_cap), error_text(exc))
        return 1
    return 0


@ffi.def_extern(onerror=_fail)
def lm_py_udaf_update(
    user: Any,  # noqa: ANN401 -- cdata
    states: Any,  # noqa: ANN401
    groups: Any,  # noqa: ANN401
    args: Any,  # noqa: ANN401
    args_schema: Any,  # noqa: ANN401
    error: Any,  # noqa: ANN401
    error_cap: int,
) -> int:
    """``update`` of every Python aggregate."""
    return _update(user, states, groups, args, args_schema, error, error_cap, "update")


@ffi.def_extern(onerror=_fail)
def lm_py_udaf_retract(
    user: Any,  # noqa: ANN401 -- cdata
    states: Any,  # noqa: ANN401
    groups: Any,  # noqa: ANN401
    args: Any,  # noqa: ANN401
    args_schema: Any,  # noqa: ANN401
    error: Any,  # noqa: ANN401
    error_cap: int,
) -> int:
    """``retract`` of every Python aggregate that has one."""
    return _update(user, states, groups, args, args_schema, error, error_cap, "retract")


@ffi.def_extern(onerror=_fail)
def lm_py_udaf_merge(
    user: Any,  # noqa: ANN401 -- cdata
    state: Any,  # noqa: ANN401
    other: Any,  # noqa: ANN401
    error: Any,  # noqa: ANN401
    error_cap: int,
) -> int:
    """``merge`` of every Python aggregate: other's state folded into state's."""
    agg = _user(user)
    try:
        slot = ffi.cast("uint64_t*", state)
        other_key = int(ffi.cast("uint64_t*", other)[0])
        if other_key:
            a, b = agg.get(int(slot[0])), agg.states[other_key]
            with in_callback():
                merged = _FAILED if a is _FAILED or b is _FAILED else agg.impl.merge(a, b)
            agg.put(slot, int(slot[0]), merged)
    except Exception as exc:  # noqa: BLE001
        write_error(error, int(error_cap), error_text(exc))
        return 1
    return 0


@ffi.def_extern(onerror=_fail)
def lm_py_udaf_finalize(
    user: Any,  # noqa: ANN401 -- cdata
    states: Any,  # noqa: ANN401
    n: int,
    out: Any,  # noqa: ANN401
    out_schema: Any,  # noqa: ANN401
    error: Any,  # noqa: ANN401
    error_cap: int,
) -> int:
    """``finalize`` of every Python aggregate: n groups' results as one array."""
    agg = _user(user)
    try:
        keys = ffi.unpack(ffi.cast("uint64_t*", states), int(n))
        values = [agg.result(agg.get(int(k))) for k in keys]
        export_into(pa.array(values, type=agg.result_type), out, out_schema)
    except Exception as exc:  # noqa: BLE001
        write_error(error, int(error_cap), error_text(exc))
        return 1
    return 0


@ffi.def_extern(onerror=_fail)
def lm_py_udaf_serialize(
    user: Any,  # noqa: ANN401 -- cdata
    state: Any,  # noqa: ANN401
    buf: Any,  # noqa: ANN401
    cap: int,
) -> int:
    """A state's bytes (empty for none yet); the length, written if it fits."""
    agg = _user(user)
    try:
        key = int(ffi.cast("uint64_t*", state)[0])
        if not key:
            return 0
        if agg.pending is not None and agg.pending[0] == key:
            data = agg.pending[1]
        else:
            data = agg.encode(agg.states[key])
        if len(data) > cap:
            agg.pending = (key, data)  # the engine calls again with room
        else:
            agg.pending = None
            ffi.memmove(buf, data, len(data))
        return len(data)
    except Exception:  # noqa: BLE001 -- the checkpoint or copy fails
        return -1


@ffi.def_extern(onerror=_fail)
def lm_py_udaf_deserialize(
    user: Any,  # noqa: ANN401 -- cdata
    state: Any,  # noqa: ANN401
    buf: Any,  # noqa: ANN401
    length: int,
) -> int:
    """A state from serialize's bytes, under a new key."""
    agg = _user(user)
    try:
        slot = ffi.cast("uint64_t*", state)
        slot[0] = 0
        if length > 0:
            agg.put(slot, 0, agg.decode(bytes(ffi.buffer(buf, int(length)))))
    except Exception:  # noqa: BLE001 -- the restore fails
        return 1
    return 0


@ffi.def_extern()
def lm_py_udaf_destroy_state(user: Any, state: Any) -> None:  # noqa: ANN401 -- cdata
    """The engine discards a group's state: let its Python object go."""
    agg = _user(user)
    slot = ffi.cast("uint64_t*", state)
    agg.states.pop(int(slot[0]), None)
    slot[0] = 0


# Live aggregates' handles, by address: kept until the engine's destroy.
_live: dict[int, Any] = {}


@ffi.def_extern()
def lm_py_udaf_destroy(user: Any) -> None:  # noqa: ANN401 -- cdata
    """The engine dropped the aggregate: let its Python object go."""
    _live.pop(int(ffi.cast("uintptr_t", user)), None)


class Aggregate:
    """A Python aggregate to register, as ``Connection.create_aggregate`` takes it.

    ``laminardb.open(path, functions=[Aggregate(...), ...])`` registers it
    before a durable database recovers its streams (which may call it). The
    arguments are those of :meth:`laminardb.Connection.create_aggregate`.

    Example:
        >>> from laminardb.aggregates import Aggregate
        >>> class Total:
        ...     def init(self): return 0.0
        ...     def update(self, s, x): return s + sum(v for v in x.to_pylist())
        ...     def merge(self, a, b): return a + b
        ...     def finalize(self, s): return s
        >>> a = Aggregate("total", Total, ["DOUBLE"], "DOUBLE")
        >>> a.name, a.arg_formats, a.result_format, a.retractable
        ('total', ['g'], 'g', False)
    """

    def __init__(
        self,
        name: str,
        cls: type | object,
        params: Sequence[TypeSpec],
        returns: TypeSpec,
        *,
        null_handling: Literal["default", "special"] = "default",
        on_error: AggregateOnError = "raise",
    ) -> None:
        """Check the class and options and resolve the types (TypeError / ValueError)."""
        c_text(name, "aggregate name")
        impl = cls() if isinstance(cls, type) else cls
        for method in ("init", "update", "merge", "finalize"):
            if not callable(getattr(impl, method, None)):
                raise TypeError(f"aggregate {name!r}: {cls!r} has no {method}() method")
        if on_error not in ("raise", "null"):
            raise ValueError(f"on_error must be 'raise' or 'null', got {on_error!r}")
        if null_handling not in ("default", "special"):
            raise ValueError(f"null_handling must be 'default' or 'special', got {null_handling!r}")
        if not 1 <= len(params) <= 2:
            raise ValueError(f"aggregate {name!r}: takes 1 or 2 parameters, got {len(params)}")
        self.name = name
        self.arg_formats = [arrow_format(p) for p in params]
        self.result_format = arrow_format(returns)  # any engine type (TypeError else)
        self.retractable = callable(getattr(impl, "retract", None))
        self.call = PyAggregate(name, impl, self.result_format, on_error)
        self.flags = lib.LAMINAR_FUNCTION_CALLED_ON_NULL if null_handling == "special" else 0

    def register(self, register_fn: Any, target: Any, err: Any) -> int:  # noqa: ANN401 -- cffi
        """Register on ``target`` through ``register_fn``.

        ``register_fn`` is ``laminar_aggregate_register`` (a database) or
        ``laminar_config_aggregate_register`` (a config); returns its code.
        """
        return register_handle(
            _live,
            self.call,
            self.arg_formats,
            lambda handle, types: register_fn(
                target,
                c_text(self.name, "aggregate name"),
                types,
                len(self.arg_formats),
                self.result_format.encode(),
                8,
                ffi.NULL,
                lib.lm_py_udaf_update,
                lib.lm_py_udaf_retract if self.retractable else ffi.NULL,
                lib.lm_py_udaf_merge,
                lib.lm_py_udaf_finalize,
                lib.lm_py_udaf_serialize,
                lib.lm_py_udaf_deserialize,
                lib.lm_py_udaf_destroy_state,
                handle,
                lib.lm_py_udaf_destroy,
                self.flags,
                err,
            ),
        )

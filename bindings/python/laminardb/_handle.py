"""Shared lifetime machinery of the Python handle objects.

DESIGN: each handle (``Connection``, ``Source``, ``Subscription``) wraps one C
handle pointer and one ``threading.Lock``. Every C call on the pointer is made
with the lock held, and ``close`` takes the same lock, so a handle is never
freed while a call on it runs in another thread (cffi releases the GIL during
the call, so that can otherwise happen). Blocking waits are cut into short
calls (``Subscription``: 100 ms) so ``close`` from another thread, and Ctrl-C,
get through quickly. Use after close raises ``LaminarError`` LDB-9002 instead
of touching freed memory.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

from laminardb._laminar_cffi import ffi
from laminardb.errors import misuse

if TYPE_CHECKING:
    import pyarrow as pa

    from laminardb.connection import Connection

__all__ = ["Handle", "NamedHandle", "c_text", "sigint_held"]

_H = TypeVar("_H", bound="Handle")


def c_text(value: str, what: str) -> bytes:
    """Encode a name or SQL text for a ``const char*`` argument.

    Args:
        value: The text.
        what: What it is, for the error message (``"source name"``).

    Returns:
        The UTF-8 bytes.

    Raises:
        TypeError: If ``value`` is not a str.
        ValueError: If it contains a NUL character (C would cut it there).
    """
    if not isinstance(value, str):
        raise TypeError(f"{what} must be str, got {type(value).__qualname__}")
    if "\0" in value:
        raise ValueError(f"{what} contains a NUL character")
    return value.encode("utf-8")


@contextlib.contextmanager
def sigint_held() -> Iterator[None]:
    """Hold Ctrl-C (SIGINT) back while the block runs, then deliver it.

    For work that must not stop halfway (closing a database: stop the runtime,
    close the handles, free the core's threads and memory). A SIGINT that
    comes meanwhile is recorded and raised again when the block ends, to the
    handler that was installed before (KeyboardInterrupt by default). Outside
    the main thread (where Python never raises KeyboardInterrupt) or when the
    handler is not Python's to change, the block just runs.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    hits: list[int] = []
    try:
        previous = signal.getsignal(signal.SIGINT)
        if previous is None:  # installed outside Python: cannot be put back
            raise ValueError(previous)
        signal.signal(signal.SIGINT, lambda signum, _frame: hits.append(signum))
    except (ValueError, TypeError, OSError):
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if hits:
            signal.raise_signal(signal.SIGINT)


# Per thread: how deep it is in the engine's calls of user-defined functions.
_callbacks = threading.local()


@contextlib.contextmanager
def in_callback() -> Iterator[None]:
    """Mark the current thread as running a user-defined function for the engine.

    Inside, every handle's lock refuses to be taken (:class:`_HandleLock`):
    the engine is in the middle of a batch on this thread, or holds its own
    locks for it, so calling the database back could only deadlock.
    """
    _callbacks.depth = getattr(_callbacks, "depth", 0) + 1
    try:
        yield
    finally:
        _callbacks.depth -= 1


class _HandleLock:
    """A handle's lock that refuses use from inside a user-defined function."""

    __slots__ = ("_lock",)

    def __init__(self) -> None:
        self._lock = threading.Lock()

    def __enter__(self) -> bool:
        if getattr(_callbacks, "depth", 0):
            raise misuse(
                "a user-defined function called the database from inside its callback "
                "(the engine is processing a batch on this thread): compute from the "
                "arguments only"
            )
        return self._lock.__enter__()

    def __exit__(self, *exc: object) -> None:
        self._lock.__exit__(*exc)


class Handle:
    """Base class: one C handle, its lock, context management and ``repr``."""

    _kind = "handle"

    def __init__(self, pointer: Any, label: str) -> None:  # noqa: ANN401 -- cdata
        """Wrap an open C handle.

        Args:
            pointer: The C handle (cffi pointer), not NULL.
            label: What ``repr`` and error messages call it (``"'trades'"``).
        """
        self._lock = _HandleLock()
        self._pointer: Any = pointer
        self._label = label

    @property
    def closed(self) -> bool:
        """True once the handle is closed (by ``close`` or its connection)."""
        return self._pointer is None

    def _require_open(self) -> Any:  # noqa: ANN401 -- cdata
        """Return the C handle; call with ``self._lock`` held.

        Returns:
            The C handle pointer.

        Raises:
            LaminarError: LDB-9002 if the handle is closed.
        """
        pointer = self._pointer
        if pointer is None or pointer == ffi.NULL:
            raise misuse(f"{self._kind} {self._label} is closed")
        return pointer

    def _release(self, pointer: Any) -> None:  # noqa: ANN401 -- cdata
        """Free the C handle; subclasses call their ``laminar_*_close``.

        Args:
            pointer: The C handle being closed.
        """
        raise NotImplementedError

    def _detach(self) -> None:
        """Hook run after the handle is closed (drop back-references)."""

    def close(self) -> None:
        """Close the handle; closing twice is a no-op.

        Waits for a call running on the handle in another thread to return
        (at most one short wait slice for a blocked ``poll``).
        """
        with self._lock:
            pointer, self._pointer = self._pointer, None
            if pointer is not None:
                self._release(pointer)
        if pointer is not None:
            self._detach()

    def __enter__(self: _H) -> _H:
        """Return the handle itself."""
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Close the handle."""
        self.close()

    def __del__(self) -> None:
        """Close a handle that was never closed (garbage collection)."""
        with contextlib.suppress(Exception):
            if getattr(self, "_pointer", None) is not None:
                self.close()

    def __repr__(self) -> str:
        """Show the kind, the name and whether the handle is open."""
        state = "closed" if self.closed else "open"
        return f"<laminardb.{type(self).__name__} {self._label} {state}>"


class NamedHandle(Handle):
    """A handle on one named object of a connection (a source or a stream)."""

    def __init__(
        self,
        connection: Connection,
        name: str,
        pointer: Any,  # noqa: ANN401 -- cdata
        schema: pa.Schema,
    ) -> None:
        """Wrap an open C handle on the object ``name``.

        Args:
            connection: The owning connection (kept alive by this handle).
            name: The object's name.
            pointer: The C handle (``laminar_source*``, ``laminar_subscription*``).
            schema: The object's rows, as ``laminar_schema`` reports them.
        """
        super().__init__(pointer, repr(name))
        self._connection: Connection | None = connection
        self._name = name
        self._schema = schema

    @property
    def name(self) -> str:
        """The source's or stream's name."""
        return self._name

    @property
    def schema(self) -> pa.Schema:
        """The columns of the object's rows, as a ``pyarrow.Schema``."""
        return self._schema

    def _detach(self) -> None:
        self._connection = None

"""Exceptions of ``laminardb``: one base class, one subclass per LDB area.

Every engine error carries its stable code (``LDB-NNNN``, the ``laminar_code``
value of ``laminar.h``). The thousands digit picks the class, the way
``code / 1000`` gives the area in C (STYLE §2.3):

========  =====================  ==========================
area      class                  also an instance of
========  =====================  ==========================
1xxx      :class:`SQLError`      :class:`ValueError`
2xxx      :class:`SchemaError`   :class:`TypeError`
3xxx      :class:`IngestError`   :class:`ValueError`
          (3006: :class:`QueueFull`)
4xxx      :class:`SubscriptionError`
5xxx      :class:`StorageError`  :class:`OSError`
6xxx      :class:`ConfigError`   :class:`ValueError`
9xxx      :class:`InternalError`
========  =====================  ==========================

:func:`raise_for` (and the helpers built on :func:`error_for`) is the only
place that turns a ``laminar_code`` into an exception.
"""

from __future__ import annotations

from typing import Any

from laminardb._laminar_cffi import ffi, lib

__all__ = [
    "CODES",
    "ConfigError",
    "IngestError",
    "InternalError",
    "LaminarError",
    "QueueFull",
    "SQLError",
    "SchemaError",
    "StorageError",
    "SubscriptionError",
    "error_class",
    "error_for",
    "raise_for",
]

#: ``{LDB number: enumerator name}`` for every error code of ``laminar.h``
#: (``LAMINAR_OK`` excluded). Taken from the ``laminar_code`` enum that the cffi
#: module was generated from, so it always lists exactly the header's codes.
CODES: dict[int, str] = {
    number: name
    for number, name in sorted(ffi.typeof("laminar_code").elements.items())
    if number != 0
}

#: ``laminar_code`` values this package reacts to by number.
OK = 0
MISUSE = 9002
STATE = 9003
COLUMN_TYPE = 3004
QUEUE_FULL = 3006
PUSH_TIMEOUT = 3009
SUBSCRIPTION_CLOSED = 4001


class LaminarError(Exception):
    """Base class of every error raised by the engine.

    Attributes:
        code: The stable code as text, e.g. ``"LDB-1001"``.
        number: The same code as a number, e.g. ``1001``.
        message: The full message; it starts with :attr:`code`.
        line: 1-based line in the SQL text, or None when not SQL.
        column: 1-based column in the SQL text, or None when not SQL.
        object: The source or stream concerned, or None when unknown.
        column_name: The column concerned, or None when unknown.
        ingested_batches: For :meth:`laminardb.Source.push_batch` of more
            batches than the queue holds, stopped midway: how many of its
            batches were ingested (the first ones); None otherwise.
        ingested_rows: The rows of those batches; None otherwise.

    Example:
        >>> import laminardb
        >>> with laminardb.open() as db:
        ...     try:
        ...         db.execute("SELEC 1")
        ...     except laminardb.LaminarError as e:
        ...         print(e.code, e.line, e.column)
        LDB-1001 1 1
    """

    def __init__(
        self,
        message: str,
        *,
        number: int,
        line: int | None = None,
        column: int | None = None,
        object_name: str | None = None,
        column_name: str | None = None,
    ) -> None:
        """Create an error; use :func:`error_for` rather than calling this.

        Args:
            message: The message; prefixed with the code if it lacks it.
            number: The LDB number (a ``laminar_code`` value).
            line: SQL line (1-based), if known.
            column: SQL column (1-based), if known.
            object_name: Source or stream name, if known.
            column_name: Column name, if known.
        """
        code = f"LDB-{number:04d}"
        if not message.startswith(code):
            message = f"{code}: {message}" if message else f"{code}: {_errstr(number)}"
        super().__init__(message)
        self.code = code
        self.number = number
        self.message = message
        self.line = line
        self.column = column
        self.object = object_name
        self.column_name = column_name
        self.ingested_batches: int | None = None
        self.ingested_rows: int | None = None

    def __str__(self) -> str:
        """Return the message, which starts with the code."""
        return self.message

    def __reduce__(self) -> tuple[object, ...]:
        """Pickle support: rebuild through :func:`error_for`."""
        return (
            error_for,
            (self.number, self.message),
            {
                "line": self.line,
                "column": self.column,
                "object": self.object,
                "column_name": self.column_name,
            },
        )


class SQLError(LaminarError, ValueError):
    """LDB-1xxx: the SQL text does not parse, names unknown objects, and so on."""


class SchemaError(LaminarError, TypeError):
    """LDB-2xxx: types or a declared schema do not fit."""


class IngestError(LaminarError, ValueError):
    """LDB-3xxx: a pushed batch was rejected; nothing of it was ingested."""


class QueueFull(IngestError):
    """LDB-3006: the source queue is full and cannot drain (no runtime drains it)."""


class SubscriptionError(LaminarError):
    """LDB-4xxx: the subscription ended (its stream was dropped or the db closed)."""


class StorageError(LaminarError, OSError):
    """LDB-5xxx: a file operation failed."""


class ConfigError(LaminarError, ValueError):
    """LDB-6xxx: an unknown configuration key or an invalid value."""


class InternalError(LaminarError):
    """LDB-9xxx: misuse (closed handle, bad argument), out of memory, or a bug."""


_AREA_CLASSES: dict[int, type[LaminarError]] = {
    1: SQLError,
    2: SchemaError,
    3: IngestError,
    4: SubscriptionError,
    5: StorageError,
    6: ConfigError,
    9: InternalError,
}


def _errstr(number: int) -> str:
    """Return the engine's static text for a code.

    Args:
        number: A ``laminar_code`` value.

    Returns:
        The text of ``laminar_errstr``.
    """
    text: bytes = ffi.string(lib.laminar_errstr(number))
    return text.decode("utf-8", "replace")


def error_class(number: int) -> type[LaminarError]:
    """Map an LDB number to its exception class.

    Args:
        number: A ``laminar_code`` value other than ``LAMINAR_OK``.

    Returns:
        The class: :class:`QueueFull` for 3006, else the class of the area
        (``number // 1000``); :class:`LaminarError` for an unknown area.
    """
    if number == QUEUE_FULL:
        return QueueFull
    return _AREA_CLASSES.get(number // 1000, LaminarError)


def error_for(
    number: int,
    message: str = "",
    *,
    line: int | None = None,
    column: int | None = None,
    object: str | None = None,  # noqa: A002 -- the attribute's documented name
    column_name: str | None = None,
) -> LaminarError:
    """Build the exception for a code (without raising it).

    Args:
        number: A ``laminar_code`` value other than ``LAMINAR_OK``.
        message: The message; the code and the engine's text are used if empty.
        line: SQL line, if known.
        column: SQL column, if known.
        object: Source or stream name, if known.
        column_name: Column name, if known.

    Returns:
        An instance of :func:`error_class` ``(number)``.
    """
    cls = error_class(number)
    return cls(
        message,
        number=number,
        line=line,
        column=column,
        object_name=object,
        column_name=column_name,
    )


def _text(chars: Any) -> str | None:  # noqa: ANN401 -- cdata
    """Decode a NUL-terminated ``char[]`` member; None when empty.

    Args:
        chars: A cffi ``char[N]`` cdata.

    Returns:
        The decoded text, or None for an empty string.
    """
    value = ffi.string(chars).decode("utf-8", "replace")
    return value or None


def raise_for(code: int, err: Any = None) -> None:  # noqa: ANN401 -- cdata
    """Raise the exception for a returned ``laminar_code``; no-op for OK.

    This is the one function that maps a ``laminar_error`` to its class.

    Args:
        code: The value a ``laminar_*`` call returned.
        err: The ``laminar_error*`` passed to that call, or None if it takes none.

    Raises:
        LaminarError: The subclass for ``code``, carrying the detail of ``err``.
    """
    if code == OK:
        return
    if err is None or err.code != code:
        raise error_for(code)
    line = int(err.line)
    column = int(err.column)
    raise error_for(
        code,
        ffi.string(err.message).decode("utf-8", "replace"),
        line=line or None,
        column=column or None,
        object=_text(err.object),
        column_name=_text(err.column_name),
    )


def misuse(what: str) -> LaminarError:
    """Build the LDB-9002 error for use of a closed handle or a bad argument.

    Args:
        what: What was misused, e.g. ``"source 'trades' is closed"``.

    Returns:
        An :class:`InternalError` with code ``LDB-9002``.
    """
    return error_for(MISUSE, f"LDB-9002: {what}")

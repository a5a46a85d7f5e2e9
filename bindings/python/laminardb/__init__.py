"""LaminarDB for Python: an embedded streaming SQL database.

Declare sources and continuous queries in SQL, push Arrow data (pyarrow,
pandas, polars, nanoarrow, dicts), and read result batches as
``pyarrow.RecordBatch`` objects, all in process::

    import laminardb
    db = laminardb.open()
    db.execute("CREATE SOURCE t (k VARCHAR, v BIGINT, ts BIGINT, "
               "WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)")
    sub = db.subscribe(...)

Errors raise :class:`LaminarError` subclasses carrying the engine's stable
``LDB-NNNN`` code (see :mod:`laminardb.errors`).
"""

from __future__ import annotations

from laminardb._laminar_cffi import ffi as _ffi
from laminardb._laminar_cffi import lib as _lib
from laminardb.connection import Connection, open
from laminardb.errors import (
    CODES,
    ConfigError,
    IngestError,
    InternalError,
    LaminarError,
    QueueFull,
    SchemaError,
    SQLError,
    StorageError,
    SubscriptionError,
)
from laminardb.source import Source
from laminardb.subscription import Subscription

__all__ = [
    "CODES",
    "ConfigError",
    "Connection",
    "IngestError",
    "InternalError",
    "LaminarError",
    "QueueFull",
    "SQLError",
    "SchemaError",
    "Source",
    "StorageError",
    "Subscription",
    "SubscriptionError",
    "__version__",
    "core_version",
    "open",
]


def core_version() -> str:
    """Return the version of the loaded ``liblaminar`` (``laminar_version()``).

    Returns:
        The version string, e.g. ``"0.1.0"``.
    """
    text: bytes = _ffi.string(_lib.laminar_version())
    return text.decode("ascii")


#: The package version; it is the core's, as the two are built together.
__version__: str = core_version()

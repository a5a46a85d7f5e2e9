"""Exactly-once sinks written in Python: the connector protocol and Parquet.

The engine drives every sink through one two-phase protocol, epoch by epoch
(an epoch is the rows a stream produced between two checkpoints):

``begin_epoch(epoch)``
    rows of ``epoch`` follow.
``write(batch)``
    a :class:`pyarrow.RecordBatch` of the stream's rows.
``pre_commit(epoch)``
    make the epoch durable as staged data (a checkpoint is being taken).
``commit(epoch)``
    publish it: its checkpoint is durable. May come again for an epoch already
    published (do nothing then).
``rollback(epoch)``
    drop it (the sink goes away with the epoch open).
``recover(checkpointed_epoch)``
    at a restart: publish staged epochs up to it, drop later ones (the engine
    replays their rows).

A connector is any object with those methods (:class:`SinkConnector` is the
protocol, for type checkers); attach it with
:meth:`laminardb.Connection.add_sink`, and on later opens pass it in
``laminardb.open(path, sinks={...})`` so the replay after a crash reaches it.
An exception in a method fails that step: the call that drove it raises
:class:`laminardb.StorageError` (LDB-5001) naming the sink, and
:func:`last_error` returns the exception.

:class:`ParquetSink` writes one Parquet file per epoch into a directory,
staged under a hidden name and renamed into place at commit.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
from pathlib import Path
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.parquet as pq

from laminardb._arrow import import_batch
from laminardb._laminar_cffi import ffi, lib

__all__ = ["ParquetSink", "SinkConnector", "callbacks_for", "last_error"]


class SinkConnector(Protocol):
    """The methods the engine calls on a connector (see the module docs)."""

    def begin_epoch(self, epoch: int) -> None:
        """Rows of ``epoch`` follow."""

    def write(self, batch: pa.RecordBatch) -> None:
        """A batch of the stream's rows, for the open epoch."""

    def pre_commit(self, epoch: int) -> None:
        """Make ``epoch`` durable as staged data."""

    def commit(self, epoch: int) -> None:
        """Publish ``epoch`` (idempotent)."""

    def rollback(self, epoch: int) -> None:
        """Drop ``epoch``'s staged rows."""

    def recover(self, checkpointed_epoch: int) -> None:
        """Publish staged epochs up to it, drop later ones."""


# -- the C side: laminar_sink_callbacks calling into Python ---------------------------

_errors = threading.local()


def _failed(exc_type: object, exc_value: BaseException | None, tb: object) -> int:
    """A connector method raised: remember why, and fail the step (-1)."""
    _errors.last = exc_value
    return -1


def last_error() -> BaseException | None:
    """Return the exception a connector method last raised in this thread.

    The ``StorageError`` of the step it failed says only that it failed.
    """
    return getattr(_errors, "last", None)



@ffi.def_extern(onerror=_failed)
def lm_py_sink_begin(user: Any, epoch: int) -> int:  # noqa: ANN401 -- cdata
    ffi.from_handle(user).begin_epoch(int(epoch))
    return 0


@ffi.def_extern(onerror=_failed)
def lm_py_sink_write(user: Any, array: Any, schema: Any) -> int:  # noqa: ANN401 -- cdata
    batch = import_batch(array, schema)  # takes both structs, as laminar.h hands them over
    ffi.from_handle(user).write(batch)
    return 0


@ffi.def_extern(onerror=_failed)
def lm_py_sink_pre_commit(user: Any, epoch: int) -> int:  # noqa: ANN401 -- cdata
    ffi.from_handle(user).pre_commit(int(epoch))
    return 0


@ffi.def_extern(onerror=_failed)
def lm_py_sink_commit(user: Any, epoch: int) -> int:  # noqa: ANN401 -- cdata
    ffi.from_handle(user).commit(int(epoch))
    return 0


@ffi.def_extern(onerror=_failed)
def lm_py_sink_rollback(user: Any, epoch: int) -> int:  # noqa: ANN401 -- cdata
    ffi.from_handle(user).rollback(int(epoch))
    return 0


@ffi.def_extern(onerror=_failed)
def lm_py_sink_recover(user: Any, epoch: int) -> int:  # noqa: ANN401 -- cdata
    ffi.from_handle(user).recover(int(epoch))
    return 0


def callbacks_for(connector: SinkConnector) -> tuple[Any, Any]:
    """A ``laminar_sink_callbacks`` struct calling ``connector``.

    Returns:
        ``(callbacks, handle)``: keep ``handle`` alive as long as the engine
        may call the sink (the Connection does).
    """
    handle = ffi.new_handle(connector)
    cb = ffi.new("laminar_sink_callbacks*")
    cb.user = handle
    cb.begin_epoch = lib.lm_py_sink_begin
    cb.write = lib.lm_py_sink_write
    cb.pre_commit = lib.lm_py_sink_pre_commit
    cb.commit = lib.lm_py_sink_commit
    cb.rollback = lib.lm_py_sink_rollback
    cb.recover = lib.lm_py_sink_recover
    cb.release = ffi.NULL  # Python keeps the handle alive itself
    return cb, handle


# -- Parquet -----------------------------------------------------------------------------

_PART = re.compile(r"^part-(\d{20})\.parquet$")
_STAGED = re.compile(r"^\.part-(\d{20})\.parquet\.pending$")


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class ParquetSink:
    """Exactly-once Parquet files: ``part-<epoch>.parquet`` per epoch in ``path``.

    An epoch is written to ``.part-<epoch>.parquet.pending``, flushed at
    ``pre_commit`` and renamed into place at ``commit``; readers of the
    directory (``pyarrow.parquet.read_table(path)`` reads the part files) never
    see a partial epoch. An epoch without rows leaves no file.

    Example:
        >>> import laminardb, tempfile
        >>> from laminardb.sinks import ParquetSink
        >>> d = tempfile.mkdtemp()
        >>> sink = ParquetSink(d + "/bars")
        >>> sink.recover(0)        # what a restart would do: nothing staged yet
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        """Write part files into ``path`` (created if missing)."""
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self._epoch: int | None = None
        self._writer: pq.ParquetWriter | None = None

    def _staged(self, epoch: int) -> Path:
        return self.path / f".part-{epoch:020d}.parquet.pending"

    def _part(self, epoch: int) -> Path:
        return self.path / f"part-{epoch:020d}.parquet"

    def begin_epoch(self, epoch: int) -> None:
        """Start collecting ``epoch``'s rows."""
        self._epoch = epoch
        self._writer = None

    def write(self, batch: pa.RecordBatch) -> None:
        """Append a batch to the open epoch's staging file."""
        if self._epoch is None:
            raise RuntimeError("ParquetSink.write outside an epoch")
        if self._writer is None:
            self._writer = pq.ParquetWriter(self._staged(self._epoch), batch.schema)
        self._writer.write_batch(batch)

    def pre_commit(self, epoch: int) -> None:
        """Close and flush the staging file of ``epoch``."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None
            fd = os.open(self._staged(epoch), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        self._epoch = None

    def commit(self, epoch: int) -> None:
        """Publish ``epoch`` (a no-op when nothing is staged for it)."""
        staged = self._staged(epoch)
        if staged.exists():
            staged.replace(self._part(epoch))
            _fsync_dir(self.path)

    def rollback(self, epoch: int) -> None:
        """Drop ``epoch``'s staged rows."""
        if self._writer is not None and self._epoch == epoch:
            self._writer.close()
            self._writer = None
        with contextlib.suppress(FileNotFoundError):
            self._staged(epoch).unlink()
        self._epoch = None

    def recover(self, checkpointed_epoch: int) -> None:
        """Publish staged epochs up to ``checkpointed_epoch``, drop later ones."""
        for entry in self.path.iterdir():
            m = _STAGED.match(entry.name)
            if m is None:
                continue
            epoch = int(m.group(1))
            if epoch <= checkpointed_epoch:
                self.commit(epoch)
            else:
                entry.unlink()

    def parts(self) -> list[Path]:
        """The published part files, in epoch order."""
        return sorted(p for p in self.path.iterdir() if _PART.match(p.name))

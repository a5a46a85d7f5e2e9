"""``Subscription``: one consumer's queue of a stream's result batches.

Batches come out of ``laminar_subscription_next`` as Arrow C structs and are
moved into ``pyarrow.RecordBatch`` objects (zero-copy). Waiting is done in
slices of at most 100 ms, so Ctrl-C and ``close`` from another thread are seen
promptly; iteration ends when the core reports LDB-4001 (the stream was dropped
or the database closed).
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections.abc import Callable
from typing import Any, Union

import pyarrow as pa

from laminardb._arrow import import_batch, import_reader
from laminardb._handle import NamedHandle
from laminardb._laminar_cffi import ffi, lib
from laminardb.errors import SUBSCRIPTION_CLOSED, misuse, raise_for

__all__ = ["Subscription"]

#: Longest single wait inside the core, in milliseconds.
WAIT_SLICE_MS = 100


class _Ended:
    """Marker: the core reported the subscription's end (LDB-4001)."""


class _Closed:
    """Marker: the handle was closed (by another thread) while waiting."""


_ENDED = _Ended()
_CLOSED = _Closed()
_Step = Union[pa.RecordBatch, None, _Ended, _Closed]


class Subscription(NamedHandle):
    """The result batches of one stream; get one with :meth:`Connection.subscribe`.

    Iterate it for ``pyarrow.RecordBatch`` objects (blocking), or ``poll`` with a
    timeout. It also exports the batches queued now through the Arrow PyCapsule
    stream protocol (``pyarrow.RecordBatchReader.from_stream(sub)``,
    ``pyarrow.table(sub)``, ``nanoarrow.c_array_stream(sub)``...).

    Example:
        >>> import laminardb
        >>> db = laminardb.open()
        >>> _ = db.execute(
        ...     "CREATE SOURCE t (k VARCHAR, v BIGINT, ts BIGINT);"
        ...     "CREATE STREAM s AS SELECT k, v FROM t")
        >>> sub = db.subscribe("s")
        >>> db.insert("t", [{"k": "a", "v": 1, "ts": 0}])
        >>> db.run_until_idle()
        >>> sub.poll(0).to_pylist()
        [{'k': 'a', 'v': 1}]
        >>> db.close()
    """

    _kind = "subscription"

    _callback_thread: threading.Thread | None = None
    _callback_error: BaseException | None = None
    _async_pending: asyncio.Future[_Step] | None = None

    def _release(self, pointer: Any) -> None:  # noqa: ANN401 -- cdata
        lib.laminar_subscription_close(pointer)

    def close(self) -> None:
        """Close the subscription; closing twice is a no-op.

        A callback subscription's thread sees the close within one wait slice
        and ends; this waits for it (unless called from the callback itself).
        """
        self._close(join=True)

    def _close(self, *, join: bool) -> None:
        """Close; with ``join``, also wait for a callback thread to end.

        Args:
            join: Wait for the callback thread. The connection closes its
                subscriptions with ``join=False`` (holding its own lock, which
                a callback may be waiting for); their callbacks then see
                LDB-9002 on their next call.
        """
        super().close()
        thread = self._callback_thread
        if join and thread is not None and thread is not threading.current_thread():
            thread.join()

    def _step(self, timeout_ms: int, *, first: bool) -> _Step:
        """One ``laminar_subscription_next`` call.

        Args:
            timeout_ms: How long the core may wait (0: not at all).
            first: True on the first call of a ``poll``/``next``: a closed
                handle then raises instead of returning :data:`_CLOSED`.

        Returns:
            A batch, None (nothing before the timeout), :data:`_ENDED` or
            :data:`_CLOSED`.

        Raises:
            LaminarError: LDB-9002 if closed on the first call; another code if
                the core fails.
        """
        array = ffi.new("struct ArrowArray*")
        schema = ffi.new("struct ArrowSchema*")
        err = ffi.new("laminar_error*")
        with self._lock:
            if self._pointer is None and not first:
                return _CLOSED
            pointer = self._require_open()
            code = lib.laminar_subscription_next(pointer, timeout_ms, array, schema, err)
        if code == SUBSCRIPTION_CLOSED:
            return _ENDED
        raise_for(code, err)
        if array.release == ffi.NULL:
            if schema.release != ffi.NULL:
                schema.release(schema)
            return None
        return import_batch(array, schema)

    def _wait(self, timeout: float | None) -> _Step:
        """Wait up to ``timeout`` seconds (None: forever) in short slices.

        Args:
            timeout: Seconds, or None.

        Returns:
            As :meth:`_step`.

        Raises:
            ValueError: If ``timeout`` is negative or NaN.
        """
        if timeout is not None and not timeout >= 0:
            raise ValueError(f"timeout must be None or >= 0 seconds, got {timeout!r}")
        deadline = None if timeout is None else time.monotonic() + timeout
        first = True
        while True:
            if deadline is None:
                slice_ms = WAIT_SLICE_MS
            else:
                remaining = deadline - time.monotonic()
                slice_ms = min(WAIT_SLICE_MS, max(0, math.ceil(remaining * 1000)))
            step = self._step(slice_ms, first=first)
            first = False
            if step is not None:
                return step
            if deadline is not None and time.monotonic() >= deadline:
                return None

    def poll(self, timeout: float | None = None) -> pa.RecordBatch | None:
        """Take the next result batch, waiting up to ``timeout`` seconds.

        Args:
            timeout: Seconds to wait; None waits until a batch arrives, 0 does
                not wait.

        Returns:
            The next batch, or None if none came in time (or the subscription
            was closed from another thread meanwhile).

        Raises:
            ValueError: If ``timeout`` is negative.
            SubscriptionError: LDB-4001 once the stream was dropped (or the
                database closed) and no batch remains.
            LaminarError: LDB-9002 if the subscription is closed.
        """
        step = self._wait(timeout)
        if step is _ENDED:
            raise_for(SUBSCRIPTION_CLOSED)
        if isinstance(step, (_Ended, _Closed)):
            return None
        return step

    def recv(self) -> pa.RecordBatch:
        """Wait for the next batch, however long it takes (Ctrl-C still works).

        Returns:
            The next batch.

        Raises:
            SubscriptionError: LDB-4001 once the stream was dropped (or the
                database closed) and no batch remains.
            LaminarError: LDB-9002 if the subscription is (or gets) closed.
        """
        step = self._wait(None)
        if step is _ENDED:
            raise_for(SUBSCRIPTION_CLOSED)
        if not isinstance(step, pa.RecordBatch):
            raise misuse(f"subscription {self._label} was closed while waiting")
        return step

    def recv_timeout(self, timeout: float) -> pa.RecordBatch | None:
        """Wait up to ``timeout`` seconds for the next batch.

        Args:
            timeout: Seconds (0: do not wait).

        Returns:
            The next batch, or None if none came in time.

        Raises:
            ValueError: If ``timeout`` is negative or NaN.
            SubscriptionError: LDB-4001 once the stream ended and no batch remains.
        """
        if timeout is None:
            raise ValueError("recv_timeout needs a timeout in seconds; use recv() to wait forever")
        return self.poll(timeout)

    # -- callback and asyncio forms ---------------------------------------------

    def _start_callback(self, callback: Callable[[pa.RecordBatch], object]) -> None:
        """Run ``callback(batch)`` for every batch on a thread of its own.

        Args:
            callback: Called with each ``pyarrow.RecordBatch``.
        """

        def run() -> None:
            try:
                for batch in self:
                    callback(batch)
            except BaseException as exc:  # noqa: BLE001 -- kept for join()
                self._callback_error = exc

        thread = threading.Thread(target=run, name=f"laminardb-callback-{self._name}", daemon=True)
        self._callback_thread = thread
        thread.start()

    def join(self, timeout: float | None = None) -> None:
        """Wait until a callback subscription's thread ends.

        It ends when the subscription is closed, the stream is dropped or the
        database closed, or the callback raised.

        Args:
            timeout: Seconds to wait at most; None waits until it ends.

        Raises:
            BaseException: The exception the callback raised, if it did.
        """
        thread = self._callback_thread
        if thread is not None:
            thread.join(timeout)
        if self._callback_error is not None:
            raise self._callback_error

    @property
    def callback_error(self) -> BaseException | None:
        """The exception that ended a callback subscription, or None."""
        return self._callback_error

    def _async_step(self) -> _Step:
        """One wait slice for the asyncio form, on an executor thread."""
        return self._step(WAIT_SLICE_MS, first=False)

    def __aiter__(self) -> Subscription:
        """Return the subscription itself (an async iterator of batches)."""
        return self

    async def __anext__(self) -> pa.RecordBatch:
        """Wait for the next batch without blocking the event loop.

        Each wait slice (at most 100 ms) runs on the loop's default executor;
        the loop stays free meanwhile. If the awaiting task is cancelled, the
        slice in flight finishes in the background and a batch it took is
        handed to the next ``__anext__``, so nothing is lost.

        Returns:
            The next batch.

        Raises:
            StopAsyncIteration: When the stream was dropped or the database
                closed (LDB-4001), or the subscription was closed.
        """
        loop = asyncio.get_running_loop()
        while True:
            pending = self._async_pending
            if pending is None or pending.get_loop() is not loop:
                pending = loop.run_in_executor(None, self._async_step)
                self._async_pending = pending
            step = await asyncio.shield(pending)
            self._async_pending = None
            if isinstance(step, (_Ended, _Closed)):
                raise StopAsyncIteration
            if step is not None:
                return step

    def __iter__(self) -> Subscription:
        """Return the subscription itself (an iterator of batches)."""
        return self

    def __next__(self) -> pa.RecordBatch:
        """Wait for the next batch.

        Returns:
            The next batch.

        Raises:
            StopIteration: When the stream was dropped or the database closed
                (LDB-4001), or the subscription was closed from another thread.
            LaminarError: LDB-9002 if the subscription was already closed.
        """
        step = self._wait(None)
        if isinstance(step, (_Ended, _Closed)) or step is None:
            raise StopIteration
        return step

    def _drain(self) -> tuple[pa.Schema, list[pa.RecordBatch]]:
        """Read the batches queued now through ``laminar_subscription_stream``.

        The C stream borrows the subscription, so it is read to the end and
        released before the lock is dropped: what leaves this method owns its
        buffers and outlives the subscription.

        Returns:
            The stream's schema and its batches.

        Raises:
            LaminarError: LDB-9002 if closed.
        """
        stream = ffi.new("struct ArrowArrayStream*")
        err = ffi.new("laminar_error*")
        with self._lock:
            pointer = self._require_open()
            code = lib.laminar_subscription_stream(pointer, stream, err)
            raise_for(code, err)
            reader = import_reader(stream)
            try:
                schema = reader.schema
                batches = list(reader)
            finally:
                reader.close()
                del reader
        return schema, batches

    def to_arrow_table(self) -> pa.Table:
        """Take every batch queued now, without waiting, as one table.

        Returns:
            A ``pyarrow.Table`` (empty, with the stream's schema, if nothing is
            queued).

        Raises:
            LaminarError: LDB-9002 if the subscription is closed.
        """
        schema, batches = self._drain()
        return pa.Table.from_batches(batches, schema=schema)

    def to_arrow_reader(self) -> pa.RecordBatchReader:
        """Take every batch queued now, without waiting, as a reader.

        Returns:
            A ``pyarrow.RecordBatchReader`` over them.

        Raises:
            LaminarError: LDB-9002 if the subscription is closed.
        """
        schema, batches = self._drain()
        return pa.RecordBatchReader.from_batches(schema, batches)

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        """Export the batches queued now as an ``ArrowArrayStream`` PyCapsule.

        The stream yields what is queued at the time of this call and then
        ends; it does not wait. It is independent of the subscription's
        lifetime. A capsule can be consumed once.

        Args:
            requested_schema: A PyCapsule named ``"arrow_schema"`` to cast to,
                or None. Honoured when pyarrow can cast to it; an incompatible
                one raises.

        Returns:
            A PyCapsule named ``"arrow_array_stream"``.

        Raises:
            LaminarError: LDB-9002 if the subscription is closed.
        """
        return self.to_arrow_reader().__arrow_c_stream__(requested_schema)

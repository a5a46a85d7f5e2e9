"""``Source``: a producer handle pushing Arrow data into one LaminarDB source.

Input kinds, tried in order (STYLE §2.2): ``__arrow_c_stream__`` (each batch of
the stream is pushed; pyarrow Tables, pandas DataFrames, polars...),
``__arrow_c_array__`` (pyarrow RecordBatch, nanoarrow arrays...), a dict of
columns, a list of dicts, then a pandas DataFrame without the stream protocol.

Each batch is checked by the core before anything of it is ingested; a rejected
batch raises and leaves the source as it was. A batch from a producer other than
pyarrow is validated before the push: by the core first (the one gate: a
malformed or lying array gets its LDB code before anything else reads it), then
by pyarrow too (``validate(full=True)``, see ``Source._check_foreign``). Arrays
are moved into the core
zero-copy when, and only when, the push succeeds.
"""

from __future__ import annotations

import errno
import operator
import os
from collections.abc import Iterable, Mapping
from typing import Any

import pyarrow as pa

from laminardb._arrow import (
    batch_from_columns,
    batch_from_rows,
    capsule_pointer,
    check_batch,
    check_foreign,
    from_pyarrow,
)
from laminardb._handle import NamedHandle
from laminardb._laminar_cffi import ffi, lib
from laminardb.errors import PUSH_TIMEOUT, LaminarError, error_for, misuse, raise_for

__all__ = ["Source"]

_ARROW_INVALID = 3001
_ARROW_RELEASED = 3002

#: Longest single wait for room in a full queue inside the core, in
#: milliseconds: a blocked ``push``/``watermark`` returns to Python this often,
#: so Ctrl-C (KeyboardInterrupt) and ``close`` from another thread get through.
WAIT_SLICE_MS = 100


def _note(exc: BaseException, text: str) -> None:
    """Attach ``text`` to ``exc`` as a note (PEP 678; shown by tracebacks).

    Args:
        exc: The exception being raised.
        text: The note.
    """
    notes = getattr(exc, "__notes__", None)
    if not isinstance(notes, list):
        notes = []
        exc.__notes__ = notes  # what BaseException.add_note does (Python >= 3.11)
    notes.append(text)


class Source(NamedHandle):
    """A producer handle on a source; get one with :meth:`Connection.source`.

    A handle is used by one thread at a time. For more producer threads,
    :meth:`clone` the handle: each thread pushes through its own clone, at the
    same time (the GIL is released while the core validates, queues or waits
    for room). The first clone switches the source from single- to
    multi-producer mode; each handle's rows arrive in the order it pushed them.

    Example:
        >>> import laminardb
        >>> db = laminardb.open()
        >>> _ = db.execute("CREATE SOURCE t (k VARCHAR, v BIGINT, ts BIGINT)")
        >>> with db.source("t") as src:
        ...     src.push({"k": ["a"], "v": [1], "ts": [0]})
        ...     src.watermark(1000)
        >>> db.close()
    """

    _kind = "source"

    #: The connection's execute() count when this handle was last known to be
    #: on the current source of its name (Connection.source).
    _ddl_count = 0

    def _release(self, pointer: Any) -> None:  # noqa: ANN401 -- cdata
        lib.laminar_source_close(pointer)

    # -- pushing ---------------------------------------------------------------

    def _push_struct(self, array: Any, schema: Any, *, wait: bool) -> None:  # noqa: ANN401 -- cdata
        """Push one ``struct ArrowArray`` described by ``schema``.

        Args:
            array: ``struct ArrowArray*``; moved into the core on success only.
            schema: ``struct ArrowSchema*``; borrowed.
            wait: Block for room while the reactor runs (``push``), or refuse
                a full queue at once (``try_push``).

        Raises:
            LaminarError: LDB-9002 if closed; the core's 3xxx code if rejected.
        """
        err = ffi.new("laminar_error*")
        try:
            while True:
                with self._lock:
                    pointer = self._require_open()
                    if wait:  # in slices: Ctrl-C is seen between two
                        code = lib.laminar_source_push_timeout(
                            pointer, array, schema, WAIT_SLICE_MS, err
                        )
                    else:
                        code = lib.laminar_source_try_push(pointer, array, schema, err)
                if code != PUSH_TIMEOUT:
                    break
        except KeyboardInterrupt as exc:
            # Exact either way: the core moves the array when, and only when,
            # it takes the batch (a slice that timed out took nothing).
            if array.release == ffi.NULL:
                _note(
                    exc,
                    f"laminardb: source {self._label}: the batch was ingested before the interrupt",
                )
            else:
                _note(
                    exc,
                    f"laminardb: source {self._label}: the batch was not "
                    "ingested (it is unchanged: push it again)",
                )
            raise
        raise_for(code, err)

    def _check_foreign(self, array: Any, schema: Any) -> None:  # noqa: ANN401 -- cdata
        """Check a struct array from a producer other than pyarrow, borrowing it.

        The core validates it first (``laminar_source_validate``: every check a
        push makes, nothing ingested), so a malformed or lying array is refused
        with its LDB code before pyarrow reads any of it; then pyarrow's full
        validation (:func:`laminardb._arrow.check_foreign`) adds its own checks.

        Args:
            array: ``struct ArrowArray*``; borrowed, not moved.
            schema: ``struct ArrowSchema*``; borrowed.

        Raises:
            LaminarError: The code a push of it would raise (3001-3005, 3007);
                LDB-9002 if the handle is closed.
        """
        err = ffi.new("laminar_error*")
        with self._lock:
            code = lib.laminar_source_validate(self._require_open(), array, schema, err)
        raise_for(code, err)
        check_foreign(array, schema, self._name)

    def _push_array_capsules(
        self, schema_capsule: object, array_capsule: object, *, wait: bool, check: bool
    ) -> None:
        """Push the pair of capsules an ``__arrow_c_array__`` call returned.

        Args:
            schema_capsule: PyCapsule named ``"arrow_schema"``.
            array_capsule: PyCapsule named ``"arrow_array"``.
            wait: As :meth:`_push_struct`.
            check: Validate first, in the core then with pyarrow (a producer
                other than pyarrow: :meth:`_check_foreign`).
        """
        schema = ffi.cast("struct ArrowSchema*", capsule_pointer(schema_capsule, "arrow_schema"))
        array = ffi.cast("struct ArrowArray*", capsule_pointer(array_capsule, "arrow_array"))
        if check:
            self._check_foreign(array, schema)
        # On success the core moved the array (release is now NULL) and the
        # capsule's destructor does nothing; on failure the capsule still owns it.
        self._push_struct(array, schema, wait=wait)

    def _push_stream_capsule(self, stream_capsule: object, *, wait: bool, check: bool) -> None:
        """Push every batch of an ``ArrowArrayStream`` capsule, then release it.

        Args:
            stream_capsule: PyCapsule named ``"arrow_array_stream"``.
            wait: As :meth:`_push_struct`.
            check: Validate each batch first, in the core then with pyarrow
                (a producer other than pyarrow: :meth:`_check_foreign`).

        Raises:
            IngestError: LDB-3002 if the stream was already consumed; LDB-3001 if
                the producer's stream fails; or the core's rejection of a batch
                (the batches before it stay pushed).
        """
        stream = ffi.cast(
            "struct ArrowArrayStream*", capsule_pointer(stream_capsule, "arrow_array_stream")
        )
        if stream.release == ffi.NULL:
            raise error_for(_ARROW_RELEASED, "LDB-3002: the Arrow stream was already consumed")
        schema = ffi.new("struct ArrowSchema*")
        pushed = 0
        try:
            _stream_check(stream, stream.get_schema(stream, schema))
            while True:
                array = ffi.new("struct ArrowArray*")
                _stream_check(stream, stream.get_next(stream, array))
                if array.release == ffi.NULL:
                    break
                try:
                    if check:
                        self._check_foreign(array, schema)
                    self._push_struct(array, schema, wait=wait)
                finally:
                    if array.release != ffi.NULL:  # rejected or interrupted: still ours
                        array.release(array)
                    else:
                        pushed += 1
        except KeyboardInterrupt as exc:
            _note(
                exc,
                f"laminardb: source {self._label}: {pushed} batch(es) of this "
                "input were ingested before the interrupt, the rest not",
            )
            raise
        finally:
            if schema.release != ffi.NULL:
                schema.release(schema)
            # Consumed: mark the stream released so the capsule's destructor
            # (and any second consumer) sees it as moved.
            if stream.release != ffi.NULL:
                stream.release(stream)

    def push(self, data: object) -> None:
        """Push rows into the source.

        Args:
            data: One of, tried in this order: an object with
                ``__arrow_c_stream__`` (``pyarrow.Table``, pandas DataFrame,
                polars DataFrame...; every batch is pushed in turn), an object
                with ``__arrow_c_array__`` (``pyarrow.RecordBatch``, a nanoarrow
                struct array...), a dict of columns ``{name: values}``, or a list
                of row dicts. Dicts are converted with the source's column types,
                so Python ints fill a DOUBLE column. Columns are matched by name.
                Arrow data from a producer other than pyarrow is validated by
                the core first, then by pyarrow (``validate(full=True)``),
                before it is pushed.

        Raises:
            TypeError: If ``data`` is of none of those kinds (the message names
                its type), or a capsule carries the wrong name.
            IngestError: The batch was rejected (LDB-3001 invalid Arrow data,
                3003 columns do not match, 3004 wrong column type, 3005 NULL in
                a NOT NULL column, 3006 queue full, 3007 source dropped); nothing
                of it was ingested and earlier pushes are kept.
            LaminarError: LDB-9002 if the source is closed.
            KeyboardInterrupt: Ctrl-C while the push waits for room in a full
                queue (block back-pressure with the runtime started: it waits
                in slices of :data:`WAIT_SLICE_MS`). The batch was not
                ingested and is unchanged: push it again. The exception's
                note says so; in the rare case that Ctrl-C lands in the
                instant after the core took the batch, the note says it was
                ingested. For a table or stream, the note also counts the
                batches of it that went in.
        """
        self._push(data, wait=True)

    def try_push(self, data: object) -> None:
        """Push like :meth:`push`, but never wait for room.

        When the source's queue is full, raise :class:`laminardb.QueueFull`
        (LDB-3006) at once — even while the reactor runs — and ingest (and
        log) nothing of that batch. For a multi-batch input (a table or a
        stream), the batches before the refused one stay pushed.

        Raises:
            QueueFull: LDB-3006, the queue is full.
            IngestError, TypeError, LaminarError: as :meth:`push`.
        """
        self._push(data, wait=False)

    def clone(self) -> Source:
        """Return another producer handle on the same source, for another thread.

        The first clone switches the source's queue to multi-producer mode for
        good; what is queued stays queued, in order. Each clone is closed on
        its own (or with the connection).

        Returns:
            A new :class:`Source`.

        Raises:
            IngestError: LDB-3007 if the source was dropped.
            LaminarError: LDB-9002 if this handle or its connection is closed.

        Example:
            >>> import threading, laminardb
            >>> db = laminardb.open()
            >>> _ = db.execute("CREATE SOURCE t (p BIGINT, v BIGINT);"
            ...                "CREATE STREAM s AS SELECT p, v FROM t")
            >>> sub = db.subscribe("s")
            >>> src = db.source("t")
            >>> handles = [src] + [src.clone() for _ in range(3)]
            >>> def produce(handle, p):
            ...     for v in range(5):
            ...         handle.push({"p": [p], "v": [v]})
            >>> threads = [threading.Thread(target=produce, args=(h, p))
            ...            for p, h in enumerate(handles)]
            >>> for t in threads: t.start()
            >>> for t in threads: t.join()
            >>> db.run_until_idle()
            >>> rows = sub.to_arrow_table().to_pylist()
            >>> len(rows), [r["v"] for r in rows if r["p"] == 2]
            (20, [0, 1, 2, 3, 4])
            >>> db.close()
        """
        connection = self._connection
        if connection is None:
            raise misuse(f"source {self._label} is closed")
        # Lock order connection -> handle, as Connection.close takes them.
        with connection._lock:
            connection._require_open()
            with self._lock:
                pointer = self._require_open()
                out = ffi.new("laminar_source**")
                err = ffi.new("laminar_error*")
                code = lib.laminar_source_clone(pointer, out, err)
            raise_for(code, err)
            clone = Source(connection, self._name, out[0], self._schema)
            connection._clones.add(clone)
        return clone

    def has_capacity(self, n: int = 1) -> bool:
        """Tell whether the source's queue has room for ``n`` more messages now.

        A snapshot: other producers may take the room, the runtime makes more.

        Args:
            n: Messages (a push or a watermark takes one; a table takes one
                per batch).

        Returns:
            True when at least ``n`` slots are free.

        Raises:
            ValueError: If ``n`` is negative.
            LaminarError: LDB-9002 if the source is closed.
        """
        if isinstance(n, bool) or operator.index(n) < 0:
            raise ValueError(f"n must be an int >= 0, got {n!r}")
        out = ffi.new("int32_t*")
        err = ffi.new("laminar_error*")
        with self._lock:
            code = lib.laminar_source_has_capacity(self._require_open(), n, out, err)
        raise_for(code, err)
        return bool(out[0])

    def push_batch(self, batches: Iterable[object]) -> None:
        """Push many batches of one schema in one call to the core.

        All batches are validated before any is queued; they are queued in
        order as one run (no other producer's rows land between them) with
        one wake-up of the runtime. Cheaper than one :meth:`push` per batch.

        Args:
            batches: Objects with ``__arrow_c_array__`` (``pyarrow.RecordBatch``
                ...), or a ``pyarrow.Table`` (its batches); all with the same
                schema.

        Raises:
            TypeError: If an item has no ``__arrow_c_array__`` or the schemas
                differ (nothing is pushed).
            IngestError: A batch was rejected (its index is in the message);
                nothing of the call was ingested. QueueFull (LDB-3006) for a
                ``reject`` source without room for all of them.
            LaminarError: LDB-9002 if the source is closed.
            KeyboardInterrupt: Ctrl-C while the call waits for room in a full
                queue (in slices of :data:`WAIT_SLICE_MS`, as :meth:`push`):
                nothing of the call was ingested when the batches fit the
                queue (``buffer_size``); a longer call goes in a queue's
                capacity at a time, and the exception's ``ingested_batches``
                and ``ingested_rows`` (and its note) say how much went in.

        A call of more batches than the queue holds cannot be all or nothing:
        when it fails midway (Ctrl-C, the runtime stopped, the source dropped)
        its first batches stay ingested, and the exception says exactly how
        many: ``e.ingested_batches`` and ``e.ingested_rows`` (the LDB error's
        message ends with them too); push ``batches[e.ingested_batches:]``
        again. Every other failure ingested nothing (both are 0 or None).
        """
        if isinstance(batches, pa.Table):
            batches = batches.to_batches()
        items = []
        for batch in batches:
            if not isinstance(batch, pa.RecordBatch):  # imported by pyarrow: check it
                batch = pa.record_batch(batch)
                check_batch(batch, self._name)
            items.append(batch)
        if not items:
            return
        schema0 = items[0].schema
        for index, item in enumerate(items):
            if not item.schema.equals(schema0):
                raise TypeError(
                    f"push_batch: batch {index} has schema {item.schema} but batch 0 has "
                    f"{schema0}; push batches of different schemas separately"
                )
        n = len(items)
        arrays = ffi.new("struct ArrowArray[]", n)
        schema_capsule = None
        keep = []
        # Move each exported array into one contiguous C array (ours now).
        for index, item in enumerate(items):
            schema_cap, array_cap = item.__arrow_c_array__()
            keep.append(array_cap)
            if schema_capsule is None:
                schema_capsule = schema_cap
            source = ffi.cast("struct ArrowArray*", capsule_pointer(array_cap, "arrow_array"))
            ffi.memmove(arrays + index, source, ffi.sizeof("struct ArrowArray"))
            source.release = ffi.NULL  # moved: the capsule's destructor does nothing
        schema = ffi.cast("struct ArrowSchema*", capsule_pointer(schema_capsule, "arrow_schema"))
        pushed = ffi.new("int64_t*")
        err = ffi.new("laminar_error*")
        done = 0
        try:
            while True:  # in slices, as push: Ctrl-C is seen between two
                with self._lock:
                    pointer = self._require_open()
                    code = lib.laminar_source_push_batch_timeout(
                        pointer, arrays + done, n - done, schema, WAIT_SLICE_MS, pushed, err
                    )
                done += int(pushed[0])
                if code != PUSH_TIMEOUT:
                    break
            raise_for(code, err)
        except LaminarError as exc:
            if done == 0:
                raise
            # A run longer than the queue went in a capacity at a time: say
            # exactly what of it is in (the core counts it, *out_pushed).
            raise self._partly_ingested(exc, items, done) from None
        except KeyboardInterrupt as exc:
            # Exact: a slice that timed out took nothing of a run that fits the
            # queue, and says how many of a longer one it took.
            rows = sum(item.num_rows for item in items[:done])
            _note(
                exc,
                f"laminardb: source {self._label}: {done} of the {n} batch(es) were "
                f"ingested before the interrupt ({rows} rows), the rest not",
            )
            exc.ingested_batches = done  # type: ignore[attr-defined]
            exc.ingested_rows = rows  # type: ignore[attr-defined]
            raise
        finally:
            for index in range(n):  # what the core did not take is still ours
                if arrays[index].release != ffi.NULL:
                    arrays[index].release(arrays + index)

    def _partly_ingested(
        self, exc: LaminarError, items: list[pa.RecordBatch], done: int
    ) -> LaminarError:
        """The error of a :meth:`push_batch` that ingested its first ``done`` batches.

        Args:
            exc: The engine's error that stopped the call.
            items: The call's batches, in order.
            done: How many of them the engine took before the error.

        Returns:
            An error of the same code whose message ends with the count and
            whose ``ingested_batches`` / ``ingested_rows`` hold it.
        """
        rows = sum(item.num_rows for item in items[:done])
        out = error_for(
            exc.number,
            f"{exc.message}; source {self._label}: {done} of the {len(items)} batch(es) "
            f"({rows} rows) of this push_batch were ingested before it, the rest not "
            f"(push batches[{done}:] again)",
            line=exc.line,
            column=exc.column,
            object=exc.object,
            column_name=exc.column_name,
        )
        out.ingested_batches = done
        out.ingested_rows = rows
        return out

    @property
    def free_slots(self) -> int:
        """Free slots in the source's queue now (a push takes one)."""
        out = ffi.new("int64_t*")
        err = ffi.new("laminar_error*")
        with self._lock:
            code = lib.laminar_source_free_slots(self._require_open(), out, err)
        raise_for(code, err)
        return int(out[0])

    def _push(self, data: object, *, wait: bool) -> None:
        """The body of :meth:`push` and :meth:`try_push`."""
        if isinstance(data, pa.RecordBatch):  # one batch: its array export costs less
            schema_capsule, array_capsule = data.__arrow_c_array__()
            self._push_array_capsules(schema_capsule, array_capsule, wait=wait, check=False)
        elif hasattr(data, "__arrow_c_stream__"):
            check = not from_pyarrow(data)
            self._push_stream_capsule(data.__arrow_c_stream__(), wait=wait, check=check)
        elif hasattr(data, "__arrow_c_array__"):
            schema_capsule, array_capsule = data.__arrow_c_array__()
            check = not from_pyarrow(data)
            self._push_array_capsules(schema_capsule, array_capsule, wait=wait, check=check)
        elif isinstance(data, Mapping):
            self._push(batch_from_columns(data, self._schema, self._name), wait=wait)
        elif isinstance(data, list) and all(isinstance(row, Mapping) for row in data):
            if data:
                self._push(batch_from_rows(data, self._schema, self._name), wait=wait)
        elif _is_pandas_frame(data):
            self._push(pa.Table.from_pandas(data, preserve_index=False), wait=wait)
        else:
            kind = type(data)
            raise TypeError(
                f"cannot push a {kind.__module__}.{kind.__qualname__} into source "
                f"{self._name!r}: expected an Arrow stream or array (PyCapsule "
                "interface), a dict of columns, a list of dicts or a pandas DataFrame"
            )

    def watermark(self, ts_ms: int) -> None:
        """Advance the source's watermark to ``ts_ms`` (epoch milliseconds).

        A value below the current watermark is ignored; ``2**63 - 1`` closes
        every open window.

        Args:
            ts_ms: The new watermark, epoch milliseconds.

        Raises:
            TypeError: If ``ts_ms`` is not an integer.
            QueueFull: LDB-3006, the queue is full and cannot drain.
            IngestError: LDB-3007, the source was dropped.
            LaminarError: LDB-9002 if the source is closed.
            KeyboardInterrupt: Ctrl-C while the watermark waits for room in a
                full queue (in slices, as :meth:`push`); it was not queued,
                unless Ctrl-C landed just after: send it again (a watermark
                not above the current one is ignored, so that is harmless).
        """
        if isinstance(ts_ms, bool):
            raise TypeError("watermark must be an int (epoch milliseconds), got bool")
        value = operator.index(ts_ms)
        err = ffi.new("laminar_error*")
        while True:  # in slices, as push: Ctrl-C is seen between two
            with self._lock:
                pointer = self._require_open()
                code = lib.laminar_source_watermark_timeout(pointer, value, WAIT_SLICE_MS, err)
            if code != PUSH_TIMEOUT:
                break
        raise_for(code, err)

    def set_idle(self, idle: bool) -> None:  # noqa: FBT001 -- the one argument
        """Declare the source idle (``True``) or active again (``False``).

        An idle source holds back the watermark of no stream reading it: a
        ``UNION ALL`` follows the least watermark of its active inputs (none
        moves it while all are idle), as Flink's idleness. The change is
        queued after the batches pushed before it, so it applies once they
        went through the streams. The next push or watermark makes the source
        active again; its rows behind the watermark the streams reached
        meanwhile are late. ``CREATE SOURCE ... WITH (idle_timeout = '5 s')``
        declares it idle after that long without data. On a durable database
        a checkpoint holds it and each change is recorded where it took
        effect, so a restart replays it there.

        Args:
            idle: ``True`` idle, ``False`` active.

        Raises:
            TypeError: If ``idle`` is not a bool.
            QueueFull: LDB-3006, the queue is full and cannot drain.
            IngestError: LDB-3007, the source was dropped.
            LaminarError: LDB-9002 if the source is closed.

        Example:
            >>> import laminardb
            >>> db = laminardb.open()
            >>> _ = db.execute("CREATE SOURCE q (v BIGINT, ts BIGINT, WATERMARK FOR ts)")
            >>> with db.source("q") as src:
            ...     src.set_idle(True)
            >>> db.close()
        """
        if not isinstance(idle, bool):
            raise TypeError(f"idle must be a bool, got {type(idle).__name__}")
        err = ffi.new("laminar_error*")
        with self._lock:
            code = lib.laminar_source_set_idle(self._require_open(), 1 if idle else 0, err)
        raise_for(code, err)

    @property
    def offset(self) -> int:
        """The offset the next push or watermark will get (1 for a new source).

        With a WAL (``wal_mode`` async or sync), messages below it were
        accepted: after a restart a producer resumes its input here -- one
        past the last message the recovered state holds, never below the
        checkpoint's position (damaged records it covers change nothing).
        Durable without a WAL (``wal_mode`` none) it counts messages the same
        way and after a restart is the checkpoint's position + 1 (input after
        the checkpoint is not kept). Without durability it is 0.

        Raises:
            LaminarError: LDB-9002 if the source is closed.
        """
        out = ffi.new("int64_t*")
        err = ffi.new("laminar_error*")
        with self._lock:
            code = lib.laminar_source_offset(self._require_open(), out, err)
        raise_for(code, err)
        return int(out[0])


def _stream_check(stream: Any, rc: int) -> None:  # noqa: ANN401 -- cdata
    """Raise if a producer's ``get_schema``/``get_next`` returned an error.

    Args:
        stream: The ``struct ArrowArrayStream*`` called.
        rc: The errno-style value it returned.

    Raises:
        IngestError: LDB-3001 with the producer's ``get_last_error`` text.
    """
    if rc == 0:
        return
    detail = ""
    if stream.get_last_error != ffi.NULL:
        text = stream.get_last_error(stream)
        if text != ffi.NULL:
            detail = ffi.string(text).decode("utf-8", "replace")
    reason = os.strerror(rc) if rc in errno.errorcode else f"error {rc}"
    raise error_for(_ARROW_INVALID, f"LDB-3001: the input Arrow stream failed ({reason}): {detail}")


def _is_pandas_frame(data: object) -> bool:
    """Tell a pandas DataFrame without importing pandas.

    Args:
        data: Any object.

    Returns:
        True for a ``pandas.DataFrame`` (or subclass).
    """
    return any(
        cls.__name__ == "DataFrame" and cls.__module__.split(".")[0] == "pandas"
        for cls in type(data).__mro__
    )

"""``laminardb.open`` and ``Connection``: an open LaminarDB database.

A connection owns the ``laminar_db`` handle, the ``Source`` handles it opened
(one per source name, reused by ``insert`` and ``source``) and its
``Subscription`` objects. Closing it closes those first on the Python side,
so using them afterwards raises LDB-9002 rather than touching freed memory.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Union

import pyarrow as pa

from laminardb._arrow import capsule_pointer, import_reader, import_schema
from laminardb._handle import Handle, c_text, sigint_held
from laminardb._laminar_cffi import ffi, lib
from laminardb.aggregates import Aggregate, AggregateOnError
from laminardb.errors import STATE, raise_for
from laminardb.functions import Function, FunctionKind, NullHandling, OnError, TypeSpec
from laminardb.sinks import SinkConnector, callbacks_for
from laminardb.source import Source
from laminardb.subscription import Subscription
from laminardb.table_functions import TableFunction, TableFunctionKind

__all__ = ["Connection", "open"]

PathLike = Union[str, "os.PathLike[str]"]

#: The path that names the in-memory database, as in ``sqlite3`` and DuckDB.
MEMORY = ":memory:"


def _option_text(key: str, value: object) -> bytes:
    """Render one option value as the text ``laminar_config_set`` takes.

    Args:
        key: The option's name (for the error message).
        value: The value: str, int, float, bool or a path.

    Returns:
        UTF-8 text; booleans become ``true``/``false``.
    """
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, os.PathLike):
        text = os.fspath(value)
    else:
        text = str(value)
    return c_text(text, f"value of option {key!r}")


class Connection(Handle):
    """An open database; create one with :func:`laminardb.open`.

    Catalog calls (``execute``, ``query``, ``schema``, ``source``,
    ``subscribe``...) may come from any thread; the handles it returns are each
    used by one thread at a time.

    Example:
        >>> import laminardb
        >>> with laminardb.open() as db:
        ...     _ = db.execute("CREATE SOURCE t (k VARCHAR, v BIGINT, ts BIGINT)")
        ...     db.schema("t").names
        ['k', 'v', 'ts']
    """

    _kind = "connection"

    _sink_handles: list[Any]  # keeps Python sinks' cffi handles alive

    def __init__(self, pointer: Any, path: str | None) -> None:  # noqa: ANN401 -- cdata
        """Wrap an open ``laminar_db``; use :func:`laminardb.open`.

        Args:
            pointer: The ``laminar_db*``.
            path: The data directory, or None in memory.
        """
        super().__init__(pointer, repr(path) if path is not None else "in-memory")
        self._path = path
        self._sources: dict[str, Source] = {}
        # Also closed with the connection: Source.clone() results, and cached
        # handles left behind by a DROP + CREATE of their source's name.
        self._clones: weakref.WeakSet[Source] = weakref.WeakSet()
        # Counts execute() calls: a cached Source checked at an older count
        # may be on a source dropped (and re-created) since.
        self._ddl_count = 0
        self._subscriptions: weakref.WeakSet[Subscription] = weakref.WeakSet()
        self._sink_handles = []

    @property
    def path(self) -> str | None:
        """The data directory, or None for an in-memory database."""
        return self._path

    # -- lifetime --------------------------------------------------------------

    def _release(self, pointer: Any) -> None:  # noqa: ANN401 -- cdata
        # Stop the runtime first: a push blocked on a full queue (holding its
        # Source's lock) then returns QueueFull, so closing it cannot hang.
        lib.laminar_stop(pointer, ffi.NULL)
        # Children next, each under its own lock, so none of their calls is
        # running when the database (which owns their memory) is freed.
        for source in [*self._sources.values(), *self._clones]:
            source.close()
        for subscription in list(self._subscriptions):
            subscription._close(join=False)  # a callback may wait for our lock
        self._sources.clear()
        lib.laminar_close(pointer)

    def close(self) -> None:
        """Close the database, its sources and its subscriptions.

        Stops the runtime if it runs. Closing twice is a no-op. Batches already
        taken from subscriptions stay valid.

        Close runs to the end once begun: Ctrl-C meanwhile is held back and
        raised (KeyboardInterrupt) when the database is closed and its
        threads have ended. Stopping a runtime whose subscriber nobody reads
        takes about a second (see :meth:`stop`).
        """
        with sigint_held():
            super().close()

    # -- SQL -------------------------------------------------------------------

    def execute(self, sql: str) -> Connection:
        """Run one or more ``;``-separated SQL statements (DDL).

        The whole text is parsed first: a syntax error anywhere applies nothing.
        The statements then run in order; the first failing one stops the call
        and those before it stay applied.

        Args:
            sql: The SQL text.

        Returns:
            The connection itself, so calls chain.

        Raises:
            SQLError: LDB-1xxx, with ``.line`` and ``.column`` of the error.
            SchemaError: LDB-2xxx.
            LaminarError: LDB-9002 if the connection is closed.
        """
        text = c_text(sql, "sql")
        err = ffi.new("laminar_error*")
        with self._lock:
            db = self._require_open()
            self._ddl_count += 1  # it may DROP (and CREATE) a cached source
            code = lib.laminar_execute(db, text, err)
        raise_for(code, err)
        return self

    def query(self, sql: str) -> pa.Table:
        """Run one statement that returns rows and return them.

        The statement is a ``SELECT`` over a materialized view (a consistent
        snapshot of its current rows, taken while the runtime runs or not),
        ``EXPLAIN``, ``SHOW`` or ``DESCRIBE``.

        Args:
            sql: The statement.

        Returns:
            Its rows as a ``pyarrow.Table``.

        Raises:
            SQLError: LDB-1xxx; LDB-1005 for a statement that returns no rows;
                LDB-1030 for a SELECT from a stream or source (only a
                materialized view keeps rows); LDB-1031 for an undefined
                ``${NAME}`` variable.
            LaminarError: LDB-9002 if the connection is closed.

        Example:
            >>> import laminardb
            >>> db = laminardb.open()
            >>> _ = db.execute("CREATE SOURCE t (k VARCHAR, v BIGINT); "
            ...                "CREATE MATERIALIZED VIEW big AS SELECT k, v FROM t WHERE v > 1")
            >>> db.insert("t", {"k": ["a", "b", "c"], "v": [1, 5, 3]})
            >>> db.run_until_idle()
            >>> db.query("SELECT k FROM big ORDER BY v DESC").column("k").to_pylist()
            ['b', 'c']
        """
        return self._rows(lib.laminar_query, c_text(sql, "sql"))

    def _rows(self, function: Any, text: bytes) -> pa.Table:  # noqa: ANN401 -- a cffi function
        """Call ``function(db, text, &stream, err)`` and read the stream whole.

        Args:
            function: ``laminar_query``, ``laminar_stream_partitioning`` or
                ``laminar_stream_two_phase``.
            text: The encoded SQL or name.

        Returns:
            The rows as a ``pyarrow.Table``.
        """
        stream = ffi.new("struct ArrowArrayStream*")
        err = ffi.new("laminar_error*")
        with self._lock:
            code = function(self._require_open(), text, stream, err)
        raise_for(code, err)
        reader = import_reader(stream)
        try:
            return reader.read_all()
        finally:
            reader.close()

    def schema(self, name: str) -> pa.Schema:
        """Report the schema of a source's, stream's, view's or sink's rows.

        A materialized view's rows are its changes as subscribers get them:
        its columns, then ``_weight`` (+1 inserted, -1 retracted).

        Args:
            name: The source, stream, materialized view or sink.

        Returns:
            A ``pyarrow.Schema``.

        Raises:
            SQLError: LDB-1002 if there is no object of that name.
            LaminarError: LDB-9002 if the connection is closed.
        """
        text = c_text(name, "name")
        with self._lock:
            return self._schema_locked(text)

    def _schema_locked(self, name: bytes) -> pa.Schema:
        """``laminar_schema``; call with ``self._lock`` held.

        Args:
            name: The encoded object name.

        Returns:
            The schema.
        """
        out = ffi.new("struct ArrowSchema*")
        err = ffi.new("laminar_error*")
        code = lib.laminar_schema(self._require_open(), name, out, err)
        raise_for(code, err)
        return import_schema(out)

    # -- handles ---------------------------------------------------------------

    def source(self, name: str) -> Source:
        """Return the producer handle of source ``name``, opening it if needed.

        The connection keeps one open handle per source and hands out the same
        object until it is closed; for more producer threads, give each a
        :meth:`Source.clone` of it. After ``DROP SOURCE`` and a new ``CREATE
        SOURCE`` of the same name, it hands out a new handle on the new
        source (the old one, if still held, raises LDB-3007).

        Args:
            name: The source.

        Returns:
            The :class:`Source`.

        Raises:
            SQLError: LDB-1002 if there is no source of that name.
            InternalError: LDB-9003 if a producer handle opened elsewhere (not
                through this connection) holds it.
            StorageError: LDB-5004 if the database was opened read-only.
            LaminarError: LDB-9002 if the connection is closed.
        """
        text = c_text(name, "source name")
        with self._lock:
            db = self._require_open()
            cached = self._sources.get(name)
            if cached is not None and not cached.closed and cached._ddl_count == self._ddl_count:
                return cached
            out = ffi.new("laminar_source**")
            err = ffi.new("laminar_error*")
            code = lib.laminar_source_open(db, text, out, err)
            if cached is not None and not cached.closed:
                if code == STATE:
                    # The source of that name has a producer handle open, and
                    # only this connection opens them: it is the cached one
                    # (or its clones), still on the current source.
                    cached._ddl_count = self._ddl_count
                    return cached
                # The cached handle's source was dropped. The handle stays open
                # for whoever holds it (its pushes raise LDB-3007) and is
                # closed with the connection.
                self._clones.add(cached)
                del self._sources[name]
            raise_for(code, err)
            try:
                schema = self._schema_locked(text)
            except BaseException:
                lib.laminar_source_close(out[0])
                raise
            source = Source(self, name, out[0], schema)
            source._ddl_count = self._ddl_count
            self._sources[name] = source
            return source

    def insert(self, name: str, data: object) -> None:
        """Push rows into source ``name`` (through its cached :class:`Source`).

        Args:
            name: The source.
            data: Anything :meth:`Source.push` accepts: an Arrow stream or array
                (pyarrow Table/RecordBatch, pandas, nanoarrow...), a dict of
                columns or a list of row dicts.

        Raises:
            TypeError: If ``data`` is of no accepted kind.
            IngestError: LDB-3xxx if the batch was rejected (nothing of it
                ingested).
            SQLError: LDB-1002 if there is no source of that name.
            LaminarError: LDB-9002 if the connection is closed.
        """
        self.source(name).push(data)

    # -- tables ----------------------------------------------------------------

    def _table_rows(self, name: str, data: object, *, keys: bool) -> pa.Table:
        """Turn ``data`` into a ``pyarrow.Table`` for a write to table ``name``.

        Args:
            name: The table.
            data: An Arrow stream or array, a dict of columns or a list of row
                dicts (built with the table's column types).
            keys: Only the primary-key columns (a delete) rather than all.

        Returns:
            The rows.
        """
        if isinstance(data, pa.Table):
            return data
        if isinstance(data, pa.RecordBatch):
            return pa.Table.from_batches([data])
        if hasattr(data, "__arrow_c_stream__") or hasattr(data, "__arrow_c_array__"):
            return pa.table(data)
        schema = self.schema(name)
        fields = [f for f in schema if f.name != "_weight"]
        if isinstance(data, Mapping):
            wanted = pa.schema([f for f in fields if f.name in data])
            return pa.Table.from_pydict(dict(data), schema=wanted)
        if isinstance(data, list):
            names = {k for row in data for k in row} if keys else None
            wanted = pa.schema([f for f in fields if names is None or f.name in names])
            return pa.Table.from_pylist(data, schema=wanted)
        raise TypeError(
            f"cannot write {type(data).__name__} to table {name!r}: pass an Arrow "
            "table/batch, a dict of columns or a list of row dicts"
        )

    def _table_write(self, name: str, data: object, *, upsert: bool) -> None:
        """Write every batch of ``data`` with laminar_table_upsert / _delete.

        Args:
            name: The table.
            data: As :meth:`upsert` (or :meth:`delete`'s keys).
            upsert: Upsert the rows, or delete the keys.
        """
        table = self._table_rows(name, data, keys=not upsert)
        text = c_text(name, "name")
        call = lib.laminar_table_upsert if upsert else lib.laminar_table_delete
        for batch in table.to_batches():
            schema_cap, array_cap = batch.__arrow_c_array__()
            schema = ffi.cast("struct ArrowSchema*", capsule_pointer(schema_cap, "arrow_schema"))
            array = ffi.cast("struct ArrowArray*", capsule_pointer(array_cap, "arrow_array"))
            err = ffi.new("laminar_error*")
            with self._lock:
                code = call(self._require_open(), text, array, schema, err)
            raise_for(code, err)

    def upsert(self, name: str, data: object) -> None:
        """Insert or replace rows of table ``name`` by their primary key.

        A row whose key is in the table replaces that row; others are added.
        The same as ``INSERT INTO name VALUES ...``.

        Args:
            name: The table (``CREATE TABLE ... PRIMARY KEY (...)``).
            data: Rows with the table's columns: a pyarrow Table or
                RecordBatch, an object with ``__arrow_c_stream__`` /
                ``__arrow_c_array__``, a dict of columns or a list of row
                dicts.

        Raises:
            TypeError: If ``data`` is of no accepted kind.
            SQLError: LDB-1002 if there is no table of that name.
            IngestError: LDB-3xxx if a batch was rejected (nothing of it written).
            LaminarError: LDB-9xxx if a :class:`Source` on the table is open
                (write through it) or the connection is closed.

        Example:
            >>> import laminardb
            >>> db = laminardb.open()
            >>> _ = db.execute("CREATE TABLE fx (ccy VARCHAR, rate DOUBLE, PRIMARY KEY (ccy))")
            >>> db.upsert("fx", [{"ccy": "EUR", "rate": 1.08}, {"ccy": "GBP", "rate": 1.27}])
            >>> db.upsert("fx", {"ccy": ["EUR"], "rate": [1.09]})
            >>> db.run_until_idle()
            >>> db.query("SELECT ccy, rate FROM fx ORDER BY ccy").to_pylist()
            [{'ccy': 'EUR', 'rate': 1.09}, {'ccy': 'GBP', 'rate': 1.27}]
            >>> db.close()
        """
        self._table_write(name, data, upsert=True)

    def delete(self, name: str, keys: object) -> None:
        """Delete the rows of the given primary keys from table ``name``.

        A key with no row is ignored. The same as ``DELETE FROM name WHERE
        key = ...`` for each key.

        Args:
            name: The table.
            keys: The primary-key columns only, one row per key to delete (as
                :meth:`upsert` takes rows); for a table with an event time
                (``WATERMARK FOR`` a column) also that column, the time of
                each delete (temporal joins see the row end then).

        Raises:
            TypeError: If ``keys`` is of no accepted kind.
            SQLError: LDB-1002 if there is no table of that name.
            IngestError: LDB-3003 if the columns are not the primary key's.
            LaminarError: As :meth:`upsert`.

        Example:
            >>> import laminardb
            >>> db = laminardb.open()
            >>> _ = db.execute("CREATE TABLE fx (ccy VARCHAR, rate DOUBLE, PRIMARY KEY (ccy))")
            >>> db.upsert("fx", {"ccy": ["EUR", "GBP"], "rate": [1.08, 1.27]})
            >>> db.delete("fx", {"ccy": ["GBP"]})
            >>> db.run_until_idle()
            >>> db.query("SELECT ccy FROM fx").to_pylist()
            [{'ccy': 'EUR'}]
            >>> db.close()
        """
        self._table_write(name, keys, upsert=False)

    def subscribe(
        self,
        name: str,
        *,
        callback: Callable[[pa.RecordBatch], object] | None = None,
        buffer_size: int | None = None,
        slow_subscriber: str | None = None,
        wait_strategy: str | None = None,
        max_queue_bytes: int | str | None = None,
    ) -> Subscription:
        """Subscribe to the results stream ``name`` produces from now on.

        Every subscription has its own queue (broadcast: each gets every
        batch, at its own pace).

        Args:
            name: The stream; or a materialized view (its changes, with a
                ``_weight`` column); or a sink made by ``CREATE SINK name FROM
                x`` (the rows of ``x``).
            callback: Call ``callback(batch)`` for every batch, on a thread of
                the subscription's own, until it is closed or the stream ends;
                do not also iterate it. An exception from the callback ends
                the thread; :meth:`Subscription.join` re-raises it.
            buffer_size: Slots in this subscription's queue (a power of two);
                default: the connection's ``buffer_size``.
            slow_subscriber: ``"block"`` (default: when this queue is full the
                runtime waits for the reader, nothing is lost) or ``"drop"``
                (a batch that does not fit is dropped for this subscriber and
                counted in :meth:`metrics` as ``dropped_batches``).
            wait_strategy: How a blocking read waits: ``"park"`` (default),
                ``"spin"`` or ``"spin_yield(n)"``.
            max_queue_bytes: Bound on the bytes of the batches queued for this
                subscription (an int, or text such as ``"64MB"``; 0: none);
                default: the connection's ``max_queue_bytes`` (256 MiB). A
                batch past it is handled as one that finds the queue full.

        Returns:
            A new :class:`Subscription`.

        Raises:
            SQLError: LDB-1002 if there is nothing of that name.
            ConfigError: LDB-6002 for a bad option value.
            LaminarError: LDB-9002 if the connection is closed.
        """
        text = c_text(name, "stream name")
        pairs = {
            "buffer_size": buffer_size,
            "slow_subscriber": slow_subscriber,
            "wait_strategy": wait_strategy,
            "max_queue_bytes": max_queue_bytes,
        }
        options = ", ".join(
            f"{key} = '{value}'" for key, value in pairs.items() if value is not None
        )
        if "'" in "".join(str(v) for v in pairs.values() if v is not None):
            raise ValueError("subscription options must not contain a quote character")
        with self._lock:
            db = self._require_open()
            out = ffi.new("laminar_subscription**")
            err = ffi.new("laminar_error*")
            code = lib.laminar_subscribe_with(
                db, text, c_text(options, "subscription options"), out, err
            )
            raise_for(code, err)
            try:
                schema = self._schema_locked(text)
            except BaseException:
                lib.laminar_subscription_close(out[0])
                raise
            subscription = Subscription(self, name, out[0], schema)
            self._subscriptions.add(subscription)
        if callback is not None:
            subscription._start_callback(callback)
        return subscription

    # -- runtime ---------------------------------------------------------------

    def _simple(self, function: Any) -> None:  # noqa: ANN401 -- a cffi function
        """Call ``function(db, err)`` and raise on failure.

        Args:
            function: ``laminar_start``, ``laminar_stop`` or ``laminar_run_until_idle``.
        """
        err = ffi.new("laminar_error*")
        with self._lock:
            code = function(self._require_open(), err)
        raise_for(code, err)

    def start(self) -> None:
        """Start the runtime: a reactor thread processes pushes as they come.

        Raises:
            InternalError: LDB-9003 if already started.
            LaminarError: LDB-9002 if the connection is closed.
        """
        self._simple(lib.laminar_start)

    def stop(self) -> None:
        """Stop the runtime after it has processed what is queued.

        A no-op on a stopped database.

        Raises:
            LaminarError: LDB-9002 if the connection is closed.
        """
        self._simple(lib.laminar_stop)

    def run_until_idle(self) -> None:
        """Process all queued input inline, in this thread (deterministic).

        Returns early if a subscriber's queue fills; the rest stays queued.

        Raises:
            InternalError: LDB-9003 while the runtime is started.
            LaminarError: LDB-9002 if the connection is closed.
        """
        self._simple(lib.laminar_run_until_idle)

    def add_sink(self, name: str, stream: str, connector: SinkConnector) -> None:
        """Attach an exactly-once sink written in Python to ``stream``'s output.

        ``connector`` receives the two-phase epoch protocol of
        :mod:`laminardb.sinks` (e.g. :class:`laminardb.sinks.ParquetSink`).
        Durable databases only. It is not part of the stored catalog: on later
        opens pass it in ``laminardb.open(path, sinks={name: (stream,
        connector)})`` so the WAL replay reaches it. ``DROP SINK name``
        detaches it.

        Raises:
            SQLError: LDB-1002 (no such stream), LDB-1004 (name taken).
            ConfigError: LDB-6003 when the database is not durable.
            StorageError: LDB-5001 when the connector's ``recover`` or
                ``begin_epoch`` fails.
        """
        cb, handle = callbacks_for(connector)
        err = ffi.new("laminar_error*")
        with self._lock:
            code = lib.laminar_sink_register(
                self._require_open(), c_text(name, "sink name"), c_text(stream, "stream name"),
                cb, err,
            )
            if code == 0:
                self._sink_handles.append(handle)
        raise_for(code, err)

    def create_function(
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
    ) -> Connection:
        """Register ``fn`` as SQL scalar function ``name``.

        Usable wherever an expression goes (select list, WHERE, GROUP BY keys,
        aggregate arguments, HAVING, a query over a view) by statements run
        after this call. ``kind="arrow"`` calls ``fn(*arrays)`` once per chunk
        with ``pyarrow.Array`` arguments and takes an array of the same length
        back; ``kind="row"`` calls ``fn(*values)`` per row. Registering a name
        again replaces the function unless a stream uses it. Functions are not
        stored: reopen a durable database whose streams call one with
        ``laminardb.open(path, functions=[Function(...)])`` (without it the
        open raises LDB-5002 naming the function).

        Args:
            name: The SQL name (case-insensitive; not a built-in's).
            fn: The function.
            params: The parameters' types (pyarrow types, SQL names or
                ``bool``/``int``/``float``/``str``/``datetime``); None: from
                ``fn``'s type hints.
            returns: The result type, likewise.
            kind: ``"arrow"`` (vectorized, the fast path) or ``"row"``.
            null_handling: ``"default"``: a row with a NULL argument is NULL
                and not passed; ``"special"``: passed (as None / a null slot).
            on_error: ``"raise"``: an exception fails the batch (LDB-3010,
                its message and traceback in the error); ``"null"``: the row
                (kind row) or the chunk (kind arrow) is NULL.
            deterministic: Same arguments, same result and no side effect:
                a call over constant arguments is made once per chunk.

        Returns:
            The connection (calls chain).

        Raises:
            TypeError: A type with no engine type, or missing type hints.
            ValueError: An unknown kind, null_handling or on_error.
            SQLError: LDB-1004 (a built-in's name), LDB-1007 (replacing a
                function a stream uses).

        Example:
            >>> import laminardb, pyarrow.compute as pc
            >>> db = laminardb.open()
            >>> _ = db.create_function("twice", lambda x: pc.multiply(x, 2), ["BIGINT"], "BIGINT")
            >>> _ = db.execute("CREATE SOURCE t (v BIGINT); "
            ...                "CREATE MATERIALIZED VIEW m AS SELECT twice(v) AS w FROM t")
            >>> db.insert("t", {"v": [1, 2]}); db.run_until_idle()
            >>> db.query("SELECT w FROM m ORDER BY w").column("w").to_pylist()
            [2, 4]
        """
        function = Function(
            name,
            fn,
            params,
            returns,
            kind=kind,
            null_handling=null_handling,
            on_error=on_error,
            deterministic=deterministic,
        )
        err = ffi.new("laminar_error*")
        with self._lock:
            code = function.register(lib.laminar_function_register, self._require_open(), err)
        raise_for(code, err)
        return self

    def create_aggregate(
        self,
        name: str,
        cls: type | object,
        params: Sequence[TypeSpec],
        returns: TypeSpec,
        *,
        null_handling: NullHandling = "default",
        on_error: AggregateOnError = "raise",
    ) -> Connection:
        """Register a Python aggregate function ``name`` for SQL (``laminar_aggregate_register``).

        ``cls`` (a class, instantiated once, or an instance) has
        ``init() -> state``, ``update(state, *arrays) -> state`` (once per
        group of each chunk, with ``pyarrow.Array`` slices of that group's
        rows), ``merge(a, b) -> state`` and ``finalize(state) -> value``
        (None: NULL); optionally ``retract(state, *arrays) -> state``, which
        lets the aggregate read a changelog (without it such a statement is
        refused with LDB-1005), and ``serialize(state) -> bytes`` /
        ``deserialize(bytes) -> state`` (default: pickle) for checkpoints and
        the two-phase split (``two_phase``: the partial rows carry the
        serialized states, the final merges them with ``merge``).
        Usable as a built-in aggregate is: GROUP BY with or without tumble,
        hop and session windows, HAVING, EMIT CHANGES. It shares the
        function namespace (``remove_function``, SHOW FUNCTIONS); reopen a
        durable database with ``laminardb.open(path, functions=[Aggregate(...)])``.

        Args:
            name: The SQL name (case-insensitive; not a built-in's).
            cls: The aggregate's class or object.
            params: One or two parameter types (pyarrow types, SQL names or
                ``bool``/``int``/``float``/``str``/``datetime``).
            returns: The result type: BOOLEAN, INT, BIGINT, DOUBLE, VARCHAR,
                TIMESTAMP or DATE.
            null_handling: ``"default"``: rows with a NULL argument are left
                out; ``"special"``: passed.
            on_error: ``"raise"``: an exception fails the batch (LDB-3010
                naming the function, the stream and the traceback);
                ``"null"``: that group's result is NULL.

        Returns:
            The connection (calls chain).

        Raises:
            TypeError: A missing method or a type with no engine type.
            ValueError: A wrong count of parameters, an unknown option.
            SQLError: LDB-1004 (a built-in's name), LDB-1007 (replacing a
                function a stream uses).

        Example:
            >>> import laminardb
            >>> class SumSq:
            ...     def init(self): return 0.0
            ...     def update(self, s, x): return s + sum(v * v for v in x.to_pylist())
            ...     def retract(self, s, x): return s - sum(v * v for v in x.to_pylist())
            ...     def merge(self, a, b): return a + b
            ...     def finalize(self, s): return s
            >>> db = laminardb.open()
            >>> _ = db.create_aggregate("sumsq", SumSq, ["DOUBLE"], "DOUBLE")
            >>> _ = db.execute("CREATE SOURCE t (k VARCHAR, v DOUBLE); "
            ...     "CREATE MATERIALIZED VIEW m AS SELECT k, sumsq(v) AS s FROM t GROUP BY k")
            >>> db.insert("t", {"k": ["a", "a", "b"], "v": [1.0, 2.0, 3.0]}); db.run_until_idle()
            >>> db.query("SELECT k, s FROM m ORDER BY k").to_pylist()
            [{'k': 'a', 's': 5.0}, {'k': 'b', 's': 9.0}]
        """
        aggregate = Aggregate(
            name, cls, params, returns, null_handling=null_handling, on_error=on_error
        )
        err = ffi.new("laminar_error*")
        with self._lock:
            code = aggregate.register(lib.laminar_aggregate_register, self._require_open(), err)
        raise_for(code, err)
        return self

    def create_table_function(
        self,
        name: str,
        fn: Callable[..., object],
        params: Sequence[TypeSpec],
        returns: Mapping[str, TypeSpec] | Sequence[tuple[str, TypeSpec]],
        *,
        kind: TableFunctionKind = "arrow",
        null_handling: NullHandling = "default",
    ) -> Connection:
        """Register ``fn`` as SQL table function ``name`` (``laminar_table_function_register``).

        SQL calls it in FROM, joined to each row of one input or derived table:
        ``FROM s, name(s.x)``, ``FROM s CROSS JOIN LATERAL name(s.x) AS t(a, b)``,
        ``FROM (SELECT ...) d, name(d.x)``; over a changelog (an EMIT CHANGES
        stream, a view) each output row carries its input row's ``_weight``.
        ``kind="arrow"`` calls ``fn(*arrays)`` once per chunk and takes back a
        ``pyarrow.RecordBatch`` / ``Table`` (or a dict of columns) with a
        column ``_row`` -- the 0-based position of each output row's input
        row, never going down -- and the declared columns by name.
        ``kind="row"`` calls ``fn(*values)`` per input row, which returns or
        yields that row's output rows as tuples (a bare value for one
        column). It shares the function namespace (``remove_function``,
        SHOW FUNCTIONS); reopen a durable database whose streams call it with
        ``laminardb.open(path, functions=[TableFunction(...)])``.

        Args:
            name: The SQL name (case-insensitive; not a built-in's).
            fn: The function.
            params: The parameters' types (pyarrow types, SQL names or
                ``bool``/``int``/``float``/``str``/``datetime``/``date``).
            returns: The output columns: a mapping (or pairs) of name to type.
            kind: ``"arrow"`` (vectorized) or ``"row"``.
            null_handling: ``"default"``: a row with a NULL argument makes no
                rows and is not passed; ``"special"``: passed (None / a null).

        Returns:
            The connection (calls chain).

        Raises:
            TypeError: A type with no engine type.
            ValueError: An unknown option, no output column.
            SQLError: LDB-1004 (a built-in's name), LDB-1007 (replacing a
                function a stream uses).

        Example:
            >>> import laminardb, pyarrow as pa
            >>> db = laminardb.open()
            >>> _ = db.create_table_function(
            ...     "repeat", lambda s, n: [(s,)] * n, ["VARCHAR", "BIGINT"], {"r": "VARCHAR"},
            ...     kind="row")
            >>> _ = db.execute("CREATE SOURCE t (s VARCHAR, n BIGINT); "
            ...     "CREATE MATERIALIZED VIEW m AS SELECT s, r FROM t, repeat(t.s, t.n)")
            >>> db.insert("t", {"s": ["a", "b"], "n": [2, 0]}); db.run_until_idle()
            >>> db.query("SELECT s, r FROM m").to_pylist()
            [{'s': 'a', 'r': 'a'}, {'s': 'a', 'r': 'a'}]
        """
        function = TableFunction(
            name, fn, params, returns, kind=kind, null_handling=null_handling
        )
        err = ffi.new("laminar_error*")
        with self._lock:
            code = function.register(
                lib.laminar_table_function_register, self._require_open(), err
            )
        raise_for(code, err)
        return self

    def remove_function(self, name: str) -> Connection:
        """Drop user-defined function ``name`` (``laminar_function_drop``).

        Returns:
            The connection (calls chain).

        Raises:
            SQLError: LDB-1101 (no such function), LDB-1007 (a stream uses it).
        """
        err = ffi.new("laminar_error*")
        with self._lock:
            code = lib.laminar_function_drop(
                self._require_open(), c_text(name, "function name"), err
            )
        raise_for(code, err)
        return self

    def metrics(self) -> pa.Table:
        """The engine's counters now: rows of (kind, name, metric, value).

        Sources: pushed_batches, pushed_rows, queue_depth, queue_capacity,
        queue_bytes, max_queue_bytes, watermark_ms (with a WAL:
        wal_next_offset, processed_offset). Streams: rows_in, rows_out,
        late_rows, state_groups, state_bytes, accounted_state_bytes,
        max_state_bytes, watermark_ms, subscribers, partitions (a join stream,
        ASOF or interval, also join_left_rows, join_right_rows,
        join_left_bytes, join_right_bytes: the rows it holds per side; window
        functions also held_rows; a window over a source with per-key
        watermarks also watermark_keys, as that source does). Subscriptions:
        delivered_batches, queue_depth, queue_bytes, max_queue_bytes.
        Reactors ("0" .. cores-1): busy_ns, running_ns, busy_pct, rounds, rows,
        cpu (reactor 0 also messages). Durable databases: last_checkpoint,
        last_checkpoint_stall_ns, last_checkpoint_barrier_ns. ``laminar_metrics``
        in laminar.h lists them all.

        Example:
            >>> import laminardb
            >>> with laminardb.open() as db:
            ...     _ = db.execute("CREATE SOURCE t (x BIGINT)")
            ...     db.source("t").push({"x": [1, 2, 3]})
            ...     m = db.metrics().to_pylist()
            >>> [r["value"] for r in m if r["metric"] == "pushed_rows"]
            [3]
        """
        return self._status_table(lib.laminar_metrics)

    def pipeline_state(self) -> pa.Table:
        """What each part of the pipeline is doing now, one row per part.

        Columns: kind (runtime, source, stream, materialized view,
        subscription, reactor), name, state, input, watermark_ms, queue_depth,
        queue_capacity, partitions (None where a column does not apply).
        States: runtime stopped | idle | active | blocked | failed; source idle |
        active | waiting (queued, runtime stopped) | blocked | full; a stream
        follows its source, or is blocked by a subscriber of its own without
        room; subscription caught_up | lagging | blocking | full |
        full_dropping; reactor running | stopped. ``laminar_pipeline_state`` in
        laminar.h says more.

        Example:
            >>> import laminardb
            >>> with laminardb.open() as db:
            ...     _ = db.execute("CREATE SOURCE t (x BIGINT)")
            ...     db.source("t").push({"x": [1, 2, 3]})
            ...     rows = db.pipeline_state().to_pylist()
            >>> [(r["kind"], r["state"], r["queue_depth"]) for r in rows[:2]]
            [('runtime', 'stopped', 1), ('source', 'waiting', 1)]
        """
        return self._status_table(lib.laminar_pipeline_state)

    def _status_table(self, call: Callable[..., int]) -> pa.Table:
        """The table a ``laminar_metrics``-shaped call (db, stream, err) returns."""
        stream = ffi.new("struct ArrowArrayStream*")
        err = ffi.new("laminar_error*")
        with self._lock:
            code = call(self._require_open(), stream, err)
        raise_for(code, err)
        return import_reader(stream).read_all()

    def durability_report(self) -> str:
        """What durability had to report, one line each (empty when nothing).

        WAL tails cut at recovery (source, file, byte offset, records kept,
        bytes removed, why, the resume offset), damage skipped among WAL
        records the checkpoint covers, damaged or missing checkpoints skipped
        (the older one restored instead), interval checkpoints that failed on
        the background thread.
        """
        buf = ffi.new("char[]", 4096)
        err = ffi.new("laminar_error*")
        with self._lock:
            code = lib.laminar_durability_report(self._require_open(), buf, 4096, err)
        raise_for(code, err)
        return ffi.string(buf).decode("utf-8", "replace")

    def checkpoint(self) -> int:
        """Take a checkpoint now (``checkpoint_interval`` also takes them).

        Every source's WAL is flushed, operator state is copied with the graph
        stopped between two messages and written to ``data_dir/checkpoints``;
        once it is durable, file sinks publish the epoch's rows and the WAL
        segments it covers are deleted.

        On an in-memory database (opened without a path, or with
        ``":memory:"``) there is nothing to make durable: the call does
        nothing and returns epoch 0, as ``sqlite3`` and DuckDB accept a
        checkpoint of an in-memory database.

        Returns:
            The epoch of the checkpoint taken (1 for the first one of a new
            directory; the ``last_checkpoint`` metric), or 0 in memory.

        Raises:
            InternalError: LDB-9003 when checkpoints are off on a database
                opened with a data directory (set ``checkpoint_interval``).
            StorageError: LDB-5001 when a file operation fails; the previous
                checkpoint stays the one recovery uses. LDB-5004 if the
                database was opened read-only.
            LaminarError: LDB-9002 if the connection is closed.

        Example:
            >>> import laminardb, tempfile
            >>> with tempfile.TemporaryDirectory() as d:
            ...     with laminardb.open(d, checkpoint_interval="1 hour") as db:
            ...         db.checkpoint(), db.checkpoint()
            (1, 2)
            >>> with laminardb.open() as db:
            ...     db.checkpoint()
            0
        """
        if self._path is None:
            with self._lock:
                self._require_open()
            return 0
        self._simple(lib.laminar_checkpoint)
        epochs = [
            row["value"]
            for row in self.metrics().to_pylist()
            if row["kind"] == "database" and row["metric"] == "last_checkpoint"
        ]
        return int(epochs[0]) if epochs else 0

    def late_rows(self, name: str) -> int:
        """Count the rows stream ``name`` dropped for arriving behind its watermark.

        Args:
            name: The stream.

        Returns:
            The count since the stream was created.

        Raises:
            SQLError: LDB-1002 if there is no stream of that name.
            LaminarError: LDB-9002 if the connection is closed.
        """
        text = c_text(name, "stream name")
        out = ffi.new("int64_t*")
        err = ffi.new("laminar_error*")
        with self._lock:
            code = lib.laminar_stream_late_rows(self._require_open(), text, out, err)
        raise_for(code, err)
        return int(out[0])

    def partitioning(self, name: str) -> pa.Table:
        """Report how stream ``name``'s input may be split across databases.

        Rows of (role, name, value): ``source`` (the root source),
        ``event_time`` (its watermark column; value: the delay in ms),
        ``key`` (a source column to hash on, one row each) and
        ``partitioning`` (``key``, ``single`` or ``any``);
        ``laminar_stream_partitioning`` in include/laminar.h.

        Args:
            name: The stream.

        Returns:
            The rows as a ``pyarrow.Table``.

        Raises:
            SQLError: LDB-1002 if there is no stream of that name.
            LaminarError: LDB-9002 if the connection is closed.
        """
        return self._rows(lib.laminar_stream_partitioning, c_text(name, "stream name"))

    def two_phase(self, name: str) -> pa.Table:
        """Split windowed stream ``name`` into a partial and a final query.

        Rows of (role, name, value): ``partial`` (value: the partial SQL,
        name: its stream), ``partial_source``, ``final`` (value: the final
        SQL), ``final_source``, ``key`` (a partial column to hash on, one row
        each) and ``window`` (``__ws``, value: the hop in ms);
        ``laminar_stream_two_phase`` in include/laminar.h. Running the partial
        SQL over any split of the input (closed by a final watermark) and the
        final SQL over the partial rows, grouped by key, gives the stream's
        rows.

        Args:
            name: The stream.

        Returns:
            The rows as a ``pyarrow.Table``.

        Raises:
            SQLError: LDB-1002 if there is no stream of that name; LDB-1005
                (with the reason) when its aggregation does not decompose.
            LaminarError: LDB-9002 if the connection is closed.
        """
        return self._rows(lib.laminar_stream_two_phase, c_text(name, "stream name"))


def open(  # noqa: A001 -- the package's documented entry point, like sqlite3.connect
    path: PathLike | None = None,
    *,
    config: Mapping[str, object] | None = None,
    sinks: Mapping[str, tuple[str, SinkConnector]] | None = None,
    functions: Sequence[Function | Aggregate | TableFunction] = (),
    vars: Mapping[str, object] | None = None,  # noqa: A002 -- the documented name
    read_only: bool = False,
    **options: object,
) -> Connection:
    """Open a database.

    A durable database owns its directory until :meth:`Connection.close`: a
    second open of it, in this process or another, raises ``StorageError``
    LDB-5003 naming the directory and the holder's pid. Read-only opens share
    a directory with each other, never with a writer (docs/DURABILITY.md).

    Args:
        path: A data directory for durable state, or None (or ``":memory:"``,
            as ``sqlite3.connect`` and ``duckdb.connect`` take it) for in
            memory: nothing is written anywhere. A directory is
            passed to the engine as the ``data_dir`` option. With
            ``checkpoint_interval`` set too, the database is durable: opening a
            directory that holds one recovers it (catalog, last checkpoint,
            WAL replay); see docs/DURABILITY.md.
        config: Options as a mapping, e.g. ``{"buffer_size": 1024}``.
        sinks: Python sinks to attach while a durable database recovers,
            ``{name: (stream, connector)}`` (see :meth:`Connection.add_sink`);
            the streams must be in the stored catalog.
        functions: User-defined functions
            (:class:`laminardb.functions.Function`), aggregates
            (:class:`laminardb.aggregates.Aggregate`) and table functions
            (:class:`laminardb.table_functions.TableFunction`) registered before the
            database opens, so a durable one's stored streams that call them
            recover (see :meth:`Connection.create_function`).
        vars: ``${NAME}`` substitution variables, ``{NAME: value}``: every
            ``${NAME}`` in the SQL text of ``execute`` and ``query`` is replaced
            by ``str(value)`` before parsing (the same as the option
            ``var.NAME``; see docs/SQL.md, "Variables"). The value is pasted
            in as text, unescaped: do not pass untrusted input.
        read_only: Open ``path`` for queries only (the ``read_only`` option):
            recover its catalog, checkpoint and WAL in memory and write
            nothing there; DDL, pushes, ``checkpoint()`` and sinks raise
            ``StorageError`` LDB-5004. ``checkpoint_interval`` is not needed.
        **options: More options, as keywords; they override ``config``. Values
            are passed as text (booleans as ``true``/``false``).

    Returns:
        The open :class:`Connection`.

    Raises:
        ConfigError: LDB-6001 for an unknown key (or a variable name that is
            not a letter or '_' then letters, digits, '_' or '.'), LDB-6002 for a bad value,
            LDB-6003 for settings that conflict (``wal_mode`` without
            ``checkpoint_interval``, ``checkpoint_interval`` without a path).
        StorageError: LDB-5001 if the data directory cannot be created (or,
            read-only, does not exist), LDB-5002 if stored state does not
            recover, LDB-5003 if another database holds the directory.

    Example:
        >>> import laminardb
        >>> db = laminardb.open(buffer_size=1024)
        >>> db
        <laminardb.Connection in-memory open>
        >>> db.close()
        >>> db
        <laminardb.Connection in-memory closed>
    """
    settings: dict[str, object] = dict(config or {})
    settings.update(options)
    settings.update({f"var.{name}": value for name, value in (vars or {}).items()})
    if read_only:
        settings["read_only"] = True
    text_path = os.fspath(path) if path is not None else None
    if text_path == MEMORY:
        text_path = None
    if text_path is not None:
        settings["data_dir"] = text_path

    config_out = ffi.new("laminar_config**")
    raise_for(lib.laminar_config_create(config_out))
    handles = []
    try:
        for key, value in settings.items():
            err = ffi.new("laminar_error*")
            code = lib.laminar_config_set(
                config_out[0], c_text(key, "option name"), _option_text(key, value), err
            )
            raise_for(code, err)
        for name, (stream, connector) in (sinks or {}).items():
            cb, handle = callbacks_for(connector)
            handles.append(handle)
            err = ffi.new("laminar_error*")
            code = lib.laminar_config_add_sink(
                config_out[0], c_text(name, "sink name"), c_text(stream, "stream name"), cb, err
            )
            raise_for(code, err)
        for function in functions:
            err = ffi.new("laminar_error*")
            register = (
                lib.laminar_config_aggregate_register
                if isinstance(function, Aggregate)
                else lib.laminar_config_table_function_register
                if isinstance(function, TableFunction)
                else lib.laminar_config_function_register
            )
            code = function.register(register, config_out[0], err)
            raise_for(code, err)
        db_out = ffi.new("laminar_db**")
        err = ffi.new("laminar_error*")
        code = lib.laminar_open(config_out[0], db_out, err)
        raise_for(code, err)
    finally:
        lib.laminar_config_destroy(config_out[0])
    connection = Connection(db_out[0], text_path)
    connection._sink_handles.extend(handles)
    return connection

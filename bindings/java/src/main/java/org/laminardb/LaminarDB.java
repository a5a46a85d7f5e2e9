package org.laminardb;

import java.lang.ref.Cleaner;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.function.LongFunction;
import org.apache.arrow.c.ArrowArray;
import org.apache.arrow.c.ArrowArrayStream;
import org.apache.arrow.c.ArrowSchema;
import org.apache.arrow.c.Data;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * An open LaminarDB database: sources and streams declared in SQL, data pushed through
 * {@link Source}s, results read from {@link Subscription}s. In-process, over the C API
 * (laminar.h) through JNI; Arrow data crosses through the Arrow C Data Interface.
 *
 * <pre>{@code
 * try (LaminarDB db = LaminarDB.open()) {
 *   db.execute("CREATE SOURCE t (k VARCHAR, v BIGINT, ts BIGINT); "
 *       + "CREATE STREAM s AS SELECT k, v FROM t WHERE v > 0;");
 *   ...
 * }
 * }</pre>
 *
 * <p>Thread-safety: every method may be called from any thread. Closing the database
 * closes its sources and subscriptions (their later use throws LDB-9002). A database
 * that becomes unreachable without {@link #close()} is closed by a {@link Cleaner}, but
 * close it explicitly: the Cleaner runs late or not at all.
 */
public final class LaminarDB implements AutoCloseable {
  private final NativeState.Db state;
  private final Cleaner.Cleanable cleanable;

  private LaminarDB(long pointer) {
    this.state = new NativeState.Db(pointer);
    this.cleanable = NativeState.CLEANER.register(this, state);
  }

  /** Open an in-memory database with default options. */
  public static LaminarDB open() {
    return open(new Config());
  }

  /**
   * Open a database.
   *
   * @param config its options (copied)
   * @return the open database; close it
   * @throws LaminarException LDB-6001/6002/6003 for bad options, LDB-5001/5002 when a
   *     durable database cannot be read or recovered
   */
  public static LaminarDB open(Config config) {
    Map<String, String> options = config.options();
    if (!config.functions().isEmpty()) {
      return openWithFunctions(options, config.functions());
    }
    byte[][] keys = new byte[options.size()][];
    byte[][] values = new byte[options.size()][];
    int i = 0;
    for (Map.Entry<String, String> e : options.entrySet()) {
      keys[i] = e.getKey().getBytes(StandardCharsets.UTF_8);
      values[i] = e.getValue().getBytes(StandardCharsets.UTF_8);
      i++;
    }
    return new LaminarDB(Native.open(keys, values));
  }

  /** Open through a C config that registers {@code functions} first. */
  private static LaminarDB openWithFunctions(
      Map<String, String> options, List<Registration> functions) {
    long config = Native.configCreate();
    try {
      for (Map.Entry<String, String> e : options.entrySet()) {
        Native.configSet(
            config,
            e.getKey().getBytes(StandardCharsets.UTF_8),
            e.getValue().getBytes(StandardCharsets.UTF_8));
      }
      for (Registration r : functions) {
        r.register(0, config);
      }
      return new LaminarDB(Native.openConfig(config));
    } finally {
      Native.configDestroy(config);
    }
  }

  /** The core library's version ("0.1.0"). */
  public static String version() {
    return new String(Native.version(), StandardCharsets.UTF_8);
  }

  /** Run {@code call} on the open pointer under the read lock (throws if closed). */
  private <T> T locked(LongFunction<T> call) {
    state.lock.readLock().lock();
    try {
      return call.apply(state.require());
    } finally {
      state.lock.readLock().unlock();
    }
  }

  /**
   * Run one or more ';'-separated SQL statements (CREATE SOURCE / STREAM / MATERIALIZED
   * VIEW / SINK, DROP, ...). The whole text is parsed first; statements then run in
   * order and the first failure stops (earlier ones stay applied).
   *
   * @param sql the statements
   * @return this database
   * @throws LaminarException 1xxx/2xxx with the failing statement's line:column
   */
  public LaminarDB execute(String sql) {
    byte[] text = Text.utf8(sql, "SQL text");
    return locked(p -> {
      Native.execute(p, text);
      return this;
    });
  }

  /**
   * Run a statement that returns rows (SELECT over a materialized view, SHOW, DESCRIBE,
   * EXPLAIN) and read them through an {@link ArrowReader} whose batches live in
   * {@code allocator}. Close the reader.
   */
  public ArrowReader query(String sql, BufferAllocator allocator) {
    byte[] text = Text.utf8(sql, "SQL text");
    try (ArrowArrayStream stream = ArrowArrayStream.allocateNew(allocator)) {
      locked(p -> {
        Native.query(p, text, stream.memoryAddress());
        return null;
      });
      return Data.importArrayStream(allocator, stream);
    }
  }

  /**
   * The engine's counters now, as rows (kind, name, metric, value): per source
   * pushed_batches, pushed_rows, queue_depth, ...; per stream rows_in, rows_out,
   * late_rows, subscribers, ...; see {@code laminar_metrics} in laminar.h. Close the
   * reader.
   */
  public ArrowReader metrics(BufferAllocator allocator) {
    return statusRows(allocator, Native::metrics);
  }

  /** The rows a laminar_metrics-shaped call (db, stream) writes, as a reader. */
  private ArrowReader statusRows(BufferAllocator allocator, StatusCall call) {
    try (ArrowArrayStream stream = ArrowArrayStream.allocateNew(allocator)) {
      locked(p -> {
        call.into(p, stream.memoryAddress());
        return null;
      });
      return Data.importArrayStream(allocator, stream);
    }
  }

  /** Native.metrics and Native.pipelineState. */
  private interface StatusCall {
    void into(long db, long streamAddress);
  }

  /**
   * The Arrow schema of a source's, stream's or view's rows (a view's as subscribers
   * get them, with {@code _weight}).
   *
   * @param name the object's name
   * @param allocator where the C schema is staged during the import
   * @return the schema
   * @throws LaminarException LDB-1002 if nothing has that name
   */
  public Schema schema(String name, BufferAllocator allocator) {
    byte[] text = Text.utf8(name, "name");
    ArrowSchema c = ArrowSchema.allocateNew(allocator);
    try {
      locked(p -> {
        Native.schema(p, text, c.memoryAddress());
        return null;
      });
      return Data.importSchema(allocator, c, null);
    } finally {
      c.close();
    }
  }

  /**
   * Open the producer handle of source {@code name}. This version of the core has one
   * producer per source: open one source per pushing thread (or share one handle; its
   * calls are serialized).
   *
   * @throws LaminarException LDB-1002 for an unknown source, LDB-9003 if a producer
   *     handle is already open on it
   */
  public Source source(String name) {
    byte[] text = Text.utf8(name, "source name");
    state.lock.readLock().lock();
    try {
      long p = Native.sourceOpen(state.require(), text);
      return new Source(state, p, name);
    } finally {
      state.lock.readLock().unlock();
    }
  }

  /**
   * Open the producer handle of source {@code name} for rows given as instances of
   * {@code type}: a record, or a POJO with public fields or getters, whose properties
   * are the source's columns (matched by name; see {@link TypedSource}).
   *
   * @throws LaminarException LDB-1002 for an unknown source; LDB-3003 when a column has
   *     no property or a property no column, LDB-3004 when a property's type does not
   *     fit its column (nothing opened); LDB-9003 as {@link #source(String)}
   */
  public <T> TypedSource<T> source(String name, Class<T> type) {
    Schema schema;
    state.lock.readLock().lock();
    try {
      schema = schema(name, state.allocator());
    } finally {
      state.lock.readLock().unlock();
    }
    RowMapper<T> mapper = RowMapper.forWrite(type, schema, "source '" + name + "'", name);
    return new TypedSource<>(source(name), mapper, state);
  }

  /**
   * Subscribe to stream (or view) {@code name} with its rows handed out as instances of
   * {@code type} (a record or a POJO; see {@link TypedSubscription}). The batches live
   * in the database's own allocator and are freed as they are read.
   *
   * @throws LaminarException LDB-1002 if nothing has that name; LDB-1003 if a property
   *     of {@code type} has no column, LDB-2001 if a column's type does not fit it
   */
  public <T> TypedSubscription<T> subscribe(String name, Class<T> type) {
    BufferAllocator allocator;
    state.lock.readLock().lock();
    try {
      allocator = state.allocator();
    } finally {
      state.lock.readLock().unlock();
    }
    Subscription sub = subscribe(name, allocator);
    try {
      return sub.as(type);
    } catch (RuntimeException e) {
      sub.close();
      throw e;
    }
  }

  /**
   * Subscribe to the rows stream (or view) {@code name} produces from now on; its
   * batches are imported into {@code allocator}.
   *
   * @throws LaminarException LDB-1002 if nothing has that name
   */
  public Subscription subscribe(String name, BufferAllocator allocator) {
    Schema schema = schema(name, allocator);
    byte[] text = Text.utf8(name, "stream name");
    state.lock.readLock().lock();
    try {
      long p = Native.subscribe(state.require(), text);
      return new Subscription(state, p, name, schema, allocator);
    } finally {
      state.lock.readLock().unlock();
    }
  }

  /** Start the runtime: a reactor thread processes pushes as they come. */
  public void start() {
    locked(p -> {
      Native.start(p);
      state.started = true;
      return null;
    });
  }

  /** Stop the runtime after it has processed what is queued and delivered the results. */
  public void stop() {
    locked(p -> {
      state.started = false;
      Native.stop(p);
      return null;
    });
  }

  /**
   * Take a checkpoint now (the {@code checkpoint_interval} timer takes them too): every
   * source's WAL is flushed, operator state is written to {@code data_dir/checkpoints}
   * atomically; once it is durable, file sinks publish the epoch's rows and the WAL
   * segments it covers are deleted. See {@code laminar_checkpoint} in laminar.h.
   *
   * @throws LaminarException LDB-9003 when checkpoints are off (open with {@link
   *     Config#dataDir} and {@code checkpoint_interval}); LDB-5001 when a file operation
   *     fails (the previous checkpoint stays the one recovery uses); LDB-5004 on a
   *     database opened read-only
   */
  public void checkpoint() {
    locked(p -> {
      Native.checkpoint(p);
      return null;
    });
  }

  /**
   * What each part of the pipeline is doing now, one row per part: kind (runtime,
   * source, stream, materialized view, subscription, reactor), name, state, input,
   * watermark_ms, queue_depth, queue_capacity, partitions (null where a column does not
   * apply). States: runtime stopped | idle | active | blocked | failed; source idle |
   * active | waiting (queued, runtime stopped) | blocked | full; subscription caught_up |
   * lagging | blocking | full | full_dropping. See {@code laminar_pipeline_state} in
   * laminar.h. Close the reader.
   */
  public ArrowReader pipelineState(BufferAllocator allocator) {
    return statusRows(allocator, Native::pipelineState);
  }

  /**
   * Process every queued push in the calling thread (deterministic; not while the
   * runtime is started: LDB-9003).
   */
  public void runUntilIdle() {
    locked(p -> {
      Native.runUntilIdle(p);
      return null;
    });
  }

  /**
   * Register a vectorized scalar function, callable in SQL wherever an expression is
   * (select list, WHERE, GROUP BY keys, aggregate arguments, HAVING) by the streams,
   * views and queries created after this call; see {@link VectorFunction}. Registering
   * a name again replaces the function, unless a stream uses it. Functions are not
   * stored in the data directory: for a durable database whose streams call one,
   * register it in the {@link Config} it is opened with.
   *
   * <p>At run time an exception from {@code fn} (or a null result) fails the stream's
   * batch with LDB-3010 and a result of another type or length with LDB-3011, the
   * message naming the function, the stream and the exception; the batch is not
   * applied and the error is thrown by {@link #runUntilIdle} (or {@link #stop} after
   * {@link #start}). The function runs on the thread that evaluates the stream (a
   * reactor thread, attached to the JVM as a daemon, or the caller of runUntilIdle /
   * query / open), one call at a time; it must not use the database: a call back into
   * it throws LDB-9002.
   *
   * @param name the SQL name (case-insensitive; not a built-in's)
   * @param fn the function
   * @param params the parameters' SQL types: BOOLEAN, INT, BIGINT, DOUBLE, VARCHAR,
   *     TIMESTAMP, DATE (at least one); SQL arguments are cast to them as a built-in's
   * @param returns the result's SQL type, of the same set
   * @param options deterministic, called on NULL ({@code null}: the defaults)
   * @return this database
   * @throws LaminarException LDB-2002 for an unknown type; LDB-1004 for a built-in's
   *     name; LDB-1007 when replacing a function a stream uses; LDB-9002 for a bad name
   */
  public LaminarDB createFunction(
      String name, VectorFunction fn, List<String> params, String returns, FunctionOptions options) {
    return register(Registration.scalar(name, fn, params, returns, options));
  }

  /** {@link #createFunction(String, VectorFunction, List, String, FunctionOptions)} with the default options. */
  public LaminarDB createFunction(
      String name, VectorFunction fn, List<String> params, String returns) {
    return createFunction(name, fn, params, returns, null);
  }

  /**
   * Register a scalar function written per row ({@link RowFunction}: Java values in, a
   * Java value out), otherwise as {@link #createFunction}.
   */
  public LaminarDB createRowFunction(
      String name, RowFunction fn, List<String> params, String returns, FunctionOptions options) {
    return register(Registration.row(name, fn, params, returns, options));
  }

  /** {@link #createRowFunction(String, RowFunction, List, String, FunctionOptions)} with the default options. */
  public LaminarDB createRowFunction(
      String name, RowFunction fn, List<String> params, String returns) {
    return createRowFunction(name, fn, params, returns, null);
  }

  /**
   * Register an aggregate ({@link AggregateFunction}), callable as a built-in aggregate
   * is: in the select list and HAVING of a GROUP BY with or without tumble / hop /
   * session windows, EMIT ON WINDOW CLOSE or EMIT CHANGES; over a changelog (a stream
   * over an EMIT CHANGES stream or a view) only if it overrides {@code retract}, else
   * such a statement is refused with LDB-1005. Its states are checkpointed.
   * Durability, errors and threads as {@link #createFunction}.
   *
   * @param params one or two parameter types
   * @param returns BOOLEAN, INT, BIGINT, DOUBLE or TIMESTAMP
   * @param options only calledOnNull applies ({@code null}: the defaults)
   */
  public LaminarDB createAggregate(
      String name,
      AggregateFunction<?> aggregate,
      List<String> params,
      String returns,
      FunctionOptions options) {
    return register(Registration.aggregate(name, aggregate, params, returns, options));
  }

  /** {@link #createAggregate(String, AggregateFunction, List, String, FunctionOptions)} with the default options. */
  public LaminarDB createAggregate(
      String name, AggregateFunction<?> aggregate, List<String> params, String returns) {
    return createAggregate(name, aggregate, params, returns, null);
  }

  private LaminarDB register(Registration r) {
    return locked(p -> {
      r.register(p, 0);
      return this;
    });
  }

  /**
   * Drop user-defined function or aggregate {@code name} (as SQL {@code DROP
   * FUNCTION}).
   *
   * @throws LaminarException LDB-1101 if no user-defined function has that name;
   *     LDB-1007 while a stream or view uses it
   */
  public void dropFunction(String name) {
    byte[] text = Text.utf8(name, "function name");
    locked(p -> {
      Native.functionDrop(p, text);
      return null;
    });
  }

  /**
   * Upsert rows into table {@code table} ({@code CREATE TABLE ... PRIMARY KEY}): each
   * row replaces the row of its key or adds it, as SQL {@code INSERT INTO}. The root's
   * columns are the table's, matched by name; it stays yours (its buffers are exported
   * zero-copy and released by the engine). See {@code laminar_table_upsert}.
   *
   * @throws LaminarException LDB-1002 for no such table; LDB-9003 while a producer
   *     handle of the table is open; the push errors of {@link Source#push} (LDB-3003,
   *     3004, 3005: NULL in a key column); nothing is written on failure
   */
  public void upsert(String table, VectorSchemaRoot rows) {
    writeTable(table, rows, false);
  }

  /**
   * Delete the rows of the given keys from table {@code table} (a key without a row is
   * ignored), as SQL {@code DELETE FROM table WHERE key = ...} per key.
   *
   * @param keys exactly the table's primary-key columns, one row per key
   * @throws LaminarException as {@link #upsert}, LDB-3003 when the columns are not the
   *     primary key's
   */
  public void delete(String table, VectorSchemaRoot keys) {
    writeTable(table, keys, true);
  }

  /**
   * Upsert typed rows into table {@code table}: records or POJOs whose properties are
   * the table's columns, mapped as {@link TypedSource} maps a source's.
   */
  public <T> void upsert(String table, Class<T> type, List<? extends T> rows) {
    writeTyped(table, type, rows, false);
  }

  /**
   * Delete typed keys from table {@code table}: records or POJOs whose properties are
   * exactly the table's primary-key columns.
   */
  public <T> void delete(String table, Class<T> type, List<? extends T> keys) {
    writeTyped(table, type, keys, true);
  }

  private void writeTable(String table, VectorSchemaRoot root, boolean remove) {
    byte[] text = Text.utf8(table, "table name");
    BufferAllocator allocator = root.getFieldVectors().isEmpty()
        ? null
        : root.getFieldVectors().get(0).getAllocator();
    if (allocator == null) {
      throw LaminarException.misuse("table '" + table + "': rows have no columns");
    }
    try (ArrowArray array = ArrowArray.allocateNew(allocator);
        ArrowSchema schema = ArrowSchema.allocateNew(allocator)) {
      Data.exportVectorSchemaRoot(allocator, root, null, array, schema);
      try {
        locked(p -> {
          Native.tableWrite(p, text, array.memoryAddress(), schema.memoryAddress(), remove);
          return null;
        });
      } finally {
        array.release(); // a no-op once moved into the core
        schema.release();
      }
    }
  }

  private <T> void writeTyped(String table, Class<T> type, List<? extends T> rows, boolean remove) {
    Schema schema;
    BufferAllocator allocator;
    state.lock.readLock().lock();
    try {
      allocator = state.allocator();
      schema = schema(table, allocator);
    } finally {
      state.lock.readLock().unlock();
    }
    String label = "table '" + table + "'";
    if (remove) {
      schema = new Schema(keyFields(schema, type));
    } else {
      schema = new Schema(schema.getFields().stream()
          .filter(f -> !f.getName().equals("_weight"))
          .collect(java.util.stream.Collectors.toList()));
    }
    RowMapper<T> mapper = RowMapper.forWrite(type, schema, label, table);
    if (rows.isEmpty()) {
      return;
    }
    try (VectorSchemaRoot root = mapper.write(rows, allocator)) {
      writeTable(table, root, remove);
    }
  }

  /** The columns of {@code schema} that {@code type} has properties for (a delete's keys). */
  private static List<org.apache.arrow.vector.types.pojo.Field> keyFields(
      Schema schema, Class<?> type) {
    return RowMapper.matching(schema, type);
  }

  /** True once {@link #close()} ran. */
  public boolean isClosed() {
    return state.isClosed();
  }

  /**
   * Close the database, its sources and its subscriptions (stopping the runtime if it
   * runs). Waits for calls in flight on other threads. Idempotent.
   */
  @Override
  public void close() {
    Callbacks.refuseInside(); // else the Cleaner would drop the handle unclosed
    cleanable.clean();
  }
}

package org.laminardb;

import java.lang.ref.Cleaner;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.function.LongFunction;
import org.apache.arrow.c.ArrowArrayStream;
import org.apache.arrow.c.ArrowSchema;
import org.apache.arrow.c.Data;
import org.apache.arrow.memory.BufferAllocator;
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
    cleanable.clean();
  }
}

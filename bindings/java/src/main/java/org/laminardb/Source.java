package org.laminardb;

import java.lang.ref.Cleaner;
import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.c.ArrowArray;
import org.apache.arrow.c.ArrowSchema;
import org.apache.arrow.c.Data;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * The producer handle of one source: push Arrow batches and watermarks. Get one with
 * {@link LaminarDB#source(String)}; close it (or its database).
 *
 * <p>{@link #push(VectorSchemaRoot)} exports the root through Arrow Java's C Data
 * module: zero-copy, the core takes a reference on the root's buffers (the root stays
 * the caller's and may be cleared or reused; the buffers are freed when both are done).
 * Arrow memory the export needs is taken from the root's allocator until the core
 * releases it: close the source and its database before that allocator.
 *
 * <p>Thread-safety: any thread; calls on one source are serialized.
 */
public final class Source implements AutoCloseable {
  private final State state;
  private final Cleaner.Cleanable cleanable;
  private final String name;

  /** The C handle plus the exported schema kept for the next pushes. */
  private static final class State extends NativeState.Child {
    private Schema exportedSchema; // the Arrow schema `cSchema` describes
    private BufferAllocator exportedAllocator; // where cSchema lives
    private ArrowSchema cSchema; // exported once, borrowed by every push

    State(NativeState.Db db, long pointer, String name) {
      super(db, pointer, "source '" + name + "'");
    }

    @Override
    void freeNative(long p) {
      Native.sourceClose(p);
    }

    @Override
    void freeJava() {
      if (cSchema != null) {
        cSchema.release();
        cSchema.close();
        cSchema = null;
        exportedSchema = null;
        exportedAllocator = null;
      }
    }

    /** The C schema of `schema` (exported on first use or when it changes). */
    ArrowSchema schemaFor(Schema schema, BufferAllocator allocator) {
      if (cSchema == null || exportedAllocator != allocator || !exportedSchema.equals(schema)) {
        freeJava();
        ArrowSchema c = ArrowSchema.allocateNew(allocator);
        try {
          Data.exportSchema(allocator, schema, null, c);
        } catch (RuntimeException e) {
          c.close();
          throw e;
        }
        cSchema = c;
        exportedSchema = schema;
        exportedAllocator = allocator;
      }
      return cSchema;
    }
  }

  Source(NativeState.Db db, long pointer, String name) {
    this.name = name;
    this.state = new State(db, pointer, name);
    db.children.add(state);
    this.cleanable = NativeState.CLEANER.register(this, state);
  }

  /** The longest single wait for room inside the core, in milliseconds. */
  static final long WAIT_SLICE_MS = 100;

  /** What pushing one exported array does about a full queue. */
  private enum Mode {
    WAIT, // the source's back-pressure, in slices (push)
    TRY // refuse a full queue at once (tryPush)
  }

  /**
   * Push one batch: the root's columns are matched to the source's by name (any order).
   * A rejected batch ingests nothing; what was pushed before stays.
   *
   * <p>When the queue is full the source's back-pressure policy applies (block waits for
   * room while the runtime runs). The wait is cut into slices of at most 100 ms: an
   * {@link Thread#interrupt()} of the pushing thread ends it with LDB-3009 and nothing
   * ingested (the thread's interrupt status stays set; push the root again later).
   *
   * @param root the batch (not modified; its vectors need a common allocator)
   * @throws LaminarException LDB-3003 (columns do not match), LDB-3004 (a column of the
   *     wrong type), LDB-3005 (NULL in a NOT NULL column), LDB-3001 (invalid data),
   *     LDB-3006 (queue full: reject policy, or block with the runtime stopped),
   *     LDB-3009 (interrupted while waiting for room), LDB-9002 (the source is closed)
   */
  public void push(VectorSchemaRoot root) {
    pushRoot(root, Mode.WAIT);
  }

  /**
   * Push one batch like {@link #push(VectorSchemaRoot)}, but never wait for room: when
   * the source's queue is full, return false at once (even while the runtime runs) and
   * ingest nothing of the batch.
   *
   * @param root the batch (not modified)
   * @return true if the batch was taken, false if the queue was full (LDB-3006)
   * @throws LaminarException as {@link #push(VectorSchemaRoot)}, except LDB-3006
   */
  public boolean tryPush(VectorSchemaRoot root) {
    return pushRoot(root, Mode.TRY);
  }

  private boolean pushRoot(VectorSchemaRoot root, Mode mode) {
    BufferAllocator allocator = allocatorOf(root);
    state.db.lock.readLock().lock();
    try {
      synchronized (state) {
        long p = state.require();
        ArrowSchema schema = state.schemaFor(root.getSchema(), allocator);
        try (ArrowArray array = ArrowArray.allocateNew(allocator)) {
          Data.exportVectorSchemaRoot(allocator, root, null, array);
          boolean taken = false;
          try {
            taken = pushArray(p, array.memoryAddress(), schema.memoryAddress(), mode);
          } finally {
            if (!taken) {
              array.release(); // refused or rejected: the export is still ours
            }
          }
          return taken;
        }
      }
    } finally {
      state.db.lock.readLock().unlock();
    }
  }

  /**
   * Hand one exported array to the core; on false or a throw the array is still the
   * caller's. WAIT pushes in slices and throws LDB-3009 when interrupted; TRY returns
   * false for a full queue.
   */
  private boolean pushArray(long p, long array, long schema, Mode mode) {
    if (mode == Mode.TRY) {
      return Native.sourceTryPush(p, array, schema);
    }
    while (!Native.sourcePushTimeout(p, array, schema, WAIT_SLICE_MS)) {
      checkWait("the batch was not ingested (push it again)");
    }
    return true;
  }

  /**
   * LDB-3009 for a wait for room cut short by Thread.interrupt(): its cause is an
   * InterruptedException, and the thread's interrupt status stays set (as a method that
   * cannot throw InterruptedException leaves it), so the caller's own checks see it.
   */
  private LaminarException interrupted(String what) {
    LaminarException e =
        new LaminarException(
            LaminarException.PUSH_TIMEOUT,
            String.format(
                "LDB-%04d: %s: interrupted while waiting for room in its queue; %s",
                LaminarException.PUSH_TIMEOUT, state.label, what),
            0,
            0,
            name,
            "");
    e.initCause(new InterruptedException(what));
    return e;
  }

  private static BufferAllocator allocatorOf(VectorSchemaRoot root) {
    if (root.getFieldVectors().isEmpty()) {
      throw LaminarException.misuse("cannot push a VectorSchemaRoot without columns");
    }
    return root.getVector(0).getAllocator();
  }

  /**
   * Push one batch given as Arrow C Data Interface structs (as {@code
   * laminar_source_push}): a struct array whose children are the source's columns. Waits
   * for room as {@link #push(VectorSchemaRoot)} does (in slices; interruptible).
   *
   * @param arrowArrayAddress address of a {@code struct ArrowArray}: moved into the core
   *     on success (its release becomes NULL); on failure untouched, still the caller's
   * @param arrowSchemaAddress address of its {@code struct ArrowSchema}: borrowed
   */
  public void push(long arrowArrayAddress, long arrowSchemaAddress) {
    if (arrowArrayAddress == 0 || arrowSchemaAddress == 0) {
      throw LaminarException.misuse("null ArrowArray or ArrowSchema address");
    }
    state.db.lock.readLock().lock();
    try {
      synchronized (state) {
        pushArray(state.require(), arrowArrayAddress, arrowSchemaAddress, Mode.WAIT);
      }
    } finally {
      state.db.lock.readLock().unlock();
    }
  }

  /**
   * Push several batches of one schema in one call to the core: all are validated
   * before any is queued, then queued in order as one run (no other producer's batch
   * lands between them) with one wake-up of the runtime. Cheaper than one push each.
   *
   * <p>It goes through {@code laminar_source_push_batch_timeout} in wait slices of 100
   * ms: a run that fits the queue waits for room for all of it (block back-pressure,
   * runtime running) and goes in whole or not at all; an {@link Thread#interrupt()} ends
   * the wait with LDB-3009, and a {@link #close()} of this source or of its database on
   * another thread with LDB-9002 (close() does not wait for it). A run longer than the
   * queue goes in a queue's capacity at a time, in order; if the call stops midway, the
   * batches before stay ingested and the exception's message counts them.
   *
   * @param roots the batches, all with the same schema (each is exported, not modified)
   * @throws LaminarException as {@link #push(VectorSchemaRoot)}; a rejected batch's
   *     index is in the message ("array 3 of 10"); LDB-9002 if the schemas differ
   *     (nothing pushed)
   */
  public void pushBatch(Iterable<VectorSchemaRoot> roots) {
    List<VectorSchemaRoot> list = new ArrayList<>();
    for (VectorSchemaRoot root : roots) {
      list.add(root);
    }
    if (list.isEmpty()) {
      return;
    }
    Schema schema0 = list.get(0).getSchema();
    for (int i = 1; i < list.size(); i++) {
      if (!list.get(i).getSchema().equals(schema0)) {
        throw LaminarException.misuse(
            "pushBatch into "
                + state.label
                + ": batch "
                + i
                + " has schema "
                + list.get(i).getSchema()
                + " but batch 0 has "
                + schema0
                + "; push batches of different schemas separately");
      }
    }
    pushExported(
        schema0,
        allocatorOf(list.get(0)),
        export -> {
          for (VectorSchemaRoot root : list) {
            export.accept(root);
          }
        });
  }

  /** Exports the batches of one pushBatch call, each through {@code export}. */
  private interface Exporter {
    void run(java.util.function.Consumer<VectorSchemaRoot> export) throws java.io.IOException;
  }

  /**
   * The body of both pushBatch calls: under the locks, export the batches {@code
   * exporter} gives (zero-copy; each export holds its own buffer references), push
   * them in runs, and release what the core did not take.
   */
  private void pushExported(Schema schema, BufferAllocator allocator, Exporter exporter) {
    state.db.lock.readLock().lock();
    try {
      synchronized (state) {
        long p = state.require();
        ArrowSchema cSchema = state.schemaFor(schema, allocator);
        List<ArrowArray> arrays = new ArrayList<>();
        try {
          exporter.run(
              root -> {
                ArrowArray array = ArrowArray.allocateNew(allocator);
                arrays.add(array);
                Data.exportVectorSchemaRoot(allocator, root, null, array);
              });
          pushRuns(p, arrays, cSchema.memoryAddress());
        } catch (java.io.IOException e) {
          throw readerFailed(e);
        } finally {
          for (ArrowArray array : arrays) {
            array.release(); // a no-op for what the core took (release is NULL)
            array.close();
          }
        }
      }
    } finally {
      state.db.lock.readLock().unlock();
    }
  }

  /**
   * Push every batch an {@link ArrowReader} yields, as {@link #pushBatch(Iterable)}: the
   * stream is read to its end first (each batch exported, zero-copy), then pushed. The
   * reader is not closed.
   *
   * @param reader the stream (e.g. {@code ArrowStreamReader}, or {@link
   *     LaminarDB#query(String, BufferAllocator)}'s result)
   * @throws LaminarException as {@link #pushBatch(Iterable)}; LDB-3001 if the reader
   *     fails (nothing pushed)
   */
  public void pushBatch(ArrowReader reader) {
    VectorSchemaRoot root;
    Schema schema;
    BufferAllocator allocator;
    try {
      root = reader.getVectorSchemaRoot();
      schema = root.getSchema();
      allocator = allocatorOf(root);
    } catch (java.io.IOException e) {
      throw readerFailed(e);
    }
    VectorSchemaRoot loaded = root;
    pushExported(
        schema,
        allocator,
        export -> {
          while (reader.loadNextBatch()) {
            if (!loaded.getSchema().equals(schema)) {
              throw LaminarException.misuse(
                  "pushBatch into " + state.label + ": the reader's schema changed");
            }
            export.accept(loaded);
          }
        });
  }

  private LaminarException readerFailed(java.io.IOException e) {
    LaminarException error =
        new LaminarException(
            3001,
            "LDB-3001: pushBatch into " + state.label + ": the input ArrowReader failed: " + e,
            0,
            0,
            name,
            "");
    error.initCause(e);
    return error;
  }

  /**
   * The body of pushBatch: the exported arrays handed to laminar_source_push_batch_timeout
   * in wait slices of {@link #WAIT_SLICE_MS} (a run that fits the queue waits for room
   * for all of it; a longer one goes in a queue's capacity at a time), so an interrupt or
   * a close() on another thread ends the wait. Arrays the core took have release NULL
   * afterwards.
   */
  private void pushRuns(long p, List<ArrowArray> arrays, long schema) {
    int n = arrays.size();
    int done = 0;
    while (done < n) {
      long[] addresses = new long[n - done];
      for (int i = done; i < n; i++) {
        addresses[i - done] = arrays.get(i).memoryAddress();
      }
      try {
        done += (int) Native.sourcePushBatchTimeout(p, addresses, schema, WAIT_SLICE_MS);
      } catch (LaminarException e) {
        while (done < n && arrays.get(done).snapshot().release == 0) {
          done++; // taken by the core before it failed
        }
        if (done == 0) {
          throw e;
        }
        LaminarException counted =
            new LaminarException(
                e.number(),
                e.getMessage() + " (the first " + done + " batches of this call were ingested)",
                e.line(),
                e.column(),
                e.objectName(),
                e.columnName());
        counted.initCause(e);
        throw counted;
      }
      if (done < n) { // the slice ended without room
        checkWait(
            done == 0
                ? "nothing of this pushBatch call was ingested"
                : "the first " + done + " batches of this pushBatch call were ingested");
      }
    }
  }

  /**
   * After a wait slice that found no room: LDB-3009 if the thread was interrupted;
   * LDB-9002 if this source or its database is being closed on another thread (close()
   * waits for calls in flight, so a wait that went on would keep it waiting for good).
   * {@code what} says what of the call went in.
   */
  private void checkWait(String what) {
    if (Thread.currentThread().isInterrupted()) {
      throw interrupted(what);
    }
    if (state.closing || state.db.closing) {
      throw LaminarException.misuse(
          state.label
              + (state.closing ? " is" : "'s database is")
              + " being closed on another thread while this call waited for room in its"
              + " queue; "
              + what);
    }
  }

  /**
   * Whether the source's queue has room for {@code n} more messages now (a push or a
   * watermark takes one; {@link #pushBatch} one per batch). A snapshot: other producers
   * may take the room, the runtime makes more.
   *
   * @param n messages, at least 0
   * @return true when at least {@code n} slots are free
   * @throws LaminarException LDB-9002 if n is negative or the source is closed
   */
  public boolean hasCapacity(long n) {
    if (n < 0) {
      throw LaminarException.misuse("hasCapacity: n must be >= 0, got " + n);
    }
    state.db.lock.readLock().lock();
    try {
      synchronized (state) {
        return Native.sourceHasCapacity(state.require(), n);
      }
    } finally {
      state.db.lock.readLock().unlock();
    }
  }

  /** Whether the queue has room for one more push: {@code hasCapacity(1)}. */
  public boolean hasCapacity() {
    return hasCapacity(1);
  }

  /**
   * Advance the source's watermark to {@code watermarkMs} (epoch milliseconds); lower
   * values are ignored; {@code Long.MAX_VALUE} closes every open window. Waits for room
   * in a full queue as {@link #push(VectorSchemaRoot)} does (in slices; an interrupt ends
   * the wait with LDB-3009, the watermark not sent).
   */
  public void watermark(long watermarkMs) {
    state.db.lock.readLock().lock();
    try {
      synchronized (state) {
        long p = state.require();
        while (!Native.sourceWatermarkTimeout(p, watermarkMs, WAIT_SLICE_MS)) {
          checkWait("the watermark was not sent (send it again)");
        }
      }
    } finally {
      state.db.lock.readLock().unlock();
    }
  }

  /**
   * Declare the source idle ({@code true}) or active again ({@code false}), as Flink's
   * idleness: an idle source holds back the watermark of no stream reading it (a UNION ALL
   * follows the least watermark of its active inputs; none moves it while all are idle).
   * Queued after the pushes made before it; the next push or watermark makes the source
   * active again, its rows behind the watermark reached meanwhile being late. {@code
   * CREATE SOURCE ... WITH (idle_timeout = '5 s')} does it after that long without data.
   * Not logged or checkpointed: a reopened database starts with every source active.
   */
  public void setIdle(boolean idle) {
    state.db.lock.readLock().lock();
    try {
      synchronized (state) {
        Native.sourceSetIdle(state.require(), idle);
      }
    } finally {
      state.db.lock.readLock().unlock();
    }
  }

  /**
   * Another producer handle on the same source, for another thread: the source turns
   * from single- to multi-producer on its first clone, keeping what is queued; each
   * handle's batches keep their order. Close every clone (closing this one does not
   * close its clones; closing the database closes them all).
   *
   * @throws LaminarException LDB-9002 (this source is closed)
   */
  @Override
  public Source clone() {
    state.db.lock.readLock().lock();
    try {
      synchronized (state) {
        return new Source(state.db, Native.sourceClone(state.require()), name);
      }
    } finally {
      state.db.lock.readLock().unlock();
    }
  }

  /** True once this source (or its database) was closed. */
  public boolean isClosed() {
    return state.isClosed();
  }

  /** Close the producer handle; what it pushed is still processed. Idempotent. */
  @Override
  public void close() {
    Callbacks.refuseInside(); // else the Cleaner would drop the handle unclosed
    cleanable.clean();
  }
}

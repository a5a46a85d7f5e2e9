package org.laminardb;

import java.lang.ref.Cleaner;
import org.apache.arrow.c.ArrowArray;
import org.apache.arrow.c.ArrowSchema;
import org.apache.arrow.c.Data;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
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

  /**
   * Longest single wait for room in a full queue inside the core, in milliseconds: a
   * blocked push or watermark checks for {@link Thread#interrupt()} this often.
   */
  static final long WAIT_SLICE_MS = 100;

  /**
   * Push through the core in slices of {@link #WAIT_SLICE_MS}: never an unbounded wait.
   * An interrupt seen between two slices ends the push with nothing ingested (a slice
   * that timed out took nothing) and the array still the caller's.
   */
  private void pushSliced(long p, long arrayAddress, long schemaAddress) {
    while (!Native.sourcePushTimeout(p, arrayAddress, schemaAddress, WAIT_SLICE_MS)) {
      if (Thread.interrupted()) {
        throw LaminarException.interrupted("source '" + name + "': push");
      }
    }
  }

  Source(NativeState.Db db, long pointer, String name) {
    this.name = name;
    this.state = new State(db, pointer, name);
    db.children.add(state);
    this.cleanable = NativeState.CLEANER.register(this, state);
  }

  /**
   * Push one batch: the root's columns are matched to the source's by name (any order).
   * A rejected batch ingests nothing; what was pushed before stays.
   *
   * @param root the batch (not modified; its vectors need a common allocator)
   * @throws LaminarException LDB-3003 (columns do not match), LDB-3004 (a column of the
   *     wrong type), LDB-3005 (NULL in a NOT NULL column), LDB-3001 (invalid data),
   *     LDB-9002 (the source is closed), LDB-3009 ({@link Thread#interrupt()} while the
   *     push waited for room in a full queue: nothing ingested, the interrupt status set
   *     again, an {@link InterruptedException} as the cause)
   */
  public void push(VectorSchemaRoot root) {
    if (root.getFieldVectors().isEmpty()) {
      throw LaminarException.misuse("cannot push a VectorSchemaRoot without columns");
    }
    BufferAllocator allocator = root.getVector(0).getAllocator();
    state.db.lock.readLock().lock();
    try {
      synchronized (state) {
        long p = state.require();
        ArrowSchema schema = state.schemaFor(root.getSchema(), allocator);
        try (ArrowArray array = ArrowArray.allocateNew(allocator)) {
          Data.exportVectorSchemaRoot(allocator, root, null, array);
          try {
            pushSliced(p, array.memoryAddress(), schema.memoryAddress());
          } catch (RuntimeException e) {
            array.release(); // rejected: the export is still ours
            throw e;
          }
        }
      }
    } finally {
      state.db.lock.readLock().unlock();
    }
  }

  /**
   * Push one batch given as Arrow C Data Interface structs (as {@code
   * laminar_source_push}): a struct array whose children are the source's columns.
   *
   * @param arrowArrayAddress address of a {@code struct ArrowArray}: moved into the core
   *     on success (its release becomes NULL); on failure untouched, still the caller's
   * @param arrowSchemaAddress address of its {@code struct ArrowSchema}: borrowed
   * @throws LaminarException as {@link #push(VectorSchemaRoot)}; after an interrupt
   *     (LDB-3009) the array is untouched and still the caller's
   */
  public void push(long arrowArrayAddress, long arrowSchemaAddress) {
    if (arrowArrayAddress == 0 || arrowSchemaAddress == 0) {
      throw LaminarException.misuse("null ArrowArray or ArrowSchema address");
    }
    state.db.lock.readLock().lock();
    try {
      synchronized (state) {
        pushSliced(state.require(), arrowArrayAddress, arrowSchemaAddress);
      }
    } finally {
      state.db.lock.readLock().unlock();
    }
  }

  /**
   * Advance the source's watermark to {@code watermarkMs} (epoch milliseconds); lower
   * values are ignored; {@code Long.MAX_VALUE} closes every open window.
   *
   * @throws LaminarException LDB-3009 when {@link Thread#interrupt()} ends a wait for room
   *     in a full queue (the watermark was not queued: send it again), LDB-9002 (closed)
   */
  public void watermark(long watermarkMs) {
    state.db.lock.readLock().lock();
    try {
      synchronized (state) {
        long p = state.require();
        while (!Native.sourceWatermarkTimeout(p, watermarkMs, WAIT_SLICE_MS)) {
          if (Thread.interrupted()) {
            throw LaminarException.interrupted("source '" + name + "': watermark");
          }
        }
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
    cleanable.clean();
  }
}

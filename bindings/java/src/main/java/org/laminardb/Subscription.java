package org.laminardb;

import java.lang.ref.Cleaner;
import java.time.Duration;
import java.util.Iterator;
import java.util.NoSuchElementException;
import org.apache.arrow.c.ArrowArray;
import org.apache.arrow.c.Data;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * One consumer's queue of a stream's result batches. Get one with {@link
 * LaminarDB#subscribe(String, BufferAllocator)}; close it (or its database).
 *
 * <p>Each batch is a new {@link VectorSchemaRoot} in the subscription's allocator,
 * imported zero-copy through Arrow Java's C Data module: the caller owns it and must
 * close it. Iterating waits for batches and ends when the stream is dropped or the
 * database closed; {@link #poll(Duration)} waits at most a given time.
 *
 * <p>Waits are cut into slices of at most 100 ms, so closing the subscription or the
 * database from another thread takes effect promptly, and so does {@link
 * Thread#interrupt()}: it ends a wait as a timeout would ({@link #poll} returns null,
 * iteration ends), leaving the thread's interrupt status set. Thread-safety: any thread; calls
 * are serialized (one consumer at a time).
 */
public final class Subscription implements AutoCloseable, Iterable<VectorSchemaRoot> {
  /** The longest single wait inside the core, in milliseconds. */
  static final long WAIT_SLICE_MS = 100;

  private final State state;
  private final Cleaner.Cleanable cleanable;
  private final Schema schema;
  private final BufferAllocator allocator;
  private final String name;

  private static final class State extends NativeState.Child {
    State(NativeState.Db db, long pointer, String name) {
      super(db, pointer, "subscription '" + name + "'");
    }

    @Override
    void freeNative(long p) {
      Native.subscriptionClose(p);
    }
  }

  /** What one wait slice gave. */
  private enum Step {
    BATCH,
    NONE,
    ENDED,
    CLOSED
  }

  Subscription(
      NativeState.Db db, long pointer, String name, Schema schema, BufferAllocator allocator) {
    this.state = new State(db, pointer, name);
    this.schema = schema;
    this.allocator = allocator;
    this.name = name;
    db.children.add(state);
    this.cleanable = NativeState.CLEANER.register(this, state);
  }

  /** The schema of every batch. */
  public Schema schema() {
    return schema;
  }

  /**
   * One laminar_subscription_next call of up to {@code sliceMs}. On BATCH, out[0] holds
   * the imported root. A closed handle throws on the first slice and gives CLOSED after.
   */
  private Step step(long sliceMs, boolean first, VectorSchemaRoot[] out) {
    state.db.lock.readLock().lock();
    try {
      synchronized (state) {
        if (state.isClosed() && !first) {
          return Step.CLOSED;
        }
        long p = state.require();
        ArrowArray array = ArrowArray.allocateNew(allocator);
        int got;
        try {
          got = Native.subscriptionNext(p, sliceMs, array.memoryAddress());
        } catch (RuntimeException e) {
          array.close();
          throw e;
        }
        if (got <= 0) {
          array.close();
          return got == 0 ? Step.NONE : Step.ENDED;
        }
        VectorSchemaRoot root = VectorSchemaRoot.create(schema, allocator);
        try {
          Data.importIntoVectorSchemaRoot(allocator, array, root, null); // closes `array`
        } catch (RuntimeException e) {
          root.close();
          throw e;
        }
        out[0] = root;
        return Step.BATCH;
      }
    } finally {
      state.db.lock.readLock().unlock();
    }
  }

  /** Wait up to timeoutMs (negative: forever) in slices. */
  private Step await(long timeoutMs, VectorSchemaRoot[] out) {
    long deadline = timeoutMs < 0 ? 0 : System.nanoTime() + timeoutMs * 1_000_000L;
    boolean first = true;
    while (true) {
      long slice = WAIT_SLICE_MS;
      if (timeoutMs >= 0) {
        long remaining = (deadline - System.nanoTime() + 999_999L) / 1_000_000L;
        slice = Math.min(WAIT_SLICE_MS, Math.max(0, remaining));
      }
      Step step = step(slice, first, out);
      first = false;
      if (step != Step.NONE) {
        return step;
      }
      if (timeoutMs >= 0 && System.nanoTime() - deadline >= 0) {
        return Step.NONE;
      }
      if (Thread.currentThread().isInterrupted()) {
        return Step.NONE; // as a timeout; the interrupt status stays set
      }
    }
  }

  /**
   * Take the next batch, waiting up to {@code timeout} ({@link Duration#ZERO}: do not
   * wait).
   *
   * @return the batch (the caller closes it), or null if none came in time (or the
   *     subscription was closed from another thread meanwhile)
   * @throws LaminarException LDB-4001 once the stream was dropped or the database
   *     closed and no batch remains; LDB-9002 if the subscription is closed
   */
  public VectorSchemaRoot poll(Duration timeout) {
    if (timeout.isNegative()) {
      throw new IllegalArgumentException("timeout must not be negative: " + timeout);
    }
    VectorSchemaRoot[] out = new VectorSchemaRoot[1];
    long ms;
    try {
      ms = timeout.toMillis();
    } catch (ArithmeticException e) {
      ms = -1; // longer than a long of ms: forever
    }
    Step step = await(ms, out);
    if (step == Step.ENDED) {
      throw new LaminarException(
          LaminarException.SUBSCRIPTION_CLOSED,
          "LDB-4001: " + state.label + " ended: its stream was dropped or the database closed",
          0, 0, "", "");
    }
    return out[0];
  }

  /**
   * The batches, waiting for each; iteration ends when the stream is dropped, the
   * database closed or the subscription closed. Each batch is the caller's to close.
   */
  @Override
  public Iterator<VectorSchemaRoot> iterator() {
    return new Iterator<VectorSchemaRoot>() {
      private VectorSchemaRoot next;
      private boolean done;

      @Override
      public boolean hasNext() {
        if (next == null && !done) {
          VectorSchemaRoot[] out = new VectorSchemaRoot[1];
          if (await(-1, out) == Step.BATCH) {
            next = out[0];
          } else {
            done = true;
          }
        }
        return next != null;
      }

      @Override
      public VectorSchemaRoot next() {
        if (!hasNext()) {
          throw new NoSuchElementException();
        }
        VectorSchemaRoot r = next;
        next = null;
        return r;
      }
    };
  }

  /**
   * This subscription's rows as instances of {@code type} (a record or a POJO), its
   * properties filled from the columns of the same name. The view reads this
   * subscription: closing either closes both.
   *
   * @throws LaminarException LDB-1003 if a property has no column, LDB-2001 if a
   *     column's type does not fit its property
   */
  public <T> TypedSubscription<T> as(Class<T> type) {
    return new TypedSubscription<>(
        this, RowMapper.forRead(type, schema, "stream '" + name + "'", name));
  }

  /** True once this subscription (or its database) was closed. */
  public boolean isClosed() {
    return state.isClosed();
  }

  /** Close the subscription and drop its queued batches. Idempotent. */
  @Override
  public void close() {
    Callbacks.refuseInside(); // else the Cleaner would drop the handle unclosed
    cleanable.clean();
  }
}

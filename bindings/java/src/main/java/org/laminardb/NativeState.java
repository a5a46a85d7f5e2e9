package org.laminardb;

import java.lang.ref.Cleaner;
import java.util.Set;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * The lifetime machinery behind every handle class: the C pointer, the locks, and the
 * {@link Cleaner} action that frees it if the user forgets to close.
 *
 * <p>DESIGN. laminar.h lets distinct handles be used from different threads at once,
 * one thread at a time per handle, and forbids any call while {@code laminar_close}
 * runs. So each database has a read-write lock: every call on the database or one of
 * its sources or subscriptions holds the read lock, {@code close} of the database takes
 * the write lock (waiting for calls in flight, at most one 100 ms wait slice of a
 * subscription). Each child handle's monitor makes its calls one at a time. Lock order:
 * the database's lock, then the child's monitor. A closed handle has pointer 0 and every
 * call on it throws LDB-9002 instead of touching freed memory.
 *
 * <p>A database's state also owns the Arrow allocator of its typed sources and
 * subscriptions (their rows never reach the user as Arrow memory); it is closed after
 * {@code laminar_close}, once the core has released every buffer it was handed.
 *
 * <p>The state objects never point back at the public wrapper, so an unreachable
 * wrapper can be cleaned; a database's state keeps its open children's states and
 * closes them before {@code laminar_close} (which would otherwise free them under the
 * children's feet).
 */
final class NativeState {
  static final Cleaner CLEANER = Cleaner.create();

  private NativeState() {}

  /** The state of one database handle. */
  static final class Db implements Runnable {
    final DbLock lock = new DbLock();
    final Set<Child> children = ConcurrentHashMap.newKeySet();
    /** True between a successful start() and stop() made through this binding. */
    volatile boolean started;
    /**
     * Set when close() begins: a push waiting for room (in slices, holding the read
     * lock) gives up at its next slice instead of keeping close() waiting.
     */
    volatile boolean closing;
    private long pointer;
    private BufferAllocator allocator; // typed sources and subscriptions; closed last

    Db(long pointer) {
      this.pointer = pointer;
    }

    /** The pointer; call with the read or write lock held. Throws LDB-9002 if closed. */
    long require() {
      if (pointer == 0) {
        throw LaminarException.misuse("database is closed");
      }
      return pointer;
    }

    /**
     * The database's own allocator, for typed sources and subscriptions (their Arrow
     * memory never reaches the user); call with the read lock held. Closed after the
     * core, once the core has released every buffer it was handed.
     */
    synchronized BufferAllocator allocator() {
      require();
      if (allocator == null) {
        allocator = new RootAllocator();
      }
      return allocator;
    }

    boolean isClosed() {
      lock.readLock().lock();
      try {
        return pointer == 0;
      } finally {
        lock.readLock().unlock();
      }
    }

    /** Close the children, then the database; idempotent (close() and the Cleaner). */
    @Override
    public void run() {
      closing = true;
      lock.writeLock().lock();
      try {
        if (pointer == 0) {
          return;
        }
        for (Child child : children) {
          child.free();
        }
        children.clear();
        long p = pointer;
        pointer = 0;
        started = false;
        try {
          Native.close(p);
        } finally {
          synchronized (this) {
            if (allocator != null) {
              allocator.close(); // throws if Arrow memory leaked: a bug of the binding
              allocator = null;
            }
          }
        }
      } finally {
        lock.writeLock().unlock();
      }
    }
  }

  /**
   * A database's lock that refuses to be taken (LDB-9002) by a thread inside a
   * user-defined function's callback: the engine runs the callback in the middle of a
   * batch, holding its own locks (and, in runUntilIdle, this lock's read side), so a
   * call back into the database could only deadlock.
   */
  static final class DbLock extends ReentrantReadWriteLock {
    private static final long serialVersionUID = 1L;
    private final Read read = new Read(this);
    private final Write write = new Write(this);

    @Override
    public ReentrantReadWriteLock.ReadLock readLock() {
      return read;
    }

    @Override
    public ReentrantReadWriteLock.WriteLock writeLock() {
      return write;
    }

    /** The read side, checked. */
    static final class Read extends ReentrantReadWriteLock.ReadLock {
      private static final long serialVersionUID = 1L;

      Read(ReentrantReadWriteLock lock) {
        super(lock);
      }

      @Override
      public void lock() {
        Callbacks.refuseInside();
        super.lock();
      }
    }

    /** The write side (close), checked. */
    static final class Write extends ReentrantReadWriteLock.WriteLock {
      private static final long serialVersionUID = 1L;

      Write(ReentrantReadWriteLock lock) {
        super(lock);
      }

      @Override
      public void lock() {
        Callbacks.refuseInside();
        super.lock();
      }
    }
  }

  /** The state of a source or subscription handle. */
  abstract static class Child implements Runnable {
    final Db db;
    final String label;
    private long pointer;
    /** Set when close() begins (as Db.closing, for this handle's waits). */
    volatile boolean closing;

    Child(Db db, long pointer, String label) {
      this.db = db;
      this.pointer = pointer;
      this.label = label;
    }

    /** The pointer; call with db's read lock and this monitor held. Throws if closed. */
    final long require() {
      if (pointer == 0) {
        throw LaminarException.misuse(label + " is closed");
      }
      return pointer;
    }

    final synchronized boolean isClosed() {
      return pointer == 0;
    }

    /** Free the C handle and what the Java side holds for it; a no-op once done. */
    final synchronized void free() {
      if (pointer != 0) {
        long p = pointer;
        pointer = 0;
        freeNative(p);
      }
      freeJava();
    }

    /** Free the C handle (called once). */
    abstract void freeNative(long p);

    /** Free Java-side resources (Arrow structs); may be called more than once. */
    void freeJava() {}

    /** Close: under db's read lock (the db may be closing: then it frees us). */
    @Override
    public final void run() {
      closing = true;
      db.lock.readLock().lock();
      try {
        free();
        db.children.remove(this);
      } finally {
        db.lock.readLock().unlock();
      }
    }
  }
}

package org.laminardb;

import java.util.Collections;
import java.util.List;
import org.apache.arrow.vector.VectorSchemaRoot;

/**
 * A producer handle that pushes Java objects: each is a row of the source, its
 * properties mapped to the source's columns by name (records and POJOs; the types are
 * listed in docs/JAVA.md, "Typed rows"). Get one with {@link LaminarDB#source(String,
 * Class)}; close it (or its database).
 *
 * <pre>{@code
 * record Trade(String symbol, double price, long volume, long ts) {}
 * try (TypedSource<Trade> trades = db.source("trades", Trade.class)) {
 *   trades.push(List.of(new Trade("AAPL", 10.0, 100, 1000)));
 * }
 * }</pre>
 *
 * <p>The class is checked against the source's schema when the handle opens: a column
 * without a property, or a property without a column, is LDB-3003; a property whose
 * Java type does not fit its column is LDB-3004 (each naming the column and property).
 * Rows are built in the database's own Arrow allocator, pushed zero-copy and freed by
 * the engine; nothing needs closing but the handle. Thread-safety: as {@link Source}.
 *
 * @param <T> the row class
 */
public final class TypedSource<T> implements AutoCloseable {
  private final Source source;
  private final RowMapper<T> mapper;
  private final NativeState.Db db;

  TypedSource(Source source, RowMapper<T> mapper, NativeState.Db db) {
    this.source = source;
    this.mapper = mapper;
    this.db = db;
  }

  /**
   * Push {@code rows} as one batch (waits for room as {@link Source#push} does).
   *
   * @param rows the rows, in order; none null
   * @throws LaminarException as {@link Source#push(VectorSchemaRoot)}: LDB-3005 for a
   *     null property of a NOT NULL column (nothing ingested)
   */
  public void push(List<? extends T> rows) {
    if (rows.isEmpty()) {
      return;
    }
    try (VectorSchemaRoot root = build(rows)) {
      source.push(root);
    }
  }

  /** Push one row: {@code push(List.of(row))}. */
  public void push(T row) {
    push(Collections.singletonList(row));
  }

  /**
   * Push {@code rows} as one batch without waiting for room, as {@link
   * Source#tryPush(VectorSchemaRoot)}.
   *
   * @return true if taken, false if the queue was full (nothing ingested)
   */
  public boolean tryPush(List<? extends T> rows) {
    if (rows.isEmpty()) {
      return true;
    }
    try (VectorSchemaRoot root = build(rows)) {
      return source.tryPush(root);
    }
  }

  /** A root of the rows in the database's allocator (the caller closes it). */
  private VectorSchemaRoot build(List<? extends T> rows) {
    db.lock.readLock().lock();
    try {
      return mapper.write(rows, db.allocator());
    } finally {
      db.lock.readLock().unlock();
    }
  }

  /** As {@link Source#watermark(long)}. */
  public void watermark(long watermarkMs) {
    source.watermark(watermarkMs);
  }

  /** As {@link Source#setIdle(boolean)}. */
  public void setIdle(boolean idle) {
    source.setIdle(idle);
  }

  /** As {@link Source#hasCapacity(long)}. */
  public boolean hasCapacity(long n) {
    return source.hasCapacity(n);
  }

  /** The untyped handle underneath (Arrow pushes, {@link Source#clone()}). */
  public Source source() {
    return source;
  }

  /** True once this handle (or its database) was closed. */
  public boolean isClosed() {
    return source.isClosed();
  }

  /** Close the handle; what it pushed is still processed. Idempotent. */
  @Override
  public void close() {
    source.close();
  }
}

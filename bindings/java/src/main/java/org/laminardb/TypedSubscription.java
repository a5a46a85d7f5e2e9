package org.laminardb;

import java.time.Duration;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import org.apache.arrow.vector.VectorSchemaRoot;

/**
 * A subscription that hands out result rows as Java objects: records or POJOs whose
 * properties are filled from the stream's columns of the same name (other columns are
 * ignored). Get one with {@link LaminarDB#subscribe(String, Class)} or {@link
 * Subscription#as(Class)}.
 *
 * <p>The class is checked against the stream's schema when the view is made: a
 * property without a column is LDB-1003, a column type the property cannot hold
 * LDB-2001 (naming both); a NULL met by a primitive property is LDB-2001 when it
 * comes. Waits behave as {@link Subscription}'s. Thread-safety: as {@link Subscription}.
 *
 * @param <T> the row class
 */
public final class TypedSubscription<T> implements AutoCloseable, Iterable<T> {
  private final Subscription subscription;
  private final RowMapper<T> mapper;

  TypedSubscription(Subscription subscription, RowMapper<T> mapper) {
    this.subscription = subscription;
    this.mapper = mapper;
  }

  /**
   * The rows of the next result batch, waiting up to {@code timeout}.
   *
   * @return the rows; empty only if no batch came in time (batches without rows are
   *     skipped)
   * @throws LaminarException as {@link Subscription#poll(Duration)}
   */
  public List<T> poll(Duration timeout) {
    VectorSchemaRoot batch = subscription.poll(timeout);
    while (batch != null && batch.getRowCount() == 0) {
      batch.close();
      batch = subscription.poll(Duration.ZERO);
    }
    if (batch == null) {
      return Collections.emptyList();
    }
    try (VectorSchemaRoot rows = batch) {
      return mapper.read(rows);
    }
  }

  /**
   * The rows, batch after batch, waiting for each; ends as {@link
   * Subscription#iterator()} does.
   */
  @Override
  public Iterator<T> iterator() {
    Iterator<VectorSchemaRoot> batches = subscription.iterator();
    return new Iterator<T>() {
      private Iterator<T> rows = Collections.emptyIterator();

      @Override
      public boolean hasNext() {
        while (!rows.hasNext() && batches.hasNext()) {
          try (VectorSchemaRoot batch = batches.next()) {
            rows = mapper.read(batch).iterator();
          }
        }
        return rows.hasNext();
      }

      @Override
      public T next() {
        if (!hasNext()) {
          throw new NoSuchElementException();
        }
        return rows.next();
      }
    };
  }

  /** The untyped subscription underneath. */
  public Subscription subscription() {
    return subscription;
  }

  /** True once the subscription (or its database) was closed. */
  public boolean isClosed() {
    return subscription.isClosed();
  }

  /** Close the subscription underneath. Idempotent. */
  @Override
  public void close() {
    subscription.close();
  }
}

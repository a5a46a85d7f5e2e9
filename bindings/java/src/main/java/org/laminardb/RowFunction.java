package org.laminardb;

/**
 * A scalar function for SQL written one row at a time ({@link
 * LaminarDB#createRowFunction}): the binding calls it for every row of a chunk with the
 * row's argument values as Java objects and builds the result vector from what it
 * returns. Slower than a {@link VectorFunction} (one call and boxing per row), simpler
 * to write.
 *
 * <pre>{@code
 * db.createRowFunction("greet", args -> "hello " + args[0], List.of("VARCHAR"), "VARCHAR");
 * }</pre>
 *
 * <p>Java types by SQL type, for arguments and results: BOOLEAN {@code Boolean}, INT
 * {@code Integer}, BIGINT {@code Long}, DOUBLE {@code Double}, VARCHAR {@code String},
 * TIMESTAMP {@code java.time.Instant}, DATE {@code java.time.LocalDate}, DECIMAL(p, s)
 * {@code java.math.BigDecimal} (a result is put at scale s exactly: one with more
 * fractional digits or more than p digits is LDB-3011, never rounded); NULL is {@code
 * null}. A result may be any {@code Number} for a numeric type (converted as Java's
 * {@code longValue()} / {@code intValue()} / {@code doubleValue()} do); another type is
 * an error (LDB-3010 naming the function).
 */
@FunctionalInterface
public interface RowFunction {
  /**
   * Compute one row.
   *
   * @param args the row's argument values, one per declared parameter
   * @return the row's result, {@code null} for NULL
   * @throws Exception anything: the stream's batch fails with LDB-3010
   */
  Object apply(Object... args) throws Exception;
}

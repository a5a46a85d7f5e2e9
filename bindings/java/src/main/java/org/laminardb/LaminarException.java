package org.laminardb;

import java.nio.charset.StandardCharsets;

/**
 * An error reported by LaminarDB: the core's stable code ({@code "LDB-1001"}) and its
 * message, which names the object, the column and, for SQL, the line:column.
 *
 * <p>Unchecked, like {@code java.sql.SQLException}'s modern wrappers: a failed call
 * leaves the database as it was, so most callers let it propagate. The code's
 * thousands digit is the area: 1 SQL, 2 schema/type, 3 ingest, 4 subscription,
 * 5 storage, 6 config, 9 internal or misuse (LDB-9002: a closed or foreign handle).
 */
public class LaminarException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** LDB-9002: a closed handle or a bad argument. */
  public static final int MISUSE = 9002;
  /** LDB-1003: no column of that name (a typed subscription's property). */
  public static final int UNKNOWN_COLUMN = 1003;
  /** LDB-2001: a column's type does not fit (a typed subscription's property). */
  public static final int TYPE_MISMATCH = 2001;
  /** LDB-2002: a type name the engine does not know (a function's parameter or result). */
  public static final int UNKNOWN_TYPE = 2002;
  /** LDB-3010: a user-defined function threw (the stream's batch is not applied). */
  public static final int FUNCTION_FAILED = 3010;
  /** LDB-3011: a user-defined function's result has the wrong type, length or layout. */
  public static final int FUNCTION_RESULT = 3011;
  /** LDB-3003: columns do not match the source's (a typed source's class). */
  public static final int SCHEMA_MISMATCH = 3003;
  /** LDB-3004: a column has the wrong type (a typed source's property). */
  public static final int COLUMN_TYPE = 3004;
  /** LDB-3006: the source's queue is full (reject policy, or nothing drains it). */
  public static final int QUEUE_FULL = 3006;
  /** LDB-3009: no room in the source's queue in time, or the wait was interrupted. */
  public static final int PUSH_TIMEOUT = 3009;
  /** LDB-6002: an option's value is not valid (a Spark stage's Java function spec). */
  public static final int BAD_CONFIG_VALUE = 6002;
  /** LDB-4001: the subscription's stream was dropped or its database closed. */
  public static final int SUBSCRIPTION_CLOSED = 4001;

  private final int number;
  private final int line;
  private final int column;
  private final String objectName;
  private final String columnName;

  /**
   * An exception with the given detail.
   *
   * @param number the LDB number (e.g. 1001)
   * @param message the message, starting with "LDB-NNNN: "
   * @param line 1-based SQL line, 0 when not SQL
   * @param column 1-based SQL column, 0 when not SQL
   * @param objectName the source or stream named, "" when none
   * @param columnName the column named, "" when none
   */
  public LaminarException(
      int number, String message, int line, int column, String objectName, String columnName) {
    super(message);
    this.number = number;
    this.line = line;
    this.column = column;
    this.objectName = objectName;
    this.columnName = columnName;
  }

  /** Called by the JNI library with the core's laminar_error (text as UTF-8 bytes). */
  static LaminarException fromNative(
      int number, byte[] message, int line, int column, byte[] objectName, byte[] columnName) {
    return new LaminarException(
        number,
        new String(message, StandardCharsets.UTF_8),
        line,
        column,
        new String(objectName, StandardCharsets.UTF_8),
        new String(columnName, StandardCharsets.UTF_8));
  }

  /** LDB-9002 for misuse detected on the Java side (a closed handle, a bad argument). */
  static LaminarException misuse(String what) {
    return new LaminarException(MISUSE, String.format("LDB-%04d: %s", MISUSE, what), 0, 0, "", "");
  }

  /** An exception with {@code number} and the text after "LDB-NNNN: ". */
  static LaminarException of(int number, String what) {
    return new LaminarException(number, String.format("LDB-%04d: %s", number, what), 0, 0, "", "");
  }

  /** The stable code, {@code "LDB-NNNN"}. */
  public String code() {
    return String.format("LDB-%04d", number);
  }

  /** The code's number (1001 for LDB-1001). */
  public int number() {
    return number;
  }

  /** The 1-based line of the SQL text the error points at, 0 when not SQL. */
  public int line() {
    return line;
  }

  /** The 1-based column of the SQL text the error points at, 0 when not SQL. */
  public int column() {
    return column;
  }

  /** The source or stream the error names, "" when none. */
  public String objectName() {
    return objectName;
  }

  /** The column the error names, "" when none. */
  public String columnName() {
    return columnName;
  }
}

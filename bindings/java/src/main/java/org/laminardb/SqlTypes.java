package org.laminardb;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.arrow.c.ArrowArray;
import org.apache.arrow.c.Data;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.DateDayVector;
import org.apache.arrow.vector.DecimalVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.TimeStampMicroVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.DateUnit;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.TimeUnit;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.util.TransferPair;

/**
 * The SQL types a user-defined function takes and returns: their names, the Arrow
 * format strings of laminar_function_register, the Arrow Java fields, and the Java
 * values of a {@link RowFunction} or an aggregate's result.
 */
final class SqlTypes {
  private SqlTypes() {}

  /** {@code DECIMAL(p, s)} / {@code NUMERIC(p, s)} as an SQL type name. */
  private static final Pattern SQL_DECIMAL =
      Pattern.compile("(?:DECIMAL|NUMERIC)\\s*\\(\\s*(\\d{1,3})\\s*,\\s*(\\d{1,3})\\s*\\)");

  /** The decimal128 format {@code d:p,s} the engine takes a DECIMAL(p, s) in. */
  private static final Pattern FORMAT_DECIMAL = Pattern.compile("d:(\\d+),(\\d+)");

  /** The largest precision of a DECIMAL (decimal128). */
  static final int MAX_PRECISION = 38;

  /** The Arrow format of SQL type {@code name} (BIGINT, DOUBLE, ...); throws LDB-2002. */
  static String format(String name, String what) {
    String type = Text.check(name, what).trim().toUpperCase(Locale.ROOT);
    Matcher dec = SQL_DECIMAL.matcher(type);
    if (dec.matches()) {
      int precision = Integer.parseInt(dec.group(1));
      int scale = Integer.parseInt(dec.group(2));
      if (precision < 1 || precision > MAX_PRECISION || scale > precision) {
        throw LaminarException.of(
            LaminarException.UNKNOWN_TYPE,
            what + ": '" + name + "': DECIMAL(p, s) takes 1 <= p <= 38 and 0 <= s <= p");
      }
      return "d:" + precision + "," + scale;
    }
    switch (type) {
      case "BOOLEAN":
      case "BOOL":
        return "b";
      case "INT":
      case "INTEGER":
      case "INT4":
        return "i";
      case "BIGINT":
      case "INT8":
        return "l";
      case "DOUBLE":
      case "FLOAT8":
        return "g";
      case "VARCHAR":
      case "TEXT":
      case "STRING":
        return "u";
      case "TIMESTAMP":
        return "tsu:";
      case "DATE":
        return "tdD";
      default:
        throw LaminarException.of(
            LaminarException.UNKNOWN_TYPE,
            what
                + ": unknown type '"
                + name
                + "' (BOOLEAN, INT, BIGINT, DOUBLE, VARCHAR, TIMESTAMP, DATE or DECIMAL(p, s))");
    }
  }

  /** The Arrow Java type of format {@code format}. */
  static ArrowType arrowType(String format) {
    Matcher dec = FORMAT_DECIMAL.matcher(format);
    if (dec.matches()) {
      return new ArrowType.Decimal(
          Integer.parseInt(dec.group(1)), Integer.parseInt(dec.group(2)), 128);
    }
    switch (format) {
      case "b":
        return ArrowType.Bool.INSTANCE;
      case "i":
        return new ArrowType.Int(32, true);
      case "l":
        return new ArrowType.Int(64, true);
      case "g":
        return new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE);
      case "u":
        return ArrowType.Utf8.INSTANCE;
      case "tsu:":
        return new ArrowType.Timestamp(TimeUnit.MICROSECOND, null);
      default:
        return new ArrowType.Date(DateUnit.DAY);
    }
  }

  /** A nullable field {@code name} of format {@code format}. */
  static Field field(String name, String format) {
    return new Field(name, FieldType.nullable(arrowType(format)), null);
  }

  /** The argument fields arg0, arg1, ... of the given formats (the core's names). */
  static List<Field> argFields(String[] formats) {
    List<Field> fields = new ArrayList<>(formats.length);
    for (int i = 0; i < formats.length; i++) {
      fields.add(field("arg" + i, formats[i]));
    }
    return fields;
  }

  /** Row {@code i} of {@code v} as the Java value {@link RowFunction} documents. */
  static Object read(FieldVector v, int i) {
    if (v.isNull(i)) {
      return null;
    }
    if (v instanceof VarCharVector) {
      return new String(((VarCharVector) v).get(i), StandardCharsets.UTF_8);
    }
    if (v instanceof TimeStampMicroVector) {
      long us = ((TimeStampMicroVector) v).get(i);
      return Instant.ofEpochSecond(Math.floorDiv(us, 1_000_000L), Math.floorMod(us, 1_000_000L) * 1000L);
    }
    if (v instanceof DateDayVector) {
      return LocalDate.ofEpochDay(((DateDayVector) v).get(i));
    }
    return v.getObject(i); // Boolean, Integer, Long, Double, BigDecimal (DECIMAL)
  }

  /** A new vector of format {@code format} with room for {@code n} rows. */
  static FieldVector allocate(String format, String name, BufferAllocator allocator, int n) {
    FieldVector v = field(name, format).createVector(allocator);
    v.setInitialCapacity(n);
    v.allocateNew();
    return v;
  }

  /** Set row {@code i} of {@code v} (made by {@link #allocate}) to {@code value}. */
  static void write(FieldVector v, int i, Object value) {
    if (value == null) {
      v.setNull(i);
    } else if (v instanceof BigIntVector) {
      ((BigIntVector) v).setSafe(i, number(value, "BIGINT").longValue());
    } else if (v instanceof Float8Vector) {
      ((Float8Vector) v).setSafe(i, number(value, "DOUBLE").doubleValue());
    } else if (v instanceof IntVector) {
      ((IntVector) v).setSafe(i, number(value, "INT").intValue());
    } else if (v instanceof BitVector) {
      ((BitVector) v).setSafe(i, ((Boolean) typed(value, Boolean.class, "BOOLEAN")) ? 1 : 0);
    } else if (v instanceof VarCharVector) {
      ((VarCharVector) v)
          .setSafe(i, ((String) typed(value, String.class, "VARCHAR")).getBytes(StandardCharsets.UTF_8));
    } else if (v instanceof TimeStampMicroVector) {
      ((TimeStampMicroVector) v).setSafe(i, micros(value));
    } else if (v instanceof DecimalVector) {
      DecimalVector d = (DecimalVector) v;
      d.setSafe(i, decimal(value, d.getPrecision(), d.getScale(), i));
    } else {
      ((DateDayVector) v)
          .setSafe(i, (int) ((LocalDate) typed(value, LocalDate.class, "DATE")).toEpochDay());
    }
  }

  /**
   * {@code value} (a {@code BigDecimal}, {@code BigInteger} or integral boxed number) at
   * exactly {@code scale}: a value with more fractional digits, or with more than
   * {@code precision} digits there, is {@link Callbacks.InvalidResult} (LDB-3011), never
   * rounded.
   */
  static BigDecimal decimal(Object value, int precision, int scale, int row) {
    String sql = "DECIMAL(" + precision + "," + scale + ")";
    BigDecimal d;
    if (value instanceof BigDecimal) {
      d = (BigDecimal) value;
    } else if (value instanceof BigInteger) {
      d = new BigDecimal((BigInteger) value);
    } else if (value instanceof Long
        || value instanceof Integer
        || value instanceof Short
        || value instanceof Byte) {
      d = BigDecimal.valueOf(((Number) value).longValue());
    } else {
      throw new ClassCastException(
          "a " + value.getClass().getName() + " for " + sql + " (expects java.math.BigDecimal)");
    }
    BigDecimal exact;
    try {
      exact = d.setScale(scale);
    } catch (ArithmeticException e) {
      throw unfit(d, row, "more than " + scale + " fractional digits", sql + " (never rounded)");
    }
    if (exact.unscaledValue().abs().compareTo(BigInteger.TEN.pow(precision)) >= 0) {
      throw unfit(d, row, "more than " + precision + " digits", sql);
    }
    return exact;
  }

  private static Callbacks.InvalidResult unfit(BigDecimal d, int row, String what, String type) {
    return new Callbacks.InvalidResult(
        "value " + d.toPlainString() + " (row " + row + ") has " + what + ", past its type " + type);
  }

  private static Number number(Object value, String type) {
    return (Number) typed(value, Number.class, type);
  }

  private static Object typed(Object value, Class<?> type, String sql) {
    if (!type.isInstance(value)) {
      throw new ClassCastException(
          "a " + value.getClass().getName() + " for " + sql + " (expects " + type.getName() + ")");
    }
    return value;
  }

  private static long micros(Object value) {
    if (value instanceof LocalDateTime) {
      value = ((LocalDateTime) value).toInstant(ZoneOffset.UTC);
    }
    Instant t = (Instant) typed(value, Instant.class, "TIMESTAMP");
    return Math.addExact(Math.multiplyExact(t.getEpochSecond(), 1_000_000L), t.getNano() / 1000L);
  }

  /**
   * A copy of rows {@code rows} of {@code v} (null: all of them) in {@code allocator}:
   * memory of the binding's own, where {@code v}'s is lent by the engine for a call.
   */
  static FieldVector copy(FieldVector v, BufferAllocator allocator, List<Integer> rows) {
    TransferPair pair = v.getTransferPair(allocator);
    FieldVector to = (FieldVector) pair.getTo();
    int n = rows == null ? v.getValueCount() : rows.size();
    try {
      to.setInitialCapacity(n);
      to.allocateNew();
      for (int k = 0; k < n; k++) {
        pair.copyValueSafe(rows == null ? k : rows.get(k), k);
      }
      to.setValueCount(n);
      return to;
    } catch (RuntimeException e) {
      to.close();
      throw e;
    }
  }

  /**
   * Import the engine's argument struct array at {@code address} into {@code root}
   * (whose vectors are its children, in order), zero-copy: each child is imported
   * directly (a struct vector in between would cost more than many functions' work).
   * The buffers stay the engine's, valid for the call: clear the root before returning.
   */
  static void importArgs(BufferAllocator allocator, long address, VectorSchemaRoot root) {
    ArrowArray.Snapshot args = ArrowArray.wrap(address).snapshot();
    List<FieldVector> vectors = root.getFieldVectors();
    for (int i = 0; i < vectors.size(); i++) {
      long child = Memory.getLong(args.children + 8L * i);
      Data.importIntoVector(allocator, ArrowArray.wrap(child), vectors.get(i), null);
    }
    root.setRowCount((int) args.length);
  }
}

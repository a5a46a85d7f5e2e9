package org.laminardb;

import java.lang.reflect.AccessibleObject;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.TimeStampVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * Maps a Java class to a source's or stream's columns and back: a record (its
 * components) or a POJO (public fields, getters {@code getX()}/{@code isX()} and setters
 * {@code setX(v)}, a no-argument constructor to read into). A property matches the
 * column of the same name, compared case-insensitively and also in snake_case ({@code
 * windowStart} matches {@code window_start}).
 *
 * <p>Java types per SQL type: VARCHAR {@code String}; BIGINT {@code long}/{@code Long}
 * (written from {@code int}, {@code short}, {@code byte} and their boxes too); INT
 * {@code int}/{@code Integer} (read into {@code long} too); DOUBLE {@code
 * double}/{@code Double} (written from any Java number type too); BOOLEAN {@code
 * boolean}/{@code Boolean}; TIMESTAMP {@link Instant}. A boxed property carries NULL;
 * a NULL read into a primitive property is an error.
 *
 * <p>Errors (LaminarException): writing, LDB-3003 when a column has no property or a
 * property no column, LDB-3004 when a property's Java type does not fit its column;
 * reading, LDB-1003 when a property has no column in the stream (the stream's other
 * columns are ignored), LDB-2001 when a column's type does not fit its property or a
 * NULL meets a primitive. Each names the object, the column and the property.
 * Immutable and thread-safe once built.
 */
final class RowMapper<T> {
  /** One column <-> property pair. */
  private static final class Slot {
    final String column;
    final ArrowType arrow;
    final Prop prop;

    Slot(String column, ArrowType arrow, Prop prop) {
      this.column = column;
      this.arrow = arrow;
      this.prop = prop;
    }
  }

  private final Shape<T> shape;
  private final Schema schema;
  private final String object;
  private final List<Slot> slots;

  private RowMapper(Shape<T> shape, Schema schema, String object, List<Slot> slots) {
    this.shape = shape;
    this.schema = schema;
    this.object = object;
    this.slots = slots;
  }

  /**
   * A mapper that writes {@code type}'s instances as rows of {@code schema} (a source's),
   * every column from one property and every readable property into one column.
   *
   * @param object "source 'trades'", for errors
   * @param name the source's name (the exception's objectName)
   */
  static <T> RowMapper<T> forWrite(Class<T> type, Schema schema, String object, String name) {
    Shape<T> shape = Shape.of(type);
    Map<String, Prop> props = shape.readable();
    List<Slot> slots = new ArrayList<>();
    for (org.apache.arrow.vector.types.pojo.Field f : schema.getFields()) {
      Prop prop = take(props, f.getName());
      if (prop == null) {
        throw error(
            LaminarException.SCHEMA_MISMATCH,
            String.format(
                "%s: column '%s' has no property in %s (properties: %s)",
                object, f.getName(), type.getName(), shape.readable().keySet()),
            name,
            f.getName());
      }
      if (!writable(f.getType(), prop.type)) {
        throw error(
            LaminarException.COLUMN_TYPE,
            String.format(
                "%s: column '%s' is %s but %s.%s is %s",
                object, f.getName(), sqlType(f.getType()), type.getSimpleName(), prop.name,
                prop.type.getName()),
            name,
            f.getName());
      }
      slots.add(new Slot(f.getName(), f.getType(), prop));
    }
    if (!props.isEmpty()) {
      Prop extra = props.values().iterator().next();
      throw error(
          LaminarException.SCHEMA_MISMATCH,
          String.format(
              "%s: %s.%s is not a column of it (columns: %s)",
              object, type.getSimpleName(), extra.name, columnNames(schema)),
          name,
          extra.name);
    }
    return new RowMapper<>(shape, schema, object, slots);
  }

  /**
   * A mapper that reads rows of {@code schema} (a stream's) into new instances of
   * {@code type}: every settable property from one column; other columns are ignored.
   */
  static <T> RowMapper<T> forRead(Class<T> type, Schema schema, String object, String name) {
    Shape<T> shape = Shape.of(type);
    List<Slot> slots = new ArrayList<>();
    for (Prop prop : shape.settable()) {
      org.apache.arrow.vector.types.pojo.Field column = null;
      for (org.apache.arrow.vector.types.pojo.Field f : schema.getFields()) {
        if (matches(f.getName(), prop.name) && (column == null || f.getName().equals(prop.name))) {
          column = f;
        }
      }
      if (column == null) {
        throw error(
            LaminarException.UNKNOWN_COLUMN,
            String.format(
                "%s has no column for %s.%s (columns: %s)",
                object, type.getSimpleName(), prop.name, columnNames(schema)),
            name,
            prop.name);
      }
      if (!readable(column.getType(), prop.type)) {
        throw error(
            LaminarException.TYPE_MISMATCH,
            String.format(
                "%s: column '%s' is %s, which %s.%s (%s) cannot hold",
                object, column.getName(), sqlType(column.getType()), type.getSimpleName(),
                prop.name, prop.type.getName()),
            name,
            column.getName());
      }
      slots.add(new Slot(column.getName(), column.getType(), prop));
    }
    return new RowMapper<>(shape, schema, object, slots);
  }

  /** The rows as a new root of the schema in {@code allocator} (the caller closes it). */
  VectorSchemaRoot write(List<? extends T> rows, BufferAllocator allocator) {
    VectorSchemaRoot root = VectorSchemaRoot.create(schema, allocator);
    try {
      root.allocateNew();
      for (int i = 0; i < rows.size(); i++) {
        T row = rows.get(i);
        if (row == null) {
          throw LaminarException.misuse(object + ": row " + i + " is null");
        }
        for (Slot slot : slots) {
          set(root.getVector(slot.column), i, slot.prop.get(row));
        }
      }
      root.setRowCount(rows.size());
      return root;
    } catch (RuntimeException e) {
      root.close();
      throw e;
    }
  }

  /** The rows of {@code root} (of the stream's schema) as new instances. */
  List<T> read(VectorSchemaRoot root) {
    List<T> out = new ArrayList<>(root.getRowCount());
    FieldVector[] vectors = new FieldVector[slots.size()];
    for (int s = 0; s < vectors.length; s++) {
      vectors[s] = root.getVector(slots.get(s).column);
    }
    Object[] values = new Object[slots.size()];
    for (int r = 0; r < root.getRowCount(); r++) {
      for (int s = 0; s < vectors.length; s++) {
        Slot slot = slots.get(s);
        Object value = get(vectors[s], slot.arrow, r, slot.prop.type);
        if (value == null && slot.prop.type.isPrimitive()) {
          throw error(
              LaminarException.TYPE_MISMATCH,
              String.format(
                  "%s: column '%s' is NULL in row %d but %s.%s is a %s (use its box type "
                      + "to read NULLs)",
                  object, slot.column, r, shape.type.getSimpleName(), slot.prop.name,
                  slot.prop.type.getName()),
              "",
              slot.column);
        }
        values[s] = value;
      }
      out.add(shape.make(slots, values));
    }
    return out;
  }

  // -- Arrow values ------------------------------------------------------------------

  private static void set(FieldVector vector, int i, Object value) {
    if (value == null) {
      vector.setNull(i);
    } else if (vector instanceof VarCharVector) {
      ((VarCharVector) vector).setSafe(i, ((String) value).getBytes(StandardCharsets.UTF_8));
    } else if (vector instanceof BigIntVector) {
      ((BigIntVector) vector).setSafe(i, ((Number) value).longValue());
    } else if (vector instanceof IntVector) {
      ((IntVector) vector).setSafe(i, ((Number) value).intValue());
    } else if (vector instanceof Float8Vector) {
      ((Float8Vector) vector).setSafe(i, ((Number) value).doubleValue());
    } else if (vector instanceof BitVector) {
      ((BitVector) vector).setSafe(i, ((Boolean) value) ? 1 : 0);
    } else if (vector instanceof TimeStampVector) {
      TimeUnit unit = unit((ArrowType.Timestamp) vector.getField().getType());
      ((TimeStampVector) vector).setSafe(i, fromInstant((Instant) value, unit));
    } else {
      throw new IllegalStateException("unmapped vector " + vector.getClass()); // forWrite checked
    }
  }

  private static Object get(FieldVector vector, ArrowType arrow, int r, Class<?> want) {
    if (vector.isNull(r)) {
      return null;
    }
    if (arrow instanceof ArrowType.Timestamp) {
      return toInstant(((TimeStampVector) vector).get(r), unit((ArrowType.Timestamp) arrow));
    }
    Object value = vector.getObject(r);
    if (arrow instanceof ArrowType.Utf8 || arrow instanceof ArrowType.LargeUtf8) {
      return value.toString();
    }
    if (value instanceof Integer && (want == long.class || want == Long.class)) {
      return ((Integer) value).longValue();
    }
    return value;
  }

  private static TimeUnit unit(ArrowType.Timestamp t) {
    switch (t.getUnit()) {
      case SECOND:
        return TimeUnit.SECONDS;
      case MILLISECOND:
        return TimeUnit.MILLISECONDS;
      case MICROSECOND:
        return TimeUnit.MICROSECONDS;
      default:
        return TimeUnit.NANOSECONDS;
    }
  }

  private static long fromInstant(Instant t, TimeUnit unit) {
    long seconds = t.getEpochSecond();
    long nanos = t.getNano();
    switch (unit) {
      case SECONDS:
        return seconds;
      case MILLISECONDS:
        return Math.addExact(Math.multiplyExact(seconds, 1000L), nanos / 1_000_000L);
      case MICROSECONDS:
        return Math.addExact(Math.multiplyExact(seconds, 1_000_000L), nanos / 1000L);
      default:
        return Math.addExact(Math.multiplyExact(seconds, 1_000_000_000L), nanos);
    }
  }

  private static Instant toInstant(long value, TimeUnit unit) {
    long perSecond = unit.convert(1, TimeUnit.SECONDS);
    long seconds = Math.floorDiv(value, perSecond);
    long rest = Math.floorMod(value, perSecond);
    return Instant.ofEpochSecond(seconds, TimeUnit.NANOSECONDS.convert(rest, unit));
  }

  // -- types -------------------------------------------------------------------------

  private static boolean isOneOf(Class<?> c, Class<?>... options) {
    for (Class<?> o : options) {
      if (c == o) {
        return true;
      }
    }
    return false;
  }

  private static boolean writable(ArrowType arrow, Class<?> c) {
    if (arrow instanceof ArrowType.Utf8) {
      return c == String.class;
    }
    if (arrow instanceof ArrowType.Int && ((ArrowType.Int) arrow).getBitWidth() == 64) {
      return isOneOf(c, long.class, Long.class, int.class, Integer.class, short.class,
          Short.class, byte.class, Byte.class);
    }
    if (arrow instanceof ArrowType.Int && ((ArrowType.Int) arrow).getBitWidth() == 32) {
      return isOneOf(c, int.class, Integer.class, short.class, Short.class, byte.class,
          Byte.class);
    }
    if (arrow instanceof ArrowType.FloatingPoint) {
      return isOneOf(c, double.class, Double.class, float.class, Float.class, long.class,
          Long.class, int.class, Integer.class, short.class, Short.class, byte.class,
          Byte.class);
    }
    if (arrow instanceof ArrowType.Bool) {
      return c == boolean.class || c == Boolean.class;
    }
    if (arrow instanceof ArrowType.Timestamp) {
      return c == Instant.class;
    }
    return false;
  }

  private static boolean readable(ArrowType arrow, Class<?> c) {
    if (arrow instanceof ArrowType.Utf8 || arrow instanceof ArrowType.LargeUtf8) {
      return c == String.class;
    }
    if (arrow instanceof ArrowType.Int && ((ArrowType.Int) arrow).getBitWidth() == 64) {
      return c == long.class || c == Long.class;
    }
    if (arrow instanceof ArrowType.Int && ((ArrowType.Int) arrow).getBitWidth() == 32) {
      return isOneOf(c, int.class, Integer.class, long.class, Long.class);
    }
    if (arrow instanceof ArrowType.FloatingPoint
        && ((ArrowType.FloatingPoint) arrow).getPrecision()
            == org.apache.arrow.vector.types.FloatingPointPrecision.DOUBLE) {
      return c == double.class || c == Double.class;
    }
    if (arrow instanceof ArrowType.Bool) {
      return c == boolean.class || c == Boolean.class;
    }
    if (arrow instanceof ArrowType.Timestamp) {
      return c == Instant.class;
    }
    return false;
  }

  /** The SQL name of an Arrow type, for messages. */
  private static String sqlType(ArrowType arrow) {
    if (arrow instanceof ArrowType.Utf8 || arrow instanceof ArrowType.LargeUtf8) {
      return "VARCHAR";
    }
    if (arrow instanceof ArrowType.Int) {
      return ((ArrowType.Int) arrow).getBitWidth() == 64 ? "BIGINT" : "INT";
    }
    if (arrow instanceof ArrowType.FloatingPoint) {
      return "DOUBLE";
    }
    if (arrow instanceof ArrowType.Bool) {
      return "BOOLEAN";
    }
    if (arrow instanceof ArrowType.Timestamp) {
      return "TIMESTAMP";
    }
    return arrow.toString();
  }

  private static List<String> columnNames(Schema schema) {
    List<String> names = new ArrayList<>();
    for (org.apache.arrow.vector.types.pojo.Field f : schema.getFields()) {
      names.add(f.getName());
    }
    return names;
  }

  // -- names -------------------------------------------------------------------------

  /** Whether SQL column {@code column} is Java property {@code property}. */
  /** The columns of {@code schema} a readable property of {@code type} maps to, in order. */
  static List<org.apache.arrow.vector.types.pojo.Field> matching(Schema schema, Class<?> type) {
    java.util.Set<String> props = Shape.of(type).readable().keySet();
    List<org.apache.arrow.vector.types.pojo.Field> out = new ArrayList<>();
    for (org.apache.arrow.vector.types.pojo.Field f : schema.getFields()) {
      for (String p : props) {
        if (matches(f.getName(), p)) {
          out.add(f);
          break;
        }
      }
    }
    return out;
  }

  static boolean matches(String column, String property) {
    return column.equalsIgnoreCase(property) || column.equalsIgnoreCase(snake(property));
  }

  private static String snake(String name) {
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < name.length(); i++) {
      char c = name.charAt(i);
      if (Character.isUpperCase(c) && i > 0) {
        b.append('_');
      }
      b.append(Character.toLowerCase(c));
    }
    return b.toString();
  }

  /** Remove and return the property matching {@code column} (an exact name first). */
  private static Prop take(Map<String, Prop> props, String column) {
    Prop exact = props.remove(column);
    if (exact != null) {
      return exact;
    }
    for (Map.Entry<String, Prop> e : props.entrySet()) {
      if (matches(column, e.getKey())) {
        return props.remove(e.getKey());
      }
    }
    return null;
  }

  private static LaminarException error(int number, String text, String object, String column) {
    return new LaminarException(
        number, String.format("LDB-%04d: %s", number, text), 0, 0, object, column);
  }

  // -- reflection --------------------------------------------------------------------

  /** One property: a record component, a public field, or a getter/setter pair. */
  private static final class Prop {
    final String name;
    final Class<?> type;
    Method getter;
    Method setter;
    Field field;
    int component = -1; // a record component's position

    Prop(String name, Class<?> type) {
      this.name = name;
      this.type = type;
    }

    Object get(Object row) {
      try {
        return getter != null ? getter.invoke(row) : field.get(row);
      } catch (IllegalAccessException e) {
        throw reflectionFailed("read", e);
      } catch (InvocationTargetException e) {
        throw reflectionFailed("read", e.getCause());
      }
    }

    void set(Object row, Object value) {
      try {
        if (setter != null) {
          setter.invoke(row, value);
        } else {
          field.set(row, value);
        }
      } catch (IllegalAccessException e) {
        throw reflectionFailed("set", e);
      } catch (InvocationTargetException e) {
        throw reflectionFailed("set", e.getCause());
      }
    }

    private LaminarException reflectionFailed(String what, Throwable cause) {
      LaminarException e =
          LaminarException.misuse("cannot " + what + " property '" + name + "': " + cause);
      e.initCause(cause);
      return e;
    }
  }

  /** How to take a class apart and build it: a record or a POJO. */
  private static final class Shape<T> {
    final Class<T> type;
    final List<Prop> props;
    final Constructor<T> constructor; // canonical (record) or no-argument (POJO); may be null
    final boolean record;

    private Shape(Class<T> type, List<Prop> props, Constructor<T> constructor, boolean record) {
      this.type = type;
      this.props = props;
      this.constructor = constructor;
      this.record = record;
    }

    static <T> Shape<T> of(Class<T> type) {
      if (type.isPrimitive() || type.isArray() || type.isInterface()
          || Modifier.isAbstract(type.getModifiers())) {
        throw LaminarException.misuse(
            type.getName() + " cannot map rows: use a record or a class with fields");
      }
      Object[] components = recordComponents(type);
      return components != null ? ofRecord(type, components) : ofPojo(type);
    }

    /** Class.getRecordComponents() on Java 16+ (null: not a record, or Java 11-15). */
    private static Object[] recordComponents(Class<?> type) {
      try {
        Method isRecord = Class.class.getMethod("isRecord");
        if (!(Boolean) isRecord.invoke(type)) {
          return null;
        }
        return (Object[]) Class.class.getMethod("getRecordComponents").invoke(type);
      } catch (NoSuchMethodException e) {
        return null;
      } catch (ReflectiveOperationException e) {
        throw new IllegalStateException(e);
      }
    }

    private static <T> Shape<T> ofRecord(Class<T> type, Object[] components) {
      List<Prop> props = new ArrayList<>();
      Class<?>[] types = new Class<?>[components.length];
      try {
        for (int i = 0; i < components.length; i++) {
          Class<?> c = components[i].getClass();
          String name = (String) c.getMethod("getName").invoke(components[i]);
          types[i] = (Class<?>) c.getMethod("getType").invoke(components[i]);
          Prop prop = new Prop(name, types[i]);
          prop.getter = accessible((Method) c.getMethod("getAccessor").invoke(components[i]));
          prop.component = i;
          props.add(prop);
        }
        return new Shape<>(type, props, accessible(type.getDeclaredConstructor(types)), true);
      } catch (ReflectiveOperationException e) {
        throw new IllegalStateException("record " + type.getName() + ": " + e, e);
      }
    }

    private static <T> Shape<T> ofPojo(Class<T> type) {
      Map<String, Prop> byName = new LinkedHashMap<>();
      for (Field f : type.getFields()) {
        int m = f.getModifiers();
        if (Modifier.isStatic(m) || Modifier.isTransient(m)) {
          continue;
        }
        Prop prop = new Prop(f.getName(), f.getType());
        prop.field = accessible(f);
        byName.put(f.getName(), prop);
      }
      for (Method m : type.getMethods()) {
        if (Modifier.isStatic(m.getModifiers()) || m.getDeclaringClass() == Object.class) {
          continue;
        }
        String n = m.getName();
        if (m.getParameterCount() == 0 && m.getReturnType() != void.class) {
          String name = n.startsWith("get") && n.length() > 3 ? decap(n.substring(3))
              : n.startsWith("is") && n.length() > 2
                  && (m.getReturnType() == boolean.class || m.getReturnType() == Boolean.class)
                  ? decap(n.substring(2)) : null;
          if (name != null) {
            Prop prop = byName.computeIfAbsent(name, k -> new Prop(k, m.getReturnType()));
            if (prop.type == m.getReturnType()) {
              prop.getter = accessible(m);
            }
          }
        }
      }
      for (Method m : type.getMethods()) {
        String n = m.getName();
        if (!Modifier.isStatic(m.getModifiers()) && m.getParameterCount() == 1
            && n.startsWith("set") && n.length() > 3) {
          Prop prop = byName.get(decap(n.substring(3)));
          if (prop != null && prop.type == m.getParameterTypes()[0]) {
            prop.setter = accessible(m);
          }
        }
      }
      Constructor<T> constructor = null;
      try {
        constructor = accessible(type.getDeclaredConstructor());
      } catch (NoSuchMethodException e) {
        // writing only: reading needs one (checked by settable()).
      }
      return new Shape<>(type, new ArrayList<>(byName.values()), constructor, false);
    }

    private static String decap(String s) {
      return s.substring(0, 1).toLowerCase(Locale.ROOT) + s.substring(1);
    }

    private static <A extends AccessibleObject> A accessible(A member) {
      try {
        member.setAccessible(true); // a non-public class's public members
      } catch (RuntimeException e) {
        // left as is: public members of exported classes work without it
      }
      return member;
    }

    /** Properties that can be read from an instance, by name (a new, mutable map). */
    Map<String, Prop> readable() {
      Map<String, Prop> out = new LinkedHashMap<>();
      for (Prop p : props) {
        if (p.getter != null || p.field != null) {
          out.put(p.name, p);
        }
      }
      if (out.isEmpty()) {
        throw LaminarException.misuse(type.getName() + " has no readable properties");
      }
      return out;
    }

    /** Properties a new instance is filled through (all components of a record). */
    List<Prop> settable() {
      if (constructor == null) {
        throw LaminarException.misuse(
            type.getName() + " has no no-argument constructor to read rows into");
      }
      List<Prop> out = new ArrayList<>();
      for (Prop p : props) {
        if (record || p.setter != null || (p.field != null
            && !Modifier.isFinal(p.field.getModifiers()))) {
          out.add(p);
        }
      }
      if (out.isEmpty()) {
        throw LaminarException.misuse(type.getName() + " has no settable properties");
      }
      return out;
    }

    /** A new instance holding values[s] in slots[s].prop. */
    T make(List<Slot> slots, Object[] values) {
      try {
        if (record) {
          Object[] args = new Object[props.size()];
          for (int s = 0; s < slots.size(); s++) {
            args[slots.get(s).prop.component] = values[s];
          }
          return constructor.newInstance(args);
        }
        T row = constructor.newInstance();
        for (int s = 0; s < slots.size(); s++) {
          slots.get(s).prop.set(row, values[s]);
        }
        return row;
      } catch (InvocationTargetException e) {
        LaminarException error =
            LaminarException.misuse("constructing " + type.getName() + ": " + e.getCause());
        error.initCause(e.getCause());
        throw error;
      } catch (ReflectiveOperationException e) {
        LaminarException error =
            LaminarException.misuse("constructing " + type.getName() + ": " + e);
        error.initCause(e);
        throw error;
      }
    }
  }
}

package org.laminardb;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.TimeStampVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.TimeUnit;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.spark.sql.execution.vectorized.WritableColumnVector;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.unsafe.Platform;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * Copies the columns of Spark's {@link org.apache.spark.sql.vectorized.ColumnarBatch}es (as
 * a columnar scan such as Parquet's vectorized reader produces them) into Arrow vectors of
 * the types {@link #arrowSchema} gives them, column by column: the JVM engine's
 * input path when its child is columnar, instead of Spark's rows and its row-wise {@code
 * ArrowWriter}. A dictionary-encoded string column is decoded once per dictionary entry
 * and batch.
 */
final class ColumnCopier {
  private byte[][] decoded = new byte[0][];

  /**
   * Tell whether every column of {@code type} is one {@link #copy} handles: the Spark
   * types of the core's source column types (VARCHAR, BIGINT, INT, DOUBLE, BOOLEAN,
   * TIMESTAMP; the driver casts narrower integers to them).
   */
  static boolean supports(StructType type) {
    for (StructField field : type.fields()) {
      DataType t = field.dataType();
      if (!(t instanceof LongType || t instanceof TimestampType || t instanceof TimestampNTZType
          || t instanceof DoubleType || t instanceof IntegerType || t instanceof BooleanType
          || t instanceof StringType)) {
        return false;
      }
    }
    return true;
  }

  /**
   * The Arrow schema of {@code type} (whose columns {@link #supports} accepts) as Spark's
   * {@code ArrowUtils.toArrowSchema} writes it: Utf8, Int64, Int32, Float64, Bool and
   * microsecond timestamps ({@code timeZone} for TIMESTAMP, none for TIMESTAMP_NTZ).
   * Written here because that method's signature differs between Spark minors (3.5: four
   * parameters, 4.2: three or four, 4.3: three or five) and one jar serves a whole line.
   */
  static Schema arrowSchema(StructType type, String timeZone) {
    List<Field> fields = new ArrayList<>();
    for (StructField field : type.fields()) {
      DataType t = field.dataType();
      ArrowType arrow;
      if (t instanceof StringType) {
        arrow = ArrowType.Utf8.INSTANCE;
      } else if (t instanceof LongType) {
        arrow = new ArrowType.Int(64, true);
      } else if (t instanceof IntegerType) {
        arrow = new ArrowType.Int(32, true);
      } else if (t instanceof DoubleType) {
        arrow = new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE);
      } else if (t instanceof BooleanType) {
        arrow = ArrowType.Bool.INSTANCE;
      } else if (t instanceof TimestampType) {
        arrow = new ArrowType.Timestamp(TimeUnit.MICROSECOND, timeZone);
      } else if (t instanceof TimestampNTZType) {
        arrow = new ArrowType.Timestamp(TimeUnit.MICROSECOND, null);
      } else {
        throw LaminarException.misuse("ColumnCopier: no Arrow type for column " + field.name()
            + " of Spark type " + t.simpleString());
      }
      fields.add(new Field(field.name(), new FieldType(field.nullable(), arrow, null), null));
    }
    return new Schema(fields);
  }

  /**
   * Copy rows {@code [0, n)} of {@code from} into {@code to} from its row {@code at} on.
   *
   * @param from a column of a type {@link #supports} accepts
   * @param to the Arrow vector of that column's Arrow type
   */
  void copy(ColumnVector from, FieldVector to, int n, int at) {
    boolean nulls = from.hasNull();
    if (to instanceof VarCharVector) {
      copyStrings(from, (VarCharVector) to, n, at, nulls);
      return;
    }
    if (to instanceof BitVector) {
      for (int i = 0; i < n; i++) {
        if (nulls && from.isNullAt(i)) {
          to.setNull(at + i);
        } else {
          ((BitVector) to).setSafe(at + i, from.getBoolean(i) ? 1 : 0);
        }
      }
      return;
    }
    // Fixed width: room for the rows first, then the values straight into the buffers.
    while (to.getValueCapacity() < at + n) {
      to.reAlloc();
    }
    long data = to.getDataBufferAddress();
    long validity = to.getValidityBufferAddress();
    for (int i = 0; i < n; i++) {
      int row = at + i;
      boolean isNull = nulls && from.isNullAt(i);
      long bits = validity + (row >> 3);
      byte mask = (byte) (1 << (row & 7));
      byte old = Platform.getByte(null, bits);
      Platform.putByte(null, bits, (byte) (isNull ? old & ~mask : old | mask));
      if (isNull) {
        continue;
      }
      if (to instanceof BigIntVector || to instanceof TimeStampVector) {
        Platform.putLong(null, data + 8L * row, from.getLong(i));
      } else if (to instanceof Float8Vector) {
        Platform.putDouble(null, data + 8L * row, from.getDouble(i));
      } else if (to instanceof IntVector) {
        Platform.putInt(null, data + 4L * row, from.getInt(i));
      } else {
        throw LaminarException.misuse("ColumnCopier: no copy into " + to.getClass().getName());
      }
    }
  }

  private void copyStrings(ColumnVector from, VarCharVector to, int n, int at, boolean nulls) {
    WritableColumnVector ids = null;
    if (from instanceof WritableColumnVector && ((WritableColumnVector) from).hasDictionary()) {
      ids = ((WritableColumnVector) from).getDictionaryIds();
      Arrays.fill(decoded, null);
    }
    for (int i = 0; i < n; i++) {
      int row = at + i;
      if (nulls && from.isNullAt(i)) {
        to.setNull(row);
      } else if (ids != null) {
        int id = ids.getInt(i);
        if (id >= decoded.length) {
          decoded = Arrays.copyOf(decoded, Math.max(id + 1, decoded.length * 2));
        }
        byte[] bytes = decoded[id];
        if (bytes == null) {
          bytes = from.getUTF8String(i).getBytes();
          decoded[id] = bytes;
        }
        to.setSafe(row, bytes, 0, bytes.length);
      } else {
        UTF8String s = from.getUTF8String(i);
        ByteBuffer buf = s.getByteBuffer();
        to.setSafe(row, buf, buf.position(), buf.remaining());
      }
    }
  }
}

package org.laminardb;

import java.util.Iterator;
import java.util.NoSuchElementException;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.TimeStampMicroTZVector;
import org.apache.arrow.vector.TimeStampMicroVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.codegen.UnsafeRowWriter;
import org.apache.spark.unsafe.Platform;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * The rows of an Arrow batch the engine returned, as Spark's {@code UnsafeRow}s written
 * straight from the Arrow buffers (one row object, rewritten by each {@link #next}, as
 * Spark's own projections do): BIGINT, INT, DOUBLE, VARCHAR and microsecond TIMESTAMP
 * columns, the types of the engine's aggregates and keys. Other batches go through
 * Spark's {@code ArrowColumnVector} (see SparkStage).
 */
final class ArrowRows implements Iterator<InternalRow> {
  private static final int LONG = 0;
  private static final int DOUBLE = 1;
  private static final int INT = 2;
  private static final int STRING = 3;

  private final int rows;
  private final int[] kinds;
  private final long[] validity;
  private final long[] data;
  private final long[] offsets;
  private final UnsafeRowWriter writer;
  private int next;

  /** Tell whether {@code root}'s vectors are all of the types this class reads. */
  static boolean supports(VectorSchemaRoot root) {
    for (FieldVector v : root.getFieldVectors()) {
      if (kind(v) < 0) {
        return false;
      }
    }
    return true;
  }

  private static int kind(FieldVector v) {
    if (v instanceof BigIntVector || v instanceof TimeStampMicroTZVector
        || v instanceof TimeStampMicroVector) {
      return LONG;
    }
    if (v instanceof Float8Vector) {
      return DOUBLE;
    }
    if (v instanceof IntVector) {
      return INT;
    }
    if (v instanceof VarCharVector) {
      return STRING;
    }
    return -1;
  }

  /** The rows of {@code root} (whose vectors {@link #supports} accepts). */
  ArrowRows(VectorSchemaRoot root) {
    int columns = root.getFieldVectors().size();
    this.rows = root.getRowCount();
    this.kinds = new int[columns];
    this.validity = new long[columns];
    this.data = new long[columns];
    this.offsets = new long[columns];
    for (int c = 0; c < columns; c++) {
      FieldVector v = root.getVector(c);
      kinds[c] = kind(v);
      validity[c] = v.getNullCount() == 0 ? 0 : v.getValidityBufferAddress();
      data[c] = rows == 0 ? 0 : v.getDataBufferAddress();
      offsets[c] = kinds[c] == STRING && rows > 0 ? v.getOffsetBufferAddress() : 0;
    }
    this.writer = new UnsafeRowWriter(columns, 64);
  }

  @Override
  public boolean hasNext() {
    return next < rows;
  }

  @Override
  public InternalRow next() {
    if (next >= rows) {
      throw new NoSuchElementException();
    }
    int i = next++;
    writer.reset();
    writer.zeroOutNullBytes();
    for (int c = 0; c < kinds.length; c++) {
      if (validity[c] != 0 && (Platform.getByte(null, validity[c] + (i >> 3)) & (1 << (i & 7))) == 0) {
        writer.setNullAt(c);
        continue;
      }
      switch (kinds[c]) {
        case LONG:
          writer.write(c, Platform.getLong(null, data[c] + 8L * i));
          break;
        case DOUBLE:
          writer.write(c, Platform.getDouble(null, data[c] + 8L * i));
          break;
        case INT:
          writer.write(c, Platform.getInt(null, data[c] + 4L * i));
          break;
        default:
          int start = Platform.getInt(null, offsets[c] + 4L * i);
          int end = Platform.getInt(null, offsets[c] + 4L * i + 4);
          writer.write(c, UTF8String.fromAddress(null, data[c] + start, end - start));
          break;
      }
    }
    return writer.getRow();
  }
}

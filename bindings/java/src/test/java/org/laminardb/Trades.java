package org.laminardb;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * The generated trades of shared/bench/README.md (event i: z = splitmix64((i+1) *
 * 0x9E3779B97F4A7C15), symbol 'S%03d' % (z % 100), volume 1 + (z >> 8) % 1000, price
 * 100 + ((z >> 24) % 100000) / 1000.0, ts 1700000000000 + i) as VectorSchemaRoots, and
 * W1's SQL as in bench/bench_vwap.c, w1_golden.c and w1_golden.py.
 */
final class Trades {
  static final String W1_SQL =
      "CREATE SOURCE trades (symbol VARCHAR NOT NULL, price DOUBLE NOT NULL, "
          + "volume BIGINT NOT NULL, ts BIGINT NOT NULL, WATERMARK FOR ts AS ts);"
          + "CREATE STREAM w1 AS SELECT window_start, symbol, SUM(price * volume) / SUM(volume) "
          + "AS vwap, COUNT(*) AS trades, MAX(price) AS max_price, MIN(price) AS min_price "
          + "FROM trades GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND) EMIT ON WINDOW CLOSE;";
  static final long TS0 = 1700000000000L;

  static final Schema SCHEMA =
      new Schema(
          List.of(
              new Field("symbol", FieldType.notNullable(new ArrowType.Utf8()), null),
              new Field(
                  "price",
                  FieldType.notNullable(new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE)),
                  null),
              new Field("volume", FieldType.notNullable(new ArrowType.Int(64, true)), null),
              new Field("ts", FieldType.notNullable(new ArrowType.Int(64, true)), null)));

  private static final byte[][] SYMBOLS = new byte[100][];

  static {
    for (int s = 0; s < 100; s++) {
      SYMBOLS[s] = String.format("S%03d", s).getBytes(StandardCharsets.US_ASCII);
    }
  }

  private Trades() {}

  static long mix64(long z) {
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }

  /** Events start..start+rows-1 as a new root in `allocator` (the caller closes it). */
  static VectorSchemaRoot batch(BufferAllocator allocator, long start, int rows) {
    VectorSchemaRoot root = VectorSchemaRoot.create(SCHEMA, allocator);
    fill(root, start, rows);
    return root;
  }

  /** Overwrite `root` (of SCHEMA) with events start..start+rows-1. */
  static void fill(VectorSchemaRoot root, long start, int rows) {
    VarCharVector symbol = (VarCharVector) root.getVector("symbol");
    Float8Vector price = (Float8Vector) root.getVector("price");
    BigIntVector volume = (BigIntVector) root.getVector("volume");
    BigIntVector ts = (BigIntVector) root.getVector("ts");
    for (FieldVector v : root.getFieldVectors()) {
      v.reset();
    }
    symbol.allocateNew(4L * rows, rows);
    price.allocateNew(rows);
    volume.allocateNew(rows);
    ts.allocateNew(rows);
    for (int k = 0; k < rows; k++) {
      long i = start + k;
      long z = mix64((i + 1) * 0x9E3779B97F4A7C15L);
      symbol.setSafe(k, SYMBOLS[(int) Long.remainderUnsigned(z, 100)]);
      volume.set(k, 1 + Long.remainderUnsigned(z >>> 8, 1000));
      price.set(k, 100.0 + (double) Long.remainderUnsigned(z >>> 24, 100000) / 1000.0);
      ts.set(k, TS0 + i);
    }
    root.setRowCount(rows);
  }

  /** W1's result rows of `root` as w1_golden.c writes them. */
  static void lines(VectorSchemaRoot root, List<String> out) {
    for (int r = 0; r < root.getRowCount(); r++) {
      out.add(
          String.format(
              "%d,%s,%016x,%d,%016x,%016x",
              ((Number) root.getVector("window_start").getObject(r)).longValue(),
              root.getVector("symbol").getObject(r),
              Double.doubleToRawLongBits((Double) root.getVector("vwap").getObject(r)),
              ((Number) root.getVector("trades").getObject(r)).longValue(),
              Double.doubleToRawLongBits((Double) root.getVector("max_price").getObject(r)),
              Double.doubleToRawLongBits((Double) root.getVector("min_price").getObject(r))));
    }
  }

  /** Sorted copy. */
  static List<String> sorted(List<String> lines) {
    List<String> copy = new ArrayList<>(lines);
    Collections.sort(copy);
    return copy;
  }
}

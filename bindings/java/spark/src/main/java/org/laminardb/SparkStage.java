package org.laminardb;

import java.io.Serializable;
import java.util.Collections;
import java.util.Iterator;
import java.util.NoSuchElementException;
import org.apache.arrow.c.ArrowArray;
import org.apache.arrow.c.ArrowSchema;
import org.apache.arrow.c.Data;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.execution.arrow.ArrowWriter;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.ArrowUtils;
import org.apache.spark.sql.vectorized.ArrowColumnVector;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.apache.spark.util.TaskCompletionListener;

/**
 * One stage of {@code laminardb.spark.run} inside Spark's JVM ({@code engine="jvm"}, see
 * docs/SPARK.md): per partition of a DataFrame, an embedded engine (liblaminar through
 * liblaminar_jni.so) gets the partition's rows as Arrow C arrays written by Spark's own
 * {@link ArrowWriter} into Spark's Arrow Java, runs the SQL with the inline driver
 * ({@code laminar_run_until_idle}), and the stream's rows come back through the C Data
 * Interface as the rows of an {@link ArrowColumnVector} batch. The data never leaves
 * the JVM: no Python worker, no socket, no row conversion outside Spark's own writer.
 *
 * <p>Compiled against the Arrow Java Spark ships (12.0.1, with arrow-c-data of the same
 * version), not the binding's: this class uses only {@link Native} of the binding.
 */
public final class SparkStage implements Serializable {
  private static final long serialVersionUID = 1L;

  /** The watermark that closes every window (INT64_MAX). */
  static final long FINAL_WATERMARK = Long.MAX_VALUE;

  private final String sql;
  private final String source;
  private final String stream;
  private final String[] optionKeys;
  private final String[] optionValues;
  private final StructType inputType;
  private final String timeZone;
  private final boolean finalWatermark;
  private final int batchRows;

  private SparkStage(
      String sql,
      String source,
      String stream,
      String[] optionKeys,
      String[] optionValues,
      StructType inputType,
      String timeZone,
      boolean finalWatermark,
      int batchRows) {
    this.sql = sql;
    this.source = source;
    this.stream = stream;
    this.optionKeys = optionKeys.clone();
    this.optionValues = optionValues.clone();
    this.inputType = inputType;
    this.timeZone = timeZone;
    this.finalWatermark = finalWatermark;
    this.batchRows = batchRows;
  }

  /**
   * Run {@code stream} of {@code sql} over each partition of {@code df}.
   *
   * @param df a batch DataFrame whose columns are {@code source}'s, in its order and of
   *     types it accepts (the Python driver checked and cast them)
   * @param sql the CREATE SOURCE / CREATE STREAM statements of each partition's engine
   * @param source the source the rows go into
   * @param stream the stream whose rows come out
   * @param optionKeys the engine's {@code laminar_open} option names
   * @param optionValues their values, as text
   * @param outputJson the output StructType's JSON (mapped from the core's schema)
   * @param finalWatermark end each partition with the watermark that closes every window
   * @param batchRows rows per Arrow batch pushed into the engine
   * @return a DataFrame of the stream's rows
   */
  public static Dataset<Row> run(
      Dataset<Row> df,
      String sql,
      String source,
      String stream,
      String[] optionKeys,
      String[] optionValues,
      String outputJson,
      boolean finalWatermark,
      int batchRows) {
    if (optionKeys.length != optionValues.length || batchRows <= 0) {
      throw LaminarException.misuse("SparkStage.run: option arrays differ or batchRows <= 0");
    }
    StructType out = (StructType) DataType.fromJson(outputJson);
    String zone = df.sparkSession().sessionState().conf().sessionLocalTimeZone();
    SparkStage stage =
        new SparkStage(sql, source, stream, optionKeys, optionValues, df.schema(), zone,
            finalWatermark, batchRows);
    JavaRDD<InternalRow> rows = df.queryExecution().toRdd().toJavaRDD();
    JavaRDD<InternalRow> results = rows.mapPartitions(stage::partition);
    return df.sparkSession().internalCreateDataFrame(results.rdd(), out, false);
  }

  private static byte[] utf8(String s) {
    return Text.utf8(s, "text");
  }

  /** One partition's engine over {@code input}, closed when the task ends. */
  Iterator<InternalRow> partition(Iterator<InternalRow> input) {
    Task task = new Task(input);
    TaskContext context = TaskContext.get();
    if (context != null) {
      context.addTaskCompletionListener(
          (TaskCompletionListener)
              ctx -> {
                task.close();
                task.free();
              });
    }
    return task;
  }

  /**
   * The engine of one partition as an iterator of the stream's rows: each call that finds
   * no row left pushes the next {@code batchRows} input rows, runs the engine and takes
   * what its subscription holds; after the last input row, the final watermark.
   */
  private final class Task implements Iterator<InternalRow>, AutoCloseable {
    private final Iterator<InternalRow> input;
    private final BufferAllocator alloc;
    private final Schema arrowIn;
    private long db;
    private long src;
    private long sub;
    private VectorSchemaRoot result;
    private Iterator<InternalRow> rows = Collections.emptyIterator();
    private boolean ended;
    private boolean drained;

    Task(Iterator<InternalRow> input) {
      this.input = input;
      this.arrowIn = ArrowUtils.toArrowSchema(inputType, timeZone, true, false);
      this.alloc =
          ArrowUtils.rootAllocator().newChildAllocator("laminardb-stage", 0, Long.MAX_VALUE);
      try {
        open();
      } catch (RuntimeException | Error e) {
        close();
        free();
        throw e;
      }
    }

    private void open() {
      byte[][] keys = new byte[optionKeys.length][];
      byte[][] values = new byte[optionValues.length][];
      for (int i = 0; i < keys.length; i++) {
        keys[i] = utf8(optionKeys[i]);
        values[i] = utf8(optionValues[i]);
      }
      db = Native.open(keys, values);
      Native.execute(db, utf8(sql));
      src = Native.sourceOpen(db, utf8(source));
      sub = Native.subscribe(db, utf8(stream));
      try (ArrowSchema cs = ArrowSchema.allocateNew(alloc)) {
        Native.schema(db, utf8(stream), cs.memoryAddress());
        result = VectorSchemaRoot.create(Data.importSchema(alloc, cs, null), alloc);
      }
    }

    @Override
    public boolean hasNext() {
      while (!rows.hasNext()) {
        if (nextBatch()) {
          drained = true;
          continue;
        }
        if (drained) {
          // run_until_idle stops early when the subscriber's queue is full: run it
          // again after each drain that found rows, until one finds none.
          drained = false;
          Native.runUntilIdle(db);
          continue;
        }
        if (ended) {
          close();
          return false;
        }
        step();
      }
      return true;
    }

    @Override
    public InternalRow next() {
      if (!hasNext()) {
        throw new NoSuchElementException();
      }
      return rows.next();
    }

    /** Push the next input batch (or end the input), run the engine. */
    private void step() {
      if (input.hasNext()) {
        push();
      } else {
        if (finalWatermark) {
          Native.sourceWatermark(src, FINAL_WATERMARK);
        }
        ended = true;
      }
      Native.runUntilIdle(db);
    }

    /** Up to batchRows input rows as one Arrow batch into the source. */
    private void push() {
      try (VectorSchemaRoot root = VectorSchemaRoot.create(arrowIn, alloc);
          ArrowArray ca = ArrowArray.allocateNew(alloc);
          ArrowSchema cs = ArrowSchema.allocateNew(alloc)) {
        ArrowWriter writer = ArrowWriter.create(root);
        for (int n = 0; n < batchRows && input.hasNext(); n++) {
          writer.write(input.next());
        }
        writer.finish();
        Data.exportVectorSchemaRoot(alloc, root, null, ca, cs);
        try {
          Native.sourcePush(src, ca.memoryAddress(), cs.memoryAddress());
        } finally {
          ca.release(); // a no-op once the core took the array
          cs.release();
        }
      }
    }

    /** Take the next batch the subscription holds into {@code rows}; false: none. */
    private boolean nextBatch() {
      if (sub == 0) {
        return false;
      }
      try (ArrowArray ca = ArrowArray.allocateNew(alloc)) {
        if (Native.subscriptionNext(sub, 0, ca.memoryAddress()) != 1) {
          return false;
        }
        Data.importIntoVectorSchemaRoot(alloc, ca, result, null);
      }
      ColumnVector[] vectors = new ColumnVector[result.getFieldVectors().size()];
      for (int i = 0; i < vectors.length; i++) {
        vectors[i] = new ArrowColumnVector(result.getVector(i));
      }
      rows = new ColumnarBatch(vectors, result.getRowCount()).rowIterator();
      return true;
    }

    @Override
    public void close() {
      ended = true;
      if (sub != 0) {
        Native.subscriptionClose(sub);
        sub = 0;
      }
      if (src != 0) {
        Native.sourceClose(src);
        src = 0;
      }
      if (db != 0) {
        Native.close(db);
        db = 0;
      }
    }

    /** Free the Arrow memory (at the task's end: rows may point into it until then). */
    void free() {
      if (result != null) {
        result.close();
        result = null;
      }
      alloc.close();
    }
  }
}

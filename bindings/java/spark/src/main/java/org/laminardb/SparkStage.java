package org.laminardb;

import java.io.Serializable;
import java.nio.file.Paths;
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
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.execution.arrow.ArrowWriter;
import org.apache.spark.sql.types.NumericType;
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
 * <p>Compiled once per Spark line against that line's artifacts and its Arrow Java (with
 * arrow-c-data of the same version), not the binding's: this class uses only {@link
 * Native} of the binding. The DataFrame entry points are {@code SparkFrames}'s
 * (SparkFrames.java.in, generated per line).
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
  private final StructType outputType;
  private final String timeZone;
  private final boolean finalWatermark;
  private final int batchRows;
  /** {@link #BATCH}, {@link #PARTIAL} or {@link #FINAL}. */
  private final int mode;
  /** Streaming: the state location (see {@link StreamState}); else null. */
  private final String location;
  /** Streaming: the source's watermark delay. */
  private final long delayMs;
  /** {@link #PARTIAL}: the event-time column's index in the input; else -1. */
  private final int eventIndex;
  /** The Java functions each task's engine registers before it opens. */
  private final FunctionSpec[] functions;

  /** Each task runs its engine over its partition alone (the batch path). */
  public static final int BATCH = 0;

  /**
   * A streaming micro-batch's partial stage: as {@link #BATCH} with the final watermark,
   * and each task records its rows' largest event time for the final stage.
   */
  public static final int PARTIAL = 1;

  /**
   * A streaming micro-batch's final stage: each task's engine starts from its
   * partition's state of the batch before and stores its state of this batch.
   */
  public static final int FINAL = 2;

  SparkStage(
      String sql,
      String source,
      String stream,
      String[] optionKeys,
      String[] optionValues,
      StructType inputType,
      StructType outputType,
      String timeZone,
      boolean finalWatermark,
      int batchRows,
      int mode,
      String location,
      long delayMs,
      int eventIndex,
      FunctionSpec[] functions) {
    this.sql = sql;
    this.source = source;
    this.stream = stream;
    this.optionKeys = optionKeys.clone();
    this.optionValues = optionValues.clone();
    this.inputType = inputType;
    this.outputType = outputType;
    this.timeZone = timeZone;
    this.finalWatermark = finalWatermark;
    this.batchRows = batchRows;
    this.mode = mode;
    this.location = location;
    this.delayMs = delayMs;
    this.eventIndex = eventIndex;
    this.functions = functions.clone();
  }

  private static byte[] utf8(String s) {
    return Text.utf8(s, "text");
  }

  /** The stage as Spark's plans show it, e.g. {@code final stage of stream w1}. */
  @Override
  public String toString() {
    String[] modes = {"stream", "partial stage of stream", "final stage of stream"};
    return modes[mode] + " " + stream;
  }

  /** One partition's engine over {@code input}, closed when the task ends. */
  Iterator<InternalRow> partition(Iterator<InternalRow> input) {
    return partition(input, null);
  }

  /**
   * One partition's engine over the column batches {@code input} of a columnar child
   * (see {@link #copiesColumns}), closed when the task ends.
   */
  Iterator<InternalRow> partitionColumns(Iterator<ColumnarBatch> input) {
    return partition(null, input);
  }

  /** Tell whether {@link #partitionColumns} takes batches of this stage's input type. */
  boolean copiesColumns() {
    return ColumnCopier.supports(inputType);
  }

  private Iterator<InternalRow> partition(Iterator<InternalRow> input,
      Iterator<ColumnarBatch> columns) {
    TaskContext context = TaskContext.get();
    StreamState state = null;
    if (mode == FINAL) {
      if (context == null) {
        throw LaminarException.misuse("SparkStage: a streaming stage runs in Spark tasks");
      }
      state = StreamState.begin(Paths.get(location), batchId(context), context.partitionId());
    }
    Task task = new Task(input, columns, state);
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

  /** The micro-batch id of the running task (0 outside a streaming query). */
  private static long batchId(TaskContext context) {
    String id = context.getLocalProperty(BATCH_ID_PROPERTY);
    return id == null ? 0 : Long.parseLong(id);
  }

  /** Spark's local property holding the micro-batch id of a streaming query. */
  static final String BATCH_ID_PROPERTY = "streaming.sql.batchId";

  /**
   * The engine of one partition as an iterator of the stream's rows: each call that finds
   * no row left pushes the next {@code batchRows} input rows, runs the engine and takes
   * what its subscription holds; after the last input row, the closing watermark and,
   * streaming, the stage's state (see {@link #finish}).
   */
  private final class Task implements Iterator<InternalRow>, AutoCloseable {
    /** The input rows, or null when the input is {@link #columns}. */
    private final Iterator<InternalRow> input;
    /** The input column batches, or null when the input is {@link #input}. */
    private final Iterator<ColumnarBatch> columns;
    private final ColumnCopier copier = new ColumnCopier();
    private final BufferAllocator alloc;
    private final Schema arrowIn;
    /** {@link #FINAL}: the partition's state; else null. */
    private final StreamState state;
    /** {@link #PARTIAL}: the event-time column holds microseconds (a TIMESTAMP). */
    private final boolean eventMicros;
    private long db;
    private long src;
    private long sub;
    private VectorSchemaRoot result;
    /** Rows of result batches {@link ArrowRows} does not read, as UnsafeRows. */
    private UnsafeProjection unsafe;
    private Iterator<InternalRow> rows = Collections.emptyIterator();
    private boolean ended;
    private boolean drained;
    private boolean finished;
    /** {@link #PARTIAL}: the largest event time pushed (ms), if {@link #seen}. */
    private long maxTs = Long.MIN_VALUE;
    private boolean seen;

    Task(Iterator<InternalRow> input, Iterator<ColumnarBatch> columns, StreamState state) {
      this.input = input;
      this.columns = columns;
      this.state = state;
      this.eventMicros =
          eventIndex >= 0
              && !(inputType.fields()[eventIndex].dataType() instanceof NumericType);
      this.arrowIn = ColumnCopier.arrowSchema(inputType, timeZone);
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
      int extra = state == null ? 0 : 3;
      byte[][] keys = new byte[optionKeys.length + extra][];
      byte[][] values = new byte[optionValues.length + extra][];
      for (int i = 0; i < optionKeys.length; i++) {
        keys[i] = utf8(optionKeys[i]);
        values[i] = utf8(optionValues[i]);
      }
      if (state != null) {
        // A durable engine in the state's directory, checkpointed once, at the end.
        int at = optionKeys.length;
        keys[at] = utf8("data_dir");
        values[at] = utf8(state.data().toString());
        keys[at + 1] = utf8("checkpoint_interval");
        values[at + 1] = utf8("1000 min");
        keys[at + 2] = utf8("checkpoint_keep");
        values[at + 2] = utf8("1");
      }
      db = functions.length == 0 ? Native.open(keys, values) : openWithFunctions(keys, values);
      Native.execute(db, utf8(sql));
      src = Native.sourceOpen(db, utf8(source));
      sub = Native.subscribe(db, utf8(stream));
      try (ArrowSchema cs = ArrowSchema.allocateNew(alloc)) {
        Native.schema(db, utf8(stream), cs.memoryAddress());
        result = VectorSchemaRoot.create(Data.importSchema(alloc, cs, null), alloc);
      }
      if (state != null && state.before() != null) {
        Native.sourceWatermark(src, state.before() - delayMs);
      }
    }

    /** Open through a C config holding the stage's Java functions (new instances). */
    private long openWithFunctions(byte[][] keys, byte[][] values) {
      long config = Native.configCreate();
      try {
        for (int i = 0; i < keys.length; i++) {
          Native.configSet(config, keys[i], values[i]);
        }
        for (FunctionSpec f : functions) {
          f.registration().register(0, config);
        }
        return Native.openConfig(config);
      } finally {
        Native.configDestroy(config);
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
          finish();
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
      if (input != null ? input.hasNext() : columns.hasNext()) {
        push();
      } else {
        if (finalWatermark) {
          Native.sourceWatermark(src, FINAL_WATERMARK);
        } else if (state != null && state.through() != null) {
          Native.sourceWatermark(src, state.through() - delayMs);
        }
        ended = true;
      }
      Native.runUntilIdle(db);
    }

    /**
     * The partition's every row is in and out: {@link #PARTIAL} records its largest event
     * time for the final stage, {@link #FINAL} checkpoints the engine and publishes its
     * state as this micro-batch's.
     */
    private void finish() {
      if (finished) {
        return;
      }
      finished = true;
      TaskContext context = TaskContext.get();
      if (mode == PARTIAL && seen && context != null) {
        StreamState.recordMaxTs(Paths.get(location), batchId(context), context.partitionId(),
            maxTs);
      } else if (state != null && db != 0) {
        Native.checkpoint(db);
        close();
        state.publish();
      }
    }

    /** Up to batchRows input rows as one Arrow batch into the source. */
    private void push() {
      try (VectorSchemaRoot root = VectorSchemaRoot.create(arrowIn, alloc);
          ArrowArray ca = ArrowArray.allocateNew(alloc);
          ArrowSchema cs = ArrowSchema.allocateNew(alloc)) {
        if (input != null) {
          ArrowWriter writer = ArrowWriter.create(root);
          for (int n = 0; n < batchRows && input.hasNext(); n++) {
            InternalRow row = input.next();
            if (eventIndex >= 0 && !row.isNullAt(eventIndex)) {
              see(row.getLong(eventIndex));
            }
            writer.write(row);
          }
          writer.finish();
        } else {
          int n = 0;
          while (n < batchRows && columns.hasNext()) {
            ColumnarBatch batch = columns.next();
            int count = batch.numRows();
            for (int c = 0; c < batch.numCols(); c++) {
              copier.copy(batch.column(c), root.getVector(c), count, n);
            }
            if (eventIndex >= 0) {
              ColumnVector event = batch.column(eventIndex);
              for (int i = 0; i < count; i++) {
                if (!event.isNullAt(i)) {
                  see(event.getLong(i));
                }
              }
            }
            n += count;
          }
          root.setRowCount(n);
        }
        Data.exportVectorSchemaRoot(alloc, root, null, ca, cs);
        try {
          Native.sourcePush(src, ca.memoryAddress(), cs.memoryAddress());
        } finally {
          ca.release(); // a no-op once the core took the array
          cs.release();
        }
      }
    }

    /** Note an input row's event time (Spark's value: microseconds for a TIMESTAMP). */
    private void see(long value) {
      long ts = eventMicros ? Math.floorDiv(value, 1000L) : value;
      maxTs = seen ? Math.max(maxTs, ts) : ts;
      seen = true;
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
      if (ArrowRows.supports(result)) {
        rows = new ArrowRows(result);
        return true;
      }
      ColumnVector[] vectors = new ColumnVector[result.getFieldVectors().size()];
      for (int i = 0; i < vectors.length; i++) {
        vectors[i] = new ArrowColumnVector(result.getVector(i));
      }
      if (unsafe == null) {
        unsafe = UnsafeProjection.create(outputType);
      }
      Iterator<InternalRow> batch = new ColumnarBatch(vectors, result.getRowCount()).rowIterator();
      UnsafeProjection project = unsafe;
      rows =
          new Iterator<InternalRow>() {
            @Override
            public boolean hasNext() {
              return batch.hasNext();
            }

            @Override
            public InternalRow next() {
              return project.apply(batch.next());
            }
          };
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

    /**
     * Free the Arrow memory (at the task's end: rows may point into it until then) and a
     * streaming state that was not published (a failed attempt).
     */
    void free() {
      if (result != null) {
        result.close();
        result = null;
      }
      alloc.close();
      if (state != null) {
        state.discard();
      }
    }
  }
}

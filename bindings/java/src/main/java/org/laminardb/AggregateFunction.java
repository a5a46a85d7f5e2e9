package org.laminardb;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.util.List;
import org.apache.arrow.vector.FieldVector;

/**
 * A user-defined aggregate for SQL ({@link LaminarDB#createAggregate}): one state of
 * type {@code S} per group (and window), folded over Arrow vectors of the group's rows,
 * as {@code laminar_aggregate_register} in docs/C-API.md and Python's {@code
 * create_aggregate}.
 *
 * <pre>{@code
 * class SumSquares implements AggregateFunction<double[]> {
 *   public double[] init() { return new double[1]; }
 *   public double[] update(double[] s, List<FieldVector> args) {
 *     Float8Vector x = (Float8Vector) args.get(0);
 *     for (int i = 0; i < x.getValueCount(); i++) s[0] += x.get(i) * x.get(i);
 *     return s;
 *   }
 *   public double[] merge(double[] a, double[] b) { a[0] += b[0]; return a; }
 *   public Object finalize(double[] s) { return s[0]; }
 * }
 * }</pre>
 *
 * <p>Each method returns the new state (it may change the state it got and return it),
 * except that {@link #merge} must leave its second state unchanged. The argument
 * vectors hold one group's rows of one chunk, in arrival order, without rows with a
 * NULL argument (unless {@link FunctionOptions#calledOnNull}); they are closed after
 * the call: do not keep them. States are checkpointed, copied between windows and
 * cores, and restored through {@link #serialize} / {@link #deserialize} (Java
 * serialization by default: a state type that is {@code Serializable}).
 *
 * <p>An exception from any method fails the stream's batch with LDB-3010 naming the
 * function, the method and the stream (an update may leave earlier rows of the batch
 * applied). Methods run on the thread that processes the stream, one call at a time
 * per registered aggregate, and must not call the database (LDB-9002).
 *
 * @param <S> the state type
 */
public interface AggregateFunction<S> {
  /** A group's empty state. */
  S init() throws Exception;

  /**
   * Fold rows into a state.
   *
   * @param state the group's state
   * @param args one vector per declared parameter, the group's rows of this chunk
   * @return the new state
   */
  S update(S state, List<FieldVector> args) throws Exception;

  /**
   * Remove rows' contributions (the -1 rows of a changelog: a stream over an EMIT
   * CHANGES stream or a view). Optional: an aggregate that does not override it cannot
   * read a changelog, and a statement that would is refused with LDB-1005.
   */
  default S retract(S state, List<FieldVector> args) throws Exception {
    throw new UnsupportedOperationException("retract");
  }

  /**
   * Fold state {@code b} into {@code a} (hop windows' panes, sessions, several cores'
   * partial results): the result is what updating {@code a} with b's rows would give.
   * {@code b} must stay unchanged.
   */
  S merge(S a, S b) throws Exception;

  /**
   * The group's result: a value of the declared return type (BOOLEAN {@code Boolean},
   * INT and BIGINT any {@code Number}, DOUBLE a {@code Number}, TIMESTAMP {@code
   * java.time.Instant}, DECIMAL(p, s) a {@code java.math.BigDecimal} that fits it
   * exactly, else LDB-3011), or {@code null} for NULL. The state stays in use.
   */
  Object finalize(S state) throws Exception;

  /** A state as bytes, for checkpoints and copies. Default: Java serialization. */
  default byte[] serialize(S state) throws Exception {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
      out.writeObject(state);
    }
    return bytes.toByteArray();
  }

  /** The state {@link #serialize} wrote. Default: Java serialization. */
  @SuppressWarnings("unchecked")
  default S deserialize(byte[] data) throws Exception {
    try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(data))) {
      return (S) in.readObject();
    }
  }
}

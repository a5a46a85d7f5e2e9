package org.laminardb;

import java.util.List;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;

/**
 * A vectorized scalar function for SQL ({@link LaminarDB#createFunction}): called once
 * per chunk of rows with one Arrow vector per argument, it returns one vector of as
 * many rows.
 *
 * <pre>{@code
 * db.createFunction("affine", (args, allocator) -> {
 *   BigIntVector x = (BigIntVector) args.get(0);
 *   BigIntVector out = new BigIntVector("affine", allocator);
 *   out.allocateNew(x.getValueCount());
 *   for (int i = 0; i < x.getValueCount(); i++) out.set(i, x.get(i) * 2 + 1);
 *   out.setValueCount(x.getValueCount());
 *   return out;
 * }, List.of("BIGINT"), "BIGINT");
 * }</pre>
 *
 * <p>The argument vectors are the engine's memory, lent for the call: read them, do not
 * keep them (or vectors sharing their buffers) after returning. Without {@link
 * FunctionOptions#calledOnNull} they hold no NULLs (rows with a NULL argument are NULL
 * and not passed).
 */
@FunctionalInterface
public interface VectorFunction {
  /**
   * Compute one chunk.
   *
   * @param args one vector per declared parameter, in order, all of the chunk's row
   *     count (a function of no parameters gets none: use the count given by the SQL
   *     call's rows through another argument, or declare one)
   * @param allocator where to create the result (the function's own allocator)
   * @return a new vector of the declared return type and the arguments' row count; the
   *     binding takes it (exports it to the engine, then closes it)
   * @throws Exception anything: the stream's batch fails with LDB-3010 naming the
   *     function, the exception and where it was thrown
   */
  FieldVector apply(List<FieldVector> args, BufferAllocator allocator) throws Exception;
}

package org.laminardb.sparktest;

import java.util.List;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.Float8Vector;
import org.laminardb.VectorFunction;

/** usd(price DOUBLE) -> DOUBLE: price * 1.25, vectorized (the Spark suite's test jar). */
public final class Usd implements VectorFunction {
  @Override
  public FieldVector apply(List<FieldVector> args, BufferAllocator allocator) {
    Float8Vector eur = (Float8Vector) args.get(0);
    int n = eur.getValueCount();
    Float8Vector out = new Float8Vector("usd", allocator);
    out.allocateNew(n);
    for (int i = 0; i < n; i++) {
      out.set(i, eur.get(i) * 1.25);
    }
    out.setValueCount(n);
    return out;
  }
}

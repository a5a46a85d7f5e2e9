package org.laminardb.sparktest;

import java.util.List;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.Float8Vector;
import org.laminardb.AggregateFunction;

/** sumsq(x DOUBLE) -> DOUBLE: SUM(x * x) as an aggregate (the Spark suite's test jar). */
public final class SumSquares implements AggregateFunction<double[]> {
  @Override
  public double[] init() {
    return new double[1];
  }

  @Override
  public double[] update(double[] state, List<FieldVector> args) {
    Float8Vector x = (Float8Vector) args.get(0);
    for (int i = 0; i < x.getValueCount(); i++) {
      state[0] += x.get(i) * x.get(i);
    }
    return state;
  }

  @Override
  public double[] merge(double[] a, double[] b) {
    a[0] += b[0];
    return a;
  }

  @Override
  public Object finalize(double[] state) {
    return state[0];
  }
}

package org.laminardb.sparktest;

import org.laminardb.RowFunction;

/** size_label(volume BIGINT) -> VARCHAR, per row (the Spark suite's test jar). */
public final class SizeLabel implements RowFunction {
  @Override
  public Object apply(Object... args) {
    return (Long) args[0] >= 100 ? "block" : "odd lot";
  }
}

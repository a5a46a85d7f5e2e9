package example;

import java.util.List;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.Float8Vector;
import org.laminardb.AggregateFunction;
import org.laminardb.LaminarDB;
import org.laminardb.TypedSource;
import org.laminardb.TypedSubscription;

public class Functions {
  public record Trade(String symbol, double price, long volume, long ts) {}

  public record Window(String symbol, long windowStart, double notional, double sumsq) {}

  public record Label(String symbol, long volume, String label) {}

  /** SUM(x * x) as an aggregate: the state is a one-element running sum. */
  public static class SumSquares implements AggregateFunction<double[]> {
    public double[] init() {
      return new double[1];
    }

    public double[] update(double[] state, List<FieldVector> args) {
      Float8Vector x = (Float8Vector) args.get(0); // this group's rows of one chunk
      for (int i = 0; i < x.getValueCount(); i++) {
        state[0] += x.get(i) * x.get(i);
      }
      return state;
    }

    public double[] merge(double[] a, double[] b) {
      a[0] += b[0];
      return a;
    }

    public Object finalize(double[] state) {
      return state[0];
    }
  }

  public static void main(String[] args) {
    try (LaminarDB db = LaminarDB.open()) {
      // Vectorized: one call per chunk, Arrow vectors in, a new vector out.
      db.createFunction(
          "usd",
          (cols, allocator) -> {
            Float8Vector eur = (Float8Vector) cols.get(0);
            Float8Vector out = new Float8Vector("usd", allocator);
            out.allocateNew(eur.getValueCount());
            for (int i = 0; i < eur.getValueCount(); i++) {
              out.set(i, eur.get(i) * 1.25);
            }
            out.setValueCount(eur.getValueCount());
            return out;
          },
          List.of("DOUBLE"),
          "DOUBLE");
      // Per row: Java values in, a Java value out.
      db.createRowFunction(
          "size_label", row -> (Long) row[0] >= 100 ? "block" : "odd lot", List.of("BIGINT"), "VARCHAR");
      db.createAggregate("sumsq", new SumSquares(), List.of("DOUBLE"), "DOUBLE");
      db.execute(
          "CREATE SOURCE trades (symbol VARCHAR NOT NULL, price DOUBLE, volume BIGINT, ts BIGINT,"
              + " WATERMARK FOR ts AS ts - INTERVAL '100' MILLISECOND);"
              + "CREATE STREAM w AS SELECT symbol, window_start,"
              + " SUM(usd(price) * volume) AS notional, sumsq(price) AS sumsq"
              + " FROM trades GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND)"
              + " EMIT ON WINDOW CLOSE;"
              + "CREATE STREAM labels AS SELECT symbol, volume, size_label(volume) AS label"
              + " FROM trades;");
      try (TypedSource<Trade> trades = db.source("trades", Trade.class);
          TypedSubscription<Window> windows = db.subscribe("w", Window.class);
          TypedSubscription<Label> labels = db.subscribe("labels", Label.class)) {
        trades.push(
            List.of(
                new Trade("AAPL", 10.0, 100, 1000),
                new Trade("AAPL", 20.0, 300, 1500),
                new Trade("MSFT", 5.0, 10, 1200)));
        trades.watermark(Long.MAX_VALUE); // end of input: close every window
        db.runUntilIdle();
        for (Window w : windows.poll(java.time.Duration.ZERO)) {
          System.out.printf(
              "%s window %d: notional %.2f USD, sum of squares %.2f%n",
              w.symbol(), w.windowStart(), w.notional(), w.sumsq());
        }
        for (Label l : labels.poll(java.time.Duration.ZERO)) {
          System.out.printf("%s %d: %s%n", l.symbol(), l.volume(), l.label());
        }
      }
    }
  }
}

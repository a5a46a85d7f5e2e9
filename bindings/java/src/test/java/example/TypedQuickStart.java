package example;

import java.time.Duration;
import java.util.List;
import org.laminardb.LaminarDB;
import org.laminardb.TypedSource;
import org.laminardb.TypedSubscription;

public class TypedQuickStart {
  /** A row of source trades: one property per column, matched by name. */
  public record Trade(String symbol, double price, long volume, long ts) {}

  /** A row of stream vwap; windowStart reads column window_start. */
  public record Vwap(String symbol, long windowStart, double vwap, long n) {}

  public static void main(String[] args) {
    try (LaminarDB db = LaminarDB.open()) {
      db.execute(
          "CREATE SOURCE trades (symbol VARCHAR NOT NULL, price DOUBLE, volume BIGINT,"
              + " ts BIGINT, WATERMARK FOR ts AS ts - INTERVAL '100' MILLISECOND);"
              + "CREATE STREAM vwap AS SELECT symbol, window_start,"
              + " SUM(price * volume) / SUM(volume) AS vwap, COUNT(*) AS n"
              + " FROM trades GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND)"
              + " EMIT ON WINDOW CLOSE;");
      try (TypedSource<Trade> trades = db.source("trades", Trade.class);
          TypedSubscription<Vwap> vwap = db.subscribe("vwap", Vwap.class)) {
        trades.push(
            List.of(
                new Trade("AAPL", 10.0, 100, 1000),
                new Trade("AAPL", 20.0, 300, 1500),
                new Trade("MSFT", 5.0, 10, 1200)));
        trades.watermark(Long.MAX_VALUE); // end of input: close every window
        db.runUntilIdle();
        List<Vwap> rows;
        while (!(rows = vwap.poll(Duration.ZERO)).isEmpty()) {
          for (Vwap row : rows) {
            System.out.printf(
                "%s window %d: vwap %.2f over %d trades%n",
                row.symbol(), row.windowStart(), row.vwap(), row.n());
          }
        }
      }
    }
  }
}

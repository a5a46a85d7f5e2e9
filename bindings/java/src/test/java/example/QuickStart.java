package example;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.laminardb.LaminarDB;
import org.laminardb.Source;
import org.laminardb.Subscription;

public class QuickStart {
  public static void main(String[] args) {
    try (BufferAllocator allocator = new RootAllocator();
        LaminarDB db = LaminarDB.open()) { // in memory; closed before the allocator
      db.execute(
          "CREATE SOURCE trades (symbol VARCHAR NOT NULL, price DOUBLE, volume BIGINT,"
              + " ts BIGINT, WATERMARK FOR ts AS ts - INTERVAL '100' MILLISECOND);"
              + "CREATE STREAM vwap AS SELECT symbol, window_start,"
              + " SUM(price * volume) / SUM(volume) AS vwap, COUNT(*) AS n"
              + " FROM trades GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND)"
              + " EMIT ON WINDOW CLOSE;");
      try (Source trades = db.source("trades");
          Subscription vwap = db.subscribe("vwap", allocator);
          VectorSchemaRoot batch =
              VectorSchemaRoot.create(db.schema("trades", allocator), allocator)) {
        String[] symbol = {"AAPL", "AAPL", "MSFT"};
        double[] price = {10.0, 20.0, 5.0};
        long[] volume = {100, 300, 10};
        long[] ts = {1000, 1500, 1200};
        batch.allocateNew();
        for (int i = 0; i < symbol.length; i++) {
          ((VarCharVector) batch.getVector("symbol"))
              .setSafe(i, symbol[i].getBytes(StandardCharsets.UTF_8));
          ((Float8Vector) batch.getVector("price")).setSafe(i, price[i]);
          ((BigIntVector) batch.getVector("volume")).setSafe(i, volume[i]);
          ((BigIntVector) batch.getVector("ts")).setSafe(i, ts[i]);
        }
        batch.setRowCount(symbol.length);
        trades.push(batch); // zero-copy, through the Arrow C Data Interface
        trades.watermark(Long.MAX_VALUE); // end of input: close every window
        db.runUntilIdle(); // or db.start() for a reactor thread
        VectorSchemaRoot result;
        while ((result = vwap.poll(Duration.ZERO)) != null) {
          try (VectorSchemaRoot rows = result) { // each batch is ours to close
            for (int r = 0; r < rows.getRowCount(); r++) {
              System.out.printf(
                  "%s window %d: vwap %.2f over %d trades%n",
                  rows.getVector("symbol").getObject(r),
                  rows.getVector("window_start").getObject(r),
                  rows.getVector("vwap").getObject(r),
                  rows.getVector("n").getObject(r));
            }
          }
        }
      }
    }
  }
}

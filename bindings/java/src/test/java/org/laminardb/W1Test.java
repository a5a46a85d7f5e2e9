package org.laminardb;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.junit.jupiter.api.Test;

/**
 * W1 (1-second tumbling VWAP) over 200,000 generated trades pushed from Java gives
 * exactly the rows the C API (w1_golden.c) and the Python binding (w1_golden.py) give
 * over the same data; ctest runs both fixtures first and passes their files as the
 * system properties laminardb.w1.golden.c / .py.
 */
class W1Test extends AllocatorTest {
  static final int ROWS = 200_000;
  static final int BATCH = 8192;

  /** W1's rows, pushed batch by batch with runUntilIdle, as sorted golden lines. */
  private List<String> runW1() {
    List<String> lines = new ArrayList<>();
    try (LaminarDB db = LaminarDB.open()) {
      db.execute(Trades.W1_SQL);
      try (Source source = db.source("trades");
          Subscription sub = db.subscribe("w1", allocator);
          VectorSchemaRoot root = VectorSchemaRoot.create(Trades.SCHEMA, allocator)) {
        for (long start = 0; start < ROWS; start += BATCH) {
          Trades.fill(root, start, (int) Math.min(BATCH, ROWS - start));
          source.push(root);
          db.runUntilIdle();
          drain(sub, lines);
        }
        source.watermark(Long.MAX_VALUE);
        db.runUntilIdle();
        drain(sub, lines);
      }
    }
    return Trades.sorted(lines);
  }

  private static void drain(Subscription sub, List<String> lines) {
    VectorSchemaRoot batch;
    while ((batch = sub.poll(Duration.ZERO)) != null) {
      try (VectorSchemaRoot b = batch) {
        Trades.lines(b, lines);
      }
    }
  }

  private static List<String> golden(String property) throws IOException {
    String path = System.getProperty(property);
    assumeTrue(path != null, property + " not set (ctest sets it)");
    return Files.readAllLines(Path.of(path), StandardCharsets.UTF_8);
  }

  @Test
  void sameRowsAsTheCApi() throws IOException {
    List<String> java = runW1();
    assertFalse(java.isEmpty());
    // 200 windows x 100 symbols, less the (window, symbol) pairs without a trade.
    assertEquals(true, java.size() > 19_900 && java.size() <= 20_000, "rows: " + java.size());
    assertEquals(golden("laminardb.w1.golden.c"), java);
  }

  @Test
  void sameRowsAsThePythonBinding() throws IOException {
    assertEquals(golden("laminardb.w1.golden.py"), runW1());
  }
}

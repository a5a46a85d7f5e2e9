package org.laminardb;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.VectorSchemaRoot;

/**
 * W1 (1-second tumbling VWAP, bench/bench_vwap.c's SQL) driven from Java: N generated
 * trades (shared/bench/README.md) in 8192-row VectorSchemaRoots, generated once (not
 * timed), pushed through Source.push (Arrow C Data export, zero-copy) and read back as
 * VectorSchemaRoots. Run by bench/run.sh next to limit_vwap and bench_vwap.
 *
 * <p>Modes, each timed from the first push to the last result in Java's hands, median
 * of --reps runs, a fresh database per run:
 *
 * <ul>
 *   <li>inline: per batch push + runUntilIdle + drain (poll with zero timeout); then
 *       watermark Long.MAX_VALUE, run, drain -- as bench_vwap's inline mode;
 *   <li>threaded: start(); a consumer thread polls while the main thread pushes.
 * </ul>
 *
 * <p>Before each mode, three untimed warm-up runs over all the data (JIT warm-up, as JMH's
 * warm-up iterations). Each run is checked: result rows = the (window, symbol) pairs holding a trade, and
 * the trades column sums to N. Usage: {@code W1Bench [N] [--reps R] [--batch B] [--mode
 * all|inline|threaded] [--w1b-rows-per-s X] [--c-rows-per-s Y]}; with X (limit_vwap's W1b)
 * and Y (bench_vwap's C W1 inline) each RESULT line carries the ratios.
 */
public final class W1Bench {
  private W1Bench() {}

  /** Untimed whole runs before each mode's timed runs (JIT warm-up). */
  private static final int WARMUP_RUNS = 3;

  private static final class Check {
    long rows;
    long trades;
  }

  private static void count(VectorSchemaRoot b, Check check) {
    BigIntVector trades = (BigIntVector) b.getVector("trades");
    for (int r = 0; r < b.getRowCount(); r++) {
      check.trades += trades.get(r);
    }
    check.rows += b.getRowCount();
  }

  private static void drain(Subscription sub, Check check) {
    VectorSchemaRoot batch;
    while ((batch = sub.poll(Duration.ZERO)) != null) {
      try (VectorSchemaRoot b = batch) {
        count(b, check);
      }
    }
  }

  private static Check inline(List<VectorSchemaRoot> batches, BufferAllocator allocator) {
    Check check = new Check();
    try (LaminarDB db = LaminarDB.open()) {
      db.execute(Trades.W1_SQL);
      try (Source source = db.source("trades");
          Subscription sub = db.subscribe("w1", allocator)) {
        for (VectorSchemaRoot root : batches) {
          source.push(root);
          db.runUntilIdle();
          drain(sub, check);
        }
        source.watermark(Long.MAX_VALUE);
        db.runUntilIdle();
        drain(sub, check);
      }
    }
    return check;
  }

  private static Check threaded(List<VectorSchemaRoot> batches, BufferAllocator allocator, long rows)
      throws InterruptedException {
    Check check = new Check();
    try (LaminarDB db = LaminarDB.open()) {
      db.execute(Trades.W1_SQL);
      try (Source source = db.source("trades");
          Subscription sub = db.subscribe("w1", allocator)) {
        AtomicLong failed = new AtomicLong();
        Thread consumer =
            new Thread(
                () -> {
                  try {
                    while (check.rows < rows) {
                      VectorSchemaRoot batch = sub.poll(Duration.ofMillis(100));
                      if (batch != null) {
                        try (VectorSchemaRoot b = batch) {
                          count(b, check);
                        }
                      }
                    }
                  } catch (RuntimeException e) {
                    e.printStackTrace();
                    failed.incrementAndGet();
                  }
                });
        consumer.start();
        db.start();
        for (VectorSchemaRoot root : batches) {
          source.push(root);
        }
        source.watermark(Long.MAX_VALUE);
        consumer.join();
        db.stop();
        if (failed.get() != 0) {
          throw new IllegalStateException("the consumer failed");
        }
      }
    }
    return check;
  }

  /** W1's result rows over events 0..n-1: (window, symbol) pairs holding a trade. */
  private static long expectedRowsOf(long n) {
    long rows = 0;
    boolean[] seen = new boolean[100];
    long window = Long.MIN_VALUE;
    for (long i = 0; i < n; i++) {
      long w = Math.floorDiv(Trades.TS0 + i, 1000); // ts rises by 1 ms per event
      if (w != window) {
        Arrays.fill(seen, false);
        window = w;
      }
      int s = (int) Long.remainderUnsigned(Trades.mix64((i + 1) * 0x9E3779B97F4A7C15L), 100);
      if (!seen[s]) {
        seen[s] = true;
        rows++;
      }
    }
    return rows;
  }

  public static void main(String[] args) throws InterruptedException {
    long n = 10_000_000;
    int reps = 3;
    int batchRows = 8192;
    String mode = "all";
    double w1b = 0;
    double cRate = 0;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--reps":
          reps = Integer.parseInt(args[++i]);
          break;
        case "--batch":
          batchRows = Integer.parseInt(args[++i]);
          break;
        case "--mode":
          mode = args[++i];
          break;
        case "--w1b-rows-per-s":
          w1b = Double.parseDouble(args[++i]);
          break;
        case "--c-rows-per-s":
          cRate = Double.parseDouble(args[++i]);
          break;
        default:
          n = (long) Double.parseDouble(args[i]);
      }
    }
    try (BufferAllocator allocator = new RootAllocator()) {
      long t0 = System.nanoTime();
      List<VectorSchemaRoot> batches = new ArrayList<>();
      for (long start = 0; start < n; start += batchRows) {
        batches.add(Trades.batch(allocator, start, (int) Math.min(batchRows, n - start)));
      }
      long expectedRows = expectedRowsOf(n);
      System.out.printf(
          "generated %d trades in %d batches of %d rows (%.1f s, not timed)%n",
          n, batches.size(), batchRows, (System.nanoTime() - t0) / 1e9);
      boolean ok = true;
      for (String m : List.of("inline", "threaded")) {
        if (!mode.equals("all") && !mode.equals(m)) {
          continue;
        }
        // Warm-up, not timed (as JMH's warm-up iterations): WARMUP_RUNS whole runs, so
        // the timed runs measure the JIT's final (C2) code of the push, poll and import
        // paths rather than the interpreter, C1 code and the compiler threads. One run
        // over the first ~1M rows (125 pushes) left those paths short of C2: the median
        // of 3 timed runs was 34.6 M rows/s where 40 runs settle at 41.4.
        for (int w = 0; w < WARMUP_RUNS; w++) {
          if (m.equals("inline")) {
            inline(batches, allocator);
          } else {
            threaded(batches, allocator, expectedRows);
          }
        }
        double[] seconds = new double[reps];
        for (int r = 0; r < reps; r++) {
          long start = System.nanoTime();
          Check check =
              m.equals("inline") ? inline(batches, allocator) : threaded(batches, allocator, expectedRows);
          seconds[r] = (System.nanoTime() - start) / 1e9;
          if (check.rows != expectedRows || check.trades != n) {
            System.out.printf(
                "CHECK FAILED %s: %d rows (expected %d), trades sum %d (expected %d)%n",
                m, check.rows, expectedRows, check.trades, n);
            ok = false;
          }
        }
        Arrays.sort(seconds);
        double median = seconds[reps / 2];
        double rate = n / median;
        String ratios = "";
        if (w1b > 0) {
          ratios += String.format("  %.3fx W1b", rate / w1b);
        }
        if (cRate > 0) {
          ratios += String.format("  %.3fx C", rate / cRate);
        }
        System.out.printf(
            "RESULT JW1 %-8s N=%d reps=%d median %.4f s  %8.2f M rows/s  %7.1f ns/event%s%n",
            m, n, reps, median, rate / 1e6, median * 1e9 / n, ratios);
      }
      for (VectorSchemaRoot root : batches) {
        root.close();
      }
      if (!ok) {
        System.exit(1);
      }
    }
  }
}

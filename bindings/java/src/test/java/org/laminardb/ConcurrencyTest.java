package org.laminardb;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.junit.jupiter.api.Test;

/** Handles used from several Java threads at once, as laminar.h allows. */
class ConcurrencyTest extends AllocatorTest {
  static final int THREADS = 4;
  static final int BATCHES = 200;
  static final int ROWS = 1000;

  @Test
  void fourThreadsPushThroughTheirOwnSources() throws Exception {
    StringBuilder sql = new StringBuilder();
    for (int t = 0; t < THREADS; t++) {
      sql.append(String.format("CREATE SOURCE t%d (v BIGINT, ts BIGINT);", t));
      sql.append(String.format("CREATE STREAM s%d AS SELECT v, ts FROM t%d WHERE v %% 2 = 0;", t, t));
    }
    // Each thread has its own child allocator, closed after the database: the core
    // holds the pushed buffers until it has processed them.
    List<BufferAllocator> allocators = new ArrayList<>();
    for (int t = 0; t < THREADS; t++) {
      allocators.add(allocator.newChildAllocator("t" + t, 0, Long.MAX_VALUE));
    }
    try (LaminarDB db = LaminarDB.open()) {
      db.execute(sql.toString());
      List<Subscription> subs = new ArrayList<>();
      for (int t = 0; t < THREADS; t++) {
        subs.add(db.subscribe("s" + t, allocator));
      }
      db.start();
      ExecutorService pool = Executors.newFixedThreadPool(THREADS);
      CountDownLatch go = new CountDownLatch(1);
      List<Future<Long>> pushed = new ArrayList<>();
      for (int t = 0; t < THREADS; t++) {
        final int id = t;
        pushed.add(
            pool.submit(
                () -> {
                  // Each thread: its own source, allocator and root.
                  BufferAllocator mine = allocators.get(id);
                  try (Source source = db.source("t" + id);
                      VectorSchemaRoot root =
                          VectorSchemaRoot.create(db.schema("t" + id, mine), mine)) {
                    go.await();
                    long expected = 0;
                    for (int b = 0; b < BATCHES; b++) {
                      BigIntVector v = (BigIntVector) root.getVector("v");
                      BigIntVector ts = (BigIntVector) root.getVector("ts");
                      root.allocateNew();
                      for (int r = 0; r < ROWS; r++) {
                        long value = (long) id * 1_000_000_000L + (long) b * ROWS + r;
                        v.setSafe(r, value);
                        ts.setSafe(r, (long) b * ROWS + r);
                        if (value % 2 == 0) {
                          expected += value;
                        }
                      }
                      root.setRowCount(ROWS);
                      source.push(root);
                    }
                    return expected;
                  }
                }));
      }
      go.countDown();
      long[] expected = new long[THREADS];
      for (int t = 0; t < THREADS; t++) {
        expected[t] = pushed.get(t).get(60, TimeUnit.SECONDS);
      }
      pool.shutdown();
      assertTrue(pool.awaitTermination(10, TimeUnit.SECONDS));
      db.stop(); // processes everything queued and delivers it
      for (int t = 0; t < THREADS; t++) {
        long sum = 0;
        long rows = 0;
        VectorSchemaRoot batch;
        while ((batch = subs.get(t).poll(Duration.ZERO)) != null) {
          try (VectorSchemaRoot b = batch) {
            BigIntVector v = (BigIntVector) b.getVector("v");
            for (int r = 0; r < b.getRowCount(); r++) {
              sum += v.get(r);
            }
            rows += b.getRowCount();
          }
        }
        assertEquals(BATCHES * ROWS / 2, rows, "stream s" + t);
        assertEquals(expected[t], sum, "stream s" + t);
      }
    } finally {
      for (BufferAllocator a : allocators) {
        a.close();
      }
    }
  }

  @Test
  void fourThreadsPushThroughClonesOfOneSource() throws Exception {
    BufferAllocator[] mine = new BufferAllocator[THREADS];
    for (int t = 0; t < THREADS; t++) {
      mine[t] = allocator.newChildAllocator("c" + t, 0, Long.MAX_VALUE);
    }
    try (LaminarDB db = LaminarDB.open()) {
      db.execute("CREATE SOURCE t (v BIGINT, ts BIGINT); CREATE STREAM s AS SELECT v FROM t;");
      Subscription sub = db.subscribe("s", allocator);
      Source first = db.source("t");
      List<Source> handles = new ArrayList<>();
      handles.add(first);
      for (int t = 1; t < THREADS; t++) {
        handles.add(first.clone());
      }
      db.start();
      ExecutorService pool = Executors.newFixedThreadPool(THREADS);
      List<Future<?>> done = new ArrayList<>();
      for (int t = 0; t < THREADS; t++) {
        final int id = t;
        done.add(
            pool.submit(
                () -> {
                  try (Source source = handles.get(id);
                      VectorSchemaRoot root =
                          VectorSchemaRoot.create(db.schema("t", mine[id]), mine[id])) {
                    for (int b = 0; b < BATCHES; b++) {
                      root.allocateNew();
                      BigIntVector v = (BigIntVector) root.getVector("v");
                      BigIntVector ts = (BigIntVector) root.getVector("ts");
                      for (int r = 0; r < ROWS; r++) {
                        v.setSafe(r, (long) id * 1_000_000_000L + (long) b * ROWS + r);
                        ts.setSafe(r, 0);
                      }
                      root.setRowCount(ROWS);
                      source.push(root);
                    }
                  }
                  return null;
                }));
      }
      for (Future<?> f : done) {
        f.get(60, TimeUnit.SECONDS);
      }
      pool.shutdown();
      db.stop();
      // Every row arrives once, and each producer's rows in the order it pushed them.
      long[] next = new long[THREADS];
      VectorSchemaRoot batch;
      while ((batch = sub.poll(Duration.ZERO)) != null) {
        try (VectorSchemaRoot b = batch) {
          BigIntVector v = (BigIntVector) b.getVector("v");
          for (int r = 0; r < b.getRowCount(); r++) {
            int id = (int) (v.get(r) / 1_000_000_000L);
            assertEquals(next[id], v.get(r) % 1_000_000_000L, "producer " + id);
            next[id]++;
          }
        }
      }
      for (int t = 0; t < THREADS; t++) {
        assertEquals((long) BATCHES * ROWS, next[t], "producer " + t);
      }
      sub.close();
    } finally {
      for (BufferAllocator a : mine) {
        a.close();
      }
    }
  }

  @Test
  void closeFromAnotherThreadEndsIteration() throws Exception {
    try (LaminarDB db = LaminarDB.open()) {
      db.execute("CREATE SOURCE t (v BIGINT, ts BIGINT); CREATE STREAM s AS SELECT v FROM t;");
      Subscription sub = db.subscribe("s", allocator);
      db.start();
      ExecutorService pool = Executors.newSingleThreadExecutor();
      CountDownLatch started = new CountDownLatch(1);
      Future<Integer> consumer =
          pool.submit(
              () -> {
                int n = 0;
                started.countDown();
                for (VectorSchemaRoot b : sub) { // blocks: nothing is pushed
                  b.close();
                  n++;
                }
                return n;
              });
      assertTrue(started.await(10, TimeUnit.SECONDS));
      Thread.sleep(150);
      assertFalse(consumer.isDone());
      sub.close();
      assertEquals(0, consumer.get(10, TimeUnit.SECONDS));
      pool.shutdown();
    }
  }

  @Test
  void databaseCloseWaitsForCallsInFlight() throws Exception {
    LaminarDB db = LaminarDB.open();
    db.execute("CREATE SOURCE t (v BIGINT, ts BIGINT); CREATE STREAM s AS SELECT v FROM t;");
    Subscription sub = db.subscribe("s", allocator);
    ExecutorService pool = Executors.newSingleThreadExecutor();
    CountDownLatch started = new CountDownLatch(1);
    Future<Object> waiter =
        pool.submit(
            () -> {
              started.countDown();
              return sub.poll(Duration.ofSeconds(30)); // ends when the db closes
            });
    assertTrue(started.await(10, TimeUnit.SECONDS));
    Thread.sleep(150);
    long t0 = System.nanoTime();
    db.close();
    assertEquals(null, waiter.get(10, TimeUnit.SECONDS));
    assertTrue(System.nanoTime() - t0 < 5_000_000_000L);
    assertTrue(sub.isClosed());
    pool.shutdown();
  }

  /** Run body(0), body(1), ... until it throws LaminarException; give its code. */
  private static java.util.concurrent.Callable<String> untilThrows(
      java.util.function.LongConsumer body) {
    return () -> {
      try {
        for (long i = 0; ; i++) {
          body.accept(i);
        }
      } catch (LaminarException e) {
        return e.code();
      }
    };
  }

  @Test
  void closingTheDatabaseUnderLoadNeverCrashes() throws Exception {
    // Producers, a consumer and a catalog caller run while the main thread closes the
    // database at an arbitrary moment: every call either works or throws LDB-9002
    // (closed), and nothing touches freed memory (the ASan run checks that too).
    List<BufferAllocator> allocators = new ArrayList<>();
    for (int r = 0; r < 20; r++) {
      final int round = r;
      LaminarDB db = LaminarDB.open();
      db.execute("CREATE SOURCE a (v BIGINT, ts BIGINT); CREATE SOURCE b (v BIGINT, ts BIGINT);"
          + "CREATE STREAM s AS SELECT v FROM a WHERE v > 10;");
      if (round % 2 == 0) {
        db.start();
      }
      BufferAllocator mine = allocator.newChildAllocator("round" + round, 0, Long.MAX_VALUE);
      allocators.add(mine);
      Subscription sub = db.subscribe("s", mine);
      ExecutorService pool = Executors.newFixedThreadPool(4);
      List<Future<String>> outcomes = new ArrayList<>();
      for (String name : List.of("a", "b")) {
        outcomes.add(
            pool.submit(
                () -> {
                  try (Source source = db.source(name);
                      VectorSchemaRoot root = VectorSchemaRoot.create(
                          db.schema(name, mine), mine)) {
                    for (long i = 0; ; i++) {
                      root.allocateNew();
                      ((BigIntVector) root.getVector("v")).setSafe(0, i);
                      ((BigIntVector) root.getVector("ts")).setSafe(0, i);
                      root.setRowCount(1);
                      source.push(root);
                    }
                  } catch (LaminarException e) {
                    return e.code();
                  }
                }));
      }
      outcomes.add(
          pool.submit(
              untilThrows(
                  i -> {
                    VectorSchemaRoot b = sub.poll(Duration.ofMillis(5));
                    if (b != null) {
                      b.close();
                    }
                  })));
      outcomes.add(
          pool.submit(
              untilThrows(
                  i -> {
                    db.execute("CREATE STREAM x" + i + " AS SELECT v FROM b;");
                    if (round % 2 == 1) {
                      db.runUntilIdle();
                    }
                  })));
      Thread.sleep(5 + 7 * round % 40);
      db.close();
      for (Future<String> outcome : outcomes) {
        String code = outcome.get(30, TimeUnit.SECONDS);
        assertTrue(code.equals("LDB-9002") || code.equals("LDB-3006"), code);
      }
      pool.shutdown();
      assertTrue(pool.awaitTermination(10, TimeUnit.SECONDS));
      assertTrue(sub.isClosed());
    }
    for (BufferAllocator a : allocators) {
      a.close();
    }
  }
}

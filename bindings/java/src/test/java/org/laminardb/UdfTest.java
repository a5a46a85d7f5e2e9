package org.laminardb;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Scalar user-defined functions from Java: vectorized (Arrow FieldVectors) and per row,
 * against the same expression in SQL and a Java model of the rows; NULL handling;
 * errors (LDB-3010, 3011, re-entry LDB-9002); the reactor thread; 10^6 calls in a
 * bounded memory; a durable restart with the functions registered in the config.
 */
class UdfTest {
  /** Fixed, printed, and overridable with -Dlaminardb.seed. */
  static final long SEED = Long.getLong("laminardb.seed", 20261128L);

  public record In(long k, Long x, long ts) {}

  public record Out(long k, Long x, Long a, Long b, Long r) {}

  /** x * 2 + 1 over a chunk, NULL rows never passed (the default null handling). */
  static FieldVector affine(List<FieldVector> args, BufferAllocator allocator) {
    BigIntVector x = (BigIntVector) args.get(0);
    int n = x.getValueCount();
    BigIntVector out = new BigIntVector("affine", allocator);
    out.allocateNew(n);
    for (int i = 0; i < n; i++) {
      if (x.isNull(i)) {
        throw new IllegalStateException("a NULL argument was passed");
      }
      out.set(i, x.get(i) * 2 + 1);
    }
    out.setValueCount(n);
    return out;
  }

  static List<In> randomRows(Random rng, int n, long ts0) {
    List<In> rows = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      Long x = rng.nextInt(10) == 0 ? null : (long) (rng.nextInt(2001) - 1000);
      rows.add(new In(rng.nextInt(5), x, ts0 + i));
    }
    return rows;
  }

  static <T> List<T> drain(TypedSubscription<T> sub) {
    List<T> all = new ArrayList<>();
    List<T> got;
    while (!(got = sub.poll(Duration.ZERO)).isEmpty()) {
      all.addAll(got);
    }
    return all;
  }

  /** The rows of a query as lists of column values (Arrow's getObject). */
  static List<List<Object>> query(LaminarDB db, String sql) throws IOException {
    List<List<Object>> rows = new ArrayList<>();
    try (BufferAllocator allocator = new RootAllocator();
        ArrowReader reader = db.query(sql, allocator)) {
      while (reader.loadNextBatch()) {
        VectorSchemaRoot root = reader.getVectorSchemaRoot();
        for (int r = 0; r < root.getRowCount(); r++) {
          List<Object> row = new ArrayList<>();
          for (FieldVector v : root.getFieldVectors()) {
            row.add(v.getObject(r));
          }
          rows.add(row);
        }
      }
    }
    return rows;
  }

  @Test
  void vectorAndRowFunctionsEqualSqlAndTheModel() {
    System.out.println("UdfTest seed " + SEED);
    Random rng = new Random(SEED);
    try (LaminarDB db = LaminarDB.open()) {
      db.createFunction("affine", UdfTest::affine, List.of("BIGINT"), "BIGINT");
      db.createRowFunction(
          "affine_row",
          args -> (Long) args[0] * 2 + 1,
          List.of("BIGINT"),
          "BIGINT",
          FunctionOptions.defaults().deterministic(true));
      db.execute(
          "CREATE SOURCE t (k BIGINT, x BIGINT, ts BIGINT);"
              + "CREATE STREAM s AS SELECT k, x, affine(x) AS a, x * 2 + 1 AS b,"
              + " affine_row(x) AS r FROM t;"
              + "CREATE STREAM f AS SELECT k, x, affine(x) AS a, x * 2 + 1 AS b, affine(3) AS r"
              + " FROM t WHERE affine(x) > 100;");
      List<In> pushed = new ArrayList<>();
      try (TypedSource<In> t = db.source("t", In.class);
          TypedSubscription<Out> s = db.subscribe("s", Out.class);
          TypedSubscription<Out> f = db.subscribe("f", Out.class)) {
        for (int chunk = 0; chunk < 40; chunk++) {
          List<In> rows = randomRows(rng, 1 + rng.nextInt(300), pushed.size());
          t.push(rows);
          pushed.addAll(rows);
        }
        db.runUntilIdle();
        List<Out> all = drain(s);
        assertEquals(pushed.size(), all.size());
        List<Out> filtered = drain(f);
        int expectFiltered = 0;
        for (int i = 0; i < pushed.size(); i++) {
          In in = pushed.get(i);
          Out out = all.get(i);
          Long model = in.x() == null ? null : in.x() * 2 + 1;
          assertEquals(in.x(), out.x());
          assertEquals(model, out.a(), "row " + i);
          assertEquals(out.b(), out.a(), "row " + i);
          assertEquals(model, out.r(), "row " + i);
          if (model != null && model > 100) {
            Out kept = filtered.get(expectFiltered++);
            assertEquals(in.x(), kept.x());
            assertEquals(model, kept.a());
            assertEquals(7L, kept.r());
          }
        }
        assertEquals(expectFiltered, filtered.size());
        assertTrue(expectFiltered > 0);
      }
    }
  }

  public record Named(String name, Double v, long ts) {}

  public record Label(String name, Double v, String l) {}

  @Test
  void calledOnNullSeesNullsAndTextRoundTrips() {
    try (LaminarDB db = LaminarDB.open()) {
      db.createRowFunction(
          "label",
          args -> (args[0] == null ? "∅" : (String) args[0]) + ":" + (args[1] == null ? "none" : args[1]),
          List.of("VARCHAR", "DOUBLE"),
          "VARCHAR",
          FunctionOptions.defaults().calledOnNull(true));
      db.execute(
          "CREATE SOURCE n (name VARCHAR, v DOUBLE, ts BIGINT);"
              + "CREATE STREAM s AS SELECT name, v, label(name, v) AS l FROM n;");
      List<Named> rows =
          List.of(
              new Named("a", 1.5, 1),
              new Named(null, 2.0, 2),
              new Named("日本", null, 3),
              new Named(null, null, 4));
      try (TypedSource<Named> n = db.source("n", Named.class);
          TypedSubscription<Label> s = db.subscribe("s", Label.class)) {
        n.push(rows);
        db.runUntilIdle();
        List<Label> out = drain(s);
        assertEquals(4, out.size());
        for (int i = 0; i < 4; i++) {
          Named in = rows.get(i);
          String model =
              (in.name() == null ? "∅" : in.name()) + ":" + (in.v() == null ? "none" : in.v());
          assertEquals(model, out.get(i).l());
        }
      }
    }
  }

  /** A function that throws on x == 13, returns null on 14, and the wrong type on 15. */
  static FieldVector faulty(List<FieldVector> args, BufferAllocator allocator) {
    BigIntVector x = (BigIntVector) args.get(0);
    for (int i = 0; i < x.getValueCount(); i++) {
      if (x.get(i) == 13) {
        throw new IllegalStateException("risk model diverged");
      }
      if (x.get(i) == 14) {
        return null;
      }
      if (x.get(i) == 15) {
        Float8Vector wrong = new Float8Vector("wrong", allocator);
        wrong.allocateNew(x.getValueCount());
        wrong.setValueCount(x.getValueCount());
        return wrong;
      }
    }
    return affine(args, allocator);
  }

  @Test
  void errorsAreLdbCodesAndTheStreamGoesOn() {
    try (LaminarDB db = LaminarDB.open()) {
      db.createFunction("faulty", UdfTest::faulty, List.of("BIGINT"), "BIGINT");
      db.execute(
          "CREATE SOURCE t (k BIGINT, x BIGINT, ts BIGINT);"
              + "CREATE STREAM s AS SELECT k, x, faulty(x) AS a, x * 2 + 1 AS b, x AS r FROM t;");
      try (TypedSource<In> t = db.source("t", In.class);
          TypedSubscription<Out> s = db.subscribe("s", Out.class)) {
        t.push(new In(1, 13L, 1));
        LaminarException e = assertThrows(LaminarException.class, db::runUntilIdle);
        assertEquals("LDB-3010", e.code());
        assertTrue(e.getMessage().contains("function 'faulty' failed"), e.getMessage());
        assertTrue(e.getMessage().contains("stream 's'"), e.getMessage());
        assertTrue(
            e.getMessage().contains("java.lang.IllegalStateException: risk model diverged"),
            e.getMessage());
        assertTrue(e.getMessage().contains("UdfTest.faulty"), e.getMessage());

        t.push(new In(1, 14L, 2));
        e = assertThrows(LaminarException.class, db::runUntilIdle);
        assertEquals("LDB-3010", e.code());
        assertTrue(e.getMessage().contains("returned null"), e.getMessage());

        t.push(new In(1, 15L, 3));
        e = assertThrows(LaminarException.class, db::runUntilIdle);
        assertEquals("LDB-3011", e.code());
        assertTrue(e.getMessage().contains("'faulty'"), e.getMessage());

        t.push(new In(2, 20L, 4));
        db.runUntilIdle(); // the stream goes on; the failed batches emitted nothing
        List<Out> out = drain(s);
        assertEquals(1, out.size());
        assertEquals(41L, out.get(0).a());
      }
    }
  }

  @Test
  void aFunctionThatUsesTheDatabaseGetsLdb9002() throws IOException {
    try (LaminarDB db = LaminarDB.open()) {
      AtomicLong seen = new AtomicLong();
      db.createFunction(
          "reenter",
          (args, allocator) -> {
            try {
              db.execute("CREATE SOURCE other (x BIGINT)");
            } catch (LaminarException e) {
              seen.set(e.number());
              throw e;
            }
            return affine(args, allocator);
          },
          List.of("BIGINT"),
          "BIGINT");
      db.execute(
          "CREATE SOURCE t (k BIGINT, x BIGINT, ts BIGINT);"
              + "CREATE STREAM s AS SELECT reenter(x) AS a FROM t;");
      try (TypedSource<In> t = db.source("t", In.class)) {
        t.push(new In(1, 1L, 1));
        LaminarException e = assertThrows(LaminarException.class, db::runUntilIdle);
        assertEquals("LDB-3010", e.code());
        assertEquals(9002, seen.get());
        assertTrue(
            e.getMessage().contains("called the database from inside its callback"),
            e.getMessage());
      }
      assertEquals(1, query(db, "SHOW FUNCTIONS").size()); // the database still answers
    }
  }

  @Test
  void registrationErrors() {
    try (LaminarDB db = LaminarDB.open()) {
      LaminarException e =
          assertThrows(
              LaminarException.class,
              () -> db.createFunction("f", UdfTest::affine, List.of("DECIMAL"), "BIGINT"));
      assertEquals("LDB-2002", e.code());
      assertTrue(e.getMessage().contains("DECIMAL"), e.getMessage());
      e =
          assertThrows(
              LaminarException.class,
              () -> db.createFunction("abs", UdfTest::affine, List.of("BIGINT"), "BIGINT"));
      assertEquals("LDB-1004", e.code());
      db.createFunction("f", UdfTest::affine, List.of("BIGINT"), "BIGINT");
      db.execute("CREATE SOURCE t (x BIGINT); CREATE STREAM s AS SELECT f(x) AS y FROM t;");
      e = assertThrows(LaminarException.class, () -> db.dropFunction("f"));
      assertEquals("LDB-1007", e.code());
      db.execute("DROP STREAM s");
      db.dropFunction("f");
      e = assertThrows(LaminarException.class, () -> db.dropFunction("f"));
      assertEquals("LDB-1101", e.code());
    }
  }

  @Test
  void aFailureOnTheReactorIsThrownByStop() {
    try (LaminarDB db = LaminarDB.open()) {
      db.createFunction("faulty", UdfTest::faulty, List.of("BIGINT"), "BIGINT");
      db.execute(
          "CREATE SOURCE t (k BIGINT, x BIGINT, ts BIGINT);"
              + "CREATE STREAM s AS SELECT k, x, faulty(x) AS a, x AS b, x AS r FROM t;");
      try (TypedSource<In> t = db.source("t", In.class);
          TypedSubscription<Out> s = db.subscribe("s", Out.class)) {
        db.start();
        t.push(new In(1, 13L, 1));
        t.push(new In(1, 5L, 2));
        LaminarException e = assertThrows(LaminarException.class, db::stop);
        assertEquals("LDB-3010", e.code());
        assertTrue(e.getMessage().contains("risk model diverged"), e.getMessage());
        List<Out> out = drain(s);
        assertEquals(1, out.size()); // the next batch went through
        assertEquals(11L, out.get(0).a());
      }
    }
  }

  @Test
  void theReactorIsAttachedOnceAndDetachedAtStop() throws Exception {
    java.util.Set<Thread> threads = java.util.concurrent.ConcurrentHashMap.newKeySet();
    try (LaminarDB db = LaminarDB.open()) {
      db.createFunction(
          "where_am_i",
          (args, allocator) -> {
            threads.add(Thread.currentThread());
            return affine(args, allocator);
          },
          List.of("BIGINT"),
          "BIGINT");
      db.execute(
          "CREATE SOURCE t (k BIGINT, x BIGINT, ts BIGINT);"
              + "CREATE STREAM s AS SELECT where_am_i(x) AS a FROM t;");
      try (TypedSource<In> t = db.source("t", In.class)) {
        for (int round = 0; round < 2; round++) {
          threads.clear();
          db.start();
          for (int i = 0; i < 50; i++) {
            t.push(new In(1, (long) i, i));
          }
          db.stop();
          assertEquals(1, threads.size(), threads.toString());
          Thread reactor = threads.iterator().next();
          assertEquals("laminardb-reactor", reactor.getName());
          assertTrue(reactor.isDaemon());
          assertFalse(reactor == Thread.currentThread());
          reactor.join(10_000); // detached when the reactor thread ends, at stop()
          assertFalse(reactor.isAlive());
        }
      }
    }
  }

  public record Typed(Integer i, Boolean b, java.time.Instant t, long ts) {}

  public record TypedOut(
      Integer i2, Integer si2, Boolean nb, Boolean snb, java.time.Instant t1, java.time.Instant st1,
      String d, String sd) {}

  @Test
  void rowFunctionsOverIntBooleanTimestampAndDate() {
    try (LaminarDB db = LaminarDB.open()) {
      db.createRowFunction("twice", a -> (Integer) a[0] * 2, List.of("INT"), "INT");
      db.createRowFunction("flip", a -> !(Boolean) a[0], List.of("BOOLEAN"), "BOOLEAN");
      db.createRowFunction(
          "later", a -> ((java.time.Instant) a[0]).plusSeconds(1), List.of("TIMESTAMP"), "TIMESTAMP");
      db.createRowFunction(
          "day_after",
          a -> ((java.time.LocalDate) a[0]).plusDays(1).toString(),
          List.of("DATE"),
          "VARCHAR");
      db.execute(
          "CREATE SOURCE s (i INT, b BOOLEAN, t TIMESTAMP, ts BIGINT);"
              + "CREATE STREAM o AS SELECT twice(i) AS i2, i * 2 AS si2, flip(b) AS nb,"
              + " NOT b AS snb, later(t) AS t1, t + INTERVAL '1' SECOND AS st1,"
              + " day_after(CAST('2024-02-28' AS DATE)) AS d, '2024-02-29' AS sd FROM s;");
      try (TypedSource<Typed> src = db.source("s", Typed.class);
          TypedSubscription<TypedOut> o = db.subscribe("o", TypedOut.class)) {
        src.push(
            List.of(
                new Typed(21, true, java.time.Instant.parse("2024-01-01T00:00:00.123456Z"), 1),
                new Typed(null, null, null, 2),
                new Typed(-4, false, java.time.Instant.parse("1969-12-31T23:59:59.5Z"), 3)));
        db.runUntilIdle();
        List<TypedOut> out = drain(o);
        assertEquals(3, out.size());
        for (TypedOut r : out) {
          assertEquals(r.si2(), r.i2());
          assertEquals(r.snb(), r.nb());
          assertEquals(r.st1(), r.t1());
          assertEquals(r.sd(), r.d());
        }
        assertEquals(42, out.get(0).i2());
        assertEquals(null, out.get(1).t1());
      }
    }
  }

  private static long rssKiB() throws IOException {
    for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
      if (line.startsWith("VmRSS:")) {
        return Long.parseLong(line.replaceAll("[^0-9]", ""));
      }
    }
    throw new IOException("no VmRSS in /proc/self/status");
  }

  /** True when the test JVM runs with AddressSanitizer preloaded (scripts/test.sh step 2). */
  static boolean underAsan() {
    String preload = System.getenv("LD_PRELOAD");
    return preload != null && preload.contains("asan");
  }

  /**
   * A million calls on the reactor thread (attached to the JVM once) in bounded memory:
   * 100 calls per chunk (one per call site), 10,000 chunks. RSS is taken after the
   * first 20% (JIT, arenas and the Arrow allocators at their steady size) and at the
   * end; the heap is fixed and pre-touched (pom.xml), so RSS moves with native memory.
   * Measured: -8..+2 MiB; a leak of 16 bytes per call (one JNI local reference, say)
   * would add 12 MiB. Under ASan, whose quarantine keeps freed memory, the bound means
   * nothing: there it makes 10^5 calls for the memory checks and prints RSS only.
   */
  @Test
  void aMillionCallsOnTheReactorInBoundedMemory() throws Exception {
    int sites = 100;
    int chunks = underAsan() ? 1_000 : 10_000;
    AtomicLong calls = new AtomicLong();
    try (LaminarDB db = LaminarDB.open(new Config().bufferSize(64))) {
      db.createFunction(
          "count_calls",
          (args, allocator) -> {
            calls.incrementAndGet();
            return affine(args, allocator);
          },
          List.of("BIGINT"),
          "BIGINT");
      StringBuilder select = new StringBuilder("CREATE STREAM s AS SELECT ");
      for (int i = 0; i < sites; i++) {
        select.append(i == 0 ? "" : ", ").append("count_calls(x + ").append(i).append(") AS c").append(i);
      }
      db.execute("CREATE SOURCE t (k BIGINT, x BIGINT, ts BIGINT);" + select + " FROM t;");
      long start = System.nanoTime();
      long before = 0;
      try (TypedSource<In> t = db.source("t", In.class)) {
        db.start();
        List<In> row = List.of(new In(1, 1L, 1));
        for (int c = 0; c < chunks; c++) {
          t.push(row);
          if (c == chunks / 5) {
            while (calls.get() < (long) sites * (chunks / 5)) {
              Thread.sleep(1);
            }
            System.gc();
            before = rssKiB();
          }
        }
        db.stop(); // processes what is queued
      }
      System.gc();
      long after = rssKiB();
      System.out.printf(
          "UdfTest: %d calls on the reactor in %.1f s, RSS %d KiB -> %d KiB%n",
          calls.get(), (System.nanoTime() - start) / 1e9, before, after);
      assertEquals((long) sites * chunks, calls.get());
      if (!underAsan()) {
        assertTrue(after - before < 12 * 1024, "RSS grew by " + (after - before) + " KiB");
      }
    }
  }

  static VectorFunction usd() {
    return (args, allocator) -> {
      Float8Vector p = (Float8Vector) args.get(0);
      Float8Vector out = new Float8Vector("usd", allocator);
      out.allocateNew(p.getValueCount());
      for (int i = 0; i < p.getValueCount(); i++) {
        out.set(i, p.get(i) * 2.0);
      }
      out.setValueCount(p.getValueCount());
      return out;
    };
  }

  static Config durable(Path dir) {
    return new Config().dataDir(dir).set("checkpoint_interval", "10 min").set("wal_mode", "sync");
  }

  public record Price(Double p) {}

  @Test
  void aDurableRestartNeedsTheFunctionsInTheConfig(@TempDir Path dir) throws IOException {
    try (LaminarDB db =
        LaminarDB.open(durable(dir).function("usd", usd(), List.of("DOUBLE"), "DOUBLE", null))) {
      db.execute(
          "CREATE SOURCE u (p DOUBLE); CREATE MATERIALIZED VIEW v AS SELECT usd(p) AS d FROM u;");
      try (TypedSource<Price> u = db.source("u", Price.class)) {
        u.push(new Price(1.0));
        db.runUntilIdle();
        db.checkpoint();
        u.push(new Price(2.0)); // in the WAL only: replayed through usd at open
      }
    }
    LaminarException e = assertThrows(LaminarException.class, () -> LaminarDB.open(durable(dir)));
    assertEquals("LDB-5002", e.code());
    assertTrue(e.getMessage().contains("unknown function 'usd'"), e.getMessage());
    try (LaminarDB db =
        LaminarDB.open(durable(dir).function("usd", usd(), List.of("DOUBLE"), "DOUBLE", null))) {
      try (TypedSource<Price> u = db.source("u", Price.class)) {
        u.push(new Price(3.0));
        db.runUntilIdle();
      }
      List<List<Object>> rows = query(db, "SELECT d FROM v ORDER BY d");
      assertEquals(List.of(List.of(2.0), List.of(4.0), List.of(6.0)), rows);
      assertFalse(db.isClosed());
    }
  }
}

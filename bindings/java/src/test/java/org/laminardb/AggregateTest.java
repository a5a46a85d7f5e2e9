package org.laminardb;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.Float8Vector;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

/**
 * Aggregates from Java: a sum-of-squares aggregate against SQL's {@code SUM(x * x)} and
 * a Java model over the same seeded rows, in tumbling and hop windows (merge), with
 * one and two cores, over a changelog (retract, EMIT CHANGES), across a checkpoint and
 * restart; errors.
 */
class AggregateTest {
  static final String SOURCE =
      "CREATE SOURCE trades (symbol VARCHAR, price DOUBLE, ts BIGINT,"
          + " WATERMARK FOR ts AS ts - INTERVAL '0' SECOND);";
  static final String TUMBLE =
      "CREATE STREAM w AS SELECT symbol, window_start, sumsq(price) AS sq,"
          + " SUM(price * price) AS b FROM trades"
          + " GROUP BY symbol, tumble(ts, INTERVAL '100' MILLISECOND) EMIT ON WINDOW CLOSE;";

  /** SUM(x * x) over a (sum, rows) state, NULL for no rows, as SUM; retractable. */
  static final class SumSquares implements AggregateFunction<double[]> {
    @Override
    public double[] init() {
      return new double[2];
    }

    @Override
    public double[] update(double[] s, List<FieldVector> args) {
      return add(s, (Float8Vector) args.get(0), 1);
    }

    @Override
    public double[] retract(double[] s, List<FieldVector> args) {
      return add(s, (Float8Vector) args.get(0), -1);
    }

    private static double[] add(double[] s, Float8Vector x, int sign) {
      for (int i = 0; i < x.getValueCount(); i++) {
        s[0] += sign * x.get(i) * x.get(i);
        s[1] += sign;
      }
      return s;
    }

    @Override
    public double[] merge(double[] a, double[] b) {
      a[0] += b[0];
      a[1] += b[1];
      return a;
    }

    @Override
    public Object finalize(double[] s) {
      return s[1] > 0 ? s[0] : null;
    }
  }

  /** max - min, no retract. */
  static final class Spread implements AggregateFunction<double[]> {
    @Override
    public double[] init() {
      return new double[] {Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY};
    }

    @Override
    public double[] update(double[] s, List<FieldVector> args) {
      Float8Vector x = (Float8Vector) args.get(0);
      for (int i = 0; i < x.getValueCount(); i++) {
        s[0] = Math.min(s[0], x.get(i));
        s[1] = Math.max(s[1], x.get(i));
      }
      return s;
    }

    @Override
    public double[] merge(double[] a, double[] b) {
      return new double[] {Math.min(a[0], b[0]), Math.max(a[1], b[1])};
    }

    @Override
    public Object finalize(double[] s) {
      return s[1] >= s[0] ? s[1] - s[0] : null;
    }
  }

  public record Trade(String symbol, Double price, long ts) {}

  public record Win(String symbol, long windowStart, Double sq, Double b) {}

  public record Two(String symbol, Double w, Double bw, Long n, Long bn) {}

  /** SUM(x * y) over two arguments. */
  static final class WeightedSum implements AggregateFunction<Double> {
    @Override
    public Double init() {
      return null;
    }

    @Override
    public Double update(Double s, List<FieldVector> args) {
      Float8Vector x = (Float8Vector) args.get(0);
      org.apache.arrow.vector.BigIntVector y = (org.apache.arrow.vector.BigIntVector) args.get(1);
      double sum = s == null ? 0.0 : s;
      for (int i = 0; i < x.getValueCount(); i++) {
        sum += x.get(i) * y.get(i);
      }
      return sum;
    }

    @Override
    public Double merge(Double a, Double b) {
      return a == null ? b : b == null ? a : a + b;
    }

    @Override
    public Object finalize(Double s) {
      return s;
    }
  }

  /** COUNT(*) including NULLs: called on NULL input, a BIGINT result, its own bytes. */
  static final class CountAll implements AggregateFunction<long[]> {
    @Override
    public long[] init() {
      return new long[1];
    }

    @Override
    public long[] update(long[] s, List<FieldVector> args) {
      s[0] += args.get(0).getValueCount();
      return s;
    }

    @Override
    public long[] merge(long[] a, long[] b) {
      return new long[] {a[0] + b[0]};
    }

    @Override
    public Object finalize(long[] s) {
      return s[0];
    }

    @Override
    public byte[] serialize(long[] s) {
      return java.nio.ByteBuffer.allocate(8).putLong(s[0]).array();
    }

    @Override
    public long[] deserialize(byte[] data) {
      return new long[] {java.nio.ByteBuffer.wrap(data).getLong()};
    }
  }

  public record Traded(String symbol, Double price, Long volume, long ts) {}

  @ParameterizedTest
  @ValueSource(ints = {1, 2})
  void twoArgumentsNullsAndBigintResults(int cores) {
    Random rng = new Random(UdfTest.SEED + 4);
    List<Traded> rows = new ArrayList<>();
    for (int i = 0; i < 1500; i++) {
      rows.add(
          new Traded(
              String.valueOf((char) ('A' + rng.nextInt(3))),
              rng.nextInt(10) == 0 ? null : (double) rng.nextInt(1000) / 10,
              rng.nextInt(10) == 0 ? null : (long) rng.nextInt(100),
              i));
    }
    try (LaminarDB db = LaminarDB.open(new Config().set("cores", Integer.toString(cores)))) {
      db.createAggregate("wsum", new WeightedSum(), List.of("DOUBLE", "BIGINT"), "DOUBLE");
      db.createAggregate(
          "count_all",
          new CountAll(),
          List.of("DOUBLE"),
          "BIGINT",
          FunctionOptions.defaults().calledOnNull(true));
      db.execute(
          "CREATE SOURCE trades (symbol VARCHAR, price DOUBLE, volume BIGINT, ts BIGINT,"
              + " WATERMARK FOR ts AS ts);"
              + "CREATE STREAM w AS SELECT symbol, wsum(price, volume) AS w,"
              + " SUM(price * volume) AS bw, count_all(price) AS n, COUNT(*) AS bn FROM trades"
              + " GROUP BY symbol, tumble(ts, INTERVAL '100' MILLISECOND) EMIT ON WINDOW CLOSE;");
      try (TypedSource<Traded> t = db.source("trades", Traded.class);
          TypedSubscription<Two> w = db.subscribe("w", Two.class)) {
        for (int i = 0; i < rows.size(); i += 61) {
          t.push(rows.subList(i, Math.min(rows.size(), i + 61)));
          db.runUntilIdle();
        }
        t.watermark(Long.MAX_VALUE / 2);
        db.runUntilIdle();
        List<Two> out = UdfTest.drain(w);
        assertEquals(15 * 3, out.size());
        for (Two r : out) {
          assertTrue(close(r.w(), r.bw()), r.toString());
          assertEquals(r.bn(), r.n(), r.toString());
        }
      }
    }
  }

  /** n rows, ts ascending with gaps, 4 symbols, prices with 15% NULLs. */
  static List<Trade> trades(Random rng, int n) {
    List<Trade> rows = new ArrayList<>();
    long ts = 0;
    for (int i = 0; i < n; i++) {
      ts += 1 + rng.nextInt(5) + (i % 50 == 0 ? 40 : 0);
      Double price = rng.nextInt(100) < 15 ? null : Math.round(rng.nextDouble() * 9900 + 100) / 100.0;
      rows.add(new Trade(String.valueOf((char) ('A' + rng.nextInt(4))), price, ts));
    }
    return rows;
  }

  static void feed(LaminarDB db, List<Trade> rows) {
    try (TypedSource<Trade> t = db.source("trades", Trade.class)) {
      for (int i = 0; i < rows.size(); i += 97) {
        t.push(rows.subList(i, Math.min(rows.size(), i + 97)));
        db.runUntilIdle();
      }
    }
  }

  static void closeAll(LaminarDB db) {
    try (Source t = db.source("trades")) {
      t.watermark(Long.MAX_VALUE / 2);
    }
    db.runUntilIdle();
  }

  static boolean close(Double a, Double b) {
    if (a == null || b == null) {
      return a == null && b == null;
    }
    return Math.abs(a - b) <= 1e-9 * Math.max(1.0, Math.abs(b));
  }

  /** The model: per (symbol, window start) the sum of squares, NULL if no price. */
  static Map<String, Double> model(List<Trade> rows) {
    Map<String, Double> out = new TreeMap<>();
    for (Trade t : rows) {
      String key = t.symbol() + "@" + (t.ts() - t.ts() % 100);
      Double sq = out.get(key);
      if (t.price() != null) {
        sq = (sq == null ? 0.0 : sq) + t.price() * t.price();
      }
      out.put(key, sq);
    }
    return out;
  }

  static Map<String, Double> byKey(List<Win> rows) {
    Map<String, Double> out = new TreeMap<>();
    for (Win w : rows) {
      assertTrue(close(w.sq(), w.b()), w.toString());
      assertNull(out.put(w.symbol() + "@" + w.windowStart(), w.sq()), "twice: " + w);
    }
    return out;
  }

  static void assertModel(Map<String, Double> want, Map<String, Double> got) {
    assertEquals(want.keySet(), got.keySet());
    for (Map.Entry<String, Double> e : want.entrySet()) {
      assertTrue(close(got.get(e.getKey()), e.getValue()), e.getKey() + ": " + got.get(e.getKey()) + " vs " + e.getValue());
    }
  }

  @ParameterizedTest
  @ValueSource(ints = {1, 2})
  void tumbleEqualsSumOfSquaresAndTheModel(int cores) {
    System.out.println("AggregateTest seed " + UdfTest.SEED + ", cores " + cores);
    List<Trade> rows = trades(new Random(UdfTest.SEED), 2000);
    try (LaminarDB db = LaminarDB.open(new Config().set("cores", Integer.toString(cores)))) {
      db.createAggregate("sumsq", new SumSquares(), List.of("DOUBLE"), "DOUBLE");
      db.execute(SOURCE + TUMBLE);
      try (TypedSubscription<Win> w = db.subscribe("w", Win.class)) {
        feed(db, rows);
        closeAll(db);
        assertModel(model(rows), byKey(UdfTest.drain(w)));
      }
    }
  }

  public record Hop(String symbol, Double sq, Double b, Double spread, Double bspread) {}

  @ParameterizedTest
  @ValueSource(ints = {1, 2})
  void hopAndSessionWindowsEqualTheBuiltins(int cores) {
    List<Trade> rows = trades(new Random(UdfTest.SEED + 1), 2000);
    try (LaminarDB db = LaminarDB.open(new Config().set("cores", Integer.toString(cores)))) {
      db.createAggregate("sumsq", new SumSquares(), List.of("DOUBLE"), "DOUBLE");
      db.createAggregate("spread", new Spread(), List.of("DOUBLE"), "DOUBLE");
      db.execute(
          SOURCE
              + "CREATE STREAM w AS SELECT symbol, sumsq(price) AS sq, SUM(price * price) AS b,"
              + " spread(price) AS spread, MAX(price) - MIN(price) AS bspread FROM trades"
              + " GROUP BY symbol, hop(ts, INTERVAL '100' MILLISECOND, INTERVAL '30' MILLISECOND)"
              + " HAVING sumsq(price) > 100 EMIT ON WINDOW CLOSE;"
              + "CREATE STREAM ss AS SELECT symbol, sumsq(price) AS sq, SUM(price * price) AS b,"
              + " spread(price) AS spread, MAX(price) - MIN(price) AS bspread FROM trades"
              + " GROUP BY symbol, session(ts, INTERVAL '20' MILLISECOND) EMIT ON WINDOW CLOSE;");
      try (TypedSubscription<Hop> w = db.subscribe("w", Hop.class);
          TypedSubscription<Hop> ss = db.subscribe("ss", Hop.class)) {
        feed(db, rows);
        closeAll(db);
        List<Hop> out = UdfTest.drain(w);
        assertFalse(out.isEmpty());
        for (Hop h : out) {
          assertTrue(h.sq() > 100, h.toString());
          assertTrue(close(h.sq(), h.b()), h.toString());
          assertTrue(close(h.spread(), h.bspread()), h.toString());
        }
        List<Hop> sessions = UdfTest.drain(ss);
        assertFalse(sessions.isEmpty());
        for (Hop h : sessions) {
          assertTrue(close(h.sq(), h.b()), h.toString());
          assertTrue(close(h.spread(), h.bspread()), h.toString());
        }
      }
    }
  }

  @Test
  void changelogNeedsRetractAndEqualsTheModel() throws IOException {
    List<Trade> rows = trades(new Random(UdfTest.SEED + 2), 1500);
    try (LaminarDB db = LaminarDB.open()) {
      db.createAggregate("sumsq", new SumSquares(), List.of("DOUBLE"), "DOUBLE");
      db.createAggregate("spread", new Spread(), List.of("DOUBLE"), "DOUBLE");
      db.execute(
          SOURCE
              + "CREATE STREAM totals AS SELECT symbol, SUM(price) AS t FROM trades"
              + " GROUP BY symbol EMIT CHANGES;"
              + "CREATE MATERIALIZED VIEW sq AS SELECT sumsq(t) AS s, SUM(t * t) AS b FROM totals"
              + " EMIT CHANGES;");
      LaminarException e =
          assertThrows(
              LaminarException.class,
              () -> db.execute("CREATE STREAM g AS SELECT spread(t) AS g FROM totals EMIT CHANGES"));
      assertEquals("LDB-1005", e.code());
      assertTrue(e.getMessage().contains("'spread' has no retract callback"), e.getMessage());
      Map<String, Double> totals = new HashMap<>();
      for (int start = 0; start < rows.size(); start += 150) {
        List<Trade> part = rows.subList(start, Math.min(rows.size(), start + 150));
        feed(db, part);
        for (Trade t : part) {
          if (t.price() != null) {
            totals.merge(t.symbol(), t.price(), Double::sum);
          }
        }
        double want = 0;
        for (double t : totals.values()) {
          want += t * t;
        }
        List<List<Object>> got = UdfTest.query(db, "SELECT s, b FROM sq");
        assertEquals(1, got.size());
        assertTrue(close((Double) got.get(0).get(0), want), got + " vs " + want);
        assertTrue(close((Double) got.get(0).get(1), want), got + " vs " + want);
      }
    }
  }

  static Config durable(Path dir) {
    return UdfTest.durable(dir);
  }

  @Test
  void checkpointRestartInTheMiddle(@TempDir Path dir) {
    List<Trade> rows = trades(new Random(UdfTest.SEED + 3), 2000);
    int half = 1037; // inside a window
    List<Win> before;
    try (LaminarDB db =
        LaminarDB.open(durable(dir).aggregate("sumsq", new SumSquares(), List.of("DOUBLE"), "DOUBLE", null))) {
      db.execute(SOURCE + TUMBLE);
      try (TypedSubscription<Win> w = db.subscribe("w", Win.class)) {
        feed(db, rows.subList(0, half));
        before = UdfTest.drain(w);
      }
      db.checkpoint();
    }
    LaminarException e = assertThrows(LaminarException.class, () -> LaminarDB.open(durable(dir)));
    assertEquals("LDB-5002", e.code());
    assertTrue(e.getMessage().contains("unknown function"), e.getMessage());
    List<Win> after;
    try (LaminarDB db =
        LaminarDB.open(durable(dir).aggregate("sumsq", new SumSquares(), List.of("DOUBLE"), "DOUBLE", null))) {
      try (TypedSubscription<Win> w = db.subscribe("w", Win.class)) {
        feed(db, rows.subList(half, rows.size()));
        closeAll(db);
        after = UdfTest.drain(w);
      }
    }
    List<Win> all = new ArrayList<>(before);
    all.addAll(after);
    assertModel(model(rows), byKey(all));
  }

  /** SumSquares whose update throws, or calls the database. */
  static final class Faulty implements AggregateFunction<double[]> {
    private final LaminarDB db;

    Faulty(LaminarDB db) {
      this.db = db;
    }

    @Override
    public double[] init() {
      return new double[2];
    }

    @Override
    public double[] update(double[] s, List<FieldVector> args) {
      if (db != null) {
        db.execute("SHOW FUNCTIONS");
      }
      throw new ArithmeticException("risk model diverged");
    }

    @Override
    public double[] merge(double[] a, double[] b) {
      return a;
    }

    @Override
    public Object finalize(double[] s) {
      return s[0];
    }
  }

  @Test
  void errorsAreLdb3010NamingTheCallback() throws IOException {
    try (LaminarDB db = LaminarDB.open()) {
      db.createAggregate("boom", new Faulty(null), List.of("DOUBLE"), "DOUBLE");
      db.createAggregate("reenter", new Faulty(db), List.of("DOUBLE"), "DOUBLE");
      db.execute(
          SOURCE
              + "CREATE MATERIALIZED VIEW m AS SELECT symbol, boom(price) AS s FROM trades GROUP BY symbol;"
              + "CREATE MATERIALIZED VIEW r AS SELECT symbol, reenter(price) AS s FROM trades GROUP BY symbol;");
      try (TypedSource<Trade> t = db.source("trades", Trade.class)) {
        t.push(new Trade("a", 1.0, 1));
        LaminarException e = assertThrows(LaminarException.class, db::runUntilIdle);
        assertEquals("LDB-3010", e.code());
        String all = e.getMessage();
        // The two views fail on the same batch; either may be reported first.
        assertTrue(all.contains("failed in update"), all);
        assertTrue(
            all.contains("java.lang.ArithmeticException: risk model diverged")
                || all.contains("called the database from inside its callback"),
            all);
      }
      db.execute("DROP MATERIALIZED VIEW m; DROP MATERIALIZED VIEW r;");
      assertEquals(2, UdfTest.query(db, "SHOW FUNCTIONS").size()); // it still answers
      LaminarException e =
          assertThrows(
              LaminarException.class,
              () -> db.createAggregate("v", new SumSquares(), List.of("DOUBLE"), "BLOB"));
      assertEquals("LDB-2002", e.code());
    }
  }
}

package org.laminardb;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Rows as Java objects: records and POJOs mapped to a source's columns on push and to
 * a stream's columns on read, every SQL type, NULLs through boxed properties, and a
 * clear LDB error naming the column and property for each kind of mismatch.
 */
class TypedRowsTest extends AllocatorTest {
  static final String ALL_TYPES =
      "CREATE SOURCE t (name VARCHAR, big BIGINT, small INT, ratio DOUBLE, flag BOOLEAN,"
          + " at TIMESTAMP, window_start BIGINT);"
          + "CREATE STREAM s AS SELECT * FROM t;";

  /** Every type, boxed (NULLs allowed); windowStart exercises the snake_case match. */
  record AllTypes(
      String name,
      Long big,
      Integer small,
      Double ratio,
      Boolean flag,
      Instant at,
      Long windowStart) {}

  /** The same as a POJO with private fields, getters and setters. */
  public static final class Bean {
    private String name;
    private Long big;
    private Integer small;
    private Double ratio;
    private Boolean flag;
    private Instant at;
    private Long windowStart;

    public Bean() {}

    static Bean of(AllTypes r) {
      Bean b = new Bean();
      b.name = r.name();
      b.big = r.big();
      b.small = r.small();
      b.ratio = r.ratio();
      b.flag = r.flag();
      b.at = r.at();
      b.windowStart = r.windowStart();
      return b;
    }

    AllTypes record() {
      return new AllTypes(name, big, small, ratio, flag, at, windowStart);
    }

    public String getName() {
      return name;
    }

    public void setName(String v) {
      name = v;
    }

    public Long getBig() {
      return big;
    }

    public void setBig(Long v) {
      big = v;
    }

    public Integer getSmall() {
      return small;
    }

    public void setSmall(Integer v) {
      small = v;
    }

    public Double getRatio() {
      return ratio;
    }

    public void setRatio(Double v) {
      ratio = v;
    }

    public Boolean isFlag() {
      return flag;
    }

    public void setFlag(Boolean v) {
      flag = v;
    }

    public Instant getAt() {
      return at;
    }

    public void setAt(Instant v) {
      at = v;
    }

    public Long getWindowStart() {
      return windowStart;
    }

    public void setWindowStart(Long v) {
      windowStart = v;
    }
  }

  /** A POJO with public fields and primitives (NOT NULL on read). */
  public static final class Plain {
    public String name;
    public long big;
    public int small;
    public double ratio;
    public boolean flag;
    public Instant at;
    public long windowStart;
  }

  /** Random rows (seeded, printed): NULLs in every column, Unicode, extremes. */
  static List<AllTypes> randomRows(long seed, int n, boolean nulls) {
    Random random = new Random(seed);
    String[] names = {"AAPL", "żółw", "日本", "", "🐢"};
    List<AllTypes> out = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      boolean[] isNull = new boolean[7];
      for (int c = 0; c < 7; c++) {
        isNull[c] = nulls && random.nextInt(5) == 0;
      }
      long micros = random.nextLong() % 4_000_000_000_000_000L;
      out.add(
          new AllTypes(
              isNull[0] ? null : names[random.nextInt(names.length)] + i,
              isNull[1] ? null : (i == 0 ? Long.MIN_VALUE : random.nextLong()),
              isNull[2] ? null : random.nextInt(),
              isNull[3] ? null : random.nextDouble() * 1e6 - 5e5,
              isNull[4] ? null : random.nextBoolean(),
              isNull[5]
                  ? null
                  : Instant.ofEpochSecond(
                      Math.floorDiv(micros, 1_000_000L), Math.floorMod(micros, 1_000_000L) * 1000),
              isNull[6] ? null : (long) i));
    }
    return out;
  }

  static long seed() {
    long seed = Long.getLong("laminardb.test.seed", System.nanoTime());
    System.out.println("TypedRowsTest seed=" + seed);
    return seed;
  }

  @Test
  void recordsRoundTripEveryType() {
    List<AllTypes> rows = randomRows(seed(), 200, true);
    try (LaminarDB db = LaminarDB.open()) {
      db.execute(ALL_TYPES);
      try (TypedSource<AllTypes> source = db.source("t", AllTypes.class);
          TypedSubscription<AllTypes> sub = db.subscribe("s", AllTypes.class)) {
        source.push(rows.subList(0, 150));
        for (AllTypes row : rows.subList(150, 200)) {
          source.push(row);
        }
        db.runUntilIdle();
        List<AllTypes> got = new ArrayList<>();
        List<AllTypes> batch;
        while (!(batch = sub.poll(Duration.ZERO)).isEmpty()) {
          got.addAll(batch);
        }
        assertEquals(rows, got);
      }
    }
  }

  @Test
  void pojosRoundTripThroughGettersAndFields() {
    long seed = seed();
    List<AllTypes> rows = randomRows(seed, 60, true);
    List<AllTypes> full = randomRows(seed + 1, 40, false);
    try (LaminarDB db = LaminarDB.open()) {
      db.execute(ALL_TYPES);
      try (TypedSource<Bean> beans = db.source("t", Bean.class);
          Subscription raw = db.subscribe("s", allocator);
          TypedSubscription<Bean> sub = raw.as(Bean.class)) {
        List<Bean> in = new ArrayList<>();
        for (AllTypes r : rows) {
          in.add(Bean.of(r));
        }
        beans.push(in);
        db.runUntilIdle();
        List<AllTypes> got = new ArrayList<>();
        for (Bean b : sub.poll(Duration.ofSeconds(5))) {
          got.add(b.record());
        }
        assertEquals(rows, got);
      }
      // Public fields and primitives, rows without NULLs; read back as records.
      try (TypedSource<Plain> plain = db.source("t", Plain.class);
          TypedSubscription<AllTypes> sub = db.subscribe("s", AllTypes.class)) {
        List<Plain> in = new ArrayList<>();
        for (AllTypes r : full) {
          Plain p = new Plain();
          p.name = r.name();
          p.big = r.big();
          p.small = r.small();
          p.ratio = r.ratio();
          p.flag = r.flag();
          p.at = r.at();
          p.windowStart = r.windowStart();
          in.add(p);
        }
        plain.push(in);
        db.runUntilIdle();
        assertEquals(full, sub.poll(Duration.ofSeconds(5)));
      }
    }
  }

  record Trade(String symbol, double price, long volume, long ts) {}

  record Vwap(String symbol, long windowStart, double vwap, long n) {}

  /** A window over typed input, read as typed output, against a VWAP worked out here. */
  @Test
  void typedWindowMatchesAHandComputedVwap() {
    long seed = seed();
    Random random = new Random(seed);
    List<Trade> trades = new ArrayList<>();
    for (int i = 0; i < 500; i++) {
      trades.add(
          new Trade(
              "S" + random.nextInt(5),
              1 + random.nextInt(10_000) / 100.0,
              1 + random.nextInt(1000),
              random.nextInt(5000)));
    }
    Map<String, double[]> sums = new HashMap<>(); // key -> {sum(p*v), sum(v), n}
    for (Trade t : trades) {
      double[] s = sums.computeIfAbsent(t.symbol() + "@" + (t.ts() - t.ts() % 1000), k -> new double[3]);
      s[0] += t.price() * t.volume();
      s[1] += t.volume();
      s[2] += 1;
    }
    try (LaminarDB db = LaminarDB.open()) {
      db.execute(
          "CREATE SOURCE trades (symbol VARCHAR NOT NULL, price DOUBLE, volume BIGINT,"
              + " ts BIGINT, WATERMARK FOR ts AS ts - INTERVAL '10' SECOND);"
              + "CREATE STREAM vwap AS SELECT symbol, window_start,"
              + " SUM(price * volume) / SUM(volume) AS vwap, COUNT(*) AS n"
              + " FROM trades GROUP BY symbol, tumble(ts, INTERVAL '1' SECOND)"
              + " EMIT ON WINDOW CLOSE;");
      try (TypedSource<Trade> source = db.source("trades", Trade.class);
          TypedSubscription<Vwap> sub = db.subscribe("vwap", Vwap.class)) {
        source.push(trades);
        source.watermark(Long.MAX_VALUE);
        db.runUntilIdle();
        Map<String, Vwap> got = new HashMap<>();
        List<Vwap> batch;
        while (!(batch = sub.poll(Duration.ZERO)).isEmpty()) {
          for (Vwap v : batch) {
            assertEquals(null, got.put(v.symbol() + "@" + v.windowStart(), v), "duplicate " + v);
          }
        }
        assertEquals(sums.keySet(), got.keySet(), "seed=" + seed);
        for (Map.Entry<String, double[]> e : sums.entrySet()) {
          Vwap v = got.get(e.getKey());
          assertEquals(e.getValue()[0] / e.getValue()[1], v.vwap(), 1e-9 * v.vwap(), e.getKey());
          assertEquals((long) e.getValue()[2], v.n(), e.getKey());
        }
      }
    }
  }

  record MissingTs(String symbol, double price, long volume) {}

  record ExtraField(String symbol, double price, long volume, long ts, String venue) {}

  record WrongType(String symbol, String price, long volume, long ts) {}

  record NarrowInt(String symbol, double price, int volume, long ts) {}

  record ReadsMissing(String symbol, long windowStart, double vwap, long n, double spread) {}

  record ReadsWrongType(String symbol, String windowStart) {}

  record NullableTrade(String symbol, Double price, Long volume, long ts) {}

  record PrimitivePrice(String symbol, double price) {}

  @Test
  void mismatchesNameTheColumnAndProperty() {
    try (LaminarDB db = LaminarDB.open()) {
      db.execute(
          "CREATE SOURCE trades (symbol VARCHAR NOT NULL, price DOUBLE, volume BIGINT,"
              + " ts BIGINT);"
              + "CREATE STREAM vwap AS SELECT symbol, ts AS window_start, price AS vwap,"
              + " volume AS n FROM trades;"
              + "CREATE STREAM prices AS SELECT symbol, price FROM trades;");
      LaminarException e =
          assertThrows(LaminarException.class, () -> db.source("trades", MissingTs.class));
      assertEquals("LDB-3003", e.code());
      assertEquals("ts", e.columnName());
      assertEquals("trades", e.objectName());
      assertTrue(e.getMessage().contains("column 'ts' has no property in"), e.getMessage());
      assertTrue(e.getMessage().contains("MissingTs"), e.getMessage());

      e = assertThrows(LaminarException.class, () -> db.source("trades", ExtraField.class));
      assertEquals("LDB-3003", e.code());
      assertTrue(e.getMessage().contains("ExtraField.venue is not a column"), e.getMessage());

      e = assertThrows(LaminarException.class, () -> db.source("trades", WrongType.class));
      assertEquals("LDB-3004", e.code());
      assertEquals("price", e.columnName());
      assertTrue(
          e.getMessage().contains("column 'price' is DOUBLE but WrongType.price is java.lang.String"),
          e.getMessage());

      e = assertThrows(LaminarException.class, () -> db.source("nope", Trade.class));
      assertEquals("LDB-1002", e.code());

      e = assertThrows(LaminarException.class, () -> db.subscribe("vwap", ReadsMissing.class));
      assertEquals("LDB-1003", e.code());
      assertTrue(e.getMessage().contains("ReadsMissing.spread"), e.getMessage());

      e = assertThrows(LaminarException.class, () -> db.subscribe("vwap", ReadsWrongType.class));
      assertEquals("LDB-2001", e.code());
      assertEquals("window_start", e.columnName());
      assertTrue(e.getMessage().contains("ReadsWrongType.windowStart"), e.getMessage());

      // A narrower Java int fills a BIGINT column; failed opens left no handle behind.
      try (TypedSource<NarrowInt> narrow = db.source("trades", NarrowInt.class);
          TypedSubscription<Vwap> sub = db.subscribe("vwap", Vwap.class);
          TypedSubscription<PrimitivePrice> prices = db.subscribe("prices", PrimitivePrice.class)) {
        narrow.push(new NarrowInt("A", 2.5, 7, 10));
        db.runUntilIdle();
        assertEquals(List.of(new Vwap("A", 10, 2.5, 7)), sub.poll(Duration.ofSeconds(5)));
        assertEquals(List.of(new PrimitivePrice("A", 2.5)), prices.poll(Duration.ofSeconds(5)));
      }
      try (TypedSource<NullableTrade> source = db.source("trades", NullableTrade.class);
          TypedSubscription<PrimitivePrice> prices = db.subscribe("prices", PrimitivePrice.class);
          TypedSubscription<Vwap> sub = db.subscribe("vwap", Vwap.class)) {
        // NULL into NOT NULL: the core refuses the batch whole.
        e =
            assertThrows(
                LaminarException.class,
                () ->
                    source.push(
                        List.of(
                            new NullableTrade("A", 1.0, 1L, 1),
                            new NullableTrade(null, 1.0, 1L, 2))));
        assertEquals("LDB-3005", e.code());
        assertEquals("symbol", e.columnName());
        // A NULL price read into a primitive double: LDB-2001 naming it.
        source.push(new NullableTrade("B", null, 3L, 5));
        db.runUntilIdle();
        e = assertThrows(LaminarException.class, () -> prices.poll(Duration.ofSeconds(5)));
        assertEquals("LDB-2001", e.code());
        assertEquals("price", e.columnName());
        assertTrue(e.getMessage().contains("PrimitivePrice.price"), e.getMessage());
        // The other subscription reads the same row (vwap NULL: Vwap's double too).
        e = assertThrows(LaminarException.class, () -> sub.poll(Duration.ofSeconds(5)));
        assertEquals("LDB-2001", e.code());
        source.push(new NullableTrade("C", 4.0, 2L, 6));
        db.runUntilIdle();
        assertEquals(List.of(new Vwap("C", 6, 4.0, 2)), sub.poll(Duration.ofSeconds(5)));
      }
    }
  }

  @Test
  void typedRowsNeedAUsableClass() {
    try (LaminarDB db = LaminarDB.open()) {
      db.execute(ALL_TYPES);
      LaminarException e =
          assertThrows(LaminarException.class, () -> db.source("t", Runnable.class));
      assertEquals("LDB-9002", e.code());
      try (TypedSource<AllTypes> source = db.source("t", AllTypes.class)) {
        e = assertThrows(
            LaminarException.class,
            () -> source.push(java.util.Arrays.asList((AllTypes) null)));
        assertEquals("LDB-9002", e.code());
        assertTrue(e.getMessage().contains("row 0 is null"), e.getMessage());
      }
    }
  }
}

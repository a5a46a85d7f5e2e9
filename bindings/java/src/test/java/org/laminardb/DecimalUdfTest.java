package org.laminardb;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.DecimalVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * DECIMAL(p, s) parameters and results of Java functions: vectorized ({@link
 * DecimalVector}), per row ({@link BigDecimal}) and aggregates, narrow (p <= 18) and wide
 * decimals, NULLs; each against the engine's own exact decimal arithmetic in SQL and a
 * {@link BigDecimal} model of the pushed rows (seeded, printed); an aggregate's state
 * through a checkpoint and a restart of a durable database; a result of another scale
 * or with too many digits is LDB-3011 naming the function.
 */
class DecimalUdfTest {
  static final long SEED = Long.getLong("laminardb.seed", 20261128L);

  /** The pushed batches' memory (closed at the end: nothing may be left). */
  static final BufferAllocator ALLOCATOR = new RootAllocator();

  @org.junit.jupiter.api.AfterAll
  static void closeAllocator() {
    ALLOCATOR.close();
  }

  static final String SOURCE = "CREATE SOURCE t (k BIGINT, x DECIMAL(12,2), w DECIMAL(30,4), ts BIGINT);";

  /** One pushed row: x and w may be null. */
  record Row(long k, BigDecimal x, BigDecimal w, long ts) {}

  static List<Row> randomRows(Random rng, int n, long ts0) {
    List<Row> rows = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      BigDecimal x =
          rng.nextInt(7) == 0
              ? null
              : BigDecimal.valueOf(rng.nextLong() % 100_000_000_000L, 2); // <= 11 digits
      BigDecimal w =
          rng.nextInt(9) == 0
              ? null
              : new BigDecimal(new BigInteger(90, rng).subtract(BigInteger.ONE.shiftLeft(89)), 4);
      rows.add(new Row(rng.nextInt(4), x, w, ts0 + i));
    }
    return rows;
  }

  /**
   * Push {@code rows} through {@code t} (the source keeps the exported schema in
   * {@link #ALLOCATOR}, which outlives every source).
   */
  static void push(Source t, List<Row> rows) {
    Schema schema =
        new Schema(
            List.of(
                Field.nullable("k", new ArrowType.Int(64, true)),
                new Field("x", FieldType.nullable(new ArrowType.Decimal(12, 2, 128)), null),
                new Field("w", FieldType.nullable(new ArrowType.Decimal(30, 4, 128)), null),
                Field.nullable("ts", new ArrowType.Int(64, true))));
    try (VectorSchemaRoot root = VectorSchemaRoot.create(schema, ALLOCATOR)) {
      root.allocateNew();
      BigIntVector k = (BigIntVector) root.getVector("k");
      DecimalVector x = (DecimalVector) root.getVector("x");
      DecimalVector w = (DecimalVector) root.getVector("w");
      BigIntVector ts = (BigIntVector) root.getVector("ts");
      for (int i = 0; i < rows.size(); i++) {
        Row r = rows.get(i);
        k.setSafe(i, r.k());
        if (r.x() == null) {
          x.setNull(i);
        } else {
          x.setSafe(i, r.x());
        }
        if (r.w() == null) {
          w.setNull(i);
        } else {
          w.setSafe(i, r.w());
        }
        ts.setSafe(i, r.ts());
      }
      root.setRowCount(rows.size());
      t.push(root);
    }
  }

  /** triple(x DECIMAL(12,2)) -> DECIMAL(13,2), vectorized over the unscaled values. */
  static FieldVector triple(List<FieldVector> args, BufferAllocator allocator) {
    DecimalVector x = (DecimalVector) args.get(0);
    int n = x.getValueCount();
    DecimalVector out = new DecimalVector("triple", allocator, 13, 2);
    out.allocateNew(n);
    for (int i = 0; i < n; i++) {
      out.set(i, x.getObject(i).multiply(BigDecimal.valueOf(3)));
    }
    out.setValueCount(n);
    return out;
  }

  /** SUM(x) of a DECIMAL(12,2) as a DECIMAL(38,2); a group without rows is NULL. */
  static class DecSum implements AggregateFunction<BigDecimal[]> {
    @Override
    public BigDecimal[] init() {
      return new BigDecimal[1];
    }

    @Override
    public BigDecimal[] update(BigDecimal[] state, List<FieldVector> args) {
      DecimalVector x = (DecimalVector) args.get(0);
      for (int i = 0; i < x.getValueCount(); i++) {
        BigDecimal v = x.getObject(i);
        state[0] = state[0] == null ? v : state[0].add(v);
      }
      return state;
    }

    @Override
    public BigDecimal[] merge(BigDecimal[] a, BigDecimal[] b) {
      if (b[0] != null) {
        a[0] = a[0] == null ? b[0] : a[0].add(b[0]);
      }
      return a;
    }

    @Override
    public Object finalize(BigDecimal[] state) {
      return state[0];
    }
  }

  static Object model(BigDecimal v, java.util.function.UnaryOperator<BigDecimal> f) {
    return v == null ? null : f.apply(v);
  }

  @Test
  void vectorRowAndAggregateFunctionsEqualSqlAndTheModel() throws IOException {
    System.out.println("DecimalUdfTest seed " + SEED);
    Random rng = new Random(SEED);
    for (int cores = 1; cores <= 2; cores++) {
      try (LaminarDB db = LaminarDB.open(new Config().set("cores", Integer.toString(cores)))) {
        db.createFunction("triple", DecimalUdfTest::triple, List.of("DECIMAL(12,2)"), "DECIMAL(13,2)");
        // Per row: x / 2 has scale 2 or 3 (0.75, 0.625); it is put at the declared 3.
        db.createRowFunction(
            "half",
            args -> ((BigDecimal) args[0]).divide(BigDecimal.valueOf(2)),
            List.of("decimal(12, 2)"),
            "DECIMAL(14,3)");
        db.createRowFunction(
            "nudge",
            args -> ((BigDecimal) args[0]).add(new BigDecimal("0.0001")),
            List.of("NUMERIC(30,4)"),
            "DECIMAL(30,4)");
        db.createAggregate("dsum", new DecSum(), List.of("DECIMAL(12,2)"), "DECIMAL(38,2)");
        db.execute(
            SOURCE
                + "CREATE MATERIALIZED VIEW s AS SELECT ts, x, w, triple(x) AS a,"
                + " CAST(x * 3 AS DECIMAL(13,2)) AS b, half(x) AS h, nudge(w) AS n,"
                + " CAST(w + CAST('0.0001' AS DECIMAL(5,4)) AS DECIMAL(30,4)) AS m FROM t;"
                + "CREATE MATERIALIZED VIEW g AS SELECT k, dsum(x) AS d, SUM(x) AS e FROM t"
                + " GROUP BY k;");
        List<Row> pushed = new ArrayList<>();
        try (Source t = db.source("t")) {
          for (int chunk = 0; chunk < 12; chunk++) {
            List<Row> rows = randomRows(rng, 1 + rng.nextInt(200), pushed.size());
            push(t, rows);
            pushed.addAll(rows);
          }
        }
        db.runUntilIdle();
        Map<Long, Row> byTs = new HashMap<>();
        for (Row r : pushed) {
          byTs.put(r.ts(), r);
        }
        List<List<Object>> rows = UdfTest.query(db, "SELECT ts, a, b, h, n, m FROM s ORDER BY ts");
        assertEquals(pushed.size(), rows.size());
        for (List<Object> row : rows) {
          Row in = byTs.get((Long) row.get(0));
          assertEquals(model(in.x(), v -> v.multiply(BigDecimal.valueOf(3))), row.get(1), "row " + row);
          assertEquals(row.get(2), row.get(1), "row " + row);
          assertEquals(
              model(in.x(), v -> v.divide(BigDecimal.valueOf(2)).setScale(3)), row.get(3), "row " + row);
          assertEquals(model(in.w(), v -> v.add(new BigDecimal("0.0001"))), row.get(4), "row " + row);
          assertEquals(row.get(5), row.get(4), "row " + row);
        }
        Map<Long, BigDecimal> sums = new TreeMap<>();
        for (Row r : pushed) {
          if (r.x() != null) {
            sums.merge(r.k(), r.x(), BigDecimal::add);
          }
        }
        List<List<Object>> groups = UdfTest.query(db, "SELECT k, d, e FROM g ORDER BY k");
        assertEquals(sums.size(), groups.size());
        for (List<Object> g : groups) {
          assertEquals(sums.get((Long) g.get(0)), g.get(1), "group " + g);
          assertEquals(g.get(2), g.get(1), "group " + g);
        }
      }
    }
  }

  static Config durable(Path dir) {
    return new Config()
        .dataDir(dir)
        .set("checkpoint_interval", "10 min")
        .set("wal_mode", "sync")
        .function("triple", DecimalUdfTest::triple, List.of("DECIMAL(12,2)"), "DECIMAL(13,2)", null)
        .aggregate("dsum", new DecSum(), List.of("DECIMAL(12,2)"), "DECIMAL(38,2)", null);
  }

  @Test
  void aDecimalAggregateStateSurvivesARestart(@TempDir Path dir) throws IOException {
    Random rng = new Random(SEED + 1);
    List<Row> pushed = new ArrayList<>();
    try (LaminarDB db = LaminarDB.open(durable(dir))) {
      db.execute(
          SOURCE
              + "CREATE MATERIALIZED VIEW g AS SELECT k, dsum(triple(x)) AS d FROM t GROUP BY k;");
      try (Source t = db.source("t")) {
        List<Row> rows = randomRows(rng, 300, 0);
        push(t, rows);
        pushed.addAll(rows);
        db.runUntilIdle();
        db.checkpoint(); // the states through serialize
        rows = randomRows(rng, 200, pushed.size());
        push(t, rows); // in the WAL only: replayed through triple and dsum at open
        pushed.addAll(rows);
      }
    }
    try (LaminarDB db = LaminarDB.open(durable(dir))) {
      try (Source t = db.source("t")) {
        List<Row> rows = randomRows(rng, 100, pushed.size());
        push(t, rows);
        pushed.addAll(rows);
        db.runUntilIdle();
      }
      Map<Long, BigDecimal> sums = new TreeMap<>();
      for (Row r : pushed) {
        if (r.x() != null) {
          sums.merge(r.k(), r.x().multiply(BigDecimal.valueOf(3)), BigDecimal::add);
        }
      }
      List<List<Object>> groups = UdfTest.query(db, "SELECT k, d FROM g ORDER BY k");
      List<List<Object>> want = new ArrayList<>();
      sums.forEach((k, v) -> want.add(List.of(k, v)));
      assertEquals(want, groups);
    }
  }

  /** Run one row x through a stream calling {@code call}: the error it fails with. */
  static LaminarException failure(LaminarDB db, String call, BigDecimal x) {
    db.execute(SOURCE + "CREATE STREAM s AS SELECT " + call + " AS y FROM t;");
    try (Source t = db.source("t")) {
      push(t, List.of(new Row(1, x, null, 1)));
    }
    return assertThrows(LaminarException.class, db::runUntilIdle);
  }

  @Test
  void anotherScaleOrTooManyDigitsIsLdb3011NamingTheFunction() {
    try (LaminarDB db = LaminarDB.open()) { // a vector of another scale
      db.createFunction(
          "rescale",
          (args, allocator) -> {
            DecimalVector x = (DecimalVector) args.get(0);
            DecimalVector out = new DecimalVector("r", allocator, 14, 3);
            out.allocateNew(x.getValueCount());
            for (int i = 0; i < x.getValueCount(); i++) {
              out.set(i, x.getObject(i).setScale(3));
            }
            out.setValueCount(x.getValueCount());
            return out;
          },
          List.of("DECIMAL(12,2)"),
          "DECIMAL(14,2)");
      LaminarException e = failure(db, "rescale(x)", new BigDecimal("1.50"));
      assertEquals("LDB-3011", e.code());
      assertTrue(e.getMessage().contains("'rescale'") && e.getMessage().contains("d:14,2"), e.getMessage());
    }
    // A row's value with more fractional digits than the scale, then past the precision.
    Object[][] cases = {
      {"third", BigDecimal.valueOf(1, 3), "DECIMAL(14,2)", "value 123456.78950 (row 0) has more than 2 fractional digits"},
      {"grow", BigDecimal.valueOf(1000), "DECIMAL(13,2)", "more than 13 digits, past its type DECIMAL(13,2)"},
    };
    for (Object[] c : cases) {
      try (LaminarDB db = LaminarDB.open()) {
        BigDecimal factor = (BigDecimal) c[1];
        db.createRowFunction(
            (String) c[0], args -> ((BigDecimal) args[0]).multiply(factor), List.of("DECIMAL(12,2)"), (String) c[2]);
        LaminarException e = failure(db, c[0] + "(x)", new BigDecimal("123456789.50"));
        assertEquals("LDB-3011", e.code());
        assertTrue(e.getMessage().contains("function '" + c[0] + "' returned an invalid result"), e.getMessage());
        assertTrue(e.getMessage().contains((String) c[3]), e.getMessage());
      }
    }
    try (LaminarDB db = LaminarDB.open()) { // an aggregate's result past the precision
      db.createAggregate(
          "big",
          new DecSum() {
            @Override
            public Object finalize(BigDecimal[] state) {
              return state[0] == null ? null : state[0].multiply(BigDecimal.TEN.pow(30));
            }
          },
          List.of("DECIMAL(12,2)"),
          "DECIMAL(20,2)");
      db.execute(SOURCE + "CREATE MATERIALIZED VIEW v AS SELECT k, big(x) AS y FROM t GROUP BY k;");
      try (Source t = db.source("t")) {
        push(t, List.of(new Row(1, new BigDecimal("7.00"), null, 1)));
      }
      LaminarException e = assertThrows(LaminarException.class, db::runUntilIdle);
      assertEquals("LDB-3011", e.code());
      assertTrue(e.getMessage().contains("function 'big' returned an invalid result in finalize"), e.getMessage());
    }
    try (LaminarDB db = LaminarDB.open()) { // not a decimal at all: a failure, LDB-3010
      db.createRowFunction("text", args -> "1.00", List.of("DECIMAL(12,2)"), "DECIMAL(12,2)");
      LaminarException e = failure(db, "text(x)", new BigDecimal("1.00"));
      assertEquals("LDB-3010", e.code());
      assertTrue(e.getMessage().contains("expects java.math.BigDecimal"), e.getMessage());
    }
  }

  @Test
  void decimalTypeNames() {
    try (LaminarDB db = LaminarDB.open()) {
      for (String bad : List.of("DECIMAL(39,2)", "DECIMAL(0,0)", "DECIMAL(10,11)", "DECIMAL(10)")) {
        LaminarException e =
            assertThrows(
                LaminarException.class,
                () -> db.createRowFunction("f", args -> args[0], List.of(bad), "BIGINT"));
        assertEquals("LDB-2002", e.code(), bad);
        assertTrue(e.getMessage().contains(bad), e.getMessage());
      }
    }
  }
}

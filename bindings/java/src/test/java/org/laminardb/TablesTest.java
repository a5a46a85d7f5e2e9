package org.laminardb;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.junit.jupiter.api.Test;

/**
 * Tables from Java: random upserts and deletes through {@code db.upsert} / {@code
 * db.delete} with Arrow roots and with records, and through SQL, against a Java model
 * of the table (a map by key) and of a view over it; errors.
 */
class TablesTest {
  static final String SQL =
      "CREATE TABLE t (k1 INT, k2 VARCHAR, g VARCHAR, v DOUBLE, PRIMARY KEY (k1, k2));"
          + "CREATE MATERIALIZED VIEW per_g AS"
          + " SELECT g, COUNT(*) AS n, SUM(v) AS s FROM t GROUP BY g EMIT CHANGES;";

  public record Row(Integer k1, String k2, String g, Double v) {}

  public record Key(Integer k1, String k2) {}

  static final Schema ROWS =
      new Schema(
          List.of(
              Field.nullable("k1", new ArrowType.Int(32, true)),
              Field.nullable("k2", ArrowType.Utf8.INSTANCE),
              Field.nullable("g", ArrowType.Utf8.INSTANCE),
              new Field(
                  "v",
                  FieldType.nullable(new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE)),
                  null)));

  /** The rows as a root of {@code schema}'s columns (keys alone when it has two). */
  static VectorSchemaRoot root(List<Row> rows, Schema schema, BufferAllocator allocator) {
    VectorSchemaRoot root = VectorSchemaRoot.create(schema, allocator);
    root.allocateNew();
    for (int i = 0; i < rows.size(); i++) {
      Row r = rows.get(i);
      ((IntVector) root.getVector("k1")).setSafe(i, r.k1());
      ((VarCharVector) root.getVector("k2")).setSafe(i, r.k2().getBytes(StandardCharsets.UTF_8));
      if (schema.getFields().size() > 2) {
        VarCharVector g = (VarCharVector) root.getVector("g");
        if (r.g() == null) {
          g.setNull(i);
        } else {
          g.setSafe(i, r.g().getBytes(StandardCharsets.UTF_8));
        }
        Float8Vector v = (Float8Vector) root.getVector("v");
        if (r.v() == null) {
          v.setNull(i);
        } else {
          v.setSafe(i, r.v());
        }
      }
    }
    root.setRowCount(rows.size());
    return root;
  }

  static String literal(Object value) {
    if (value == null) {
      return "NULL";
    }
    if (value instanceof String) {
      return "'" + ((String) value).replace("'", "''") + "'";
    }
    return value.toString();
  }

  static List<String> sorted(List<List<Object>> rows) {
    List<String> out = new ArrayList<>();
    for (List<Object> r : rows) {
      List<Object> norm = new ArrayList<>();
      for (Object o : r) {
        norm.add(o instanceof Double ? Math.round((Double) o * 1e6) / 1e6 : o == null ? null : o.toString());
      }
      out.add(norm.toString());
    }
    out.sort(Comparator.naturalOrder());
    return out;
  }

  static void check(LaminarDB db, Map<Key, Row> model) throws IOException {
    List<List<Object>> want = new ArrayList<>();
    Map<String, Object[]> groups = new HashMap<>();
    for (Row r : model.values()) {
      want.add(java.util.Arrays.asList(r.k1(), r.k2(), r.g(), r.v()));
      Object[] agg = groups.computeIfAbsent(String.valueOf(r.g()), k -> new Object[] {r.g(), 0L, null});
      agg[1] = (Long) agg[1] + 1;
      if (r.v() != null) {
        agg[2] = (agg[2] == null ? 0.0 : (Double) agg[2]) + r.v();
      }
    }
    assertEquals(sorted(want), sorted(UdfTest.query(db, "SELECT k1, k2, g, v FROM t")));
    List<List<Object>> wantGroups = new ArrayList<>();
    for (Object[] agg : groups.values()) {
      wantGroups.add(java.util.Arrays.asList(agg));
    }
    assertEquals(sorted(wantGroups), sorted(UdfTest.query(db, "SELECT g, n, s FROM per_g")));
  }

  @Test
  void randomUpsertsAndDeletesEqualTheModel() throws IOException {
    System.out.println("TablesTest seed " + UdfTest.SEED);
    Random rng = new Random(UdfTest.SEED);
    String[] k2s = {"a", "b", "c'd"};
    String[] gs = {"x", "y", null};
    Map<Key, Row> model = new LinkedHashMap<>();
    try (BufferAllocator allocator = new RootAllocator();
        LaminarDB db = LaminarDB.open()) {
      db.execute(SQL);
      for (int op = 0; op < 60; op++) {
        boolean delete = rng.nextInt(3) == 0;
        int via = rng.nextInt(3); // 0 Arrow root, 1 records, 2 SQL
        List<Row> rows = new ArrayList<>();
        for (int i = 1 + rng.nextInt(6); i > 0; i--) {
          Double v = rng.nextInt(3) == 0 ? null : Math.round((rng.nextDouble() * 10 - 5) * 100) / 100.0;
          rows.add(new Row(rng.nextInt(6), k2s[rng.nextInt(3)], gs[rng.nextInt(3)], v));
        }
        if (via == 0) {
          Schema schema = delete ? new Schema(ROWS.getFields().subList(0, 2)) : ROWS;
          try (VectorSchemaRoot root = root(rows, schema, allocator)) {
            if (delete) {
              db.delete("t", root);
            } else {
              db.upsert("t", root);
            }
          }
        } else if (via == 1) {
          if (delete) {
            List<Key> keys = new ArrayList<>();
            for (Row r : rows) {
              keys.add(new Key(r.k1(), r.k2()));
            }
            db.delete("t", Key.class, keys);
          } else {
            db.upsert("t", Row.class, rows);
          }
        } else {
          for (Row r : rows) {
            db.execute(
                delete
                    ? "DELETE FROM t WHERE k1 = " + r.k1() + " AND k2 = " + literal(r.k2())
                    : "INSERT INTO t VALUES (" + r.k1() + ", " + literal(r.k2()) + ", "
                        + literal(r.g()) + ", " + literal(r.v()) + ")");
          }
        }
        for (Row r : rows) {
          Key key = new Key(r.k1(), r.k2());
          if (delete) {
            model.remove(key);
          } else {
            model.remove(key);
            model.put(key, r);
          }
        }
        db.runUntilIdle();
        check(db, model);
      }
    }
  }

  public record Partial(Integer k1) {}

  @Test
  void errorsNameTheTableAndWriteNothing() throws IOException {
    try (BufferAllocator allocator = new RootAllocator();
        LaminarDB db = LaminarDB.open()) {
      db.execute(SQL);
      List<Row> one = List.of(new Row(1, "a", "x", 1.0));
      try (VectorSchemaRoot root = root(one, ROWS, allocator)) {
        LaminarException e = assertThrows(LaminarException.class, () -> db.upsert("nope", root));
        assertEquals("LDB-1002", e.code());
        assertTrue(e.getMessage().contains("nope"), e.getMessage());
      }
      LaminarException e =
          assertThrows(
              LaminarException.class,
              () -> db.upsert("t", Row.class, List.of(new Row(null, "a", "x", 1.0))));
      assertEquals("LDB-3005", e.code());
      e = assertThrows(LaminarException.class, () -> db.delete("t", Partial.class, List.of(new Partial(1))));
      assertEquals("LDB-3003", e.code());
      db.runUntilIdle();
      check(db, Map.of());
      db.upsert("t", Row.class, one);
      db.runUntilIdle();
      check(db, Map.of(new Key(1, "a"), one.get(0)));
    }
  }
}

package org.laminardb;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.Schema;
import org.junit.jupiter.api.Test;

/** NULLs and non-ASCII text survive Java -> core -> Java, in data, SQL and errors. */
class RoundTripTest extends AllocatorTest {
  static final String SQL =
      "CREATE SOURCE t (k VARCHAR, d DOUBLE, n BIGINT, ts BIGINT);"
          + "CREATE STREAM s AS SELECT k, d, n, ts FROM t;";

  /** Text with 1-, 2-, 3- and 4-byte UTF-8 characters, an empty string and NULLs. */
  static final String[] KEYS = {
    "plain", "héllo wörld", null, "日本語テキスト", "", "emoji 🐢🚀", "Ω≈ç√∫", null, "żółw"
  };

  static VectorSchemaRoot rows(org.apache.arrow.memory.BufferAllocator allocator, Schema schema) {
    VectorSchemaRoot root = VectorSchemaRoot.create(schema, allocator);
    VarCharVector k = (VarCharVector) root.getVector("k");
    Float8Vector d = (Float8Vector) root.getVector("d");
    BigIntVector n = (BigIntVector) root.getVector("n");
    BigIntVector ts = (BigIntVector) root.getVector("ts");
    root.allocateNew();
    for (int i = 0; i < KEYS.length; i++) {
      if (KEYS[i] == null) {
        k.setNull(i);
      } else {
        k.setSafe(i, KEYS[i].getBytes(StandardCharsets.UTF_8));
      }
      if (i % 3 == 1) {
        d.setNull(i);
      } else {
        d.setSafe(i, i * 1.5 - 2);
      }
      if (i % 4 == 2) {
        n.setNull(i);
      } else {
        n.setSafe(i, Long.MIN_VALUE + i);
      }
      ts.setSafe(i, i);
    }
    root.setRowCount(KEYS.length);
    return root;
  }

  @Test
  void nullsAndUnicodeRoundTrip() {
    try (LaminarDB db = LaminarDB.open()) {
      db.execute(SQL);
      Schema schema = db.schema("t", allocator);
      try (Source source = db.source("t");
          Subscription sub = db.subscribe("s", allocator);
          VectorSchemaRoot in = rows(allocator, schema)) {
        source.push(in);
        db.runUntilIdle();
        try (VectorSchemaRoot out = sub.poll(Duration.ofSeconds(5))) {
          assertEquals(KEYS.length, out.getRowCount());
          for (String column : List.of("k", "d", "n", "ts")) {
            for (int i = 0; i < KEYS.length; i++) {
              assertEquals(
                  in.getVector(column).getObject(i),
                  out.getVector(column).getObject(i),
                  column + " row " + i);
            }
          }
          for (int i = 0; i < KEYS.length; i++) {
            Object k = out.getVector("k").getObject(i);
            assertEquals(KEYS[i], k == null ? null : k.toString());
          }
        }
        assertNull(sub.poll(Duration.ZERO));
      }
    }
  }

  @Test
  void nonAsciiSqlLiteralsAndNames() {
    try (LaminarDB db = LaminarDB.open()) {
      db.execute(SQL);
      db.execute("CREATE STREAM \"größe\" AS SELECT k, 'ünï ✓ 🐢' AS tag FROM t WHERE k = 'żółw';");
      Schema schema = db.schema("t", allocator);
      try (Source source = db.source("t");
          Subscription sub = db.subscribe("größe", allocator);
          VectorSchemaRoot in = rows(allocator, schema)) {
        source.push(in);
        db.runUntilIdle();
        List<String> got = new ArrayList<>();
        VectorSchemaRoot batch;
        while ((batch = sub.poll(Duration.ZERO)) != null) {
          try (VectorSchemaRoot b = batch) {
            for (int i = 0; i < b.getRowCount(); i++) {
              got.add(b.getVector("k").getObject(i) + "|" + b.getVector("tag").getObject(i));
            }
          }
        }
        assertEquals(Arrays.asList("żółw|ünï ✓ 🐢"), got);
      }
    }
  }

  @Test
  void queryReadsAMaterializedView() throws java.io.IOException {
    try (LaminarDB db = LaminarDB.open()) {
      db.execute(SQL);
      db.execute("CREATE MATERIALIZED VIEW v AS SELECT k, n FROM t WHERE d IS NOT NULL;");
      Schema schema = db.schema("t", allocator);
      try (Source source = db.source("t");
          VectorSchemaRoot in = rows(allocator, schema)) {
        source.push(in);
        db.runUntilIdle();
        List<String> expected = new ArrayList<>();
        for (int i = 0; i < KEYS.length; i++) {
          if (!in.getVector("d").isNull(i)) {
            expected.add(KEYS[i] + "|" + in.getVector("n").getObject(i));
          }
        }
        List<String> got = new ArrayList<>();
        try (org.apache.arrow.vector.ipc.ArrowReader reader =
            db.query("SELECT k, n FROM v", allocator)) {
          while (reader.loadNextBatch()) {
            VectorSchemaRoot b = reader.getVectorSchemaRoot();
            for (int i = 0; i < b.getRowCount(); i++) {
              Object k = b.getVector("k").getObject(i);
              got.add((k == null ? null : k.toString()) + "|" + b.getVector("n").getObject(i));
            }
          }
        }
        java.util.Collections.sort(expected, java.util.Comparator.nullsFirst(String::compareTo));
        java.util.Collections.sort(got, java.util.Comparator.nullsFirst(String::compareTo));
        assertEquals(expected, got);
      }
      LaminarException e =
          assertThrows(LaminarException.class, () -> db.query("SELECT * FROM s", allocator));
      assertEquals("LDB-1030", e.code());
    }
  }

  @Test
  void nonAsciiNamesInErrors() {
    try (LaminarDB db = LaminarDB.open()) {
      LaminarException e = assertThrows(LaminarException.class, () -> db.source("tråd_日本"));
      assertEquals("LDB-1002", e.code());
      assertTrue(e.getMessage().contains("tråd_日本"), e.getMessage());
      assertTrue(e.getMessage().startsWith("LDB-1002: "), e.getMessage());
    }
  }
}

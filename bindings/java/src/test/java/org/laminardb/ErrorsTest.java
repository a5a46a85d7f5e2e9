package org.laminardb;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import org.apache.arrow.c.ArrowArray;
import org.apache.arrow.c.ArrowSchema;
import org.apache.arrow.c.Data;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.junit.jupiter.api.Test;

/**
 * Errors from the core become LaminarException with the right code and detail, never a
 * crash, and leave the database usable: after each failure the test pushes a good batch
 * and reads its result.
 */
class ErrorsTest extends AllocatorTest {
  static final String SQL =
      "CREATE SOURCE t (k VARCHAR, v BIGINT, ts BIGINT);"
          + "CREATE STREAM s AS SELECT k, v FROM t WHERE v > 0;";
  static final Schema GOOD =
      new Schema(
          List.of(
              Field.nullable("k", new ArrowType.Utf8()),
              Field.nullable("v", new ArrowType.Int(64, true)),
              Field.nullable("ts", new ArrowType.Int(64, true))));

  private VectorSchemaRoot good(long v) {
    VectorSchemaRoot root = VectorSchemaRoot.create(GOOD, allocator);
    root.allocateNew();
    ((VarCharVector) root.getVector("k")).setSafe(0, "a".getBytes(java.nio.charset.StandardCharsets.UTF_8));
    ((BigIntVector) root.getVector("v")).setSafe(0, v);
    ((BigIntVector) root.getVector("ts")).setSafe(0, 1);
    root.setRowCount(1);
    return root;
  }

  /** The database still works: a good push comes out of stream s. */
  private void assertUsable(LaminarDB db, Source source, Subscription sub, long v) {
    try (VectorSchemaRoot root = good(v)) {
      source.push(root);
    }
    db.runUntilIdle();
    try (VectorSchemaRoot out = sub.poll(Duration.ofSeconds(5))) {
      assertEquals(1, out.getRowCount());
      assertEquals(v, out.getVector("v").getObject(0));
    }
  }

  @Test
  void badSqlThrowsWithPosition() {
    try (LaminarDB db = LaminarDB.open()) {
      db.execute(SQL);
      LaminarException e =
          assertThrows(
              LaminarException.class, () -> db.execute("CREATE STREAM x AS\n  SELEC k FROM t;"));
      assertEquals("LDB-1001", e.code());
      assertEquals(1001, e.number());
      assertEquals(2, e.line());
      assertTrue(e.column() > 0);
      assertTrue(e.getMessage().startsWith("LDB-1001: "), e.getMessage());
      e = assertThrows(LaminarException.class, () -> db.execute("CREATE STREAM x AS SELECT nope FROM t;"));
      assertEquals("LDB-1003", e.code());
      assertEquals("nope", e.columnName());
      try (Source source = db.source("t");
          Subscription sub = db.subscribe("s", allocator)) {
        assertUsable(db, source, sub, 7);
      }
    }
  }

  @Test
  void wrongColumnTypeIsRejectedWhole() {
    Schema wrong =
        new Schema(
            List.of(
                Field.nullable("k", new ArrowType.Utf8()),
                Field.nullable("v", new ArrowType.Utf8()),
                Field.nullable("ts", new ArrowType.Int(64, true))));
    try (LaminarDB db = LaminarDB.open()) {
      db.execute(SQL);
      try (Source source = db.source("t");
          Subscription sub = db.subscribe("s", allocator);
          VectorSchemaRoot root = VectorSchemaRoot.create(wrong, allocator)) {
        root.allocateNew();
        ((VarCharVector) root.getVector("v")).setSafe(0, "5".getBytes(java.nio.charset.StandardCharsets.UTF_8));
        root.setRowCount(1);
        LaminarException e = assertThrows(LaminarException.class, () -> source.push(root));
        assertEquals("LDB-3004", e.code());
        assertEquals("v", e.columnName());
        assertEquals(1, root.getRowCount()); // still the caller's, intact
        db.runUntilIdle();
        assertNull(sub.poll(Duration.ZERO)); // nothing ingested
        assertUsable(db, source, sub, 3);
      }
    }
  }

  @Test
  void rawAddressPushKeepsArrowOwnership() {
    try (LaminarDB db = LaminarDB.open()) {
      db.execute(SQL);
      try (Source source = db.source("t");
          Subscription sub = db.subscribe("s", allocator);
          VectorSchemaRoot root = good(11);
          ArrowArray array = ArrowArray.allocateNew(allocator);
          ArrowSchema schema = ArrowSchema.allocateNew(allocator)) {
        Data.exportVectorSchemaRoot(allocator, root, null, array, schema);
        source.push(array.memoryAddress(), schema.memoryAddress()); // moves the array
        schema.release();
        db.runUntilIdle();
        try (VectorSchemaRoot out = sub.poll(Duration.ofSeconds(5))) {
          assertEquals(11L, out.getVector("v").getObject(0));
        }
        assertThrows(LaminarException.class, () -> source.push(0, 0));
      }
    }
  }

  @Test
  void closedHandlesThrowMisuse() {
    LaminarDB db = LaminarDB.open();
    db.execute(SQL);
    Source source = db.source("t");
    Subscription sub = db.subscribe("s", allocator);
    source.close();
    source.close(); // idempotent
    try (VectorSchemaRoot root = good(1)) {
      LaminarException e = assertThrows(LaminarException.class, () -> source.push(root));
      assertEquals("LDB-9002", e.code());
      assertTrue(e.getMessage().contains("source 't' is closed"), e.getMessage());
      assertEquals("LDB-9002", assertThrows(LaminarException.class, () -> source.watermark(5)).code());
      // The database is still usable: a new producer handle works.
      try (Source again = db.source("t")) {
        assertUsable(db, again, sub, 4);
      }
    }
    db.close();
    db.close(); // idempotent
    assertTrue(db.isClosed() && sub.isClosed());
    assertEquals("LDB-9002", assertThrows(LaminarException.class, () -> db.execute(SQL)).code());
    assertEquals("LDB-9002", assertThrows(LaminarException.class, () -> db.source("t")).code());
    assertEquals(
        "LDB-9002",
        assertThrows(LaminarException.class, () -> sub.poll(Duration.ZERO)).code());
    sub.close();
  }

  @Test
  void singleProducerAndUnknownObjects() {
    try (LaminarDB db = LaminarDB.open()) {
      db.execute(SQL);
      try (Source source = db.source("t")) {
        assertEquals("LDB-9003", assertThrows(LaminarException.class, () -> db.source("t")).code());
        assertTrue(!source.isClosed());
      }
      assertEquals(
          "LDB-1002",
          assertThrows(LaminarException.class, () -> db.subscribe("nope", allocator)).code());
      assertEquals(
          "LDB-1004",
          assertThrows(LaminarException.class, () -> db.execute("CREATE SOURCE t (x BIGINT);"))
              .code());
    }
  }

  @Test
  void badConfigAndNulText() {
    LaminarException e =
        assertThrows(LaminarException.class, () -> LaminarDB.open(new Config().set("nope", "1")));
    assertEquals("LDB-6001", e.code());
    e = assertThrows(LaminarException.class, () -> LaminarDB.open(new Config().bufferSize(3)));
    assertEquals("LDB-6002", e.code());
    assertEquals("LDB-9002", assertThrows(LaminarException.class, () -> new Config().set("a\0b", "1")).code());
    try (LaminarDB db = LaminarDB.open(new Config().bufferSize(1024))) {
      assertEquals("LDB-9002", assertThrows(LaminarException.class, () -> db.execute("SELECT 1\0")).code());
      assertEquals("LDB-9002", assertThrows(LaminarException.class, () -> db.execute(null)).code());
    }
  }

  @Test
  void droppedStreamEndsTheSubscription() {
    try (LaminarDB db = LaminarDB.open()) {
      db.execute(SQL);
      try (Subscription sub = db.subscribe("s", allocator)) {
        db.execute("DROP STREAM s;");
        LaminarException e =
            assertThrows(LaminarException.class, () -> sub.poll(Duration.ofMillis(500)));
        assertEquals("LDB-4001", e.code());
        assertTrue(!sub.iterator().hasNext());
      }
    }
  }
}

package org.laminardb;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;
import org.junit.jupiter.api.Test;

/**
 * Source.setIdle (issue 26 item 1): a quiet input of a UNION ALL holds the union's
 * windows open until it is declared idle; then the other input alone closes them.
 */
class IdleTest extends AllocatorTest {
  static final String SQL =
      "CREATE SOURCE a (v BIGINT, ts BIGINT, WATERMARK FOR ts);"
          + "CREATE SOURCE b (v BIGINT, ts BIGINT, WATERMARK FOR ts);"
          + "CREATE STREAM u AS SELECT window_start, COUNT(*) AS n FROM"
          + " (SELECT v, ts FROM a UNION ALL SELECT v, ts FROM b)"
          + " GROUP BY tumble(ts, INTERVAL '1' SECOND);";
  static final Schema SCHEMA =
      new Schema(
          List.of(
              Field.nullable("v", new ArrowType.Int(64, true)),
              Field.nullable("ts", new ArrowType.Int(64, true))));

  private void push(Source source, long v, long ts) {
    try (VectorSchemaRoot root = VectorSchemaRoot.create(SCHEMA, allocator)) {
      root.allocateNew();
      ((BigIntVector) root.getVector("v")).setSafe(0, v);
      ((BigIntVector) root.getVector("ts")).setSafe(0, ts);
      root.setRowCount(1);
      source.push(root);
    }
  }

  /** (window_start, n) of every row the subscription holds now. */
  private static List<List<Long>> drain(Subscription sub) {
    List<List<Long>> out = new ArrayList<>();
    VectorSchemaRoot batch;
    while ((batch = sub.poll(Duration.ZERO)) != null) {
      try (VectorSchemaRoot b = batch) {
        for (int r = 0; r < b.getRowCount(); r++) {
          out.add(
              List.of(
                  ((Number) b.getVector("window_start").getObject(r)).longValue(),
                  ((Number) b.getVector("n").getObject(r)).longValue()));
        }
      }
    }
    return out;
  }

  @Test
  void idleInputLetsUnionWindowsClose() {
    try (LaminarDB db = LaminarDB.open(new Config())) {
      db.execute(SQL);
      Source b = db.source("b");
      try (Source a = db.source("a");
          Subscription sub = db.subscribe("u", allocator)) {
        push(b, 1, 100);
        push(a, 2, 500);
        push(a, 3, 2500);
        db.runUntilIdle();
        assertEquals(List.of(), drain(sub)); // b (at 100) holds the union
        b.setIdle(true);
        db.runUntilIdle();
        assertEquals(List.of(List.of(0L, 2L)), drain(sub));
        b.setIdle(false); // b at 100 again: nothing closes on a alone
        db.runUntilIdle(); // (sources' queues are taken in turn, not in push order)
        push(a, 4, 3500);
        db.runUntilIdle();
        assertEquals(List.of(), drain(sub));
      } finally {
        b.close();
      }
      LaminarException e = assertThrows(LaminarException.class, () -> b.setIdle(true));
      assertEquals("LDB-9002", e.code());
    }
  }
}

package org.laminardb;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.apache.arrow.vector.ipc.ArrowStreamReader;
import org.apache.arrow.vector.ipc.ArrowStreamWriter;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What Python's Source and Connection have, from Java: tryPush, hasCapacity, pushBatch
 * (a list of roots and an ArrowReader stream), checkpoint, pipelineState, and pushes
 * that a Thread.interrupt() ends while they wait for room. Every test accounts for
 * each pushed row: what was acknowledged comes out once, what was refused never.
 */
class ParityTest extends AllocatorTest {
  static final String SQL =
      "CREATE SOURCE t (k VARCHAR, v BIGINT);" + "CREATE STREAM s AS SELECT k, v FROM t;";
  static final Schema SCHEMA =
      new Schema(
          List.of(
              Field.nullable("k", new ArrowType.Utf8()),
              Field.nullable("v", new ArrowType.Int(64, true))));

  /** One batch of rows v = first .. first + n - 1 (k = "r" + v). */
  private VectorSchemaRoot rows(long first, int n) {
    VectorSchemaRoot root = VectorSchemaRoot.create(SCHEMA, allocator);
    fill(root, first, n);
    return root;
  }

  private static void fill(VectorSchemaRoot root, long first, int n) {
    root.allocateNew();
    for (int i = 0; i < n; i++) {
      ((VarCharVector) root.getVector("k"))
          .setSafe(i, ("r" + (first + i)).getBytes(StandardCharsets.UTF_8));
      ((BigIntVector) root.getVector("v")).setSafe(i, first + i);
    }
    root.setRowCount(n);
  }

  /** Every v the subscription holds now (not waiting), in order. */
  private static List<Long> drain(Subscription sub) {
    List<Long> out = new ArrayList<>();
    VectorSchemaRoot batch;
    while ((batch = sub.poll(Duration.ZERO)) != null) {
      try (VectorSchemaRoot b = batch) {
        for (int r = 0; r < b.getRowCount(); r++) {
          out.add((Long) b.getVector("v").getObject(r));
        }
      }
    }
    return out;
  }

  /**
   * Run the graph inline and read, until nothing more comes (a subscriber queue of 2
   * slots makes runUntilIdle stop when it is full).
   */
  private static List<Long> runAndDrain(LaminarDB db, Subscription sub) {
    List<Long> out = new ArrayList<>();
    for (int i = 0; i < 100; i++) {
      db.runUntilIdle();
      List<Long> more = drain(sub);
      if (more.isEmpty()) {
        break;
      }
      out.addAll(more);
    }
    return out;
  }

  /** Read until `count` values came (or 30 s passed). */
  private static List<Long> await(Subscription sub, int count) {
    List<Long> out = new ArrayList<>();
    long deadline = System.nanoTime() + 30_000_000_000L;
    while (out.size() < count && System.nanoTime() < deadline) {
      try (VectorSchemaRoot b = sub.poll(Duration.ofMillis(200))) {
        if (b != null) {
          for (int r = 0; r < b.getRowCount(); r++) {
            out.add((Long) b.getVector("v").getObject(r));
          }
        }
      }
    }
    return out;
  }

  private static List<Long> range(long first, long end) {
    List<Long> out = new ArrayList<>();
    for (long v = first; v < end; v++) {
      out.add(v);
    }
    return out;
  }

  @Test
  void tryPushRefusesAFullQueueAndIngestsNothing() {
    try (LaminarDB db = LaminarDB.open(new Config().bufferSize(2))) {
      db.execute(SQL);
      try (Source source = db.source("t");
          Subscription sub = db.subscribe("s", allocator)) {
        assertTrue(source.hasCapacity(2));
        try (VectorSchemaRoot a = rows(0, 1);
            VectorSchemaRoot b = rows(1, 1);
            VectorSchemaRoot c = rows(2, 1)) {
          assertTrue(source.tryPush(a));
          assertTrue(source.hasCapacity());
          assertFalse(source.hasCapacity(2));
          assertTrue(source.tryPush(b));
          assertFalse(source.hasCapacity());
          assertTrue(source.hasCapacity(0));
          assertFalse(source.tryPush(c)); // full, runtime stopped: refused at once
          // push waits only while the runtime runs: here it is LDB-3006 at once.
          LaminarException full = assertThrows(LaminarException.class, () -> source.push(c));
          assertEquals("LDB-3006", full.code());
          assertEquals(range(0, 2), runAndDrain(db, sub)); // c is not in
          assertTrue(source.hasCapacity(2));
          assertTrue(source.tryPush(c)); // the same root, again: it was left as it was
        }
        assertEquals(List.of(2L), runAndDrain(db, sub));
        LaminarException e = assertThrows(LaminarException.class, () -> source.hasCapacity(-1));
        assertEquals("LDB-9002", e.code());
      }
    }
  }

  /**
   * Runtime started, a subscriber that reads nothing (buffer_size 2, slow_subscriber
   * block): the reactor stalls and the source queue fills. tryPush answers false, push
   * and pushBatch wait -- until interrupted: LDB-3009, nothing of theirs ingested. Once
   * the subscriber reads, every acknowledged row comes out exactly once, in order.
   */
  @Test
  void interruptEndsAPushWaitingForRoom() throws InterruptedException {
    try (LaminarDB db = LaminarDB.open(new Config().bufferSize(2))) {
      db.execute(SQL);
      try (Source source = db.source("t");
          Subscription sub = db.subscribe("s", allocator)) {
        db.start();
        long next = 0;
        List<Long> acked = new ArrayList<>();
        for (int i = 0; i < 1000; i++) { // fill the subscriber's, the reactor's, the source's room
          try (VectorSchemaRoot one = rows(next, 1)) {
            if (!source.tryPush(one)) {
              break;
            }
          }
          acked.add(next++);
          Thread.sleep(2); // let the reactor take it, until it stalls
        }
        assertTrue(acked.size() < 1000, "the queue never filled");
        assertFalse(source.hasCapacity());
        long blocked = next;
        for (int kind = 0; kind < 3; kind++) {
          AtomicReference<Throwable> thrown = new AtomicReference<>();
          AtomicReference<Boolean> stillInterrupted = new AtomicReference<>();
          final int which = kind;
          Thread pusher =
              new Thread(
                  () -> {
                    try (VectorSchemaRoot one = rows(blocked, 1);
                        VectorSchemaRoot two = rows(blocked + 1, 1)) {
                      if (which == 0) {
                        source.push(one);
                      } else if (which == 1) {
                        source.pushBatch(List.of(one, two));
                      } else {
                        source.watermark(Long.MAX_VALUE);
                      }
                    } catch (Throwable t) {
                      thrown.set(t);
                    }
                    stillInterrupted.set(Thread.currentThread().isInterrupted());
                  });
          pusher.start();
          Thread.sleep(300); // it waits for room
          assertTrue(pusher.isAlive(), "push " + kind + " did not wait for room");
          pusher.interrupt();
          pusher.join(5000);
          assertFalse(pusher.isAlive(), "interrupt did not end push " + kind);
          assertNotNull(thrown.get(), "push " + kind);
          LaminarException e = (LaminarException) thrown.get();
          assertEquals("LDB-3009", e.code(), e.getMessage());
          assertTrue(e.getMessage().contains("interrupted"), e.getMessage());
          assertEquals(Boolean.TRUE, stillInterrupted.get());
        }
        assertEquals(acked, await(sub, acked.size()));
        db.stop();
        assertEquals(List.of(), drain(sub)); // nothing of the interrupted pushes came
      }
    }
  }

  /**
   * A push, pushBatch (a run that fits the queue, and one longer than it) or watermark
   * waiting for room behind a subscriber that reads nothing, and close() on another
   * thread: close() does not wait for it -- the waiting call ends within a wait slice
   * with LDB-9002 saying the database (or the source) is being closed -- and nothing
   * of a run that fits the queue went in.
   */
  @Test
  void closeOnAnotherThreadEndsAWaitForRoom() throws InterruptedException {
    for (int kind = 0; kind < 5; kind++) {
      boolean closeSource = kind == 4;
      LaminarDB db = LaminarDB.open(new Config().bufferSize(2));
      db.execute(SQL);
      Source source = db.source("t");
      Subscription sub = db.subscribe("s", allocator);
      db.start();
      long next = 0;
      for (int i = 0; i < 1000; i++) { // fill the subscriber's, the reactor's, the source's room
        try (VectorSchemaRoot one = rows(next, 1)) {
          if (!source.tryPush(one)) {
            break;
          }
        }
        next++;
        Thread.sleep(2);
      }
      assertFalse(source.hasCapacity(), "the queue never filled");
      AtomicReference<Throwable> thrown = new AtomicReference<>();
      final int which = kind;
      final long first = next;
      Thread pusher =
          new Thread(
              () -> {
                List<VectorSchemaRoot> roots = new ArrayList<>();
                try {
                  for (int i = 0; i < (which == 2 ? 5 : 2); i++) {
                    roots.add(rows(first + i, 1));
                  }
                  if (which == 0 || which == 4) {
                    source.push(roots.get(0));
                  } else if (which == 3) {
                    source.watermark(Long.MAX_VALUE);
                  } else {
                    source.pushBatch(roots);
                  }
                } catch (Throwable t) {
                  thrown.set(t);
                } finally {
                  roots.forEach(VectorSchemaRoot::close);
                }
              });
      pusher.setDaemon(true); // a call that waits for good must not hold the JVM
      pusher.start();
      Thread.sleep(300); // it waits for room
      assertTrue(pusher.isAlive(), "call " + kind + " did not wait for room");
      long t0 = System.nanoTime();
      Thread closer = new Thread(closeSource ? source::close : db::close); // (db: sub too)
      closer.setDaemon(true); // a close() that waits for good must not hold the JVM
      closer.start();
      closer.join(5000);
      pusher.join(5000);
      double seconds = (System.nanoTime() - t0) / 1e9;
      assertFalse(closer.isAlive(), "close() waited for call " + kind);
      assertFalse(pusher.isAlive(), "close() did not end call " + kind);
      assertTrue(seconds < 3.0, "close() took " + seconds + " s");
      assertNotNull(thrown.get(), "call " + kind);
      LaminarException e = (LaminarException) thrown.get();
      assertEquals("LDB-9002", e.code(), e.getMessage());
      assertTrue(e.getMessage().contains("being closed on another thread"), e.getMessage());
      if (kind == 1) {
        assertTrue(e.getMessage().contains("nothing of this pushBatch call"), e.getMessage());
      }
      if (closeSource) {
        assertTrue(source.isClosed());
        sub.close();
        db.close();
      }
      assertTrue(db.isClosed());
    }
  }

  @Test
  void pushBatchIsOneRunValidatedWhole() {
    try (LaminarDB db = LaminarDB.open()) {
      db.execute(SQL);
      try (Source source = db.source("t");
          Subscription sub = db.subscribe("s", allocator);
          VectorSchemaRoot a = rows(0, 3);
          VectorSchemaRoot b = rows(3, 2);
          VectorSchemaRoot c = rows(5, 4)) {
        source.pushBatch(List.of(a, b, c));
        db.runUntilIdle();
        assertEquals(range(0, 9), drain(sub));
        // Batches of two schemas: refused before the core sees them.
        Schema wrong =
            new Schema(
                List.of(
                    Field.nullable("k", new ArrowType.Utf8()),
                    Field.nullable("v", new ArrowType.Utf8())));
        try (VectorSchemaRoot bad = VectorSchemaRoot.create(wrong, allocator)) {
          bad.allocateNew();
          ((VarCharVector) bad.getVector("k")).setSafe(0, "x".getBytes(StandardCharsets.UTF_8));
          ((VarCharVector) bad.getVector("v")).setSafe(0, "y".getBytes(StandardCharsets.UTF_8));
          bad.setRowCount(1);
          LaminarException e =
              assertThrows(LaminarException.class, () -> source.pushBatch(List.of(a, bad)));
          assertEquals("LDB-9002", e.code(), e.getMessage());
        }
        {
          // A batch that breaks NOT NULL: the core refuses the whole call, naming it.
          db.execute("CREATE SOURCE u (k VARCHAR NOT NULL, v BIGINT);"
              + "CREATE STREAM su AS SELECT k, v FROM u;");
          try (Source u = db.source("u");
              Subscription subU = db.subscribe("su", allocator);
              VectorSchemaRoot nullKey = rows(50, 2)) {
            ((VarCharVector) nullKey.getVector("k")).setNull(1);
            LaminarException e =
                assertThrows(LaminarException.class, () -> u.pushBatch(List.of(a, nullKey, b)));
            assertEquals("LDB-3005", e.code(), e.getMessage());
            assertTrue(e.getMessage().contains("array 1 of 3"), e.getMessage());
            db.runUntilIdle();
            assertEquals(List.of(), drain(subU)); // not even a
            u.pushBatch(List.of(a, b));
            db.runUntilIdle();
            assertEquals(range(0, 5), drain(subU));
          }
        }
        source.pushBatch(List.of()); // nothing to do
      }
    }
  }

  @Test
  void pushBatchReadsAnArrowStream() throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (VectorSchemaRoot root = VectorSchemaRoot.create(SCHEMA, allocator);
        ArrowStreamWriter writer = new ArrowStreamWriter(root, null, bytes)) {
      writer.start();
      for (int b = 0; b < 4; b++) {
        fill(root, b * 10L, 10);
        writer.writeBatch();
      }
      writer.end();
    }
    try (LaminarDB db = LaminarDB.open()) {
      db.execute(SQL);
      try (Source source = db.source("t");
          Subscription sub = db.subscribe("s", allocator);
          ArrowReader reader =
              new ArrowStreamReader(new ByteArrayInputStream(bytes.toByteArray()), allocator)) {
        source.pushBatch(reader);
        db.runUntilIdle();
        assertEquals(range(0, 40), drain(sub));
      }
    }
  }

  /** A run longer than the queue, runtime started: all rows come, in order. */
  @Test
  void pushBatchLongerThanTheQueue() throws InterruptedException {
    try (LaminarDB db = LaminarDB.open(new Config().bufferSize(4))) {
      db.execute(SQL);
      try (Source source = db.source("t");
          Subscription sub = db.subscribe("s", allocator)) {
        db.start();
        List<VectorSchemaRoot> roots = new ArrayList<>();
        try {
          for (int i = 0; i < 25; i++) {
            roots.add(rows(i * 2L, 2));
          }
          AtomicReference<List<Long>> got = new AtomicReference<>();
          Thread reader = new Thread(() -> got.set(await(sub, 50)));
          reader.start();
          source.pushBatch(roots);
          reader.join(60_000);
          assertEquals(range(0, 50), got.get());
        } finally {
          for (VectorSchemaRoot r : roots) {
            r.close();
          }
        }
        db.stop();
      }
    }
  }

  @Test
  void pipelineStateShowsQueuedInput() throws IOException {
    try (LaminarDB db = LaminarDB.open()) {
      db.execute(SQL);
      try (Source source = db.source("t");
          VectorSchemaRoot a = rows(0, 1)) {
        source.push(a);
        source.push(a);
        List<String> seen = new ArrayList<>();
        try (ArrowReader reader = db.pipelineState(allocator)) {
          while (reader.loadNextBatch()) {
            VectorSchemaRoot r = reader.getVectorSchemaRoot();
            for (int i = 0; i < r.getRowCount(); i++) {
              seen.add(
                  r.getVector("kind").getObject(i)
                      + "/"
                      + r.getVector("name").getObject(i)
                      + "/"
                      + r.getVector("state").getObject(i)
                      + "/"
                      + r.getVector("queue_depth").getObject(i));
            }
          }
        }
        assertTrue(seen.contains("runtime//stopped/2"), seen.toString());
        assertTrue(seen.contains("source/t/waiting/2"), seen.toString());
        db.runUntilIdle();
        try (ArrowReader reader = db.pipelineState(allocator)) {
          assertTrue(reader.loadNextBatch());
          VectorSchemaRoot r = reader.getVectorSchemaRoot();
          for (int i = 0; i < r.getRowCount(); i++) {
            if ("t".equals(String.valueOf(r.getVector("name").getObject(i)))) {
              assertEquals("idle", String.valueOf(r.getVector("state").getObject(i)));
            }
          }
        }
      }
    }
  }

  /**
   * A checkpoint makes a view's rows survive a restart without a WAL: reopened, the
   * view holds what was checkpointed, and nothing pushed after the checkpoint.
   */
  @Test
  void checkpointSurvivesARestart(@TempDir Path dir) throws IOException {
    Config config = new Config().dataDir(dir).set("checkpoint_interval", "1 hour");
    String sql = SQL + "CREATE MATERIALIZED VIEW mv AS SELECT k, v FROM t;";
    try (LaminarDB db = LaminarDB.open(config)) {
      db.execute(sql);
      try (Source source = db.source("t");
          VectorSchemaRoot a = rows(0, 3);
          VectorSchemaRoot b = rows(3, 2)) {
        source.push(a);
        db.runUntilIdle();
        db.checkpoint();
        source.push(b); // after the checkpoint, no WAL: lost at the restart
        db.runUntilIdle();
        assertEquals(range(0, 5), view(db));
      }
    }
    assertTrue(Files.list(dir.resolve("checkpoints")).findAny().isPresent());
    try (LaminarDB db = LaminarDB.open(config)) {
      db.execute(sql);
      assertEquals(range(0, 3), view(db));
    }
  }

  private List<Long> view(LaminarDB db) throws IOException {
    List<Long> out = new ArrayList<>();
    try (ArrowReader reader = db.query("SELECT v FROM mv ORDER BY v", allocator)) {
      while (reader.loadNextBatch()) {
        VectorSchemaRoot r = reader.getVectorSchemaRoot();
        for (int i = 0; i < r.getRowCount(); i++) {
          out.add((Long) r.getVector("v").getObject(i));
        }
      }
    }
    return out;
  }
}

package org.laminardb;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.junit.jupiter.api.Test;

/**
 * A push or watermark blocked on a full queue (a subscriber nobody reads) is ended by
 * Thread.interrupt(): LDB-3009 with an InterruptedException as its cause, the interrupt
 * status set again, and nothing of the batch ingested (issue 20).
 */
class InterruptTest extends AllocatorTest {
  static final String SQL =
      "CREATE SOURCE t (v BIGINT);"
          + "CREATE STREAM s AS SELECT v FROM t;"
          + "CREATE MATERIALIZED VIEW tot AS SELECT COUNT(*) AS n, SUM(v) AS s FROM t"
          + " EMIT CHANGES";

  @Test
  void interruptEndsABlockedPushAndWatermark() throws Exception {
    AtomicLong acked = new AtomicLong();
    AtomicReference<Throwable> pushError = new AtomicReference<>();
    AtomicReference<Throwable> watermarkError = new AtomicReference<>();
    AtomicBoolean flagAfterPush = new AtomicBoolean();
    AtomicBoolean flagAfterWatermark = new AtomicBoolean();
    CountDownLatch watermarking = new CountDownLatch(1);
    try (LaminarDB db = LaminarDB.open(new Config().bufferSize(2))) {
      db.execute(SQL);
      Subscription sub = db.subscribe("s", allocator); // never read: the pipeline stalls
      db.start();
      Thread producer =
          new Thread(
              () -> {
                try (Source src = db.source("t");
                    VectorSchemaRoot root =
                        VectorSchemaRoot.create(db.schema("t", allocator), allocator)) {
                  BigIntVector v = (BigIntVector) root.getVector("v");
                  try {
                    while (!Thread.currentThread().isInterrupted()) {
                      root.allocateNew(); // new buffers: the core still reads the last ones
                      v.setSafe(0, acked.get());
                      root.setRowCount(1);
                      src.push(root);
                      acked.incrementAndGet();
                    }
                  } catch (LaminarException e) {
                    pushError.set(e);
                  }
                  flagAfterPush.set(Thread.interrupted()); // and cleared for the next wait
                  watermarking.countDown();
                  try {
                    src.watermark(10_000);
                  } catch (LaminarException e) {
                    watermarkError.set(e);
                  }
                  flagAfterWatermark.set(Thread.interrupted());
                }
              });
      producer.start();
      try {
        // Blocked: pushes went in, then none returned for a while.
        long seen = -1;
        while (acked.get() == 0 || acked.get() != seen) {
          seen = acked.get();
          Thread.sleep(500);
        }
        producer.interrupt();
        assertTrue(watermarking.await(5, TimeUnit.SECONDS), "the interrupt did not end the push");
        Thread.sleep(300); // the watermark waits for room now
        producer.interrupt();
        producer.join(5000);
        assertFalse(producer.isAlive(), "the interrupt did not end the watermark");
      } finally {
        sub.close(); // let a push that was not interrupted finish
        producer.interrupt();
        producer.join(10_000);
      }
      assertInterrupted(pushError.get());
      assertTrue(flagAfterPush.get(), "the interrupt status is set again");
      assertInterrupted(watermarkError.get());
      assertTrue(flagAfterWatermark.get(), "the interrupt status is set again");
      db.stop();
      // Nothing of the interrupted batch went in: the view holds the acknowledged ones.
      long n = acked.get();
      try (ArrowReader rows = db.query("SELECT n, s FROM tot", allocator)) {
        assertTrue(rows.loadNextBatch());
        VectorSchemaRoot r = rows.getVectorSchemaRoot();
        assertEquals(1, r.getRowCount());
        assertEquals(n, ((BigIntVector) r.getVector("n")).get(0));
        assertEquals(n * (n - 1) / 2, ((BigIntVector) r.getVector("s")).get(0));
      }
    }
  }

  private static void assertInterrupted(Throwable t) {
    assertNotNull(t, "no exception");
    LaminarException e = assertInstanceOf(LaminarException.class, t);
    assertEquals("LDB-3009", e.code(), e.getMessage());
    assertInstanceOf(InterruptedException.class, e.getCause());
  }
}

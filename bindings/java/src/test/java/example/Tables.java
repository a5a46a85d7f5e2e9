package example;

import java.io.IOException;
import java.util.List;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.laminardb.LaminarDB;

public class Tables {
  /** A row of table fx; a record of its key columns alone deletes. */
  public record Rate(String currency, double rate) {}

  public record Currency(String currency) {}

  public static void main(String[] args) throws IOException {
    try (BufferAllocator allocator = new RootAllocator();
        LaminarDB db = LaminarDB.open()) { // closed before the allocator
      db.execute("CREATE TABLE fx (currency VARCHAR, rate DOUBLE, PRIMARY KEY (currency));");
      db.upsert("fx", Rate.class, List.of(new Rate("EUR", 1.08), new Rate("GBP", 1.27)));
      db.upsert("fx", Rate.class, List.of(new Rate("EUR", 1.09))); // replaces EUR's row
      db.delete("fx", Currency.class, List.of(new Currency("GBP")));
      db.runUntilIdle();
      try (ArrowReader rows = db.query("SELECT currency, rate FROM fx", allocator)) {
        while (rows.loadNextBatch()) {
          VectorSchemaRoot batch = rows.getVectorSchemaRoot();
          for (int r = 0; r < batch.getRowCount(); r++) {
            System.out.printf(
                "%s %.2f%n", batch.getVector("currency").getObject(r), batch.getVector("rate").getObject(r));
          }
        }
      }
    }
  }
}

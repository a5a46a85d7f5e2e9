package org.laminardb;

import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.ReferenceManager;

/**
 * Reads and writes of the engine's memory at raw addresses (a function's argument
 * struct, an aggregate's state slots and group indexes), through a non-owning {@link
 * ArrowBuf} view: the same calls in every Arrow Java the binding is compiled against (the
 * binding's, and each Spark line's for the JVM engine, where {@code MemoryUtil}'s static
 * accessors differ).
 */
final class Memory {
  private Memory() {}

  private static ArrowBuf view(long address, long bytes) {
    return new ArrowBuf(ReferenceManager.NO_OP, null, bytes, address);
  }

  static long getLong(long address) {
    return view(address, 8).getLong(0);
  }

  static void putLong(long address, long value) {
    view(address, 8).setLong(0, value);
  }

  static int getInt(long address) {
    return view(address, 4).getInt(0);
  }
}

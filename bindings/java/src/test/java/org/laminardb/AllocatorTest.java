package org.laminardb;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

/**
 * Base of the tests: a fresh RootAllocator per test that must report zero outstanding
 * bytes when the test ends (issue 8: "the root allocator reports zero outstanding bytes
 * after every test"); closing it would also throw on a leak.
 */
abstract class AllocatorTest {
  protected BufferAllocator allocator;

  @BeforeEach
  void openAllocator() {
    allocator = new RootAllocator();
  }

  @AfterEach
  void allocatorIsEmpty() {
    assertEquals(0, allocator.getAllocatedMemory(), allocator.toVerboseString());
    allocator.close();
  }
}

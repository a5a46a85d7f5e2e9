package org.laminardb;

import java.nio.charset.StandardCharsets;
import java.util.List;
import org.apache.arrow.c.ArrowArray;
import org.apache.arrow.c.ArrowSchema;
import org.apache.arrow.c.Data;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * One registration of a scalar function: what the JNI trampoline (laminar_jni.c,
 * java_scalar) calls for every chunk. The arguments' struct array is imported into a
 * root kept for the function (calls of one function are serialized by the core), the
 * user's result exported into the core's structs. The function's allocator holds the
 * imported and result buffers during a call only, and is closed when the core lets the
 * function go ({@link #destroy}).
 */
final class ScalarCall {
  private final String name;
  private final VectorFunction fn;
  private final BufferAllocator allocator = new RootAllocator();
  private final VectorSchemaRoot root;

  ScalarCall(String name, VectorFunction fn, String[] argFormats) {
    this.name = name;
    this.fn = fn;
    this.root = VectorSchemaRoot.create(new Schema(SqlTypes.argFields(argFormats)), allocator);
  }

  /** One chunk (laminar_function_callback): null on success, else the error's text. */
  byte[] call(long args, long argsSchema, long out, long outSchema) {
    return Callbacks.guarded(() -> {
      SqlTypes.importArgs(allocator, args, root);
      List<FieldVector> columns = root.getFieldVectors();
      FieldVector result = fn.apply(columns, allocator);
      if (result == null) {
        return ("function '" + name + "' returned null, not a vector")
            .getBytes(StandardCharsets.UTF_8);
      }
      if (columns.contains(result)) {
        // An argument's buffers are the engine's, lent for the call only.
        result = SqlTypes.copy(result, allocator, null);
      }
      try (FieldVector exported = result) {
        Data.exportVector(
            allocator, exported, null, ArrowArray.wrap(out), ArrowSchema.wrap(outSchema));
      }
      return null;
    }, root::clear);
  }

  /** The core dropped the function (or closed its database): free its memory. */
  void destroy() {
    root.close();
    allocator.close();
  }

  /** A {@link RowFunction} as a {@link VectorFunction} returning {@code format}. */
  static VectorFunction rows(RowFunction fn, String format) {
    return (args, allocator) -> {
      int n = args.isEmpty() ? 1 : args.get(0).getValueCount();
      FieldVector out = SqlTypes.allocate(format, "result", allocator, n);
      try {
        Object[] values = new Object[args.size()];
        for (int i = 0; i < n; i++) {
          for (int j = 0; j < values.length; j++) {
            values[j] = SqlTypes.read(args.get(j), i);
          }
          SqlTypes.write(out, i, fn.apply(values));
        }
        out.setValueCount(n);
        return out;
      } catch (Throwable t) {
        out.close();
        throw t;
      }
    };
  }
}

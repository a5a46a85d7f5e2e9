package org.laminardb;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.arrow.c.ArrowArray;
import org.apache.arrow.c.ArrowSchema;
import org.apache.arrow.c.Data;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * One registration of an aggregate: what the JNI trampolines (laminar_jni.c,
 * java_agg_*) call. The core keeps 8 bytes of state per group: a key into this
 * object's table of Java states (0: none yet; {@link AggregateFunction#init} makes it
 * when the group first needs one). destroyState drops a key; serialize / deserialize
 * carry a state through checkpoints and copies as a tag byte (1) and the user's bytes.
 * Methods are synchronized: the core calls them one at a time, possibly from
 * different threads (a reactor, then the closing thread).
 *
 * @param <S> the user's state type
 */
final class AggregateCall<S> {
  private final String name;
  private final AggregateFunction<S> impl;
  private final String resultFormat;
  private final BufferAllocator allocator = new RootAllocator();
  private final VectorSchemaRoot root;
  private final Map<Long, S> states = new HashMap<>();
  private long nextKey = 1;

  AggregateCall(String name, AggregateFunction<S> impl, String[] argFormats, String resultFormat) {
    this.name = name;
    this.impl = impl;
    this.resultFormat = resultFormat;
    this.root = VectorSchemaRoot.create(new Schema(SqlTypes.argFields(argFormats)), allocator);
  }

  /** The state under the key at {@code slot} (a new init() one for key 0). */
  private S get(long slot) throws Exception {
    long key = Memory.getLong(slot);
    return key == 0 ? impl.init() : states.get(key);
  }

  /** Keep {@code state} for the group whose slot is {@code slot} (a new key for 0). */
  private void put(long slot, S state) {
    long key = Memory.getLong(slot);
    if (key == 0) {
      key = nextKey++;
      Memory.putLong(slot, key);
    }
    states.put(key, state);
  }

  /** update or retract of one chunk: its rows go to the groups {@code groups} names. */
  synchronized byte[] update(long statesAddress, long groups, long args, long argsSchema, boolean retract) {
    return Callbacks.guarded(() -> {
      SqlTypes.importArgs(allocator, args, root);
      int n = root.getRowCount();
      Map<Integer, List<Integer>> rows = new LinkedHashMap<>();
      for (int j = 0; j < n; j++) {
        rows.computeIfAbsent(Memory.getInt(groups + 4L * j), g -> new ArrayList<>()).add(j);
      }
      List<FieldVector> columns = root.getFieldVectors();
      for (Map.Entry<Integer, List<Integer>> group : rows.entrySet()) {
        long slot = statesAddress + 8L * Integer.toUnsignedLong(group.getKey());
        S state = get(slot);
        if (rows.size() == 1) { // the whole chunk: no copy
          state = retract ? impl.retract(state, columns) : impl.update(state, columns);
        } else {
          List<FieldVector> part = take(columns, group.getValue());
          try {
            state = retract ? impl.retract(state, part) : impl.update(state, part);
          } finally {
            for (FieldVector v : part) {
              v.close();
            }
          }
        }
        put(slot, state);
      }
      return null;
    }, root::clear);
  }

  /** Copies of rows {@code idx} of each column, in the function's allocator. */
  private List<FieldVector> take(List<FieldVector> columns, List<Integer> idx) {
    List<FieldVector> out = new ArrayList<>(columns.size());
    try {
      for (FieldVector v : columns) {
        out.add(SqlTypes.copy(v, allocator, idx));
      }
      return out;
    } catch (RuntimeException e) {
      for (FieldVector v : out) {
        v.close();
      }
      throw e;
    }
  }

  /** Fold the state at {@code other} into the one at {@code state}. */
  synchronized byte[] merge(long state, long other) {
    return Callbacks.guarded(() -> {
      long otherKey = Memory.getLong(other);
      if (otherKey != 0) {
        put(state, impl.merge(get(state), states.get(otherKey)));
      }
      return null;
    }, () -> {});
  }

  /** The results of n consecutive states, exported into the core's structs. */
  synchronized byte[] finish(long statesAddress, long n, long out, long outSchema) {
    return Callbacks.guarded(() -> {
      try (FieldVector result = SqlTypes.allocate(resultFormat, name, allocator, (int) n)) {
        for (int i = 0; i < n; i++) {
          SqlTypes.write(result, i, impl.finalize(get(statesAddress + 8L * i)));
        }
        result.setValueCount((int) n);
        Data.exportVector(
            allocator, result, null, ArrowArray.wrap(out), ArrowSchema.wrap(outSchema));
      }
      return null;
    }, () -> {});
  }

  /** The bytes of the state at {@code slot} (empty for none yet); null if it fails. */
  synchronized byte[] serialize(long slot) {
    Callbacks.enter();
    try {
      long key = Memory.getLong(slot);
      if (key == 0) {
        return new byte[0];
      }
      byte[] body = impl.serialize(states.get(key));
      byte[] data = new byte[body.length + 1];
      data[0] = 1;
      System.arraycopy(body, 0, data, 1, body.length);
      return data;
    } catch (Throwable t) {
      return null;
    } finally {
      Callbacks.exit();
    }
  }

  /** Make the slot (zero on entry) hold the state serialize wrote as {@code data}. */
  synchronized boolean deserialize(long slot, byte[] data) {
    Callbacks.enter();
    try {
      Memory.putLong(slot, 0);
      if (data.length > 0) {
        byte[] body = new byte[data.length - 1];
        System.arraycopy(data, 1, body, 0, body.length);
        put(slot, impl.deserialize(body));
      }
      return true;
    } catch (Throwable t) {
      return false;
    } finally {
      Callbacks.exit();
    }
  }

  /** The core discards the state at {@code slot}: let its Java object go. */
  synchronized void destroyState(long slot) {
    states.remove(Memory.getLong(slot));
    Memory.putLong(slot, 0);
  }

  /** The core let the aggregate go: free its memory. */
  synchronized void destroy() {
    states.clear();
    root.close();
    allocator.close();
  }

  /** Whether {@code impl} overrides {@link AggregateFunction#retract}. */
  static boolean retracts(AggregateFunction<?> impl) {
    try {
      return !impl.getClass()
          .getMethod("retract", Object.class, List.class)
          .isDefault();
    } catch (NoSuchMethodException e) {
      return false;
    }
  }
}

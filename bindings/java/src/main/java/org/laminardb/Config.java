package org.laminardb;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Options for {@link LaminarDB#open(Config)}: the keys of {@code laminar_config_set}
 * (docs/C-API.md), e.g. {@code buffer_size}, {@code data_dir},
 * {@code checkpoint_interval}, {@code wal_mode}, {@code var.NAME}. Keys and values are
 * checked by the core when the database opens (LDB-6001 unknown key, LDB-6002 bad
 * value). A plain value object: not thread-safe while being built.
 */
public final class Config {
  private final Map<String, String> options = new LinkedHashMap<>();
  private final List<Registration> functions = new ArrayList<>();

  /** An empty config: every option at its default. */
  public Config() {}

  /**
   * Set one option (a later call for the same key wins).
   *
   * @param key the option's name
   * @param value its value as text
   * @return this config
   */
  public Config set(String key, String value) {
    options.put(Text.check(key, "option key"), Text.check(value, "option value"));
    return this;
  }

  /** Set {@code data_dir}: a directory for durable state. */
  public Config dataDir(Path dir) {
    return set("data_dir", dir.toString());
  }

  /** Set {@code buffer_size}: slots in each source and subscriber queue. */
  public Config bufferSize(int slots) {
    return set("buffer_size", Integer.toString(slots));
  }

  /** The options set so far, in order. */
  public Map<String, String> options() {
    return java.util.Collections.unmodifiableMap(options);
  }

  /**
   * Register a vectorized scalar function at open, as {@link LaminarDB#createFunction}
   * does on an open database. Names and types are checked here (LDB-2002 for an
   * unknown type), the rest when the database opens.
   */
  public Config function(
      String name, VectorFunction fn, List<String> params, String returns, FunctionOptions options) {
    functions.add(Registration.scalar(name, fn, params, returns, options));
    return this;
  }

  /** Register a per-row scalar function at open, as {@link LaminarDB#createRowFunction}. */
  public Config rowFunction(
      String name, RowFunction fn, List<String> params, String returns, FunctionOptions options) {
    functions.add(Registration.row(name, fn, params, returns, options));
    return this;
  }

  /** Register an aggregate at open, as {@link LaminarDB#createAggregate}. */
  public Config aggregate(
      String name,
      AggregateFunction<?> aggregate,
      List<String> params,
      String returns,
      FunctionOptions options) {
    functions.add(Registration.aggregate(name, aggregate, params, returns, options));
    return this;
  }

  /** The functions to register at open, in order. */
  List<Registration> functions() {
    return java.util.Collections.unmodifiableList(functions);
  }
}

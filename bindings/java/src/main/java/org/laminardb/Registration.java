package org.laminardb;

import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * A user-defined function or aggregate to register on a database ({@link
 * LaminarDB#createFunction}, {@link LaminarDB#createAggregate}) or in a {@link Config}
 * (registered before a durable database recovers the streams that call it). Each
 * registration makes its own call object ({@link ScalarCall}, {@link AggregateCall}),
 * which the core holds until it lets the function go.
 */
final class Registration {
  final String name;
  private final String[] argFormats;
  private final String resultFormat;
  private final int flags;
  private final VectorFunction fn;
  private final AggregateFunction<?> aggregate;

  private Registration(
      String name,
      List<String> params,
      String returns,
      FunctionOptions options,
      VectorFunction fn,
      AggregateFunction<?> aggregate) {
    this.name = Text.check(name, "function name");
    if (params == null || params.isEmpty()) {
      throw LaminarException.misuse("function '" + name + "': declare at least one parameter");
    }
    this.argFormats = new String[params.size()];
    for (int i = 0; i < argFormats.length; i++) {
      argFormats[i] = SqlTypes.format(params.get(i), "function '" + name + "' parameter " + (i + 1));
    }
    this.resultFormat = SqlTypes.format(returns, "function '" + name + "' return type");
    this.flags = (options != null ? options : FunctionOptions.defaults()).flags();
    this.fn = fn;
    this.aggregate = aggregate;
  }

  /** A vectorized scalar function. */
  static Registration scalar(
      String name, VectorFunction fn, List<String> params, String returns, FunctionOptions options) {
    if (fn == null) {
      throw LaminarException.misuse("function '" + name + "' is null");
    }
    return new Registration(name, params, returns, options, fn, null);
  }

  /** A per-row scalar function. */
  static Registration row(
      String name, RowFunction fn, List<String> params, String returns, FunctionOptions options) {
    if (fn == null) {
      throw LaminarException.misuse("function '" + name + "' is null");
    }
    String format = SqlTypes.format(returns, "function '" + name + "' return type");
    return new Registration(name, params, returns, options, ScalarCall.rows(fn, format), null);
  }

  /** An aggregate (only {@link FunctionOptions#calledOnNull} applies to it). */
  static Registration aggregate(
      String name,
      AggregateFunction<?> aggregate,
      List<String> params,
      String returns,
      FunctionOptions options) {
    if (aggregate == null) {
      throw LaminarException.misuse("aggregate '" + name + "' is null");
    }
    FunctionOptions only =
        FunctionOptions.defaults()
            .calledOnNull(options != null && (options.flags() & FunctionOptions.CALLED_ON_NULL) != 0);
    return new Registration(name, params, returns, only, null, aggregate);
  }

  private static <S> AggregateCall<S> aggregateCall(
      String name, AggregateFunction<S> impl, String[] argFormats, String resultFormat) {
    return new AggregateCall<>(name, impl, argFormats, resultFormat);
  }

  /**
   * Register on database {@code db}, or on config {@code config} when db is 0.
   *
   * @throws LaminarException as laminar_function_register / laminar_aggregate_register
   */
  void register(long db, long config) {
    byte[][] types = new byte[argFormats.length][];
    for (int i = 0; i < types.length; i++) {
      types[i] = argFormats[i].getBytes(StandardCharsets.UTF_8);
    }
    byte[] nameBytes = name.getBytes(StandardCharsets.UTF_8);
    byte[] result = resultFormat.getBytes(StandardCharsets.UTF_8);
    if (fn != null) {
      ScalarCall call = new ScalarCall(name, fn, argFormats);
      try {
        Native.functionRegister(db, config, nameBytes, types, result, flags, false, false, call);
      } catch (RuntimeException e) {
        call.destroy(); // not the core's: it calls destroy only after success
        throw e;
      }
    } else {
      AggregateCall<?> call = aggregateCall(name, aggregate, argFormats, resultFormat);
      boolean retract = AggregateCall.retracts(aggregate);
      try {
        Native.functionRegister(db, config, nameBytes, types, result, flags, true, retract, call);
      } catch (RuntimeException e) {
        call.destroy();
        throw e;
      }
    }
  }
}

package org.laminardb;

import java.io.Serializable;
import java.util.Arrays;
import java.util.List;

/**
 * A Java function that {@code laminardb.spark.run(..., java_functions=[...])} registers in
 * every task's engine of the JVM engine (docs/SPARK.md, "Java functions"): its SQL name,
 * the class implementing it ({@link VectorFunction}, {@link RowFunction} or {@link
 * AggregateFunction}, with a public no-argument constructor, on the session's class path),
 * its parameter and return types (the SQL names of docs/JAVA.md) and options. The driver
 * hands it over as text ({@link #parse}); each task loads the class through its context
 * class loader (which holds the session's jars) and registers a new instance in the
 * engine's config before the engine opens, so a durable task engine recovers streams
 * calling it.
 */
public final class FunctionSpec implements Serializable {
  private static final long serialVersionUID = 1L;

  /** The separator of {@link #parse}'s fields (no SQL type or class name holds one). */
  static final String SEPARATOR = "\n";

  private final String name;
  private final String className;
  private final boolean aggregate;
  private final boolean deterministic;
  private final boolean calledOnNull;
  private final String returns;
  private final String[] params;

  private FunctionSpec(
      String name,
      String className,
      boolean aggregate,
      boolean deterministic,
      boolean calledOnNull,
      String returns,
      String[] params) {
    this.name = name;
    this.className = className;
    this.aggregate = aggregate;
    this.deterministic = deterministic;
    this.calledOnNull = calledOnNull;
    this.returns = returns;
    this.params = params;
  }

  /**
   * A spec from its text: name, class, kind ({@code scalar} or {@code aggregate}), flags
   * ({@code d} deterministic, {@code n} called on NULL, or {@code -}), return type, then
   * one parameter type per line (laminardb.spark's {@code JavaFunction}).
   *
   * @throws LaminarException LDB-6002 for a malformed text
   */
  static FunctionSpec parse(String text) {
    String[] f = text.split(SEPARATOR, -1);
    if (f.length < 6 || !(f[2].equals("scalar") || f[2].equals("aggregate"))) {
      throw LaminarException.of(
          LaminarException.BAD_CONFIG_VALUE, "java_functions: malformed function spec " + Arrays.toString(f));
    }
    return new FunctionSpec(
        f[0],
        f[1],
        f[2].equals("aggregate"),
        f[3].contains("d"),
        f[3].contains("n"),
        f[4],
        Arrays.copyOfRange(f, 5, f.length));
  }

  /** The specs of {@link #parse}'s texts (null: none). */
  static FunctionSpec[] parseAll(String[] texts) {
    if (texts == null) {
      return new FunctionSpec[0];
    }
    FunctionSpec[] specs = new FunctionSpec[texts.length];
    for (int i = 0; i < texts.length; i++) {
      specs[i] = parse(texts[i]);
    }
    return specs;
  }

  /** The function's SQL name. */
  String name() {
    return name;
  }

  /**
   * A new instance of the class, registered: the {@link Registration} a config takes.
   *
   * @throws LaminarException LDB-6002 when the class is not on the class path, has no
   *     public no-argument constructor or does not implement the declared kind's interface;
   *     LDB-2002 for an unknown type
   */
  Registration registration() {
    Object impl = instantiate();
    List<String> types = Arrays.asList(params);
    FunctionOptions options =
        FunctionOptions.defaults().deterministic(deterministic).calledOnNull(calledOnNull);
    if (aggregate && impl instanceof AggregateFunction) {
      return Registration.aggregate(name, (AggregateFunction<?>) impl, types, returns, options);
    }
    if (!aggregate && impl instanceof VectorFunction) {
      return Registration.scalar(name, (VectorFunction) impl, types, returns, options);
    }
    if (!aggregate && impl instanceof RowFunction) {
      return Registration.row(name, (RowFunction) impl, types, returns, options);
    }
    throw LaminarException.of(
        LaminarException.BAD_CONFIG_VALUE,
        "java_functions: class "
            + className
            + " of function '"
            + name
            + "' does not implement "
            + (aggregate
                ? "org.laminardb.AggregateFunction"
                : "org.laminardb.VectorFunction or org.laminardb.RowFunction"));
  }

  private Object instantiate() {
    ClassLoader loader = Thread.currentThread().getContextClassLoader();
    if (loader == null) {
      loader = FunctionSpec.class.getClassLoader();
    }
    try {
      return Class.forName(className, true, loader).getConstructor().newInstance();
    } catch (ReflectiveOperationException | LinkageError e) {
      throw LaminarException.of(
          LaminarException.BAD_CONFIG_VALUE,
          "java_functions: cannot make function '"
              + name
              + "' of class "
              + className
              + " (on the session's class path, with a public no-argument constructor?): "
              + e);
    }
  }
}

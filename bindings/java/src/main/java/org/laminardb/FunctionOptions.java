package org.laminardb;

/**
 * How the engine calls a user-defined function: {@code
 * FunctionOptions.defaults().deterministic(true)}. The flags of {@code
 * laminar_function_register} (docs/C-API.md). A plain value object.
 */
public final class FunctionOptions {
  static final int DETERMINISTIC = 1; // LAMINAR_FUNCTION_DETERMINISTIC
  static final int CALLED_ON_NULL = 2; // LAMINAR_FUNCTION_CALLED_ON_NULL

  private boolean deterministic;
  private boolean calledOnNull;

  private FunctionOptions() {}

  /** Not deterministic, NULL in gives NULL out. */
  public static FunctionOptions defaults() {
    return new FunctionOptions();
  }

  /**
   * Declare that the same arguments always give the same result and the function has
   * no effect: a call whose arguments are all constant is made once per chunk over one
   * row. Scalar functions only (an aggregate ignores it).
   */
  public FunctionOptions deterministic(boolean value) {
    deterministic = value;
    return this;
  }

  /**
   * Pass rows whose arguments are NULL to the function, which decides their result
   * (SQL's "called on null input"). Without it (the default) such rows are NULL and
   * not passed: the argument vectors hold no NULLs.
   */
  public FunctionOptions calledOnNull(boolean value) {
    calledOnNull = value;
    return this;
  }

  /** The C flag bits. */
  int flags() {
    return (deterministic ? DETERMINISTIC : 0) | (calledOnNull ? CALLED_ON_NULL : 0);
  }
}

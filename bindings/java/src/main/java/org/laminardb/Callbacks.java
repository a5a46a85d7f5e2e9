package org.laminardb;

import java.nio.charset.StandardCharsets;

/**
 * What the engine's calls into user-defined functions share: the mark of a thread that
 * is inside one (the database refuses to be used from there, LDB-9002, rather than
 * deadlock: the engine is in the middle of a batch on that thread, holding its locks),
 * and the text an exception becomes.
 */
final class Callbacks {
  private static final ThreadLocal<int[]> DEPTH = ThreadLocal.withInitial(() -> new int[1]);

  private Callbacks() {}

  /** Mark the current thread as running a function's callback; pair with {@link #exit}. */
  static void enter() {
    DEPTH.get()[0]++;
  }

  static void exit() {
    DEPTH.get()[0]--;
  }

  /** Throw LDB-9002 when the current thread is inside a function's callback. */
  static void refuseInside() {
    if (DEPTH.get()[0] > 0) {
      throw LaminarException.misuse(
          "a user-defined function called the database from inside its callback"
              + " (functions must not use the database)");
    }
  }

  /**
   * The message the engine reports for {@code t} (UTF-8, for the core's 400-byte error
   * buffer): its class and message, then where it was thrown.
   */
  static byte[] describe(Throwable t) {
    StringBuilder text = new StringBuilder(t.getClass().getName());
    if (t.getMessage() != null) {
      text.append(": ").append(t.getMessage());
    }
    StackTraceElement[] frames = t.getStackTrace();
    for (int i = 0; i < frames.length && i < 2; i++) {
      text.append(i == 0 ? " at " : " < ").append(frames[i]);
    }
    return text.toString().getBytes(StandardCharsets.UTF_8);
  }

  /** The body of a callback: null on success, else the error's text. */
  interface Body {
    byte[] run() throws Exception;
  }

  /**
   * Run {@code body} marked as a callback ({@link #enter}), then {@code cleanup}:
   * whatever it throws becomes the text the engine reports ({@link #describe}).
   */
  static byte[] guarded(Body body, Runnable cleanup) {
    enter();
    try {
      return body.run();
    } catch (Throwable t) {
      return describe(t);
    } finally {
      cleanup.run();
      exit();
    }
  }
}

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

  /**
   * The first byte of a callback's error text that makes it LDB-3011 (the function's
   * result does not fit its declared type) rather than LDB-3010 (laminar_jni.c,
   * callback_result).
   */
  static final byte RESULT_TAG = 1;

  /**
   * A function's result value that does not fit its declared SQL type (a {@code
   * BigDecimal} with more digits than the DECIMAL's precision, or more fractional digits
   * than its scale): the call fails with LDB-3011, never rounds.
   */
  static final class InvalidResult extends RuntimeException {
    private static final long serialVersionUID = 1L;

    InvalidResult(String message) {
      super(message);
    }
  }

  /** The text of an {@link InvalidResult}: tagged so the engine reports LDB-3011. */
  static byte[] invalidResult(InvalidResult e) {
    byte[] text = e.getMessage().getBytes(StandardCharsets.UTF_8);
    byte[] tagged = new byte[text.length + 1];
    tagged[0] = RESULT_TAG;
    System.arraycopy(text, 0, tagged, 1, text.length);
    return tagged;
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
    } catch (InvalidResult e) {
      return invalidResult(e);
    } catch (Throwable t) {
      return describe(t);
    } finally {
      cleanup.run();
      exit();
    }
  }
}

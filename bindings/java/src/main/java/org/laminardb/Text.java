package org.laminardb;

import java.nio.charset.StandardCharsets;

/** Text for the C API: UTF-8 bytes, no NUL (C would cut the text there). */
final class Text {
  private Text() {}

  /** Return {@code value} if it is usable as C text, else throw LDB-9002. */
  static String check(String value, String what) {
    if (value == null) {
      throw LaminarException.misuse(what + " is null");
    }
    if (value.indexOf('\0') >= 0) {
      throw LaminarException.misuse(what + " contains a NUL character");
    }
    return value;
  }

  /** The UTF-8 bytes of {@code value} for a {@code const char*} argument. */
  static byte[] utf8(String value, String what) {
    return check(value, what).getBytes(StandardCharsets.UTF_8);
  }
}

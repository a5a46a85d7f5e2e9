package org.laminardb;

import java.io.File;

/**
 * The JNI entry points of liblaminar_jni.so, one per laminar.h call (see
 * src/main/c/laminar_jni.c). Handles are C pointers as longs; text is UTF-8 bytes;
 * Arrow structs are the addresses of Arrow Java's C Data structs. A failed call throws
 * {@link LaminarException}. Callers (the handle classes) guarantee a handle is open and
 * used by one thread at a time.
 *
 * <p>The library is found, in order: the system property {@code laminardb.library.path}
 * (the library file, or a directory holding liblaminar_jni.so), then
 * {@code java.library.path} ({@code System.loadLibrary("laminar_jni")}).
 * liblaminar_jni.so finds liblaminar.so.0 through its RUNPATH (its own directory,
 * and the build tree when run from there) or the system's library path.
 */
final class Native {
  static {
    String path = System.getProperty("laminardb.library.path");
    try {
      if (path != null && !path.isEmpty()) {
        File file = new File(path);
        if (file.isDirectory()) {
          file = new File(file, System.mapLibraryName("laminar_jni"));
        }
        System.load(file.getAbsolutePath());
      } else {
        System.loadLibrary("laminar_jni");
      }
    } catch (UnsatisfiedLinkError e) {
      UnsatisfiedLinkError hint =
          new UnsatisfiedLinkError(
              "LaminarDB's JNI library could not be loaded ("
                  + e.getMessage()
                  + "): set -Dlaminardb.library.path to liblaminar_jni.so or its directory, "
                  + "or put that directory on java.library.path (docs/JAVA.md)");
      hint.initCause(e);
      throw hint;
    }
  }

  private Native() {}

  static native byte[] version();

  static native long open(byte[][] keys, byte[][] values);

  static native void close(long db);

  static native void execute(long db, byte[] sql);

  static native void query(long db, byte[] sql, long streamAddress);

  static native void schema(long db, byte[] name, long schemaAddress);

  static native void start(long db);

  static native void stop(long db);

  static native void runUntilIdle(long db);

  static native long sourceOpen(long db, byte[] name);

  static native void sourcePush(long source, long arrayAddress, long schemaAddress);

  static native void sourceWatermark(long source, long watermarkMs);

  static native void sourceClose(long source);

  static native long subscribe(long db, byte[] name);

  /** 1: a batch is in the array; 0: none came in time; -1: the subscription ended. */
  static native int subscriptionNext(long sub, long timeoutMs, long arrayAddress);

  static native void subscriptionClose(long sub);
}

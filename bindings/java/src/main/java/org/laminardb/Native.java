package org.laminardb;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The JNI entry points of liblaminar_jni.so, one per laminar.h call (see
 * src/main/c/laminar_jni.c). Handles are C pointers as longs; text is UTF-8 bytes;
 * Arrow structs are the addresses of Arrow Java's C Data structs. A failed call throws
 * {@link LaminarException}. Callers (the handle classes) guarantee a handle is open and
 * used by one thread at a time.
 *
 * <p>The library is found, in order: the system property {@code laminardb.library.path}
 * (the library file, or a directory holding liblaminar_jni.so); {@code
 * java.library.path} ({@code System.loadLibrary("laminar_jni")}); the copy bundled in
 * the jar (built with {@code -Dlaminardb.native.bundle=DIR}, see pom.xml), extracted
 * with liblaminar.so.0 to a temporary directory that is deleted at exit.
 * liblaminar_jni.so finds liblaminar.so.0 through its RUNPATH (its own directory,
 * and the build tree when run from there) or the system's library path; the bundled
 * pair is loaded core first, so its soname is already present.
 */
final class Native {
  /** Where the jar holds the bundled libraries (pom.xml, laminardb.native.bundle). */
  static final String BUNDLE = "/org/laminardb/native/linux-x86_64/";

  static {
    load();
  }

  /** Load liblaminar_jni.so as the class comment says; throws UnsatisfiedLinkError. */
  private static void load() {
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
      if ((path == null || path.isEmpty()) && loadBundled()) {
        return;
      }
      UnsatisfiedLinkError hint =
          new UnsatisfiedLinkError(
              "LaminarDB's JNI library could not be loaded ("
                  + e.getMessage()
                  + "): set -Dlaminardb.library.path to liblaminar_jni.so or its directory, "
                  + "put that directory on java.library.path, or use a jar that bundles it "
                  + "(docs/JAVA.md)");
      hint.initCause(e);
      throw hint;
    }
  }

  private Native() {}

  /**
   * Load liblaminar.so.0 and liblaminar_jni.so from the jar, if it bundles them.
   *
   * @return false if the jar has no bundled libraries
   * @throws UnsatisfiedLinkError if they are there but cannot be extracted or loaded
   */
  private static boolean loadBundled() {
    if (Native.class.getResource(BUNDLE + "liblaminar_jni.so") == null) {
      return false;
    }
    try {
      Path dir = Files.createTempDirectory("laminardb-native");
      dir.toFile().deleteOnExit();
      for (String name : new String[] {"liblaminar.so.0", "liblaminar_jni.so"}) {
        Path file = dir.resolve(name);
        try (InputStream in = Native.class.getResourceAsStream(BUNDLE + name)) {
          if (in == null) {
            throw new IOException(BUNDLE + name + " is missing from the jar");
          }
          Files.copy(in, file);
        }
        file.toFile().deleteOnExit();
        System.load(file.toAbsolutePath().toString());
      }
      return true;
    } catch (IOException e) {
      UnsatisfiedLinkError error =
          new UnsatisfiedLinkError("cannot extract LaminarDB's bundled native library: " + e);
      error.initCause(e);
      throw error;
    }
  }

  static native byte[] version();

  static native long open(byte[][] keys, byte[][] values);

  static native void close(long db);

  static native void execute(long db, byte[] sql);

  static native void query(long db, byte[] sql, long streamAddress);

  static native void schema(long db, byte[] name, long schemaAddress);

  static native void metrics(long db, long streamAddress);

  static native void pipelineState(long db, long streamAddress);

  static native void start(long db);

  static native void stop(long db);

  static native void runUntilIdle(long db);

  /** laminar_checkpoint: a durable database's checkpoint, now. */
  static native void checkpoint(long db);

  static native long sourceOpen(long db, byte[] name);

  static native long sourceClone(long source);

  /** laminar_source_push: no time limit (the Spark stage; Source pushes in slices). */
  static native void sourcePush(long source, long arrayAddress, long schemaAddress);

  /** laminar_source_watermark: no time limit (the Spark stage, which never starts the runtime). */
  static native void sourceWatermark(long source, long watermarkMs);

  /** laminar_source_set_idle: declare the source idle (true) or active (false). */
  static native void sourceSetIdle(long source, boolean idle);

  /** laminar_source_watermark_timeout: false when no room came within timeoutMs. */
  static native boolean sourceWatermarkTimeout(long source, long watermarkMs, long timeoutMs);

  /** laminar_source_push_timeout: false when no room came within timeoutMs (array untouched). */
  static native boolean sourcePushTimeout(
      long source, long arrayAddress, long schemaAddress, long timeoutMs);

  /** laminar_source_try_push: false when the queue is full (array untouched). */
  static native boolean sourceTryPush(long source, long arrayAddress, long schemaAddress);

  /**
   * laminar_source_push_batch_timeout of the struct arrays at {@code arrayAddresses}: the
   * ones the core did not take are back at their addresses (release not NULL) after the
   * call. Returns how many it took: fewer than all when no room came within timeoutMs.
   */
  static native long sourcePushBatchTimeout(
      long source, long[] arrayAddresses, long schemaAddress, long timeoutMs);

  /** laminar_source_has_capacity. */
  static native boolean sourceHasCapacity(long source, long n);

  static native void sourceClose(long source);

  static native long subscribe(long db, byte[] name);

  /** 1: a batch is in the array; 0: none came in time; -1: the subscription ended. */
  static native int subscriptionNext(long sub, long timeoutMs, long arrayAddress);

  static native void subscriptionClose(long sub);

  /** laminar_config_create: a config handle (destroy it with configDestroy). */
  static native long configCreate();

  /** laminar_config_set. */
  static native void configSet(long config, byte[] key, byte[] value);

  /** laminar_config_destroy. */
  static native void configDestroy(long config);

  /** laminar_open with {@code config} (still the caller's to destroy). */
  static native long openConfig(long config);

  /**
   * laminar_function_register (or laminar_aggregate_register when {@code aggregate})
   * on database {@code db}, or the config versions on {@code config} when db is 0. The
   * core holds {@code call} (a ScalarCall or an AggregateCall) until its destroy.
   */
  static native void functionRegister(
      long db,
      long config,
      byte[] name,
      byte[][] argTypes,
      byte[] returnType,
      int flags,
      boolean aggregate,
      boolean retract,
      Object call);

  /** laminar_function_drop. */
  static native void functionDrop(long db, byte[] name);

  /**
   * laminar_table_upsert, or laminar_table_delete when {@code remove}: the struct array
   * at arrayAddress is moved into the core on success, untouched on failure.
   */
  static native void tableWrite(
      long db, byte[] table, long arrayAddress, long schemaAddress, boolean remove);
}

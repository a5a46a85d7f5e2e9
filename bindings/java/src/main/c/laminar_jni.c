/*
 * laminar_jni.c -- the JNI library (liblaminar_jni.so) behind org.laminardb.Native:
 * one thin native method per laminar.h call the Java binding makes (issue 8).
 *
 * Conventions, kept by every function here:
 * - Handles cross as jlong (the C pointer); the Java side guarantees a handle is
 *   open, not used by two threads at once, and never used after its close, so
 *   nothing here dereferences a stale pointer. Arrow structs cross as the jlong
 *   address of an ArrowArray / ArrowSchema / ArrowArrayStream allocated by Arrow
 *   Java's C Data module (org.apache.arrow.c).
 * - Text crosses as UTF-8 byte[] in both directions (not JNI's "modified UTF-8",
 *   which mangles characters outside the BMP and NUL): Java encodes and decodes.
 * - A failed core call throws org.laminardb.LaminarException (built by its static
 *   fromNative factory from the laminar_error) and returns 0; the JVM is never
 *   aborted. JNI failures (out of memory) leave their own pending exception.
 * - No loop creates more than one live local reference per iteration (each is
 *   deleted before the next), so long option lists never exhaust the local frame.
 * Thread-safety: as the laminar.h call each function wraps.
 */
#include <jni.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "laminar.h"

/* ------------------------------------------------------------------------------------
 * Cached classes and methods (set in JNI_OnLoad, global references)
 * ---------------------------------------------------------------------------------- */

static jclass exception_class;    // org.laminardb.LaminarException
static jmethodID exception_make;  // static LaminarException fromNative(I[BII[B[B)
static JavaVM* java_vm;           // the JVM, for callbacks on the core's threads

JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM* vm, void* reserved) {
  (void)reserved;
  JNIEnv* env = NULL;
  if ((*vm)->GetEnv(vm, (void**)&env, JNI_VERSION_1_8) != JNI_OK) return JNI_ERR;
  jclass local = (*env)->FindClass(env, "org/laminardb/LaminarException");
  if (local == NULL) return JNI_ERR;
  exception_class = (jclass)(*env)->NewGlobalRef(env, local);
  (*env)->DeleteLocalRef(env, local);
  if (exception_class == NULL) return JNI_ERR;
  exception_make = (*env)->GetStaticMethodID(
      env, exception_class, "fromNative", "(I[BII[B[B)Lorg/laminardb/LaminarException;");
  if (exception_make == NULL) return JNI_ERR;
  java_vm = vm;
  return JNI_VERSION_1_8;
}

JNIEXPORT void JNICALL JNI_OnUnload(JavaVM* vm, void* reserved) {
  (void)reserved;
  JNIEnv* env = NULL;
  if ((*vm)->GetEnv(vm, (void**)&env, JNI_VERSION_1_8) != JNI_OK) return;
  if (exception_class != NULL) (*env)->DeleteGlobalRef(env, exception_class);
  exception_class = NULL;
}

/* ------------------------------------------------------------------------------------
 * Helpers
 * ---------------------------------------------------------------------------------- */

/* A new byte[] holding the C string `text` (its UTF-8 bytes, no NUL); NULL with an
 * OutOfMemoryError pending on failure. */
static jbyteArray bytes_of(JNIEnv* env, const char* text) {
  jsize n = (jsize)strlen(text);
  jbyteArray out = (*env)->NewByteArray(env, n);
  if (out != NULL) (*env)->SetByteArrayRegion(env, out, 0, n, (const jbyte*)text);
  return out;
}

/* Throw the LaminarException for `code`, with the detail of `err` when it holds
 * any (the core fills it on failure; a few calls take none). */
static void throw_code(JNIEnv* env, laminar_code code, const laminar_error* err) {
  char fallback[160];
  const char* message = err != NULL ? err->message : "";
  if (message[0] == '\0') {
    snprintf(fallback, sizeof fallback, "LDB-%04d: %s", (int)code, laminar_errstr(code));
    message = fallback;
  }
  jbyteArray msg = bytes_of(env, message);
  jbyteArray object = msg ? bytes_of(env, err != NULL ? err->object : "") : NULL;
  jbyteArray column = object ? bytes_of(env, err != NULL ? err->column_name : "") : NULL;
  if (column != NULL) {
    jobject ex = (*env)->CallStaticObjectMethod(
        env, exception_class, exception_make, (jint)code, msg,
        (jint)(err != NULL ? err->line : 0), (jint)(err != NULL ? err->column : 0),
        object, column);
    if (ex != NULL && !(*env)->ExceptionCheck(env)) (*env)->Throw(env, (jthrowable)ex);
    if (ex != NULL) (*env)->DeleteLocalRef(env, ex);
  }
  if (column != NULL) (*env)->DeleteLocalRef(env, column);
  if (object != NULL) (*env)->DeleteLocalRef(env, object);
  if (msg != NULL) (*env)->DeleteLocalRef(env, msg);
}

/* Throw for a failed call; returns 1 if `code` was a failure (exception pending). */
static int failed(JNIEnv* env, laminar_code code, const laminar_error* err) {
  if (code == LAMINAR_OK) return 0;
  throw_code(env, code, err);
  return 1;
}

/* A NUL-terminated malloc'ed copy of the UTF-8 bytes `text` (free it), or NULL with
 * an exception pending (LDB-9002 for a null array, OutOfMemoryError). */
static char* text_of(JNIEnv* env, jbyteArray text) {
  if (text == NULL) {
    laminar_error err = {.code = LAMINAR_ERR_MISUSE};
    snprintf(err.message, sizeof err.message, "LDB-9002: text argument is null");
    throw_code(env, LAMINAR_ERR_MISUSE, &err);
    return NULL;
  }
  jsize n = (*env)->GetArrayLength(env, text);
  char* out = malloc((size_t)n + 1);
  if (out == NULL) {
    throw_code(env, LAMINAR_ERR_NOMEM, NULL);
    return NULL;
  }
  (*env)->GetByteArrayRegion(env, text, 0, n, (jbyte*)out);
  out[n] = '\0';
  return out;
}

#define DB(h) ((laminar_db*)(intptr_t)(h))
#define SRC(h) ((laminar_source*)(intptr_t)(h))
#define SUB(h) ((laminar_subscription*)(intptr_t)(h))
#define PTR(type, address) ((type*)(intptr_t)(address))

/* ------------------------------------------------------------------------------------
 * Library and database
 * ---------------------------------------------------------------------------------- */

JNIEXPORT jbyteArray JNICALL Java_org_laminardb_Native_version(JNIEnv* env, jclass cls) {
  (void)cls;
  return bytes_of(env, laminar_version());
}

/* Set one option of `config` from keys[i] / values[i]; 0 on failure (pending). */
static int set_option(JNIEnv* env, laminar_config* config, jobjectArray keys,
                      jobjectArray values, jsize i) {
  jbyteArray key_bytes = (jbyteArray)(*env)->GetObjectArrayElement(env, keys, i);
  jbyteArray value_bytes = (jbyteArray)(*env)->GetObjectArrayElement(env, values, i);
  char* key = (*env)->ExceptionCheck(env) ? NULL : text_of(env, key_bytes);
  char* value = key != NULL ? text_of(env, value_bytes) : NULL;
  int ok = 0;
  if (value != NULL) {
    laminar_error err;
    ok = !failed(env, laminar_config_set(config, key, value, &err), &err);
  }
  free(value);
  free(key);
  if (value_bytes != NULL) (*env)->DeleteLocalRef(env, value_bytes);
  if (key_bytes != NULL) (*env)->DeleteLocalRef(env, key_bytes);
  return ok;
}

/* Open a database with the options keys[i] = values[i] (UTF-8 byte arrays of equal
 * count). Returns the laminar_db*, or 0 with LaminarException pending. */
JNIEXPORT jlong JNICALL Java_org_laminardb_Native_open(JNIEnv* env, jclass cls,
                                                       jobjectArray keys,
                                                       jobjectArray values) {
  (void)cls;
  laminar_config* config = NULL;
  laminar_code code = laminar_config_create(&config);
  if (failed(env, code, NULL)) return 0;
  jsize n = keys != NULL ? (*env)->GetArrayLength(env, keys) : 0;
  for (jsize i = 0; i < n; i++) {
    if (!set_option(env, config, keys, values, i)) {
      laminar_config_destroy(config);
      return 0;
    }
  }
  laminar_db* db = NULL;
  laminar_error err;
  code = laminar_open(config, &db, &err);
  laminar_config_destroy(config);
  if (failed(env, code, &err)) return 0;
  return (jlong)(intptr_t)db;
}

JNIEXPORT void JNICALL Java_org_laminardb_Native_close(JNIEnv* env, jclass cls,
                                                       jlong db) {
  (void)cls;
  laminar_code code = laminar_close(DB(db));
  failed(env, code, NULL);
}

JNIEXPORT void JNICALL Java_org_laminardb_Native_execute(JNIEnv* env, jclass cls,
                                                         jlong db, jbyteArray sql_bytes) {
  (void)cls;
  char* sql = text_of(env, sql_bytes);
  if (sql == NULL) return;
  laminar_error err;
  laminar_code code = laminar_execute(DB(db), sql, &err);
  free(sql);
  failed(env, code, &err);
}

/* laminar_query into the ArrowArrayStream at `stream`. */
JNIEXPORT void JNICALL Java_org_laminardb_Native_query(JNIEnv* env, jclass cls, jlong db,
                                                       jbyteArray sql_bytes,
                                                       jlong stream) {
  (void)cls;
  char* sql = text_of(env, sql_bytes);
  if (sql == NULL) return;
  laminar_error err;
  laminar_code code =
      laminar_query(DB(db), sql, PTR(struct ArrowArrayStream, stream), &err);
  free(sql);
  failed(env, code, &err);
}

/* laminar_metrics into the ArrowArrayStream at `stream`. */
JNIEXPORT void JNICALL Java_org_laminardb_Native_metrics(JNIEnv* env, jclass cls,
                                                         jlong db, jlong stream) {
  (void)cls;
  laminar_error err;
  failed(env, laminar_metrics(DB(db), PTR(struct ArrowArrayStream, stream), &err), &err);
}

/* laminar_schema of `name` into the ArrowSchema at `schema`. */
JNIEXPORT void JNICALL Java_org_laminardb_Native_schema(JNIEnv* env, jclass cls, jlong db,
                                                        jbyteArray name_bytes,
                                                        jlong schema) {
  (void)cls;
  char* name = text_of(env, name_bytes);
  if (name == NULL) return;
  laminar_error err;
  laminar_code code = laminar_schema(DB(db), name, PTR(struct ArrowSchema, schema), &err);
  free(name);
  failed(env, code, &err);
}

JNIEXPORT void JNICALL Java_org_laminardb_Native_start(JNIEnv* env, jclass cls,
                                                       jlong db) {
  (void)cls;
  laminar_error err;
  failed(env, laminar_start(DB(db), &err), &err);
}

JNIEXPORT void JNICALL Java_org_laminardb_Native_stop(JNIEnv* env, jclass cls, jlong db) {
  (void)cls;
  laminar_error err;
  failed(env, laminar_stop(DB(db), &err), &err);
}

JNIEXPORT void JNICALL Java_org_laminardb_Native_runUntilIdle(JNIEnv* env, jclass cls,
                                                              jlong db) {
  (void)cls;
  laminar_error err;
  failed(env, laminar_run_until_idle(DB(db), &err), &err);
}

/* laminar_pipeline_state into the ArrowArrayStream at `stream`. */
JNIEXPORT void JNICALL Java_org_laminardb_Native_pipelineState(JNIEnv* env, jclass cls,
                                                               jlong db, jlong stream) {
  (void)cls;
  laminar_error err;
  failed(env, laminar_pipeline_state(DB(db), PTR(struct ArrowArrayStream, stream), &err),
         &err);
}

JNIEXPORT void JNICALL Java_org_laminardb_Native_checkpoint(JNIEnv* env, jclass cls,
                                                            jlong db) {
  (void)cls;
  laminar_error err;
  failed(env, laminar_checkpoint(DB(db), &err), &err);
}

/* ------------------------------------------------------------------------------------
 * Sources
 * ---------------------------------------------------------------------------------- */

JNIEXPORT jlong JNICALL Java_org_laminardb_Native_sourceOpen(JNIEnv* env, jclass cls,
                                                             jlong db,
                                                             jbyteArray name_bytes) {
  (void)cls;
  char* name = text_of(env, name_bytes);
  if (name == NULL) return 0;
  laminar_source* source = NULL;
  laminar_error err;
  laminar_code code = laminar_source_open(DB(db), name, &source, &err);
  free(name);
  if (failed(env, code, &err)) return 0;
  return (jlong)(intptr_t)source;
}

/* A second producer handle on the same source (the source turns multi-producer). */
JNIEXPORT jlong JNICALL Java_org_laminardb_Native_sourceClone(JNIEnv* env, jclass cls,
                                                              jlong source) {
  (void)cls;
  laminar_source* clone = NULL;
  laminar_error err;
  if (failed(env, laminar_source_clone(SRC(source), &clone, &err), &err)) return 0;
  return (jlong)(intptr_t)clone;
}

/* Push the struct array at `array` described by the schema at `schema`. On success
 * the array has been moved into the core (its release is NULL); on failure it is
 * untouched and still the caller's to release. */
JNIEXPORT void JNICALL Java_org_laminardb_Native_sourcePush(JNIEnv* env, jclass cls,
                                                            jlong source, jlong array,
                                                            jlong schema) {
  (void)cls;
  laminar_error err;
  laminar_code code = laminar_source_push(SRC(source), PTR(struct ArrowArray, array),
                                          PTR(const struct ArrowSchema, schema), &err);
  failed(env, code, &err);
}

/* laminar_source_watermark: waits without limit for room in a full block queue
 * while the runtime runs (the Spark stage drives the graph inline: never then). */
JNIEXPORT void JNICALL Java_org_laminardb_Native_sourceWatermark(JNIEnv* env, jclass cls,
                                                                 jlong source,
                                                                 jlong watermark_ms) {
  (void)cls;
  laminar_error err;
  failed(env, laminar_source_watermark(SRC(source), (int64_t)watermark_ms, &err), &err);
}

/* laminar_source_set_idle: queued after the pushes before it, waiting for room in a
 * full block queue as laminar_source_watermark does. */
JNIEXPORT void JNICALL Java_org_laminardb_Native_sourceSetIdle(JNIEnv* env, jclass cls,
                                                               jlong source,
                                                               jboolean idle) {
  (void)cls;
  laminar_error err;
  failed(env, laminar_source_set_idle(SRC(source), idle ? 1 : 0, &err), &err);
}

/* Push as sourcePush, waiting at most timeout_ms for room in a full queue
 * (laminar_source_push_timeout). Returns JNI_TRUE when the core took the array,
 * JNI_FALSE when no room came in time (LAMINAR_ERR_PUSH_TIMEOUT: the array is
 * untouched, still the caller's, nothing ingested); throws on any other failure. */
JNIEXPORT jboolean JNICALL Java_org_laminardb_Native_sourcePushTimeout(
    JNIEnv* env, jclass cls, jlong source, jlong array, jlong schema, jlong timeout_ms) {
  (void)cls;
  laminar_error err;
  laminar_code code = laminar_source_push_timeout(
      SRC(source), PTR(struct ArrowArray, array), PTR(const struct ArrowSchema, schema),
      (int64_t)timeout_ms, &err);
  if (code == LAMINAR_ERR_PUSH_TIMEOUT) return JNI_FALSE;
  return failed(env, code, &err) ? JNI_FALSE : JNI_TRUE;
}

/* Push without waiting (laminar_source_try_push). Returns JNI_TRUE when the core
 * took the array, JNI_FALSE when the queue was full (LAMINAR_ERR_QUEUE_FULL: the
 * array is untouched, nothing ingested); throws on any other failure. */
JNIEXPORT jboolean JNICALL Java_org_laminardb_Native_sourceTryPush(
    JNIEnv* env, jclass cls, jlong source, jlong array, jlong schema) {
  (void)cls;
  laminar_error err;
  laminar_code code =
      laminar_source_try_push(SRC(source), PTR(struct ArrowArray, array),
                              PTR(const struct ArrowSchema, schema), &err);
  if (code == LAMINAR_ERR_QUEUE_FULL) return JNI_FALSE;
  return failed(env, code, &err) ? JNI_FALSE : JNI_TRUE;
}

/* laminar_source_push_batch_timeout of the struct arrays at addresses[0..n), all
 * described by the schema at `schema`, waiting at most timeout_ms for room. The
 * core takes one contiguous C array: the structs are moved into one for the call,
 * and those it did not take are moved back to their addresses (still the caller's
 * to release). Returns how many were ingested: all on success, fewer when the wait
 * timed out (the first ones may be in: a run longer than the queue); throws on any
 * other failure (the count is then in the arrays' release: NULL for the ingested
 * ones). */
JNIEXPORT jlong JNICALL Java_org_laminardb_Native_sourcePushBatchTimeout(
    JNIEnv* env, jclass cls, jlong source, jlongArray addresses, jlong schema,
    jlong timeout_ms) {
  (void)cls;
  jsize n = addresses != NULL ? (*env)->GetArrayLength(env, addresses) : 0;
  if (n == 0) return 0;
  jlong* address = (*env)->GetLongArrayElements(env, addresses, NULL);
  if (address == NULL) return 0; /* OutOfMemoryError pending */
  struct ArrowArray* run = malloc((size_t)n * sizeof *run);
  if (run == NULL) {
    (*env)->ReleaseLongArrayElements(env, addresses, address, JNI_ABORT);
    throw_code(env, LAMINAR_ERR_NOMEM, NULL);
    return 0;
  }
  for (jsize i = 0; i < n; i++) {
    struct ArrowArray* from = PTR(struct ArrowArray, address[i]);
    run[i] = *from;
    from->release = NULL; /* moved into `run` */
  }
  int64_t pushed = 0;
  laminar_error err;
  laminar_code code = laminar_source_push_batch_timeout(
      SRC(source), run, (int64_t)n, PTR(const struct ArrowSchema, schema),
      (int64_t)timeout_ms, &pushed, &err);
  for (jsize i = 0; i < n; i++) { /* what the core did not take goes back */
    if (run[i].release != NULL) *PTR(struct ArrowArray, address[i]) = run[i];
  }
  free(run);
  (*env)->ReleaseLongArrayElements(env, addresses, address, JNI_ABORT);
  if (code != LAMINAR_ERR_PUSH_TIMEOUT) failed(env, code, &err);
  return (jlong)pushed;
}

/* laminar_source_has_capacity: whether the queue has room for n messages now. */
JNIEXPORT jboolean JNICALL Java_org_laminardb_Native_sourceHasCapacity(JNIEnv* env,
                                                                       jclass cls,
                                                                       jlong source,
                                                                       jlong n) {
  (void)cls;
  int32_t room = 0;
  laminar_error err;
  if (failed(env, laminar_source_has_capacity(SRC(source), (int64_t)n, &room, &err),
             &err)) {
    return JNI_FALSE;
  }
  return room ? JNI_TRUE : JNI_FALSE;
}

/* Advance the watermark, waiting at most timeout_ms for room in a full queue
 * (laminar_source_watermark_timeout). JNI_FALSE when no room came in time (not
 * queued); throws on any other failure. */
JNIEXPORT jboolean JNICALL Java_org_laminardb_Native_sourceWatermarkTimeout(
    JNIEnv* env, jclass cls, jlong source, jlong watermark_ms, jlong timeout_ms) {
  (void)cls;
  laminar_error err;
  laminar_code code = laminar_source_watermark_timeout(SRC(source), (int64_t)watermark_ms,
                                                       (int64_t)timeout_ms, &err);
  if (code == LAMINAR_ERR_PUSH_TIMEOUT) return JNI_FALSE;
  return failed(env, code, &err) ? JNI_FALSE : JNI_TRUE;
}

JNIEXPORT void JNICALL Java_org_laminardb_Native_sourceClose(JNIEnv* env, jclass cls,
                                                             jlong source) {
  (void)env;
  (void)cls;
  laminar_source_close(SRC(source));
}

/* ------------------------------------------------------------------------------------
 * Subscriptions
 * ---------------------------------------------------------------------------------- */

JNIEXPORT jlong JNICALL Java_org_laminardb_Native_subscribe(JNIEnv* env, jclass cls,
                                                            jlong db,
                                                            jbyteArray name_bytes) {
  (void)cls;
  char* name = text_of(env, name_bytes);
  if (name == NULL) return 0;
  laminar_subscription* sub = NULL;
  laminar_error err;
  laminar_code code = laminar_subscribe(DB(db), name, &sub, &err);
  free(name);
  if (failed(env, code, &err)) return 0;
  return (jlong)(intptr_t)sub;
}

/* Take the next batch into the ArrowArray at `array` (its schema is not filled: the
 * Java side holds the stream's schema), waiting up to timeout_ms.
 * Returns 1 with a batch (the array is the caller's), 0 when none came in time, -1
 * once the subscription has ended (LDB-4001: stream dropped, database closed). */
JNIEXPORT jint JNICALL Java_org_laminardb_Native_subscriptionNext(JNIEnv* env, jclass cls,
                                                                  jlong sub,
                                                                  jlong timeout_ms,
                                                                  jlong array) {
  (void)cls;
  struct ArrowArray* out = PTR(struct ArrowArray, array);
  laminar_error err;
  laminar_code code =
      laminar_subscription_next(SUB(sub), (int64_t)timeout_ms, out, NULL, &err);
  if (code == LAMINAR_ERR_SUBSCRIPTION_CLOSED) return -1;
  if (failed(env, code, &err)) return 0;
  return out->release != NULL ? 1 : 0;
}

JNIEXPORT void JNICALL Java_org_laminardb_Native_subscriptionClose(JNIEnv* env,
                                                                   jclass cls,
                                                                   jlong sub) {
  (void)env;
  (void)cls;
  laminar_subscription_close(SUB(sub));
}

/* ------------------------------------------------------------------------------------
 * Configs: a database opened with user-defined functions registered first (a durable
 * one recovers its streams, which may call them, inside laminar_open)
 * ---------------------------------------------------------------------------------- */

#define CFG(h) ((laminar_config*)(intptr_t)(h))

JNIEXPORT jlong JNICALL Java_org_laminardb_Native_configCreate(JNIEnv* env, jclass cls) {
  (void)cls;
  laminar_config* config = NULL;
  if (failed(env, laminar_config_create(&config), NULL)) return 0;
  return (jlong)(intptr_t)config;
}

JNIEXPORT void JNICALL Java_org_laminardb_Native_configSet(JNIEnv* env, jclass cls,
                                                           jlong config,
                                                           jbyteArray key_bytes,
                                                           jbyteArray value_bytes) {
  (void)cls;
  char* key = text_of(env, key_bytes);
  char* value = key != NULL ? text_of(env, value_bytes) : NULL;
  if (value != NULL) {
    laminar_error err;
    failed(env, laminar_config_set(CFG(config), key, value, &err), &err);
  }
  free(value);
  free(key);
}

JNIEXPORT void JNICALL Java_org_laminardb_Native_configDestroy(JNIEnv* env, jclass cls,
                                                               jlong config) {
  (void)env;
  (void)cls;
  laminar_config_destroy(CFG(config));
}

/* laminar_open with `config` (still the caller's to destroy). */
JNIEXPORT jlong JNICALL Java_org_laminardb_Native_openConfig(JNIEnv* env, jclass cls,
                                                             jlong config) {
  (void)cls;
  laminar_db* db = NULL;
  laminar_error err;
  if (failed(env, laminar_open(CFG(config), &db, &err), &err)) return 0;
  return (jlong)(intptr_t)db;
}

/* ------------------------------------------------------------------------------------
 * User-defined functions: the core calls C trampolines that call the Java objects
 * org.laminardb.ScalarCall / AggregateCall (one per registration, held by a global
 * reference until the core's destroy callback).
 *
 * Threads: a callback runs on whichever thread evaluates the stream: a Java thread
 * in runUntilIdle / query / open (attached already), or a reactor thread of the
 * core, which is attached to the JVM as a daemon at its first call and detached when
 * it exits (a pthread key's destructor: laminar_stop / laminar_close join their
 * reactors, so a database's reactors are detached by then).
 * Local references: each call runs in its own local frame (PushLocalFrame /
 * PopLocalFrame), so a reactor thread, which never returns to Java, holds none
 * between calls.
 * Errors: the Java side catches everything the user's code throws and returns the
 * message as UTF-8 bytes (null on success); an exception still pending after the
 * call (an Error thrown while reporting) is cleared and fails the call. Either way
 * the core reports LDB-3010 naming the function and the stream.
 * ---------------------------------------------------------------------------------- */

static pthread_once_t detach_once = PTHREAD_ONCE_INIT;
static pthread_key_t detach_key;

static void detach_thread(void* vm) { (*(JavaVM*)vm)->DetachCurrentThread((JavaVM*)vm); }

static int detach_key_ok;

static void make_detach_key(void) {
  detach_key_ok = pthread_key_create(&detach_key, detach_thread) == 0;
}

/* The JNIEnv of the calling thread, attaching it (as a daemon, detached at its exit)
 * when the JVM does not know it; NULL if that fails. */
static JNIEnv* callback_env(void) {
  JNIEnv* env = NULL;
  jint rc = (*java_vm)->GetEnv(java_vm, (void**)&env, JNI_VERSION_1_8);
  if (rc == JNI_OK) return env;
  if (rc != JNI_EDETACHED) return NULL;
  JavaVMAttachArgs args = {.version = JNI_VERSION_1_8, .name = "laminardb-reactor"};
  if ((*java_vm)->AttachCurrentThreadAsDaemon(java_vm, (void**)&env, &args) != JNI_OK) {
    return NULL;
  }
  pthread_once(&detach_once, make_detach_key);
  if (detach_key_ok) pthread_setspecific(detach_key, java_vm);
  return env;
}

/* One registered Java function or aggregate: the `user` of its C callbacks. The
 * methods are looked up on the call object's class at registration (not at load:
 * the Spark engine's jar loads this library without those classes). */
typedef struct java_fn {
  jobject call;          /* global reference: its ScalarCall or AggregateCall */
  jmethodID apply;       /* byte[] ScalarCall.call(JJJJ) / AggregateCall.update(JJJJZ) */
  jmethodID merge;       /* byte[] AggregateCall.merge(JJ) */
  jmethodID finish;      /* byte[] AggregateCall.finish(JJJJ) */
  jmethodID serialize;   /* byte[] AggregateCall.serialize(J) */
  jmethodID deserialize; /* boolean AggregateCall.deserialize(J[B) */
  jmethodID destroy_state; /* void AggregateCall.destroyState(J) */
  jmethodID destroy;       /* void destroy() */
} java_fn;

/* A java_fn for `call` (malloc'ed; its global reference taken), or NULL with an
 * exception pending. */
static java_fn* java_fn_new(JNIEnv* env, jobject call, jboolean aggregate) {
  java_fn* f = calloc(1, sizeof *f);
  if (f == NULL) {
    throw_code(env, LAMINAR_ERR_NOMEM, NULL);
    return NULL;
  }
  jclass cls = (*env)->GetObjectClass(env, call);
  if (!aggregate) {
    f->apply = (*env)->GetMethodID(env, cls, "call", "(JJJJ)[B");
  } else if ((f->apply = (*env)->GetMethodID(env, cls, "update", "(JJJJZ)[B")) != NULL &&
             (f->merge = (*env)->GetMethodID(env, cls, "merge", "(JJ)[B")) != NULL &&
             (f->finish = (*env)->GetMethodID(env, cls, "finish", "(JJJJ)[B")) != NULL &&
             (f->serialize = (*env)->GetMethodID(env, cls, "serialize", "(J)[B")) !=
                 NULL &&
             (f->deserialize = (*env)->GetMethodID(env, cls, "deserialize", "(J[B)Z")) !=
                 NULL) {
    f->destroy_state = (*env)->GetMethodID(env, cls, "destroyState", "(J)V");
  }
  if (f->apply != NULL && (!aggregate || f->destroy_state != NULL)) {
    f->destroy = (*env)->GetMethodID(env, cls, "destroy", "()V");
  }
  (*env)->DeleteLocalRef(env, cls);
  if (f->destroy != NULL) f->call = (*env)->NewGlobalRef(env, call);
  if (f->call == NULL) { /* NoSuchMethodError or OutOfMemoryError pending */
    free(f);
    return NULL;
  }
  return f;
}

static void java_fn_free(JNIEnv* env, java_fn* f) {
  (*env)->DeleteGlobalRef(env, f->call);
  free(f);
}

/* Write `text` (at most cap - 1 bytes, NUL-terminated) into the core's error buffer. */
static void write_error(char* error, size_t cap, const char* text, size_t n) {
  if (cap == 0) return;
  if (n > cap - 1) n = cap - 1;
  memcpy(error, text, n);
  error[n] = '\0';
}

/* The outcome of a Java callback that returned `message` (null: success): 0, or 1
 * with the message (or the pending exception's note) in error. A message whose
 * first byte is 1 (Callbacks.RESULT_TAG: the function's result does not fit its
 * declared type) is LAMINAR_ERR_FUNCTION_RESULT with the rest as its text. */
static int callback_result(JNIEnv* env, jbyteArray message, char* error, size_t cap) {
  if ((*env)->ExceptionCheck(env)) {
    (*env)->ExceptionClear(env);
    const char* text = "a Java error escaped the callback (out of memory or stack?)";
    write_error(error, cap, text, strlen(text));
    return 1;
  }
  if (message == NULL) return 0;
  jsize n = (*env)->GetArrayLength(env, message);
  jbyte* bytes = (*env)->GetByteArrayElements(env, message, NULL);
  if (bytes == NULL) {
    (*env)->ExceptionClear(env);
    write_error(error, cap, "out of memory", 13);
    return 1;
  }
  int rc = 1;
  jsize at = 0;
  if (n > 0 && bytes[0] == 1) {
    rc = LAMINAR_ERR_FUNCTION_RESULT;
    at = 1;
  }
  write_error(error, cap, (const char*)bytes + at, (size_t)(n - at));
  (*env)->ReleaseByteArrayElements(env, message, bytes, JNI_ABORT);
  return rc;
}

/* A thread the JVM cannot take, or a local frame it cannot give: the call fails. */
static int no_env(JNIEnv* env, char* error, size_t cap) {
  if (env != NULL) (*env)->ExceptionClear(env);
  const char* text = "cannot call Java on this thread (JVM attach or local frame failed)";
  write_error(error, cap, text, strlen(text));
  return 1;
}

#define ADDR(p) ((jlong)(intptr_t)(p))

/* Call byte[]-returning `method` of f's Java object with the arguments that
 * follow, in a local frame of its own: 0 on success, 1 with the message in error. */
static int call_java(char* error, size_t cap, const java_fn* f, jmethodID method, ...) {
  JNIEnv* env = callback_env();
  if (env == NULL || (*env)->PushLocalFrame(env, 8) != 0) return no_env(env, error, cap);
  va_list args;
  va_start(args, method);
  jbyteArray message = (jbyteArray)(*env)->CallObjectMethodV(env, f->call, method, args);
  va_end(args);
  int rc = callback_result(env, message, error, cap);
  (*env)->PopLocalFrame(env, NULL);
  return rc;
}

/* laminar_function_callback of every Java function: `user` is its java_fn. */
static int java_scalar(void* user, const struct ArrowArray* args,
                       const struct ArrowSchema* args_schema, struct ArrowArray* out,
                       struct ArrowSchema* out_schema, char* error, size_t error_cap) {
  const java_fn* f = user;
  return call_java(error, error_cap, f, f->apply, ADDR(args), ADDR(args_schema),
                   ADDR(out), ADDR(out_schema));
}

/* destroy of every Java function or aggregate: its destroy(), then it goes. */
static void java_destroy(void* user) {
  java_fn* f = user;
  JNIEnv* env = callback_env();
  if (env == NULL) return; /* cannot happen on a live JVM; the object leaks */
  (*env)->CallVoidMethod(env, f->call, f->destroy);
  (*env)->ExceptionClear(env);
  java_fn_free(env, f);
}

static int java_agg_update(void* user, void* states, const uint32_t* groups,
                           const struct ArrowArray* args,
                           const struct ArrowSchema* args_schema, char* error,
                           size_t error_cap) {
  const java_fn* f = user;
  return call_java(error, error_cap, f, f->apply, ADDR(states), ADDR(groups), ADDR(args),
                   ADDR(args_schema), JNI_FALSE);
}

static int java_agg_retract(void* user, void* states, const uint32_t* groups,
                            const struct ArrowArray* args,
                            const struct ArrowSchema* args_schema, char* error,
                            size_t error_cap) {
  const java_fn* f = user;
  return call_java(error, error_cap, f, f->apply, ADDR(states), ADDR(groups), ADDR(args),
                   ADDR(args_schema), JNI_TRUE);
}

static int java_agg_merge(void* user, void* state, const void* other, char* error,
                          size_t error_cap) {
  const java_fn* f = user;
  return call_java(error, error_cap, f, f->merge, ADDR(state), ADDR(other));
}

static int java_agg_finalize(void* user, const void* states, int64_t n,
                             struct ArrowArray* out, struct ArrowSchema* out_schema,
                             char* error, size_t error_cap) {
  const java_fn* f = user;
  return call_java(error, error_cap, f, f->finish, ADDR(states), (jlong)n, ADDR(out),
                   ADDR(out_schema));
}

/* The state's bytes from AggregateCall.serialize (null: it failed, -1). A state
 * larger than `cap` is serialized again when the core calls back with room. */
static int64_t java_agg_serialize(void* user, const void* state, void* buf, int64_t cap) {
  JNIEnv* env = callback_env();
  if (env == NULL || (*env)->PushLocalFrame(env, 8) != 0) {
    if (env != NULL) (*env)->ExceptionClear(env);
    return -1;
  }
  const java_fn* f = user;
  jbyteArray data =
      (jbyteArray)(*env)->CallObjectMethod(env, f->call, f->serialize, ADDR(state));
  int64_t n = -1;
  if ((*env)->ExceptionCheck(env)) {
    (*env)->ExceptionClear(env);
  } else if (data != NULL) {
    n = (int64_t)(*env)->GetArrayLength(env, data);
    if (n <= cap && n > 0)
      (*env)->GetByteArrayRegion(env, data, 0, (jsize)n, (jbyte*)buf);
  }
  (*env)->PopLocalFrame(env, NULL);
  return n;
}

static int java_agg_deserialize(void* user, void* state, const void* buf, int64_t len) {
  JNIEnv* env = callback_env();
  if (env == NULL || (*env)->PushLocalFrame(env, 8) != 0 || len > INT32_MAX) {
    if (env != NULL) (*env)->ExceptionClear(env);
    return 1;
  }
  int rc = 1;
  jbyteArray data = (*env)->NewByteArray(env, (jsize)len);
  if (data != NULL) {
    (*env)->SetByteArrayRegion(env, data, 0, (jsize)len, (const jbyte*)buf);
    const java_fn* f = user;
    jboolean ok =
        (*env)->CallBooleanMethod(env, f->call, f->deserialize, ADDR(state), data);
    rc = (*env)->ExceptionCheck(env) || !ok;
  }
  (*env)->ExceptionClear(env);
  (*env)->PopLocalFrame(env, NULL);
  return rc;
}

static void java_agg_destroy_state(void* user, void* state) {
  JNIEnv* env = callback_env();
  if (env == NULL) return;
  const java_fn* f = user;
  (*env)->CallVoidMethod(env, f->call, f->destroy_state, ADDR(state));
  (*env)->ExceptionClear(env);
}

/* The Arrow format strings of a registration (argTypes, UTF-8), malloc'ed into
 * formats[0..n) (free with free_formats); 0 with an exception pending on failure. */
static int formats_of(JNIEnv* env, jobjectArray types, char** formats, jsize n) {
  for (jsize i = 0; i < n; i++) formats[i] = NULL;
  for (jsize i = 0; i < n; i++) {
    jbyteArray t = (jbyteArray)(*env)->GetObjectArrayElement(env, types, i);
    formats[i] = (*env)->ExceptionCheck(env) ? NULL : text_of(env, t);
    if (t != NULL) (*env)->DeleteLocalRef(env, t);
    if (formats[i] == NULL) return 0;
  }
  return 1;
}

static void free_formats(char** formats, jsize n) {
  for (jsize i = 0; i < n; i++) free(formats[i]);
}

/* Register `call` (a ScalarCall, or an AggregateCall when `aggregate`) as function
 * `name` on the database `db`, or on the config `config` when db is 0. The core
 * holds a global reference to `call` until it calls destroy. Throws on failure. */
JNIEXPORT void JNICALL Java_org_laminardb_Native_functionRegister(
    JNIEnv* env, jclass cls, jlong db, jlong config, jbyteArray name_bytes,
    jobjectArray arg_types, jbyteArray return_bytes, jint flags, jboolean aggregate,
    jboolean retract, jobject call) {
  (void)cls;
  char* formats[64];
  jsize nargs = arg_types != NULL ? (*env)->GetArrayLength(env, arg_types) : 0;
  if (nargs > 64) {
    laminar_error err = {.code = LAMINAR_ERR_MISUSE};
    snprintf(err.message, sizeof err.message, "LDB-9002: more than 64 parameters");
    throw_code(env, LAMINAR_ERR_MISUSE, &err);
    return;
  }
  char* name = text_of(env, name_bytes);
  char* result = name != NULL ? text_of(env, return_bytes) : NULL;
  int ok = result != NULL && formats_of(env, arg_types, formats, nargs);
  java_fn* ref = ok ? java_fn_new(env, call, aggregate) : NULL;
  if (ref != NULL) {
    laminar_error err;
    laminar_code code;
    const char* const* types = (const char* const*)formats;
    if (!aggregate) {
      code = db != 0 ? laminar_function_register(DB(db), name, types, (int32_t)nargs,
                                                 result, java_scalar, ref, java_destroy,
                                                 (uint32_t)flags, &err)
                     : laminar_config_function_register(
                           CFG(config), name, types, (int32_t)nargs, result, java_scalar,
                           ref, java_destroy, (uint32_t)flags, &err);
    } else {
      laminar_aggregate_update undo = retract ? java_agg_retract : NULL;
      code = db != 0
                 ? laminar_aggregate_register(
                       DB(db), name, types, (int32_t)nargs, result, 8, NULL,
                       java_agg_update, undo, java_agg_merge, java_agg_finalize,
                       java_agg_serialize, java_agg_deserialize, java_agg_destroy_state,
                       ref, java_destroy, (uint32_t)flags, &err)
                 : laminar_config_aggregate_register(
                       CFG(config), name, types, (int32_t)nargs, result, 8, NULL,
                       java_agg_update, undo, java_agg_merge, java_agg_finalize,
                       java_agg_serialize, java_agg_deserialize, java_agg_destroy_state,
                       ref, java_destroy, (uint32_t)flags, &err);
    }
    if (failed(env, code, &err)) java_fn_free(env, ref); /* not the core's */
  }
  if (result != NULL) free_formats(formats, nargs);
  free(result);
  free(name);
}

JNIEXPORT void JNICALL Java_org_laminardb_Native_functionDrop(JNIEnv* env, jclass cls,
                                                              jlong db,
                                                              jbyteArray name_bytes) {
  (void)cls;
  char* name = text_of(env, name_bytes);
  if (name == NULL) return;
  laminar_error err;
  laminar_code code = laminar_function_drop(DB(db), name, &err);
  free(name);
  failed(env, code, &err);
}

/* ------------------------------------------------------------------------------------
 * Tables
 * ---------------------------------------------------------------------------------- */

/* laminar_table_upsert (remove 0) or laminar_table_delete (remove 1) of the struct
 * array at `array` described by `schema`: moved into the core on success, untouched
 * on failure. */
JNIEXPORT void JNICALL Java_org_laminardb_Native_tableWrite(JNIEnv* env, jclass cls,
                                                            jlong db,
                                                            jbyteArray name_bytes,
                                                            jlong array, jlong schema,
                                                            jboolean remove) {
  (void)cls;
  char* name = text_of(env, name_bytes);
  if (name == NULL) return;
  laminar_error err;
  laminar_code code =
      remove ? laminar_table_delete(DB(db), name, PTR(struct ArrowArray, array),
                                    PTR(const struct ArrowSchema, schema), &err)
             : laminar_table_upsert(DB(db), name, PTR(struct ArrowArray, array),
                                    PTR(const struct ArrowSchema, schema), &err);
  free(name);
  failed(env, code, &err);
}

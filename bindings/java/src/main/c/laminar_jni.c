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

/* laminar_source_push_batch of the struct arrays at addresses[0..n), all described
 * by the schema at `schema`. The core takes one contiguous C array: the structs are
 * moved into one for the call, and those it did not take are moved back to their
 * addresses (still the caller's to release). Returns how many were ingested (all,
 * on success); throws on failure (the count is then in the arrays' release: NULL
 * for the ingested ones). */
JNIEXPORT jlong JNICALL Java_org_laminardb_Native_sourcePushBatch(JNIEnv* env, jclass cls,
                                                                  jlong source,
                                                                  jlongArray addresses,
                                                                  jlong schema) {
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
  laminar_code code = laminar_source_push_batch(
      SRC(source), run, (int64_t)n, PTR(const struct ArrowSchema, schema), &pushed, &err);
  for (jsize i = 0; i < n; i++) { /* what the core did not take goes back */
    if (run[i].release != NULL) *PTR(struct ArrowArray, address[i]) = run[i];
  }
  free(run);
  (*env)->ReleaseLongArrayElements(env, addresses, address, JNI_ABORT);
  failed(env, code, &err);
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

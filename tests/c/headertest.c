/*
 * headertest.c -- laminar.h is self-contained and warning-free on its own, as
 * C17 here and as C++17 through headertest.cpp (which includes this file), both
 * with -Wall -Wextra -pedantic -Werror (STYLE §1.2). It includes nothing but
 * laminar.h, touches every public type, pins the layouts and values a binding
 * relies on, and calls into liblaminar.so, so a missing extern "C" (mangled
 * names) fails the C++ link.
 */
#include "laminar.h"

#ifdef __cplusplus
#define HT_STATIC_ASSERT(c, m) static_assert(c, m)
#else
#define HT_STATIC_ASSERT(c, m) _Static_assert(c, m)
#endif

/* The Arrow C Data Interface layouts (LP64 sizes from the specification). */
HT_STATIC_ASSERT(sizeof(void*) != 8 || sizeof(struct ArrowSchema) == 72, "ArrowSchema");
HT_STATIC_ASSERT(sizeof(void*) != 8 || sizeof(struct ArrowArray) == 80, "ArrowArray");
HT_STATIC_ASSERT(sizeof(void*) != 8 || sizeof(struct ArrowArrayStream) == 40,
                 "ArrowArrayStream");
HT_STATIC_ASSERT(ARROW_FLAG_NULLABLE == 2, "Arrow flags");

/* Codes are their LDB numbers; the version number is derived from its parts. */
HT_STATIC_ASSERT(LAMINAR_OK == 0, "LAMINAR_OK");
HT_STATIC_ASSERT(LAMINAR_ERR_SQL_SYNTAX == 1001, "LDB-1001");
HT_STATIC_ASSERT(LAMINAR_ERR_INTERNAL == 9999, "LDB-9999");
HT_STATIC_ASSERT(LAMINAR_VERSION_NUMBER == LAMINAR_VERSION_MAJOR * 1000000 +
                                               LAMINAR_VERSION_MINOR * 1000 +
                                               LAMINAR_VERSION_PATCH,
                 "version number");
HT_STATIC_ASSERT(sizeof(((laminar_error*)0)->message) == 1024, "laminar_error.message");

/* Option scopes are bits (laminar_option_get's out_scopes is their OR). */
HT_STATIC_ASSERT(LAMINAR_SCOPE_DB == 1 && LAMINAR_SCOPE_SOURCE == 2 &&
                     LAMINAR_SCOPE_STREAM == 4 && LAMINAR_SCOPE_SUBSCRIPTION == 8 &&
                     LAMINAR_SCOPE_SINK == 16,
                 "option scopes");

/* The opaque handles are usable as pointers by a C or C++ caller. */
typedef struct {
  laminar_config* config;
  laminar_db* db;
  laminar_source* source;
  laminar_subscription* subscription;
  laminar_error error;
} ht_handles;

static int ht_streq(const char* a, const char* b) {
  while (*a != '\0' && *a == *b) {
    a++;
    b++;
  }
  return *a == *b;
}

int main(void) {
  ht_handles h;
  h.config = 0;
  h.db = 0;
  h.source = 0;
  h.subscription = 0;
  h.error.code = LAMINAR_OK;
  h.error.message[0] = '\0';
  const char* name = laminar_errstr(LAMINAR_ERR_SQL_SYNTAX);
  if (name == 0 || name[0] == '\0') return 1;
  if (!ht_streq(laminar_version(), LAMINAR_VERSION)) return 1;
  if (laminar_version_number() != LAMINAR_VERSION_NUMBER) return 1;
  /* NULL handles are no-ops for the close functions. */
  laminar_source_close(h.source);
  laminar_subscription_close(h.subscription);
  laminar_config_destroy(h.config);
  if (laminar_close(h.db) != LAMINAR_OK) return 1;
  if (laminar_close_v2(h.db, &h.error) != LAMINAR_OK) return 1;
  /* The option table is readable without a database. */
  const char* key = 0;
  if (laminar_option_count() < 1) return 1;
  if (laminar_option_get(0, &key, 0, 0, 0, 0) != LAMINAR_OK || key == 0) return 1;
  return h.db == 0 && h.error.code == LAMINAR_OK ? 0 : 1;
}

/*
 * lm_test.h -- the tiny harness every C test uses (STYLE §3.1).
 *
 * A test file defines `static int test_<case>(void)` functions, lists them in a
 * table and calls lm_test_main():
 *
 *   static const lm_test_case cases[] = {{"push", test_push}, {NULL, NULL}};
 *   int main(int argc, char** argv) { return lm_test_main(argc, argv, cases); }
 *
 * CHECK(x)  fatal: prints file:line and the expression, returns 1 from the case.
 * EXPECT(x) expecting: prints and records the failure, the case goes on.
 * A case returns 0 (pass), 1 (fail) or LM_TEST_SKIP (77, with a reason printed).
 * An argument runs only the named case; `--shard K/N` runs the cases whose index is K
 * modulo N (ctest runs the shards of a file marked SHARDS N side by side). Exit: 0 all passed, 1 any failed, 77 all
 * skipped. Random tests use lm_test_seed() (LAMINAR_TEST_SEED or time) and print it.
 */
#ifndef LM_TEST_H
#define LM_TEST_H

#include "laminar.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LM_TEST_SKIP 77

typedef struct lm_test_case {
  const char* name;
  int (*fn)(void);
} lm_test_case;

static int lm_test_expect_failed_;

#define CHECK(x)                                                            \
  do {                                                                      \
    if (!(x)) {                                                             \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #x); \
      return 1;                                                             \
    }                                                                       \
  } while (0)

#define EXPECT(x)                                                            \
  do {                                                                       \
    if (!(x)) {                                                              \
      fprintf(stderr, "%s:%d: EXPECT failed: %s\n", __FILE__, __LINE__, #x); \
      lm_test_expect_failed_ = 1;                                            \
    }                                                                        \
  } while (0)

/* The message of an error struct, or "" for NULL (a function, so passing
 * `&err` does not trip -Waddress). */
static inline const char* lm_test_errmsg(const void* err) {
  return err ? (const char*)err + offsetof(laminar_error, message) : "";
}

/* CHECK that a laminar call returned `want`; prints the error message if not. */
#define CHECK_CODE(call, want, errp)                                               \
  do {                                                                             \
    int lm_rc_ = (int)(call);                                                      \
    if (lm_rc_ != (int)(want)) {                                                   \
      fprintf(stderr, "%s:%d: %s returned %d, want %d (%s)\n", __FILE__, __LINE__, \
              #call, lm_rc_, (int)(want), lm_test_errmsg(errp));                   \
      return 1;                                                                    \
    }                                                                              \
  } while (0)

static inline uint64_t lm_test_seed(void) {
  static uint64_t seed;
  static int have;
  if (!have) {
    const char* s = getenv("LAMINAR_TEST_SEED");
    seed = s ? strtoull(s, NULL, 10) : (uint64_t)time(NULL);
    have = 1;
    fprintf(stderr, "seed=%llu (LAMINAR_TEST_SEED to replay)\n",
            (unsigned long long)seed);
  }
  return seed;
}

/* splitmix64: a small deterministic generator for tests. */
static inline uint64_t lm_test_rand(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

/* Skips the case, printing why (a case returns lm_test_skip("no broker")). */
static inline int lm_test_skip(const char* why) {
  printf("skip: %s\n", why);
  return LM_TEST_SKIP;
}

static inline int lm_test_main(int argc, char** argv, const lm_test_case* cases) {
  int failed = 0, ran = 0, skipped = 0;
  unsigned shard = 0, shards = 0;
  const char* only = argc > 1 ? argv[1] : NULL;
  if (argc > 2 && strcmp(argv[1], "--shard") == 0) {
    if (sscanf(argv[2], "%u/%u", &shard, &shards) != 2 || shards == 0 ||
        shard >= shards) {
      fprintf(stderr, "bad --shard %s (want K/N, K < N)\n", argv[2]);
      return 1;
    }
    only = NULL;
  }
  unsigned index = 0;
  for (const lm_test_case* c = cases; c->name != NULL; c++, index++) {
    if (shards != 0 && index % shards != shard) continue;
    if (only != NULL && shards == 0 && strcmp(only, c->name) != 0) continue;
    lm_test_expect_failed_ = 0;
    int rc = c->fn();
    ran++;
    if (rc == LM_TEST_SKIP) {
      skipped++;
      printf("SKIP %s\n", c->name);
    } else if (rc != 0 || lm_test_expect_failed_) {
      failed++;
      printf("FAIL %s\n", c->name);
    } else {
      printf("ok   %s\n", c->name);
    }
  }
  if (ran == 0) {
    fprintf(stderr, "no test named %s\n", only != NULL ? only : "(none)");
    return 1;
  }
  printf("%d passed, %d failed, %d skipped\n", ran - failed - skipped, failed, skipped);
  if (failed) return 1;
  return skipped == ran ? LM_TEST_SKIP : 0;
}

#endif /* LM_TEST_H */

/*
 * test_fuzz_replay.c -- the fuzz targets as a plain ctest (STYLE §3.3): every
 * file of tests/fuzz/corpora/{sql_parse,execute}/ is fed to both targets'
 * entry functions (lm_fuzz_sql_parse, lm_fuzz_execute, whose .c files are
 * #included here), then a short seeded random-mutation loop runs the seeds,
 * mutated, through both. Under gcc + ASan/UBSan this is what CI runs; long
 * libFuzzer runs are described in tests/fuzz/README.md.
 *
 * The corpora are found next to this source file (__FILE__ is absolute under
 * CMake), or under $LAMINAR_FUZZ_CORPORA when set. A missing corpus directory is
 * a failure, not a skip. LAMINAR_FUZZ_ITERATIONS overrides the 2000 mutations.
 */
/* lm_ctest: LABELS unit fuzz TIMEOUT 300 */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lm_test.h"

#include "../fuzz/execute_fuzzer.c"
#include "../fuzz/sql_parse_fuzzer.c"

/* Inputs larger than this are not produced by the mutator. */
#define MUTATE_MAX_SIZE ((size_t)64 * 1024)
/* Where the mutation loop writes each input before running it, so a crash
 * leaves its reproducer behind (in the test's working directory). */
#define LAST_INPUT_FILE "fuzz_replay_last_input.sql"

static const char* const TARGETS[] = {"sql_parse", "execute"};
#define N_TARGETS 2

typedef struct blob {
  uint8_t* data;
  size_t size;
  char* name;
} blob;

typedef struct blob_list {
  blob* items;
  size_t n;
  size_t cap;
} blob_list;

static void blob_list_free(blob_list* l) {
  for (size_t i = 0; i < l->n; i++) {
    free(l->items[i].data);
    free(l->items[i].name);
  }
  free(l->items);
  memset(l, 0, sizeof *l);
}

static double now_s(void) {
  struct timespec ts;
  timespec_get(&ts, TIME_UTC);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* <repo>/tests/fuzz/corpora/<target> into `out`; 0 on success. */
static int corpus_dir(const char* target, char* out, size_t cap) {
  const char* env = getenv("LAMINAR_FUZZ_CORPORA");
  int n;
  if (env != NULL && env[0] != '\0') {
    n = snprintf(out, cap, "%s/%s", env, target);
  } else {
    /* __FILE__ is <repo>/tests/c/test_fuzz_replay.c (or relative to <repo>). */
    const char* file = __FILE__;
    const char* tail = strstr(file, "tests/c/test_fuzz_replay.c");
    if (tail == NULL) return 1;
    n = snprintf(out, cap, "%.*stests/fuzz/corpora/%s", (int)(tail - file), file, target);
  }
  return n < 0 || (size_t)n >= cap;
}

static int cmp_name(const void* a, const void* b) {
  return strcmp(((const blob*)a)->name, ((const blob*)b)->name);
}

/* Read every regular file of `dir` (names not starting with '.') into `l`,
 * sorted by name within the directory. Returns 0, or 1 if the directory cannot be
 * read. */
static int load_dir(const char* dir, blob_list* l) {
  DIR* d = opendir(dir);
  if (d == NULL) {
    fprintf(stderr, "cannot open corpus directory %s\n", dir);
    return 1;
  }
  size_t first = l->n;
  int rc = 0;
  struct dirent* e;
  while (rc == 0 && (e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    size_t plen = strlen(dir) + strlen(e->d_name) + 2;
    char* path = malloc(plen);
    if (path == NULL) {
      rc = 1;
      break;
    }
    snprintf(path, plen, "%s/%s", dir, e->d_name);
    FILE* f = fopen(path, "rb");
    if (f == NULL) {
      free(path);
      continue; /* a subdirectory, or gone */
    }
    blob b = {NULL, 0, path};
    size_t cap = 0;
    for (;;) {
      if (b.size == cap) {
        cap = cap ? cap * 2 : 4096;
        uint8_t* grown = realloc(b.data, cap);
        if (grown == NULL) {
          rc = 1;
          break;
        }
        b.data = grown;
      }
      size_t got = fread(b.data + b.size, 1, cap - b.size, f);
      if (got == 0) break;
      b.size += got;
    }
    if (ferror(f)) rc = 1;
    fclose(f);
    if (rc == 0 && l->n == l->cap) {
      size_t ncap = l->cap ? l->cap * 2 : 64;
      blob* grown = realloc(l->items, ncap * sizeof *grown);
      if (grown == NULL) {
        rc = 1;
      } else {
        l->items = grown;
        l->cap = ncap;
      }
    }
    if (rc != 0) {
      free(b.data);
      free(path);
      break;
    }
    l->items[l->n++] = b;
  }
  closedir(d);
  qsort(l->items + first, l->n - first, sizeof(blob), cmp_name);
  return rc;
}

/* Load the corpora of every target into `l` (fatal on a missing directory). */
static int load_all(blob_list* l) {
  for (int t = 0; t < N_TARGETS; t++) {
    char dir[4096];
    CHECK(corpus_dir(TARGETS[t], dir, sizeof dir) == 0);
    size_t before = l->n;
    CHECK(load_dir(dir, l) == 0);
    printf("%s: %zu files\n", dir, l->n - before);
    CHECK(l->n > before); /* an empty corpus replays nothing */
  }
  return 0;
}

/* ---- replay ----------------------------------------------------------------------- */

static int replay(int (*fn)(const uint8_t*, size_t), const char* label) {
  blob_list l = {0};
  int rc = load_all(&l);
  if (rc != 0) {
    blob_list_free(&l);
    return rc;
  }
  double t0 = now_s();
  for (size_t i = 0; i < l.n; i++) {
    /* Name the input first: if it crashes, this is the last line printed. */
    fprintf(stderr, "%s <- %s\n", label, l.items[i].name);
    EXPECT(fn(l.items[i].data, l.items[i].size) == 0);
  }
  printf("%s: replayed %zu inputs in %.3f s\n", label, l.n, now_s() - t0);
  blob_list_free(&l);
  return 0;
}

static int test_replay_sql_parse(void) { return replay(lm_fuzz_sql_parse, "sql_parse"); }

static int test_replay_execute(void) { return replay(lm_fuzz_execute, "execute"); }

/* ---- mutation --------------------------------------------------------------------- */

/* Fragments the mutator inserts: SQL structure, names the setup defines, and
 * values at the edges of the types. */
static const char* const TOKENS[] = {
    "(",
    ")",
    ",",
    ";",
    "'",
    "\"",
    "*",
    ".",
    "-",
    "+",
    "/",
    "%",
    "||",
    "=",
    "<>",
    "<=",
    "/*",
    "*/",
    "--",
    "\n",
    " ",
    "''",
    "\"\"",
    "${",
    "?",
    " SELECT ",
    " FROM ",
    " WHERE ",
    " GROUP BY ",
    " HAVING ",
    " AS ",
    " DISTINCT ",
    " EMIT ON WINDOW CLOSE",
    " EMIT CHANGES",
    " EMIT FINAL",
    " ORDER BY ",
    " LIMIT 1",
    " CREATE STREAM s AS ",
    " CREATE STREAM s2 AS SELECT * FROM s",
    "CREATE SOURCE ",
    " CREATE SOURCE IF NOT EXISTS x (a BIGINT, WATERMARK FOR a)",
    " WITH (buffer_size = 2)",
    " DROP SOURCE trades",
    " DROP STREAM s",
    " DROP STREAM IF EXISTS ",
    " SHOW SOURCES",
    " SHOW STREAMS",
    " DESCRIBE trades",
    " OR REPLACE ",
    " IF NOT EXISTS ",
    " IF EXISTS ",
    " trades ",
    " symbol ",
    " price ",
    " volume ",
    " ts ",
    " window_start ",
    " window_end ",
    " tumble(ts, INTERVAL '1' SECOND)",
    " tumble(ts, INTERVAL '1' MILLISECOND)",
    " tumble(price, INTERVAL '0' SECOND)",
    " WATERMARK FOR ts AS ts - INTERVAL '1' DAY",
    " COUNT(*) ",
    " COUNT(",
    " SUM(",
    " AVG(",
    " MIN(",
    " MAX(",
    " COALESCE(",
    " CAST(",
    " BIGINT",
    " INT",
    " DOUBLE",
    " VARCHAR",
    " TIMESTAMP",
    " BOOLEAN",
    " NOT NULL",
    " CASE WHEN ",
    " CASE ",
    " WHEN ",
    " THEN ",
    " ELSE ",
    " END ",
    " NULL ",
    " TRUE ",
    " FALSE ",
    " NOT ",
    " AND ",
    " OR ",
    " IS NULL ",
    " IS NOT NULL ",
    " BETWEEN ",
    " IN (",
    " LIKE ",
    " INTERVAL '",
    "' SECOND",
    "9223372036854775807",
    "-9223372036854775808",
    "9223372036854775808",
    "2147483648",
    "1e308",
    "1e-400",
    "0.0",
    "0",
    "-1",
    " / 0",
    " % 0",
    " * 9223372036854775807",
    "\xff",
    "\xc3",
    "\xc3\xa9",
    "\xe2\x82\xac",
    "\t",
    "\r\n",
};
#define N_TOKENS (sizeof TOKENS / sizeof TOKENS[0])

typedef struct buf {
  uint8_t* data;
  size_t size;
  size_t cap;
} buf;

static int buf_reserve(buf* b, size_t extra) {
  if (b->size + extra <= b->cap) return 0;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < b->size + extra) cap *= 2;
  uint8_t* grown = realloc(b->data, cap);
  if (grown == NULL) return 1;
  b->data = grown;
  b->cap = cap;
  return 0;
}

/* Insert `n` bytes at `at` (<= size). */
static int buf_insert(buf* b, size_t at, const uint8_t* p, size_t n) {
  if (buf_reserve(b, n) != 0) return 1;
  memmove(b->data + at + n, b->data + at, b->size - at);
  memcpy(b->data + at, p, n);
  b->size += n;
  return 0;
}

static size_t pick(uint64_t* rng, size_t n) {
  return n ? (size_t)(lm_test_rand(rng) % n) : 0;
}

/* Apply one random edit to `b`, taking splice material from `seeds`. */
static int mutate_once(buf* b, const blob_list* seeds, uint64_t* rng) {
  switch (lm_test_rand(rng) % 7) {
    case 0: /* overwrite a byte */
      if (b->size > 0) b->data[pick(rng, b->size)] = (uint8_t)lm_test_rand(rng);
      return 0;
    case 1:
    case 2: { /* insert a token */
      const char* t = TOKENS[pick(rng, N_TOKENS)];
      return buf_insert(b, pick(rng, b->size + 1), (const uint8_t*)t, strlen(t));
    }
    case 3: { /* delete a range */
      if (b->size == 0) return 0;
      size_t at = pick(rng, b->size);
      size_t n = 1 + pick(rng, b->size - at < 24 ? b->size - at : 24);
      memmove(b->data + at, b->data + at + n, b->size - at - n);
      b->size -= n;
      return 0;
    }
    case 4: { /* duplicate a range in place */
      if (b->size == 0) return 0;
      size_t at = pick(rng, b->size);
      size_t n = 1 + pick(rng, b->size - at < 64 ? b->size - at : 64);
      uint8_t tmp[64];
      memcpy(tmp, b->data + at, n);
      return buf_insert(b, at, tmp, n);
    }
    case 5: { /* splice: keep a prefix, append another seed's suffix */
      const blob* o = &seeds->items[pick(rng, seeds->n)];
      size_t cut = pick(rng, b->size + 1);
      size_t from = pick(rng, o->size + 1);
      b->size = cut;
      return buf_insert(b, cut, o->data + from, o->size - from);
    }
    default: { /* append a whole other seed as a further statement */
      const blob* o = &seeds->items[pick(rng, seeds->n)];
      if (buf_insert(b, b->size, (const uint8_t*)";\n", 2) != 0) return 1;
      return buf_insert(b, b->size, o->data, o->size);
    }
  }
}

static int test_mutate(void) {
  blob_list seeds = {0};
  int rc = load_all(&seeds);
  if (rc != 0) {
    blob_list_free(&seeds);
    return rc;
  }
  long iterations = 2000;
  const char* env = getenv("LAMINAR_FUZZ_ITERATIONS");
  if (env != NULL) iterations = strtol(env, NULL, 10);
  uint64_t rng = lm_test_seed();
  buf b = {0};
  int oom = 0;
  size_t max_size = 0;
  double t0 = now_s();
  for (long i = 0; i < iterations && !oom; i++) {
    const blob* s = &seeds.items[pick(&rng, seeds.n)];
    b.size = 0;
    if (buf_reserve(&b, s->size + 1) != 0) {
      oom = 1;
      break;
    }
    if (s->size > 0) memcpy(b.data, s->data, s->size);
    b.size = s->size;
    int edits = 1 + (int)pick(&rng, 4);
    for (int k = 0; k < edits && !oom; k++) oom = mutate_once(&b, &seeds, &rng);
    if (b.size > MUTATE_MAX_SIZE) b.size = MUTATE_MAX_SIZE;
    if (b.size > max_size) max_size = b.size;
    /* Leave the input behind before running it: a crash keeps the reproducer. */
    FILE* f = fopen(LAST_INPUT_FILE, "wb");
    if (f != NULL) {
      if (b.size > 0) fwrite(b.data, 1, b.size, f);
      fclose(f);
    }
    EXPECT(lm_fuzz_sql_parse(b.data, b.size) == 0);
    EXPECT(lm_fuzz_execute(b.data, b.size) == 0);
  }
  printf("mutate: %ld inputs (largest %zu bytes) in %.3f s\n", iterations, max_size,
         now_s() - t0);
  remove(LAST_INPUT_FILE);
  free(b.data);
  blob_list_free(&seeds);
  CHECK(!oom);
  return 0;
}

static const lm_test_case cases[] = {
    {"replay_sql_parse", test_replay_sql_parse},
    {"replay_execute", test_replay_execute},
    {"mutate", test_mutate},
    {NULL, NULL},
};

int main(int argc, char** argv) { return lm_test_main(argc, argv, cases); }

/*
 * test_state_table.c -- white-box tests of the keyed state table
 * (src/state/table.h) through its header: lookups against a reference scan
 * with GROUP BY semantics (NULLs, -0.0, NaN, long and short strings), hashes
 * of rows and of stored keys agreeing, snapshot round trips and truncated
 * input, the partition filter of a restart on another core count, copies
 * for copy-on-write freezes (whole and by blocks), truncation and the bytes
 * the state bound counts. The row set of views and tables
 * (src/state/rowset.h) against a reference multiset: weights up and down,
 * removal at weight 0 (backward shift: every live entry still found, no
 * tombstones), keyed entries replaced and removed, compaction, the bytes
 * the bound counts, snapshot encoding and copy-on-write freezes. Random
 * cases print their seed.
 */
#include "state/table.h"

#include "state/rowset.h"

#include "util/util.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "lm_test.h"

#define NROWS 4000
#define NKEYS 3

/* A batch of three key columns: INT64, STRING, DOUBLE, each with NULLs. */
typedef struct batch {
  int64_t i[NROWS];
  lm_str s[NROWS];
  double d[NROWS];
  uint8_t ni[NROWS], ns[NROWS], nd[NROWS];
  char text[NROWS][24];
  lm_vec cols[NKEYS];
} batch;

static const lm_type TYPES[NKEYS] = {LM_TYPE_INT64, LM_TYPE_STRING, LM_TYPE_DOUBLE};

/* Few distinct values per column, so rows repeat keys often. */
static void batch_fill(batch* b, uint64_t* rng) {
  static const double doubles[] = {0.0, -0.0, 1.5, NAN, -NAN, 2.25};
  for (int64_t r = 0; r < NROWS; r++) {
    uint64_t z = lm_test_rand(rng);
    b->i[r] = (int64_t)(z % 7) - 3;
    b->ni[r] = (z >> 8) % 11 == 0;
    /* short strings (<= 8 bytes) and long ones (> 8: memcmp path) */
    int len =
        snprintf(b->text[r], sizeof b->text[r], (z >> 16) % 2 ? "k%u" : "a-long-key-%u",
                 (unsigned)((z >> 20) % 5));
    b->s[r] = (lm_str){b->text[r], len};
    b->ns[r] = (z >> 28) % 13 == 0;
    b->d[r] = doubles[(z >> 32) % 6];
    b->nd[r] = (z >> 40) % 17 == 0;
  }
  b->cols[0] = (lm_vec){LM_TYPE_INT64, NROWS, b->ni, b->i};
  b->cols[1] = (lm_vec){LM_TYPE_STRING, NROWS, b->ns, b->s};
  b->cols[2] = (lm_vec){LM_TYPE_DOUBLE, NROWS, b->nd, b->d};
}

/* Reference equality of rows x and y of the batch (GROUP BY semantics). */
static bool ref_equal(const batch* b, int64_t x, int64_t y) {
  if (b->ni[x] != b->ni[y] || b->ns[x] != b->ns[y] || b->nd[x] != b->nd[y]) return false;
  if (!b->ni[x] && b->i[x] != b->i[y]) return false;
  if (!b->ns[x] && (b->s[x].len != b->s[y].len ||
                    memcmp(b->s[x].ptr, b->s[y].ptr, (size_t)b->s[x].len) != 0)) {
    return false;
  }
  if (!b->nd[x]) {
    double p = b->d[x], q = b->d[y];
    if (!(p == q || (isnan(p) && isnan(q)))) return false;
  }
  return true;
}

/* Each row into t (find, else append with its keys); out[r]: its row id. */
static laminar_code add_rows(lm_state_table* t, const batch* b, const uint64_t* h,
                             int64_t* out) {
  for (int64_t r = 0; r < NROWS; r++) {
    int64_t g = lm_state_table_find(t, h[r], b->cols, r);
    if (g < 0) {
      LM_TRY(lm_state_table_grow_index(t));
      LM_TRY(lm_state_table_reserve(t, t->n + 1));
      g = lm_state_table_push(t, h[r]);
      LM_TRY(lm_state_table_set_keys(t, g, b->cols, r));
    }
    out[r] = g;
  }
  return LAMINAR_OK;
}

static batch B;
static uint64_t H[NROWS];
static int64_t IDS[NROWS];

static int test_find_matches_reference(void) {
  uint64_t rng = lm_test_seed();
  batch_fill(&B, &rng);
  lm_state_hash_rows(B.cols, NKEYS, NULL, NROWS, H);
  lm_state_table t;
  CHECK_CODE(lm_state_table_init(&t, TYPES, NKEYS), LAMINAR_OK, (laminar_error*)NULL);
  CHECK_CODE(add_rows(&t, &B, H, IDS), LAMINAR_OK, (laminar_error*)NULL);
  /* Two rows share a row id exactly when the reference says their keys are
   * equal; ids are dense, in first-seen order. */
  int64_t first[NROWS], next_id = 0;
  for (int64_t r = 0; r < NROWS; r++) {
    int64_t same = -1;
    for (int64_t q = 0; q < r && same < 0; q++) {
      if (ref_equal(&B, q, r)) same = q;
    }
    if (same < 0) {
      EXPECT(IDS[r] == next_id);
      first[next_id++] = r;
    } else {
      EXPECT(IDS[r] == IDS[same]);
      EXPECT(H[r] == H[same]); /* equal keys, equal hash (-0.0, NaN, NULL) */
    }
  }
  EXPECT(t.n == next_id);
  /* The stored keys hash as the rows did, and read back as the rows. */
  for (int64_t g = 0; g < t.n; g++) {
    int64_t r = first[g];
    EXPECT(lm_state_table_hash_row(&t, g) == H[r]);
    EXPECT(lm_state_table_row_equals(&t, g, B.cols, r));
    EXPECT(t.keys[0].nulls[g] == B.ni[r]);
    EXPECT(t.keys[1].nulls[g] == B.ns[r]);
  }
  /* Hashing a selection writes the selected rows' entries only, the same. */
  static uint64_t h2[NROWS];
  static uint32_t sel[NROWS];
  int64_t m = 0;
  for (int64_t r = 0; r < NROWS; r += 3) sel[m++] = (uint32_t)r;
  memset(h2, 0, sizeof h2);
  lm_state_hash_rows(B.cols, NKEYS, sel, m, h2);
  for (int64_t r = 0; r < NROWS; r++) EXPECT(h2[r] == (r % 3 == 0 ? H[r] : 0));
  /* lm_state_table_put_value hands back the stored value. */
  int64_t iv[1];
  uint8_t in[1];
  lm_vec ov = {LM_TYPE_INT64, 1, in, iv};
  for (int64_t g = 0; g < t.n; g++) {
    lm_state_table_put_value(&ov, &t.keys[0], g, 0);
    EXPECT(in[0] == B.ni[first[g]]);
    if (!in[0]) EXPECT(iv[0] == B.i[first[g]]);
  }
  lm_state_table_free(&t);
  return 0;
}

/* Every row of `t` is found in `u` under the same keys. */
static bool same_rows(const lm_state_table* t, const lm_state_table* u) {
  if (t->n != u->n) return false;
  for (int64_t g = 0; g < t->n; g++) {
    if (lm_state_table_find_row(u, t->hash[g], t, g) != g) return false;
    if (u->hash[g] != t->hash[g]) return false;
  }
  return true;
}

static int test_snapshot_round_trip(void) {
  uint64_t rng = lm_test_seed() + 1;
  batch_fill(&B, &rng);
  lm_state_hash_rows(B.cols, NKEYS, NULL, NROWS, H);
  lm_state_table t, u;
  CHECK_CODE(lm_state_table_init(&t, TYPES, NKEYS), LAMINAR_OK, (laminar_error*)NULL);
  CHECK_CODE(lm_state_table_init(&u, TYPES, NKEYS), LAMINAR_OK, (laminar_error*)NULL);
  CHECK_CODE(add_rows(&t, &B, H, IDS), LAMINAR_OK, (laminar_error*)NULL);
  lm_state_writer w;
  lm_state_writer_init(&w);
  for (int64_t g = 0; g < t.n; g++) lm_state_table_put_keys(&t, g, &w);
  CHECK_CODE(lm_state_writer_status(&w), LAMINAR_OK, (laminar_error*)NULL);
  lm_state_reader r;
  lm_state_reader_init(&r, w.data, w.len);
  CHECK_CODE(lm_state_table_reserve(&u, t.n), LAMINAR_OK, (laminar_error*)NULL);
  for (int64_t g = 0; g < t.n; g++) {
    CHECK_CODE(lm_state_table_get_keys(&u, g, &r), LAMINAR_OK, (laminar_error*)NULL);
  }
  u.n = t.n;
  CHECK_CODE(lm_state_table_reindex(&u), LAMINAR_OK, (laminar_error*)NULL);
  EXPECT(!r.failed && r.pos == r.len);
  EXPECT(same_rows(&t, &u));
  /* The restored table finds the batch's rows as the original did. */
  for (int64_t k = 0; k < NROWS; k++)
    EXPECT(lm_state_table_find(&u, H[k], B.cols, k) == IDS[k]);
  /* Cut short anywhere: the reader fails, nothing reads past the end. */
  for (size_t cut = 0; cut < w.len; cut += 1 + w.len / 97) {
    lm_state_table v;
    CHECK_CODE(lm_state_table_init(&v, TYPES, NKEYS), LAMINAR_OK, (laminar_error*)NULL);
    CHECK_CODE(lm_state_table_reserve(&v, t.n), LAMINAR_OK, (laminar_error*)NULL);
    lm_state_reader_init(&r, w.data, cut);
    for (int64_t g = 0; g < t.n && !r.failed; g++) {
      CHECK_CODE(lm_state_table_get_keys(&v, g, &r), LAMINAR_OK, (laminar_error*)NULL);
    }
    EXPECT(r.failed);
    lm_state_table_free(&v);
  }
  lm_state_writer_free(&w);
  lm_state_table_free(&t);
  lm_state_table_free(&u);
  return 0;
}

/* A checkpoint of one table restored as nparts partitions: each keeps the
 * rows lm_state_part_of gives it; together they hold every row once. */
static int test_partition_filter(void) {
  uint64_t rng = lm_test_seed() + 2;
  batch_fill(&B, &rng);
  lm_state_hash_rows(B.cols, NKEYS, NULL, NROWS, H);
  lm_state_table t;
  CHECK_CODE(lm_state_table_init(&t, TYPES, NKEYS), LAMINAR_OK, (laminar_error*)NULL);
  CHECK_CODE(add_rows(&t, &B, H, IDS), LAMINAR_OK, (laminar_error*)NULL);
  lm_state_writer w;
  lm_state_writer_init(&w);
  for (int64_t g = 0; g < t.n; g++) lm_state_table_put_keys(&t, g, &w);
  CHECK_CODE(lm_state_writer_status(&w), LAMINAR_OK, (laminar_error*)NULL);
  for (int32_t nparts = 1; nparts <= 4; nparts++) {
    int64_t total = 0;
    int32_t nonempty = 0;
    for (int32_t part = 0; part < nparts; part++) {
      lm_state_table p;
      CHECK_CODE(lm_state_table_init(&p, TYPES, NKEYS), LAMINAR_OK, (laminar_error*)NULL);
      CHECK_CODE(lm_state_table_reserve(&p, t.n), LAMINAR_OK, (laminar_error*)NULL);
      lm_state_reader r;
      lm_state_reader_init(&r, w.data, w.len);
      int64_t g = 0;
      for (int64_t j = 0; j < t.n; j++) {
        CHECK_CODE(lm_state_table_get_keys(&p, g, &r), LAMINAR_OK, (laminar_error*)NULL);
        if (lm_state_part_of(p.hash[g], nparts) == part) g++;
      }
      p.n = g;
      CHECK_CODE(lm_state_table_reindex(&p), LAMINAR_OK, (laminar_error*)NULL);
      EXPECT(!r.failed);
      for (int64_t k = 0; k < NROWS; k++) {
        bool mine = lm_state_part_of(H[k], nparts) == part;
        EXPECT((lm_state_table_find(&p, H[k], B.cols, k) >= 0) == mine);
      }
      total += p.n;
      nonempty += p.n > 0;
      lm_state_table_free(&p);
    }
    EXPECT(total == t.n);
    EXPECT(nonempty == nparts); /* (dozens of keys: every partition gets some) */
  }
  lm_state_writer_free(&w);
  lm_state_table_free(&t);
  return 0;
}

/* Copies for freezes: whole, or rows and index by blocks; the frozen
 * original is unchanged while the copy takes new rows. */
static int test_copies(void) {
  uint64_t rng = lm_test_seed() + 3;
  batch_fill(&B, &rng);
  lm_state_hash_rows(B.cols, NKEYS, NULL, NROWS, H);
  lm_state_table t, whole, blocks;
  CHECK_CODE(lm_state_table_init(&t, TYPES, NKEYS), LAMINAR_OK, (laminar_error*)NULL);
  CHECK_CODE(lm_state_table_init(&whole, TYPES, NKEYS), LAMINAR_OK, (laminar_error*)NULL);
  CHECK_CODE(lm_state_table_init(&blocks, TYPES, NKEYS), LAMINAR_OK,
             (laminar_error*)NULL);
  /* Half the batch into t, which is then frozen. */
  for (int64_t r = 0; r < NROWS / 2; r++) {
    if (lm_state_table_find(&t, H[r], B.cols, r) >= 0) continue;
    CHECK_CODE(lm_state_table_grow_index(&t), LAMINAR_OK, (laminar_error*)NULL);
    CHECK_CODE(lm_state_table_reserve(&t, t.n + 1), LAMINAR_OK, (laminar_error*)NULL);
    int64_t g = lm_state_table_push(&t, H[r]);
    CHECK_CODE(lm_state_table_set_keys(&t, g, B.cols, r), LAMINAR_OK,
               (laminar_error*)NULL);
  }
  int64_t frozen_n = t.n;
  CHECK_CODE(lm_state_table_copy(&whole, &t, true), LAMINAR_OK, (laminar_error*)NULL);
  CHECK_CODE(lm_state_table_reserve(&blocks, t.n), LAMINAR_OK, (laminar_error*)NULL);
  CHECK_CODE(lm_state_table_index_like(&blocks, &t), LAMINAR_OK, (laminar_error*)NULL);
  for (int64_t lo = 0; lo < t.n; lo += 5) {
    int64_t n = t.n - lo < 5 ? t.n - lo : 5;
    CHECK_CODE(lm_state_table_copy_rows(&blocks, &t, lo, n, true), LAMINAR_OK,
               (laminar_error*)NULL);
  }
  int64_t slots = (int64_t)t.mask + 1;
  for (int64_t lo = 0; lo < slots; lo += 7) {
    lm_state_table_copy_index(&blocks, &t, lo, slots - lo < 7 ? slots - lo : 7);
  }
  blocks.n = t.n;
  EXPECT(same_rows(&t, &whole));
  EXPECT(same_rows(&t, &blocks));
  /* The copies own their strings: the original's pool can go. */
  lm_state_table_free(&t);
  /* The copy takes the whole batch; the rows it had keep their ids. */
  static int64_t ids2[NROWS];
  CHECK_CODE(add_rows(&whole, &B, H, ids2), LAMINAR_OK, (laminar_error*)NULL);
  CHECK_CODE(lm_state_table_init(&t, TYPES, NKEYS), LAMINAR_OK, (laminar_error*)NULL);
  CHECK_CODE(add_rows(&t, &B, H, IDS), LAMINAR_OK, (laminar_error*)NULL);
  for (int64_t r = 0; r < NROWS; r++) EXPECT(ids2[r] == IDS[r]);
  EXPECT(blocks.n == frozen_n);
  for (int64_t r = 0; r < NROWS; r++) {
    EXPECT((lm_state_table_find(&blocks, H[r], B.cols, r) >= 0) == (IDS[r] < frozen_n));
  }
  lm_state_table_free(&t);
  lm_state_table_free(&whole);
  lm_state_table_free(&blocks);
  return 0;
}

/* Truncation (a failed batch's rows taken back), reset, and the bytes the
 * state bound counts. */
static int test_truncate_reset_bytes(void) {
  uint64_t rng = lm_test_seed() + 4;
  batch_fill(&B, &rng);
  lm_state_hash_rows(B.cols, NKEYS, NULL, NROWS, H);
  lm_state_table t;
  CHECK_CODE(lm_state_table_init(&t, TYPES, NKEYS), LAMINAR_OK, (laminar_error*)NULL);
  EXPECT(lm_state_table_bytes(&t) == 0);
  CHECK_CODE(add_rows(&t, &B, H, IDS), LAMINAR_OK, (laminar_error*)NULL);
  int64_t per_row = lm_state_table_row_bytes(TYPES, NKEYS);
  EXPECT(per_row == 16 + (1 + 8) + (1 + (int64_t)sizeof(lm_str)) + (1 + 8));
  EXPECT(lm_state_table_bytes(&t) == t.n * per_row + (int64_t)t.strings.used_bytes);
  EXPECT(t.strings.used_bytes > 0);
  int64_t keep = t.n / 2;
  lm_state_table_truncate(&t, keep);
  EXPECT(t.n == keep);
  for (int64_t r = 0; r < NROWS; r++) {
    int64_t g = lm_state_table_find(&t, H[r], B.cols, r);
    EXPECT(g == (IDS[r] < keep ? IDS[r] : -1));
  }
  int64_t cap = t.cap;
  lm_state_table_reset(&t);
  EXPECT(t.n == 0 && t.cap == cap && t.strings.used_bytes == 0);
  EXPECT(lm_state_table_bytes(&t) == 0);
  for (int64_t r = 0; r < NROWS; r++)
    EXPECT(lm_state_table_find(&t, H[r], B.cols, r) < 0);
  /* Reused after a reset: the same ids again. */
  static int64_t ids2[NROWS];
  CHECK_CODE(add_rows(&t, &B, H, ids2), LAMINAR_OK, (laminar_error*)NULL);
  for (int64_t r = 0; r < NROWS; r++) EXPECT(ids2[r] == IDS[r]);
  lm_state_table_free(&t);
  return 0;
}

/* The index keeps its load factor: at most 1/4 while it has at most 64 Ki
 * slots, and stays findable through many grows (integer keys only). */
static int test_growth(void) {
  static int64_t v[200000];
  static uint64_t h[200000];
  const lm_type ty = LM_TYPE_INT64;
  lm_vec col = {LM_TYPE_INT64, 200000, NULL, v};
  for (int64_t r = 0; r < 200000; r++) v[r] = r * 7919 - 100000;
  lm_state_hash_rows(&col, 1, NULL, 200000, h);
  lm_state_table t;
  CHECK_CODE(lm_state_table_init(&t, &ty, 1), LAMINAR_OK, (laminar_error*)NULL);
  for (int64_t r = 0; r < 200000; r++) {
    CHECK(lm_state_table_find(&t, h[r], &col, r) < 0);
    CHECK_CODE(lm_state_table_grow_index(&t), LAMINAR_OK, (laminar_error*)NULL);
    CHECK_CODE(lm_state_table_reserve(&t, t.n + 1), LAMINAR_OK, (laminar_error*)NULL);
    int64_t g = lm_state_table_push(&t, h[r]);
    CHECK_CODE(lm_state_table_set_keys(&t, g, &col, r), LAMINAR_OK, (laminar_error*)NULL);
    uint64_t size = (uint64_t)t.mask + 1;
    EXPECT((uint64_t)t.n * (size <= 65536 ? 4 : 2) <= size);
  }
  for (int64_t r = 0; r < 200000; r++) {
    EXPECT(lm_state_table_find(&t, h[r], &col, r) == r);
    EXPECT(lm_state_table_find1(&t, false, h[r], &col, r) == r);
  }
  /* A key not there: -1 from both lookups. */
  int64_t absent[1] = {3};
  uint64_t ha;
  lm_vec one = {LM_TYPE_INT64, 1, NULL, absent};
  lm_state_hash_rows(&one, 1, NULL, 1, &ha);
  EXPECT(lm_state_table_find(&t, ha, &one, 0) == -1);
  EXPECT(lm_state_table_find1(&t, false, ha, &one, 0) == -1);
  lm_state_table_free(&t);
  return 0;
}

/* ---- the row set (state/rowset.h) -------------------------------------------------- */

#define NUNIV 3000

/* Entry u of the universe: a distinct byte string of 2..41 bytes, u in its
 * first two (lengths vary, so hashes see every tail length). */
static int64_t univ_entry(int64_t u, uint8_t* out) {
  int64_t len = 2 + (u * 7) % 40;
  out[0] = (uint8_t)u;
  out[1] = (uint8_t)(u >> 8);
  for (int64_t k = 2; k < len; k++) out[k] = (uint8_t)((u >> (k % 3 * 4)) + k * 31);
  return len;
}

/* The set holds exactly the entries ref[u] > 0 with those weights; its
 * count, its bytes for the bound and a walk over its slots agree. */
static bool rowset_matches(const lm_state_rowset* s, const int64_t* ref) {
  uint8_t buf[64];
  int64_t live = 0, live_bytes = 0;
  for (int64_t u = 0; u < NUNIV; u++) {
    int64_t len = univ_entry(u, buf);
    const lm_state_rowset_slot* e =
        lm_state_rowset_find(s, lm_state_rowset_hash(buf, len), buf, len);
    if (ref[u] == 0) {
      if (e != NULL) return false;
      continue;
    }
    if (e == NULL || e->weight != ref[u] || e->len != len ||
        memcmp(s->bytes + e->off, buf, (size_t)len) != 0)
      return false;
    live++;
    live_bytes += len;
  }
  int64_t walked = 0;
  for (int64_t i = 0; i < s->cap; i++) walked += s->slots[i].weight != 0;
  return s->count == live && walked == live &&
         lm_state_rowset_bytes(s) ==
             live_bytes + live * (int64_t)(2 * sizeof(lm_state_rowset_slot));
}

/* Random weights added to a small universe, many reaching 0 (removed by
 * backward shift) and some going below (stopped at 0, counted), checked
 * against a reference after every round; compaction keeps it all. */
static int test_rowset_add_remove(void) {
  uint64_t rng = lm_test_seed() + 7;
  static int64_t ref[NUNIV];
  memset(ref, 0, sizeof ref);
  lm_state_rowset s;
  lm_state_rowset_init(&s, false);
  int64_t errors = 0, ref_errors = 0;
  uint8_t buf[64];
  for (int round = 0; round < 60; round++) {
    CHECK_CODE(lm_state_rowset_reserve(&s, 2000, 2000 * 40), LAMINAR_OK,
               (laminar_error*)NULL);
    for (int k = 0; k < 2000; k++) {
      uint64_t z = lm_test_rand(&rng);
      int64_t u = (int64_t)(z % (round < 30 ? NUNIV : NUNIV / 3));
      int64_t w = (int64_t)((z >> 20) % 5) - 2; /* -2 .. 2 */
      int64_t len = univ_entry(u, buf);
      int64_t want = ref[u] + w < 0 ? -ref[u] : w;
      if (ref[u] + w < 0) ref_errors++;
      int64_t got =
          lm_state_rowset_add(&s, lm_state_rowset_hash(buf, len), buf, len, w, &errors);
      EXPECT(got == want);
      ref[u] += want;
    }
    EXPECT(errors == ref_errors);
    CHECK(rowset_matches(&s, ref));
    lm_state_rowset_compact(&s);
    CHECK(rowset_matches(&s, ref));
  }
  /* Everything taken back: empty, every slot empty. */
  for (int64_t u = 0; u < NUNIV; u++) {
    int64_t len = univ_entry(u, buf);
    if (ref[u] > 0)
      lm_state_rowset_add(&s, lm_state_rowset_hash(buf, len), buf, len, -ref[u], &errors);
    ref[u] = 0;
  }
  CHECK(rowset_matches(&s, ref));
  EXPECT(s.count == 0 && lm_state_rowset_bytes(&s) == 0);
  EXPECT(s.dead == s.nbytes);
  lm_state_rowset_free(&s);
  return 0;
}

/* Keyed entries (a table): identity the first klen bytes; replace keeps the
 * key and counts the old bytes dead, remove drops it, others stay found. */
static int test_rowset_keyed(void) {
  lm_state_rowset s;
  lm_state_rowset_init(&s, true);
  CHECK_CODE(lm_state_rowset_reserve(&s, 500, 500 * 32), LAMINAR_OK,
             (laminar_error*)NULL);
  uint8_t row[32];
  for (int64_t k = 0; k < 500; k++) {
    memcpy(row, &k, 8);                 /* the key */
    memset(row + 8, (int)(k % 251), 8); /* the row */
    uint64_t h = lm_state_rowset_hash(row, 8);
    bool found;
    int64_t i = lm_state_rowset_probe(&s, h, row, 8, &found);
    CHECK(!found);
    lm_state_rowset_insert_at(&s, i, h, row, 16, 8, 1);
  }
  CHECK_CODE(lm_state_rowset_reserve(&s, 0, 500 * 32), LAMINAR_OK, (laminar_error*)NULL);
  for (int64_t k = 0; k < 500; k++) {
    memcpy(row, &k, 8);
    uint64_t h = lm_state_rowset_hash(row, 8);
    bool found;
    int64_t i = lm_state_rowset_probe(&s, h, row, 8, &found);
    CHECK(found);
    if (k % 3 == 0) {
      lm_state_rowset_remove_at(&s, i);
    } else if (k % 3 == 1) {
      memset(row + 8, 0xAB, 16); /* a longer row under the same key */
      lm_state_rowset_replace_at(&s, i, row, 24);
    }
  }
  EXPECT(s.count == 500 - 167);
  EXPECT(s.dead == 167 * 16 + 167 * 16);
  for (int64_t k = 0; k < 500; k++) {
    memcpy(row, &k, 8);
    const lm_state_rowset_slot* e =
        lm_state_rowset_find(&s, lm_state_rowset_hash(row, 8), row, 8);
    if (k % 3 == 0) {
      EXPECT(e == NULL);
      continue;
    }
    CHECK(e != NULL);
    EXPECT(e->klen == 8 && e->weight == 1);
    EXPECT(e->len == (k % 3 == 1 ? 24 : 16));
    EXPECT(s.bytes[e->off + 8] == (k % 3 == 1 ? 0xAB : (uint8_t)(k % 251)));
  }
  lm_state_rowset_free(&s);
  return 0;
}

/* The snapshot encoding (count, then weight and bytes per entry) of a frozen
 * set stays what it was at the freeze while the set thaws (a copy) and
 * changes; released after, and without a writer the thaw copies nothing. */
static int test_rowset_freeze_snapshot(void) {
  lm_state_rowset s;
  lm_state_rowset_init(&s, false);
  uint8_t buf[64];
  int64_t errors = 0;
  CHECK_CODE(lm_state_rowset_reserve(&s, 100, 100 * 40), LAMINAR_OK,
             (laminar_error*)NULL);
  for (int64_t u = 0; u < 100; u++) {
    int64_t len = univ_entry(u, buf);
    lm_state_rowset_add(&s, lm_state_rowset_hash(buf, len), buf, len, 1 + u % 3, &errors);
  }
  lm_state_writer before;
  lm_state_writer_init(&before);
  lm_state_rowset_frozen now = lm_state_rowset_now(&s);
  lm_state_rowset_put(&now, &before);
  CHECK_CODE(lm_state_writer_status(&before), LAMINAR_OK, (laminar_error*)NULL);

  lm_state_rowset_frozen f = lm_state_rowset_freeze(&s);
  bool copied;
  CHECK_CODE(lm_state_rowset_thaw(&s, &copied), LAMINAR_OK, (laminar_error*)NULL);
  EXPECT(copied);
  CHECK_CODE(lm_state_rowset_reserve(&s, 100, 100 * 40), LAMINAR_OK,
             (laminar_error*)NULL);
  for (int64_t u = 0; u < 100; u++) { /* every entry changes; half go away */
    int64_t len = univ_entry(u, buf);
    lm_state_rowset_add(&s, lm_state_rowset_hash(buf, len), buf, len,
                        u % 2 ? -(1 + u % 3) : 5, &errors);
  }
  EXPECT(s.count == 50);
  lm_state_writer frozen;
  lm_state_writer_init(&frozen);
  lm_state_rowset_put(&f, &frozen);
  lm_state_rowset_release(&f);
  CHECK(frozen.len == before.len);
  EXPECT(memcmp(frozen.data, before.data, before.len) == 0);

  /* The encoding reads back as the entries: count, weight, bytes. */
  lm_state_reader r;
  lm_state_reader_init(&r, before.data, before.len);
  EXPECT(lm_state_get_i64(&r) == 100);
  int64_t seen = 0;
  for (int64_t k = 0; k < 100; k++) {
    int64_t w = lm_state_get_i64(&r);
    lm_str b = lm_state_get_bytes(&r);
    CHECK(!r.failed);
    int64_t u = (uint8_t)b.ptr[0];
    int64_t len = univ_entry(u, buf);
    EXPECT(len == b.len && memcmp(buf, b.ptr, (size_t)len) == 0);
    EXPECT(w == 1 + u % 3);
    seen++;
  }
  EXPECT(seen == 100 && r.pos == r.len);

  /* Freeze, the writer done first: the thaw copies nothing. */
  f = lm_state_rowset_freeze(&s);
  lm_state_rowset_release(&f);
  CHECK_CODE(lm_state_rowset_thaw(&s, &copied), LAMINAR_OK, (laminar_error*)NULL);
  EXPECT(!copied);
  EXPECT(s.count == 50);
  lm_state_writer_free(&before);
  lm_state_writer_free(&frozen);
  lm_state_rowset_free(&s);
  return 0;
}

/* The one-key lookup (lm_state_table_find1) of STRING keys, short and long,
 * agrees with the general one on every row, present or not. */
static int test_find1_strings(void) {
  uint64_t rng = lm_test_seed() + 11;
  batch_fill(&B, &rng);
  lm_state_table t;
  const lm_type ty = LM_TYPE_STRING;
  CHECK_CODE(lm_state_table_init(&t, &ty, 1), LAMINAR_OK, (laminar_error*)NULL);
  lm_vec col = {LM_TYPE_STRING, NROWS, NULL, B.s};
  lm_state_hash_rows(&col, 1, NULL, NROWS, H);
  for (int64_t r = 0; r < NROWS; r++) {
    int64_t g = lm_state_table_find(&t, H[r], &col, r);
    EXPECT(lm_state_table_find1(&t, true, H[r], &col, r) == g);
    if (g >= 0 || r % 2 == 1) continue; /* odd rows' new keys stay out */
    CHECK_CODE(lm_state_table_grow_index(&t), LAMINAR_OK, (laminar_error*)NULL);
    CHECK_CODE(lm_state_table_reserve(&t, t.n + 1), LAMINAR_OK, (laminar_error*)NULL);
    g = lm_state_table_push(&t, H[r]);
    CHECK_CODE(lm_state_table_set_keys(&t, g, &col, r), LAMINAR_OK, (laminar_error*)NULL);
  }
  int64_t hits = 0;
  for (int64_t r = 0; r < NROWS; r++) {
    int64_t g = lm_state_table_find(&t, H[r], &col, r);
    EXPECT(lm_state_table_find1(&t, true, H[r], &col, r) == g);
    hits += g >= 0;
  }
  EXPECT(hits > 0 && t.n > 0);
  lm_state_table_free(&t);
  return 0;
}

int main(int argc, char** argv) {
  static const lm_test_case cases[] = {
      {"find_matches_reference", test_find_matches_reference},
      {"snapshot_round_trip", test_snapshot_round_trip},
      {"partition_filter", test_partition_filter},
      {"copies", test_copies},
      {"truncate_reset_bytes", test_truncate_reset_bytes},
      {"growth", test_growth},
      {"find1_strings", test_find1_strings},
      {"rowset_add_remove", test_rowset_add_remove},
      {"rowset_keyed", test_rowset_keyed},
      {"rowset_freeze_snapshot", test_rowset_freeze_snapshot},
      {NULL, NULL},
  };
  return lm_test_main(argc, argv, cases);
}

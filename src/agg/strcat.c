/*
 * strcat.c -- STRING_AGG(x [, sep]): each group's non-NULL values in arrival
 * order, joined by the separator when finalized (DuckDB's string_agg; NULL
 * for a group without values). agg.c hands LM_AGG_STRING_AGG states here.
 *
 * State: every value held is an entry (its bytes in the state's string pool,
 * its arrival number `seq` from st->seq), chained per group from head[g] to
 * tail[g] in arrival order (prev/next links). A retraction (over a changelog:
 * a negative weight) removes copies equal to the value, the latest arrival
 * first -- the rule FIRST/LAST follow -- and a retraction of a value the group
 * does not hold changes nothing. Freed entries are reused; the bytes of a
 * retracted value stay in the pool until the state is cleared. Merging two
 * groups of one state interleaves them by arrival (a session a row bridges);
 * a group of another state is appended after dst's values.
 *
 * Finalize builds each result in the report's scratch (lm_agg_report.ctx:
 * the operator's eval context, live until the rows are emitted).
 */
#include "agg/agg.h"

#include "agg/internal.h"
#include "util/util.h"

#include <stdio.h>
#include <string.h>

struct lm_strcat {
  int32_t* head; /* per group: its oldest entry, -1: none */
  int32_t* tail; /* its newest */
  int64_t gcap;
  lm_str* val; /* per entry */
  int64_t* seq;
  int32_t* prev;
  int32_t* next; /* (of a free entry: the next free one) */
  int64_t n, cap;
  int32_t free; /* first free entry + 1; 0: none */
  int64_t live; /* entries held */
};

#define GROW(field, n)                                                      \
  do {                                                                      \
    void* grown_ = lm_realloc(sc->field, sizeof(*sc->field) * (size_t)(n)); \
    if (grown_ == NULL) return LAMINAR_ERR_NOMEM;                           \
    sc->field = grown_;                                                     \
  } while (0)

void lm_strcat_init(lm_agg_states* st, const lm_agg_spec* spec) { st->sep = spec->sep; }

laminar_code lm_strcat_reserve(lm_agg_states* st, int64_t cap) {
  if (st->sc == NULL) {
    st->sc = lm_calloc(1, sizeof *st->sc);
    if (st->sc == NULL) return LAMINAR_ERR_NOMEM;
  }
  struct lm_strcat* sc = st->sc;
  if (cap > sc->gcap) {
    GROW(head, cap);
    GROW(tail, cap);
    sc->gcap = cap;
  }
  st->cap = cap;
  return LAMINAR_OK;
}

/* Room for `extra` more entries than are in use or free. */
static laminar_code entries_reserve(struct lm_strcat* sc, int64_t extra) {
  int64_t need = sc->n + extra;
  if (need <= sc->cap) return LAMINAR_OK;
  int64_t ncap = sc->cap ? sc->cap * 2 : 64;
  while (ncap < need) ncap *= 2;
  if (ncap > INT32_MAX / 4) return LAMINAR_ERR_NOMEM;
  GROW(val, ncap);
  GROW(seq, ncap);
  GROW(prev, ncap);
  GROW(next, ncap);
  sc->cap = ncap;
  return LAMINAR_OK;
}

int64_t lm_strcat_bytes(const lm_agg_states* st, int64_t ngroups) {
  const struct lm_strcat* sc = st->sc;
  int64_t entries = sc != NULL ? sc->live : 0;
  return ngroups * 8 + entries * 32 + (int64_t)st->strings.used_bytes;
}

void lm_strcat_init_range(lm_agg_states* st, int64_t first, int64_t n) {
  struct lm_strcat* sc = st->sc;
  if (sc == NULL || n <= 0) return;
  memset(sc->head + first, 0xff, sizeof(int32_t) * (size_t)n);
  memset(sc->tail + first, 0xff, sizeof(int32_t) * (size_t)n);
}

static void entry_free(struct lm_strcat* sc, int32_t e) {
  sc->next[e] = sc->free - 1;
  sc->free = e + 1;
  sc->live--;
}

/* Unlink entry e from group g's chain and free it. */
static void entry_remove(struct lm_strcat* sc, int64_t g, int32_t e) {
  int32_t p = sc->prev[e], q = sc->next[e];
  if (p >= 0) {
    sc->next[p] = q;
  } else {
    sc->head[g] = q;
  }
  if (q >= 0) {
    sc->prev[q] = p;
  } else {
    sc->tail[g] = p;
  }
  entry_free(sc, e);
}

void lm_strcat_drop_group(lm_agg_states* st, int64_t g) {
  struct lm_strcat* sc = st->sc;
  if (sc == NULL || g >= sc->gcap) return;
  for (int32_t e = sc->head[g]; e >= 0;) {
    int32_t q = sc->next[e];
    entry_free(sc, e);
    e = q;
  }
  sc->head[g] = sc->tail[g] = -1;
}

void lm_strcat_clear(lm_agg_states* st) {
  struct lm_strcat* sc = st->sc;
  if (sc == NULL) return;
  sc->n = 0;
  sc->free = 0;
  sc->live = 0;
}

void lm_strcat_free(lm_agg_states* st) {
  struct lm_strcat* sc = st->sc;
  if (sc == NULL) return;
  lm_free(sc->head);
  lm_free(sc->tail);
  lm_free(sc->val);
  lm_free(sc->seq);
  lm_free(sc->prev);
  lm_free(sc->next);
  lm_free(sc);
  st->sc = NULL;
}

laminar_code lm_strcat_room(lm_agg_states* st, int64_t entries) {
  return st->sc != NULL ? entries_reserve(st->sc, entries) : LAMINAR_OK;
}

/* A new entry holding v (bytes borrowed: the caller's to keep alive), with
 * arrival number seq, at the end of group g's chain -- or, `ordered`, after
 * the last entry of g that arrived before it. */
static laminar_code entry_add(lm_agg_states* st, int64_t g, lm_str v, int64_t seq,
                              bool ordered) {
  struct lm_strcat* sc = st->sc;
  int32_t e;
  if (sc->free != 0) {
    e = sc->free - 1;
    sc->free = sc->next[e] + 1;
  } else {
    LM_TRY(entries_reserve(sc, 1));
    e = (int32_t)sc->n++;
  }
  sc->live++;
  sc->val[e] = v;
  sc->seq[e] = seq;
  int32_t p = sc->tail[g];
  while (ordered && p >= 0 && sc->seq[p] > seq) p = sc->prev[p];
  int32_t q = p >= 0 ? sc->next[p] : sc->head[g];
  sc->prev[e] = p;
  sc->next[e] = q;
  if (p >= 0) {
    sc->next[p] = e;
  } else {
    sc->head[g] = e;
  }
  if (q >= 0) {
    sc->prev[q] = e;
  } else {
    sc->tail[g] = e;
  }
  return LAMINAR_OK;
}

static bool str_eq(lm_str a, lm_str b) {
  return a.len == b.len && (a.len == 0 || memcmp(a.ptr, b.ptr, (size_t)a.len) == 0);
}

laminar_code lm_strcat_update(lm_agg_states* st, const lm_vec* arg, const uint32_t* sel,
                              const uint32_t* gids, const int64_t* weight, int64_t m) {
  struct lm_strcat* sc = st->sc;
  if (sc == NULL) return LAMINAR_ERR_INTERNAL;
  const lm_str* x = arg->data;
  for (int64_t j = 0; j < m; j++) {
    uint32_t r = sel != NULL ? sel[j] : (uint32_t)j;
    uint32_t g = gids[j];
    if (arg->nulls != NULL && arg->nulls[r]) continue; /* NULLs are skipped */
    int64_t w = weight != NULL ? weight[r] : 1;
    if (w > 0) {
      char* copy = lm_pool_copy(&st->strings, x[r].ptr, (size_t)x[r].len);
      if (copy == NULL && x[r].len > 0) return LAMINAR_ERR_NOMEM;
      for (int64_t k = 0; k < w; k++) {
        LM_TRY(entry_add(st, g, (lm_str){copy, x[r].len}, st->seq++, false));
      }
    }
    for (int32_t e = sc->tail[g]; w < 0 && e >= 0;) { /* the latest copies first */
      int32_t p = sc->prev[e];
      if (str_eq(sc->val[e], x[r])) {
        entry_remove(sc, g, e);
        w++;
      }
      e = p;
    }
  }
  return LAMINAR_OK;
}

laminar_code lm_strcat_merge(lm_agg_states* st, int64_t dst, const lm_agg_states* from,
                             int64_t src) {
  const struct lm_strcat* fc = from->sc;
  if (fc == NULL || src >= fc->gcap) return LAMINAR_OK;
  bool same = from == st;
  /* (the same state: src's entries copied first, as dst's chain changes) */
  for (int32_t e = fc->head[src]; e >= 0; e = fc->next[e]) {
    lm_str v = fc->val[e];
    if (!same) {
      char* copy = lm_pool_copy(&st->strings, v.ptr, (size_t)v.len);
      if (copy == NULL && v.len > 0) return LAMINAR_ERR_NOMEM;
      v.ptr = copy;
    }
    LM_TRY(entry_add(st, dst, v, same ? fc->seq[e] : st->seq++, same));
  }
  return LAMINAR_OK;
}

bool lm_strcat_finalize(const lm_agg_states* st, int64_t first, int64_t n, void* data,
                        uint8_t* nulls) {
  const struct lm_strcat* sc = st->sc;
  lm_str* out = data;
  bool any_null = false;
  for (int64_t k = 0; k < n; k++) {
    int64_t g = first + k;
    int32_t h = sc != NULL && g < sc->gcap ? sc->head[g] : -1;
    out[k] = (lm_str){NULL, 0};
    nulls[k] = h < 0;
    any_null |= h < 0;
    if (h < 0) continue;
    int64_t len = 0;
    for (int32_t e = h; e >= 0; e = sc->next[e])
      len += sc->val[e].len + (e != h ? st->sep.len : 0);
    char* buf = NULL;
    if (st->report != NULL && st->report->ctx != NULL)
      buf = lm_eval_ctx_alloc(st->report->ctx, (size_t)len + 1);
    if (buf == NULL) { /* reported: the rows are not emitted */
      if (st->report != NULL && st->report->rc == LAMINAR_OK) {
        st->report->rc = LAMINAR_ERR_NOMEM;
        snprintf(st->report->text, sizeof st->report->text,
                 "out of memory building a string_agg result of %lld bytes",
                 (long long)len);
      }
      nulls[k] = 1;
      any_null = true;
      continue;
    }
    int64_t at = 0;
    for (int32_t e = h; e >= 0; e = sc->next[e]) {
      if (e != h && st->sep.len > 0) {
        memcpy(buf + at, st->sep.ptr, (size_t)st->sep.len);
        at += st->sep.len;
      }
      if (sc->val[e].len > 0) memcpy(buf + at, sc->val[e].ptr, (size_t)sc->val[e].len);
      at += sc->val[e].len;
    }
    out[k] = (lm_str){buf, len};
  }
  return any_null;
}

laminar_code lm_strcat_copy(lm_agg_states* dst, const lm_agg_states* src, int64_t n) {
  lm_agg_states_clear(dst);
  LM_TRY(lm_strcat_reserve(dst, n > 0 ? n : 1));
  lm_strcat_init_range(dst, 0, n);
  dst->seq = src->seq;
  const struct lm_strcat* sc = src->sc;
  for (int64_t g = 0; sc != NULL && g < n && g < sc->gcap; g++) {
    for (int32_t e = sc->head[g]; e >= 0; e = sc->next[e]) {
      lm_str v = sc->val[e];
      char* copy = lm_pool_copy(&dst->strings, v.ptr, (size_t)v.len);
      if (copy == NULL && v.len > 0) return LAMINAR_ERR_NOMEM;
      LM_TRY(entry_add(dst, g, (lm_str){copy, v.len}, sc->seq[e], false));
    }
  }
  return LAMINAR_OK;
}

void lm_strcat_snapshot_group(const lm_agg_states* st, int64_t g, lm_state_writer* w) {
  const struct lm_strcat* sc = st->sc;
  int32_t h = sc != NULL && g < sc->gcap ? sc->head[g] : -1;
  uint32_t count = 0;
  for (int32_t e = h; e >= 0; e = sc->next[e]) count++;
  lm_state_put_u32(w, count);
  for (int32_t e = h; e >= 0; e = sc->next[e]) {
    lm_state_put_i64(w, sc->seq[e]);
    lm_state_put_bytes(w, sc->val[e].ptr, (size_t)sc->val[e].len);
  }
}

laminar_code lm_strcat_restore_group(lm_agg_states* st, int64_t g, lm_state_reader* r) {
  if (st->sc == NULL || g >= st->sc->gcap) return LAMINAR_ERR_INTERNAL;
  uint32_t count = lm_state_get_u32(r);
  if (count > r->len) r->failed = true;
  for (uint32_t k = 0; k < count && !r->failed; k++) {
    int64_t seq = lm_state_get_i64(r);
    lm_str v = lm_state_get_bytes(r);
    if (r->failed) break;
    char* copy = lm_pool_copy(&st->strings, v.ptr, (size_t)v.len);
    if (copy == NULL && v.len > 0) return LAMINAR_ERR_NOMEM;
    LM_TRY(entry_add(st, g, (lm_str){copy, v.len}, seq, true));
    if (seq >= st->seq) st->seq = seq + 1;
  }
  return LAMINAR_OK;
}

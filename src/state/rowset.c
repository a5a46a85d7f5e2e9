/*
 * rowset.c -- the keyed state of views and tables (state/rowset.h): the
 * open-addressing index over encoded rows, its byte buffer, snapshot and
 * copy-on-write freezes.
 */
#include "state/rowset.h"

#include "util/util.h"

#include <string.h>

void lm_state_rowset_init(lm_state_rowset* s, bool keyed) {
  memset(s, 0, sizeof *s);
  s->keyed = keyed;
  atomic_init(&s->share, 0);
}

void lm_state_rowset_free(lm_state_rowset* s) {
  lm_free(s->slots);
  lm_free(s->bytes);
  bool keyed = s->keyed;
  lm_state_rowset_init(s, keyed);
}

void lm_state_rowset_clear(lm_state_rowset* s) {
  if (s->slots != NULL)
    memset(s->slots, 0, sizeof(lm_state_rowset_slot) * (size_t)s->cap);
  s->count = 0;
  s->nbytes = 0;
  s->dead = 0;
}

/* ---- room ------------------------------------------------------------------------- */

static laminar_code reserve_slots(lm_state_rowset* s, int64_t extra) {
  int64_t need = s->count + extra;
  if (need <= s->cap / 2) return LAMINAR_OK;
  int64_t cap = s->cap ? s->cap : 16;
  while (cap / 2 < need) {
    if (cap > INT64_MAX / 4 / (int64_t)sizeof(lm_state_rowset_slot))
      return LAMINAR_ERR_NOMEM;
    cap *= 2;
  }
  lm_state_rowset_slot* grown = lm_calloc((size_t)cap, sizeof(lm_state_rowset_slot));
  if (grown == NULL) return LAMINAR_ERR_NOMEM;
  uint64_t mask = (uint64_t)cap - 1;
  for (int64_t i = 0; i < s->cap; i++) {
    if (s->slots[i].weight == 0) continue;
    uint64_t j = s->slots[i].hash & mask;
    while (grown[j].weight != 0) j = (j + 1) & mask;
    grown[j] = s->slots[i];
  }
  lm_free(s->slots);
  s->slots = grown;
  s->cap = cap;
  return LAMINAR_OK;
}

static laminar_code reserve_bytes(lm_state_rowset* s, int64_t extra) {
  if (extra > INT64_MAX / 4 - s->nbytes) return LAMINAR_ERR_NOMEM;
  int64_t need = s->nbytes + extra;
  if (need <= s->bytes_cap) return LAMINAR_OK;
  int64_t cap = s->bytes_cap ? s->bytes_cap : 4096;
  while (cap < need) cap *= 2;
  uint8_t* grown = lm_realloc(s->bytes, (size_t)cap);
  if (grown == NULL) return LAMINAR_ERR_NOMEM;
  s->bytes = grown;
  s->bytes_cap = cap;
  return LAMINAR_OK;
}

laminar_code lm_state_rowset_reserve(lm_state_rowset* s, int64_t rows, int64_t bytes) {
  LM_TRY(reserve_slots(s, rows));
  return reserve_bytes(s, bytes);
}

void lm_state_rowset_compact(lm_state_rowset* s) {
  if (s->dead < 65536 || s->dead * 2 < s->nbytes) return;
  int64_t live = s->nbytes - s->dead;
  int64_t cap = live + live / 2 + 4096;
  uint8_t* fresh = lm_malloc((size_t)cap);
  if (fresh == NULL) return;
  int64_t pos = 0;
  for (int64_t i = 0; i < s->cap; i++) {
    lm_state_rowset_slot* e = &s->slots[i];
    if (e->weight == 0) continue;
    memcpy(fresh + pos, s->bytes + e->off, (size_t)e->len);
    e->off = pos;
    pos += e->len;
  }
  lm_free(s->bytes);
  s->bytes = fresh;
  s->bytes_cap = cap;
  s->nbytes = pos;
  s->dead = 0;
}

/* ---- entries ---------------------------------------------------------------------- */

void lm_state_rowset_insert_at(lm_state_rowset* s, int64_t i, uint64_t h,
                               const uint8_t* p, int64_t len, int64_t klen, int64_t w) {
  if (len > 0) memcpy(s->bytes + s->nbytes, p, (size_t)len);
  s->slots[i] = (lm_state_rowset_slot){h, w, s->nbytes, len, klen};
  s->nbytes += len;
  s->count++;
}

void lm_state_rowset_replace_at(lm_state_rowset* s, int64_t i, const uint8_t* p,
                                int64_t len) {
  lm_state_rowset_slot* e = &s->slots[i];
  s->dead += e->len;
  if (len > 0) memcpy(s->bytes + s->nbytes, p, (size_t)len);
  e->off = s->nbytes;
  e->len = len;
  s->nbytes += len;
}

void lm_state_rowset_remove_at(lm_state_rowset* s, int64_t i) {
  s->dead += s->slots[i].len;
  s->count--;
  uint64_t mask = (uint64_t)s->cap - 1;
  uint64_t hole = (uint64_t)i;
  uint64_t j = hole;
  for (;;) {
    j = (j + 1) & mask;
    if (s->slots[j].weight == 0) break;
    uint64_t home = s->slots[j].hash & mask;
    /* The entry at j may fill the hole unless its home lies cyclically in (hole, j]. */
    if (((j - home) & mask) >= ((j - hole) & mask)) {
      s->slots[hole] = s->slots[j];
      hole = j;
    }
  }
  s->slots[hole].weight = 0;
}

int64_t lm_state_rowset_add(lm_state_rowset* s, uint64_t h, const uint8_t* p, int64_t len,
                            int64_t w, int64_t* retract_errors) {
  bool found;
  int64_t i = lm_state_rowset_probe(s, h, p, len, &found);
  int64_t old = found ? s->slots[i].weight : 0;
  int64_t now;
  if (__builtin_add_overflow(old, w, &now)) now = INT64_MAX; /* only w > 0 overflows */
  if (now < 0) {
    (*retract_errors)++; /* a retraction of an entry not (or not so often) there */
    now = 0;
  }
  if (now == old) return 0;
  if (!found) {
    lm_state_rowset_insert_at(s, i, h, p, len, 0, now);
  } else if (now == 0) {
    lm_state_rowset_remove_at(s, i);
  } else {
    s->slots[i].weight = now;
  }
  return now - old;
}

/* ---- snapshot and copy-on-write freezes ------------------------------------------- */

/* The freeze notes the slots and the bytes as they are and marks them shared
 * (share = 2) -- O(1), nothing copied; the checkpoint encodes them from its
 * own thread while the operator runs on. Before the operator changes them
 * (thaw) it copies both (two memcpys) and goes on with the copies; if the
 * writer is done first (share 1), they are the set's again, uncopied. */

void lm_state_rowset_put(const lm_state_rowset_frozen* f, lm_state_writer* w) {
  lm_state_put_i64(w, f->count);
  for (int64_t i = 0; i < f->cap; i++) {
    const lm_state_rowset_slot* e = &f->slots[i];
    if (e->weight == 0) continue;
    lm_state_put_i64(w, e->weight);
    lm_state_put_bytes(w, f->bytes + e->off, (size_t)e->len);
  }
}

lm_state_rowset_frozen lm_state_rowset_now(lm_state_rowset* s) {
  return (lm_state_rowset_frozen){s, s->slots, s->cap, s->count, s->bytes};
}

lm_state_rowset_frozen lm_state_rowset_freeze(lm_state_rowset* s) {
  /* relaxed: published to the writer by the graph's resume. */
  atomic_store_explicit(&s->share, 2, memory_order_relaxed);
  s->held = true;
  return lm_state_rowset_now(s);
}

void lm_state_rowset_release(lm_state_rowset_frozen* f) {
  /* acq_rel: pairs with thaw's. 1: the set let go first (it copied). */
  if (atomic_fetch_sub_explicit(&f->s->share, 1, memory_order_acq_rel) == 1) {
    lm_free((void*)f->slots);
    lm_free((void*)f->bytes);
  }
  f->slots = NULL;
  f->bytes = NULL;
}

laminar_code lm_state_rowset_thaw(lm_state_rowset* s, bool* out_copied) {
  *out_copied = false;
  if (!s->held) return LAMINAR_OK;
  if (atomic_load_explicit(&s->share, memory_order_acquire) != 2) {
    atomic_store_explicit(&s->share, 0, memory_order_relaxed); /* the writer is done */
    s->held = false;
    return LAMINAR_OK;
  }
  lm_state_rowset_slot* slots =
      s->cap > 0 ? lm_malloc(sizeof(lm_state_rowset_slot) * (size_t)s->cap) : NULL;
  uint8_t* bytes = s->bytes_cap > 0 ? lm_malloc((size_t)s->bytes_cap) : NULL;
  if ((s->cap > 0 && slots == NULL) || (s->bytes_cap > 0 && bytes == NULL)) {
    lm_free(slots);
    lm_free(bytes);
    return LAMINAR_ERR_NOMEM;
  }
  if (s->cap > 0) memcpy(slots, s->slots, sizeof(lm_state_rowset_slot) * (size_t)s->cap);
  if (s->nbytes > 0) memcpy(bytes, s->bytes, (size_t)s->nbytes);
  lm_state_rowset_slot* old_slots = s->slots;
  uint8_t* old_bytes = s->bytes;
  s->slots = slots;
  s->bytes = bytes;
  s->held = false;
  *out_copied = true;
  /* acq_rel: pairs with release's. 1: the writer let go first. */
  if (atomic_fetch_sub_explicit(&s->share, 1, memory_order_acq_rel) == 1) {
    lm_free(old_slots);
    lm_free(old_bytes);
  }
  return LAMINAR_OK;
}

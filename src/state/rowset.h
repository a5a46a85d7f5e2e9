/*
 * rowset.h -- the keyed state of materialized views and tables: a hash table
 * from an encoded row (a byte string) to its multiplicity, the sibling of
 * the keyed state table (state/table.h) for state whose keys are whole rows
 * of any width. It shares the table's hashing (lm_state_hash_bytes: one
 * mix64), its conventions for the state bound (lm_state_rowset_bytes) and
 * for copy-on-write freezes (lm_state_rowset_freeze / _thaw, as windows).
 *
 * Entries: each holds a byte string, its hash, its weight (> 0; 0 marks an
 * empty slot) and klen, the length of its identity: the first klen bytes
 * (a table: the primary key's encoding, then the row's) or, in a set made
 * with keyed false, the whole string (a view: the row is its identity). The
 * bytes live back to back in one growable buffer; an entry that leaves
 * leaves dead bytes behind, reclaimed by lm_state_rowset_compact once they
 * are most of the buffer.
 *
 * Index: open addressing, linear probing, at most half full; removal by
 * backward-shift deletion, so there are no tombstones and a probe stops at
 * the first empty slot. Slot numbers are stable until the next reserve,
 * compact or removal.
 *
 * All or nothing: lm_state_rowset_reserve makes room for a number of new
 * entries and bytes first; inserts within that room cannot fail, so a
 * caller applies a batch only once it reserved for its worst case.
 *
 * Snapshot: lm_state_rowset_put writes the count then per entry its weight
 * and its bytes (lm_state_put_i64, lm_state_put_bytes), in slot order; a
 * restore inserts what it read (any order).
 *
 * Not thread-safe: one set belongs to one partition's operator. A frozen
 * set (lm_state_rowset_freeze) is read by a checkpoint's thread while the
 * operator goes on; the operator calls lm_state_rowset_thaw before it
 * changes the set, which copies it if the checkpoint still reads it.
 */
#ifndef LM_STATE_ROWSET_H
#define LM_STATE_ROWSET_H

#include "laminar.h"
#include "state/state.h"
#include "state/table.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* One entry: hash of its identity, weight (0: an empty slot), its bytes at
 * off .. off + len in the set's buffer, the first klen of them its key. */
typedef struct lm_state_rowset_slot {
  uint64_t hash;
  int64_t weight;
  int64_t off;
  int64_t len;
  int64_t klen;
} lm_state_rowset_slot;

typedef struct lm_state_rowset {
  bool keyed; /* identity: the first klen bytes (else the whole string) */
  lm_state_rowset_slot* slots;
  int64_t cap;   /* slots (a power of two, or 0) */
  int64_t count; /* entries */
  uint8_t* bytes;
  int64_t nbytes; /* used, live and dead */
  int64_t bytes_cap;
  int64_t dead; /* bytes of entries that left */
  /* Copy-on-write (lm_state_rowset_freeze): who holds `slots` and `bytes` as
   * they were at the freeze. 2: the set and a frozen copy being written; 1:
   * one of them let go; whoever lets go last frees them. held (the set's
   * alone): the set's slots and bytes are those. */
  _Atomic int32_t share;
  bool held;
} lm_state_rowset;

/* The hash of an identity p[0..len) (lm_state_hash_bytes). */
static inline uint64_t lm_state_rowset_hash(const uint8_t* p, int64_t len) {
  return lm_state_hash_bytes((const char*)p, len);
}

/* An empty set (no allocation). keyed: entries are identified by their
 * first klen bytes. Free with lm_state_rowset_free(). */
void lm_state_rowset_init(lm_state_rowset* s, bool keyed);
/* Free what s holds. Not while a frozen copy is being written (checkpoints
 * release what they froze before an operator is destroyed). */
void lm_state_rowset_free(lm_state_rowset* s);
/* Forget every entry, keeping the capacity (the set thawed by the caller). */
void lm_state_rowset_clear(lm_state_rowset* s);

/* Room for `rows` more entries (the index at most half full after them) and
 * `bytes` more bytes. LAMINAR_ERR_NOMEM leaves s as it was. */
laminar_code lm_state_rowset_reserve(lm_state_rowset* s, int64_t rows, int64_t bytes);

/* Rewrite the buffer with the live entries only, when dead bytes are most
 * of it (and at least 64 KiB). Best effort: without memory, nothing changes. */
void lm_state_rowset_compact(lm_state_rowset* s);

/* The slot whose identity is p[0..len) (hash h), or the empty slot where it
 * goes (*found false). The set has room for one more (reserve). */
static inline int64_t lm_state_rowset_probe(const lm_state_rowset* s, uint64_t h,
                                            const uint8_t* p, int64_t len, bool* found) {
  uint64_t mask = (uint64_t)s->cap - 1;
  uint64_t i = h & mask;
  for (;;) {
    const lm_state_rowset_slot* e = &s->slots[i];
    if (e->weight == 0) {
      *found = false;
      return (int64_t)i;
    }
    int64_t id_len = s->keyed ? e->klen : e->len;
    if (e->hash == h && id_len == len && memcmp(s->bytes + e->off, p, (size_t)len) == 0) {
      *found = true;
      return (int64_t)i;
    }
    i = (i + 1) & mask;
  }
}

/* The entry with identity p[0..len) (hash h), or NULL. A set with no slots
 * is fine. */
static inline const lm_state_rowset_slot* lm_state_rowset_find(const lm_state_rowset* s,
                                                               uint64_t h,
                                                               const uint8_t* p,
                                                               int64_t len) {
  if (s->count == 0) return NULL;
  bool found;
  int64_t i = lm_state_rowset_probe(s, h, p, len, &found);
  return found ? &s->slots[i] : NULL;
}

/* Ask the cache for hash h's home slot, and once that is in cache (stage
 * 1), for its entry's bytes: a large set's slots and rows are misses. */
static inline void lm_state_rowset_prefetch(const lm_state_rowset* s, uint64_t h,
                                            int stage) {
  if (s->cap == 0) return;
  const lm_state_rowset_slot* e = &s->slots[h & ((uint64_t)s->cap - 1)];
  if (stage == 0) {
    __builtin_prefetch(e);
  } else if (e->weight != 0) {
    __builtin_prefetch(s->bytes + e->off);
  }
}

/* The bytes of the entry in slot i. */
static inline const uint8_t* lm_state_rowset_data(const lm_state_rowset* s, int64_t i) {
  return s->bytes + s->slots[i].off;
}

/* Slot i (empty, from probe) takes p[0..len) (key: its first klen bytes)
 * with hash h and weight w > 0. Room reserved by the caller: cannot fail. */
void lm_state_rowset_insert_at(lm_state_rowset* s, int64_t i, uint64_t h,
                               const uint8_t* p, int64_t len, int64_t klen, int64_t w);
/* The entry in slot i takes the bytes p[0..len) instead of its own (the same
 * identity; room reserved). */
void lm_state_rowset_replace_at(lm_state_rowset* s, int64_t i, const uint8_t* p,
                                int64_t len);
/* Remove the entry in slot i (backward shift: later entries of its probe
 * run move back; slot numbers of those change). */
void lm_state_rowset_remove_at(lm_state_rowset* s, int64_t i);

/* Add weight w to the entry p[0..len) (hash h; a set with keyed false):
 * inserted when new, removed when its weight reaches 0. A weight that would
 * go below 0 stops at 0 and counts one in *retract_errors; one that would
 * overflow stops at INT64_MAX. Returns the weight applied (new - old). Room
 * for one new entry reserved by the caller: cannot fail. */
int64_t lm_state_rowset_add(lm_state_rowset* s, uint64_t h, const uint8_t* p, int64_t len,
                            int64_t w, int64_t* retract_errors);

/* Bytes the set holds for the state bound: its live bytes and two slots'
 * worth per entry (the index is at most half full). */
static inline int64_t lm_state_rowset_bytes(const lm_state_rowset* s) {
  return s->nbytes - s->dead + s->count * (int64_t)(2 * sizeof(lm_state_rowset_slot));
}

/* ---- snapshot and copy-on-write freezes ------------------------------------------- */

/* The set as a checkpoint reads it: slots and bytes as they were. */
typedef struct lm_state_rowset_frozen {
  lm_state_rowset* s;
  const lm_state_rowset_slot* slots;
  int64_t cap;
  int64_t count;
  const uint8_t* bytes;
} lm_state_rowset_frozen;

/* Write a set's entries: the count, then per entry its weight and bytes.
 * Reads only (a frozen set from any thread). The writer's status is the
 * caller's to check. */
void lm_state_rowset_put(const lm_state_rowset_frozen* f, lm_state_writer* w);
/* The set as it is now, to be written by lm_state_rowset_put while nothing
 * changes it (a snapshot in the operator's thread). */
lm_state_rowset_frozen lm_state_rowset_now(lm_state_rowset* s);
/* Freeze s: O(1), nothing copied; s's slots and bytes are shared with the
 * returned copy until lm_state_rowset_release(copy) and s's next thaw. The
 * set must not be frozen already (a checkpoint releases what it froze
 * before the next one begins). Operator thread. */
lm_state_rowset_frozen lm_state_rowset_freeze(lm_state_rowset* s);
/* The checkpoint is done with a frozen copy (any thread): frees the shared
 * arrays if the set has let go of them (thawed) first. */
void lm_state_rowset_release(lm_state_rowset_frozen* f);
/* Make s's slots and bytes its own to change: copied when a frozen copy is
 * still being written (then *out_copied is true). LAMINAR_ERR_NOMEM leaves
 * s as it was. Operator thread. */
laminar_code lm_state_rowset_thaw(lm_state_rowset* s, bool* out_copied);

#endif /* LM_STATE_ROWSET_H */

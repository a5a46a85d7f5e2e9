/*
 * slide.h -- sliding aggregate state for hopping windows built from panes
 * (op/hop.c): the aggregate of one window, per key id, kept as panes enter
 * it (add) and leave it (subtract), so that each closing window costs one pane
 * in and one pane out instead of merging all its panes (issue 4, Speed).
 *
 * Indexed by the window operator's key ids (dense, 0 .. cap). Kinds:
 * - COUNT, COUNT(*), SUM and AVG of integers: exact counts and 128-bit sums,
 *   subtracted as they were added.
 * - SUM and AVG of DOUBLE: a double-double sum (hi + lo, each step an
 *   error-free TwoSum), infinities and NaNs counted apart so that one leaving
 *   the window takes its effect with it. Subtraction cancels: a result whose
 *   error bound (steps x 2^-104 x the largest magnitude the sum held) is not
 *   below 2^-59 of it is reported unsafe, and the caller rebuilds the window
 *   from its panes (a fresh sum), so results stay within 1e-15 of a fresh sum.
 * - MIN and MAX of numbers (not strings): not invertible; per key the
 *   window's value, the pane it came from, and a ring of the values of the
 *   window's panes (`depth` slots, by pane number). A pane entering folds in
 *   (branch-free); a pane leaving clears its slot and, only if it held the
 *   window's value, the value is folded again from the ring. The fold is
 *   lm_agg_merge's over the panes in order: ties keep the earliest pane's
 *   value, NaN orders above every number. (A monotonic queue was tried first:
 *   its pops mispredicted on random prices and cost more than pane merges.)
 * FIRST/LAST, COUNT(DISTINCT) and MIN/MAX of strings are not supported
 * (lm_agg_slide_supported): their windows keep merging panes.
 *
 * Keys not in the window hold the empty state (reset when they leave).
 * Partition thread only; no locks.
 */
#ifndef LM_AGG_SLIDE_H
#define LM_AGG_SLIDE_H

#include "agg/agg.h"

/* SUM / AVG of DOUBLE of one key. */
typedef struct lm_agg_dsum {
  double hi, lo;           /* the finite part: hi + lo, |lo| <= ulp(hi) */
  double mag;              /* largest |value| or |partial sum| since the key entered */
  int64_t steps;           /* adds and subtracts since the key entered */
  int32_t pinf, ninf, nan; /* panes whose sum is +inf, -inf, NaN */
} lm_agg_dsum;

typedef struct lm_agg_slide {
  lm_agg_fn fn;
  lm_type arg_type;
  lm_type result_type;
  int64_t cap;        /* key ids with room */
  int32_t depth;      /* MIN/MAX: ring slots per key (a power of two) */
  int64_t* n;         /* COUNT/COUNT(*)/AVG: rows; SUM, MIN, MAX: panes with a value */
  lm_i128* sum_i;     /* SUM/AVG of integers */
  lm_agg_dsum* sum_d; /* SUM/AVG of DOUBLE */
  /* MIN/MAX (values as int64: a DOUBLE's raw bits), folded on order keys: */
  int64_t* w_key;  /* the window's value's key (INT64_MIN: the identity) */
  int64_t* w_val;  /* the window's value */
  int64_t* w_pane; /* the pane it came from; INT64_MIN: the identity */
  int64_t top;     /* the last pane added */
  int64_t* r_key;  /* [key * depth + pane % depth]: each pane's key, value */
  int64_t* r_val;
} lm_agg_slide;

/* Whether aggregate `fn` over `arg_type` can slide (see above). */
bool lm_agg_slide_supported(lm_agg_fn fn, lm_type arg_type);

/* An empty slide shaped as `like` (a pane's states); depth: most panes per
 * window (MIN/MAX rings). Allocates nothing until reserve. */
void lm_agg_slide_init(lm_agg_slide* s, const lm_agg_states* like, int64_t depth);
/* Room for key ids < cap (new ones empty). LAMINAR_ERR_NOMEM on failure. */
laminar_code lm_agg_slide_reserve(lm_agg_slide* s, int64_t cap);
/* Bytes a slide needs per key id. */
int64_t lm_agg_slide_key_bytes(const lm_agg_slide* s);
void lm_agg_slide_free(lm_agg_slide* s);
/* Key k back to the empty state. */
void lm_agg_slide_reset_key(lm_agg_slide* s, uint32_t k);

/* Pane number `pane` (increasing from add to add; the window's panes) enters:
 * its groups g < n, of key id kid[g], are added. Leaving panes go in the order
 * they entered; at most `depth` panes are in at once. */
void lm_agg_slide_add(lm_agg_slide* s, const uint32_t* kid, const lm_agg_states* pane,
                      int64_t n, int64_t pane_no);
void lm_agg_slide_sub(lm_agg_slide* s, const uint32_t* kid, const lm_agg_states* pane,
                      int64_t n, int64_t pane_no);

/* Results of keys kids[j], j < n, into data/nulls as lm_agg_finalize writes
 * them; returns true if any is NULL. *unsafe is set when a DOUBLE sum may
 * have lost precision to cancellation (left unchanged otherwise). */
bool lm_agg_slide_finalize(const lm_agg_slide* s, const uint32_t* kids, int64_t n,
                           void* data, uint8_t* nulls, bool* unsafe);

#endif /* LM_AGG_SLIDE_H */

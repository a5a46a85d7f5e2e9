/*
 * internal.h -- private to src/agg: the user-defined aggregates' state
 * machinery (udaf.c), which agg.c's entry points hand LM_AGG_UDAF states to.
 */
#ifndef LM_AGG_INTERNAL_H
#define LM_AGG_INTERNAL_H

#include "agg/agg.h"

void lm_udaf_states_init(lm_agg_states* st, const lm_agg_spec* spec);
laminar_code lm_udaf_states_reserve(lm_agg_states* st, int64_t cap);
int64_t lm_udaf_states_bytes(const lm_agg_states* st, int64_t ngroups);
void lm_udaf_states_init_range(lm_agg_states* st, int64_t first, int64_t n);
void lm_udaf_states_drop_group(lm_agg_states* st, int64_t g);
void lm_udaf_states_clear(lm_agg_states* st);
void lm_udaf_states_free(lm_agg_states* st);
/* Update groups gids[j] with rows sel[j] of arg (and the second argument
 * `arg2`, NULL for one), each counting weight[row] times (weight NULL: once;
 * negative: retracted). */
laminar_code lm_udaf_states_update(lm_agg_states* st, const lm_vec* arg,
                                   const lm_vec* arg2, const uint32_t* sel,
                                   const uint32_t* gids, const int64_t* weight,
                                   int64_t m);
laminar_code lm_udaf_states_merge(lm_agg_states* st, int64_t dst,
                                  const lm_agg_states* from, int64_t src);
bool lm_udaf_states_finalize(const lm_agg_states* st, int64_t first, int64_t n,
                             void* data, uint8_t* nulls);
laminar_code lm_udaf_states_copy(lm_agg_states* dst, const lm_agg_states* src, int64_t n);
void lm_udaf_states_copy_range(lm_agg_states* dst, const lm_agg_states* src,
                               int64_t first, int64_t n);
void lm_udaf_snapshot_group(const lm_agg_states* st, int64_t g, lm_state_writer* w);
laminar_code lm_udaf_restore_group(lm_agg_states* st, int64_t g, lm_state_reader* r);

#endif /* LM_AGG_INTERNAL_H */

/*
 * udaf.c -- the state of user-defined aggregates (laminar_aggregate_register)
 * in the columnar aggregate machinery: one block of cap * state_size bytes
 * (group g's state at g * state_size, the layout the callbacks index by group
 * id) and a byte per group saying it holds a state to destroy. agg.c's entry
 * points hand LM_AGG_UDAF states here; the calls themselves (export of the
 * arguments, import of finalize's array, the function's lock) are
 * expr/udf.c's.
 *
 * Over a changelog each row counts its weight: +w rows go to update (w
 * copies), then -w rows to retract, in one call each per chunk.
 *
 * Failures: update and merge return their code with the text in the
 * report's ctx (copied to report->text); finalize cannot return one, so it
 * writes NULLs and records the failure in the report for the operator to take
 * (lm_agg_report_take) before it emits. A state that owns memory is copied and
 * checkpointed through serialize; one that cannot be serialized fails the
 * checkpoint (the writer is marked failed).
 *
 * Runs on the thread that owns the operator's partition.
 */
#include "agg/internal.h"

#include "util/util.h"

#include <stdio.h>
#include <string.h>

static uint8_t* state_at(const lm_agg_states* st, int64_t g) {
  return st->u_state + (size_t)g * (size_t)st->u_size;
}

void lm_udaf_states_init(lm_agg_states* st, const lm_agg_spec* spec) {
  st->udaf = spec->udaf;
  st->u_mode = spec->udaf_mode;
  st->u_size = lm_udaf_state_size(spec->udaf);
}

laminar_code lm_udaf_states_reserve(lm_agg_states* st, int64_t cap) {
  uint8_t* s = lm_realloc(st->u_state, (size_t)cap * (size_t)st->u_size);
  if (s == NULL) return LAMINAR_ERR_NOMEM;
  st->u_state = s;
  uint8_t* live = lm_realloc(st->u_live, (size_t)cap);
  if (live == NULL) return LAMINAR_ERR_NOMEM;
  st->u_live = live;
  memset(s + (size_t)st->cap * (size_t)st->u_size, 0,
         (size_t)(cap - st->cap) * (size_t)st->u_size);
  memset(live + st->cap, 0, (size_t)(cap - st->cap));
  st->cap = cap;
  return LAMINAR_OK;
}

int64_t lm_udaf_states_bytes(const lm_agg_states* st, int64_t ngroups) {
  return ngroups * (st->u_size + 1);
}

void lm_udaf_states_init_range(lm_agg_states* st, int64_t first, int64_t n) {
  for (int64_t g = first; g < first + n; g++) {
    if (st->u_live[g]) lm_udaf_destroy_state(st->udaf, state_at(st, g));
    lm_udaf_init_state(st->udaf, state_at(st, g));
    st->u_live[g] = 1;
  }
}

void lm_udaf_states_drop_group(lm_agg_states* st, int64_t g) {
  if (st->u_live[g]) lm_udaf_destroy_state(st->udaf, state_at(st, g));
  st->u_live[g] = 0;
  memset(state_at(st, g), 0, (size_t)st->u_size);
}

/* Every group forgotten. Groups left initialized and untouched stay valid
 * empty states (window recycling relies on it); a state owning memory is
 * destroyed and made empty again. */
void lm_udaf_states_clear(lm_agg_states* st) {
  if (!lm_udaf_owns_memory(st->udaf)) return;
  for (int64_t g = 0; g < st->cap; g++) {
    if (!st->u_live[g]) continue;
    lm_udaf_destroy_state(st->udaf, state_at(st, g));
    lm_udaf_init_state(st->udaf, state_at(st, g));
  }
}

void lm_udaf_states_free(lm_agg_states* st) {
  for (int64_t g = 0; st->u_live != NULL && g < st->cap; g++) {
    if (st->u_live[g]) lm_udaf_destroy_state(st->udaf, state_at(st, g));
  }
  lm_free(st->u_state);
  lm_free(st->u_live);
}

/* A failed call's text into the report (the code is returned). */
static laminar_code note(const lm_agg_states* st, laminar_code rc) {
  if (lm_expr_udf_failed(rc))
    snprintf(st->report->text, sizeof st->report->text, "%s",
             lm_eval_ctx_error(st->report->ctx));
  return rc;
}

/* ---- a chunk's update, all or nothing -------------------------------------------- */

/* The plain-bytes states of the groups a chunk touches, as they were before
 * it: a callback that fails after it changed some of them (an update that
 * stops in the middle of its rows, a retract after the update pass) leaves
 * them as before the chunk once restored (issue 23). A state that owns
 * memory (serialize set) is the callback's to leave unchanged on failure
 * (laminar.h; the Python binding does). Memory from the evaluation context. */
typedef struct backup {
  int64_t n;
  uint32_t* groups; /* the touched groups, each once */
  uint8_t* bytes;   /* their states, n * u_size bytes */
} backup;

static laminar_code backup_take(lm_eval_ctx* ctx, const lm_agg_states* st,
                                const uint32_t* gids, int64_t m, backup* b) {
  *b = (backup){0, NULL, NULL};
  if (lm_udaf_owns_memory(st->udaf) || m == 0) return LAMINAR_OK;
  /* The distinct groups through an open-addressing set of 2m..4m slots. */
  int64_t slots = 2;
  while (slots < 2 * m) slots *= 2;
  uint32_t* set = lm_eval_ctx_alloc(ctx, sizeof(uint32_t) * (size_t)slots);
  b->groups = lm_eval_ctx_alloc(ctx, sizeof(uint32_t) * (size_t)m);
  if (set == NULL || b->groups == NULL) return LAMINAR_ERR_NOMEM;
  memset(set, 0xff, sizeof(uint32_t) * (size_t)slots); /* UINT32_MAX: empty */
  for (int64_t j = 0; j < m; j++) {
    uint32_t g = gids[j];
    uint64_t h = ((uint64_t)g * 0x9E3779B97F4A7C15u) >> 17;
    for (;; h++) {
      uint32_t* slot = &set[h & (uint64_t)(slots - 1)];
      if (*slot == g) break;
      if (*slot == UINT32_MAX) {
        *slot = g;
        b->groups[b->n++] = g;
        break;
      }
    }
  }
  size_t w = (size_t)st->u_size;
  b->bytes = lm_eval_ctx_alloc(ctx, w * (size_t)b->n);
  if (b->bytes == NULL) return LAMINAR_ERR_NOMEM;
  for (int64_t k = 0; k < b->n; k++)
    memcpy(b->bytes + (size_t)k * w, state_at(st, b->groups[k]), w);
  return LAMINAR_OK;
}

/* rc, after taking the touched groups back to b when it is a failure. */
static laminar_code backup_restore(lm_agg_states* st, const backup* b, laminar_code rc) {
  if (rc == LAMINAR_OK) return rc;
  size_t w = (size_t)st->u_size;
  for (int64_t k = 0; k < b->n; k++)
    memcpy(state_at(st, b->groups[k]), b->bytes + (size_t)k * w, w);
  return rc;
}

static laminar_code update_weighted(lm_agg_states* st, const lm_vec* args,
                                    const uint32_t* sel, const uint32_t* gids,
                                    const int64_t* weight, int64_t m);
static laminar_code merge_states(lm_agg_states* st, const lm_vec* states,
                                 const uint32_t* sel, const uint32_t* gids, int64_t m);

laminar_code lm_udaf_states_update(lm_agg_states* st, const lm_vec* arg,
                                   const lm_vec* arg2, const uint32_t* sel,
                                   const uint32_t* gids, const int64_t* weight,
                                   int64_t m) {
  if (st->report == NULL) return LAMINAR_ERR_INTERNAL;
  lm_eval_ctx* ctx = st->report->ctx;
  lm_vec args[2] = {*arg, arg2 ? *arg2 : *arg};
  backup b;
  LM_TRY(backup_take(ctx, st, gids, m, &b));
  if (st->u_mode == LM_UDAF_MERGE) {
    if (weight != NULL) return LAMINAR_ERR_INTERNAL; /* not retractable */
    return backup_restore(st, &b, merge_states(st, arg, sel, gids, m));
  }
  if (weight == NULL) {
    return backup_restore(
        st, &b,
        note(st, lm_udaf_update(ctx, st->udaf, false, st->u_state, args, sel, gids, m)));
  }
  return backup_restore(st, &b, update_weighted(st, args, sel, gids, weight, m));
}

/* A changelog's chunk: +w rows to update (w copies), then -w rows to
 * retract, one call each. */
static laminar_code update_weighted(lm_agg_states* st, const lm_vec* args,
                                    const uint32_t* sel, const uint32_t* gids,
                                    const int64_t* weight, int64_t m) {
  lm_eval_ctx* ctx = st->report->ctx;
  /* Rows by sign, each repeated |weight| times. */
  int64_t plus = 0, minus = 0;
  for (int64_t j = 0; j < m; j++) {
    int64_t w = weight[sel ? sel[j] : j];
    if (w > 0) plus += w;
    if (w < 0) minus -= w;
  }
  for (int pass = 0; pass < 2; pass++) {
    int64_t k = pass == 0 ? plus : minus;
    if (k == 0) continue;
    uint32_t* rows = lm_eval_ctx_alloc(ctx, sizeof(uint32_t) * (size_t)k);
    uint32_t* groups = lm_eval_ctx_alloc(ctx, sizeof(uint32_t) * (size_t)k);
    if (rows == NULL || groups == NULL) return LAMINAR_ERR_NOMEM;
    int64_t at = 0;
    for (int64_t j = 0; j < m; j++) {
      uint32_t row = sel ? sel[j] : (uint32_t)j;
      int64_t w = pass == 0 ? weight[row] : -weight[row];
      for (int64_t c = 0; c < w; c++) {
        rows[at] = row;
        groups[at++] = gids[j];
      }
    }
    LM_TRY(note(st, lm_udaf_update(ctx, st->udaf, pass == 1, st->u_state, args, rows,
                                   groups, k)));
  }
  return LAMINAR_OK;
}

laminar_code lm_udaf_states_merge(lm_agg_states* st, int64_t dst,
                                  const lm_agg_states* from, int64_t src) {
  if (st->report == NULL) return LAMINAR_ERR_INTERNAL;
  return note(st, lm_udaf_merge(st->report->ctx, st->udaf, state_at(st, dst),
                                state_at(from, src)));
}

static laminar_code finalize_partial(const lm_agg_states* st, int64_t first, int64_t n,
                                     lm_str* data, uint8_t* nulls);

bool lm_udaf_states_finalize(const lm_agg_states* st, int64_t first, int64_t n,
                             void* data, uint8_t* nulls) {
  laminar_code rc = LAMINAR_ERR_INTERNAL;
  if (st->report != NULL && st->u_mode == LM_UDAF_PARTIAL) {
    rc = finalize_partial(st, first, n, data, nulls);
  } else if (st->report != NULL) {
    rc = lm_udaf_finalize(st->report->ctx, st->udaf, state_at(st, first), n, data, nulls);
  }
  if (rc == LAMINAR_OK) {
    for (int64_t k = 0; k < n; k++) {
      if (nulls[k]) return true;
    }
    return false;
  }
  memset(nulls, 1, (size_t)n);
  memset(data, 0, (size_t)n * (size_t)lm_type_width(st->result_type));
  if (st->report != NULL && st->report->rc == LAMINAR_OK) {
    lm_agg_report* rep = st->report;
    rep->rc = rc;
    if (st->u_mode == LM_UDAF_PARTIAL && rc != LAMINAR_ERR_NOMEM) {
      /* finalize_partial wrote the text */
    } else if (lm_expr_udf_failed(rc)) {
      snprintf(rep->text, sizeof rep->text, "%s", lm_eval_ctx_error(rep->ctx));
    } else {
      snprintf(rep->text, sizeof rep->text, "function '%s': finalize failed: %s",
               lm_udf_name(st->udaf), laminar_errstr(rc));
    }
  }
  return true;
}

/* The encoding of group g of st into *buf (grown from the caller's `local`
 * as needed; the caller frees it when it is not `local`); its length, or -1. */
static int64_t encode(const lm_agg_states* st, int64_t g, uint8_t* local, int64_t cap,
                      uint8_t** buf) {
  *buf = local;
  int64_t n = lm_udaf_serialize(st->udaf, state_at(st, g), local, cap);
  if (n < 0 || n <= cap) return n;
  uint8_t* big = lm_malloc((size_t)n);
  if (big == NULL) return -1;
  int64_t again = lm_udaf_serialize(st->udaf, state_at(st, g), big, n);
  if (again < 0 || again > n) {
    lm_free(big);
    return -1;
  }
  *buf = big;
  return again;
}

/* Group g of dst from its encoding (its previous state destroyed). */
static laminar_code decode(lm_agg_states* dst, int64_t g, const void* buf, int64_t len) {
  if (dst->u_live[g]) lm_udaf_destroy_state(dst->udaf, state_at(dst, g));
  dst->u_live[g] = 0;
  LM_TRY(lm_udaf_deserialize(dst->udaf, state_at(dst, g), buf, len));
  dst->u_live[g] = 1;
  return LAMINAR_OK;
}

laminar_code lm_udaf_states_copy(lm_agg_states* dst, const lm_agg_states* src,
                                 int64_t n) {
  LM_TRY(lm_udaf_states_reserve(dst, n > dst->cap ? n : dst->cap));
  if (!lm_udaf_owns_memory(src->udaf)) {
    memcpy(dst->u_state, src->u_state, (size_t)n * (size_t)src->u_size);
    memcpy(dst->u_live, src->u_live, (size_t)n);
    return LAMINAR_OK;
  }
  uint8_t local[256];
  for (int64_t g = 0; g < n; g++) {
    if (!src->u_live[g]) {
      lm_udaf_states_drop_group(dst, g);
      continue;
    }
    uint8_t* buf;
    int64_t len = encode(src, g, local, sizeof local, &buf);
    laminar_code rc = len < 0 ? LAMINAR_ERR_FUNCTION_FAILED : decode(dst, g, buf, len);
    if (buf != local) lm_free(buf);
    LM_TRY(rc);
  }
  return LAMINAR_OK;
}

void lm_udaf_states_copy_range(lm_agg_states* dst, const lm_agg_states* src,
                               int64_t first, int64_t n) {
  memcpy(state_at(dst, first), state_at(src, first), (size_t)n * (size_t)src->u_size);
  memcpy(dst->u_live + first, src->u_live + first, (size_t)n);
}

void lm_udaf_snapshot_group(const lm_agg_states* st, int64_t g, lm_state_writer* w) {
  uint8_t local[256];
  uint8_t* buf;
  int64_t len = encode(st, g, local, sizeof local, &buf);
  if (len < 0 || len > UINT32_MAX) {
    w->failed = true; /* the checkpoint fails rather than lose the state */
    len = 0;
  }
  lm_state_put_bytes(w, buf, (size_t)len);
  if (buf != local) lm_free(buf);
}

laminar_code lm_udaf_restore_group(lm_agg_states* st, int64_t g, lm_state_reader* r) {
  lm_str b = lm_state_get_bytes(r);
  if (r->failed) return LAMINAR_ERR_RECOVERY;
  laminar_code rc = decode(st, g, b.ptr, b.len);
  return rc == LAMINAR_OK ? LAMINAR_OK : LAMINAR_ERR_RECOVERY;
}

/* ---- the two-phase split: states as a column (LM_UDAF_PARTIAL / _MERGE) ------------ */

/* The encoding of a serialized state in a LM_UDAF_STATE_TYPE column: base64
 * (RFC 4648, padded) while that type is VARCHAR. With a binary type these two
 * become copies. */
static const char b64[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* `len` bytes at `bytes` as the column's value, in ctx memory. */
static laminar_code state_text(lm_eval_ctx* ctx, const uint8_t* bytes, int64_t len,
                               lm_str* out) {
  int64_t n = (len + 2) / 3 * 4;
  char* t = lm_eval_ctx_alloc(ctx, (size_t)(n ? n : 1));
  if (t == NULL) return LAMINAR_ERR_NOMEM;
  int64_t o = 0;
  for (int64_t i = 0; i < len; i += 3) {
    uint32_t v = (uint32_t)bytes[i] << 16;
    if (i + 1 < len) v |= (uint32_t)bytes[i + 1] << 8;
    if (i + 2 < len) v |= bytes[i + 2];
    t[o++] = b64[(v >> 18) & 63];
    t[o++] = b64[(v >> 12) & 63];
    t[o++] = i + 1 < len ? b64[(v >> 6) & 63] : '=';
    t[o++] = i + 2 < len ? b64[v & 63] : '=';
  }
  *out = (lm_str){t, n};
  return LAMINAR_OK;
}

static int b64_digit(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

/* The serialized state a column value holds, in ctx memory (*out_len bytes);
 * false for text that is no such encoding. */
static bool state_bytes(lm_eval_ctx* ctx, lm_str text, uint8_t** out, int64_t* out_len) {
  *out = NULL;
  *out_len = 0;
  if (text.len % 4 != 0) return false;
  uint8_t* b = lm_eval_ctx_alloc(ctx, (size_t)(text.len / 4 * 3 + 1));
  if (b == NULL) return false;
  int64_t o = 0;
  for (int64_t i = 0; i < text.len; i += 4) {
    int d[4];
    int pad = 0;
    for (int k = 0; k < 4; k++) {
      char c = text.ptr[i + k];
      bool tail = i + 4 == text.len && k >= 2 && c == '=';
      if (tail || pad) {
        if (c != '=') return false;
        d[k] = 0;
        pad++;
        continue;
      }
      d[k] = b64_digit(c);
      if (d[k] < 0) return false;
    }
    uint32_t v = (uint32_t)d[0] << 18 | (uint32_t)d[1] << 12 | (uint32_t)d[2] << 6 |
                 (uint32_t)d[3];
    b[o++] = (uint8_t)(v >> 16);
    if (pad < 2) b[o++] = (uint8_t)(v >> 8);
    if (pad < 1) b[o++] = (uint8_t)v;
  }
  *out = b;
  *out_len = o;
  return true;
}

/* LM_UDAF_PARTIAL's finalize: each group's state serialized into data. */
static laminar_code finalize_partial(const lm_agg_states* st, int64_t first, int64_t n,
                                     lm_str* data, uint8_t* nulls) {
  lm_agg_report* rep = st->report;
  uint8_t local[256];
  for (int64_t k = 0; k < n; k++) {
    uint8_t* buf;
    int64_t len = encode(st, first + k, local, sizeof local, &buf);
    laminar_code rc = LAMINAR_OK;
    if (len < 0) {
      rc = LAMINAR_ERR_FUNCTION_FAILED;
      snprintf(rep->text, sizeof rep->text,
               "function '%s': serialize failed for the partial state of a group",
               lm_udf_name(st->udaf));
    } else {
      rc = state_text(rep->ctx, buf, len, &data[k]);
    }
    if (buf != local) lm_free(buf);
    if (rc != LAMINAR_OK) return rc;
    nulls[k] = 0;
  }
  return LAMINAR_OK;
}

/* LM_UDAF_MERGE's update: the states in rows sel[j] of `states` (NULL ones
 * skipped) merged into groups gids[j]. A value that does not decode or
 * deserialize is LAMINAR_ERR_FUNCTION_FAILED naming the function. */
static laminar_code merge_states(lm_agg_states* st, const lm_vec* states,
                                 const uint32_t* sel, const uint32_t* gids, int64_t m) {
  lm_eval_ctx* ctx = st->report->ctx;
  if (lm_type_kind(states->type) != LM_UDAF_STATE_TYPE) return LAMINAR_ERR_INTERNAL;
  const lm_str* vals = states->data;
  uint8_t* tmp = lm_eval_ctx_alloc(ctx, (size_t)st->u_size);
  if (tmp == NULL) return LAMINAR_ERR_NOMEM;
  for (int64_t j = 0; j < m; j++) {
    uint32_t r = sel ? sel[j] : (uint32_t)j;
    if (states->nulls != NULL && states->nulls[r]) continue;
    uint8_t* bytes;
    int64_t len;
    laminar_code rc = LAMINAR_ERR_FUNCTION_FAILED;
    if (state_bytes(ctx, vals[r], &bytes, &len)) {
      rc = lm_udaf_deserialize(st->udaf, tmp, bytes, len);
      /* what a failed deserialize may have made of tmp */
      if (rc != LAMINAR_OK) lm_udaf_destroy_state(st->udaf, tmp);
    }
    if (rc != LAMINAR_OK) {
      snprintf(st->report->text, sizeof st->report->text,
               "function '%s': a partial state (%lld bytes of text) does not "
               "deserialize",
               lm_udf_name(st->udaf), (long long)vals[r].len);
      return rc == LAMINAR_ERR_NOMEM ? rc : LAMINAR_ERR_FUNCTION_FAILED;
    }
    rc = note(st, lm_udaf_merge(ctx, st->udaf, state_at(st, gids[j]), tmp));
    lm_udaf_destroy_state(st->udaf, tmp);
    LM_TRY(rc);
  }
  return LAMINAR_OK;
}

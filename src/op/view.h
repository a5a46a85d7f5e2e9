/*
 * view.h -- the materialize operator of a CREATE MATERIALIZED VIEW: the last
 * operator of a view's chain, holding the view's current result as a Z-set
 * (each distinct row with its multiplicity) and forwarding every change it
 * applies as a changelog.
 *
 * Changelog contract (issue 4): a chunk whose last column is `_weight BIGINT`
 * is a changelog; each row's weight is added to that row's multiplicity (+1
 * an insertion, -1 a retraction; an update is -1 old row then +1 new row).
 * Any other input is insert-only: every row counts +1. A row whose
 * multiplicity reaches 0 leaves the view. A retraction that would take a row
 * below 0 (a row that is not there) is clamped at 0 and counted in
 * lm_op_view_retract_errors(), as is a row with a NULL weight (ignored); the
 * operator never fails on one.
 *
 * Output: the view's columns followed by `_weight BIGINT NOT NULL`, one row per
 * input row whose effect was not nil, with the weight actually applied (a
 * clamped retraction forwards only what it removed). So a view read by a
 * stream or another view is itself a changelog, consistent with its state.
 *
 * Runs on the thread that owns the partition, like every operator; the
 * control thread reads the state (lm_op_view_copy) only while the graph is
 * paused. Snapshot/restore cover the whole state (DESIGN §4); checkpoints
 * freeze it copy-on-write (op/op.h freeze / write_frozen).
 */
#ifndef LM_OP_VIEW_H
#define LM_OP_VIEW_H

#include "op/op.h"

/* Name of the weight column of a changelog. */
#define LM_WEIGHT_COLUMN "_weight"

/* True when `schema` is a changelog: its last column is `_weight` (any case)
 * of type BIGINT. */
bool lm_op_view_is_changelog(const lm_schema* schema);

/* Create the materialize operator of a view whose input chunks have
 * `in_schema`'s columns (a changelog or insert-only, decided by
 * lm_op_view_is_changelog). The view's columns are in_schema without its
 * weight column. Returns LAMINAR_OK, LAMINAR_ERR_NOMEM, or
 * LAMINAR_ERR_SCHEMA_INVALID when in_schema has no column besides the weight
 * or another column named _weight. */
laminar_code lm_op_view_create(const lm_schema* in_schema, lm_op** out);

/* Create the operator of a table (CREATE TABLE): like a view's, but holding
 * one row per primary key. `in_schema` is the table's columns then
 * `_weight BIGINT`; key_cols[0..nkey) are the key's column indexes. An input
 * row with a weight > 0 or NULL upserts its row (replacing the row of its
 * key), one with a weight <= 0 deletes the row of its key; the output is the
 * changelog of the table's content ((old, -1) then (new, +1) for a replaced
 * row). lm_op_view_of, lm_op_view_copy and the rest of this header take it
 * as a view. Returns LAMINAR_OK, LAMINAR_ERR_NOMEM, or
 * LAMINAR_ERR_SCHEMA_INVALID (no weight column, a key index out of range). */
laminar_code lm_op_table_create(const lm_schema* in_schema, const int32_t* key_cols,
                                int32_t nkey, lm_op** out);
/* Create the operator of a table fed by a query (CREATE TABLE ... AS
 * SELECT): as lm_op_table_create, but `in_schema` may also be insert-only
 * (no weight column: every row upserts), a delete (weight <= 0) removes its
 * key's row only when that row is the one it names (whole-row equality, as
 * Flink's upsert materialization: the retraction of a row already replaced
 * changes nothing), and a row with a NULL key column is not applied (counted
 * in lm_op_view_retract_errors). */
laminar_code lm_op_table_create_fed(const lm_schema* in_schema, const int32_t* key_cols,
                                    int32_t nkey, lm_op** out);
/* True when `op` is the operator of a table fed by a query. */
bool lm_op_table_is_fed(const lm_op* op);
/* True when `op` is a table's operator. */
bool lm_op_is_table(const lm_op* op);
/* Look up n keys in a table's operator: keys[k] holds n values of key
 * column k (the key's order and types). out_cols (the table's ncols
 * vectors, memory from ctx, valid until its next reset) receive each key's
 * row, all NULL where there is none; found[i] says which. A NULL key matches
 * nothing. Owner thread of the table. LAMINAR_OK or LAMINAR_ERR_NOMEM. */
laminar_code lm_op_table_lookup(const lm_op* table, lm_eval_ctx* ctx, const lm_vec* keys,
                                int64_t n, lm_vec* out_cols, uint8_t* found);
/* A table operator's primary-key column indexes (*out_n of them). */
const int32_t* lm_op_table_keys(const lm_op* op, int32_t* out_n);

/* The materialize operator ending `chain`, or NULL when the chain is not a
 * view's. */
lm_op* lm_op_view_of(const lm_op* chain);

/* The view's own columns (its output schema without `_weight`). */
const lm_schema* lm_op_view_columns(const lm_op* view);
/* Distinct rows held now, and retractions that found no row (plus NULL
 * weights) since the view was created. Owner thread, or graph paused. */
int64_t lm_op_view_rows(const lm_op* view);
int64_t lm_op_view_retract_errors(const lm_op* view);
/* Copies of the state the view made before changing it because a checkpoint
 * was still writing it (copy-on-write), and (out_rows) their rows in all. */
int64_t lm_op_view_thaws(const lm_op* view, int64_t* out_rows);

/* A decoded copy of a view's content: `nrows` distinct rows as columns (the
 * view's columns, in order) and each row's multiplicity (> 0). Strings point
 * into memory the copy owns. Free with lm_view_rows_free(). */
typedef struct lm_view_rows {
  int64_t nrows;
  int32_t ncols;
  lm_vec* cols;
  int64_t* weights;
  uint8_t* bytes;   /* the encoded rows, back to back; strings point into them */
  int64_t* offsets; /* row r is bytes[offsets[r] .. offsets[r + 1]) */
  void* mem;        /* column buffers (after decode) */
} lm_view_rows;

/* Copy the view's encoded rows (a memcpy of the live state, cheap enough to
 * run while the graph is paused), then decode them into `out`. Two steps so
 * the decode can run after the graph resumes: lm_op_view_copy() under the
 * pause, lm_view_rows_decode() afterwards.
 * Returns LAMINAR_OK or LAMINAR_ERR_NOMEM (out then holds nothing to free). */
laminar_code lm_op_view_copy(const lm_op* view, lm_view_rows* out);
laminar_code lm_view_rows_decode(const lm_schema* columns, lm_view_rows* rows);
void lm_view_rows_free(lm_view_rows* rows);

/* Copy rows sel[0..n) of `in` (any order, repeats allowed) into a dense vector
 * whose memory comes from `ctx` (valid until its next reset). Strings are
 * copied as views: their bytes stay where they are.
 * Returns LAMINAR_OK or LAMINAR_ERR_NOMEM. */
laminar_code lm_op_gather(lm_eval_ctx* ctx, const lm_vec* in, const uint32_t* sel,
                          int64_t n, lm_vec* out);

#endif /* LM_OP_VIEW_H */

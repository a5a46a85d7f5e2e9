/*
 * sketch.h -- the arithmetic of the order-statistic and sketch aggregates
 * (agg.c keeps their state): DuckDB's quantile positions and interpolation,
 * the log-bucket quantile sketch of approx_percentile / approx_quantile, and
 * the HyperLogLog registers of approx_count_distinct.
 *
 * Quantile sketch (DDSketch's mapping, Masson et al., VLDB 2019): a value x
 * goes to bucket k = ceil(log_g |x|), g = (1 + a) / (1 - a), a =
 * LM_SKETCH_ALPHA, and the bucket stands for 2 g^k / (g + 1) with x's sign:
 * every value of the bucket is within a relative error a of it. The bucket
 * keys (lm_sketch_key) are doubles ordered as their values, so a group's
 * counted bucket multiset is ranked as exact values are; the answer for
 * quantile q is the bucket of quantile_disc(x, q), within a * |quantile_disc(x,
 * q)| of it. Counts add and subtract: the sketch merges and takes retractions.
 *
 * HyperLogLog (Flajolet et al., 2007) with 2^LM_HLL_P one-byte registers per
 * group over a 64-bit hash: relative standard error 1.04 / sqrt(2^P) (1.6%),
 * linear counting below 2.5 * 2^P. Registers merge by maximum; there is no
 * removal.
 */
#ifndef LM_AGG_SKETCH_H
#define LM_AGG_SKETCH_H

#include <stdbool.h>
#include <stdint.h>

/* The quantile sketch's relative accuracy. */
#define LM_SKETCH_ALPHA 0.01
/* HyperLogLog: 2^LM_HLL_P registers (bytes) per group. */
#define LM_HLL_P 12
#define LM_HLL_M (1 << LM_HLL_P)

/* The 0-based position in n sorted values (n >= 1) of quantile_disc(q):
 * DuckDB's max(1, n - floor(n - q n)) - 1. */
int64_t lm_quantile_disc_pos(int64_t n, double q);
/* quantile_cont(q) over n sorted values (n >= 1): the positions lo <= hi to
 * interpolate between, and the fraction of the way from lo to hi. */
void lm_quantile_cont_pos(int64_t n, double q, int64_t* out_lo, int64_t* out_hi,
                          double* out_frac);
/* DuckDB's interpolation lo + frac * (hi - lo) (lo when frac is 0). */
double lm_quantile_interpolate(double lo, double hi, double frac);

/* The sketch bucket of x as an order-preserving double key: 0 for zero,
 * +-(LM_SKETCH_OFFSET + k) for +-x, infinities and NaN as themselves. */
double lm_sketch_key(double x);
/* The value a bucket key stands for. */
double lm_sketch_value(double key);

/* The 64-bit hash approx_count_distinct counts (of an integer, a double's
 * bits, a string's bytes). */
uint64_t lm_hll_hash_int(int64_t v);
uint64_t lm_hll_hash_double(double v);
uint64_t lm_hll_hash_bytes(const char* p, int64_t len);
/* Count hash h into registers reg[0 .. LM_HLL_M). */
void lm_hll_add(uint8_t* reg, uint64_t h);
/* reg = max(reg, other), register by register. */
void lm_hll_merge(uint8_t* reg, const uint8_t* other);
/* The estimated number of distinct values counted into reg. */
int64_t lm_hll_estimate(const uint8_t* reg);

#endif /* LM_AGG_SKETCH_H */

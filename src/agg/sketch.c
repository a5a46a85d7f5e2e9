/*
 * sketch.c -- quantile positions, the log-bucket quantile sketch and
 * HyperLogLog (sketch.h).
 */
#include "agg/sketch.h"

#include "state/table.h"

#include <math.h>
#include <string.h>

int64_t lm_quantile_disc_pos(int64_t n, double q) {
  double fn = (double)n;
  int64_t k = n - (int64_t)floor(fn - q * fn);
  if (k < 1) k = 1;
  if (k > n) k = n;
  return k - 1;
}

void lm_quantile_cont_pos(int64_t n, double q, int64_t* out_lo, int64_t* out_hi,
                          double* out_frac) {
  double rn = (double)(n - 1) * q;
  double lo = floor(rn), hi = ceil(rn);
  *out_lo = (int64_t)lo;
  *out_hi = (int64_t)hi;
  *out_frac = rn - lo;
}

double lm_quantile_interpolate(double lo, double hi, double frac) {
  if (frac == 0.0) return lo;
  return lo + frac * (hi - lo);
}

/* Bucket keys are offset so that every finite double's k (|k| < 40000 at
 * a = 0.01, subnormals included) keeps its sign apart from zero. */
#define LM_SKETCH_OFFSET 1000000.0

/* ln g, g = (1 + a) / (1 - a) at a = LM_SKETCH_ALPHA = 0.01 (a constant: no
 * second log per value); the buckets and their values both derive from it. */
#define LM_SKETCH_LN_GAMMA 0.020000666706669435

double lm_sketch_key(double x) {
  if (x == 0.0 || isnan(x) || isinf(x)) return x == 0.0 ? 0.0 : x;
  double k = ceil(log(fabs(x)) * (1.0 / LM_SKETCH_LN_GAMMA));
  return x > 0 ? LM_SKETCH_OFFSET + k : -(LM_SKETCH_OFFSET + k);
}

double lm_sketch_value(double key) {
  if (key == 0.0 || isnan(key) || isinf(key)) return key;
  double g = exp(LM_SKETCH_LN_GAMMA);
  double k = fabs(key) - LM_SKETCH_OFFSET;
  double v = 2.0 * exp(k * LM_SKETCH_LN_GAMMA) / (g + 1.0);
  return key > 0 ? v : -v;
}

uint64_t lm_hll_hash_int(int64_t v) {
  return lm_state_mix64((uint64_t)v * 0x9E3779B97F4A7C15ULL + 0x632BE59BD9B4E019ULL);
}

uint64_t lm_hll_hash_double(double v) {
  if (v == 0.0) v = 0.0; /* -0.0 is 0.0 */
  if (isnan(v)) v = NAN; /* one NaN */
  uint64_t bits;
  memcpy(&bits, &v, sizeof bits);
  return lm_state_mix64(bits ^ 0xD6E8FEB86659FD93ULL);
}

uint64_t lm_hll_hash_bytes(const char* p, int64_t len) {
  uint64_t h = 0xCBF29CE484222325ULL;
  for (int64_t k = 0; k < len; k++) h = (h ^ (uint8_t)p[k]) * 0x100000001B3ULL;
  return lm_state_mix64(h ^ (uint64_t)len);
}

void lm_hll_add(uint8_t* reg, uint64_t h) {
  uint32_t idx = (uint32_t)(h >> (64 - LM_HLL_P));
  uint64_t rest = h << LM_HLL_P;
  /* the rank: the position of the first 1 bit of the remaining 64 - P bits */
  uint8_t rank =
      rest == 0 ? (uint8_t)(64 - LM_HLL_P + 1) : (uint8_t)(__builtin_clzll(rest) + 1);
  if (rank > reg[idx]) reg[idx] = rank;
}

void lm_hll_merge(uint8_t* reg, const uint8_t* other) {
  for (int k = 0; k < LM_HLL_M; k++) reg[k] = other[k] > reg[k] ? other[k] : reg[k];
}

int64_t lm_hll_estimate(const uint8_t* reg) {
  double m = (double)LM_HLL_M, sum = 0.0;
  int zeros = 0;
  for (int k = 0; k < LM_HLL_M; k++) {
    sum += ldexp(1.0, -(int)reg[k]);
    zeros += reg[k] == 0;
  }
  double alpha = 0.7213 / (1.0 + 1.079 / m);
  double e = alpha * m * m / sum;
  if (e <= 2.5 * m && zeros > 0) e = m * log(m / (double)zeros); /* linear counting */
  return (int64_t)llround(e);
}

/*
 * util.h -- what every module of the core shares: error filling, the LM_TRY
 * early-return macro, assertion macros and checked allocation.
 *
 * No global state lives here (DESIGN §4): errors go into the caller's
 * laminar_error, allocation goes through the C allocator.
 */
#ifndef LM_UTIL_H
#define LM_UTIL_H

#include "laminar.h"

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Fill `err` (NULL allowed) with `code` and a printf-formatted message; the
 * message is prefixed "LDB-NNNN: ". Position, object and column are cleared.
 * Returns `code`, so callers write `return lm_error_set(err, ...)`. */
laminar_code lm_error_set(laminar_error* err, laminar_code code, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Record where: SQL position (1-based line and column; 0 = unknown), object name
 * and column name (NULL = leave). Call after lm_error_set(). */
void lm_error_at(laminar_error* err, int32_t line, int32_t column);
void lm_error_object(laminar_error* err, const char* object, const char* column_name);

/* Clear an error struct to "no error" (code LAMINAR_OK, empty strings). */
void lm_error_clear(laminar_error* err);

/* Return a non-OK laminar_code from the enclosing function. */
#define LM_TRY(expr)                                 \
  do {                                               \
    laminar_code lm_try_rc_ = (expr);                \
    if (lm_try_rc_ != LAMINAR_OK) return lm_try_rc_; \
  } while (0)

/* Invariants the code guarantees; compiled out with NDEBUG. */
#define LM_ASSERT(x) assert(x)

/* "Impossible" states: assert in debug builds; in release, evaluate to the
 * condition so the caller can take a safe path returning LAMINAR_ERR_INTERNAL. */
#ifdef NDEBUG
#define LM_ALWAYS(x) (x)
#define LM_NEVER(x) (x)
#else
#define LM_ALWAYS(x) ((x) ? 1 : (assert(0 && #x), 0))
#define LM_NEVER(x) ((x) ? (assert(0 && #x), 1) : 0)
#endif

#ifdef LAMINAR_DEBUG_EXPENSIVE
#define LM_ASSERT_EXPENSIVE(x) assert(x)
#else
#define LM_ASSERT_EXPENSIVE(x) ((void)0)
#endif

#define LM_CACHELINE 64
#define LM_UNUSED(x) ((void)(x))
#define LM_LIKELY(x) __builtin_expect(!!(x), 1)
#define LM_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* Allocation. NULL on failure (callers map it to LAMINAR_ERR_NOMEM); lm_free
 * accepts NULL. lm_alloc_aligned returns LM_CACHELINE-aligned zeroed memory. */
void* lm_malloc(size_t n);
void* lm_calloc(size_t count, size_t size);
void* lm_realloc(void* p, size_t n);
void* lm_alloc_aligned(size_t n);
/* `align`-aligned (a power of two, at least sizeof(void*)), not zeroed. */
void* lm_malloc_aligned(size_t align, size_t n);
/* Resize array `ptr` to `n` elements in place, or return LAMINAR_ERR_NOMEM
 * from the calling function (ptr unchanged then). */
#define LM_GROW_ARRAY(ptr, n)                                       \
  do {                                                              \
    void* grown_ = lm_realloc((ptr), sizeof(*(ptr)) * (size_t)(n)); \
    if (grown_ == NULL) return LAMINAR_ERR_NOMEM;                   \
    (ptr) = grown_;                                                 \
  } while (0)
char* lm_strdup(const char* s);
void lm_free(void* p);

#ifdef LAMINAR_FAULT_INJECTION
/* Test builds (CMake LAMINAR_FAULT_INJECTION=ON): make the nth allocation
 * through the functions above fail (1 = the next one), and with `persistent`
 * every later one too; nth = 0 turns it off. One countdown for the process,
 * counted by the joined threads only: the thread that sets it and sink
 * threads (lm_fault_join, sink/queue.c); the reactor and background threads
 * are untouched. The count of allocations failed since the last set is
 * lm_fault_alloc_failures(); lm_fault_alloc_remaining() is the countdown
 * (0: off), to pause and resume. */
void lm_fault_alloc_set(int64_t nth, bool persistent);
int64_t lm_fault_alloc_failures(void);
int64_t lm_fault_alloc_remaining(void);

/* The (row, window) pairs the window operator assigns at once (op/window.c,
 * `normal` outside tests): set small, a fault test's batch of several
 * slices needs far fewer rows, so failing each of its allocations in turn
 * stays quick. pairs <= 0 restores `normal`. One value for the process. */
void lm_fault_slice_pairs_set(int64_t pairs);
int64_t lm_fault_slice_pairs(int64_t normal);

/* The same for I/O: the nth I/O step of src/store and src/sink (a write, a
 * flush, a rename, a segment allocation) made by a joined thread fails with
 * errno `error`; lm_fault_io() is the check those steps make. */
void lm_fault_io_set(int64_t nth, int error);
int64_t lm_fault_io_remaining(void);
int lm_fault_io(void);
/* The calling thread counts in both countdowns from now on (a sink thread:
 * its writes and allocations are the database's). */
void lm_fault_join(void);
#else
static inline int lm_fault_io(void) { return 0; }
static inline void lm_fault_join(void) {}
#endif

/* ---- durations: the one unit table (SQL INTERVAL, options, config) ---------- */

/* Milliseconds in one unit word s[0..n) (singular, plural or abbreviated, any
 * case: ms, msec, s, sec, second, m, min, minute, h, hr, hour, d, day and
 * their plurals); false if unknown. */
bool lm_interval_unit(const char* s, size_t n, int64_t* out_ms);
/* The quoted text of an INTERVAL: one bare quantity (its unit follows the
 * quotes), or one or more "quantity unit" terms summed ('5 seconds', '100ms',
 * '1h 30m', '1 hour 30 minutes'), blanks optional between a quantity and its unit
 * and around terms. */
typedef struct lm_interval_text {
  bool bare;   /* a quantity alone: is_int/iv/dv hold it */
  bool is_int; /* exact: iv (bare) or ms (terms) */
  int64_t iv;
  double dv;
  int64_t ms;    /* terms: the sum in milliseconds when is_int */
  double dms;    /* terms: the sum in milliseconds when not is_int */
  bool overflow; /* an exact sum left int64 */
  size_t bad;    /* on failure: offset of the offending part */
  const char* why;
} lm_interval_text;
/* Parse s[0..n) as above; false with it->bad and it->why on failure. */
bool lm_interval_parse_text(const char* s, size_t n, lm_interval_text* it);
/* A duration as an option or config value takes: "none" or "off" (-1, when
 * the caller allows it), a whole or decimal number of milliseconds, or
 * quantity-unit terms as INTERVAL text takes ('10 seconds', '100ms',
 * '1h 30m'); not negative, at most 10^15 ms; fractions of a millisecond
 * round half up. */
bool lm_interval_parse_ms(const char* text, int64_t* out_ms);

/* Case-insensitive ASCII comparison of NUL-terminated / counted strings. */
bool lm_streq_nocase(const char* a, const char* b);

/* Whether s[0..n) is well-formed UTF-8 (no overlong forms, surrogates or code
 * points past U+10FFFF). */
bool lm_utf8_valid(const uint8_t* s, int64_t n);
bool lm_strneq_nocase(const char* a, size_t alen, const char* b);

/* Parse a byte count: a whole number with an optional unit, case-insensitive,
 * blanks allowed between: B, KB/KiB, MB/MiB, GB/GiB (all powers of 1024, as
 * PostgreSQL reads them). "0" is accepted (callers give it a meaning, such as
 * "no bound"). False for anything else, a negative or an overflow. */
bool lm_parse_bytes(const char* text, int64_t* out);

#endif /* LM_UTIL_H */

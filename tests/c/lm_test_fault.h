/*
 * lm_test_fault.h -- the out-of-memory harness of the fault tests (RELIABILITY
 * "out of memory"): run a session of API calls once per allocation it makes,
 * failing that allocation (once, or from then on with the failing call
 * repeated three times), and check that the failing call returned
 * LAMINAR_ERR_NOMEM, that it works when retried with memory back (nothing
 * half-done), and that the session's output equals an unfaulted run's.
 * Needs LAMINAR_FAULT_INJECTION (util/util.h).
 */
#ifndef LM_TEST_FAULT_H
#define LM_TEST_FAULT_H

#include "lm_test.h"
#include "util/util.h"

#include <stdbool.h>

#ifdef LAMINAR_FAULT_INJECTION

typedef struct lm_fault_session {
  size_t size; /* bytes of a session struct (zeroed before each run) */
  int nsteps;
  /* Step i of the session: one API call (or a few that fail together). */
  laminar_code (*step)(void* session, int i, laminar_error* err);
  /* Close what the session opened (also after a failed run). */
  void (*end)(void* session);
  /* What the session read, compared with the unfaulted run's. */
  const char* (*output)(const void* session, size_t* len);
  /* A sanity check of the unfaulted run (NULL: none). */
  bool (*reference_ok)(const void* session);
} lm_fault_session;

/* Whether the running harness fails allocations persistently. */
static bool lm_fault_persistent_;

/* laminar_run_until_idle with the countdown paused: these sessions mix
 * operators whose batches are not all or nothing yet past their state
 * (several readers of one source, session windows with EMIT CHANGES, panes,
 * analytic rows: docs/ARCHITECTURE.md, "Out of memory inside stream
 * processing"), so their stream processing is not faulted; the batches that
 * are all or nothing are faulted in test_memory.c. */
static inline laminar_code lm_fault_run_unfaulted(laminar_db* db, laminar_error* err) {
  int64_t left = lm_fault_alloc_remaining();
  lm_fault_alloc_set(0, false);
  laminar_code rc = laminar_run_until_idle(db, err);
  lm_fault_alloc_set(left, lm_fault_persistent_);
  return rc;
}

/* Run the session with the nth allocation failing, nth = 1, 2, ... until a
 * run makes fewer than nth allocations. Returns 0 when every run behaved and
 * more than `min_failures` faults were injected. */
static inline int lm_fault_every_allocation(const lm_fault_session* f, bool persistent,
                                            int64_t min_failures) {
  lm_fault_persistent_ = persistent;
  void* ref = calloc(1, f->size);
  void* s = calloc(1, f->size);
  CHECK(ref != NULL && s != NULL);
  laminar_error err;
  int failed = 0;
  for (int i = 0; i < f->nsteps && !failed; i++) {
    laminar_code rc = f->step(ref, i, &err);
    if (rc != LAMINAR_OK) {
      fprintf(stderr, "unfaulted step %d: %s\n", i, err.message);
      failed = 1;
    }
  }
  f->end(ref);
  if (!failed && f->reference_ok != NULL && !f->reference_ok(ref)) {
    fprintf(stderr, "the unfaulted run's output fails its check\n");
    failed = 1;
  }
  size_t ref_len, len;
  const char* want = f->output(ref, &ref_len);
  int64_t failures = 0, runs = 0;
  for (int64_t nth = 1; !failed; nth++) {
    memset(s, 0, f->size);
    lm_fault_alloc_set(nth, persistent);
    int failed_step = -1;
    for (int i = 0; i < f->nsteps && !failed; i++) {
      laminar_code rc = f->step(s, i, &err);
      if (rc == LAMINAR_OK) continue;
      for (int again = 0; persistent && again < 3 && rc == LAMINAR_ERR_NOMEM; again++)
        rc = f->step(s, i, &err);
      lm_fault_alloc_set(0, false);
      if (rc != LAMINAR_ERR_NOMEM || failed_step >= 0) {
        fprintf(stderr, "nth=%lld step %d: code %d (%s), want one LAMINAR_ERR_NOMEM\n",
                (long long)nth, i, (int)rc, err.message);
        failed = 1;
        break;
      }
      failed_step = i;
      rc = f->step(s, i, &err); /* nothing half-done: the same call works now */
      if (rc != LAMINAR_OK) {
        fprintf(stderr, "nth=%lld step %d retried: %s\n", (long long)nth, i, err.message);
        failed = 1;
      }
    }
    /* The countdown still running: the session made fewer than nth allocations. */
    bool hit = failed_step >= 0 || lm_fault_alloc_remaining() == 0;
    lm_fault_alloc_set(0, false);
    f->end(s);
    runs++;
    if (failed || !hit) break;
    failures++;
    const char* got = f->output(s, &len);
    if (len != ref_len || memcmp(got, want, len) != 0) {
      fprintf(stderr,
              "nth=%lld (failed at step %d): output differs\n--- got\n%.*s--- want\n%.*s",
              (long long)nth, failed_step, (int)len, got, (int)ref_len, want);
      failed = 1;
    }
  }
  free(ref);
  free(s);
  if (failed) return 1;
  fprintf(stderr, "fault%s: runs=%lld injected=%lld\n", persistent ? " (persistent)" : "",
          (long long)runs, (long long)failures);
  CHECK(failures > min_failures);
  return 0;
}

#endif /* LAMINAR_FAULT_INJECTION */
#endif /* LM_TEST_FAULT_H */

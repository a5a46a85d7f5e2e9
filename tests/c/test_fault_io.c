/*
 * test_fault_io.c -- I/O failures, everywhere (issue 6, RELIABILITY "I/O
 * errors"): the durable session of lm_test_durable.h (sync WAL, checkpoints,
 * a JSONL and a CSV sink) is run once per I/O step it makes — each write,
 * flush, rename and segment allocation of the WAL, checkpoints, catalog and
 * sinks — failing that step with EIO; then every third step (from a seeded
 * offset, so repeated runs cover them all) with ENOSPC: the cost is one whole
 * session per step, quadratic in the pipeline's I/O, and ENOSPC takes the same
 * error paths as EIO. The failing
 * call must return LAMINAR_ERR_IO and leave the database usable: the same
 * call, retried once the device works, succeeds. At the end the database is
 * reopened (recovery) and the committed output must equal an unfaulted run's:
 * nothing acknowledged lost, nothing doubled. Needs LAMINAR_FAULT_INJECTION.
 */
/* lm_ctest: TIMEOUT 1200 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE  // mkdtemp, scandir under -std=c17 (the shared test headers)
#endif

#include "util/util.h"

#include <errno.h>

#include "lm_test.h"
#include "lm_test_durable.h"

#ifndef LAMINAR_FAULT_INJECTION
int main(void) {
  return lm_test_skip(
      "built without LAMINAR_FAULT_INJECTION (scripts/test.sh step 2 has it)");
}
#else

typedef struct session {
  char dir[64];
  laminar_db* db;
  laminar_source* src;
} session;

/* The inline runs are not faulted: their only I/O is a sink buffer spill,
 * which an operator cannot yet undo (see test_fault_alloc.c). */
static int g_error; /* the errno the faulted step fails with */

static laminar_code run_unfaulted(session* s, laminar_error* err) {
  int64_t left = lm_fault_io_remaining();
  lm_fault_io_set(0, 0);
  laminar_code rc = laminar_run_until_idle(s->db, err);
  lm_fault_io_set(left, g_error);
  return rc;
}

#define STEPS (4 + 3 * NBATCH / 2 + 3)

/* Step i of the session. Batches go in two at a time, a checkpoint after
 * every second pair. */
static laminar_code step(session* s, int i, laminar_error* err) {
  char sql[2048];
  switch (i) {
    case 0: return open_db(s->dir, "sync", &s->db, err);
    case 1: return laminar_execute(s->db, DDL, err);
    case 2: sink_sql(s->dir, sql, sizeof sql); return laminar_execute(s->db, sql, err);
    case 3: return laminar_source_open(s->db, "trades", &s->src, err);
    default: break;
  }
  int k = i - 4;
  if (k < 3 * NBATCH / 2) {
    int pair = k / 3, what = k % 3;
    if (what == 0) return (laminar_code)push_batch(s->src, 2 * pair, err);
    if (what == 1) return (laminar_code)push_batch(s->src, 2 * pair + 1, err);
    laminar_code rc = run_unfaulted(s, err);
    if (rc == LAMINAR_OK && pair % 2 == 1) rc = laminar_checkpoint(s->db, err);
    return rc;
  }
  switch (k - 3 * NBATCH / 2) {
    case 0: return laminar_source_watermark(s->src, INT64_MAX, err);
    case 1: return run_unfaulted(s, err);
    case 2: return laminar_checkpoint(s->db, err);
    default: return LAMINAR_OK;
  }
}

static void end(session* s) {
  laminar_source_close(s->src);
  laminar_close(s->db);
  s->src = NULL;
  s->db = NULL;
}

/* Fail I/O step nth for nth = first, first + stride, ... until the session
 * makes fewer steps. */
static int every_io_fails(int error, int64_t stride) {
  g_error = error;
  int64_t first = 1 + (int64_t)(lm_test_seed() % (uint64_t)stride);
  char* want = reference_output();
  CHECK(want != NULL);
  int64_t injected = 0, runs = 0;
  laminar_error err;
  for (int64_t nth = first;; nth += stride) {
    session s;
    memset(&s, 0, sizeof s);
    CHECK(lm_test_mkdtemp(s.dir, sizeof s.dir, "lm_fio_") == 0);
    lm_fault_io_set(nth, error);
    int failed_step = -1;
    for (int i = 0; i < STEPS; i++) {
      laminar_code rc = step(&s, i, &err);
      if (rc == LAMINAR_OK) continue;
      lm_fault_io_set(0, 0);
      if (rc != LAMINAR_ERR_IO || strstr(err.message, strerror(error)) == NULL) {
        fprintf(stderr, "nth=%lld step %d: code %d, want LAMINAR_ERR_IO (%s): %s\n",
                (long long)nth, i, (int)rc, strerror(error), err.message);
        end(&s);
        return 1;
      }
      failed_step = i;
      rc = step(&s, i, &err); /* the device works again: so does the call */
      if (rc != LAMINAR_OK) {
        fprintf(stderr, "nth=%lld step %d retried: %s\n", (long long)nth, i, err.message);
        end(&s);
        return 1;
      }
    }
    bool hit = failed_step >= 0 || lm_fault_io_remaining() == 0;
    lm_fault_io_set(0, 0);
    end(&s);
    /* Recovery sees exactly what was acknowledged. */
    CHECK_CODE(open_db(s.dir, "sync", &s.db, &err), LAMINAR_OK, &err);
    end(&s);
    char* got = sink_output(s.dir);
    int same = strcmp(got, want) == 0;
    if (!same)
      fprintf(stderr,
              "nth=%lld (failed at step %d): output differs\n--- got\n%s--- want\n%s",
              (long long)nth, failed_step, got, want);
    free(got);
    remove_db(s.dir);
    runs++;
    if (!same) return 1;
    if (!hit) break;
    injected++;
  }
  fprintf(stderr, "fault_io %s: runs=%lld injected=%lld lost=0 dup=0\n", strerror(error),
          (long long)runs, (long long)injected);
  free(want);
  CHECK(injected > 50 / stride);
  return 0;
}

static int test_every_io_fails_eio(void) { return every_io_fails(EIO, 1); }
static int test_every_io_fails_enospc(void) { return every_io_fails(ENOSPC, 3); }

static const lm_test_case cases[] = {
    {"every_io_fails_eio", test_every_io_fails_eio},
    {"every_io_fails_enospc", test_every_io_fails_enospc},
    {NULL, NULL},
};

int main(int argc, char** argv) { return lm_test_main(argc, argv, cases); }
#endif

/*
 * test_fault_views.c -- out of memory in the view, query, sink, EXPLAIN and
 * ${VAR} paths, and in the UNION ALL ones (binding branches, derived tables
 * and CTEs, a union's branches and reader entries, EXPLAIN, SHOW, DROP)
 * (RELIABILITY "out of memory"), the way test_fault_alloc.c does it for the
 * core session: each session below runs once per allocation it
 * makes, failing that allocation once, or from then on (the failing call
 * then repeated three times). Each failing call returns LAMINAR_ERR_NOMEM
 * and leaves nothing half-done: retried with memory back, it succeeds, and
 * what the session read equals an unfaulted run's. Operators run with the
 * countdown paused (see test_fault_alloc.c). Needs LAMINAR_FAULT_INJECTION.
 */
/* lm_ctest: TIMEOUT 300 */
#include "util/util.h"

#include "lm_test.h"
#include "lm_test_fault.h"
#include "views_util.h"

#ifndef LAMINAR_FAULT_INJECTION
int main(void) {
  return lm_test_skip(
      "built without LAMINAR_FAULT_INJECTION (scripts/test.sh step 2 has it)");
}
#else

typedef struct session {
  laminar_db* db;
  laminar_source* src;
  laminar_source* src2; /* the union session's second source */
  laminar_subscription* sub;
  char out[8192];
} session;


static laminar_code open_db(session* s, laminar_error* err) {
  laminar_config* cfg;
  laminar_code rc = laminar_config_create(&cfg);
  if (rc != LAMINAR_OK) return lm_error_set(err, rc, "config");
  rc = laminar_config_set(cfg, "var.SRC", "cl", err);
  if (rc == LAMINAR_OK) rc = laminar_config_set(cfg, "var.MIN", "0", err);
  if (rc == LAMINAR_OK) rc = laminar_open(cfg, &s->db, err);
  laminar_config_destroy(cfg);
  return rc;
}

static laminar_code push(session* s, int which, laminar_error* err) {
  kv_row a[] = {{"a", 1, 0, 2}, {"b", 2, 0, 1}, {"c", 0, 1, 1}, {"d", -4, 0, 1}};
  kv_row b[] = {{"a", 1, 0, -1}, {"b", 2, 0, -1}, {"b", 3, 0, 1}, {"zz", 9, 0, -1}};
  if (push_kv(s->src, which == 0 ? a : b, 4, 1, err) == 0) return LAMINAR_OK;
  return err->code;
}

/* Append the rows of `sql` to the session's output (only once it succeeded). */
static laminar_code record(session* s, const char* sql, laminar_error* err) {
  char text[2048];
  laminar_code rc = query_text(s->db, sql, text, sizeof text, err);
  if (rc != LAMINAR_OK) return rc;
  size_t len = strlen(s->out);
  snprintf(s->out + len, sizeof s->out - len, "%s\n", text);
  return LAMINAR_OK;
}

static laminar_code read_sub(session* s, laminar_error* err) {
  for (;;) {
    struct ArrowArray a;
    laminar_code rc = laminar_subscription_next(s->sub, 0, &a, NULL, err);
    if (rc != LAMINAR_OK || a.release == NULL) return rc;
    size_t len = strlen(s->out);
    snprintf(s->out + len, sizeof s->out - len, "batch of %lld\n", (long long)a.length);
    a.release(&a);
  }
}

static laminar_code step(session* s, int i, laminar_error* err) {
  switch (i) {
    case 0: return open_db(s, err);
    case 1:
      return laminar_execute(
          s->db, "CREATE SOURCE ${SRC} (k VARCHAR, v BIGINT, _weight BIGINT)", err);
    case 2:
      return laminar_execute(s->db,
                             "CREATE MATERIALIZED VIEW mv AS SELECT k, v FROM ${SRC} "
                             "WHERE v >= ${MIN} OR v IS NULL",
                             err);
    case 3:
      return laminar_execute(s->db, "CREATE STREAM s AS SELECT k, v * 2 AS v2 FROM mv",
                             err);
    case 4:
      return laminar_execute(s->db, "CREATE MATERIALIZED VIEW mv2 AS SELECT * FROM s",
                             err);
    case 5: return laminar_execute(s->db, "CREATE SINK feed FROM mv2", err);
    case 6: return laminar_source_open(s->db, "cl", &s->src, err);
    case 7: return laminar_subscribe(s->db, "feed", &s->sub, err);
    case 8: return push(s, 0, err);
    case 9: return lm_fault_run_unfaulted(s->db, err);
    case 10:
      return record(
          s, "SELECT k, v FROM mv ORDER BY v DESC NULLS FIRST, k LIMIT 10 OFFSET 0", err);
    case 11: return push(s, 1, err);
    case 12: return lm_fault_run_unfaulted(s->db, err);
    case 13:
      return record(s, "SELECT k, v2 FROM mv2 WHERE v2 > ${MIN} ORDER BY 2, k", err);
    case 14: return record(s, "EXPLAIN mv2", err);
    case 15:
      return record(s, "EXPLAIN SELECT k FROM mv WHERE v > 1 ORDER BY k DESC LIMIT 1",
                    err);
    case 16:
      return record(s, "EXPLAIN CREATE MATERIALIZED VIEW x AS SELECT k FROM mv", err);
    case 17: return record(s, "SHOW VIEWS", err);
    case 18: return record(s, "SHOW SINKS", err);
    case 19: return record(s, "DESCRIBE mv2", err);
    case 20: return read_sub(s, err);
    case 21: return laminar_execute(s->db, "DROP SINK feed", err);
    case 22: return laminar_execute(s->db, "DROP MATERIALIZED VIEW mv2", err);
    default: return LAMINAR_OK;
  }
}
#define NSTEPS 23

/* The union session: sources a and b (k, v), a union stream u, a view over
 * a CTE reading a and u, a view over a derived table. */
static laminar_code union_push(session* s, int which, laminar_error* err) {
  kv_row ra[] = {{"a", 1, 0, 0}, {"b", 2, 0, 0}, {"c", 0, 1, 0}};
  kv_row rb[] = {{"a", 3, 0, 0}, {"d", -4, 0, 0}, {"e", 5, 0, 0}};
  if (push_kv(which == 0 ? s->src : s->src2, which == 0 ? ra : rb, 3, 0, err) == 0)
    return LAMINAR_OK;
  return err->code;
}

static laminar_code union_step(void* arg, int i, laminar_error* err) {
  session* s = arg;
  switch (i) {
    case 0: return laminar_open(NULL, &s->db, err);
    case 1: return laminar_execute(s->db, "CREATE SOURCE a (k VARCHAR, v BIGINT)", err);
    case 2: return laminar_execute(s->db, "CREATE SOURCE b (k VARCHAR, v BIGINT)", err);
    case 3:
      return laminar_execute(s->db,
                             "CREATE STREAM u AS SELECT k, v FROM a UNION ALL SELECT k, "
                             "v * 10 FROM b WHERE v > 0",
                             err);
    case 4:
      return laminar_execute(
          s->db,
          "CREATE MATERIALIZED VIEW mv AS WITH x AS (SELECT k, v FROM a UNION ALL SELECT "
          "k, v FROM u) SELECT k, v FROM x WHERE v IS NOT NULL",
          err);
    case 5:
      return laminar_execute(s->db,
                             "CREATE MATERIALIZED VIEW mv2 AS SELECT k, v + 1 AS w FROM "
                             "(SELECT k, v FROM b) AS d",
                             err);
    case 6: return laminar_source_open(s->db, "a", &s->src, err);
    case 7: return laminar_source_open(s->db, "b", &s->src2, err);
    case 8: return laminar_subscribe(s->db, "u", &s->sub, err);
    case 9: return union_push(s, 0, err);
    case 10: return union_push(s, 1, err);
    case 11: return lm_fault_run_unfaulted(s->db, err);
    case 12: return record(s, "SELECT k, v FROM mv ORDER BY k, v", err);
    case 13: return record(s, "SELECT k, w FROM mv2 ORDER BY k", err);
    case 14: return record(s, "EXPLAIN u", err);
    case 15: return record(s, "EXPLAIN mv", err);
    case 16:
      return record(s,
                    "EXPLAIN CREATE STREAM x AS SELECT k FROM (SELECT k FROM a UNION ALL "
                    "SELECT k FROM b) WHERE k > 'a'",
                    err);
    case 17: return record(s, "SHOW STREAMS", err);
    case 18: return record(s, "SHOW VIEWS", err);
    case 19: return read_sub(s, err);
    case 20: return laminar_execute(s->db, "DROP MATERIALIZED VIEW mv", err);
    case 21: return laminar_execute(s->db, "DROP MATERIALIZED VIEW mv2", err);
    default: return LAMINAR_OK;
  }
}
#define UNION_NSTEPS 22

static bool union_reference_ok(const void* arg) {
  const char* out = ((const session*)arg)->out;
  /* mv: a's rows, and u's (a's, and b's positive ones times ten). */
  return strstr(out, "a,1;a,1;a,30;b,2;b,2;e,50") != NULL &&
         strstr(out, "union all") != NULL && strstr(out, "batch of") != NULL;
}

static void session_end(void* arg) {
  session* s = arg;
  laminar_subscription_close(s->sub);
  laminar_source_close(s->src);
  laminar_source_close(s->src2);
  laminar_close(s->db);
}

static const char* session_output(const void* arg, size_t* len) {
  const session* s = arg;
  *len = strlen(s->out);
  return s->out;
}

static laminar_code session_step(void* s, int i, laminar_error* err) {
  return step(s, i, err);
}

static bool reference_ok(const void* arg) {
  const char* out = ((const session*)arg)->out;
  return strstr(out, "materialize") != NULL && strstr(out, "b,6") != NULL;
}

static int every_allocation(bool persistent) {
  lm_fault_session f = {sizeof(session), NSTEPS,         session_step,
                        session_end,     session_output, reference_ok};
  return lm_fault_every_allocation(&f, persistent, 50);
}

static int test_every_allocation_fails_once(void) { return every_allocation(false); }
static int test_every_allocation_fails_from_then_on(void) {
  return every_allocation(true);
}

static int union_every_allocation(bool persistent) {
  lm_fault_session f = {sizeof(session), UNION_NSTEPS,   union_step,
                        session_end,     session_output, union_reference_ok};
  return lm_fault_every_allocation(&f, persistent, 50);
}

static int test_union_every_allocation_fails_once(void) {
  return union_every_allocation(false);
}
static int test_union_every_allocation_fails_from_then_on(void) {
  return union_every_allocation(true);
}

static const lm_test_case cases[] = {
    {"every_allocation_fails_once", test_every_allocation_fails_once},
    {"every_allocation_fails_from_then_on", test_every_allocation_fails_from_then_on},
    {"union_every_allocation_fails_once", test_union_every_allocation_fails_once},
    {"union_every_allocation_fails_from_then_on",
     test_union_every_allocation_fails_from_then_on},
    {NULL, NULL},
};

int main(int argc, char** argv) { return lm_test_main(argc, argv, cases); }
#endif

/*
 * test_interval.c -- one table of time units (util/interval.c): every
 * spelling of a duration means the same in a SQL INTERVAL literal, in an
 * option of a WITH (...) clause, and in a config value (laminar_config_set),
 * and a spelling one of them refuses, all refuse. White-box for the values
 * (the parsed AST and option rows), public API for acceptance.
 */
#define _XOPEN_SOURCE 700
#include "lm_test.h"
#include "lm_test_fs.h"
#include "db/options.h"
#include "sql/sql.h"
#include "util/util.h"

#include <inttypes.h>

typedef struct spelling {
  const char* text;
  int64_t ms;
} spelling;

static const spelling good[] = {
    {"100ms", 100},
    {"100 ms", 100},
    {"1 msec", 1},
    {"2 msecs", 2},
    {"1 millisecond", 1},
    {"3 milliseconds", 3},
    {"1s", 1000},
    {"1 sec", 1000},
    {"2 secs", 2000},
    {"1 second", 1000},
    {"5 seconds", 5000},
    {"10 Seconds", 10000},
    {"1m", 60000},
    {"1 min", 60000},
    {"2 mins", 120000},
    {"1 minute", 60000},
    {"2 minutes", 120000},
    {"1h", 3600000},
    {"1 hr", 3600000},
    {"2 hrs", 7200000},
    {"1 hour", 3600000},
    {"2 HOURS", 7200000},
    {"1d", 86400000},
    {"1 day", 86400000},
    {"2 days", 172800000},
    {"1h 30m", 5400000},
    {"1 hour 30 minutes", 5400000},
    {"1m30s", 90000},
    {"1.5 s", 1500},
    {"0.5 ms", 1},
    {"2.25 hours", 8100000},
    {"  10 s  ", 10000},
};

static const char* const bad[] = {"5 fortnights", "abc", "5 s x", "s", "1..5 s", "5 s 3"};

/* The INTERVAL literal and the option value of `text` as SQL parses them:
 * the watermark delay of a source and its checkpoint_interval option. */
static laminar_code sql_values(const char* text, int64_t* out_delay, int64_t* out_opt) {
  char sql[256];
  snprintf(sql, sizeof sql,
           "CREATE SOURCE t (ts BIGINT, WATERMARK FOR ts AS ts - INTERVAL '%s') "
           "WITH (checkpoint_interval = '%s')",
           text, text);
  lm_arena* arena;
  if (lm_arena_create(&arena) != LAMINAR_OK) return LAMINAR_ERR_NOMEM;
  lm_stmt** stmts;
  size_t n;
  laminar_error err;
  laminar_code rc = lm_sql_parse(arena, sql, &stmts, &n, &err);
  if (rc == LAMINAR_OK && (n != 1 || stmts[0]->noptions != 1)) rc = LAMINAR_ERR_INTERNAL;
  if (rc == LAMINAR_OK) {
    *out_delay = stmts[0]->watermark_delay_ms;
    const lm_option* row;
    lm_option_value v;
    rc = lm_option_parse_sql(LAMINAR_SCOPE_SOURCE, "t", &stmts[0]->options[0], &row, &v,
                             &err);
    if (rc == LAMINAR_OK) *out_opt = v.i;
  }
  lm_arena_destroy(arena);
  return rc;
}

/* Whether a config value and a CREATE SOURCE ... WITH option of `text` are
 * accepted through the public API. */
static bool public_accepts(const char* text, bool* out_sql) {
  laminar_config* cfg;
  laminar_error err;
  if (laminar_config_create(&cfg) != LAMINAR_OK) return false;
  bool config = laminar_config_set(cfg, "checkpoint_interval", text, &err) == LAMINAR_OK;
  laminar_config_destroy(cfg);
  laminar_db* db = NULL;
  *out_sql = false;
  char dir[256];
  if (lm_test_mkdtemp(dir, sizeof dir, "interval") != 0) return false;
  if (laminar_config_create(&cfg) == LAMINAR_OK &&
      laminar_config_set(cfg, "data_dir", dir, &err) == LAMINAR_OK &&
      laminar_config_set(cfg, "checkpoint_interval", "1 hour", &err) == LAMINAR_OK &&
      laminar_open(cfg, &db, &err) == LAMINAR_OK) {
    char sql[256];
    snprintf(sql, sizeof sql,
             "CREATE SOURCE t (ts BIGINT) WITH (checkpoint_interval = '%s')", text);
    *out_sql = laminar_execute(db, sql, &err) == LAMINAR_OK;
    laminar_close(db);
  }
  laminar_config_destroy(cfg);
  lm_test_rmtree(dir);
  return config;
}

static int test_every_spelling_the_same(void) {
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    const spelling* s = &good[i];
    int64_t util = -2, config = -2, delay = -2, opt = -2;
    EXPECT(lm_interval_parse_ms(s->text, &util));
    const lm_option* row;
    lm_option_value v;
    laminar_error err;
    if (lm_option_parse_text(LAMINAR_SCOPE_DB, "checkpoint_interval", s->text, &row, &v,
                             &err) == LAMINAR_OK) {
      config = v.i;
    }
    laminar_code rc = sql_values(s->text, &delay, &opt);
    bool sql_ok;
    bool config_ok = public_accepts(s->text, &sql_ok);
    printf("'%s': want %" PRId64 ", util %" PRId64 ", config %" PRId64
           ", INTERVAL %" PRId64 ", WITH %" PRId64 "%s%s\n",
           s->text, s->ms, util, config, delay, opt, config_ok ? "" : " (config refused)",
           sql_ok ? "" : " (WITH refused)");
    EXPECT(rc == LAMINAR_OK);
    EXPECT(util == s->ms && config == s->ms && delay == s->ms && opt == s->ms);
    EXPECT(config_ok && sql_ok);
  }
  return 0;
}

static int test_every_refusal_the_same(void) {
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    int64_t ms, delay, opt;
    bool sql_ok;
    bool util = lm_interval_parse_ms(bad[i], &ms);
    bool config = public_accepts(bad[i], &sql_ok);
    laminar_code rc = sql_values(bad[i], &delay, &opt);
    printf("'%s': util %d, config %d, WITH %d, SQL %s\n", bad[i], util, config, sql_ok,
           laminar_errstr(rc));
    EXPECT(!util && !config && !sql_ok);
    EXPECT(rc == LAMINAR_ERR_SQL_SYNTAX); /* the INTERVAL literal is refused first */
  }
  /* Options refuse what SQL takes as a value but not as a duration. */
  int64_t ms;
  EXPECT(!lm_interval_parse_ms("-1 s", &ms));
  EXPECT(lm_interval_parse_ms("none", &ms) && ms == -1);
  EXPECT(lm_interval_parse_ms("250", &ms) && ms == 250); /* bare: milliseconds */
  return 0;
}

static const lm_test_case cases[] = {
    {"every_spelling_the_same", test_every_spelling_the_same},
    {"every_refusal_the_same", test_every_refusal_the_same},
    {NULL, NULL}};

int main(int argc, char** argv) { return lm_test_main(argc, argv, cases); }

/*
 * sql_parse_fuzzer.c -- libFuzzer target for the SQL front end (src/sql):
 * any byte string must parse or fail with a 1xxx/2002 code positioned at
 * line >= 1, never crash, leak or recurse without bound.
 *
 * The body is lm_fuzz_sql_parse(), callable without libFuzzer: tests/c/
 * test_fuzz_replay.c #includes this file and replays tests/fuzz/corpora/sql_parse/
 * through it under gcc and the sanitizers. LLVMFuzzerTestOneInput is defined only
 * with -DLM_LIBFUZZER (see tests/fuzz/README.md for the clang build).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sql/sql.h"
#include "util/util.h"

/* Parse `data` (up to its first NUL) and abort() if a contract of lm_sql_parse()
 * is broken. Always returns 0 (libFuzzer's "keep going"). */
int lm_fuzz_sql_parse(const uint8_t* data, size_t size);

int lm_fuzz_sql_parse(const uint8_t* data, size_t size) {
  /* The parser takes NUL-terminated text: copy, stopping at an embedded NUL. */
  char* sql = malloc(size + 1);
  if (sql == NULL) return 0;
  if (size > 0) memcpy(sql, data, size);
  sql[size] = '\0';
  size_t len = strlen(sql);

  lm_arena* arena = NULL;
  if (lm_arena_create(&arena) != LAMINAR_OK) {
    free(sql);
    return 0;
  }
  lm_stmt** stmts = NULL;
  size_t n = 0;
  laminar_error err;
  laminar_code rc = lm_sql_parse(arena, sql, &stmts, &n, &err);
  if (rc == LAMINAR_OK) {
    for (size_t i = 0; i < n; i++) {
      if (stmts[i] == NULL || stmts[i]->line < 1 ||
          stmts[i]->text_offset + stmts[i]->text_len > len) {
        abort();
      }
    }
  } else if (rc != LAMINAR_ERR_NOMEM) {
    if (!(rc / 1000 == 1 || rc == LAMINAR_ERR_UNKNOWN_TYPE) || err.code != rc ||
        err.line < 1 || err.column < 1 || n != 0 || stmts != NULL) {
      abort();
    }
  }
  lm_arena_destroy(arena);
  free(sql);
  return 0;
}

#ifdef LM_LIBFUZZER
int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return lm_fuzz_sql_parse(data, size);
}
#endif

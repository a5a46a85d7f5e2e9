/* test_version.c -- the version macros equal the run-time functions. */
#include "laminar.h"

#include "lm_test.h"

#include <string.h>

static int test_version_macros_match_library(void) {
  CHECK(strcmp(laminar_version(), LAMINAR_VERSION) == 0);
  CHECK(laminar_version_number() == LAMINAR_VERSION_NUMBER);
  CHECK(LAMINAR_VERSION_NUMBER == LAMINAR_VERSION_MAJOR * 1000000 +
                                      LAMINAR_VERSION_MINOR * 1000 +
                                      LAMINAR_VERSION_PATCH);
  char expect[32];
  snprintf(expect, sizeof expect, "%d.%d.%d", LAMINAR_VERSION_MAJOR,
           LAMINAR_VERSION_MINOR, LAMINAR_VERSION_PATCH);
  CHECK(strcmp(expect, LAMINAR_VERSION) == 0);
  return 0;
}

int main(int argc, char** argv) {
  static const lm_test_case cases[] = {
      {"version_macros_match_library", test_version_macros_match_library},
      {NULL, NULL},
  };
  return lm_test_main(argc, argv, cases);
}

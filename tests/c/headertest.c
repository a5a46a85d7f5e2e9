/* headertest.c -- laminar.h is self-contained and clean as C17 (and, through
 * headertest.cpp, as C++17) with -Wall -Wextra -pedantic -Werror. */
#include "laminar.h"

int lm_headertest_uses_header(void);
int lm_headertest_uses_header(void) {
  laminar_error err = {0};
  return (int)err.code + LAMINAR_VERSION_NUMBER;
}

// headertest.cpp -- the same check as headertest.c, compiled as C++17.
#include "laminar.h"

int lm_headertest_cxx(void);
int lm_headertest_cxx(void) {
  laminar_error err{};
  return static_cast<int>(err.code) + LAMINAR_VERSION_NUMBER;
}

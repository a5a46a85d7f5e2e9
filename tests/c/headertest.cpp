// headertest.cpp -- headertest.c compiled as C++17 (-Wall -Wextra -pedantic
// -Werror): laminar.h must be valid C++ and its functions callable from C++.
#include "headertest.c"

/*
 * wait.c -- spin / spin_yield(n) / park (contracts in wait.h).
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L  // clock_gettime, nanosleep
#endif

#include "chan/wait.h"

#include "util/util.h"

#include <ctype.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

lm_wait lm_wait_default(void) { return (lm_wait){LM_WAIT_PARK, LM_WAIT_DEFAULT_SPINS}; }

void lm_wait_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

static const char* skip_space(const char* s) {
  while (*s == ' ' || *s == '\t') s++;
  return s;
}

/* Case-insensitive match of `word` at s; the position after it or NULL. */
static const char* match_word(const char* s, const char* word) {
  size_t n = strlen(word);
  for (size_t i = 0; i < n; i++) {
    if (tolower((unsigned char)s[i]) != word[i]) return NULL;
  }
  return s + n;
}

bool lm_wait_parse(const char* text, lm_wait* out) {
  if (text == NULL) return false;
  const char* s = skip_space(text);
  lm_wait w = lm_wait_default();
  const char* rest;
  if ((rest = match_word(s, "spin_yield")) != NULL) {
    w.kind = LM_WAIT_SPIN_YIELD;
    rest = skip_space(rest);
    if (*rest == '(') {
      rest = skip_space(rest + 1);
      if (!isdigit((unsigned char)*rest)) return false;
      char* end;
      errno = 0;
      unsigned long long n = strtoull(rest, &end, 10);
      if (errno != 0 || n > LM_WAIT_MAX_SPINS) return false;
      rest = skip_space(end);
      if (*rest != ')') return false;
      rest++;
      w.spins = (uint32_t)n;
    }
  } else if ((rest = match_word(s, "spin")) != NULL) {
    w.kind = LM_WAIT_SPIN;
  } else if ((rest = match_word(s, "park")) != NULL) {
    w.kind = LM_WAIT_PARK;
  } else {
    return false;
  }
  if (*skip_space(rest) != '\0') return false;
  *out = w;
  return true;
}

void lm_wait_format(const lm_wait* w, char* buf, size_t cap) {
  switch (w->kind) {
    case LM_WAIT_SPIN: snprintf(buf, cap, "spin"); return;
    case LM_WAIT_SPIN_YIELD: snprintf(buf, cap, "spin_yield(%u)", w->spins); return;
    case LM_WAIT_PARK: break;
  }
  snprintf(buf, cap, "park");
}

static int rank(const lm_wait* w) {
  return w->kind == LM_WAIT_SPIN ? 2 : w->kind == LM_WAIT_SPIN_YIELD ? 1 : 0;
}

lm_wait lm_wait_eager(lm_wait a, lm_wait b) {
  if (rank(&a) != rank(&b)) return rank(&a) > rank(&b) ? a : b;
  return a.spins >= b.spins ? a : b;
}

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

bool lm_wait_until(const lm_wait* how, lm_waiter* waiter, int64_t timeout_ns,
                   bool (*ready)(void*), void* arg) {
  if (ready(arg)) return true;
  if (timeout_ns == 0) return false;
  if (how->kind == LM_WAIT_PARK && waiter != NULL) {
    return lm_waiter_wait(waiter, timeout_ns, ready, arg);
  }
  int64_t deadline = INT64_MAX;
  if (timeout_ns > 0) {
    int64_t start = now_ns();
    if (timeout_ns < INT64_MAX - start) deadline = start + timeout_ns;  // else: no limit
  }
  uint64_t polls = 0;
  for (;;) {
    if (how->kind == LM_WAIT_SPIN ||
        (how->kind == LM_WAIT_SPIN_YIELD && polls < how->spins)) {
      lm_wait_cpu_relax();
    } else if (how->kind == LM_WAIT_SPIN_YIELD) {
      sched_yield();
    } else {
      struct timespec ts = {0, 50000};  // park without a waiter: short naps
      nanosleep(&ts, NULL);
    }
    polls++;
    if (ready(arg)) return true;
    // The clock is read every 64 polls on the spinning paths (it costs ~20 ns).
    if (deadline != INT64_MAX && ((polls & 63) == 0 || how->kind == LM_WAIT_PARK) &&
        now_ns() >= deadline) {
      return ready(arg);
    }
  }
}

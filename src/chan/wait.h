/*
 * wait.h -- wait strategies for a thread facing an empty or full queue (issue
 * 5): spin, spin_yield(n) and park, chosen per source (CREATE SOURCE ... WITH
 * (wait_strategy = '...')), per subscription, or as the database default.
 *
 * DESIGN
 * Who runs it: any thread that must wait for a condition another thread makes
 * true -- a producer facing a full source queue (block back-pressure), the
 * reactor facing empty sources, a consumer facing an empty subscription.
 * What it waits on: `ready(arg)`, polled; with park also an lm_waiter
 * (ring.h) that the thread making the condition true notifies.
 *   spin            poll with the CPU's pause hint; never gives up the core.
 *                   Lowest latency; burns one core while waiting.
 *   spin_yield(n)   n pause-polls, then sched_yield() between polls: other
 *                   runnable threads get the core, but an idle machine still
 *                   sees 100% of one core.
 *   park            about 100 sched_yield polls, then sleep on the waiter's
 *                   condition variable (a futex): no CPU while idle; a wake-up
 *                   costs the notifier a lock and the sleeper two syscalls.
 * What order it guarantees: none of its own; the no-lost-wakeup promise of
 * park is lm_waiter's (ring.c).
 */
#ifndef LM_CHAN_WAIT_H
#define LM_CHAN_WAIT_H

#include "chan/ring.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum lm_wait_kind {
  LM_WAIT_PARK = 0, /* default */
  LM_WAIT_SPIN = 1,
  LM_WAIT_SPIN_YIELD = 2
} lm_wait_kind;

typedef struct lm_wait {
  lm_wait_kind kind;
  uint32_t spins; /* spin_yield: pause-polls before yielding (default 100) */
} lm_wait;

#define LM_WAIT_DEFAULT_SPINS 100u
#define LM_WAIT_MAX_SPINS 100000000u

/* The default strategy (park). */
lm_wait lm_wait_default(void);

/* Parse "spin", "park", "spin_yield" or "spin_yield(n)" (n in [0, 10^8];
 * case-insensitive, spaces allowed around the parentheses). False when `text`
 * is none of those; *out unchanged then. */
bool lm_wait_parse(const char* text, lm_wait* out);

/* The canonical text ("spin", "park", "spin_yield(100)") into buf. */
void lm_wait_format(const lm_wait* w, char* buf, size_t cap);

/* The more eager of two strategies (spin > spin_yield > park; the larger n of
 * two spin_yields): what a thread serving both must do. */
lm_wait lm_wait_eager(lm_wait a, lm_wait b);

/* Wait with strategy `how` until ready(arg) is true or timeout_ns passes (-1:
 * no limit; 0: check once). `waiter` is used by park only and may be NULL for
 * the others (park with a NULL waiter sleeps in 50 us naps instead).
 * ready: as for lm_waiter_wait (cheap, non-blocking, atomic loads).
 * Returns: true when ready, false on timeout.
 * Thread-safety: any thread. */
bool lm_wait_until(const lm_wait* how, lm_waiter* waiter, int64_t timeout_ns,
                   bool (*ready)(void*), void* arg);

/* The CPU's spin-wait hint (x86 pause, arm yield; nothing elsewhere). */
void lm_wait_cpu_relax(void);

#endif /* LM_CHAN_WAIT_H */

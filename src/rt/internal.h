/*
 * internal.h -- what reactor.c and part.c (thread-per-core) share; private to
 * src/rt.
 */
#ifndef LM_RT_INTERNAL_H
#define LM_RT_INTERNAL_H

#include "rt/rt.h"

/* reactor.c: a stream's input chunk / watermark (its chain, then what it
 * delivers), on the thread driving the graph. */
/* Input chunk / watermark of stream s from its input `from` (the source or
 * stream def it reads; with one input, any value). */
laminar_code lm_rt_stream_chunk(lm_stream_def* s, const void* from,
                                const lm_chunk* chunk);
laminar_code lm_rt_stream_watermark(lm_stream_def* s, const void* from,
                                    int64_t watermark_ms);
/* Rows of one input of a union into `chain` (a stream's, or a partition's),
 * their lateness judged by that input's watermark `in_wm` (op.h
 * lm_op_window_set_late_floor). */
laminar_code lm_rt_input_chunk(lm_op* chain, int64_t in_wm, const lm_chunk* chunk);
/* Hand a built output batch of `s` to its sinks, subscribers and downstream
 * streams (borrows the caller's reference). */
laminar_code lm_rt_stream_publish(lm_stream_def* s, lm_batch* batch);
/* Account message `msg` in its source's watermark (and WAL position): the new
 * source watermark, or INT64_MIN when it did not advance. */
int64_t lm_rt_msg_advance(lm_source_def* src, const lm_msg* msg);
/* Fewest free slots of any blocking subscriber ring (UINT32_MAX: none). */
uint32_t lm_rt_min_free(const lm_graph* g);

/* Wake the parked consumers of every subscription a batch was pushed to since
 * its last notification. The publishing thread calls it at the end of each
 * unit of work (a round of messages, a merged round, a drain, a message run
 * at once) and so before it waits for anything: a consumer is never left
 * parked on a queue that holds batches while the reactor waits. */
void lm_rt_notify_subscribers(const lm_graph* g);
/* Pin the calling thread as reactor `index` (no-op unless rt->affinity). */
void lm_rt_pin_self(lm_rt* rt, lm_reactor* r);

/* Run step `step` of barrier b on this thread (timed) / mark it done and wake its requester (b is not touched after). */
void lm_rt_barrier_step(lm_barrier* b, lm_barrier_step step, int32_t part);
void lm_rt_barrier_done(lm_rt* rt, lm_barrier* b);

/* part.c */
/* Post barrier round b after the rounds in flight (waiting for a free slot);
 * partition 0 (inline: every partition) takes it at once, the merge of it
 * completes it. */
laminar_code lm_rt_post_barrier(lm_rt* rt, lm_barrier* b);
/* Merge the rounds in flight that every reactor finished (no waiting). */
laminar_code lm_rt_merge_finished(lm_rt* rt);
/* True when some stream reading `src` runs as partitions. */
bool lm_rt_source_partitioned(const lm_source_def* src);
/* Run one message of `src` as a round, inline (every partition in this
 * thread), and merge it; nothing may be in flight (the reactors are not
 * started). Consumes msg. */
laminar_code lm_rt_run_msg(lm_rt* rt, lm_source_def* src, lm_msg* msg);
/* Source src's idleness changed (in_idle of its readers set, nothing in
 * flight): its partitioned union readers and their merge recompute their
 * watermark over the active inputs as a round of one (part.c), so windows
 * the change closes are emitted now. Reactor 0 / the inline caller. */
laminar_code lm_rt_run_idleness(lm_rt* rt, lm_source_def* src);
/* Take up to a round of messages from `src` and run them through every
 * partition (all reactors) and then the merge (this thread). */
laminar_code lm_rt_run_round(lm_rt* rt, lm_source_def* src, int64_t* out_taken,
                             bool* out_blocked);
/* Wait for every round in flight and merge it (reactor 0, before a pause,
 * stop or idle wait; a no-op with nothing in flight). */
laminar_code lm_rt_drain(lm_rt* rt);
/* Worker reactors 1..N-1 (threaded runtime). */
laminar_code lm_rt_workers_start(lm_rt* rt);
void lm_rt_workers_stop(lm_rt* rt);
/* Free a reactor's scratch. */
void lm_gather_buf_free(lm_gather_buf* g);
/* Set up the partitions of keyed stream s over several inputs: each one's
 * branch chains and inputs' watermarks (from s->in_wm). After s->nin and
 * s->in_wm are set (lm_stream_def_set_inputs). */
laminar_code lm_stream_parts_set_inputs(lm_stream_def* s);
/* Free a keyed stream's partitions 1..N-1 and their pending outputs. */
void lm_stream_def_free_parts(lm_stream_def* s);
/* Free rt->reactors (workers stopped). */
void lm_rt_reactors_free(lm_rt* rt);

#endif /* LM_RT_INTERNAL_H */

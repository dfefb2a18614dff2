/*
 * tb_threads.h - the recording threads as the tracer sees them: the thread
 * table, a thread's attach and detach, the hand-over of its chunks, the
 * copies of every thread's partial chunk at exit or on a signal, and fork.
 *
 * Owns: the thread table (tracer thread ids, drop counts, announcements),
 * the records recorded and dropped in all, the hand-over of a chunk (to
 * the writer, through the `offer` function tb_setup registers), a leaving
 * thread's last records, the buffers' life cycle (tb_setup, tb_close,
 * tb_teardown) and the state of a forked child.
 *
 * Never: on the event path (the hooks in trace_buffer.h reach it only when
 * a chunk is full), and never calls the writer by name: chunks go to it
 * through the registered `offer`, so that the writer, which asks the
 * thread table for announcements and activity, stays above it and no call
 * cycle joins the two. Below it: the pool (tb_pool.h) only.
 * tb_attach, tb_detach and tb_chunk_full, which the engines and the hooks
 * call, are declared in tb_thread.h.
 */
#ifndef TMT_TB_THREADS_H
#define TMT_TB_THREADS_H

#include <stddef.h>
#include <stdint.h>

#include "tb_pool.h"
#include "tb_thread.h"

struct tf_thread_info; /* trace_file.h: a thread of the trace */

/* Sizes the chunk pool from config (TMTRACE_BUFFER, TMTRACE_MEMORY,
 * TMTRACE_PREFAULT) and opens hand-over; `cpus` are the CPUs forced
 * migrations cycle through; full chunks go to `offer` (0: taken; -1: the
 * queue is sealed, the records count as dropped). */
int tb_setup(uint64_t tsc_hz, const int *cpus, int ncpus, int (*offer)(struct tb_chunk *c));
/* Ends hand-over: later full chunks are dropped (counted), detach frees. */
void tb_close(void);
/* Frees the pool and the thread table (after the writer stopped). Chunks of
 * threads still attached are left alone: they may still be written into. */
void tb_teardown(void);
/* Hands a copy of every attached thread's partial chunk to `emit` (signal
 * and exit paths: the threads are not stopped, so a record being written at
 * that instant may be torn). */
void tb_snapshot_all(void (*emit)(struct tb_chunk *c));
/* Hands the thread's current chunk over (if it holds anything) and takes a
 * fresh one (e.g. when its in-run samples are full). */
void tb_hand_over(struct tb_thread *t);

/* fork(): take and release the pool's and the thread table's locks around
 * it (tracer.c registers them with pthread_atfork). */
void tb_fork_prepare(void);
void tb_fork_release(void);
/* fork() child: the locks are released, hand-over is closed and the
 * parent's threads and counts are forgotten (the pool's memory is the
 * parent's copy and stays unused). tb_fork_thread then re-attaches the
 * forking thread to the child's own trace (`traced`) or leaves it without a
 * buffer: its first event (or any thread's) then says once on stderr that
 * the child records nothing, and recording stops. */
void tb_fork_child(void);
void tb_fork_thread(struct tb_thread *t, int traced);

/* Attached threads that recorded an event since the previous call (the
 * writer's: it calls it once per pass). */
size_t tb_threads_active(void);
/* Thread table: those attached since the last call, or all with drop counts. */
size_t tb_threads_new(struct tf_thread_info *out, size_t max);
size_t tb_threads_all(struct tf_thread_info *out, size_t max);
uint64_t tb_total_recorded(void);
uint64_t tb_total_dropped(void);
/* Stamps raised above the previous one of their thread on the same CPU. */
uint64_t tb_total_raised(void);
/* Attempts recorded shed at level all (tb_thread.h, `shedding`). */
uint64_t tb_total_shed(void);

#endif

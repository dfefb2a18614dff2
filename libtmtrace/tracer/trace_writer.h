/*
 * trace_writer.h - the writer thread: the one place where full trace chunks
 * become bytes in the trace file while (stream mode) or after (memory mode)
 * the program runs.
 *
 * Owns: the lock-free queue of chunks (tb_pool.h) waiting to be written,
 * the writer thread, where it runs and when it defers, the per-thread
 * counts of records written and lost, the writer's error record and its
 * throughput figures (records, CPU time, file bytes). Never blocks a
 * recording thread (submitting is one compare-and-swap plus a semaphore
 * post), and never runs the pool's policy: it asks the pool through
 * tb_pool_service. Above the pool and the thread table, which reach it
 * only through the `offer` registered with tb_setup.
 */
#ifndef TMT_TRACE_WRITER_H
#define TMT_TRACE_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "tb_pool.h"
#include "trace_file.h"

/* Starts the writer on an open trace file. `mode` is enum config_mode;
 * `on_signal` runs on the writer thread after it wrote everything queued when
 * a fatal signal asked for a flush (the tracer writes the tail there). */
/* `failed`: NULL, or why the trace could not be created; then the writer
 * starts failed and counts every chunk as lost. */
int tw_start(struct tf_writer *w, int mode, void (*on_signal)(void), const char *failed);
/* The process's CPUs (before tw_start): where the writer may run
 * (TMTRACE_WRITER_CPU). -1 with an error naming the variable when it names
 * a CPU outside them. */
int tw_set_cpus(const int *cpus, int n);
/* Queues a chunk (any thread); returns -1 once the queue is sealed (the
 * chunk was not taken: the caller keeps it and counts its records lost). */
int tw_offer(struct tb_chunk *c);
#ifdef TMT_TEST_HOOKS
/* Test builds only: the stream writer's deferral rule (TMTRACE_WRITER_DEFER)
 * on its inputs: 1 = leave the `queued` bytes queued for now. `limit` is
 * the backlog allowed, `pool_full` whether the pool is short of chunks and
 * may not map more (tb_pool_service's advice), `cpus_busy` whether every
 * CPU ran a traced thread lately. */
int tw_test_defer_rule(uint64_t queued, uint64_t limit, int pool_full, int cpus_busy);
/* Test builds only: the chunks the writer mapped as it gave written ones
 * back while the share bound (beyond the deferral's room, the refill
 * thread's work alone: then 0). */
uint64_t tw_test_mapped_in_share(void);
/* Test builds only: whether TMTRACE_CODEC=auto compresses its `nth` chunk
 * (counted from 1) when the last chunks cost `none` stored as encoded and
 * `packed` compressed per record (0: not measured yet). */
int tw_test_auto_pick(uint64_t none, uint64_t packed, unsigned nth);
/* Test builds only: TMTRACE_CODEC=auto's next cost figure from the last
 * one `was` (0: none yet) and a chunk's `now`. */
uint64_t tw_test_auto_next(uint64_t was, uint64_t now);
#endif
/* Writes everything queued and seals the queue (tail of the trace, on the
 * writer thread or after it stopped). */
void tw_seal(void);
/* Writes everything queued, stops and joins the writer. Idempotent. */
void tw_stop(void);
/* From a signal handler: wakes the writer to flush and waits for it while it
 * makes progress (gives up after `stall_ms` ms without a chunk written).
 * Async-signal-safe. Returns 1 if the flush finished. */
int tw_signal_flush(int stall_ms);
/* Writes a chunk now on the calling thread (tail of the trace). */
void tw_write_now(struct tb_chunk *c);
/* Writes META_SITES for sites registered since the last call. */
void tw_write_new_sites(void);
/* fork(): prepare waits until the writer is between two chunk writes (at
 * most one chunk write or one refill of the buffer reserve) and keeps it
 * there; parent lets it go on; child (which has no writer thread) forgets
 * the writer and its queue. */
void tw_fork_prepare(void);
void tw_fork_parent(void);
void tw_fork_child(void);
/* Per-thread figures for the END chunk. */
uint64_t tw_thread_written(uint32_t thread);
uint64_t tw_thread_lost(uint32_t thread);
/* Writer failures: chunks not written, records lost; message of the first. */
uint64_t tw_errors(void);
uint64_t tw_lost(void);
uint64_t tw_chunks_written(void);
const char *tw_first_error(void);
/* Counts a failed write of the tail (tracer's own writes). */
void tw_note_error(size_t records, uint32_t thread);
/* After the tracer's own writes of the tail, before it closes the file:
 * writes what the file still stages (TMTRACE_FILE_IO=direct) and publishes
 * its final size. A failure counts as the writer's, and the chunks whose
 * bytes were staged count as lost, not written. From here on the writer
 * no longer touches the file. Only on the thread that writes. */
void tw_file_done(void);
/* Publishes the file's size for tw_bytes(). tw_write_now does it after each
 * chunk; the tracer calls it after its own writes of the tail, before it
 * closes the file. Only on the thread that writes. */
void tw_note_bytes(void);
/* Throughput figures of the current run, readable from any thread: records
 * written into the file (by the writer, and by the tail at shutdown), CPU
 * time of the writer thread (taken after each chunk it writes and at the end
 * of each drain, so it lags the records by at most one chunk; the tail's
 * time is its caller's, not counted), and bytes of the file (header
 * included). Reset by tw_start, kept after tw_stop. */
uint64_t tw_records_written(void);
uint64_t tw_cpu_ns(void);
uint64_t tw_bytes(void);

#endif

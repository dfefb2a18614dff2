/*
 * tracer.h - the tracer's life cycle: what happens at init, at shutdown, at
 * exit and on a fatal signal.
 *
 * Owns: opening the trace file, the pre-run and post-run sampling phases, the
 * writer, the flush at exit and on a signal that ends the process (SIGTERM,
 * SIGINT, SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT: the END chunk names it),
 * the metadata and END chunks, and the line on stderr at exit when events
 * were dropped.
 * Called by the runtime (api.c) only; never on the event path.
 */
#ifndef TMT_TRACER_H
#define TMT_TRACER_H

#include <stdint.h>

/* After config_load(). With TMTRACE_EVENTS=off it does nothing. Returns 0 or
 * -1 (error_get()). */
int tracer_init(void);
/* Idempotent. Post-run sampling, final flush, END chunk, close. 0 or -1. */
int tracer_shutdown(void);
struct tb_thread;
/* fork() child, after the tracer's own child handler: the forking thread's
 * buffer joins the child's trace (TMTRACE_FILE with %p) or stops recording. */
void tracer_fork_thread(struct tb_thread *t);
/* Counters for tmt_stats. */
uint64_t tracer_events_recorded(void);
uint64_t tracer_events_dropped(void);
/* The writer's figures for tmt_stats: records in the file, the writer
 * thread's CPU time (ns), bytes of the file. They stay readable after
 * shutdown until the next init. */
uint64_t tracer_writer_events(void);
uint64_t tracer_writer_cpu_ns(void);
uint64_t tracer_trace_bytes(void);
/* Bytes of trace buffers the tracer holds mapped and resident (the most of
 * the run, also after shutdown), and buffers a recording thread had to map
 * itself because the pre-faulted reserve ran dry. */
uint64_t tracer_buffer_bytes(void);
uint64_t tracer_buffer_inline_maps(void);
/* Of those, the buffers mapped a second or more after init: the reserve
 * fell behind in steady state. */
uint64_t tracer_buffer_late_maps(void);
/* The tracer's own CPU time (ns): init (pre-run sampling), the writer
 * thread, and shutdown (the last drain and the trace's tail) once it ran. */
uint64_t tracer_cpu_ns(void);
/* Stamps raised to keep a thread's stamps on one CPU increasing. */
uint64_t tracer_stamps_raised(void);
/* Attempts recorded as at level tx at level all while buffers ran short
 * (shed: their reads and writes not recorded). */
uint64_t tracer_attempts_shed(void);

#endif

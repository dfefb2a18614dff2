/*
 * skew.h - injected clock faults (TMTRACE_SKEW) and forced migrations
 * (TMTRACE_MIGRATE) for validating clock correction on a machine whose TSCs
 * are in sync.
 *
 * Owns: the parser of TMTRACE_SKEW, the one exact function that turns a
 * true TSC read on a CPU into the value unsynchronised hardware would have
 * shown, and the move of a thread to the next CPU of the run's set. Never
 * reads the clock but to learn the CPU a migration starts from, and never
 * allocates: the parameters live in fixed tables set once (skew_init,
 * skew_migrate_cpus) before any thread records.
 *
 * The function, for a CPU with offset O ns, drift D ppm, optional change to
 * D2 ppm at T ms (hz = the trace header's TSC frequency, base = the TSC at
 * init, dt = truth - base in ticks, signed):
 *
 *   injected = truth + round(O * hz / 1e9) + round(drift(dt))
 *   drift(dt) = dt * D / 1e6                           (no change, or dt < Tt)
 *             = Tt * D / 1e6 + (dt - Tt) * D2 / 1e6    (dt >= Tt, Tt = T * hz / 1e3)
 */
#ifndef TMT_SKEW_H
#define TMT_SKEW_H

#include <stddef.h>
#include <stdint.h>

struct tf_skew; /* trace_file.h: one CPU's injected faults, as the trace records them */

#define SKEW_MAX_CPUS 1024

/* Parses TMTRACE_SKEW text ("" = no injection) into at most `max` entries.
 * Returns the number of entries, or -1 with an error naming TMTRACE_SKEW and
 * the bad part. */
int skew_parse(const char *text, struct tf_skew *out, size_t max);

/* Installs the parameters (n = 0 turns injection off). */
void skew_init(const struct tf_skew *s, size_t n, uint64_t tsc_hz, uint64_t base_tsc);

/* True when some CPU has a fault injected. */
int skew_active(void);

/* The injected TSC for a true TSC read on `cpu` (identity when not listed). */
uint64_t skew_apply(uint64_t truth, unsigned cpu);
/* The same for a stamp whose TSC_AUX is `aux` (the event path, injecting). */
uint64_t skew_stamp(uint64_t truth, uint32_t aux);

/* The CPUs forced migrations cycle through (at most CPU_SETSIZE kept). */
void skew_migrate_cpus(const int *cpus, int n);
/* Moves the calling thread to the CPU after the one it runs on, in that
 * set (nothing with fewer than two CPUs; a refused move is ignored). */
void skew_migrate(void);

#endif

/*
 * skew.h - injected clock faults (TMTRACE_SKEW) for validating clock
 * correction on a machine whose TSCs are in sync.
 *
 * Owns: the parser of TMTRACE_SKEW and the one exact function that turns a
 * true TSC read on a CPU into the value unsynchronised hardware would have
 * shown. Never reads the clock itself and never allocates: the parameters
 * live in a fixed table set once by skew_init() before any thread records.
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

#include "trace_file.h"

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

#endif

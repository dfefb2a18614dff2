/*
 * tracer.c - the tracer's life cycle (see tracer.h).
 * PLACEHOLDER until the tracer lands: tracing is off.
 */
#include "tracer.h"

int tracer_init(void) { return 0; }
int tracer_shutdown(void) { return 0; }
uint64_t tracer_events_recorded(void) { return 0; }
uint64_t tracer_events_dropped(void) { return 0; }

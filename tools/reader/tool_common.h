/*
 * tool_common.h - what every offline tool (tmdump, tmsync, tmcheck,
 * tmexport) shares on the command line: one-line error reports with exit
 * code 2, number parsing with range checks, output files that never
 * overwrite the input and appear atomically, and the --version text.
 *
 * Owns: the tool's name for messages, the output-file discipline and the
 * --jobs option (its default: the CPUs available).
 * Never: calls exit() on its own (the tools return the codes it gives),
 * prints more than one line per error.
 */
#ifndef TMT_TOOL_COMMON_H
#define TMT_TOOL_COMMON_H

#include <stdint.h>
#include <stdio.h>

#include "error.h"

/* Exit codes of every tool: 0 success; 1 the tool's negative verdict
 * (tmcheck: violations found); 2 bad usage or input, after one line on
 * stderr; 3 success, but --salvage skipped damaged chunks (said on stderr);
 * 4 (tmsync, tmcheck) success, but the trace is incomplete: no END chunk,
 * an END that names a terminating signal, dropped events or chunks the
 * writer failed to write (said on stderr, trace_complete.h). Where several
 * hold, the first of 2, 1, 4, 3 is the exit code. */
enum tool_exit { TOOL_OK = 0, TOOL_FAIL = 1, TOOL_USAGE = 2, TOOL_SALVAGED = 3, TOOL_INCOMPLETE = 4 };

/* Remembers the tool's name ("tmdump") for every message below. */
void tool_init(const char *name);

/* Prints "TOOL: message" as one line on stderr; returns TOOL_USAGE (2) so
 * that main() can `return tool_error(...)`. Newlines in the message are
 * replaced by spaces so that a report is always one line. */
int tool_error(const char *fmt, ...) ERROR_PRINTF(1, 2);
/* Same, with the library's last message (error_get()) as the text. */
int tool_error_lib(void);
/* For getopt_long with opterr = 0: reports the option at argv[optind - 1]
 * (or optopt) as unknown or missing its value. Returns TOOL_USAGE. */
int tool_bad_option(char **argv);
/* After option parsing: the single TRACE operand every tool takes, or NULL
 * with "missing TRACE" / "one TRACE expected" already reported. */
const char *tool_trace_operand(int argc, char **argv);

/* Strict number parsing: the whole string must be a number in range
 * (integers: decimal, or hexadecimal with 0x).
 * `what` names the option in the message ("--thread"). 0 on success, else
 * the message is already printed and -1 is returned. */
int tool_parse_u64(const char *what, const char *s, uint64_t min, uint64_t max, uint64_t *out);
int tool_parse_double(const char *what, const char *s, double min, double max, double *out);

/* The threads a tool decodes with by default: the CPUs this process may
 * run on (at least 1). */
unsigned tool_jobs_default(void);
/* --jobs N, N in 1..TI_MAX_JOBS: 0, else -1 (the message printed). */
int tool_parse_jobs(const char *s, unsigned *jobs);
#define TOOL_JOBS_HELP "decoding threads (default: the CPUs available); the output is the same for every N"

/* 1 if a and b name the same existing file (same device and inode, or the
 * same path string), else 0. */
int tool_same_file(const char *a, const char *b);

/* An output file written to PATH.tmp.XXXXXX in the same directory and
 * renamed into place by tool_out_commit(); "-" means stdout (no rename). */
struct tool_out {
    FILE *f;
    char *path;
    char *tmp;    /* NULL for stdout */
};
/* Refuses (message printed, -1) when `path` is the same file as `input`
 * (input may be NULL). */
int tool_out_open(struct tool_out *o, const char *path, const char *input);
/* Flushes, checks for write errors, renames into place. 0 or -1 (printed;
 * the temporary is removed). */
int tool_out_commit(struct tool_out *o);
/* Closes and removes the temporary. Safe to call twice or after commit. */
void tool_out_abandon(struct tool_out *o);

/* Prints "TOOL (libtmtrace X.Y, trace format N)" and a newline. */
void tool_print_version(FILE *f);

#endif

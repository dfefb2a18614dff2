/*
 * config.c - the table of TMTRACE_* variables and their parsing (see config.h).
 * Never called on the event path; reads the environment only in config_load().
 */
#include "config.h"

#include <ctype.h>
#include <sched.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "skew.h"
#include "trace_file.h"
#include "tmtrace.h"

extern char **environ;

struct config config;

enum var_kind { VAR_INT, VAR_SIZE, VAR_CHOICE, VAR_STRING };

struct config_var {
    const char *name;
    enum var_kind kind;
    size_t offset;           /* into struct config */
    int64_t min, max;        /* VAR_INT, VAR_SIZE */
    const char *choices[5];  /* VAR_CHOICE: index = stored value */
    const char *def;         /* default, as text */
    const char *help;
    int (*check)(const char *text); /* VAR_STRING: extra validation, 0 or -1 */
};

/* TMTRACE_SKEW is checked when it is read, so a typo fails tmt_init() with
 * the variable's name instead of surfacing later. */
static int check_skew(const char *text)
{
    static struct tf_skew tmp[SKEW_MAX_CPUS];
    return skew_parse(text, tmp, SKEW_MAX_CPUS) < 0 ? -1 : 0;
}

#define OFF(f) offsetof(struct config, f)

static const struct config_var vars[] = {
    { "TMTRACE_EVENTS", VAR_CHOICE, OFF(events), 0, 0, { "off", "tx", "all" }, "tx",
      "what is recorded: tx = start/commit/abort, each update commit's write set (its words and byte masks, "
      "copied after its locks are released) and, for an abort found at a read, the program's code address of "
      "that read (linked statically or shared), "
      "which is what explains every software abort (class, culprit, word) at about the cost of the two clock "
      "reads per attempt; all = also every read and write (value, stamp per TMTRACE_STAMP), except that while "
      "buffers run short under TMTRACE_WRITER_SHARE (below 100) a thread records its attempts as at tx (shed: "
      "their STARTs say so, the tools count them) rather than drop records; off = nothing", NULL },
    { "TMTRACE_DETAIL", VAR_INT, OFF(detail), 0, 65535, { 0 }, "0",
      "at TMTRACE_EVENTS=tx: one attempt in N, chosen at random per thread, is recorded with its reads and "
      "writes as at all (its START says so); the tools scale what they estimate from these samples; 0 = none",
      NULL },
    { "TMTRACE_ABORT_STACK", VAR_INT, OFF(abort_stack), 0, 16, { 0 }, "0",
      "at tx and all: after an abort found at a read (the one with the program's code address of that read), "
      "the return addresses of up to N of the program's frames above it, taken by a stack walk on the abort "
      "only; tmcheck lists each site's most frequent stacks; 0 = none", NULL },
    { "TMTRACE_MODE", VAR_CHOICE, OFF(mode), 0, 0, { "stream", "memory" }, "stream",
      "stream = chunks are written while the program runs (bounded memory); memory = kept in memory and written at exit", NULL },
    { "TMTRACE_FILE", VAR_STRING, OFF(file), 0, 0, { 0 }, "trace.bin",
      "path of the trace file; %p stands for the process id, so that a forked child writes a trace of its own "
      "(without %p a child records nothing and says so once on stderr)", NULL },
    { "TMTRACE_FILE_IO", VAR_CHOICE, OFF(file_io), 0, 0, { "direct", "cached" }, "direct",
      "how the writer writes the trace file: direct = with O_DIRECT where the file system takes it (whole 4 KiB "
      "blocks each time 512 KiB gather, the tail at the end), so that the trace's bytes bypass the page cache and "
      "the writer's CPU does not copy them into it; cached = through the page cache (a file system without "
      "O_DIRECT, a device or a pipe are always written so)", NULL },
    { "TMTRACE_BUFFER", VAR_SIZE, OFF(buffer_bytes), 4096, 1LL << 30, { 0 }, "1M",
      "per-thread buffer (one chunk) in bytes; units k, M, G", NULL },
    { "TMTRACE_MEMORY", VAR_SIZE, OFF(memory_bytes), 1LL << 16, 1LL << 40, { 0 }, "2G",
      "most memory held by full buffers waiting for the writer; beyond it events are dropped and counted", NULL },
    { "TMTRACE_SAMPLE_MS", VAR_INT, OFF(sample_ms), 1, 60000, { 0 }, "10",
      "length of each pre-run and post-run clock sampling phase, in ms (one thread spins on every CPU for it, at "
      "init and again at exit)", NULL },
    { "TMTRACE_RESAMPLE_MS", VAR_INT, OFF(resample_ms), 0, 60000, { 0 }, "10",
      "least time between two in-run clock samples of a thread, in ms; 0 disables them", NULL },
    { "TMTRACE_CLOCK", VAR_CHOICE, OFF(clock), 0, 0, { "monotonic", "monotonic_raw" }, "monotonic",
      "reference clock of the sampling phases", NULL },
    { "TMTRACE_SKEW", VAR_STRING, OFF(skew), 0, 0, { 0 }, "",
      "fault injection: CPU:OFFSET_NS:DRIFT_PPM[@T_MS:DRIFT2_PPM][,...] applied to every TSC read", check_skew },
    { "TMTRACE_MIGRATE", VAR_INT, OFF(migrate_ms), 0, 60000, { 0 }, "0",
      "fault injection: every traced thread moves to another CPU every MS ms; 0 disables", NULL },
    { "TMTRACE_CODEC", VAR_CHOICE, OFF(codec), 0, 0, { "lz4", "zlib", "none", "auto" }, "auto",
      "compression of event chunks (lz4 falls back to zlib when built without LZ4); auto = lz4 or none, whichever "
      "cost the writer less CPU per record lately (stored as encoded, nearly always, when the file is written "
      "with O_DIRECT: see TMTRACE_FILE_IO); lz4 for the smallest trace", NULL },
    { "TMTRACE_CODEC_LEVEL", VAR_INT, OFF(codec_level), 1, 9, { 0 }, "1",
      "zlib compression level", NULL },
    { "TMTRACE_HTM", VAR_CHOICE, OFF(htm), 0, 0, { "auto", "emulate", "off" }, "auto",
      "hardware fast path: auto = RTM when the CPU has it, emulate = emulated hardware transactions, off = STM only", NULL },
    { "TMTRACE_HTM_RETRIES", VAR_INT, OFF(htm_retries), 0, 1000, { 0 }, "5",
      "hardware attempts before falling back to the STM", NULL },
    { "TMTRACE_HTM_EMU_ABORT", VAR_INT, OFF(htm_emu_abort_pct), 0, 100, { 0 }, "10",
      "emulation: percent of hardware attempts that abort with a conflict (status CONFLICT|RETRY)", NULL },
    { "TMTRACE_HTM_EMU_CAPACITY", VAR_INT, OFF(htm_emu_capacity), 1, 1 << 24, { 0 }, "4096",
      "emulation: accesses an attempt may make before it aborts with CAPACITY", NULL },
    { "TMTRACE_HTM_EMU_EXPLICIT", VAR_INT, OFF(htm_emu_explicit_pct), 0, 100, { 0 }, "2",
      "emulation: percent of hardware attempts that abort with an unexplained status (no RETRY bit)", NULL },
    { "TMTRACE_STRIPES", VAR_INT, OFF(stripes_log2), TF_STRIPES_LOG2_MIN, TF_STRIPES_LOG2_MAX, { 0 }, "20",
      "log2 of the number of versioned write-lock stripes", NULL },
    { "TMTRACE_STRIPE_SHIFT", VAR_INT, OFF(stripe_shift), TF_STRIPE_SHIFT_MIN, TF_STRIPE_SHIFT_MAX, { 0 }, "4",
      "log2 of the bytes one stripe covers, the granularity at which conflicts are detected: 3 = one stripe "
      "per 8-byte word, 4 = per 16 bytes (malloc's alignment, so which words share a stripe does not depend "
      "on where a block was placed), 5 = per 32 bytes (fewer stripe misses, more false conflicts, which "
      "come and go with the heap's layout)", NULL },
    { "TMTRACE_SEED", VAR_INT, OFF(seed), 0, INT64_MAX, { 0 }, "0",
      "seed of the runtime's random numbers (backoff, emulation); 0 = from the clock", NULL },
    { "TMTRACE_SERIAL_AFTER", VAR_INT, OFF(serial_after), 1, 1000000, { 0 }, "16",
      "contention management: after this many conflict aborts of one transaction its next attempt runs in serial "
      "(irrevocable) mode, alone, and commits; bounds the attempts of any transaction", NULL },
    { "TMTRACE_STAMP", VAR_CHOICE, OFF(stamp), 0, 0, { "each", "boundary" }, "boundary",
      "each = every record reads the clock (an unordered rdtsc bracketed by rdpid; rdtscp on a CPU without "
      "rdpid); boundary = only start/commit/abort/fallback read it and reads/writes repeat the previous record's "
      "stamp", NULL },
    { "TMTRACE_PREFAULT", VAR_SIZE, OFF(prefault_bytes), 0, 1LL << 40, { 0 }, "0",
      "bytes of trace buffers mapped with their pages populated at tmt_init, so no event takes a page fault; "
      "0 = 256M at every level (at most TMTRACE_MEMORY/4), populated after tmt_init's clock sampling: what is not "
      "populated before the run is populated during it; after tmt_init the refill thread keeps a reserve of free "
      "buffers ahead of demand (4 per traced thread, more at a high recording rate, at most TMTRACE_MEMORY/8), "
      "within TMTRACE_WRITER_SHARE while every CPU is busy; never more than TMTRACE_MEMORY", NULL },
    { "TMTRACE_WRITER_CPU", VAR_INT, OFF(writer_cpu), -1, CPU_SETSIZE - 1, { 0 }, "-1",
      "CPU the writer thread is pinned to (it must be in the affinity mask); -1 = a CPU of the mask that no "
      "traced thread used lately, the whole mask when every one is busy", NULL },
    { "TMTRACE_WRITER_NICE", VAR_INT, OFF(writer_nice), 0, 19, { 0 }, "5",
      "nice value of the writer thread: how much it yields to the program's threads on a busy CPU (higher = "
      "yields more; a writer that falls behind holds more memory and its buffers must be mapped anew)", NULL },
    { "TMTRACE_WRITER_DEFER", VAR_SIZE, OFF(writer_defer), 0, 1LL << 40, { 0 }, "256M",
      "stream mode: while every CPU the process may use runs a traced thread, the writer leaves full buffers "
      "queued (they stay in memory) instead of taking CPU time from the program to encode them, while the "
      "refill thread maps fresh buffers for the threads, as long as the buffers queued and those mapped beyond "
      "TMTRACE_PREFAULT each stay below this many bytes (at most TMTRACE_MEMORY/4); past that it writes, within "
      "TMTRACE_WRITER_SHARE, and leaves the mapping of fresh buffers to the refill thread; it writes them "
      "100 ms after the CPUs stop being all busy, or at the end; 0 = write at once", NULL },
    { "TMTRACE_WRITER_SHARE", VAR_INT, OFF(writer_share), 1, 100, { 0 }, "10",
      "stream mode: percent of one CPU each of the tracer's two threads may take (over 100 ms windows) while "
      "every CPU the process may use runs a traced thread: the writer, past which it sleeps and full buffers stay "
      "queued in memory, up to TMTRACE_MEMORY, and the refill thread, past which it maps no more buffers; the "
      "program's threads never map one then, and a thread that finds none free drops its events (counted) "
      "rather than take the program's CPU; at TMTRACE_EVENTS=all the threads first shed their attempts' reads and "
      "writes (see TMTRACE_EVENTS) once the free buffers fall below half of the reserve, until it is whole again "
      "(a fast program at TMTRACE_EVENTS=all may need a higher share, a larger "
      "TMTRACE_PREFAULT, TMTRACE_STAMP=boundary or a spare CPU for a whole trace); 100 = no cap and no shedding", NULL },
};

#define NVARS (sizeof vars / sizeof vars[0])

int config_parse_size(const char *text, int64_t *out)
{
    if (text == NULL || *text == '\0')
        return -1;
    errno = 0;
    char *end;
    long long v = strtoll(text, &end, 10);
    if (errno != 0 || end == text || v < 0)
        return -1;
    int64_t mult = 1;
    switch (*end) {
    case '\0': break;
    case 'k': case 'K': mult = 1LL << 10; end++; break;
    case 'm': case 'M': mult = 1LL << 20; end++; break;
    case 'g': case 'G': mult = 1LL << 30; end++; break;
    default: return -1;
    }
    if (*end == 'B' || *end == 'b' || (*end == 'i' && (end[1] == 'B' || end[1] == 'b')))
        end += (*end == 'i') ? 2 : 1;
    if (*end != '\0' || v > INT64_MAX / mult)
        return -1;
    *out = (int64_t)v * mult;
    return 0;
}

static int parse_int(const char *text, int64_t *out)
{
    if (text == NULL || *text == '\0')
        return -1;
    errno = 0;
    char *end;
    long long v = strtoll(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0')
        return -1;
    *out = v;
    return 0;
}

static int set_var(const struct config_var *v, const char *text, int is_default)
{
    char *base = (char *)&config;
    int64_t n;
    switch (v->kind) {
    case VAR_INT:
    case VAR_SIZE:
        if ((v->kind == VAR_INT ? parse_int(text, &n) : config_parse_size(text, &n)) != 0)
            return error_set("%s=%s: not a %s", v->name, text,
                             v->kind == VAR_INT ? "whole number" : "size (e.g. 4096, 64k, 4M, 1G)");
        if (n < v->min || n > v->max)
            return error_set("%s=%s: out of range [%lld, %lld]", v->name, text,
                             (long long)v->min, (long long)v->max);
        if (v->offset == OFF(codec_level))
            *(int *)(base + v->offset) = (int)n;
        else
            *(int64_t *)(base + v->offset) = n;
        return 0;
    case VAR_CHOICE:
        for (int i = 0; i < 5 && v->choices[i]; i++) {
            if (strcmp(text, v->choices[i]) == 0) {
                *(int *)(base + v->offset) = i;
                return 0;
            }
        }
        {
            char list[128] = "";
            for (int i = 0; i < 5 && v->choices[i]; i++) {
                strncat(list, i ? "|" : "", sizeof list - strlen(list) - 1);
                strncat(list, v->choices[i], sizeof list - strlen(list) - 1);
            }
            return error_set("%s=%s: expected one of %s", v->name, text, list);
        }
    case VAR_STRING:
        if (!is_default && v->offset == OFF(file) && *text == '\0')
            return error_set("%s is empty: expected a file path", v->name);
        if (!is_default && v->check != NULL && v->check(text) != 0)
            return -1;
        *(const char **)(base + v->offset) = text;
        return 0;
    }
    return -1;
}

void config_reset(void)
{
    for (size_t i = 0; i < NVARS; i++)
        (void)set_var(&vars[i], vars[i].def, 1);
}

/* Before the library's other constructors (the first priority a program
 * may use): libtmtrace-itm's starts the runtime, which must find the
 * defaults in place and not see them reset after it read the environment. */
__attribute__((constructor(101))) static void config_defaults(void) { config_reset(); }

static const char *env_get(const char *name, void *ctx)
{
    (void)ctx;
    return getenv(name);
}

int config_load_from(const char *(*get)(const char *name, void *ctx), void *ctx, char **env_names)
{
    config_reset();
    /* A misspelt variable would otherwise be ignored without a word. */
    for (char **e = env_names; e && *e; e++) {
        if (strncmp(*e, "TMTRACE_", 8) != 0)
            continue;
        size_t len = strcspn(*e, "=");
        int known = 0;
        for (size_t i = 0; i < NVARS && !known; i++)
            known = strlen(vars[i].name) == len && strncmp(vars[i].name, *e, len) == 0;
        if (!known) {
            config_reset();
            return error_set("%.*s: unknown variable (see tmt_env_help or docs/environment.md)",
                             (int)len, *e);
        }
    }
    for (size_t i = 0; i < NVARS; i++) {
        const char *text = get(vars[i].name, ctx);
        if (text != NULL && set_var(&vars[i], text, 0) != 0) {
            config_reset();
            return -1;
        }
    }
    /* A measuring build traces nothing. One that stamps in its untraced
     * paths (clock.h) would carry their cost twice in a trace; a padded one
     * (tx_life.c, tx_pad) is slower by design, so its trace would explain a
     * program that is not the user's. */
    const char *measuring = NULL, *does = NULL;
#if defined(TMT_CLOCK_FLOOR) && TMT_CLOCK_FLOOR
    measuring = TMT_CLOCK_FLOOR >= 2 ? "-Dclock_floor=all" : "-Dclock_floor=tx";
    does = "reads the clock";
#elif defined(TMT_ATTEMPT_PAD) && TMT_ATTEMPT_PAD
    measuring = TMT_ATTEMPT_PAD == 1 ? "-Dattempt_pad=outside" : "-Dattempt_pad=inside";
    does = "spins in every attempt";
#endif
    if (measuring != NULL && config.events != CONFIG_EVENTS_OFF) {
        int events = config.events;
        config_reset();
        return error_set("TMTRACE_EVENTS=%s: this library is a measuring build (%s) that %s and records nothing; "
                         "set TMTRACE_EVENTS=off",
                         events == CONFIG_EVENTS_TX ? "tx" : "all", measuring, does);
    }
    return 0;
}

int config_load(void) { return config_load_from(env_get, NULL, environ); }

/* A Markdown table cell: '|' is escaped (GitHub's tables split on it even
 * inside code spans). */
static void md_cell(FILE *out, const char *pre, const char *text, const char *post)
{
    fputs(pre, out);
    for (const char *p = text; *p; p++) {
        if (*p == '|')
            fputc('\\', out);
        fputc(*p, out);
    }
    fputs(post, out);
}

void config_print_help(FILE *out, int markdown)
{
    if (markdown) {
        fputs("| variable | values | default | meaning |\n|---|---|---|---|\n", out);
    }
    for (size_t i = 0; i < NVARS; i++) {
        const struct config_var *v = &vars[i];
        char values[128];
        switch (v->kind) {
        case VAR_INT:
            snprintf(values, sizeof values, "%lld..%lld", (long long)v->min, (long long)v->max);
            break;
        case VAR_SIZE:
            snprintf(values, sizeof values, "size %lld..%lld bytes", (long long)v->min, (long long)v->max);
            break;
        case VAR_CHOICE:
            values[0] = '\0';
            for (int c = 0; c < 5 && v->choices[c]; c++) {
                strncat(values, c ? "|" : "", sizeof values - strlen(values) - 1);
                strncat(values, v->choices[c], sizeof values - strlen(values) - 1);
            }
            break;
        case VAR_STRING:
            snprintf(values, sizeof values, "text");
            break;
        }
        if (markdown) {
            md_cell(out, "| `", v->name, "` ");
            md_cell(out, "| ", values, " ");
            md_cell(out, "| `", v->def, "` ");
            md_cell(out, "| ", v->help, " |\n");
        } else
            fprintf(out, "  %-26s %s (default: %s)\n      %s\n", v->name, values,
                    *v->def ? v->def : "\"\"", v->help);
    }
}

TMT_API void tmt_env_help(FILE *out) { config_print_help(out, 0); }

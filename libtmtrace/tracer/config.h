/*
 * config.h - the runtime's configuration, read once from the TMTRACE_*
 * environment variables.
 *
 * Owns: the one table of variables (name, kind, bounds, default, help) in
 * config.c, the parsed values in `config`, and the help text generated from
 * that table. Never reads the environment after config_load(); a value out of
 * bounds or not understood is an error naming the variable, never a silent
 * default.
 */
#ifndef TMT_CONFIG_H
#define TMT_CONFIG_H

#include <stdint.h>
#include <stdio.h>

enum config_events { CONFIG_EVENTS_OFF = 0, CONFIG_EVENTS_TX = 1, CONFIG_EVENTS_ALL = 2 };
enum config_mode { CONFIG_MODE_STREAM = 0, CONFIG_MODE_MEMORY = 1 };
enum config_clock { CONFIG_CLOCK_MONOTONIC = 0, CONFIG_CLOCK_MONOTONIC_RAW = 1 };
enum config_htm { CONFIG_HTM_AUTO = 0, CONFIG_HTM_EMULATE = 1, CONFIG_HTM_OFF = 2 };
enum config_codec { CONFIG_CODEC_LZ4 = 0, CONFIG_CODEC_ZLIB = 1, CONFIG_CODEC_NONE = 2, CONFIG_CODEC_AUTO = 3 };
enum config_stamp { CONFIG_STAMP_EACH = 0, CONFIG_STAMP_BOUNDARY = 1 };
enum config_file_io { CONFIG_FILE_IO_DIRECT = 0, CONFIG_FILE_IO_CACHED = 1 };

struct config {
    int events;              /* enum config_events   TMTRACE_EVENTS */
    int mode;                /* enum config_mode     TMTRACE_MODE */
    const char *file;        /* TMTRACE_FILE */
    int file_io;             /* enum config_file_io  TMTRACE_FILE_IO */
    int64_t buffer_bytes;    /* TMTRACE_BUFFER: bytes per thread chunk */
    int64_t memory_bytes;    /* TMTRACE_MEMORY: cap on chunks held by the writer */
    int64_t sample_ms;       /* TMTRACE_SAMPLE_MS */
    int64_t resample_ms;     /* TMTRACE_RESAMPLE_MS, 0 = off */
    int clock;               /* enum config_clock    TMTRACE_CLOCK */
    const char *skew;        /* TMTRACE_SKEW, "" = none (parsed by skew.c) */
    int64_t migrate_ms;      /* TMTRACE_MIGRATE, 0 = off */
    int codec;               /* enum config_codec    TMTRACE_CODEC */
    int codec_level;         /* TMTRACE_CODEC_LEVEL */
    int htm;                 /* enum config_htm      TMTRACE_HTM */
    int64_t htm_retries;     /* TMTRACE_HTM_RETRIES */
    int64_t htm_emu_abort_pct;  /* TMTRACE_HTM_EMU_ABORT */
    int64_t htm_emu_capacity;   /* TMTRACE_HTM_EMU_CAPACITY */
    int64_t htm_emu_explicit_pct; /* TMTRACE_HTM_EMU_EXPLICIT */
    int64_t stripes_log2;    /* TMTRACE_STRIPES */
    int64_t stripe_shift;    /* TMTRACE_STRIPE_SHIFT: log2 of the bytes one stripe covers */
    int64_t seed;            /* TMTRACE_SEED, 0 = from the clock */
    int stamp;               /* enum config_stamp    TMTRACE_STAMP */
    int64_t prefault_bytes;  /* TMTRACE_PREFAULT, 0 = automatic */
    int64_t writer_cpu;      /* TMTRACE_WRITER_CPU, -1 = automatic */
    int64_t serial_after;    /* TMTRACE_SERIAL_AFTER: conflict aborts before a serial attempt */
    int64_t writer_nice;     /* TMTRACE_WRITER_NICE */
    int64_t writer_defer;    /* TMTRACE_WRITER_DEFER, bytes; 0 = never defer */
    int64_t writer_share;    /* TMTRACE_WRITER_SHARE, percent of one CPU while all are busy */
    int64_t detail;          /* TMTRACE_DETAIL: 1 attempt in N recorded as at all; 0 = none */
    int64_t abort_stack;     /* TMTRACE_ABORT_STACK: caller frames recorded after an ABORT_PC; 0 = none */
};

/* The values in force; defaults until config_load() succeeds. */
extern struct config config;

/* Reads every TMTRACE_* variable from the environment. Returns 0, or -1 with
 * the first bad variable named in error_get(). On error `config` keeps its
 * defaults. Also rejects TMTRACE_* names that are not in the table. */
int config_load(void);
/* Same, from a getenv-like function (for tests and fuzzing). */
int config_load_from(const char *(*get)(const char *name, void *ctx), void *ctx,
                     char **env_names /* NULL-terminated, may be NULL */);
/* Restores the defaults. */
void config_reset(void);

/* Parses "4M", "512k", "1G", "4096" into bytes. Returns 0 or -1. */
int config_parse_size(const char *text, int64_t *out);

/* Help: plain text (for --help) or a markdown table (docs/environment.md). */
void config_print_help(FILE *out, int markdown);

#endif

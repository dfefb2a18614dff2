/*
 * fuzz_env.c - libFuzzer target for the environment parsers: the TMTRACE_*
 * table (config_load_from in config.c), sizes (config_parse_size) and the
 * clock fault list (skew_parse).
 *
 * Owns: decoding a byte string into a set of environment entries, each a
 * known TMTRACE_* name (chosen by a byte) or an arbitrary TMTRACE_ name,
 * with an arbitrary value, and asserting the table's promise: no crash; a
 * load either succeeds with every value inside its documented range or
 * fails with a message and the defaults back in force; a size that parses
 * is never negative; a fault list that parses has at most the room given.
 * Never: reads the real environment or prints.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "error.h"
#include "skew.h"
#include "trace_file.h"

#define FUZZ_MAX_ENTRIES 32

static const char *const fuzz_names[] = {
    "TMTRACE_BUFFER", "TMTRACE_CLOCK", "TMTRACE_CODEC", "TMTRACE_CODEC_LEVEL", "TMTRACE_EVENTS",
    "TMTRACE_FILE", "TMTRACE_HTM", "TMTRACE_HTM_EMU_ABORT", "TMTRACE_HTM_EMU_CAPACITY",
    "TMTRACE_HTM_EMU_EXPLICIT", "TMTRACE_HTM_RETRIES", "TMTRACE_MEMORY", "TMTRACE_MIGRATE", "TMTRACE_MODE",
    "TMTRACE_RESAMPLE_MS", "TMTRACE_SAMPLE_MS", "TMTRACE_SEED", "TMTRACE_SKEW", "TMTRACE_STAMP",
    "TMTRACE_STRIPES", "TMTRACE_STRIPE_SHIFT", "TMTRACE_DETAIL",
};
#define FUZZ_NNAMES (sizeof fuzz_names / sizeof fuzz_names[0])

struct fuzz_env {
    size_t n;
    char *entry[FUZZ_MAX_ENTRIES + 1]; /* "NAME=VALUE", NULL-terminated */
};

static const char *fuzz_get(const char *name, void *ctx)
{
    const struct fuzz_env *e = ctx;
    size_t len = strlen(name);
    const char *found = NULL;
    for (size_t i = 0; i < e->n; i++)  /* the last one wins, as with putenv */
        if (strncmp(e->entry[i], name, len) == 0 && e->entry[i][len] == '=')
            found = e->entry[i] + len + 1;
    return found;
}

static void fuzz_config_sane(void)
{
    if (config.events < CONFIG_EVENTS_OFF || config.events > CONFIG_EVENTS_ALL ||
        config.mode < CONFIG_MODE_STREAM || config.mode > CONFIG_MODE_MEMORY ||
        config.clock < CONFIG_CLOCK_MONOTONIC || config.clock > CONFIG_CLOCK_MONOTONIC_RAW ||
        config.htm < CONFIG_HTM_AUTO || config.htm > CONFIG_HTM_OFF || config.codec < CONFIG_CODEC_LZ4 ||
        config.codec > CONFIG_CODEC_AUTO)
        abort();
    if (config.buffer_bytes <= 0 || config.memory_bytes < 0 || config.sample_ms < 0 || config.resample_ms < 0 ||
        config.migrate_ms < 0 || config.htm_retries < 0 || config.htm_emu_abort_pct < 0 ||
        config.htm_emu_abort_pct > 100 || config.htm_emu_explicit_pct < 0 || config.htm_emu_explicit_pct > 100 ||
        config.stripes_log2 < 1 || config.stripes_log2 > 40 || config.stripe_shift < 3 || config.stripe_shift > 12 ||
        config.abort_stack < 0 || config.abort_stack > 16)
        abort();
    if (!config.file || !config.skew)
        abort();
    /* a fault list the loader accepted must parse again */
    static struct tf_skew sk[SKEW_MAX_CPUS];
    if (skew_parse(config.skew, sk, SKEW_MAX_CPUS) < 0)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_env env = { 0 };
    const uint8_t *p = data, *end = data + size;
    while (p < end && env.n < FUZZ_MAX_ENTRIES) {
        const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
        const uint8_t *stop = nl ? nl : end;
        size_t len = (size_t)(stop - p);
        char *e;
        if (len && p[0] < 0x80) {
            /* a known name, the rest is its value */
            const char *name = fuzz_names[p[0] % FUZZ_NNAMES];
            size_t nl_len = strlen(name);
            e = malloc(nl_len + 1 + len);
            if (!e)
                abort();
            memcpy(e, name, nl_len);
            e[nl_len] = '=';
            memcpy(e + nl_len + 1, p + 1, len - 1);
            e[nl_len + len] = '\0';
        } else {
            /* an arbitrary TMTRACE_ name: "TMTRACE_" + bytes (up to '=') */
            e = malloc(8 + len + 2);
            if (!e)
                abort();
            memcpy(e, "TMTRACE_", 8);
            memcpy(e + 8, p + (len ? 1 : 0), len ? len - 1 : 0);
            e[8 + (len ? len - 1 : 0)] = '\0';
            if (!strchr(e, '='))
                strcat(e, "=");
        }
        env.entry[env.n++] = e;
        p = nl ? nl + 1 : end;
    }
    env.entry[env.n] = NULL;

    if (config_load_from(fuzz_get, &env, env.entry) == 0) {
        fuzz_config_sane();
    } else {
        const char *msg = error_get();
        if (!msg || !*msg)
            abort(); /* a refusal always says why */
        fuzz_config_sane(); /* and leaves the defaults */
    }
    for (size_t i = 0; i < env.n; i++) {
        const char *value = strchr(env.entry[i], '=');
        value = value ? value + 1 : env.entry[i];
        int64_t bytes;
        if (config_parse_size(value, &bytes) == 0 && bytes < 0)
            abort();
        static struct tf_skew sk[4];
        int ns = skew_parse(value, sk, 4);
        if (ns > 4)
            abort();
    }
    config_reset();
    for (size_t i = 0; i < env.n; i++)
        free(env.entry[i]);
    return 0;
}

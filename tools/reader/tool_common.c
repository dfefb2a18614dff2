/*
 * tool_common.c - command-line helpers shared by the offline tools (see
 * tool_common.h). Must never exit() or print more than one line per error:
 * scripts parse the tools' stderr.
 */
#include "tool_common.h"

#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tmtrace.h"
#include "trace_file.h"
#include "trace_index.h"

static const char *tool_progname = "tool";

void tool_init(const char *name)
{
    if (name && *name) {
        const char *slash = strrchr(name, '/');
        tool_progname = slash ? slash + 1 : name;
    }
}

/* Decimal, or hexadecimal with 0x; never octal: "010" means ten. */
static int tool_base(const char *s)
{
    const char *p = s + (*s == '-' || *s == '+');
    return (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) ? 16 : 10;
}

/* One line, always: a message from deeper down may carry a newline. */
static void tool_put_line(const char *msg)
{
    char line[1024];
    size_t i = 0;
    for (; msg[i] && i < sizeof line - 1; i++)
        line[i] = (msg[i] == '\n' || msg[i] == '\r') ? ' ' : msg[i];
    line[i] = '\0';
    fflush(stdout);
    fprintf(stderr, "%s: %s\n", tool_progname, line);
}

int tool_error(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    tool_put_line(msg);
    return TOOL_USAGE;
}

int tool_error_lib(void)
{
    const char *m = error_get();
    tool_put_line(m && *m ? m : "unknown error");
    return TOOL_USAGE;
}

int tool_bad_option(char **argv)
{
    const char *arg = (optind > 0) ? argv[optind - 1] : NULL;
    /* A long option is best named as typed; a short one by getopt's optopt,
     * since "-xv" bundles several letters in one argument. */
    if (arg && strncmp(arg, "--", 2) == 0) {
        size_t len = strcspn(arg, "=");
        return tool_error("bad option '%.*s' or missing value (try --help)", (int)len, arg);
    }
    if (optopt)
        return tool_error("bad option '-%c' or missing value (try --help)", optopt);
    return tool_error("bad option '%s' (try --help)", arg ? arg : "?");
}

const char *tool_trace_operand(int argc, char **argv)
{
    if (optind >= argc) {
        tool_error("missing TRACE (try --help)");
        return NULL;
    }
    if (optind != argc - 1) {
        tool_error("%s: one TRACE expected, got %d operands (try --help)", argv[optind + 1], argc - optind);
        return NULL;
    }
    return argv[optind];
}

int tool_parse_u64(const char *what, const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
    char *end;
    errno = 0;
    if (!s || !*s || *s == '-' || *s == ' ')
        return tool_error("%s: '%s' is not a non-negative integer", what, s ? s : ""), -1;
    unsigned long long v = strtoull(s, &end, tool_base(s));
    if (*end != '\0')
        return tool_error("%s: '%s' is not a non-negative integer", what, s), -1;
    if (errno == ERANGE || v < min || v > max)
        return tool_error("%s: %s is out of range [%llu, %llu]", what, s,
                          (unsigned long long)min, (unsigned long long)max), -1;
    *out = v;
    return 0;
}

int tool_parse_double(const char *what, const char *s, double min, double max, double *out)
{
    char *end;
    errno = 0;
    if (!s || !*s || *s == ' ')
        return tool_error("%s: '%s' is not a number", what, s ? s : ""), -1;
    double v = strtod(s, &end);
    if (*end != '\0' || !isfinite(v))
        return tool_error("%s: '%s' is not a finite number", what, s), -1;
    if (errno == ERANGE || v < min || v > max)
        return tool_error("%s: %s is out of range [%g, %g]", what, s, min, max), -1;
    *out = v;
    return 0;
}

int tool_same_file(const char *a, const char *b)
{
    if (!a || !b)
        return 0;
    if (strcmp(a, b) == 0)
        return 1;
    struct stat sa, sb;
    if (stat(a, &sa) != 0 || stat(b, &sb) != 0)
        return 0;
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

int tool_out_open(struct tool_out *o, const char *path, const char *input)
{
    memset(o, 0, sizeof *o);
    if (!path || !*path)
        return tool_error("no output file given"), -1;
    if (strcmp(path, "-") == 0) {
        o->f = stdout;
        return 0;
    }
    if (tool_same_file(path, input))
        return tool_error("%s: refusing to overwrite the input file", path), -1;
    size_t n = strlen(path);
    o->path = strdup(path);
    o->tmp = malloc(n + sizeof ".tmp.XXXXXX");
    if (!o->path || !o->tmp) {
        tool_out_abandon(o);
        return tool_error("%s: out of memory", path), -1;
    }
    memcpy(o->tmp, path, n);
    memcpy(o->tmp + n, ".tmp.XXXXXX", sizeof ".tmp.XXXXXX");
    int fd = mkstemp(o->tmp);
    if (fd < 0) {
        int e = errno;
        free(o->tmp);
        o->tmp = NULL;
        tool_out_abandon(o);
        return tool_error("%s: cannot create: %s", path, strerror(e)), -1;
    }
    /* mkstemp creates 0600; an output file should get the usual mode. */
    mode_t um = umask(0);
    umask(um);
    if (fchmod(fd, 0666 & ~um) != 0) {
        /* Not fatal: the file is still the user's. */
    }
    o->f = fdopen(fd, "w");
    if (!o->f) {
        close(fd);
        tool_out_abandon(o);
        return tool_error("%s: cannot open: %s", path, strerror(errno)), -1;
    }
    return 0;
}

int tool_out_commit(struct tool_out *o)
{
    if (!o->f)
        return tool_error("%s: output is not open", o->path ? o->path : "-"), -1;
    if (!o->tmp) { /* stdout */
        int bad = fflush(o->f) != 0 || ferror(o->f);
        o->f = NULL;
        return bad ? (tool_error("-: write error on standard output"), -1) : 0;
    }
    int bad = fflush(o->f) != 0 || ferror(o->f);
    int e = errno;
    if (fclose(o->f) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    o->f = NULL;
    if (!bad && rename(o->tmp, o->path) != 0) {
        bad = 1;
        e = errno;
    }
    if (bad) {
        tool_error("%s: cannot write: %s", o->path, strerror(e));
        tool_out_abandon(o);
        return -1;
    }
    free(o->tmp);
    free(o->path);
    o->tmp = o->path = NULL;
    return 0;
}

void tool_out_abandon(struct tool_out *o)
{
    if (o->f && o->f != stdout)
        fclose(o->f);
    o->f = NULL;
    if (o->tmp) {
        unlink(o->tmp);
        free(o->tmp);
    }
    free(o->path);
    o->tmp = o->path = NULL;
}

void tool_print_version(FILE *f)
{
    fprintf(f, "%s (libtmtrace %d.%d, trace format %d)\n", tool_progname, TMT_VERSION_MAJOR,
            TMT_VERSION_MINOR, TF_VERSION);
}

unsigned tool_jobs_default(void)
{
    cpu_set_t set;
    int n = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
    if (n < 1)
        n = 1;
    return (unsigned)n < TI_MAX_JOBS ? (unsigned)n : TI_MAX_JOBS;
}

int tool_parse_jobs(const char *s, unsigned *jobs)
{
    uint64_t v;
    if (tool_parse_u64("--jobs", s, 1, TI_MAX_JOBS, &v) < 0)
        return -1;
    *jobs = (unsigned)v;
    return 0;
}

/*
 * error.c - the calling thread's last error message (see error.h).
 * Must never allocate: it is used on paths where malloc just failed.
 */
#include "error.h"

#include <stdio.h>
#include <string.h>

#include "tmtrace.h"

static __thread char error_msg[512] __attribute__((tls_model("initial-exec")));

int error_setv(const char *fmt, va_list ap)
{
    vsnprintf(error_msg, sizeof error_msg, fmt, ap);
    return -1;
}

int error_set(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    error_setv(fmt, ap);
    va_end(ap);
    return -1;
}

int error_set_errno(int errnum, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    error_setv(fmt, ap);
    va_end(ap);
    size_t n = strlen(error_msg);
    if (n < sizeof error_msg)
        snprintf(error_msg + n, sizeof error_msg - n, ": %s", strerror(errnum));
    return -1;
}

const char *error_get(void) { return error_msg; }

TMT_API const char *tmt_error(void) { return error_msg; }

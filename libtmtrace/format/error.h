/*
 * error.h - the calling thread's last error message.
 *
 * Owns: one thread-local message buffer behind tmt_error(). Library code
 * reports failure by returning -1 (or NULL) after calling error_set(); it
 * never prints on its own and never calls exit().
 */
#ifndef TMT_ERROR_H
#define TMT_ERROR_H

#include <stdarg.h>

#if defined(__GNUC__)
#define ERROR_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define ERROR_PRINTF(a, b)
#endif

/* Sets the message and returns -1, so that callers can `return error_set(...)`. */
int error_set(const char *fmt, ...) ERROR_PRINTF(1, 2);
int error_setv(const char *fmt, va_list ap);
/* Like error_set, with ": strerror(errnum)" appended. */
int error_set_errno(int errnum, const char *fmt, ...) ERROR_PRINTF(2, 3);
const char *error_get(void);

#endif

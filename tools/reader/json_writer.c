/*
 * json_writer.c - the one JSON writer of the tools and tmbench (see the
 * header for the rules).
 *
 * Owns: the separator state of one document and the escaping of strings.
 * Never: allocates, or writes anything the caller did not ask for.
 */
#include "json_writer.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>

void jw_init(struct jw *w, FILE *f)
{
    *w = (struct jw){ .f = f };
}

/* Before a value or an opening bracket: the comma, the line break. */
static void before_value(struct jw *w)
{
    if (w->after_key) {
        w->after_key = 0;
        return;
    }
    if (w->nonempty[w->depth])
        fputc(',', w->f);
    if (w->newline) {
        fputc('\n', w->f);
        w->newline = 0;
    }
    w->nonempty[w->depth] = 1;
}

static void push(struct jw *w, char c)
{
    before_value(w);
    fputc(c, w->f);
    if (w->depth + 1 < JW_MAX_DEPTH)
        w->depth++;
    w->nonempty[w->depth] = 0;
}

static void pop(struct jw *w, char c)
{
    if (w->newline) {
        fputc('\n', w->f);
        w->newline = 0;
    }
    fputc(c, w->f);
    if (w->depth > 0)
        w->depth--;
}

void jw_object(struct jw *w) { push(w, '{'); }
void jw_object_end(struct jw *w) { pop(w, '}'); }
void jw_array(struct jw *w) { push(w, '['); }
void jw_array_end(struct jw *w) { pop(w, ']'); }
void jw_newline(struct jw *w) { w->newline = 1; }

void jw_key(struct jw *w, const char *key)
{
    before_value(w);
    fputc('"', w->f);
    jw_escape(w->f, key);
    fputs("\":", w->f);
    w->after_key = 1;
}

/* Length of the valid UTF-8 sequence at p (2..4), or 0. */
static int utf8_len(const unsigned char *p)
{
    unsigned c = p[0];
    unsigned lo = 0x80, hi = 0xbf;
    int n;
    if (c >= 0xc2 && c <= 0xdf)
        n = 2;
    else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        if (c == 0xe0)
            lo = 0xa0;
        else if (c == 0xed)
            hi = 0x9f;     /* no surrogates */
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        if (c == 0xf0)
            lo = 0x90;
        else if (c == 0xf4)
            hi = 0x8f;     /* nothing past U+10FFFF */
    } else
        return 0;
    if (p[1] < lo || p[1] > hi)
        return 0;
    for (int i = 2; i < n; i++)
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    return n;
}

void jw_escape(FILE *f, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        unsigned c = *p;
        if (c == '"' || c == '\\') {
            fputc('\\', f);
            fputc((int)c, f);
        } else if (c == '\n') {
            fputs("\\n", f);
        } else if (c == '\t') {
            fputs("\\t", f);
        } else if (c < 0x20 || c == 0x7f) {
            fprintf(f, "\\u%04x", c);
        } else if (c >= 0x80) {
            int n = utf8_len(p);
            if (!n) {
                fprintf(f, "\\u%04x", c);
                p++;
                continue;
            }
            fwrite(p, 1, (size_t)n, f);
            p += n;
            continue;
        } else {
            fputc((int)c, f);
        }
        p++;
    }
}

void jw_str(struct jw *w, const char *s)
{
    before_value(w);
    fputc('"', w->f);
    jw_escape(w->f, s);
    fputc('"', w->f);
}

void jw_u64(struct jw *w, uint64_t v)
{
    before_value(w);
    fprintf(w->f, "%" PRIu64, v);
}

void jw_i64(struct jw *w, int64_t v)
{
    before_value(w);
    fprintf(w->f, "%" PRId64, v);
}

void jw_num(struct jw *w, double v, int decimals)
{
    before_value(w);
    if (isfinite(v))
        fprintf(w->f, "%.*f", decimals, v);
    else
        fputs("null", w->f);
}

void jw_g(struct jw *w, double v)
{
    before_value(w);
    if (isfinite(v))
        fprintf(w->f, "%g", v);
    else
        fputs("null", w->f);
}

void jw_bool(struct jw *w, int v)
{
    before_value(w);
    fputs(v ? "true" : "false", w->f);
}

void jw_null(struct jw *w)
{
    before_value(w);
    fputs("null", w->f);
}

void jw_fmt(struct jw *w, const char *fmt, ...)
{
    before_value(w);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(w->f, fmt, ap);
    va_end(ap);
}

void jw_kstr(struct jw *w, const char *key, const char *s) { jw_key(w, key); jw_str(w, s); }
void jw_ku64(struct jw *w, const char *key, uint64_t v) { jw_key(w, key); jw_u64(w, v); }
void jw_ki64(struct jw *w, const char *key, int64_t v) { jw_key(w, key); jw_i64(w, v); }
void jw_knum(struct jw *w, const char *key, double v, int decimals) { jw_key(w, key); jw_num(w, v, decimals); }
void jw_kbool(struct jw *w, const char *key, int v) { jw_key(w, key); jw_bool(w, v); }
void jw_knull(struct jw *w, const char *key) { jw_key(w, key); jw_null(w); }

/*
 * json_writer.h - the one JSON writer of the tools and tmbench.
 *
 * Owns: JSON text on a stdio stream: objects, arrays, keys, strings
 * (escaped), integers, fixed-point numbers, booleans, null; the commas
 * between members and elements; optional line breaks between elements.
 * Strings: '"' and '\' are escaped, control characters and DEL become
 * \u00XX, valid UTF-8 passes through, and a byte that is not part of a valid
 * UTF-8 sequence becomes \u00XX (its Latin-1 reading), so any C string
 * (a path, a command line, a label) gives valid JSON.
 * Never: buffers the document (every call writes through), checks that the
 * caller's nesting is balanced beyond JW_MAX_DEPTH, or depends on
 * libtmtrace (tmbench's builds for other runtimes use it too).
 */
#ifndef TMT_JSON_WRITER_H
#define TMT_JSON_WRITER_H

#include <stdint.h>
#include <stdio.h>

#define JW_MAX_DEPTH 32

struct jw {
    FILE *f;
    int depth;
    int after_key;                 /* a key was written: its value follows, no comma */
    int newline;                   /* the next element or closing bracket starts a line */
    uint8_t nonempty[JW_MAX_DEPTH]; /* per level: an element was written (a comma is due) */
};

void jw_init(struct jw *w, FILE *f);

void jw_object(struct jw *w);     /* { */
void jw_object_end(struct jw *w); /* } */
void jw_array(struct jw *w);      /* [ */
void jw_array_end(struct jw *w);  /* ] */
/* The member name of the next value (inside an object). */
void jw_key(struct jw *w, const char *key);
/* The next element, or the closing bracket, starts on a new line. */
void jw_newline(struct jw *w);

void jw_str(struct jw *w, const char *s);
void jw_u64(struct jw *w, uint64_t v);
void jw_i64(struct jw *w, int64_t v);
/* A number with `decimals` digits after the point; null if not finite. */
void jw_num(struct jw *w, double v, int decimals);
/* A number in the shortest %g form; null if not finite. */
void jw_g(struct jw *w, double v);
void jw_bool(struct jw *w, int v);
void jw_null(struct jw *w);
/* A number the caller formatted (printf-style); it must be a JSON number. */
void jw_fmt(struct jw *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Members: key and value in one call. */
void jw_kstr(struct jw *w, const char *key, const char *s);
void jw_ku64(struct jw *w, const char *key, uint64_t v);
void jw_ki64(struct jw *w, const char *key, int64_t v);
void jw_knum(struct jw *w, const char *key, double v, int decimals);
void jw_kbool(struct jw *w, const char *key, int v);
void jw_knull(struct jw *w, const char *key);

/* The body of a JSON string for `s` (no quotes), by the rules above. */
void jw_escape(FILE *f, const char *s);

#endif

/*
 * tool_doc.c - a tool's --help text and man page from one struct tool_doc
 * (see the header).
 *
 * Owns: the two layouts and troff quoting.
 * Never: changes the words: both forms carry the same text.
 */
#include "tool_doc.h"

#include <ctype.h>
#include <string.h>

#include "tmtrace.h"

#define HELP_FLAGS_WIDTH 20   /* options column of --help */

/* Calls fn(line, len) for each '\n'-separated line of text. */
static void each_line(const char *text, void (*fn)(FILE *, const char *, size_t, const void *), FILE *f,
                      const void *arg)
{
    const char *p = text;
    while (*p) {
        const char *e = strchr(p, '\n');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        fn(f, p, n, arg);
        p += n + (e != NULL);
    }
}

/* ---- --help ------------------------------------------------------------ */

static void help_line(FILE *f, const char *s, size_t n, const void *prefix)
{
    fprintf(f, "%s%.*s\n", (const char *)prefix, (int)n, s);
}

void tool_doc_help(FILE *f, const struct tool_doc *d)
{
    const char *nl = strchr(d->synopsis, '\n');
    size_t first = nl ? (size_t)(nl - d->synopsis) : strlen(d->synopsis);
    fprintf(f, "usage: %.*s\n", (int)first, d->synopsis);
    if (nl)
        each_line(nl + 1, help_line, f, "       ");
    fprintf(f, "%s: %s.\n\n", d->name, d->purpose);
    each_line(d->description, help_line, f, "");
    fputs("\noptions:\n", f);
    for (const struct tool_option *o = d->options; o->flags; o++) {
        const char *h = o->help, *e = strchr(h, '\n');
        size_t n = e ? (size_t)(e - h) : strlen(h);
        if (strlen(o->flags) < HELP_FLAGS_WIDTH - 1)
            fprintf(f, "  %-*s%.*s\n", HELP_FLAGS_WIDTH, o->flags, (int)n, h);
        else
            fprintf(f, "  %s\n  %-*s%.*s\n", o->flags, HELP_FLAGS_WIDTH, "", (int)n, h);
        if (e)
            each_line(e + 1, help_line, f, "                      ");
    }
    fputs("\nexit status:\n", f);
    each_line(d->exit_status, help_line, f, "  ");
}

/* ---- man page ------------------------------------------------------------- */

/* Text with troff's specials quoted: backslash, a leading '.' or '\'',
 * and '-' (so options copy as ASCII). */
static void man_text(FILE *f, const char *s, size_t n)
{
    if (n && (s[0] == '.' || s[0] == '\''))
        fputs("\\&", f);
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\\')
            fputs("\\e", f);
        else if (s[i] == '-')
            fputs("\\-", f);
        else
            fputc(s[i], f);
    }
}

static void man_line(FILE *f, const char *s, size_t n, const void *arg)
{
    (void)arg;
    man_text(f, s, n);
    fputc('\n', f);
}

/* Description: paragraphs fill; lines starting with two spaces stay as
 * they are (no fill, indented). */
static void man_description(FILE *f, const char *text)
{
    int verbatim = 0;
    const char *p = text;
    while (*p) {
        const char *e = strchr(p, '\n');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        int indented = n >= 2 && p[0] == ' ' && p[1] == ' ';
        if (indented != verbatim) {
            fputs(indented ? ".RS\n.nf\n" : ".fi\n.RE\n", f);
            verbatim = indented;
        }
        if (n == 0 && !verbatim)
            fputs(".PP\n", f);
        else if (indented)
            man_line(f, p + 2, n - 2, NULL);
        else
            man_line(f, p, n, NULL);
        p += n + (e != NULL);
    }
    if (verbatim)
        fputs(".fi\n.RE\n", f);
}

/* An option's help: each line of --help stays a line of its own (.br
 * between them), so that a list of values does not run into one
 * filled paragraph. */
static void man_option_help(FILE *f, const char *help)
{
    const char *p = help;
    for (int first = 1; *p; first = 0) {
        const char *e = strchr(p, '\n');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (!first)
            fputs(".br\n", f);
        man_line(f, p, n, NULL);
        p += n + (e != NULL);
    }
}

void tool_doc_man(FILE *f, const struct tool_doc *d)
{
    char upper[32];
    size_t k = 0;
    for (; d->name[k] && k + 1 < sizeof upper; k++)
        upper[k] = (char)toupper((unsigned char)d->name[k]);
    upper[k] = '\0';
    fprintf(f, ".TH %s 1 \"\" \"libtmtrace %d.%d\" \"libtmtrace tools\"\n", upper, TMT_VERSION_MAJOR,
            TMT_VERSION_MINOR);
    fputs(".SH NAME\n", f);
    man_text(f, d->name, strlen(d->name));
    fputs(" \\- ", f);
    man_line(f, d->purpose, strlen(d->purpose), NULL);
    fputs(".SH SYNOPSIS\n.nf\n", f);
    each_line(d->synopsis, man_line, f, NULL);
    fputs(".fi\n.SH DESCRIPTION\n", f);
    man_description(f, d->description);
    fputs(".SH OPTIONS\n", f);
    for (const struct tool_option *o = d->options; o->flags; o++) {
        fputs(".TP\n.B ", f);
        man_line(f, o->flags, strlen(o->flags), NULL);
        man_option_help(f, o->help);
    }
    fputs(".SH EXIT STATUS\n.nf\n", f);
    each_line(d->exit_status, man_line, f, NULL);
    fputs(".fi\n.SH SEE ALSO\n", f);
    static const char *const all[] = { "tmdump", "tmsync", "tmcheck", "tmexport", "tmplot" };
    int first = 1;
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (strcmp(all[i], d->name) != 0) {
            fprintf(f, "%s\\fB%s\\fR(1)", first ? "" : ", ", all[i]);
            first = 0;
        }
    fputs("; the documents in share/doc/libtmtrace under the installation prefix (json.md: the JSON keys)\n", f);
}

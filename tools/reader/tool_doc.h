/*
 * tool_doc.h - one source for a tool's --help text and its man page.
 *
 * Owns: the layout of both forms of a tool's documentation: the --help text
 * (usage, description, options, exit status) and the troff man page that
 * the build writes with `TOOL --man` and `meson install` installs, so the
 * two cannot drift apart.
 * Never: holds a tool's text (each tool's main file does, in one struct
 * tool_doc), or prints anything but the document asked for.
 */
#ifndef TMT_TOOL_DOC_H
#define TMT_TOOL_DOC_H

#include <stdio.h>

struct tool_option {
    const char *flags;   /* "-j, --json", "-o, --output FILE" */
    const char *help;    /* lines separated by '\n' */
};

/* Text fields are plain text, lines separated by '\n'; in `description`
 * an empty line separates paragraphs and a line starting with two spaces
 * is kept as it is (an example, a table). */
struct tool_doc {
    const char *name;                   /* "tmcheck" */
    const char *purpose;                /* one line, the man page's NAME */
    const char *synopsis;               /* one usage per line, starting with the name */
    const char *description;
    const struct tool_option *options;  /* ends with { NULL, NULL } */
    const char *exit_status;            /* "0  ...\n1  ..." */
};

/* The --help text. */
void tool_doc_help(FILE *f, const struct tool_doc *d);
/* The man page (section 1, troff). */
void tool_doc_man(FILE *f, const struct tool_doc *d);

#endif

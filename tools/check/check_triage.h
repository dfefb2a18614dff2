/*
 * check_triage.h - the groups of STM aborts as a reader acts on them: words
 * folded into data objects (a symbol, or the blocks of one allocation site)
 * and their fields, the triage lines (one group each) and their advice.
 *
 * Owns: struct cx_fold and the folding; the triage and top-data parts of the
 * text report and their JSON members; the one name of a site and of a data
 * address, which every part of the report and tmexport use. Never: computes a metric (the groups
 * are check_groups.c's); joins facts of two groups in one line.
 */
#ifndef TMT_CHECK_TRIAGE_H
#define TMT_CHECK_TRIAGE_H

#include <stdio.h>

#include "check_report_input.h"

#define CX_FOLD_FIELDS 4
#define CX_OBJ_NAME 256

/* Groups folded by (victim site, class, object, culprit site), or by object
 * alone (victim 0, culprit 0, class CA_CLASSES). */
struct cx_fold {
    uint32_t victim_site, culprit_site;
    unsigned cls;
    char obj[CX_OBJ_NAME];        /* "symbol", "blocks from fn (file:line)", or the word's own name */
    uint64_t count, held, same_word_known;
    double oncpu_ns;
    uint64_t desched_n;
    double desched_ns;
    uint64_t cls_n[CA_CLASSES];   /* by object alone: its aborts by class */
    struct {
        char name[64];            /* ".member", "+0xoff", or "" (the object is one word) */
        uint64_t n;
        uint32_t writer;          /* the culprit site of its costliest group (0: none) */
    } fld[CX_FOLD_FIELDS];
    unsigned nfld, more_fields;
};

/* The folds, by on-CPU wasted time then count (*n of them; NULL out of
 * memory, *n 0). by_object: one per object. The caller frees. */
struct cx_fold *cx_fold_groups(const struct cr_input *in, int by_object, size_t *n);

/* "label (file:line)" of a site id, or "site N"; "(none)" for 0. */
const char *cx_site_name(const struct trace_index *ix, uint32_t id, char *buf, size_t cap);

struct sym_table;
/* The one name of a data address, in its parts: the object (a symbol; the
 * blocks of an allocation site, alloc_pc 0: none; else what symbols.h says
 * and the address), the field (".member", "+0xoff" or "") and the full name
 * the listings print ("symbol.member", "block+0xoff from fn (file:line)", or
 * symbols.h's name). obj holds CX_OBJ_NAME bytes, fld 64. */
void cx_word_name(struct sym_table *sym, uint64_t addr, uint64_t alloc_pc, uint64_t alloc_base, char *obj,
                  char *fld, char *full, size_t cap);

/* The on-CPU wasted time of every aborted attempt (the triage's 100 %). */
double cx_oncpu_wasted(const struct cr_input *in);

/* Text: the top data objects and the triage lines. */
void cx_triage_text(FILE *f, const struct cr_input *in);
struct jw;
/* JSON members "data" and "triage". */
void cx_triage_json(struct jw *w, const struct cr_input *in);
/* The name of a group's class wherever a group is named (text, JSON,
 * --compare): "false sharing" for a false conflict, "conflict on the
 * stripe (word unknown at this level)" for a true one whose culprit's
 * writes are not in the trace, else the class's name. */
const char *cx_fold_class(const struct cx_fold *f);
/* "abort" or "aborts", as a count's noun in the text report. */
static inline const char *cx_aborts(unsigned long long n)
{
    return n == 1 ? "abort" : "aborts";
}

#endif

/*
 * check_triage.c - the groups of STM aborts folded into what a reader acts
 * on (see check_triage.h): the data objects and their fields, and one
 * triage line per group with its count, its share of the on-CPU wasted
 * time and the advice that can apply to it.
 *
 * Owns: the one name of a site and of a data address (through symbols.h
 * and the recorded allocations: an object and a field), the folds, the advice per class, the
 * hardware classes per site as triage entries. Never: charges a
 * descheduled attempt's time off the CPU to a line; advises a setting
 * that is already at its limit; prints a culprit that did not write (or
 * hold) the data of its line.
 */
#include "check_triage.h"

#include <stdlib.h>
#include <string.h>

#include "json_writer.h"
#include "symbols.h"
#include "trace_format.h"

#define CX_TRIAGE_LINES 8
#define CX_DATA_LINES 10

void cx_word_name(struct sym_table *sym, uint64_t addr, uint64_t alloc_pc, uint64_t alloc_base, char *obj,
                  char *fld, char *full, size_t cap)
{
    char buf[700];
    if (sym_data_parts(sym, addr, buf, sizeof buf, fld, 64)) {
        snprintf(obj, CX_OBJ_NAME, "%.250s", buf);
        snprintf(full, cap, "%s%s", obj, fld);
    } else if (alloc_pc) {
        char site[600];
        /* alloc_pc is the return address of the allocating call: the call
         * is the instruction before it (the next statement's line else). */
        char type[120], member[64];
        sym_code(sym, alloc_pc - 1, site, sizeof site);
        snprintf(fld, 64, "+0x%llx", (unsigned long long)(addr - alloc_base));
        if (sym_block_member(sym, alloc_pc, addr - alloc_base, type, sizeof type, member, sizeof member) &&
            member[0]) {
            snprintf(obj, CX_OBJ_NAME, "blocks of %.60s from %.170s", type, site);
            snprintf(full, cap, "block%s (%s%s) from %s", fld, type, member, site);
            snprintf(fld, 64, "%s", member);
        } else {
            snprintf(obj, CX_OBJ_NAME, "blocks from %.230s", site);
            snprintf(full, cap, "block%s from %s", fld, site);
        }
    } else if (fld[0]) {   /* a thread's stack: its words fold into one object */
        snprintf(obj, CX_OBJ_NAME, "%.250s", buf);
        snprintf(full, cap, "%s (%s)", obj, fld);
    } else {
        snprintf(obj, CX_OBJ_NAME, "%.200s 0x%llx", buf, (unsigned long long)addr);
        fld[0] = 0;
        snprintf(full, cap, "%s", buf);
    }
}

static void word_name(const struct cr_input *in, const struct ca_group *g, char *obj, char *fld)
{
    char full[900];
    cx_word_name(in->sym, g->addr, g->alloc_pc, g->alloc_base, obj, fld, full, sizeof full);
}

const char *cx_site_name(const struct trace_index *ix, uint32_t id, char *buf, size_t cap)
{
    if (id == 0) {
        snprintf(buf, cap, "(none)");
        return buf;
    }
    for (size_t i = 0; i < ix->nsites; i++)
        if (ix->sites[i].id == id) {
            sym_site_name(&ix->sites[i], buf, cap);
            return buf;
        }
    snprintf(buf, cap, "site %u", id);
    return buf;
}

static int cmp_key(const void *a, const void *b)
{
    const struct cx_fold *x = a, *y = b;
    if (x->victim_site != y->victim_site)
        return x->victim_site < y->victim_site ? -1 : 1;
    if (x->culprit_site != y->culprit_site)
        return x->culprit_site < y->culprit_site ? -1 : 1;
    if (x->cls != y->cls)
        return x->cls < y->cls ? -1 : 1;
    return strcmp(x->obj, y->obj);
}

/* By on-CPU wasted time, then count; groups that waited on a descheduled
 * lock holder after all others: their cost is the scheduler's (more threads
 * than CPUs), not the data's, and like the descheduled attempts themselves
 * it must not decide the ranking. */
static int cmp_cost(const void *a, const void *b)
{
    const struct cx_fold *x = a, *y = b;
    int px = x->cls == CA_CL_HOLDER_PREEMPTED, py = y->cls == CA_CL_HOLDER_PREEMPTED;
    if (px != py)
        return px - py;
    if (x->oncpu_ns != y->oncpu_ns)
        return x->oncpu_ns < y->oncpu_ns ? 1 : -1;
    if (x->count != y->count)
        return x->count < y->count ? 1 : -1;
    return cmp_key(a, b);
}

/* `from` into `into` (same key): sums, and its fields beside the others. */
static void fold_merge(struct cx_fold *into, const struct cx_fold *from)
{
    into->count += from->count;
    into->held += from->held;
    into->same_word_known += from->same_word_known;
    into->oncpu_ns += from->oncpu_ns;
    into->desched_n += from->desched_n;
    into->desched_ns += from->desched_ns;
    for (unsigned c = 0; c < CA_CLASSES; c++)
        into->cls_n[c] += from->cls_n[c];
    into->more_fields += from->more_fields;
    for (unsigned i = 0; i < from->nfld; i++) {
        unsigned k = 0;
        while (k < into->nfld && strcmp(into->fld[k].name, from->fld[i].name) != 0)
            k++;
        if (k == into->nfld) {
            if (k == CX_FOLD_FIELDS) {
                into->more_fields++;
                continue;
            }
            into->fld[into->nfld++] = from->fld[i];
            continue;
        }
        into->fld[k].n += from->fld[i].n;
    }
}

/* Each site's hardware aborts by class, as triage entries without data. */
static size_t htm_entries(const struct cr_input *in, struct cx_fold *out)
{
    size_t ns, k = 0;
    const struct ca_site *s = ca_sites(in->st, &ns);
    for (size_t i = 0; i < ns; i++)
        for (unsigned c = CA_CL_HTM_CONFLICT; c <= CA_CL_HTM_OTHER; c++) {
            if (!s[i].cls[c])
                continue;
            if (out)
                out[k] = (struct cx_fold){ .victim_site = s[i].site, .cls = c, .count = s[i].cls[c],
                                           .oncpu_ns = s[i].cls_wasted_ns[c] };
            k++;
        }
    return k;
}

struct cx_fold *cx_fold_groups(const struct cr_input *in, int by_object, size_t *n)
{
    size_t ng;
    const struct ca_group *g = ca_groups(in->st, &ng, NULL);
    size_t nh = by_object ? 0 : htm_entries(in, NULL);
    struct cx_fold *f = calloc(ng + nh + 1, sizeof *f);
    *n = 0;
    if (!f)
        return NULL;
    for (size_t i = 0; i < ng; i++) {
        struct cx_fold *x = &f[i];
        word_name(in, &g[i], x->obj, x->fld[0].name);
        x->nfld = 1;
        x->fld[0].n = g[i].count;
        x->fld[0].writer = g[i].culprit_site;
        x->victim_site = by_object ? 0 : g[i].victim_site;
        x->culprit_site = by_object ? 0 : g[i].culprit_site;
        x->cls = by_object ? CA_CLASSES : g[i].cls;
        x->count = g[i].count;
        x->held = g[i].held;
        x->same_word_known = g[i].same_word_known;
        x->oncpu_ns = g[i].oncpu_ns;
        x->desched_n = g[i].desched_n;
        x->desched_ns = g[i].desched_ns;
        x->cls_n[g[i].cls] = g[i].count;
    }
    qsort(f, ng, sizeof *f, cmp_key);
    size_t k = 0;
    for (size_t i = 0; i < ng; i++) {
        if (k && cmp_key(&f[k - 1], &f[i]) == 0)
            fold_merge(&f[k - 1], &f[i]);
        else
            f[k++] = f[i];
    }
    if (!by_object)
        k += htm_entries(in, f + k);
    qsort(f, k, sizeof *f, cmp_cost);
    *n = k;
    return f;
}

const char *cx_fold_class(const struct cx_fold *f)
{
    if (f->cls == CA_CL_FALSE)
        return "false sharing";
    if (f->cls == CA_CL_TRUE && f->same_word_known < f->count)
        return "conflict on the stripe (word unknown at this level)";
    return ca_class_name(f->cls);
}

/* What to do about a line's group; "" when nothing applies. */
static void advice(const struct cr_input *in, const struct cx_fold *f, char *out, size_t cap)
{
    switch (f->cls) {
    case CA_CL_TRUE:
        if (f->same_word_known < f->count)
            snprintf(out, cap, "record reads and writes (TMTRACE_EVENTS=all) to tell this word from its stripe");
        else
            snprintf(out, cap, "transactions write this very word: split it (per-thread parts combined later) or "
                     "write it later in a shorter transaction");
        break;
    case CA_CL_FALSE:
        if (in->stripe_shift > TF_STRIPE_SHIFT_MIN)
            snprintf(out, cap, "different words on one %u-byte stripe: pad or align them apart, or narrower "
                     "stripes (TMTRACE_STRIPE_SHIFT=%u)", 1u << in->stripe_shift, in->stripe_shift - 1);
        else
            snprintf(out, cap, "different words on one %u-byte stripe (the narrowest): pad or align them apart",
                     1u << in->stripe_shift);
        break;
    case CA_CL_HOLDER_RUNNING:
        snprintf(out, cap, "the lock holder was committing: smaller write sets at its site shorten the hold");
        break;
    case CA_CL_HOLDER_PREEMPTED:
        snprintf(out, cap, "the lock holder was descheduled while holding it: no more threads than CPUs");
        break;
    case CA_CL_HOLDER_ABORTED:
        snprintf(out, cap, "the lock holder aborted with the lock held: see its own aborts");
        break;
    case CA_CL_HTM_CAPACITY:
        snprintf(out, cap, "smaller transactions at this site (fewer cache lines touched)");
        break;
    case CA_CL_HTM_CONFLICT:
        snprintf(out, cap, "hardware data conflicts: the same data as its software aborts, if any");
        break;
    case CA_CL_CONFLICT_FREE:
        snprintf(out, cap, "no writer of this data is in the trace (not recorded at this level)");
        break;
    case CA_CL_CULPRIT_DROPPED:
        snprintf(out, cap, "its culprit may be among the events another thread dropped meanwhile: trace with more "
                 "TMTRACE_MEMORY or TMTRACE_WRITER_SHARE to see it");
        break;
    default:
        out[0] = 0;
        break;
    }
}

static double pct(double a, double b) { return b > 0 ? 100.0 * a / b : 0.0; }

/* "(.a 3, .b 4 and 2 more)" */
static void fields_text(FILE *o, const struct cx_fold *f)
{
    if (f->nfld == 1 && !f->more_fields && !f->fld[0].name[0])
        return;
    fputs(" (", o);
    for (unsigned i = 0; i < f->nfld; i++)
        fprintf(o, "%s%s %llu", i ? ", " : "", f->fld[i].name[0] ? f->fld[i].name : "(start)",
                (unsigned long long)f->fld[i].n);
    if (f->more_fields)
        fprintf(o, " and %u more", f->more_fields);
    fputc(')', o);
}

double cx_oncpu_wasted(const struct cr_input *in)
{
    size_t nt;
    const struct ca_thread *th = ca_threads(in->st, &nt);
    double sum = 0;
    for (size_t i = 0; i < nt; i++)
        sum += th[i].time.wasted_oncpu_ns;
    return sum;
}

static void triage_line(FILE *o, const struct cr_input *in, size_t i, const struct cx_fold *f, double total)
{
    char vn[600], cn[600], adv[300];
    int hw = f->cls >= CA_CL_HTM_CONFLICT && f->cls <= CA_CL_HTM_OTHER;
    fprintf(o, "  %zu. %5.1f%% of on-CPU wasted time, %llu %s: %s, %s", i + 1, pct(f->oncpu_ns, total),
            (unsigned long long)f->count, cx_aborts(f->count), cx_site_name(in->ix, f->victim_site, vn, sizeof vn),
            hw ? ca_class_name(f->cls) : cx_fold_class(f));
    if (!hw) {
        fprintf(o, " on %s", f->obj);
        fields_text(o, f);
        if (f->culprit_site)
            fprintf(o, ", %s %s", f->cls >= CA_CL_HOLDER_RUNNING && f->cls <= CA_CL_HOLDER_ABORTED ? "lock held by"
                                                                                                : "written by",
                    cx_site_name(in->ix, f->culprit_site, cn, sizeof cn));
        else
            fprintf(o, ", no culprit found");
    }
    advice(in, f, adv, sizeof adv);
    if (adv[0])
        fprintf(o, ": %s", adv);
    if (f->desched_n)
        fprintf(o, " [%llu of its attempts descheduled: %.3f ms of wall time left out]",
                (unsigned long long)f->desched_n, f->desched_ns / 1e6);
    fputc('\n', o);
}

void cx_triage_text(FILE *o, const struct cr_input *in)
{
    double total = cx_oncpu_wasted(in);
    size_t n;
    struct cx_fold *f = cx_fold_groups(in, 1, &n);
    if (f && n) {
        fprintf(o, "\ntop data by on-CPU wasted time (software aborts)\n");
        for (size_t i = 0; i < n && i < CX_DATA_LINES; i++) {
            fprintf(o, "  %5.1f%%  %s", pct(f[i].oncpu_ns, total), f[i].obj);
            fields_text(o, &f[i]);
            fprintf(o, ": %llu %s, %.3f ms;", (unsigned long long)f[i].count, cx_aborts(f[i].count), f[i].oncpu_ns / 1e6);
            for (unsigned c = 0; c < CA_CLASSES; c++)
                if (f[i].cls_n[c])
                    fprintf(o, " %s %llu", c == CA_CL_FALSE ? "false-sharing" : ca_class_name(c),
                            (unsigned long long)f[i].cls_n[c]);
            fputc('\n', o);
        }
    }
    free(f);
    int failed;
    ca_groups(in->st, &n, &failed);
    f = cx_fold_groups(in, 0, &n);
    fprintf(o, "\ntriage (one group a line: victim site, class, data, culprit site)\n");
    if (failed || !f)
        fprintf(o, "  note: out of memory while grouping: the lines below may miss groups\n");
    for (size_t i = 0; f && i < n && i < CX_TRIAGE_LINES; i++)
        triage_line(o, in, i, &f[i], total);
    if (!n)
        fprintf(o, "  no aborts\n");
    free(f);
}

static void json_fields(struct jw *w, const struct cx_fold *f)
{
    jw_key(w, "fields");
    jw_array(w);
    for (unsigned i = 0; i < f->nfld; i++) {
        jw_object(w);
        jw_kstr(w, "name", f->fld[i].name);
        jw_ku64(w, "aborts", f->fld[i].n);
        jw_ku64(w, "culprit_site", f->fld[i].writer);
        jw_object_end(w);
    }
    jw_array_end(w);
    jw_ku64(w, "more_fields", f->more_fields);
}

static void json_fold(struct jw *w, const struct cr_input *in, const struct cx_fold *f, double total, int triage)
{
    char nb[600], adv[300];
    jw_object(w);
    if (triage) {
        jw_ku64(w, "victim_site", f->victim_site);
        jw_kstr(w, "victim_name", cx_site_name(in->ix, f->victim_site, nb, sizeof nb));
        jw_kstr(w, "class", ca_class_name(f->cls));
        jw_kstr(w, "label", cx_fold_class(f));
        jw_ku64(w, "culprit_site", f->culprit_site);
        jw_kstr(w, "culprit_name", f->culprit_site ? cx_site_name(in->ix, f->culprit_site, nb, sizeof nb) : "");
        jw_kbool(w, "word_known", f->same_word_known == f->count);
        jw_ku64(w, "lock_held", f->held);
        advice(in, f, adv, sizeof adv);
        jw_kstr(w, "advice", adv);
    }
    jw_kstr(w, "object", f->obj);
    jw_ku64(w, "aborts", f->count);
    jw_knum(w, "oncpu_wasted_ns", f->oncpu_ns, 0);
    jw_knum(w, "share", total > 0 ? f->oncpu_ns / total : 0.0, 6);
    jw_ku64(w, "descheduled_attempts", f->desched_n);
    jw_knum(w, "descheduled_ns", f->desched_ns, 0);
    json_fields(w, f);
    jw_object_end(w);
}

void cx_triage_json(struct jw *w, const struct cr_input *in)
{
    double total = cx_oncpu_wasted(in);
    for (int triage = 0; triage < 2; triage++) {
        size_t n;
        struct cx_fold *f = cx_fold_groups(in, !triage, &n);
        jw_key(w, triage ? "triage" : "data");
        jw_array(w);
        for (size_t i = 0; f && i < n && i < 100; i++)
            json_fold(w, in, &f[i], total, triage);
        jw_array_end(w);
        free(f);
    }
}

/*
 * check_compare.c - tmcheck --compare BEFORE AFTER (see check_compare.h):
 * per site, per data object and per triage group, the aborts, the on-CPU
 * wasted time and (sites, run) the commits per second, before and after.
 *
 * Owns: the rows of one run by name, their pairing, the text and JSON of the
 * change. Never: pairs rows by id; hides a row present in one run only
 * (it is "gone" or "new").
 */
#include "check_compare.h"

#include <stdlib.h>
#include <string.h>

#include "check_causes.h"
#include "check_triage.h"
#include "json_writer.h"

enum { CMP_SITES, CMP_DATA, CMP_GROUPS, CMP_KINDS };
static const char *const cmp_kind_name[CMP_KINDS] = { "sites", "data", "groups" };

struct cmp_row {
    char key[700];
    uint64_t aborts, commits;
    double oncpu_ns;
    int side;          /* 0 before, 1 after */
};

/* A site by what a fix leaves alone: its label and file, not its line. */
static void site_key(const struct cr_input *in, uint32_t id, char *out, size_t cap)
{
    for (size_t i = 0; id && i < in->ix->nsites; i++)
        if (in->ix->sites[i].id == id) {
            const struct tf_site *s = &in->ix->sites[i];
            const char *file = strrchr(s->file, '/') ? strrchr(s->file, '/') + 1 : s->file;
            if (s->label[0] && file[0])
                snprintf(out, cap, "%s (%s)", s->label, file);
            else
                snprintf(out, cap, "%s", s->label[0] ? s->label : file);
            return;
        }
    cx_site_name(in->ix, id, out, cap);
}

/* The rows of one run of one kind, appended to *rows (*n of them). */
static int add_rows(const struct cr_input *in, int kind, int side, struct cmp_row **rows, size_t *n)
{
    size_t k = 0;
    struct cx_fold *f = NULL;
    const struct ca_site *s = NULL;
    if (kind == CMP_SITES)
        s = ca_sites(in->st, &k);
    else if (!(f = cx_fold_groups(in, kind == CMP_DATA, &k)))
        return -1;
    struct cmp_row *r = realloc(*rows, (*n + k + 1) * sizeof *r);
    if (!r) {
        free(f);
        return -1;
    }
    *rows = r;
    for (size_t i = 0; i < k; i++) {
        struct cmp_row *x = &r[(*n)++];
        memset(x, 0, sizeof *x);
        x->side = side;
        if (s) {
            site_key(in, s[i].site, x->key, sizeof x->key);
            x->aborts = s[i].aborts;
            x->commits = s[i].commits;
            x->oncpu_ns = s[i].time.wasted_oncpu_ns;
            continue;
        }
        x->aborts = f[i].count;
        x->oncpu_ns = f[i].oncpu_ns;
        if (kind == CMP_DATA) {
            snprintf(x->key, sizeof x->key, "%s", f[i].obj);
            continue;
        }
        char v[300], c[300];
        site_key(in, f[i].victim_site, v, sizeof v);
        site_key(in, f[i].culprit_site, c, sizeof c);
        snprintf(x->key, sizeof x->key, "%.200s, %.100s on %.180s, culprit %.200s", v,
                 f[i].cls < CA_CLASSES ? cx_fold_class(&f[i]) : "", f[i].obj, c);
    }
    free(f);
    return 0;
}

static int cmp_key_side(const void *a, const void *b)
{
    const struct cmp_row *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : x->side - y->side;
}

static double run_seconds(const struct cr_input *in) { return in->span_ns > 0 ? in->span_ns / 1e9 : 0; }

static double per_s(uint64_t n, const struct cr_input *in)
{
    double s = run_seconds(in);
    return s > 0 ? (double)n / s : 0;
}

/* The rows of both runs of one kind, paired: rows[i] and, when the key is in
 * both, rows[i + 1]. Sorted by name. */
static struct cmp_row *paired(const struct cr_input *b, const struct cr_input *a, int kind, size_t *n)
{
    struct cmp_row *r = NULL;
    *n = 0;
    if (add_rows(b, kind, 0, &r, n) < 0 || add_rows(a, kind, 1, &r, n) < 0) {
        free(r);
        *n = 0;
        return NULL;
    }
    qsort(r, *n, sizeof *r, cmp_key_side);
    return r;
}

/* The pair at rows[*i] (advancing *i past it): before and after (zeroed
 * when absent). */
static void next_pair(const struct cmp_row *r, size_t n, size_t *i, struct cmp_row *b, struct cmp_row *a)
{
    memset(b, 0, sizeof *b);
    memset(a, 0, sizeof *a);
    const struct cmp_row *x = &r[*i];
    if (x->side == 0) {
        *b = *x;
        if (*i + 1 < n && r[*i + 1].side == 1 && strcmp(r[*i + 1].key, x->key) == 0)
            *a = r[++*i];
    } else {
        *a = *x;
    }
    snprintf(b->key, sizeof b->key, "%s", x->key);
    ++*i;
}

static const char *presence(const struct cmp_row *b, const struct cmp_row *a)
{
    return !b->aborts && !b->commits ? " (new)" : !a->aborts && !a->commits ? " (gone)" : "";
}

void cr_compare_text(FILE *f, const struct cr_input *before, const struct cr_input *after)
{
    const struct ca_totals *tb = ca_totals(before->st), *ta = ca_totals(after->st);
    fprintf(f, "compare %s -> %s\n", before->path, after->path);
    fprintf(f, "  run: aborts %llu -> %llu, on-CPU wasted %.3f -> %.3f ms, commits per second %.0f -> %.0f\n",
            (unsigned long long)tb->aborts, (unsigned long long)ta->aborts, cx_oncpu_wasted(before) / 1e6,
            cx_oncpu_wasted(after) / 1e6, per_s(tb->commits, before), per_s(ta->commits, after));
    for (int kind = 0; kind < CMP_KINDS; kind++) {
        size_t n;
        struct cmp_row *r = paired(before, after, kind, &n);
        fprintf(f, "%s (aborts, on-CPU wasted ms%s)\n", cmp_kind_name[kind],
                kind == CMP_SITES ? ", commits per second" : "");
        for (size_t i = 0; r && i < n;) {
            struct cmp_row b, a;
            next_pair(r, n, &i, &b, &a);
            fprintf(f, "  %s%s: %llu -> %llu, %.3f -> %.3f", b.key, presence(&b, &a), (unsigned long long)b.aborts,
                    (unsigned long long)a.aborts, b.oncpu_ns / 1e6, a.oncpu_ns / 1e6);
            if (kind == CMP_SITES)
                fprintf(f, ", %.0f -> %.0f", per_s(b.commits, before), per_s(a.commits, after));
            fputc('\n', f);
        }
        if (!r)
            fprintf(f, "  note: out of memory\n");
        free(r);
    }
}

static void json_side(struct jw *w, const char *key, const struct cmp_row *x, int sites, const struct cr_input *in)
{
    jw_key(w, key);
    jw_object(w);
    jw_ku64(w, "aborts", x->aborts);
    jw_knum(w, "oncpu_wasted_ns", x->oncpu_ns, 0);
    if (sites)
        jw_knum(w, "commits_per_s", per_s(x->commits, in), 1);
    jw_object_end(w);
}

void cr_compare_json(FILE *f, const struct cr_input *before, const struct cr_input *after)
{
    struct jw w;
    jw_init(&w, f);
    jw_object(&w);
    jw_kstr(&w, "before", before->path);
    jw_kstr(&w, "after", after->path);
    for (int kind = 0; kind < CMP_KINDS; kind++) {
        size_t n;
        struct cmp_row *r = paired(before, after, kind, &n);
        jw_key(&w, cmp_kind_name[kind]);
        jw_array(&w);
        for (size_t i = 0; r && i < n;) {
            struct cmp_row b, a;
            next_pair(r, n, &i, &b, &a);
            jw_object(&w);
            jw_kstr(&w, "name", b.key);
            jw_kstr(&w, "presence", presence(&b, &a)[0] ? (b.aborts || b.commits ? "gone" : "new") : "both");
            json_side(&w, "before", &b, kind == CMP_SITES, before);
            json_side(&w, "after", &a, kind == CMP_SITES, after);
            jw_object_end(&w);
        }
        jw_array_end(&w);
        free(r);
    }
    jw_object_end(&w);
    fputc('\n', f);
}

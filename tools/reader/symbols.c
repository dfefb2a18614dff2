/*
 * symbols.c - names for run-time addresses through libdw (see symbols.h).
 *
 * Owns: one libdwfl session (Dwfl) in which every object of the load map is
 * reported at its load bias, the check of each object's build-id against the
 * recorded one, the notes about objects that could not be used, and the
 * walk from a variable's DWARF type to the member an offset falls in (with
 * a small cache of the variables found), and the type of the blocks an
 * allocating call returns (the pointer variable declared on the call's
 * line; a cache of those too). Never parses ELF or DWARF itself.
 */
#include "symbols.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sym_obj {
    const struct tf_object *o;   /* the table's copy */
    Dwfl_Module *mod;            /* NULL: not usable (note written) */
};

/* A variable's DWARF entry, by its symbol's address (found 0: none). */
#define SYM_VAR_CACHE 64
struct sym_var {
    uint64_t addr;
    int found;
    Dwarf_Die type;
};

/* The type of the blocks allocated at a call, by its return address
 * (found 0: not known). */
#define SYM_BLOCK_CACHE 64
struct sym_block {
    uint64_t pc;
    int found;
    Dwarf_Die type;         /* the pointee, typedefs kept */
    char name[120];         /* "struct foo", or the typedef's name */
};

struct sym_table {
    Dwfl *dwfl;
    struct sym_var var[SYM_VAR_CACHE];
    unsigned nvar;
    struct sym_block block[SYM_BLOCK_CACHE];
    unsigned nblock;
    char fnbuf[300];             /* the last code address's function, demangled */
    struct tf_object *objs;
    struct sym_obj *obj;
    size_t n;
    char *notes;
    size_t notes_len;
    struct tf_thread_info *stacks; /* the threads whose stacks the trace records */
    size_t nstacks;
};

static const Dwfl_Callbacks sym_callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
};

static void sym_note(struct sym_table *t, const char *path, const char *what)
{
    size_t add = strlen(path) + strlen(what) + 4;
    char *p = realloc(t->notes, t->notes_len + add + 1);
    if (p == NULL)
        return;
    t->notes = p;
    t->notes_len += (size_t)snprintf(p + t->notes_len, add + 1, "%s: %s\n", path[0] ? path : "?", what);
}

/* Reports one object; a file that is missing, unreadable or not the one
 * that ran (build-id differs) is left out with a note. */
static void sym_report(struct sym_table *t, struct sym_obj *so)
{
    const struct tf_object *o = so->o;
    if (o->path[0] != '/') {
        if (o->path[0] != '\0' && strncmp(o->path, "linux-vdso", 10) != 0)
            sym_note(t, o->path, "no file path recorded; addresses left as they are");
        return;
    }
    Dwfl_Module *m = dwfl_report_elf(t->dwfl, o->path, o->path, -1, o->base, false);
    if (m == NULL) {
        sym_note(t, o->path, "cannot be read; addresses in it are shown as object+offset");
        return;
    }
    const unsigned char *bid = NULL;
    GElf_Addr vaddr;
    int len = dwfl_module_build_id(m, &bid, &vaddr);
    if (o->build_id_len && (len != (int)o->build_id_len || memcmp(bid, o->build_id, (size_t)len) != 0)) {
        sym_note(t, o->path, "build-id differs from the traced one (rebuilt?); addresses shown as object+offset");
        return;
    }
    so->mod = m;
}

struct sym_table *sym_open(const struct tf_object *objs, size_t n)
{
    struct sym_table *t = calloc(1, sizeof *t);
    if (t == NULL)
        return NULL;
    t->objs = calloc(n ? n : 1, sizeof *t->objs);
    t->obj = calloc(n ? n : 1, sizeof *t->obj);
    if (t->objs == NULL || t->obj == NULL) {
        sym_close(t);
        return NULL;
    }
    if (n)
        memcpy(t->objs, objs, n * sizeof *objs);
    t->n = n;
    t->dwfl = n ? dwfl_begin(&sym_callbacks) : NULL;
    if (n && t->dwfl == NULL)
        sym_note(t, "libdw", dwfl_errmsg(-1));
    for (size_t i = 0; i < n; i++) {
        t->obj[i].o = &t->objs[i];
        if (t->dwfl)
            sym_report(t, &t->obj[i]);
    }
    if (t->dwfl)
        dwfl_report_end(t->dwfl, NULL, NULL);
    return t;
}

int sym_set_stacks(struct sym_table *t, const struct tf_thread_info *th, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += th[i].stack_hi > th[i].stack_lo;
    free(t->stacks);
    t->nstacks = 0;
    t->stacks = k ? malloc(k * sizeof *t->stacks) : NULL;
    if (k && !t->stacks)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (th[i].stack_hi > th[i].stack_lo)
            t->stacks[t->nstacks++] = th[i];
    return 0;
}

void sym_close(struct sym_table *t)
{
    if (t == NULL)
        return;
    free(t->stacks);
    if (t->dwfl)
        dwfl_end(t->dwfl);
    free(t->objs);
    free(t->obj);
    free(t->notes);
    free(t);
}

const char *sym_notes(const struct sym_table *t) { return t && t->notes ? t->notes : ""; }

static const struct sym_obj *sym_find(const struct sym_table *t, uint64_t addr)
{
    for (size_t i = 0; t && i < t->n; i++)
        if (addr >= t->objs[i].start && addr < t->objs[i].end)
            return &t->obj[i];
    return NULL;
}

static const char *sym_base(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* GCC's transactional clone of a function (-fgnu-tm) is the function's
 * name mangled behind "_ZGTt": `_ZGTt13rbtree_insert` is rbtree_insert's.
 * Its name for reports: `rbtree_insert [transactional clone]` (a C++
 * clone keeps its mangled rest); any other name as it is. */
static const char *sym_clone_name(const char *name, char *buf, size_t cap)
{
    if (name == NULL || strncmp(name, "_ZGTt", 5) != 0)
        return name;
    const char *p = name + 5;
    char *end;
    unsigned long len = strtoul(p, &end, 10);
    if (end != p && len > 0 && len <= strlen(end))
        snprintf(buf, cap, "%.*s [transactional clone]", (int)len, end);
    else
        snprintf(buf, cap, "_Z%s [transactional clone]", p);
    return buf;
}

/* The address alone: with the object and the offset into it; in a thread's
 * stack, that thread and the offset from the stack's lowest address; else
 * the heap (or, when the trace records no stacks, "heap or stack"). */
/* The recorded thread stack holding addr, or NULL. */
static const struct tf_thread_info *sym_stack(const struct sym_table *t, uint64_t addr)
{
    for (size_t i = 0; t && i < t->nstacks; i++)
        if (addr >= t->stacks[i].stack_lo && addr < t->stacks[i].stack_hi)
            return &t->stacks[i];
    return NULL;
}

static void sym_plain(const struct sym_table *t, const struct sym_obj *so, uint64_t addr, char *out, size_t cap)
{
    const struct tf_thread_info *st = so ? NULL : sym_stack(t, addr);
    if (st) {
        snprintf(out, cap, "stack of thread %" PRIu32 " (+0x%" PRIx64 ")", st->id, addr - st->stack_lo);
        return;
    }
    if (so == NULL)
        snprintf(out, cap, t && t->nstacks ? "heap" : "heap or stack");
    else
        snprintf(out, cap, "%s+0x%" PRIx64, sym_base(so->o->path), addr - so->o->base);
}

/* The symbol holding addr: its name and offset, or NULL with out set to
 * the plain name (object+offset, or "heap or stack") when there is none. */
static const char *sym_lookup(struct sym_table *t, uint64_t addr, char *out, size_t cap,
                              const struct sym_obj **sop, GElf_Off *off, GElf_Sym *sym)
{
    const struct sym_obj *so = *sop = sym_find(t, addr);
    if (so == NULL || so->mod == NULL) {
        sym_plain(t, so, addr, out, cap);
        return NULL;
    }
    return dwfl_module_addrinfo(so->mod, addr, off, sym, NULL, NULL, NULL);
}

/* The type of the global variable `name` among the module's compile units
 * (its definition: a DW_AT_location). 1 when found. */
static int var_type(Dwfl_Module *mod, const char *name, Dwarf_Die *type)
{
    Dwarf_Addr bias;
    Dwarf *dw = dwfl_module_getdwarf(mod, &bias);
    Dwarf_Off off = 0, next;
    size_t hsize;
    while (dw && dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
        Dwarf_Die cu, d;
        if (dwarf_offdie(dw, off + hsize, &cu) && dwarf_child(&cu, &d) == 0) {
            do {
                Dwarf_Attribute a;
                const char *n;
                if (dwarf_tag(&d) != DW_TAG_variable || !dwarf_attr(&d, DW_AT_location, &a) ||
                    !(n = dwarf_diename(&d)) || strcmp(n, name) != 0)
                    continue;
                if (dwarf_attr_integrate(&d, DW_AT_type, &a) && dwarf_formref_die(&a, type))
                    return 1;
            } while (dwarf_siblingof(&d, &d) == 0);
        }
        off = next;
    }
    return 0;
}

/* Appends to `path` the member (`.name`, `[i]`) of `type` at byte `off`,
 * descending into nested structs and arrays; stops at a scalar. */
static void member_path(Dwarf_Die *type, uint64_t off, char *path, size_t cap)
{
    for (int depth = 0; depth < 8; depth++) {
        Dwarf_Die t, m;
        Dwarf_Word size;
        if (dwarf_peel_type(type, &t) != 0)
            return;
        size_t len = strlen(path);
        int tag = dwarf_tag(&t);
        if (tag == DW_TAG_array_type) {
            Dwarf_Attribute a;
            Dwarf_Die el;
            if (!dwarf_attr_integrate(&t, DW_AT_type, &a) || !dwarf_formref_die(&a, &el) ||
                dwarf_aggregate_size(&el, &size) != 0 || size == 0)
                return;
            snprintf(path + len, cap - len, "[%llu]", (unsigned long long)(off / size));
            off %= size;
            *type = el;
            continue;
        }
        if ((tag != DW_TAG_structure_type && tag != DW_TAG_union_type) || dwarf_child(&t, &m) != 0)
            return;
        int found = 0;
        do {
            Dwarf_Attribute a;
            Dwarf_Word at = 0;
            Dwarf_Die mt;
            if (dwarf_tag(&m) != DW_TAG_member || !dwarf_attr_integrate(&m, DW_AT_type, &a) ||
                !dwarf_formref_die(&a, &mt) || dwarf_aggregate_size(&mt, &size) != 0)
                continue;
            if (dwarf_attr(&m, DW_AT_data_member_location, &a) && dwarf_formudata(&a, &at) != 0)
                continue;
            if (off < at || off >= at + size)
                continue;
            const char *n = dwarf_diename(&m);
            snprintf(path + len, cap - len, ".%s", n ? n : "?");
            off -= at;
            *type = mt;
            found = 1;
            break;
        } while (dwarf_siblingof(&m, &m) == 0);
        if (!found)
            return;
    }
}

/* The member of the variable at `start` (symbol `name`) holding byte `off`:
 * "" when its type is not known or it is a scalar. */
static void sym_member(struct sym_table *t, Dwfl_Module *mod, const char *name, uint64_t start, uint64_t off,
                       char *path, size_t cap)
{
    path[0] = 0;
    struct sym_var *v = NULL;
    for (unsigned i = 0; i < t->nvar && i < SYM_VAR_CACHE; i++)
        if (t->var[i].addr == start)
            v = &t->var[i];
    if (!v) {
        v = &t->var[t->nvar++ % SYM_VAR_CACHE];
        v->addr = start;
        v->found = var_type(mod, name, &v->type);
    }
    if (v->found) {
        Dwarf_Die type = v->type;
        member_path(&type, off, path, cap);
    }
}

int sym_data_parts(struct sym_table *t, uint64_t addr, char *obj, size_t cap, char *field, size_t fcap)
{
    const struct sym_obj *so;
    GElf_Off off = 0;
    GElf_Sym sym;
    field[0] = 0;
    const char *name = sym_lookup(t, addr, obj, cap, &so, &off, &sym);
    if (name == NULL || (sym.st_size && off >= sym.st_size)) {
        const struct tf_thread_info *st = so ? NULL : sym_stack(t, addr);
        if (st) {   /* one object per thread's stack, the offset its field */
            snprintf(obj, cap, "stack of thread %" PRIu32, st->id);
            snprintf(field, fcap, "+0x%" PRIx64, addr - st->stack_lo);
            return 0;
        }
        sym_plain(t, so, addr, obj, cap);
        return 0;
    }
    snprintf(obj, cap, "%s", name);
    if (sym.st_size > 8 || off)
        sym_member(t, so->mod, name, addr - off, off, field, fcap);
    if (!field[0] && off)
        snprintf(field, fcap, "+0x%" PRIx64, (uint64_t)off);
    return 1;
}

/* The variable `d` holds the call's result from `ret` on: a range of its
 * location list starts at the return address with the value in the
 * return register (x86-64: rax, DWARF register 0), as for `p = malloc(...)`
 * where `p` was declared on an earlier line. */
static int born_at(Dwarf_Die *d, Dwarf_Addr ret)
{
    Dwarf_Attribute a;
    Dwarf_Addr base, start, end;
    Dwarf_Op *expr;
    size_t len;
    if (!dwarf_attr(d, DW_AT_location, &a))
        return 0;
    for (ptrdiff_t o = 0; (o = dwarf_getlocations(&a, o, &base, &start, &end, &expr, &len)) > 0;)
        if (start == ret && len == 1 && expr[0].atom == DW_OP_reg0)
            return 1;
    return 0;
}

/* The pointee of the one pointer variable that receives the allocating
 * call's result among the scopes holding it: declared on the call's `line`
 * (`T *p = malloc(...)`) or, failing that, in the return register from the
 * return address `ret` on (born_at). 1 when there is exactly one and it
 * points to a struct or a union. */
static int result_pointee(Dwarf_Die *scopes, int nscopes, int line, Dwarf_Addr ret, Dwarf_Die *type)
{
    for (int pass = 0; pass < 2; pass++) {
        int n = 0;
        for (int i = 0; i < nscopes && n == 0; i++) {
            Dwarf_Die d;
            if (dwarf_child(&scopes[i], &d) != 0)
                continue;
            do {
                Dwarf_Attribute a;
                Dwarf_Word l;
                Dwarf_Die vt, pt, peeled;
                if (dwarf_tag(&d) != DW_TAG_variable ||
                    (pass == 0 ? !dwarf_attr_integrate(&d, DW_AT_decl_line, &a) || dwarf_formudata(&a, &l) != 0 ||
                                     l != (Dwarf_Word)line
                               : !born_at(&d, ret)) ||
                    !dwarf_attr_integrate(&d, DW_AT_type, &a) || !dwarf_formref_die(&a, &vt) ||
                    dwarf_peel_type(&vt, &pt) != 0 || dwarf_tag(&pt) != DW_TAG_pointer_type ||
                    !dwarf_attr_integrate(&pt, DW_AT_type, &a) || !dwarf_formref_die(&a, &vt) ||
                    dwarf_peel_type(&vt, &peeled) != 0)
                    continue;
                int tag = dwarf_tag(&peeled);
                if (tag != DW_TAG_structure_type && tag != DW_TAG_union_type)
                    return 0; /* a scalar or void pointer: no members to name */
                *type = vt;
                n++;
            } while (dwarf_siblingof(&d, &d) == 0);
        }
        if (n > 0)
            return n == 1;
    }
    return 0;
}

/* The type of the blocks the call returning to `pc` allocates, cached. */
static const struct sym_block *block_type(struct sym_table *t, uint64_t pc)
{
    for (unsigned i = 0; i < t->nblock && i < SYM_BLOCK_CACHE; i++)
        if (t->block[i].pc == pc)
            return &t->block[i];
    struct sym_block *b = &t->block[t->nblock++ % SYM_BLOCK_CACHE];
    memset(b, 0, sizeof *b);
    b->pc = pc;
    const struct sym_obj *so = sym_find(t, pc - 1);
    Dwfl_Line *ln = so && so->mod ? dwfl_module_getsrc(so->mod, pc - 1) : NULL;
    int line = 0;
    Dwarf_Addr bias;
    Dwarf_Die *cu = ln && dwfl_lineinfo(ln, NULL, &line, NULL, NULL, NULL) ? dwfl_module_addrdie(so->mod, pc - 1, &bias)
                                                                           : NULL;
    Dwarf_Die *scopes = NULL;
    int ns = cu ? dwarf_getscopes(cu, pc - 1 - bias, &scopes) : 0;
    if (ns > 0 && result_pointee(scopes, ns, line, pc - bias, &b->type)) {
        Dwarf_Die peeled;
        const char *tn = dwarf_diename(&b->type);
        b->found = dwarf_peel_type(&b->type, &peeled) == 0;
        if (dwarf_tag(&b->type) == DW_TAG_typedef && tn)
            snprintf(b->name, sizeof b->name, "%s", tn);
        else
            snprintf(b->name, sizeof b->name, "%s %s", dwarf_tag(&peeled) == DW_TAG_union_type ? "union" : "struct",
                     dwarf_diename(&peeled) ? dwarf_diename(&peeled) : "?");
    }
    free(scopes);
    return b;
}

int sym_block_member(struct sym_table *t, uint64_t pc, uint64_t off, char *type, size_t tcap, char *field,
                     size_t fcap)
{
    type[0] = field[0] = 0;
    const struct sym_block *b = t && pc ? block_type(t, pc) : NULL;
    Dwarf_Die ty;
    Dwarf_Word size;
    if (b == NULL || !b->found || (ty = b->type, dwarf_aggregate_size(&ty, &size) != 0) || size == 0)
        return 0;
    snprintf(type, tcap, "%s", b->name);
    if (off >= size) /* calloc(n, sizeof(T)) and the like: an array of them */
        snprintf(field, fcap, "[%llu]", (unsigned long long)(off / size));
    member_path(&ty, off % size, field, fcap);
    return 1;
}

/* The function, offset, source file and line of a code address (NULL
 * function/file when unknown). Returns the object, or NULL when none holds
 * the address or it could not be read. */
static const struct sym_obj *sym_code_parts(struct sym_table *t, uint64_t pc, const char **fn, GElf_Off *off,
                                            const char **file, int *lineno)
{
    const struct sym_obj *so = sym_find(t, pc);
    *fn = *file = NULL;
    *off = 0;
    *lineno = 0;
    if (so == NULL || so->mod == NULL)
        return so;
    GElf_Sym sym;
    *fn = sym_clone_name(dwfl_module_addrinfo(so->mod, pc, off, &sym, NULL, NULL, NULL), t->fnbuf, sizeof t->fnbuf);
    Dwfl_Line *line = dwfl_module_getsrc(so->mod, pc);
    *file = line ? dwfl_lineinfo(line, NULL, lineno, NULL, NULL, NULL) : NULL;
    return so;
}

int sym_code(struct sym_table *t, uint64_t pc, char *out, size_t cap)
{
    const char *fn, *file;
    GElf_Off off;
    int lineno;
    const struct sym_obj *so = sym_code_parts(t, pc, &fn, &off, &file, &lineno);
    if (file == NULL) {
        if (fn)
            snprintf(out, cap, "%s+0x%" PRIx64, fn, (uint64_t)off);
        else
            sym_plain(t, so, pc, out, cap);
        return 0;
    }
    snprintf(out, cap, "%s (%s:%d)", fn ? fn : "?", sym_base(file), lineno);
    return 1;
}

size_t sym_name_sites(struct sym_table *t, struct tf_site *s, size_t n)
{
    const size_t plen = strlen(TF_SITE_PC_PREFIX);
    size_t named = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i].file[0] || strncmp(s[i].label, TF_SITE_PC_PREFIX, plen) != 0)
            continue;
        /* A return address: the call is the instruction before it. */
        uint64_t pc = strtoull(s[i].label + plen, NULL, 16) - 1;
        const char *fn, *file;
        GElf_Off off;
        int lineno;
        sym_code_parts(t, pc, &fn, &off, &file, &lineno);
        if (fn == NULL && file == NULL)
            continue;
        if (fn)
            snprintf(s[i].label, sizeof s[i].label, "%.127s", fn);
        if (file) {
            snprintf(s[i].file, sizeof s[i].file, "%s", file);
            s[i].line = lineno;
        }
        named++;
    }
    return named;
}

void sym_site_name(const struct tf_site *s, char *out, size_t cap)
{
    const char *file = sym_base(s->file);
    if (s->label[0] && file[0])
        snprintf(out, cap, "%s (%s:%d)", s->label, file, (int)s->line);
    else if (file[0])
        snprintf(out, cap, "%s:%d", file, (int)s->line);
    else
        snprintf(out, cap, "%s", s->label[0] ? s->label : "?");
}

/*
 * loadmap.c - the process's load map (see loadmap.h).
 *
 * Owns: the walk over dl_iterate_phdr and the parsing of the in-memory
 * PT_NOTE segments for NT_GNU_BUILD_ID. Never allocates: the caller's array
 * is filled in place.
 */
#include "loadmap.h"

#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

struct lm_ctx {
    struct tf_object *out;
    size_t n, max;
};

/* The GNU build-id from one PT_NOTE segment, if it holds one. */
static void lm_build_id(struct tf_object *o, const uint8_t *p, size_t len)
{
    while (len >= sizeof(ElfW(Nhdr))) {
        const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)(const void *)p;
        size_t name = (nh->n_namesz + 3u) & ~3u, desc = (nh->n_descsz + 3u) & ~3u;
        size_t total = sizeof *nh + name + desc;
        if (total > len)
            return;
        if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
            memcmp(p + sizeof *nh, "GNU", 4) == 0 && nh->n_descsz <= sizeof o->build_id) {
            memcpy(o->build_id, p + sizeof *nh + name, nh->n_descsz);
            o->build_id_len = nh->n_descsz;
            return;
        }
        p += total;
        len -= total;
    }
}

static int lm_one(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct lm_ctx *x = arg;
    if (x->n == x->max)
        return 1;
    struct tf_object *o = &x->out[x->n];
    memset(o, 0, sizeof *o);
    o->base = (uint64_t)info->dlpi_addr;
    o->start = UINT64_MAX;
    for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD) {
            uint64_t a = o->base + ph->p_vaddr;
            if (a < o->start)
                o->start = a;
            if (a + ph->p_memsz > o->end)
                o->end = a + ph->p_memsz;
        } else if (ph->p_type == PT_NOTE && o->build_id_len == 0) {
            lm_build_id(o, (const uint8_t *)(uintptr_t)(o->base + ph->p_vaddr), ph->p_filesz);
        }
    }
    if (o->start == UINT64_MAX)
        return 0; /* nothing mapped */
    const char *name = info->dlpi_name;
    if (x->n == 0 && (name == NULL || name[0] == '\0')) {
        /* The executable: the loader gives no name; the kernel knows the path. */
        ssize_t k = readlink("/proc/self/exe", o->path, sizeof o->path - 1);
        o->path[k > 0 ? k : 0] = '\0';
    } else if (name != NULL) {
        size_t l = strnlen(name, sizeof o->path - 1);
        memcpy(o->path, name, l);
        o->path[l] = '\0';
    }
    x->n++;
    return 0;
}

size_t loadmap_collect(struct tf_object *out, size_t max)
{
    struct lm_ctx x = { out, 0, max };
    dl_iterate_phdr(lm_one, &x);
    return x.n;
}

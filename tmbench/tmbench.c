/*
 * tmbench.c - main of the tmbench executables: `tmbench <workload> [options]`,
 * `tmbench list-workloads`, `tmbench --help`.
 *
 * Owns: the table of workloads. A workload whose wl_<name>.c is not part of
 * this build (the libitm and mutex builds hold only the portable ones) is a
 * weak reference that resolves to NULL and is skipped; this file must never
 * need to know which ones exist.
 */
#include "bench.h"

#include <stdio.h>
#include <string.h>

#define WEAK_WORKLOAD(x) extern const struct workload x __attribute__((weak))
WEAK_WORKLOAD(wl_list);
WEAK_WORKLOAD(wl_rbtree);
WEAK_WORKLOAD(wl_hash);
WEAK_WORKLOAD(wl_bank);
WEAK_WORKLOAD(wl_eventcost);
WEAK_WORKLOAD(wl_vacation);
WEAK_WORKLOAD(wl_intruder);
WEAK_WORKLOAD(wl_kmeans);
WEAK_WORKLOAD(wl_labyrinth);
WEAK_WORKLOAD(wl_ssca2);
WEAK_WORKLOAD(wl_stress);

static const struct workload *const workloads[] = {
    &wl_list, &wl_rbtree, &wl_hash, &wl_bank, &wl_eventcost, &wl_vacation,
    &wl_intruder, &wl_kmeans, &wl_labyrinth, &wl_ssca2, &wl_stress,
};
#define N_WORKLOADS (sizeof workloads / sizeof workloads[0])

static void usage(FILE *out)
{
    fprintf(out,
            "usage: tmbench <workload> [options]   run a workload, print one JSON line\n"
            "       tmbench <workload> --help      the workload's options\n"
            "       tmbench list-workloads         the workloads in this build\n"
            "       tmbench --help | -V, --version\n"
            "backend of this build: %s\n"
            "workloads:",
            bench_backend);
    for (size_t i = 0; i < N_WORKLOADS; i++)
        if (workloads[i])
            fprintf(out, " %s", workloads[i]->name);
    fprintf(out, "\n\n");
    bench_usage(out, NULL);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "tmbench: no workload given (see tmbench --help)\n");
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0) {
        printf("tmbench (libtmtrace %s, backend %s)\n", TMT_PROJECT_VERSION, bench_backend);
        return 0;
    }
    if (strcmp(cmd, "list-workloads") == 0) {
        for (size_t i = 0; i < N_WORKLOADS; i++)
            if (workloads[i])
                printf("%s\n", workloads[i]->name);
        return 0;
    }
    for (size_t i = 0; i < N_WORKLOADS; i++)
        if (workloads[i] && strcmp(workloads[i]->name, cmd) == 0)
            return bench_run(workloads[i], argc - 1, argv + 1);
    fprintf(stderr, "tmbench: unknown workload '%s' (see tmbench list-workloads)\n", cmd);
    return 2;
}

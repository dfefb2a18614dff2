/*
 * test_include_graph.c - the headers of libtmtrace and the tools include
 * each other without a cycle (a cycle means two modules that cannot be
 * understood, or built, one without the other).
 *
 * The graph: one node per header in the scanned directories, an edge for
 * each `#include "name.h"` that names a header of one of those directories.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#define IG_MAX_NODES 512
#define IG_MAX_EDGES 32

struct ig_node {
    char name[128];
    char path[1024];
    int edges[IG_MAX_EDGES];
    int nedges;
    int state; /* 0 unvisited, 1 on the DFS stack, 2 done */
};

struct ig_graph {
    struct ig_node n[IG_MAX_NODES];
    int count;
    char cycle[2048]; /* "a.h -> b.h -> a.h" once found */
};

static int ig_find(const struct ig_graph *g, const char *name)
{
    for (int i = 0; i < g->count; i++)
        if (strcmp(g->n[i].name, name) == 0)
            return i;
    return -1;
}

/* Adds every *.h of `dir` as a node. */
static void ig_add_dir(struct ig_graph *g, const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len < 3 || strcmp(e->d_name + len - 2, ".h") != 0 || len >= sizeof g->n[0].name)
            continue;
        assert_true(g->count < IG_MAX_NODES);
        struct ig_node *n = &g->n[g->count++];
        memset(n, 0, sizeof *n);
        snprintf(n->name, sizeof n->name, "%s", e->d_name);
        snprintf(n->path, sizeof n->path, "%s/%s", dir, e->d_name);
    }
    closedir(d);
}

/* The edges of each node: its quoted includes that name a node. */
static void ig_read_edges(struct ig_graph *g)
{
    for (int i = 0; i < g->count; i++) {
        FILE *f = fopen(g->n[i].path, "r");
        assert_non_null(f);
        char line[1024], inc[256];
        while (fgets(line, sizeof line, f)) {
            if (sscanf(line, " # include \"%255[^\"]\"", inc) != 1)
                continue;
            int j = ig_find(g, inc);
            if (j >= 0) {
                assert_true(g->n[i].nedges < IG_MAX_EDGES);
                g->n[i].edges[g->n[i].nedges++] = j;
            }
        }
        fclose(f);
    }
}

/* Depth-first search; on a back edge writes the cycle into g->cycle. */
static int ig_dfs(struct ig_graph *g, int v, int *stack, int depth)
{
    g->n[v].state = 1;
    stack[depth] = v;
    for (int k = 0; k < g->n[v].nedges; k++) {
        int w = g->n[v].edges[k];
        if (g->n[w].state == 1) {
            size_t at = 0;
            int from = depth;
            while (stack[from] != w)
                from--;
            for (int s = from; s <= depth; s++)
                at += (size_t)snprintf(g->cycle + at, sizeof g->cycle - at, "%s -> ", g->n[stack[s]].name);
            snprintf(g->cycle + at, sizeof g->cycle - at, "%s", g->n[w].name);
            return 1;
        }
        if (g->n[w].state == 0 && ig_dfs(g, w, stack, depth + 1))
            return 1;
    }
    g->n[v].state = 2;
    return 0;
}

/* 1 and g->cycle set if the headers of `dirs` include each other in a cycle. */
static int ig_has_cycle(struct ig_graph *g, const char *const *dirs, int ndirs)
{
    memset(g, 0, sizeof *g);
    for (int i = 0; i < ndirs; i++)
        ig_add_dir(g, dirs[i]);
    ig_read_edges(g);
    int stack[IG_MAX_NODES];
    for (int v = 0; v < g->count; v++)
        if (g->n[v].state == 0 && ig_dfs(g, v, stack, 0))
            return 1;
    return 0;
}

static void ig_write(const char *dir, const char *name, const char *text)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static struct ig_graph graph;

static void test_a_cycle_through_two_directories_is_found_and_named(void **s)
{
    (void)s;
    char a[] = "/tmp/tmt-incA-XXXXXX", b[] = "/tmp/tmt-incB-XXXXXX";
    assert_non_null(mkdtemp(a));
    assert_non_null(mkdtemp(b));
    ig_write(a, "one.h", "#ifndef ONE\n#include <stdio.h>\n#include \"two.h\"\n#endif\n");
    ig_write(b, "two.h", "#include \"three.h\"\n");
    ig_write(b, "three.h", "  #  include \"one.h\" /* back */\n");
    ig_write(b, "leaf.h", "#include \"two.h\"\n");
    const char *dirs[] = { a, b };
    int found = ig_has_cycle(&graph, dirs, 2);
    const char *names[] = { "one.h", "two.h", "three.h", "leaf.h" };
    for (int i = 0; i < 4; i++) {
        char p[1024];
        snprintf(p, sizeof p, "%s/%s", i == 0 ? a : b, names[i]);
        unlink(p);
    }
    rmdir(a);
    rmdir(b);
    assert_int_equal(found, 1);
    assert_non_null(strstr(graph.cycle, "one.h"));
    assert_non_null(strstr(graph.cycle, "two.h"));
    assert_non_null(strstr(graph.cycle, "three.h"));
    assert_null(strstr(graph.cycle, "leaf.h"));
}

static void test_the_headers_of_libtmtrace_and_the_tools_include_no_cycle(void **s)
{
    (void)s;
    static const char *const rel[] = { "libtmtrace/include", "libtmtrace/format", "libtmtrace/tracer",
                                       "libtmtrace/tm", "libtmtrace/api", "libtmtrace/itm",
                                       "tools/reader", "tools/check", "tools/cmd" };
    enum { NDIRS = sizeof rel / sizeof rel[0] };
    static char paths[NDIRS][1024];
    const char *dirs[NDIRS];
    for (int i = 0; i < NDIRS; i++) {
        snprintf(paths[i], sizeof paths[i], "%s/%s", TMT_SOURCE_ROOT, rel[i]);
        dirs[i] = paths[i];
    }
    int ndirs = NDIRS;
    int found = ig_has_cycle(&graph, dirs, ndirs);
    if (found)
        fprintf(stderr, "include cycle: %s\n", graph.cycle);
    assert_int_equal(found, 0);
    assert_true(graph.count > 30); /* the directories were really read */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_cycle_through_two_directories_is_found_and_named),
        cmocka_unit_test(test_the_headers_of_libtmtrace_and_the_tools_include_no_cycle),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

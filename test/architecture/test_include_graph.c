/*
 * test_include_graph.c - the headers of libtmtrace and the tools include
 * each other without a cycle (a cycle means two modules that cannot be
 * understood, or built, one without the other), and no file includes a
 * header of a layer above its own.
 *
 * The graph: one node per header in the scanned directories, an edge for
 * each `#include "name.h"` that names a header of one of those directories.
 * The layers, from the bottom: the public header (include), then the
 * runtime's format < tracer < tm < api < itm, and the tools' reader < check
 * < cmd, which stand on format (and the public header) only. A .c or .h of
 * one layer may include the headers of its own layer and of those below it
 * (scripts/modgraph checks the same arrows, and the calls between objects).
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

#include "test_util.h"

#define IG_MAX_NODES 512
#define IG_MAX_EDGES 32

/* The layers; IG_MAY[l] is the set (bits) of the layers layer l may include. */
enum ig_layer { IG_INCLUDE, IG_FORMAT, IG_TRACER, IG_TM, IG_API, IG_ITM, IG_READER, IG_CHECK, IG_CMD, IG_LAYERS };
static const char *const ig_layer_name[IG_LAYERS] = { "include", "format", "tracer", "tm", "api", "itm",
                                                       "reader", "check", "cmd" };
#define IG_BIT(l) (1u << (l))
#define IG_MAY_FORMAT (IG_BIT(IG_INCLUDE) | IG_BIT(IG_FORMAT))
#define IG_MAY_TM (IG_MAY_FORMAT | IG_BIT(IG_TRACER) | IG_BIT(IG_TM))
#define IG_MAY_READER (IG_MAY_FORMAT | IG_BIT(IG_READER))
static const unsigned IG_MAY[IG_LAYERS] = {
    [IG_INCLUDE] = IG_BIT(IG_INCLUDE),
    [IG_FORMAT] = IG_MAY_FORMAT,
    [IG_TRACER] = IG_MAY_FORMAT | IG_BIT(IG_TRACER),
    [IG_TM] = IG_MAY_TM,
    [IG_API] = IG_MAY_TM | IG_BIT(IG_API),
    [IG_ITM] = IG_MAY_TM | IG_BIT(IG_API) | IG_BIT(IG_ITM),
    [IG_READER] = IG_MAY_READER,
    [IG_CHECK] = IG_MAY_READER | IG_BIT(IG_CHECK),
    [IG_CMD] = IG_MAY_READER | IG_BIT(IG_CHECK) | IG_BIT(IG_CMD),
};

/* A scanned directory and its layer. */
struct ig_dir {
    const char *path;
    enum ig_layer layer;
};

struct ig_node {
    char name[128];
    char path[1024];
    enum ig_layer layer;
    int edges[IG_MAX_EDGES];
    int nedges;
    int state; /* 0 unvisited, 1 on the DFS stack, 2 done */
};

struct ig_graph {
    struct ig_node n[IG_MAX_NODES];
    int count;
    char cycle[2048];  /* "a.h -> b.h -> a.h" once found */
    char upward[4096]; /* "f.c (tracer) includes x.h (tm)" per upward include */
    int nupward;
};

static int ig_find(const struct ig_graph *g, const char *name)
{
    for (int i = 0; i < g->count; i++)
        if (strcmp(g->n[i].name, name) == 0)
            return i;
    return -1;
}

/* Adds every *.h of `dir` as a node of its layer. */
static void ig_add_dir(struct ig_graph *g, const char *dir, enum ig_layer layer)
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
        n->layer = layer;
    }
    closedir(d);
}

/* The nodes the quoted includes of the file at `path` name: their indices
 * into `out` (at most `cap`); how many. */
static int ig_file_includes(const struct ig_graph *g, const char *path, int *out, int cap)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[1024], inc[256];
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, " # include \"%255[^\"]\"", inc) != 1)
            continue;
        int j = ig_find(g, inc);
        if (j >= 0) {
            assert_true(n < cap);
            out[n++] = j;
        }
    }
    fclose(f);
    return n;
}

/* The edges of each node: its quoted includes that name a node. */
static void ig_read_edges(struct ig_graph *g)
{
    for (int i = 0; i < g->count; i++)
        g->n[i].nedges = ig_file_includes(g, g->n[i].path, g->n[i].edges, IG_MAX_EDGES);
}

/* Every .c and .h of `dir` that includes a header of a layer its own may
 * not include goes into g->upward; returns how many did. */
static int ig_check_layer(struct ig_graph *g, const struct ig_dir *dir)
{
    DIR *d = opendir(dir->path);
    assert_non_null(d);
    struct dirent *e;
    int found = 0;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len < 3 || (strcmp(e->d_name + len - 2, ".h") != 0 && strcmp(e->d_name + len - 2, ".c") != 0))
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir->path, e->d_name);
        int inc[IG_MAX_EDGES];
        int n = ig_file_includes(g, path, inc, IG_MAX_EDGES);
        for (int k = 0; k < n; k++) {
            const struct ig_node *to = &g->n[inc[k]];
            if (IG_MAY[dir->layer] & IG_BIT(to->layer))
                continue;
            size_t at = strlen(g->upward);
            snprintf(g->upward + at, sizeof g->upward - at, "%s (%s) includes %s (%s); ", path,
                     ig_layer_name[dir->layer], to->path, ig_layer_name[to->layer]);
            found++;
        }
    }
    closedir(d);
    return found;
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

/* Reads the headers of `dirs` into `g` and checks every file's includes
 * against the layers (g->nupward, g->upward). */
static void ig_read(struct ig_graph *g, const struct ig_dir *dirs, int ndirs)
{
    memset(g, 0, sizeof *g);
    for (int i = 0; i < ndirs; i++)
        ig_add_dir(g, dirs[i].path, dirs[i].layer);
    ig_read_edges(g);
    for (int i = 0; i < ndirs; i++)
        g->nupward += ig_check_layer(g, &dirs[i]);
}

/* 1 and g->cycle set if the headers read include each other in a cycle. */
static int ig_has_cycle(struct ig_graph *g)
{
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

/* A planted file: the index of its folder, its name and text. */
struct ig_file {
    int dir;
    const char *name;
    const char *text;
};

/* Writes `files` into folders TMPDIR/<test>-<i> (of the layers
 * `layers[i]`) and reads those folders into `g`. */
static void ig_plant(struct ig_graph *g, const char *test, const enum ig_layer *layers, int ndirs,
                     const struct ig_file *files, int nfiles)
{
    static char paths[8][512];
    struct ig_dir dirs[8];
    assert_true(ndirs <= 8);
    for (int i = 0; i < ndirs; i++) {
        snprintf(paths[i], sizeof paths[i], "%s/%s-%d", tu_tmpdir(), test, i);
        assert_int_equal(mkdir(paths[i], 0755), 0);
        dirs[i] = (struct ig_dir){ paths[i], layers[i] };
    }
    for (int k = 0; k < nfiles; k++)
        ig_write(paths[files[k].dir], files[k].name, files[k].text);
    ig_read(g, dirs, ndirs);
}

static void test_a_cycle_through_two_directories_is_found_and_named(void **s)
{
    (void)s;
    static const enum ig_layer layers[] = { IG_TM, IG_TM };
    static const struct ig_file files[] = {
        { 0, "one.h", "#ifndef ONE\n#include <stdio.h>\n#include \"two.h\"\n#endif\n" },
        { 1, "two.h", "#include \"three.h\"\n" },
        { 1, "three.h", "  #  include \"one.h\" /* back */\n" },
        { 1, "leaf.h", "#include \"two.h\"\n" },
    };
    ig_plant(&graph, "cycle", layers, 2, files, 4);
    assert_int_equal(ig_has_cycle(&graph), 1);
    assert_int_equal(graph.nupward, 0);
    assert_non_null(strstr(graph.cycle, "one.h"));
    assert_non_null(strstr(graph.cycle, "two.h"));
    assert_non_null(strstr(graph.cycle, "three.h"));
    assert_null(strstr(graph.cycle, "leaf.h"));
}

/* format/low.h includes tracer/high.h: up a layer, named; tracer/high.c
 * including format/low.h is down, and cmd/main.c including tm/tx.h is
 * across (the tools stand on format only). */
static void test_an_include_that_goes_up_or_across_a_layer_is_found_and_named(void **s)
{
    (void)s;
    static const enum ig_layer layers[] = { IG_FORMAT, IG_TRACER, IG_TM, IG_CMD };
    static const struct ig_file files[] = {
        { 0, "low.h", "#include \"high.h\"\n" },
        { 1, "high.h", "struct high;\n" },
        { 1, "high.c", "#include \"low.h\"\n#include \"high.h\"\n" },
        { 2, "tx.h", "#include \"low.h\"\n" },
        { 3, "main.c", "#include \"low.h\"\n#include \"tx.h\"\n" },
    };
    ig_plant(&graph, "layers", layers, 4, files, 5);
    assert_int_equal(graph.nupward, 2);
    assert_non_null(strstr(graph.upward, "layers-0/low.h (format) includes "));
    assert_non_null(strstr(graph.upward, "layers-1/high.h (tracer); "));
    assert_non_null(strstr(graph.upward, "layers-3/main.c (cmd) includes "));
    assert_non_null(strstr(graph.upward, "layers-2/tx.h (tm); "));
    assert_null(strstr(graph.upward, "high.c"));
}

/* The real tree: every folder with its layer. */
static int ig_read_tree(struct ig_graph *g)
{
    static const struct { const char *rel; enum ig_layer layer; } tree[] = {
        { "libtmtrace/include", IG_INCLUDE }, { "libtmtrace/format", IG_FORMAT }, { "libtmtrace/tracer", IG_TRACER },
        { "libtmtrace/tm", IG_TM }, { "libtmtrace/api", IG_API }, { "libtmtrace/itm", IG_ITM },
        { "tools/reader", IG_READER }, { "tools/check", IG_CHECK }, { "tools/cmd", IG_CMD },
    };
    enum { NDIRS = sizeof tree / sizeof tree[0] };
    static char paths[NDIRS][1024];
    struct ig_dir dirs[NDIRS];
    for (int i = 0; i < NDIRS; i++) {
        snprintf(paths[i], sizeof paths[i], "%s/%s", TMT_SOURCE_ROOT, tree[i].rel);
        dirs[i] = (struct ig_dir){ paths[i], tree[i].layer };
    }
    ig_read(g, dirs, NDIRS);
    return g->count;
}

static void test_the_headers_of_libtmtrace_and_the_tools_include_no_cycle(void **s)
{
    (void)s;
    assert_true(ig_read_tree(&graph) > 30); /* the directories were really read */
    int found = ig_has_cycle(&graph);
    if (found)
        fprintf(stderr, "include cycle: %s\n", graph.cycle);
    assert_int_equal(found, 0);
}

static void test_no_file_of_libtmtrace_or_the_tools_includes_a_layer_above_its_own(void **s)
{
    (void)s;
    assert_true(ig_read_tree(&graph) > 30);
    if (graph.nupward)
        fprintf(stderr, "upward includes: %s\n", graph.upward);
    assert_int_equal(graph.nupward, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_cycle_through_two_directories_is_found_and_named),
        cmocka_unit_test(test_an_include_that_goes_up_or_across_a_layer_is_found_and_named),
        cmocka_unit_test(test_the_headers_of_libtmtrace_and_the_tools_include_no_cycle),
        cmocka_unit_test(test_no_file_of_libtmtrace_or_the_tools_includes_a_layer_above_its_own),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

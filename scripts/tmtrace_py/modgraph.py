"""modgraph - the module graph of libtmtrace and the tools: its cycles and
the arrows that go up a layer.

Owns: the layers (the runtime's format < tracer < tm < api < itm; the
tools' reader < check < cmd, which stand on the format layer only; the
public header tmtrace.h below them all), the module graph (a module is a .c
file and its .h, or a header alone; an arrow is a quoted #include of
another module's header, or a symbol an object of the build uses and
another module's object defines, taken with nm from the product's objects),
the exceptions (calls to the functions libtmtrace/tm/tx_upcall.h declares,
the engines' named upward calls; and the C library's allocator, which
libtmtrace-itm defines over glibc's to record the program's blocks: every
module's malloc is still the C library's), and the report: every elementary cycle,
every include or use that goes up a layer or across to a layer that is not
below, every module in no layer. Exit 1 on any finding.
Never: builds anything (it reads the build tree it is given) or changes a file.
"""
import os
import sys

from . import cli, csource, objects

PROG = "modgraph"

# Each folder's layer, and the layers each one may include or call.
LAYER_OF = {"libtmtrace/include": "include", "libtmtrace/format": "format", "libtmtrace/tracer": "tracer",
            "libtmtrace/tm": "tm", "libtmtrace/api": "api", "libtmtrace/itm": "itm",
            "tools/reader": "reader", "tools/check": "check", "tools/cmd": "cmd"}
BELOW = {"include": [], "format": ["include"]}
for _upper, _lower in (("tracer", "format"), ("tm", "tracer"), ("api", "tm"), ("itm", "api"),
                       ("reader", "format"), ("check", "reader"), ("cmd", "check")):
    BELOW[_upper] = BELOW[_lower] + [_lower]
SOURCE_DIRS = ("libtmtrace", "tools")
UPCALL_HEADER = "libtmtrace/tm/tx_upcall.h"
# C library functions a module defines over the C library's (itm/itm_malloc.c):
# a use of one is a call into the C library, not an arrow to that module.
INTERPOSED = frozenset(("malloc", "calloc", "realloc", "free"))
MAX_CYCLES = 200  # cycles printed; more are counted


def module_of(path):
    """The module of a source file: its path without the extension."""
    return os.path.splitext(path)[0]


def layer(module):
    return LAYER_OF.get(os.path.dirname(module))


def source_files(root):
    """The .c, .h and .S files below ROOT's libtmtrace/ and tools/, relative to ROOT."""
    out = []
    for top in SOURCE_DIRS:
        for d, dirs, files in os.walk(os.path.join(root, top)):
            dirs.sort()
            out += [os.path.relpath(os.path.join(d, f), root) for f in sorted(files)
                    if os.path.splitext(f)[1] in (".c", ".h", ".S")]
    return out


def read_includes(root, files):
    """[(from module, to module, what)]: the quoted includes of FILES that name
    a header of FILES (the including file's folder first, then any)."""
    headers = {}
    for f in files:
        if f.endswith(".h"):
            headers.setdefault(os.path.basename(f), []).append(f)
    out = []
    for f in files:
        with open(os.path.join(root, f), errors="replace") as fh:
            text = fh.read()
        for line, name in csource.includes(text):
            near = os.path.normpath(os.path.join(os.path.dirname(f), name))
            targets = [near] if near in files else headers.get(os.path.basename(name), [])
            for t in targets:
                if module_of(t) != module_of(f):
                    out.append((module_of(f), module_of(t), '%s:%d includes "%s"' % (f, line, name)))
    return out


def read_upcalls(root):
    """The functions UPCALL_HEADER declares (none when it does not exist)."""
    try:
        with open(os.path.join(root, UPCALL_HEADER)) as f:
            return set(csource.declared_functions(f.read()))
    except FileNotFoundError:
        return set()


def read_calls(root, build):
    """[(from module, to module, symbol)]: each global symbol a product object
    uses that an object of another module defines."""
    objs = objects.select(build, objects.compiled(build, root), objects.PRODUCT_DIRS, objects.TEST_DIRS)
    syms = objects.symbols(build, objs)
    definers = {}
    for obj, (defined, _) in syms.items():
        for name in defined:
            definers.setdefault(name, set()).add(module_of(objs[obj]))
    out = set()
    for obj, (_, used) in syms.items():
        me = module_of(objs[obj])
        for name in used:
            if name in INTERPOSED:
                continue
            for m in definers.get(name, ()):
                if m != me:
                    out.add((me, m, name))
    return sorted(out)


class Graph:
    """Modules and the arrows between them, each arrow with what makes it."""

    def __init__(self):
        self.modules = set()
        self.arrows = {}  # (from, to) -> [what]

    def add(self, a, b, what):
        self.modules.update((a, b))
        self.arrows.setdefault((a, b), []).append(what)

    def successors(self):
        out = {m: [] for m in self.modules}
        for a, b in sorted(self.arrows):
            out[a].append(b)
        return out


def build_graph(includes, calls, upcalls, files=()):
    """The graph of INCLUDES and CALLS, leaving out the calls to UPCALLS; every
    module of FILES is a node even with no arrow."""
    g = Graph()
    g.modules.update(module_of(f) for f in files)
    for a, b, what in includes:
        g.add(a, b, what)
    for a, b, name in calls:
        if name not in upcalls:
            g.add(a, b, "uses " + name)
    return g


def cycles(g, limit=MAX_CYCLES):
    """(the elementary cycles of G, at most LIMIT, each a list of modules from
    its smallest; how many there are in all)."""
    succ = g.successors()
    order = sorted(g.modules)
    found, count = [], 0
    for i, start in enumerate(order):
        allowed = set(order[i:])
        stack = [(start, iter(succ[start]))]
        path, on_path = [start], {start}
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                stack.pop()
                on_path.discard(path.pop())
            elif nxt == start:
                count += 1
                if len(found) < limit:
                    found.append(list(path))
            elif nxt in allowed and nxt not in on_path:
                stack.append((nxt, iter(succ[nxt])))
                path.append(nxt)
                on_path.add(nxt)
    return found, count


def describe_cycle(g, cyc):
    """'a -[what]-> b -[what]-> a', each arrow with what makes it."""
    text = cyc[0]
    for a, b in zip(cyc, cyc[1:] + cyc[:1]):
        whats = g.arrows[(a, b)]
        text += " -[%s]-> %s" % ("; ".join(whats[:3]) + ("; ..." if len(whats) > 3 else ""), b)
    return text


def layer_findings(g):
    """One line per arrow that goes up a layer or across, and per module in no layer."""
    out = ["module %s: in no layer (its folder is not one of %s)" % (m, ", ".join(sorted(LAYER_OF)))
           for m in sorted(g.modules) if layer(m) is None]
    for (a, b), whats in sorted(g.arrows.items()):
        la, lb = layer(a), layer(b)
        if la is None or lb is None or la == lb or lb in BELOW[la]:
            continue
        way = "up" if la in BELOW.get(lb, []) else "across"
        for what in whats:
            out.append("%s a layer: %s %s (%s) - %s may use only %s"
                       % (way, a, what, b, la, ", ".join(BELOW[la]) or "itself"))
    return out


def check(root, build, out):
    """Writes every finding of ROOT's module graph (objects from BUILD) to OUT; their number."""
    files = source_files(root)
    upcalls = read_upcalls(root)
    g = build_graph(read_includes(root, files), read_calls(root, build), upcalls, files)
    across = layer_findings(g)
    found, count = cycles(g)
    for line in across + ["cycle: " + describe_cycle(g, c) for c in found]:
        out.write(line + "\n")
    if count > len(found):
        out.write("and %d more cycles\n" % (count - len(found)))
    out.write("%d modules, %d arrows: %d cycles, %d layer findings; allowed upward calls (%s): %s\n"
              % (len(g.modules), len(g.arrows), count, len(across), UPCALL_HEADER,
                 ", ".join(sorted(upcalls)) or "none"))
    return len(across) + count


def parse_args(argv):
    p = objects.tree_parser(
        PROG, "Reads the module graph of libtmtrace/ and tools/ (a module is a .c and its .h; arrows are "
              "quoted #includes and the symbols one module's objects use from another's, read with nm from "
              "the build's objects) and prints every cycle and every include or use that goes up a layer "
              "(format < tracer < tm < api < itm; tools: reader < check < cmd, above format only). Calls "
              "to the functions libtmtrace/tm/tx_upcall.h declares are the allowed upward calls. Exit 1 "
              "on any finding, 2 on a usage or read error.")
    return objects.parse_tree_args(p, argv, "libtmtrace")


def main(argv):
    a = parse_args(argv)
    return cli.EXIT_FAILED if check(a.root, a.build, sys.stdout) else 0


if __name__ == "__main__":
    sys.exit(cli.run_main(PROG, main))

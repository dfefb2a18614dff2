"""unused - every non-static function of libtmtrace/ and tools/ has a caller
outside the tests.

Owns: what counts as a caller (an object of the build that is not a test -
the library, the tools, tmbench, compat/tl2 - using the symbol, found with
nm; or a function body or initializer of the defining file naming it, since
a call the compiler inlined leaves no symbol), which functions are exempt
(the exported API: tmt_*, the GCC TM ABI's _ITM_* and _ZGTt*, TL2's Tx* and
tmalloc_*, and main), and the report: one line per function without a
caller. Exit 1 on any.
Never: builds anything, or counts a test or the test-hooks build as a caller.
"""
import fnmatch
import os
import sys

from . import cli, csource, objects

PROG = "unused"
EXEMPT = ("tmt_*", "_ITM_*", "_ZGTt*", "Tx*", "tmalloc_*", "main")
SOURCE_DIRS = ("libtmtrace/", "tools/")


def exempt(name):
    return any(fnmatch.fnmatchcase(name, p) for p in EXEMPT)


def uncalled(root, build):
    """[(source file, function)]: the global functions the product's objects
    define in SOURCE_DIRS that no other non-test object uses and their own
    file's code does not name."""
    objs = objects.compiled(build, root)
    product = objects.select(build, objs, objects.PRODUCT_DIRS, objects.TEST_DIRS)
    callers = {o: s for o, s in objs.items()
               if not objects.in_dirs(o, objects.TEST_DIRS) and os.path.isfile(os.path.join(build, o))}
    syms = objects.symbols(build, callers)
    used_by = {}
    for obj, (_, used) in syms.items():
        for name in used:
            used_by.setdefault(name, set()).add(callers[obj])
    out = set()
    for obj, src in product.items():
        if not src.startswith(SOURCE_DIRS):
            continue
        own = None
        for name, letter in syms[obj][0].items():
            if letter not in "TW" or exempt(name) or used_by.get(name, set()) - {src}:
                continue
            if own is None:
                with open(os.path.join(root, src), errors="replace") as f:
                    own = csource.used_identifiers(f.read())
            if name not in own:
                out.add((src, name))
    return sorted(out)


def parse_args(argv):
    p = objects.tree_parser(
        PROG, "Prints every non-static function of libtmtrace/ and tools/ that nothing but the tests calls: "
              "no object of the build outside test/ (and the test-hooks build) uses it, and its own file "
              "does not name it in a function body. Exempt: %s. Exit 1 on any, 2 on a usage or read "
              "error." % ", ".join(EXEMPT))
    return objects.parse_tree_args(p, argv, "libtmtrace")


def main(argv):
    a = parse_args(argv)
    found = uncalled(a.root, a.build)
    for src, name in found:
        print("%s: %s has no caller outside the tests" % (src, name))
    print("%d functions without a caller" % len(found))
    return cli.EXIT_FAILED if found else 0


if __name__ == "__main__":
    sys.exit(cli.run_main(PROG, main))

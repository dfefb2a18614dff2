"""tmtrace_py.modgraph: cycles of includes and calls, arrows that go up a
layer, and the upward calls tx_upcall.h allows, on planted trees."""
import io
import unittest

import support
from tmtrace_py import cli, modgraph

# format/low calls nothing; tm/a and tm/b call each other; api/top includes
# and calls down.
CLEAN = {
    "libtmtrace/format/low.h": "int low_fn(void);\n",
    "libtmtrace/format/low.c": '#include "low.h"\nint low_fn(void) { return 1; }\n',
    "libtmtrace/tm/a.h": "int a_fn(int);\n",
    "libtmtrace/tm/a.c": '#include "a.h"\n#include "low.h"\nint a_fn(int x) { return x ? low_fn() : 0; }\n',
    "libtmtrace/api/top.c": '#include "a.h"\nint top_fn(void) { return a_fn(2); }\n',
}
# b calls a and a calls b: a cycle without any include between them.
CALL_CYCLE = dict(CLEAN, **{
    "libtmtrace/tm/a.c": "extern int b_fn(int);\nint a_fn(int x) { return x ? b_fn(x - 1) : 0; }\n",
    "libtmtrace/tm/b.c": "extern int a_fn(int);\nint b_fn(int x) { return x ? a_fn(x - 1) : 1; }\n",
})


def run_check(files, case):
    """(exit status, output) of modgraph on a tree planted from FILES."""
    root = support.temp_dir(case)
    build = support.planted_tree(root, files)
    out = io.StringIO()
    status = cli.EXIT_FAILED if modgraph.check(root, build, out) else 0
    return status, out.getvalue()


class Planted(unittest.TestCase):
    def test_a_tree_whose_arrows_all_go_down_passes(self):
        status, out = run_check(CLEAN, self)
        self.assertEqual(status, 0, out)
        self.assertIn("0 cycles, 0 layer findings", out)

    def test_an_include_that_goes_up_a_layer_is_named_with_its_line(self):
        files = dict(CLEAN, **{"libtmtrace/format/low.h": '#include "a.h"\nint low_fn(void);\n'})
        status, out = run_check(files, self)
        self.assertEqual(status, 1, out)
        self.assertIn('up a layer: libtmtrace/format/low libtmtrace/format/low.h:1 includes "a.h" '
                      '(libtmtrace/tm/a) - format may use only include', out)

    def test_a_call_that_goes_up_a_layer_is_named_with_its_symbol(self):
        files = dict(CLEAN, **{"libtmtrace/format/low.c": "extern int top_fn(void);\n"
                                                          "int low_fn(void) { return top_fn(); }\n"})
        status, out = run_check(files, self)
        self.assertEqual(status, 1, out)
        self.assertIn("up a layer: libtmtrace/format/low uses top_fn (libtmtrace/api/top)", out)

    def test_a_use_across_to_the_tools_is_a_finding(self):
        files = dict(CLEAN, **{"tools/reader/r.c": "int r_fn(void) { return 3; }\n",
                               "libtmtrace/api/top.c": "extern int r_fn(void);\nint top_fn(void) { return r_fn(); }\n"})
        status, out = run_check(files, self)
        self.assertEqual(status, 1, out)
        self.assertIn("across a layer: libtmtrace/api/top uses r_fn (tools/reader/r)", out)

    def test_a_call_cycle_is_printed_with_the_symbols_that_make_it(self):
        status, out = run_check(CALL_CYCLE, self)
        self.assertEqual(status, 1, out)
        self.assertIn("cycle: libtmtrace/tm/a -[uses b_fn]-> libtmtrace/tm/b -[uses a_fn]-> libtmtrace/tm/a", out)
        self.assertIn("1 cycles", out)

    def test_a_call_declared_in_tx_upcall_h_is_allowed(self):
        files = dict(CALL_CYCLE, **{"libtmtrace/tm/tx_upcall.h":
                                    "/* the allowed upward calls */\nint a_fn(int x) __attribute__((pure));\n"})
        status, out = run_check(files, self)
        self.assertEqual(status, 0, out)
        self.assertIn("allowed upward calls (libtmtrace/tm/tx_upcall.h): a_fn", out)

    def test_an_include_cycle_through_a_header_alone_is_a_cycle(self):
        files = dict(CLEAN, **{"libtmtrace/tm/inl.h": '#include "a.h"\n',
                               "libtmtrace/tm/a.c": '#include "a.h"\n#include "inl.h"\nint a_fn(int x) { return x; }\n'})
        status, out = run_check(files, self)
        self.assertEqual(status, 1, out)
        self.assertIn("cycle: libtmtrace/tm/a -[libtmtrace/tm/a.c:2 includes \"inl.h\"]-> libtmtrace/tm/inl", out)

    def test_a_module_outside_the_layers_is_a_finding(self):
        files = dict(CLEAN, **{"libtmtrace/misc/m.h": "int m;\n"})
        status, out = run_check(files, self)
        self.assertEqual(status, 1, out)
        self.assertIn("module libtmtrace/misc/m: in no layer", out)

    def test_a_missing_build_is_a_usage_error(self):
        root = support.temp_dir(self)
        support.planted_tree(root, CLEAN)
        with self.assertRaises(cli.ScriptError) as ctx:
            modgraph.check(root, root + "/nothing", io.StringIO())
        self.assertEqual(ctx.exception.status, cli.EXIT_USAGE)
        self.assertIn("compile_commands.json", str(ctx.exception))


class Cycles(unittest.TestCase):
    def test_every_elementary_cycle_is_found_once(self):
        g = modgraph.Graph()
        for a, b in (("a", "b"), ("b", "a"), ("b", "c"), ("c", "a"), ("c", "d")):
            g.add(a, b, "x")
        found, count = modgraph.cycles(g)
        self.assertEqual(count, 2)
        self.assertEqual(sorted(found), [["a", "b"], ["a", "b", "c"]])

    def test_past_the_limit_cycles_are_counted_not_listed(self):
        g = modgraph.Graph()
        for a in "abcd":
            for b in "abcd":
                if a != b:
                    g.add(a, b, "x")
        found, count = modgraph.cycles(g, limit=3)
        self.assertEqual(len(found), 3)
        self.assertEqual(count, 20)


class Layers(unittest.TestCase):
    def test_each_layer_may_use_exactly_those_below_it(self):
        self.assertEqual(modgraph.BELOW["itm"], ["include", "format", "tracer", "tm", "api"])
        self.assertEqual(modgraph.BELOW["cmd"], ["include", "format", "reader", "check"])
        self.assertEqual(modgraph.BELOW["tracer"], ["include", "format"])


if __name__ == "__main__":
    unittest.main()

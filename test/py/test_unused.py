"""tmtrace_py.unused: a non-static function only the tests call is found;
callers in other objects, in its own file and in tmbench count; the
exported API is exempt."""
import unittest

import support
from tmtrace_py import unused

FILES = {
    "libtmtrace/format/e.c": (
        "int used_elsewhere(void) { return 1; }\n"
        "int only_tests(void) { return 2; }\n"
        "int used_here(void) { return 3; }\n"
        "static int helper(void) { return used_here(); }\n"
        "int (*const table[])(void) = { helper };\n"
        "int tmt_api(void) { return 4; }\n"
        "int _ITM_abi(void) { return 5; }\n"),
    "libtmtrace/tracer/t.c": "int for_tmbench(void) { return 6; }\n",
    "libtmtrace/api/x.c": "extern int used_elsewhere(void);\nint tmt_x(void) { return used_elsewhere(); }\n",
    "test/unit/test_e.c": ("extern int only_tests(void);\nextern int for_tmbench(void);\n"
                           "int main(void) { return only_tests() + for_tmbench(); }\n"),
    "tmbench/b.c": "extern int for_tmbench(void);\nint main(void) { return for_tmbench(); }\n",
}


class Planted(unittest.TestCase):
    def test_only_the_function_nothing_but_a_test_calls_is_found(self):
        root = support.temp_dir(self)
        build = support.planted_tree(root, FILES)
        self.assertEqual(unused.uncalled(root, build), [("libtmtrace/format/e.c", "only_tests")])

    def test_the_exported_api_and_mains_are_exempt(self):
        for name in ("tmt_init", "_ITM_RU8", "_ZGTtnwm", "TxStart", "tmalloc_reserve", "main"):
            self.assertTrue(unused.exempt(name), name)
        for name in ("tool_name", "stm_free", "tmtx"):
            self.assertFalse(unused.exempt(name), name)


if __name__ == "__main__":
    unittest.main()

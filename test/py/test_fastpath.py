"""tmtrace_py.fastpath: a call on the fast path beyond the baseline is
found, in a planted library and its wrappers; objdump missing is named."""
import os
import subprocess
import unittest
from unittest import mock

import support
from tmtrace_py import cli, fastpath

HEADER = ("int tmt_tx_start(void *tx);\nvoid tmt_tx_commit(void *tx);\n"
          "long tmt_read_long(void *tx, const volatile long *a);\n"
          "void tmt_write_long(void *tx, volatile long *a, long v);\n")
# tmt_tx_start only jumps to tx_start (checked as tx_start); the accessors'
# slow halves are noinline, called only when the word is odd.
LIB = r"""
#define SLOW __attribute__((noinline, visibility("hidden")))
volatile int sink;
SLOW void stm_begin(void *tx) { sink = (int)(long)tx; }
SLOW void extra(void *tx) { sink = (int)(long)tx + 1; }
SLOW long read_slow(const volatile long *a) { sink = 2; return *a; }
SLOW int tx_start(void *tx) { stm_begin(tx); EXTRA_START; sink = 3; return 0; }
int tmt_tx_start(void *tx) { return tx_start(tx); }
void tmt_tx_commit(void *tx) { sink = (int)(long)tx; }
long tmt_read_long(void *tx, const volatile long *a)
{
    long v = *a;
    if (__builtin_expect(v & 1, 0))
        v = read_slow(a) + 1;
    EXTRA_READ;
    return v;
}
void tmt_write_long(void *tx, volatile long *a, long v) { *a = v; (void)tx; }
"""


class Planted(unittest.TestCase):
    def setUp(self):
        self.root = support.temp_dir(self)
        os.makedirs(os.path.join(self.root, "libtmtrace", "include"))
        with open(os.path.join(self.root, fastpath.HEADER), "w") as f:
            f.write(HEADER)
        with open(os.path.join(self.root, "lib.c"), "w") as f:
            f.write(LIB)

    def lib(self, name, extra_start="(void)0", extra_read="(void)0"):
        """The planted library built as NAME, with code added to tx_start and tmt_read_long."""
        path = os.path.join(self.root, name)
        subprocess.run(["cc", "-O2", "-fPIC", "-shared", "-o", path, "-DEXTRA_START=" + extra_start,
                        "-DEXTRA_READ=" + extra_read, os.path.join(self.root, "lib.c")], check=True)
        return path

    def baseline_of(self, lib):
        path = os.path.join(self.root, "baseline.txt")
        found = fastpath.calls(lib, fastpath.fast_path_functions(self.root))
        fastpath.write_baseline(path, found, lib)
        return fastpath.read_baseline(path)

    def findings(self, lib, baseline):
        return fastpath.findings(fastpath.calls(lib, fastpath.fast_path_functions(self.root)), baseline)

    def test_the_library_a_baseline_was_written_from_passes_it(self):
        lib = self.lib("before.so")
        base = self.baseline_of(lib)
        self.assertEqual(base["tmt_tx_start"], {"stm_begin": 1})
        self.assertEqual(base["tmt_read_long"], {"read_slow": 1})
        self.assertEqual(self.findings(lib, base), [])

    def test_a_new_call_in_an_accessor_is_a_finding(self):
        base = self.baseline_of(self.lib("before.so"))
        after = self.lib("after.so", extra_read="extra(tx)")
        self.assertRegex("\n".join(self.findings(after, base)), r"^tmt_read_long: calls extra \d time\(s\), the baseline 0$")

    def test_a_new_call_behind_a_wrapper_is_named_with_the_wrapper(self):
        base = self.baseline_of(self.lib("before.so"))
        after = self.lib("after.so", extra_start="extra(tx)")
        self.assertRegex("\n".join(self.findings(after, base)),
                         r"^tmt_tx_start \(its body: tx_start\): calls extra \d time\(s\), the baseline 0$")

    def test_a_function_the_baseline_lacks_is_a_finding(self):
        lib = self.lib("before.so")
        base = self.baseline_of(lib)
        del base["tmt_write_long"]
        self.assertEqual(self.findings(lib, base), ["tmt_write_long: not in the baseline (it calls: nothing)"])

    def test_without_objdump_the_check_fails_naming_binutils(self):
        lib = self.lib("before.so")
        with mock.patch.dict(os.environ, {"PATH": self.root}):
            with self.assertRaises(cli.ScriptError) as ctx:
                fastpath.calls(lib, ["tmt_tx_commit"])
        self.assertEqual(str(ctx.exception), "objdump not found: install binutils")
        self.assertEqual(ctx.exception.status, cli.EXIT_USAGE)


class Parts(unittest.TestCase):
    def test_the_fast_path_is_every_accessor_and_start_and_commit(self):
        names = fastpath.fast_path_functions(support.SOURCE_ROOT)
        for n in ("tmt_read_long", "tmt_write_double", "tmt_read_u8", "tmt_tx_start", "tmt_tx_commit"):
            self.assertIn(n, names)
        self.assertNotIn("tmt_read_", " ".join(n for n in names if not fastpath.ACCESSOR.match(n)))

    def test_callees_lose_their_clone_suffixes(self):
        self.assertEqual(fastpath.callee("call   1f0 <tb_slow.part.0>"), "tb_slow")
        self.assertEqual(fastpath.callee("call   1f0 <memcpy@plt>"), "memcpy")
        self.assertEqual(fastpath.callee("call   *%rax"), "*")

    def test_a_body_of_one_jump_is_a_wrapper(self):
        self.assertEqual(fastpath.wrapped(["endbr64", "jmp    b7f0 <tx_start>"]), "tx_start")
        self.assertIsNone(fastpath.wrapped(["mov    %rdi,%rax", "jmp    b7f0 <tx_start>"]))
        self.assertIsNone(fastpath.wrapped(["jmp    b7f8 <tmt_x+0x8>"]))


if __name__ == "__main__":
    unittest.main()

"""tmtrace_py.gcctm: the GCC-TM STAMP port's options, checks, fixes and
run environments (tmbench/stamp/gcctm), without building or running it."""
import argparse
import os
import subprocess
import sys
import unittest

import support
from tmtrace_py import gcctm, stamp


def planted_port(root):
    """A folder shaped like transmem's benchmarks/stamp_c, with yada's declaration unfixed."""
    port = os.path.join(root, "benchmarks", "stamp_c")
    for rel in ["Makefile.common", "tm.h", "lib/thread.h"] + ["%s/Makefile" % a for a in gcctm.APPS]:
        os.makedirs(os.path.dirname(os.path.join(port, rel)), exist_ok=True)
        open(os.path.join(port, rel), "w").close()
    with open(os.path.join(port, "yada", "element.h"), "w") as f:
        f.write("/* x */\nbool_t\nelement_isSkinny (element_t* elementPtr);\n")
    return port


class Port(unittest.TestCase):
    def test_the_port_is_found_in_a_transmem_checkout_or_given_itself(self):
        root = support.temp_dir(self)
        port = planted_port(root)
        self.assertEqual(gcctm.source_dir(root), (port, None))
        self.assertEqual(gcctm.source_dir(port), (port, None))

    def test_a_folder_without_the_port_says_what_it_lacks(self):
        root = support.temp_dir(self)
        self.assertIn("not transmem's GCC-TM STAMP port", gcctm.source_dir(root)[1])
        self.assertEqual(gcctm.source_dir(os.path.join(root, "nothing")), (None, "no such directory"))

    def test_the_fix_marks_element_isSkinny_transaction_safe_once(self):
        port = planted_port(support.temp_dir(self))
        gcctm.apply_fixes(port)
        gcctm.apply_fixes(port)  # a fixed copy stays as it is
        with open(os.path.join(port, "yada", "element.h")) as f:
            self.assertEqual(f.read(), "/* x */\nbool_t\nTM_SAFE\nelement_isSkinny (element_t* elementPtr);\n")

    def test_a_copy_without_the_text_to_fix_is_an_error_naming_the_file(self):
        port = planted_port(support.temp_dir(self))
        with open(os.path.join(port, "yada", "element.h"), "w") as f:
            f.write("int x;\n")
        with self.assertRaises(ValueError) as ctx:
            gcctm.apply_fixes(port)
        self.assertIn("yada/element.h", str(ctx.exception))


class Options(unittest.TestCase):
    def test_kmeans_and_vacation_take_capital_T_where_stamp_takes_t(self):
        small = stamp.SIZES["small"]
        self.assertEqual(gcctm.command("kmeans", small["kmeans"].split(), 2),
                         ["-m40", "-n40", "-T0.05", "-i", "random-n2048-d16-c16.txt", "-t2"])
        self.assertEqual(gcctm.command("vacation", small["vacation"].split(), 4),
                         ["-n4", "-q60", "-u90", "-r16384", "-T4096", "-t4"])

    def test_the_other_applications_keep_their_arguments_and_take_t_threads(self):
        self.assertEqual(gcctm.command("genome", ["-g256", "-s16", "-n16384"], 2), ["-g256", "-s16", "-n16384", "-t2"])

    def test_levels_and_variants_are_checked_lists(self):
        self.assertEqual(gcctm.level_list("off,default,tx"), ["off", "default", "tx"])
        self.assertEqual(gcctm.variant_list("preload"), ["preload"])
        for bad in ("", "off,off", "none"):
            with self.assertRaises(argparse.ArgumentTypeError):
                gcctm.level_list(bad)
        with self.assertRaises(argparse.ArgumentTypeError):
            gcctm.variant_list("libitm")

    def test_each_repetition_runs_libitm_and_every_variant_at_every_level(self):
        self.assertEqual(gcctm.configs([2], ["off", "tx"], ["linked", "preload"]),
                         [("libitm", "-", 2), ("linked", "off", 2), ("linked", "tx", 2),
                          ("preload", "off", 2), ("preload", "tx", 2)])


class Runs(unittest.TestCase):
    BASE = {"PATH": "/bin", "TMTRACE_EVENTS": "all", "TMTRACE_FILE": "x.bin", "LD_PRELOAD": "old.so",
            "TMTRACE_HTM": "emulate"}

    def test_libitm_runs_without_the_callers_trace_variables(self):
        env = gcctm.run_env(self.BASE, "libitm", "-", "t.bin", "itm.so", "exit.so")
        self.assertEqual(env, {"PATH": "/bin", "TMTRACE_HTM": "emulate"})

    def test_the_default_level_leaves_tmtrace_events_unset(self):
        env = gcctm.run_env(self.BASE, "linked", "default", "t.bin", "itm.so", "exit.so")
        self.assertNotIn("TMTRACE_EVENTS", env)
        self.assertEqual((env["TMTRACE_FILE"], env["LD_PRELOAD"]), ("t.bin", "exit.so"))

    def test_a_preloaded_run_loads_libtmtrace_itm_before_the_exit_library(self):
        env = gcctm.run_env(self.BASE, "preload", "tx", "t.bin", "itm.so", "exit.so")
        self.assertEqual((env["TMTRACE_EVENTS"], env["LD_PRELOAD"]), ("tx", "itm.so exit.so"))

    def test_level_all_lifts_the_tracers_share_so_that_its_trace_is_whole(self):
        self.assertEqual(gcctm.run_env(self.BASE, "linked", "all", "t.bin", "itm.so", "exit.so")
                         ["TMTRACE_WRITER_SHARE"], "100")
        self.assertNotIn("TMTRACE_WRITER_SHARE", gcctm.run_env(self.BASE, "linked", "tx", "t.bin", "i.so", "e.so"))

    def test_only_libtmtrace_itm_above_off_writes_a_trace(self):
        self.assertTrue(gcctm.traced("preload", "default"))
        self.assertFalse(gcctm.traced("linked", "off"))
        self.assertFalse(gcctm.traced("libitm", "-"))

    def test_the_exit_line_gives_the_runtimes_counts(self):
        err = "warning\n%s commits=5912 aborts=3 dropped=0\n" % gcctm.EXIT_LINE
        self.assertEqual(gcctm.exit_counts(err), (5912, 3, 0))
        self.assertEqual(gcctm.exit_counts("Segmentation fault\n"), (None, None, None))

    def test_every_application_has_a_time_line(self):
        self.assertEqual(sorted(gcctm.TIME_LINE), sorted(gcctm.APPS))


class Refusals(unittest.TestCase):
    """tmbench/stamp/gcctm refuses what it cannot use with one line, exit 2, before building."""
    SCRIPT = os.path.join(support.SOURCE_ROOT, "tmbench", "stamp", "gcctm")

    def refusal(self, *args):
        proc = subprocess.run([sys.executable, "-B", self.SCRIPT] + list(args), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, universal_newlines=True)
        self.assertEqual(proc.returncode, 2, proc.stderr)
        self.assertEqual(proc.stderr.count("\n"), 1, proc.stderr)
        return proc.stderr

    def test_apps_with_input_files_need_a_stamp_tree(self):
        port = planted_port(support.temp_dir(self))
        err = self.refusal(port, "--build", support.build_root())
        self.assertIn("kmeans,labyrinth,yada read input files the port does not ship: pass --inputs", err)

    def test_a_build_without_libtmtrace_itm_is_named(self):
        root = support.temp_dir(self)
        err = self.refusal(planted_port(root), "--apps", "genome", "--build", root)
        self.assertIn(os.path.join(root, "libtmtrace", "libtmtrace-itm.so") + ": no such file", err)

    def test_a_folder_without_the_port_is_named(self):
        self.assertIn("STAMP_C_DIR /nonexistent: no such directory", self.refusal("/nonexistent"))


if __name__ == "__main__":
    unittest.main()

"""tmtrace_py.stamprun: one application run, the check of a trace, the
order of the runs and the medians, with fake programs."""
import os
import unittest

import support
from tmtrace_py import cli, stamp, stamprun

TIME = r"^Time = ([0-9.]+)"


class RunApp(unittest.TestCase):
    def setUp(self):
        self.dir = support.temp_dir(self)

    def app(self, body):
        return support.fake_program(self.dir, "app", body)

    def test_a_passing_run_gives_its_own_time(self):
        exe = self.app('print("Time = 0.125"); print("Verification passed.")')
        rec = stamprun.run_app([exe], self.dir, None, 10, TIME, r"^Verification passed\.$")
        self.assertEqual((rec["seconds"], rec["failed"]), (0.125, ""))

    def test_a_run_counts_its_own_page_faults_and_cpu_time(self):
        exe = self.app('b = bytearray(64 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1\nprint("Time = 0.1")')
        rec = stamprun.run_app([exe], self.dir, None, 10, TIME)
        self.assertEqual(rec["failed"], "")
        self.assertGreaterEqual(rec["faults"], (64 << 20) // 4096 // 2)  # a fault a 4 KiB page, half of them for margin
        self.assertGreater(rec["cpu"], 0.0)
        small = stamprun.run_app([self.app('print("Time = 0.1")')], self.dir, None, 10, TIME)
        self.assertLess(small["faults"], rec["faults"] - (32 << 20) // 4096)

    def test_a_run_whose_verification_line_is_missing_fails(self):
        exe = self.app('print("Time = 0.125")')
        rec = stamprun.run_app([exe], self.dir, None, 10, TIME, r"^Verification passed\.$")
        self.assertIn("its verification did not pass", rec["failed"])
        self.assertIsNone(rec["seconds"])

    def test_a_crashed_run_fails_with_its_last_line_and_status(self):
        exe = self.app('print("Time = 0.1"); sys.stderr.write("region.c:240: Assertion failed\\n"); sys.exit(134)')
        rec = stamprun.run_app([exe, "-t2"], self.dir, None, 10, TIME)
        self.assertEqual(rec["failed"], "app -t2: region.c:240: Assertion failed (exit 134)")

    def test_a_run_killed_by_a_signal_names_it(self):
        rec = stamprun.run_app([self.app("import os, signal; os.kill(os.getpid(), signal.SIGSEGV)")], self.dir, None, 10, TIME)
        self.assertEqual(rec["failed"], "app: no output (killed by SIGSEGV)")

    def test_a_run_past_its_timeout_fails_saying_so(self):
        exe = self.app("import time; time.sleep(5)")
        rec = stamprun.run_app([exe], self.dir, None, 0.2, TIME)
        self.assertEqual(rec["failed"], "app ran longer than 0.2 s")

    def test_a_run_without_a_time_line_fails(self):
        rec = stamprun.run_app([self.app("")], self.dir, None, 10, TIME)
        self.assertEqual(rec["failed"], "app printed no time line")


class CheckTrace(unittest.TestCase):
    def setUp(self):
        self.dir = support.temp_dir(self)
        tools = os.path.join(self.dir, "build", "tools")
        os.makedirs(tools)
        # tmsync copies, tmcheck prints the counts written in the trace
        support.fake_program(tools, "tmsync", "import shutil; shutil.copyfile(sys.argv[1], sys.argv[3])")
        keys = ('"file": "t", "synced": True, "events": 9, "attempts": 5, "aborts": 0, "skipped_chunks": 0, '
                '"temporal_inconsistencies": 0, "out_of_place_events": {"count": 0, "percent": 0.0}, '
                '"late_starts": 0, "premature_ends": 0, "conflict_free_aborts": None, "consistent": True, "complete": True, '
                '"tracer": {"level": "all", "share": 0.0, "warn": False}, "descheduled_attempts": 0, '
                '"descheduled_wall_ns": 0, "descheduled_off_cpu_ns": 0, "oncpu_wasted_ns": 0, "sites": [], "data": [], "triage": []')
        support.fake_program(tools, "tmcheck", "d = json.load(open(sys.argv[2])); d.update({%s}); "
                             "print(json.dumps(d))" % keys)
        self.trace = os.path.join(self.dir, "trace.bin")

    def check(self, commits, **counts):
        rec = dict(commits=5, transactions=5, dropped_events=0, grammar_violations=0, open_attempts=0)
        rec.update(counts)
        with open(self.trace, "w") as f:
            f.write(__import__("json").dumps(rec))
        return stamprun.check_trace(os.path.join(self.dir, "build"), self.trace, commits, self.dir)

    def test_a_trace_with_the_runtimes_commits_and_no_drop_passes(self):
        self.assertEqual(self.check(5), [])
        self.assertFalse(os.path.exists(os.path.join(self.dir, "trace.sync.bin")))

    def test_drops_and_a_commit_count_unlike_the_runtimes_are_problems(self):
        self.assertEqual(self.check(7, dropped_events=3),
                         ["trace commits = 5, expected 7", "trace transactions = 5, expected 7",
                          "trace dropped_events = 3, expected 0"])

    def test_an_incomplete_trace_fails_with_the_tools_own_line(self):
        tools = os.path.join(self.dir, "build", "tools")
        support.fake_program(tools, "tmsync", "sys.stderr.write('tmsync: trace.bin: incomplete: no END chunk\\n'); "
                             "sys.exit(4)")
        problems = self.check(5)
        self.assertEqual(len(problems), 1)
        self.assertIn("incomplete: no END chunk", problems[0])

    def test_without_the_runtimes_count_the_trace_cannot_pass(self):
        self.assertEqual(self.check(None), ["the runtime printed no commit count at exit"])


class Order(unittest.TestCase):
    CONFIGS = ["a", "b", "c", "d", "e"]

    def test_each_repetition_runs_every_configuration_once(self):
        reps = list(stamprun.orders(21, self.CONFIGS))
        self.assertEqual([rep for rep, _ in reps], list(range(1, 22)))
        for _, order in reps:
            self.assertEqual(sorted(order), self.CONFIGS)

    def test_the_orders_vary_between_repetitions_and_the_same_seed_repeats_them(self):
        orders = [tuple(order) for _, order in stamprun.orders(21, self.CONFIGS, seed=7)]
        self.assertGreater(len(set(orders)), 10)
        self.assertGreater(len({order[0] for order in orders}), 1)
        self.assertEqual(orders, [tuple(order) for _, order in stamprun.orders(21, self.CONFIGS, seed=7)])
        self.assertNotEqual(orders, [tuple(order) for _, order in stamprun.orders(21, self.CONFIGS, seed=8)])


class Medians(unittest.TestCase):
    def test_failed_runs_are_left_out_of_the_medians(self):
        runs = stamprun.Runs("p", ["app", "seconds", "failed"])
        for s, failed in ((1.0, ""), (3.0, ""), (None, "crashed"), (2.0, "")):
            runs.records.append({"app": "x", "seconds": s, "failed": failed})
        self.assertEqual(runs.median({"app": "x"}), 2.0)
        self.assertIsNone(runs.median({"app": "y"}))
        self.assertEqual(len(runs.failed()), 1)

    def test_a_failed_build_command_is_one_line_exit_1(self):
        with self.assertRaises(cli.ScriptError) as ctx:
            stamprun.sh(["sh", "-c", "echo first; echo 'cc: error: no input'; exit 3"], "/", "building x")
        self.assertEqual(str(ctx.exception), "building x failed (exit 3): cc: error: no input")
        self.assertEqual(ctx.exception.status, cli.EXIT_FAILED)


class TinySTMDesign(unittest.TestCase):
    MAKEFILE = ("CC ?= gcc\n"
                "DEFINES += -DDESIGN=WRITE_BACK_ETL\n"
                "# DEFINES += -DDESIGN=WRITE_BACK_CTL\n"
                "DEFINES += -DCM=CM_SUICIDE\n")

    def test_the_ctl_build_changes_only_the_active_design_line(self):
        out = stamp.tinystm_set_design(self.MAKEFILE, "WRITE_BACK_CTL")
        self.assertEqual(out, self.MAKEFILE.replace("DEFINES += -DDESIGN=WRITE_BACK_ETL",
                                                    "DEFINES += -DDESIGN=WRITE_BACK_CTL"))

    def test_both_backends_are_built_and_the_default_one_keeps_its_design(self):
        self.assertEqual(stamp.TINYSTM_BACKENDS, {"tinystm": "WRITE_BACK_ETL", "tinystm-ctl": "WRITE_BACK_CTL"})
        self.assertEqual(stamp.tinystm_set_design(self.MAKEFILE, "WRITE_BACK_ETL"), self.MAKEFILE)

    GC_LINES = ("# DEFINES += -DEPOCH_GC\n"
                "DEFINES += -UEPOCH_GC\n"
                "# DEFINES += -DCONFLICT_TRACKING\n")

    def test_the_epoch_gc_build_changes_only_the_active_epoch_gc_line(self):
        out = stamp.tinystm_set_epoch_gc(self.MAKEFILE + self.GC_LINES)
        self.assertEqual(out, self.MAKEFILE + self.GC_LINES.replace("DEFINES += -UEPOCH_GC", "DEFINES += -DEPOCH_GC"))
        self.assertEqual(stamp.tinystm_set_epoch_gc(out), out)

    def test_a_makefile_without_one_active_epoch_gc_line_is_refused(self):
        with self.assertRaises(ValueError):
            stamp.tinystm_set_epoch_gc(self.MAKEFILE)
        with self.assertRaises(ValueError):
            stamp.tinystm_set_epoch_gc(self.GC_LINES * 2)

    def test_only_the_commit_time_build_reclaims_by_epochs_and_the_glue_asks_for_it(self):
        # yada at 2 threads read blocks freed at commit and died; the default
        # build stays TinySTM's own
        self.assertEqual(stamp.TINYSTM_EPOCH_GC, ("WRITE_BACK_CTL",))
        self.assertIn("mod_mem_init(1)", stamp.tinystm_glue("/x"))
        self.assertNotIn("mod_mem_init(0)", stamp.tinystm_glue("/x"))

    def test_a_makefile_without_one_active_design_line_is_refused(self):
        with self.assertRaises(ValueError):
            stamp.tinystm_set_design("# DEFINES += -DDESIGN=WRITE_BACK_CTL\n", "WRITE_BACK_CTL")
        with self.assertRaises(ValueError):
            stamp.tinystm_set_design(self.MAKEFILE * 2, "WRITE_BACK_CTL")


class Machine(unittest.TestCase):
    def test_the_machine_line_names_the_cpu_and_counts_the_cpus(self):
        self.assertRegex(stamprun.machine(), r"^.+, %d CPUs$" % os.cpu_count())

    def test_the_load_average_is_a_number(self):
        self.assertGreaterEqual(stamprun.load_average(), 0.0)


if __name__ == "__main__":
    unittest.main()

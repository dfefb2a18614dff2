"""tmtrace_py.bench: a tmbench run is its checked JSON line, or an error
naming the command (exit 1); the scripts' common options."""
import json
import os
import unittest

import support
from tmtrace_py import bench, cli

LINE = {"workload": "bank", "backend": "libtmtrace", "threads": 2, "seconds": 0.5, "ops": 1000,
        "ops_per_s": 2000.0, "commits": 1000, "aborts": 3, "check": "ok"}


class RunTmbench(unittest.TestCase):
    def setUp(self):
        self.dir = support.temp_dir(self)

    def fake(self, rec, status=0, stderr=""):
        body = "print('warming up'); print(%r); sys.stderr.write(%r); sys.exit(%d)" % (
            json.dumps(rec) if rec is not None else "", stderr, status)
        return support.fake_program(self.dir, "tmbench", body)

    def assert_fails(self, exe, text):
        with self.assertRaises(cli.ScriptError) as ctx:
            bench.run_tmbench([exe, "bank"], {}, self.dir)
        self.assertEqual(ctx.exception.status, cli.EXIT_FAILED)
        self.assertIn(text, str(ctx.exception))
        self.assertIn("tmbench bank", str(ctx.exception))
        self.assertNotIn("\n", str(ctx.exception))

    def test_a_passing_run_is_its_json_line(self):
        self.assertEqual(bench.run_tmbench([self.fake(LINE), "bank"], {}, self.dir), LINE)

    def test_a_failed_check_is_an_error_with_its_message(self):
        rec = dict(LINE, check="failed", check_msg="total 999 != 1000")
        self.assert_fails(self.fake(rec, status=1), "check failed: total 999 != 1000")

    def test_a_failed_check_is_an_error_even_when_the_exit_status_is_0(self):
        self.assert_fails(self.fake(dict(LINE, check="failed")), "check failed")

    def test_a_bad_option_is_an_error_with_its_message(self):
        self.assert_fails(self.fake(None, status=2, stderr="tmbench: unknown option --bogus\n"),
                          "unknown option --bogus")

    def test_a_line_without_a_described_key_is_an_error_naming_the_key(self):
        rec = dict(LINE)
        del rec["seconds"]
        self.assert_fails(self.fake(rec), "no key 'seconds'")

    def test_the_environment_reaches_the_run(self):
        exe = support.fake_program(self.dir, "tmbench", "print(json.dumps(dict(%r, workload=os.environ['TMTRACE_EVENTS'])))"
                                   % LINE)
        self.assertEqual(bench.run_tmbench([exe], {"TMTRACE_EVENTS": "tx"}, self.dir)["workload"], "tx")

    def test_a_missing_tmbench_is_a_usage_error_naming_the_build(self):
        with self.assertRaises(cli.ScriptError) as ctx:
            bench.need_program(os.path.join(self.dir, "nobuild"), "tmbench")
        self.assertEqual(ctx.exception.status, cli.EXIT_USAGE)
        self.assertIn("nobuild", str(ctx.exception))
        self.assertIsNone(bench.tmbench_program(os.path.join(self.dir, "nobuild"), "tmbench-itm"))


class AbortRate(unittest.TestCase):
    def test_abort_rate_is_a_percentage_of_attempts(self):
        self.assertEqual(bench.abort_rate_pct(dict(LINE, commits=75, aborts=25)), 25.0)

    def test_dropped_is_a_percentage_of_the_events_produced(self):
        self.assertEqual(bench.dropped_pct(dict(LINE, events_recorded=75, events_dropped=25)), 25.0)
        self.assertIsNone(bench.dropped_pct(dict(LINE, events_recorded=0, events_dropped=0)))
        self.assertIsNone(bench.dropped_pct({"commits": 1}))

    def test_shed_attempts_are_a_share_of_the_attempts_commits_and_aborts(self):
        self.assertEqual(bench.shed_pct(dict(LINE, commits=70, aborts=10, attempts_shed=20)), 25.0)
        self.assertIsNone(bench.shed_pct(dict(LINE, commits=0, aborts=0, attempts_shed=0)))
        self.assertIsNone(bench.shed_pct({"commits": 1, "aborts": 0}))

    def test_no_rate_without_abort_counts_or_attempts(self):
        self.assertIsNone(bench.abort_rate_pct(dict(LINE, aborts=None)))
        self.assertIsNone(bench.abort_rate_pct(dict(LINE, commits=0, aborts=0)))


class MedianOps(unittest.TestCase):
    def test_one_outlying_calibration_does_not_set_the_work(self):
        self.assertEqual(bench.median_ops([5091696, 2031000, 2100000]), 2100000)

    def test_of_an_even_number_the_lower_middle_count_is_taken(self):
        self.assertEqual(bench.median_ops([400, 100, 300, 200]), 200)

    def test_no_calibration_is_an_error(self):
        with self.assertRaises(ValueError):
            bench.median_ops([])


class MeasuringLevel(unittest.TestCase):
    def setUp(self):
        self.dir = support.temp_dir(self)

    def configured(self, options):
        os.makedirs(os.path.join(self.dir, "meson-info"))
        with open(os.path.join(self.dir, "meson-info", "intro-buildoptions.json"), "w") as f:
            json.dump(options, f)

    def assert_usage_error(self, text):
        with self.assertRaises(cli.ScriptError) as ctx:
            bench.measuring_level(self.dir)
        self.assertEqual(ctx.exception.status, cli.EXIT_USAGE)
        self.assertIn(self.dir, str(ctx.exception))
        self.assertIn(text, str(ctx.exception))
        self.assertNotIn("\n", str(ctx.exception))

    def test_a_measuring_build_gives_its_level(self):
        self.configured([{"name": "buildtype", "value": "release"}, {"name": "clock_floor", "value": "all"}])
        self.assertEqual(bench.measuring_level(self.dir), "floor-all")

    def test_the_record_only_build_gives_records(self):
        self.configured([{"name": "clock_floor", "value": "records"}])
        self.assertEqual(bench.measuring_level(self.dir), "floor-records")

    def test_an_attempt_pad_build_gives_where_it_pads(self):
        self.configured([{"name": "clock_floor", "value": "none"}, {"name": "attempt_pad", "value": "outside"}])
        self.assertEqual(bench.measuring_level(self.dir), "pad-outside")

    def test_a_normal_build_is_a_usage_error(self):
        self.configured([{"name": "clock_floor", "value": "none"}, {"name": "attempt_pad", "value": "none"}])
        self.assert_usage_error("not a measuring build")

    def test_any_option_reads_back_and_an_absent_one_is_none(self):
        self.configured([{"name": "countable_stamp", "value": True}, {"name": "clock_floor", "value": "none"}])
        self.assertIs(bench.build_option(self.dir, "countable_stamp"), True)
        self.assertEqual(bench.build_option(self.dir, "clock_floor"), "none")
        self.assertIsNone(bench.build_option(self.dir, "no_such_option"))

    def test_a_build_from_before_the_option_is_a_usage_error(self):
        self.configured([{"name": "buildtype", "value": "release"}])
        self.assert_usage_error("not a measuring build")

    def test_a_directory_that_is_no_build_tree_is_a_usage_error(self):
        self.assert_usage_error("not a configured meson build tree")


class CommonArgs(unittest.TestCase):
    def parse(self, argv):
        p = cli.OneLineParser(prog="x")
        bench.add_common_args(p, duration_help="seconds")
        return p.parse_args(argv)

    def test_defaults_are_five_reps_one_second_threads_1_2_and_four_workloads(self):
        a = self.parse([])
        self.assertEqual((a.reps, a.duration, a.threads, a.workloads, a.extra),
                         (5, 1.0, [1, 2], ["list", "rbtree", "hash", "bank"], []))

    def test_workloads_threads_and_options_after_the_separator_are_lists(self):
        a = self.parse(["--workloads", "hash,bank", "--threads", "4", "--", "--range", "4096"])
        self.assertEqual((a.workloads, a.threads, a.extra), (["hash", "bank"], [4], ["--range", "4096"]))


if __name__ == "__main__":
    unittest.main()

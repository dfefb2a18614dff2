"""tmtrace_py.toolspeed: the rows of its table, the check that every --jobs
gave the same JSON, the machine note and its options."""
import os
import unittest

import support
from tmtrace_py import cli, toolspeed


class Rows(unittest.TestCase):
    def test_a_row_is_the_median_wall_time_and_events_per_second_with_the_peak_rss(self):
        times = {("tmsync raw", 1): [(2.0, 1.9, 10.0), (4.0, 3.8, 30.0), (3.0, 2.9, 20.0)],
                 ("tmsync raw", 2): [(1.0, 2.0, 40.0)]}
        r1, r2 = toolspeed.rows(times, 6_000_000, [1, 2], ["tmsync raw"])
        self.assertEqual(r1[:2], ("tmsync raw", 1))
        self.assertAlmostEqual(r1[2], 3.0)
        self.assertAlmostEqual(r1[3], 2.0)    # 6 M events in 3 s
        self.assertAlmostEqual(r1[4], 2.9)
        self.assertAlmostEqual(r1[5], 30.0)   # the peak, not the median
        self.assertAlmostEqual(r2[3], 6.0)


class Agreement(unittest.TestCase):
    def test_only_the_tools_whose_json_differs_between_jobs_are_named(self):
        out = {("a", 1): "{}", ("a", 2): "{}", ("b", 1): '{"x": 1}', ("b", 2): '{"x": 2}'}
        self.assertEqual(toolspeed.disagreements(out, [1, 2], ["a", "b"]), ["b"])


class Note(unittest.TestCase):
    def test_the_note_names_the_cpus_available_and_the_load_average(self):
        note = toolspeed.machine_note()
        self.assertIn("%d CPUs available" % len(os.sched_getaffinity(0)), note)
        self.assertIn("load average", note)


class Options(unittest.TestCase):
    def test_a_build_without_the_tools_is_an_error_with_exit_2(self):
        with self.assertRaises(cli.ScriptError) as e:
            toolspeed.parse_args(["--build", "/no/such/build"], "tools-speed")
        self.assertEqual(e.exception.status, 2)
        self.assertIn("tmsync", str(e.exception))

    def test_a_missing_trace_is_refused(self):
        with self.assertRaises(SystemExit) as e:
            toolspeed.parse_args(["--build", support.build_root(), "--trace", "/no/such/trace.bin"], "tools-speed")
        self.assertEqual(e.exception.code, 2)


if __name__ == "__main__":
    unittest.main()

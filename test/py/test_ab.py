"""tmtrace_py.ab: the order of the builds in each repetition and the rows
of its table."""
import types
import unittest

import support  # noqa: F401  (puts the package on the path)
from tmtrace_py import ab


class Order(unittest.TestCase):
    def test_the_builds_alternate_which_runs_first(self):
        self.assertEqual(ab.order(0), ("before", "after"))
        self.assertEqual(ab.order(1), ("after", "before"))
        firsts = [ab.order(r)[0] for r in range(10)]
        self.assertEqual(firsts.count("before"), firsts.count("after"))


class Rows(unittest.TestCase):
    def test_a_row_is_after_over_before_of_the_medians_with_its_interval(self):
        a = types.SimpleNamespace(levels=["off"])
        ns = {("hash", 1, "off", "before"): [10.0, 11.0, 12.0], ("hash", 1, "off", "after"): [20.0, 22.0, 24.0]}
        (row,) = ab.rows(a, {("hash", 1): 1000}, ns)
        self.assertEqual(row[:5], ("hash", 1, "off", 11.0, 22.0))
        self.assertAlmostEqual(row[5], 2.0)
        self.assertLessEqual(row[6][0], 2.0)
        self.assertGreaterEqual(row[6][1], 2.0)


class Options(unittest.TestCase):
    def test_a_build_without_tmbench_is_one_line_exit_2(self):
        with self.assertRaises(SystemExit) as e:
            ab.parse_args(["--before", "/no/such/build", "--after", "/no/such/build"], "ab")
        self.assertEqual(e.exception.code, 2)


if __name__ == "__main__":
    unittest.main()

"""tmtrace_py.stats: the geomean of ratios and the bootstrap interval of a
ratio of medians."""
import unittest

import support  # noqa: F401  (puts the package on the path)
from tmtrace_py import stats


class Geomean(unittest.TestCase):
    def test_the_geomean_of_reciprocal_ratios_is_one(self):
        self.assertAlmostEqual(stats.geomean([2.0, 0.5]), 1.0)

    def test_missing_values_are_left_out_and_none_left_is_none(self):
        self.assertAlmostEqual(stats.geomean([None, 4.0, 1.0]), 2.0)
        self.assertIsNone(stats.geomean([None]))


class BootstrapRatio(unittest.TestCase):
    def test_the_interval_holds_the_ratio_of_the_medians(self):
        num = [11.0, 12.0, 10.5, 11.5, 12.5, 11.2, 10.9]
        den = [10.0, 9.5, 10.5, 10.2, 9.8, 10.1, 9.9]
        lo, hi = stats.bootstrap_ratio_ci(num, den)
        r = stats.median_ratio(num, den)
        self.assertLessEqual(lo, r)
        self.assertGreaterEqual(hi, r)
        self.assertGreater(lo, 1.0)   # every after run is slower than the slowest before run but one

    def test_identical_samples_give_an_interval_around_one(self):
        xs = [1.0, 1.1, 0.9, 1.05, 0.95]
        lo, hi = stats.bootstrap_ratio_ci(xs, list(xs))
        self.assertLess(lo, 1.0)
        self.assertGreater(hi, 1.0)

    def test_a_fixed_seed_repeats_the_interval(self):
        a, b = [1.0, 2.0, 3.0], [2.0, 2.5, 1.5]
        self.assertEqual(stats.bootstrap_ratio_ci(a, b), stats.bootstrap_ratio_ci(a, b))

    def test_an_empty_sample_has_no_interval(self):
        self.assertIsNone(stats.bootstrap_ratio_ci([], [1.0]))


if __name__ == "__main__":
    unittest.main()

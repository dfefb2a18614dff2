"""tmtrace_py.stats: the geomean of ratios and the bootstrap interval of a
ratio of medians."""
import unittest

import support  # noqa: F401  (puts the package on the path)
from tmtrace_py import stamp, stats


class Geomean(unittest.TestCase):
    def test_the_geomean_of_reciprocal_ratios_is_one(self):
        self.assertAlmostEqual(stats.geomean([2.0, 0.5]), 1.0)

    def test_missing_values_are_left_out_and_none_left_is_none(self):
        self.assertAlmostEqual(stats.geomean([None, 4.0, 1.0]), 2.0)
        self.assertIsNone(stats.geomean([None]))


class PairedRatios(unittest.TestCase):
    def test_runs_pair_by_repetition_and_a_run_without_its_partner_is_left_out(self):
        self.assertEqual(stats.paired_ratios({0: 110.0, 1: 220.0, 2: 50.0}, {1: 200.0, 0: 100.0, 3: 7.0}), [1.1, 1.1])

    def test_a_zero_or_missing_denominator_is_left_out(self):
        self.assertEqual(stats.paired_ratios({0: 3.0, 1: 4.0, 2: None}, {0: 0.0, 1: 2.0, 2: 1.0}), [2.0])


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


class BootstrapGeomean(unittest.TestCase):
    def test_the_interval_holds_the_geomean_of_the_ratios(self):
        pairs = [([2.0, 2.1, 1.9, 2.05], [1.0, 1.05, 0.95, 1.0]), ([0.5, 0.55, 0.45, 0.5], [1.0, 0.9, 1.1, 1.0])]
        lo, hi = stats.bootstrap_geomean_ratio_ci(pairs)
        g = stats.geomean(stats.median_ratio(n, d) for n, d in pairs)
        self.assertLessEqual(lo, g)
        self.assertGreaterEqual(hi, g)
        self.assertLess(hi, 1.5)   # a 2x cell and a 0.5x cell make about 1x, not their mean 1.25x

    def test_one_pair_gives_the_ratio_interval(self):
        num, den = [3.0, 0.0, 1.0, 2.0], [1.0, 2.0, 1.5]
        self.assertEqual(stats.bootstrap_geomean_ratio_ci([(num, den)]), stats.bootstrap_ratio_ci(num, den))
        self.assertEqual(stats.bootstrap_ratio_ci([0.0, 0.0], [1.0])[0], 0.0)   # a rate of 0 stays in

    def test_a_cell_without_runs_has_no_interval(self):
        self.assertIsNone(stats.bootstrap_geomean_ratio_ci([([1.0], [1.0]), ([], [1.0])]))


class BootstrapMedian(unittest.TestCase):
    def test_the_interval_of_a_median_lies_within_the_sample_and_holds_its_median(self):
        xs = [0.22, 0.8, 0.3, 0.41, 0.35, 0.28, 0.5]
        lo, hi = stats.bootstrap_median_ci(xs)
        self.assertTrue(min(xs) <= lo <= 0.35 <= hi <= max(xs))


class ShareFaster(unittest.TestCase):
    def test_a_sample_wholly_faster_wins_every_pair(self):
        self.assertEqual(stats.share_faster([1.0, 2.0], [3.0, 4.0, 5.0]), 1.0)
        self.assertEqual(stats.share_faster([3.0, 4.0, 5.0], [1.0, 2.0]), 0.0)

    def test_ties_count_half(self):
        self.assertEqual(stats.share_faster([2.0], [2.0]), 0.5)
        self.assertAlmostEqual(stats.share_faster([1.0, 3.0], [2.0, 3.0]), (1 + 1 + 0 + 0.5) / 4)

    def test_two_modes_of_one_program_share_about_half_where_their_medians_differ_by_half(self):
        # the same two modes, the median falling in the low one for xs and in the high one for ys
        xs = [1.0, 1.1, 1.2, 2.0, 2.1]
        ys = [1.05, 1.15, 2.05, 2.15, 2.2]
        self.assertGreater(stats.median_ratio(ys, xs), 1.5)
        self.assertTrue(0.4 <= stats.share_faster(xs, ys) <= 0.7)

    def test_an_empty_sample_has_no_share_and_no_interval(self):
        self.assertIsNone(stats.share_faster([], [1.0]))
        self.assertIsNone(stats.bootstrap_share_faster_ci([1.0], []))

    def test_the_interval_holds_the_share_and_a_fixed_seed_repeats_it(self):
        xs, ys = [1.0, 1.2, 1.4, 1.1, 0.9, 1.3], [1.1, 1.5, 1.6, 1.2, 1.4, 1.7]
        lo, hi = stats.bootstrap_share_faster_ci(xs, ys)
        self.assertTrue(0.0 <= lo <= stats.share_faster(xs, ys) <= hi <= 1.0)
        self.assertEqual((lo, hi), stats.bootstrap_share_faster_ci(xs, ys))


class TwoOutcomeSplit(unittest.TestCase):
    def test_the_split_falls_between_two_groups_of_times_whatever_their_sizes(self):
        fast = [0.016, 0.018, 0.019, 0.020, 0.021, 0.022, 0.023, 0.024]
        slow = [0.039, 0.041, 0.042, 0.043, 0.045, 0.050, 0.057]
        for xs in (fast + slow, fast + slow[:2], fast[:2] + slow):
            cut = stats.two_outcome_split(xs)
            self.assertTrue(0.024 < cut < 0.039, (xs, cut))
            self.assertEqual(sorted(x for x in xs if x <= cut), sorted(x for x in fast if x in xs))

    def test_a_time_between_the_groups_goes_to_the_nearer_on_a_log_scale(self):
        # 30 ms is nearer 20 than 45 on a linear scale but not on a log one (sqrt(20 * 45) = 30)
        cut = stats.two_outcome_split([0.020] * 5 + [0.045] * 5 + [0.031])
        self.assertLess(cut, 0.031)

    def test_one_slow_outlier_does_not_make_a_group_of_its_own(self):
        cut = stats.two_outcome_split([0.020] * 8 + [0.045] * 7 + [0.200])
        self.assertTrue(0.020 < cut < 0.045, cut)

    def test_fewer_than_two_distinct_times_have_no_split(self):
        self.assertIsNone(stats.two_outcome_split([]))
        self.assertIsNone(stats.two_outcome_split([0.02, 0.02, 0.02]))
        self.assertIsNone(stats.two_outcome_split([0.0, -1.0, 0.02]))

    def test_the_app_whose_runs_end_in_two_outcomes_is_bayes(self):
        self.assertEqual(stamp.TWO_OUTCOMES, ("bayes",))


if __name__ == "__main__":
    unittest.main()

"""tmtrace_py.floorcost: each level over its floor and the abort-rate
ratios, with their intervals and verdicts."""
import unittest

import support  # noqa: F401  (puts the package on the path)
from tmtrace_py import floorcost


def run(level, ns, rate, workload="bank", threads=2):
    return dict(workload=workload, threads=threads, level=level, ns_per_op=ns, abort_rate=rate)


def runs_of(level, nss, rates, **cell):
    return [run(level, n, r, **cell) for n, r in zip(nss, rates)]


class LevelKey(unittest.TestCase):
    def test_all_with_boundary_stamps_is_held_to_the_tx_floor_and_all_with_each_to_the_all_floor(self):
        self.assertEqual(floorcost.FLOOR_BOUND[floorcost.level_key("all/boundary", "boundary")][0], "floor-tx")
        self.assertEqual(floorcost.FLOOR_BOUND[floorcost.level_key("all@memory/each", "each")][0], "floor-all")
        self.assertEqual(floorcost.level_key("default", "boundary"), "default")


class FloorRows(unittest.TestCase):
    def test_a_level_within_its_bound_over_its_floor_meets_it_and_one_above_misses(self):
        floor = runs_of("floor-tx", [100, 101, 99, 100, 102], [1] * 5)
        rs = floor + runs_of("default", [105, 106, 104, 105, 107], [1] * 5) + \
            runs_of("detail16", [130, 131, 129, 130, 132], [1] * 5)
        rows = {r["level"]: r for r in floorcost.floor_rows(rs, [("default", "boundary"), ("detail16", "boundary")])}
        self.assertTrue(rows["default"]["meets"])
        self.assertAlmostEqual(rows["default"]["ratio"], 1.05)
        lo, hi = rows["default"]["ci"]
        self.assertTrue(lo <= 1.05 <= hi)
        self.assertFalse(rows["detail16"]["meets"])
        self.assertEqual(rows["detail16"]["bound"], 1.15)

    def test_each_cell_is_judged_against_the_bound_though_the_geomean_meets_it(self):
        rs = runs_of("floor-tx", [100] * 5, [1] * 5) + runs_of("default", [100] * 5, [1] * 5) + \
            runs_of("floor-tx", [100] * 5, [1] * 5, workload="hash") + \
            runs_of("default", [115] * 5, [1] * 5, workload="hash")
        (row,) = floorcost.floor_rows(rs, [("default", "boundary")])
        self.assertTrue(row["meets"])
        self.assertEqual([(c, ok) for c, _, _, ok in row["cells"]], [(("bank", 2), True), (("hash", 2), False)])
        self.assertIn("not met", floorcost.floor_text([row])[-1])

    def test_a_cell_set_apart_is_listed_but_out_of_the_geomean_and_its_interval(self):
        rs = runs_of("floor-tx", [1.0] * 5, [1] * 5) + runs_of("default", [1.02] * 5, [1] * 5) + \
            runs_of("floor-tx", [1.0] * 5, [1] * 5, workload="bayes") + \
            runs_of("default", [2.0] * 5, [1] * 5, workload="bayes")
        for r in rs:
            r["seconds"] = r.pop("ns_per_op")
        apart = {("bayes", 2): "its runs vary most"}
        (row,) = floorcost.floor_rows(rs, [("default", "boundary")], "seconds", apart)
        self.assertAlmostEqual(row["ratio"], 1.02)
        self.assertTrue(row["ci"][1] < 1.08)
        self.assertEqual(len(row["cells"]), 2)
        self.assertIn("apart: its runs vary most", floorcost.floor_text([row])[-1])

    def test_a_level_whose_floor_was_not_run_has_no_row(self):
        rs = runs_of("all/each", [300, 310], [1, 1])
        self.assertEqual(floorcost.floor_rows(rs, [("all/each", "each")]), [])
        self.assertIn("no floor measured", floorcost.floor_text([])[1])


class PairedRatio(unittest.TestCase):
    def test_a_slow_stretch_that_slows_both_runs_of_a_repetition_cancels_in_the_paired_ratio(self):
        # every other repetition ran at half speed, both configurations alike
        speed = [1.0, 2.0] * 6
        rs = [dict(run("floor-tx", 100 * f, 1), rep=k) for k, f in enumerate(speed)] + \
            [dict(run("default", 110 * f, 1), rep=k) for k, f in enumerate(speed)]
        row = floorcost.floor_rows(rs, [("default", "boundary")])[0]
        g, gci, per = row["paired"]
        self.assertAlmostEqual(g, 1.1)
        self.assertAlmostEqual(gci[0], 1.1)
        self.assertAlmostEqual(gci[1], 1.1)
        self.assertGreater(row["ci"][1] / row["ci"][0], 1.5)  # the ratio of medians' interval carries the stretch
        self.assertIn("paired 1.100 [1.100, 1.100]", "\n".join(floorcost.floor_text([row])))

    def test_runs_without_repetition_numbers_print_no_paired_ratio(self):
        rs = runs_of("floor-tx", [100, 101, 99], [1] * 3) + runs_of("default", [105, 106, 104], [1] * 3)
        row = floorcost.floor_rows(rs, [("default", "boundary")])[0]
        self.assertIsNone(row["paired"][0])
        self.assertNotIn("paired 1", "\n".join(floorcost.floor_text([row])))


class RecordsRows(unittest.TestCase):
    def check(self, times, ratios, phrase):
        """Runs at the levels and median times of TIMES give exactly RATIOS
        {(num, den): ratio} and a table naming PHRASE."""
        rs = [r for level, t in times.items() for r in runs_of(level, [t] * 5, [1] * 5)]
        rows = {(r["num"], r["den"]): r["ratio"] for r in floorcost.records_rows(rs)}
        self.assertEqual(set(rows), set(ratios))
        for key, ratio in ratios.items():
            self.assertAlmostEqual(rows[key], ratio)
        self.assertIn(phrase, "\n".join(floorcost.records_text(floorcost.records_rows(rs))))

    def test_the_record_only_floor_gives_the_record_work_and_what_the_clock_adds_to_it(self):
        self.check({"off": 100, "floor-tx": 104, "floor-records": 110, "default": 121},
                   {("floor-records", "off"): 1.10, ("floor-tx", "off"): 1.04, ("default", "floor-records"): 1.10},
                   "the record work alone")

    def test_the_record_only_floor_at_all_gives_all_s_record_work_beside_its_clock_floor(self):
        self.check({"off": 100, "floor-all": 150, "floor-records-all": 300, "all": 420},
                   {("floor-records-all", "off"): 3.0, ("floor-all", "off"): 1.5, ("all", "floor-records-all"): 1.4},
                   "all's record work alone")

    def test_without_the_record_only_floor_there_is_no_table(self):
        rs = runs_of("off", [100] * 5, [1] * 5) + runs_of("floor-tx", [104] * 5, [1] * 5) + \
            runs_of("default", [121] * 5, [1] * 5)
        self.assertEqual(floorcost.records_rows(rs), [])
        self.assertEqual(floorcost.records_text([]), [])


class AbortRows(unittest.TestCase):
    OFF = [2.0, 2.1, 1.9, 2.0, 2.05, 1.95, 2.0, 2.02, 1.98]

    def test_the_default_within_its_band_meets_and_all_outside_its_band_misses(self):
        rs = runs_of("off", [1] * 9, self.OFF) + runs_of("default", [1] * 9, [x * 1.02 for x in self.OFF]) + \
            runs_of("all", [1] * 9, [x * 2 for x in self.OFF])
        (row,) = floorcost.abort_rows(rs, ["default", "all"])
        self.assertTrue(row["spread_ok"])
        got = {lv: meets for lv, _, _, _, meets, _ in row["levels"]}
        self.assertEqual(got, {"default": True, "all": False})

    def test_each_level_gives_its_time_ratio_beside_its_abort_ratio(self):
        rs = runs_of("off", [100] * 9, self.OFF) + runs_of("pad-outside", [125] * 9, [x * 0.8 for x in self.OFF])
        (row,) = floorcost.abort_rows(rs, ["pad-outside"])
        level, ratio, _, band, _, time = row["levels"][0]
        self.assertEqual((level, band), ("pad-outside", None))
        self.assertAlmostEqual(ratio, 0.8)
        self.assertAlmostEqual(time, 1.25)
        self.assertIn("time 1.250 (1/time 0.800)", floorcost.abort_text([row])[2])

    def test_runs_without_ns_per_op_give_the_ratio_of_their_seconds(self):
        rs = runs_of("off", [None] * 9, self.OFF) + runs_of("default", [None] * 9, self.OFF)
        for r, secs in zip(rs, [0.2] * 9 + [0.25] * 9):
            r["seconds"] = secs
        (row,) = floorcost.abort_rows(rs, ["default"])
        self.assertAlmostEqual(row["levels"][0][5], 1.25)

    def test_a_wide_untraced_spread_is_not_judged(self):
        off = [0.22, 0.8, 0.3, 0.7, 0.35, 0.28, 0.5]
        rs = runs_of("off", [1] * 7, off) + runs_of("default", [1] * 7, off)
        (row,) = floorcost.abort_rows(rs, ["default"])
        self.assertFalse(row["spread_ok"])
        self.assertFalse(row["levels"][0][4])
        self.assertIn("not judged", floorcost.abort_text([row])[1])

    def test_few_or_short_untraced_runs_are_noted_and_enough_long_ones_are_not(self):
        rs = runs_of("off", [1] * 9, self.OFF)
        for r in rs:
            r["seconds"] = 0.2
        (row,) = floorcost.abort_rows(rs, [])
        self.assertEqual(row["notes"], ["9 runs, fewer than 21", "runs of 0.20 s, shorter than 0.5 s"])
        self.assertIn("fewer than 21", floorcost.abort_text([row])[1])
        self.assertEqual(floorcost.abort_notes([1.0] * 21, [0.6] * 21), [])

    def test_a_cell_below_the_least_rate_and_a_level_without_band_are_listed_without_verdict(self):
        rs = runs_of("off", [1] * 3, [0.05] * 3, workload="hash") + runs_of("off", [1] * 3, [1.0] * 3) + \
            runs_of("floor-tx", [1] * 3, [1.1] * 3)
        rows = floorcost.abort_rows(rs, ["floor-tx"])
        self.assertEqual([r["cell"] for r in rows], [("bank", 2)])
        self.assertIsNone(rows[0]["levels"][0][4])


if __name__ == "__main__":
    unittest.main()

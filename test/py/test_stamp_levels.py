"""tmtrace_py.stamp: the environment each traced level of tmbench/stamp/run
runs with, whatever the caller's environment holds; the runs and apps issue
28's floor table takes."""
import unittest

import support  # noqa: F401  (puts the package on the path)
from tmtrace_py import stamp


class LevelEnv(unittest.TestCase):
    CALLER = {"TMTRACE_EVENTS": "all", "TMTRACE_STAMP": "each", "TMTRACE_DETAIL": "3", "PATH": "/bin"}

    def env(self, level):
        return stamp.apply_env(dict(self.CALLER), stamp.level_env(level))

    def test_the_default_level_runs_with_no_tmtrace_setting(self):
        self.assertEqual(self.env("default"), {"PATH": "/bin"})

    def test_detail16_samples_one_attempt_in_16_at_tx(self):
        e = self.env("detail16")
        self.assertEqual((e["TMTRACE_EVENTS"], e["TMTRACE_DETAIL"]), ("tx", "16"))

    def test_the_record_only_floor_runs_at_the_default_and_the_clock_floors_untraced(self):
        self.assertEqual(stamp.apply_env(dict(self.CALLER), stamp.floor_env("floor-records")), {"PATH": "/bin"})
        self.assertEqual(stamp.apply_env(dict(self.CALLER), stamp.floor_env("floor-tx"))["TMTRACE_EVENTS"], "off")

    def test_the_record_only_floor_at_all_records_every_access_with_a_stamp_each(self):
        e = stamp.apply_env(dict(self.CALLER, TMTRACE_EVENTS="off"), stamp.floor_env("floor-records-all"))
        self.assertEqual((e["TMTRACE_EVENTS"], e["TMTRACE_STAMP"]), ("all", "each"))
        self.assertNotIn("TMTRACE_DETAIL", e)
        self.assertIn("floor-records-all", [r["level"] for r in stamp.floor_runs([rec("floor-records-all", "off",
                                                                                        0.3)])])

    def test_a_level_that_records_every_access_lifts_the_tracers_share_so_that_its_trace_is_whole(self):
        for level in ("all", "all/boundary"):
            self.assertEqual(self.env(level)["TMTRACE_WRITER_SHARE"], "100")
        for level in ("tx", "detail16", "default"):  # the caller's own share stands
            self.assertEqual(stamp.apply_env(dict(self.CALLER, TMTRACE_WRITER_SHARE="5"),
                                             stamp.level_env(level)).get("TMTRACE_WRITER_SHARE"), "5")

    def test_a_level_without_detail_drops_the_callers(self):
        self.assertNotIn("TMTRACE_DETAIL", self.env("all"))
        self.assertEqual(self.env("all")["TMTRACE_STAMP"], "each")


def rec(backend, level, seconds, app="genome", commits=90, aborts=10, threads=2):
    return dict(app=app, backend=backend, level=level, threads=threads, seconds=seconds, commits=commits,
                aborts=aborts)


class FloorRuns(unittest.TestCase):
    def test_a_floor_builds_untraced_runs_are_its_level_and_other_backends_are_left_out(self):
        got = stamp.floor_runs([rec("libtmtrace", "off", 0.2), rec("libtmtrace", "default", 0.21),
                                rec("floor-tx", "off", 0.205, commits=None), rec("tinystm", "-", 0.3),
                                rec("base", "off", 0.2)])
        self.assertEqual([(r["level"], r["seconds"], r["abort_rate"]) for r in got],
                         [("off", 0.2, 10.0), ("default", 0.21, 10.0), ("floor-tx", 0.205, None)])
        self.assertEqual(got[0]["workload"], "genome")

    def test_a_short_phase_and_the_apps_that_vary_most_are_set_apart(self):
        runs = stamp.floor_runs([rec("libtmtrace", "off", s, app=app) for app, s in
                                 (("genome", 0.05), ("genome", 0.06), ("bayes", 0.3), ("vacation", 0.3))])
        apart = stamp.apart_cells(runs, ["genome", "bayes", "vacation"], 2)
        self.assertEqual(sorted(apart), [("bayes", 2), ("genome", 2)])
        self.assertIn("shorter than 0.1 s", apart[("genome", 2)])


if __name__ == "__main__":
    unittest.main()

"""tmtrace_py.stamp: the environment each traced level of tmbench/stamp/run
runs with, whatever the caller's environment holds."""
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

    def test_a_level_without_detail_drops_the_callers(self):
        self.assertNotIn("TMTRACE_DETAIL", self.env("all"))
        self.assertEqual(self.env("all")["TMTRACE_STAMP"], "each")


if __name__ == "__main__":
    unittest.main()

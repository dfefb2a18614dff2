"""The project's Python entry points find tmtrace_py without touching
sys.path: each runs from the source tree with no PYTHONPATH, and none of
them names sys.path."""
import os
import re
import subprocess
import sys
import unittest

import support

SKIP_DIRS = {".git", "test", "__pycache__", "tmtrace_py"}


def entry_points():
    """Every file of the source tree (its tests and build trees left out)
    that starts with a python3 #! line."""
    out = []
    for d, dirs, files in os.walk(support.SOURCE_ROOT):
        dirs[:] = sorted(x for x in dirs if x not in SKIP_DIRS and not x.startswith("build"))
        for f in sorted(files):
            path = os.path.join(d, f)
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            with open(path, "rb") as fh:
                if re.match(rb"#!.*\bpython3\b", fh.readline()):
                    out.append(path)
    return out


class EntryPoints(unittest.TestCase):
    def setUp(self):
        self.points = entry_points()
        names = {os.path.relpath(p, support.SOURCE_ROOT) for p in self.points}
        for known in ("tmbench/compare", "tmbench/overhead", "tmbench/soak", "tmbench/stamp/run",
                      "validate/run", "plots/tmplot", "scripts/modgraph"):
            self.assertIn(known, names)

    def test_no_entry_point_edits_sys_path(self):
        for p in self.points:
            with open(p) as f:
                self.assertNotRegex(f.read(), r"\bsys\.path\b", p)

    def test_every_entry_point_imports_the_package_without_pythonpath(self):
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        for p in self.points:
            proc = subprocess.run([sys.executable, "-B", p, "--help"], cwd="/", env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, universal_newlines=True)
            self.assertEqual(proc.returncode, 0, "%s --help: %s" % (p, proc.stderr))
            self.assertIn("usage:", proc.stdout, p)

    def test_through_each_link_the_package_knows_the_source_tree(self):
        links = sorted({os.path.dirname(p) for p in self.points if os.path.islink(
            os.path.join(os.path.dirname(p), "tmtrace_py"))})
        self.assertGreaterEqual(len(links), 4)
        for d in links:
            proc = subprocess.run([sys.executable, "-B", "-c", "from tmtrace_py import programs; "
                                   "print(programs.SOURCE_ROOT)"], cwd=d, stdout=subprocess.PIPE,
                                  universal_newlines=True, check=True)
            self.assertEqual(proc.stdout.strip(), os.path.realpath(support.SOURCE_ROOT), d)


if __name__ == "__main__":
    unittest.main()

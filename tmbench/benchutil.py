"""benchutil - what the tmbench scripts (compare, overhead) share.

Owns: the command-line conventions of those scripts (one-line errors naming
the program, exit 2; the value checkers; the options every script has) and
running one tmbench process: its last JSON line is the result, and a run
that exits non-zero, prints no JSON or fails its check is an error (one line
on stderr naming the command, exit 1). Standard library only.
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_BUILD = os.path.join(os.path.dirname(HERE), "build")


class OneLineParser(argparse.ArgumentParser):
    """argparse with errors as one line: 'PROG: message (see PROG --help)', exit 2."""

    def error(self, message):
        sys.stderr.write("%s: %s (see %s --help)\n" % (self.prog, message, self.prog))
        sys.exit(2)


def positive_int(text):
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("'%s' is not an integer" % text)
    if v < 1:
        raise argparse.ArgumentTypeError("'%s' must be at least 1" % text)
    return v


def positive_float(text):
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("'%s' is not a number" % text)
    if not v > 0:
        raise argparse.ArgumentTypeError("'%s' must be positive" % text)
    return v


def int_list(text):
    try:
        vals = [int(x) for x in text.split(",") if x]
    except ValueError:
        raise argparse.ArgumentTypeError("'%s' is not a comma-separated list of integers" % text)
    if not vals or min(vals) < 1:
        raise argparse.ArgumentTypeError("'%s' needs thread counts >= 1" % text)
    return vals


def add_common_args(p, duration_help):
    """The options every tmbench script has, in this order: --reps, --duration,
    --threads, --workloads, --build, --csv and the options after --."""
    p.add_argument("--reps", type=positive_int, default=5, help="repetitions per configuration (default 5)")
    p.add_argument("--duration", type=positive_float, default=1.0, help=duration_help)
    p.add_argument("--threads", type=int_list, default=[1, 2], help="thread counts (default 1,2)")
    p.add_argument("--workloads", default="list,rbtree,hash,bank",
                   help="comma-separated workloads (default list,rbtree,hash,bank)")
    p.add_argument("--build", default=DEFAULT_BUILD,
                   help="build directory holding tmbench/ (default: the repository's build/)")
    p.add_argument("--csv", metavar="FILE", help="also write every run and the medians as CSV")
    p.add_argument("extra", nargs="*", help="options passed to every run, after --, e.g. -- --range 4096")


def tmbench_path(build, name="tmbench"):
    """The path of a tmbench binary in a build directory, or None when it is not executable."""
    path = os.path.join(os.path.abspath(build), "tmbench", name)
    return path if os.access(path, os.X_OK) else None


def tmbench_missing(prog, build):
    """Say that BUILD holds no tmbench; the caller exits 2."""
    sys.stderr.write("%s: %s/tmbench/tmbench not found (build first, or pass --build DIR)\n" % (prog, build))


_progress_shown = False


def progress(text):
    """A status line on stderr, rewritten in place; only when stderr is a terminal."""
    global _progress_shown
    if sys.stderr.isatty():
        sys.stderr.write("\r%-72s" % text)
        sys.stderr.flush()
        _progress_shown = True


def end_progress():
    """Ends the status line, if progress() wrote one."""
    global _progress_shown
    if _progress_shown:
        sys.stderr.write("\n")
        _progress_shown = False


def fail(prog, message):
    """One line 'PROG: message' on stderr (on a line of its own), exit 1."""
    end_progress()
    sys.stderr.write("%s: %s\n" % (prog, message))
    sys.exit(1)


def run_tmbench(prog, cmd, env, cwd):
    """Run one tmbench command with ENV added to the environment, in CWD, and
    return its last JSON line as a dict. Exits 1 with one line on stderr when
    the run cannot start, exits non-zero, prints no JSON or fails its check."""
    full_env = dict(os.environ)
    full_env.update(env)
    shown = " ".join(cmd)
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=full_env, cwd=cwd,
                              universal_newlines=True)
    except OSError as e:
        fail(prog, "%s could not run: %s" % (shown, e.strerror or e))
    lines = [l for l in proc.stdout.splitlines() if l.startswith("{")]
    if proc.returncode != 0 or not lines:
        err = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        fail(prog, "%s failed (exit %d): %s" % (shown, proc.returncode, err))
    try:
        rec = json.loads(lines[-1])
    except ValueError:
        fail(prog, "%s: its last JSON line does not parse" % shown)
    if rec.get("check") != "ok":
        fail(prog, "%s: check failed: %s" % (shown, rec.get("check_msg", "")))
    return rec

"""bench - running tmbench, and the options the tmbench scripts share.

Owns: the options every tmbench script has (--reps, --duration, --threads,
--workloads, --build, --csv and the options after --), finding a tmbench
binary in a build tree, what a measuring build measures (-Dclock_floor),
the operation count calibration runs fix (the median), and running one
tmbench process: its last JSON line, checked against schema.TMBENCH, is the
result; a run that cannot start, exits non-zero, prints no JSON or fails
its own check is a ScriptError (exit 1) naming the command.
Never: interprets a result beyond its check (the scripts do).
"""
import json
import os
import statistics

from . import cli, programs, schema


def add_common_args(p, duration_help):
    """The options every tmbench script has, in this order: --reps, --duration,
    --threads, --workloads, --build, --csv and the options after --."""
    p.add_argument("--reps", type=cli.positive_int, default=5, help="repetitions per configuration (default 5)")
    p.add_argument("--duration", type=cli.positive_float, default=1.0, help=duration_help)
    p.add_argument("--threads", type=cli.int_list, default=[1, 2], help="thread counts (default 1,2)")
    p.add_argument("--workloads", type=cli.name_list, default=["list", "rbtree", "hash", "bank"],
                   help="comma-separated workloads (default list,rbtree,hash,bank)")
    add_build_arg(p, "tmbench/")
    p.add_argument("--csv", metavar="FILE", help="also write every run and the medians as CSV")
    p.add_argument("extra", nargs="*", help="options passed to every run, after --, e.g. -- --range 4096")


def median_ops(counts):
    """The operation count that fixes a cell's work: the median of the
    calibration runs' counts (of an even number, the lower middle one, so
    always a count that was run)."""
    if not counts:
        raise ValueError("no calibration runs")
    return int(statistics.median_low(counts))


def add_build_arg(p, holding):
    """--build: the meson build tree the programs come from."""
    p.add_argument("--build", default=programs.DEFAULT_BUILD,
                   help="build directory holding %s (default: the repository's build/)" % holding)


def tmbench_program(build, name="tmbench"):
    """The tmbench binary NAME of the build tree BUILD, or None when it is not built."""
    try:
        return programs.find_program(name, build=build)
    except programs.ProgramError:
        return None


def need_program(build, name):
    """Like programs.find_program in BUILD, as a ScriptError (exit 2)."""
    try:
        return programs.find_program(name, build=build)
    except programs.ProgramError as e:
        raise cli.ScriptError(str(e), cli.EXIT_USAGE)


def abort_rate_pct(rec):
    """aborts / (commits + aborts) in % of a tmbench line; None when the backend
    does not count aborts or nothing ran."""
    commits, aborts = rec["commits"], rec["aborts"]
    return 100.0 * aborts / (commits + aborts) if aborts is not None and commits + aborts > 0 else None


def dropped_pct(rec):
    """events dropped / events produced (recorded + dropped) in % of a
    tmbench line; None when it counts no events (untraced, another backend)."""
    dropped, recorded = rec.get("events_dropped"), rec.get("events_recorded")
    if dropped is None or recorded is None or dropped + recorded == 0:
        return None
    return 100.0 * dropped / (dropped + recorded)


def shed_pct(rec):
    """attempts shed (recorded without their reads and writes at level all)
    / attempts (commits + aborts) in % of a tmbench line; None when it does
    not count them (untraced, another backend, an older build)."""
    shed, commits, aborts = rec.get("attempts_shed"), rec.get("commits"), rec.get("aborts")
    if shed is None or commits is None or aborts is None or commits + aborts == 0:
        return None
    return 100.0 * shed / (commits + aborts)


def run_tmbench(cmd, env, cwd, doc=schema.TMBENCH, clean_env=False):
    """Runs one tmbench command with ENV added to the environment (with
    clean_env, to it without its TMTRACE_* variables), in CWD, and
    returns its last JSON line as a dict checked against DOC. ScriptError
    (exit 1) when the run cannot start, exits non-zero, prints no JSON or
    fails its check."""
    shown = " ".join(cmd)
    try:
        # exit 1: the workload's check failed (the JSON line says why)
        status, out = programs.run(cmd, env=env, cwd=cwd, ok=(0, 1), clean_env=clean_env)
        rec = schema.read(doc, programs.last_json(out, shown))
    except (programs.ProgramError, schema.SchemaError) as e:
        raise cli.ScriptError("%s failed: %s" % (shown, e), cli.EXIT_FAILED)
    if rec["check"] != "ok":
        raise cli.ScriptError("%s: check failed: %s" % (shown, rec.get("check_msg", "")), cli.EXIT_FAILED)
    if status != 0:
        raise cli.ScriptError("%s failed (exit %d)" % (shown, status), cli.EXIT_FAILED)
    return rec


def build_option(build, name):
    """The value of the meson option NAME in the build tree BUILD, read from
    its meson-info (None when the tree has no such option); a ScriptError
    (exit 2) naming BUILD when it is not a configured tree."""
    path = os.path.join(build, "meson-info", "intro-buildoptions.json")
    try:
        with open(path) as f:
            options = json.load(f)
    except (OSError, ValueError) as e:
        raise cli.ScriptError("%s: not a configured meson build tree (%s)" % (build, getattr(e, "strerror", None) or e),
                              cli.EXIT_USAGE)
    values = [o.get("value") for o in options if isinstance(o, dict) and o.get("name") == name]
    return values[0] if values else None


def measuring_level(build):
    """The level under which the measuring build BUILD (a meson build tree)
    runs: floor-tx, floor-all or floor-records for -Dclock_floor=tx, all or
    records (docs/tracer.md, "The clock's floor"), pad-outside or pad-inside
    for -Dattempt_pad=outside or inside ("What moves the abort rates"); a
    ScriptError (exit 2) naming BUILD when it is not a configured tree or
    not a measuring build."""
    pad = build_option(build, "attempt_pad")
    if pad in ("outside", "inside"):
        return "pad-" + pad
    level = build_option(build, "clock_floor")
    if level not in ("tx", "all", "records"):
        raise cli.ScriptError("%s: not a measuring build (configure it with meson -Dclock_floor=tx, all or records, "
                              "or -Dattempt_pad=outside or inside)" % build, cli.EXIT_USAGE)
    return "floor-" + level


def cpu_model():
    """The CPU's model name as /proc/cpuinfo gives it ("unknown CPU" without one)."""
    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return model

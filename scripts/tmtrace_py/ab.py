"""ab - the same tmbench workloads from two builds of libtmtrace, run
interleaved, so that a change's cost is measured against the tree before it.

Owns: the A/B protocol and its table. Each cell (workload, threads, level)
gets fixed work: the median operation count of --calibrations untraced runs
of the BEFORE build for --duration seconds; every measured run then does
that many operations, so its time per operation is the figure. In every
repetition each cell runs BEFORE and AFTER back to back, in an order that
alternates from one repetition to the next (so neither build always runs
first, on a warmer or a colder machine). Per cell: median ns/op of each
build, after/before and its bootstrap 95 % interval; per level: the
geomean of after/before over the cells.
Never: judges a run whose own check failed (bench.run_tmbench makes it an
error), or compares builds' figures taken in different runs of the script.
"""
import os
import statistics
import tempfile

from . import bench, cli, stats

LEVELS = ("off", "tx", "all")


def parse_args(argv, prog):
    p = cli.OneLineParser(
        prog=prog,
        description="Runs tmbench from two builds (--before, --after) on the same cells, interleaved, "
        "with fixed work, and prints per cell the median ns/op of each, after/before with its "
        "bootstrap 95 %% interval, and the geomean of after/before per level.",
        epilog="Exit status: 0 when every run succeeded; 1 when a run failed (one line naming the command); "
        "2 for a bad option or a build without tmbench.")
    p.add_argument("--before", required=True, metavar="DIR", help="the build tree measured against")
    p.add_argument("--after", required=True, metavar="DIR", help="the build tree measured")
    p.add_argument("--levels", type=cli.name_list, default=["off"],
                   help="TMTRACE_EVENTS levels, comma-separated (default off)")
    p.add_argument("--calibrations", type=cli.positive_int, default=3,
                   help="untraced runs of BEFORE that fix each cell's operation count (default 3)")
    p.add_argument("--reps", type=cli.positive_int, default=9, help="repetitions (default 9)")
    p.add_argument("--duration", type=cli.positive_float, default=0.5,
                   help="seconds of a calibration run (default 0.5)")
    p.add_argument("--threads", type=cli.int_list, default=[1, 2], help="thread counts (default 1,2)")
    p.add_argument("--workloads", type=cli.name_list, default=["list", "rbtree", "hash", "bank"],
                   help="comma-separated workloads (default list,rbtree,hash,bank)")
    p.add_argument("extra", nargs="*", help="options passed to every run, after --")
    a = p.parse_args(argv)
    bad = [lv for lv in a.levels if lv not in LEVELS]
    if bad:
        p.error("argument --levels: '%s' is not one of %s" % (bad[0], ",".join(LEVELS)))
    a.exe = {}
    for build in ("before", "after"):
        a.exe[build] = bench.tmbench_program(getattr(a, build))
        if not a.exe[build]:
            p.error("argument --%s: no tmbench in %s (build it: ninja -C %s)" % (build, getattr(a, build),
                                                                             getattr(a, build)))
    return a


def order(rep):
    """The builds in the order repetition REP runs them."""
    return ("before", "after") if rep % 2 == 0 else ("after", "before")


def run(exe, workload, threads, level, work, extra, cwd):
    """One tmbench run; its result line."""
    env = {"TMTRACE_EVENTS": level, "TMTRACE_FILE": os.path.join(cwd, "ab.bin")}
    cmd = [exe, workload, "--threads", str(threads)] + work + extra
    rec = bench.run_tmbench(cmd, env, cwd)
    if os.path.exists(env["TMTRACE_FILE"]):
        os.remove(env["TMTRACE_FILE"])
    return rec


def calibrate(a, cwd):
    """{(workload, threads): operation count} from BEFORE's untraced runs."""
    ops = {}
    for w in a.workloads:
        for t in a.threads:
            counts = [run(a.exe["before"], w, t, "off", ["--duration", str(a.duration)], a.extra, cwd)["ops"]
                      for _ in range(a.calibrations)]
            ops[(w, t)] = bench.median_ops(counts)
    return ops


def measure(a, ops, cwd):
    """{(workload, threads, level, build): [ns/op of each repetition]}."""
    ns = {}
    for rep in range(a.reps):
        for (w, t), n in ops.items():
            for lv in a.levels:
                for build in order(rep):
                    rec = run(a.exe[build], w, t, lv, ["--ops", str(n)], a.extra, cwd)
                    ns.setdefault((w, t, lv, build), []).append(rec["seconds"] / rec["ops"] * 1e9)
                    cli.progress("rep %d/%d %-8s %d thr %-3s %-6s" % (rep + 1, a.reps, w, t, lv, build))
    cli.end_progress()
    return ns


def rows(a, ops, ns):
    """One row per cell and level: workload, threads, level, medians, ratio, interval."""
    out = []
    for (w, t) in ops:
        for lv in a.levels:
            b, f = ns[(w, t, lv, "before")], ns[(w, t, lv, "after")]
            out.append((w, t, lv, statistics.median(b), statistics.median(f), stats.median_ratio(f, b),
                        stats.bootstrap_ratio_ci(f, b)))
    return out


def print_report(a, table):
    print("%d interleaved repetitions, fixed work per cell; after = %s, before = %s" % (a.reps, a.after, a.before))
    print("%-9s %7s %5s %12s %12s %12s  %s" % ("workload", "threads", "level", "before ns/op", "after ns/op",
                                              "after/before", "95% interval"))
    for w, t, lv, mb, mf, r, ci in table:
        print("%-9s %7d %5s %12.1f %12.1f %12.3f  [%.3f, %.3f]" % (w, t, lv, mb, mf, r, ci[0], ci[1]))
    for lv in a.levels:
        g = stats.geomean(r[5] for r in table if r[2] == lv)
        print("geomean after/before at %s: %.3f over %d cells" % (lv, g, sum(1 for r in table if r[2] == lv)))


def main(argv, prog="ab"):
    a = parse_args(argv, prog)
    with tempfile.TemporaryDirectory(prefix="tmbench-ab-") as cwd:
        ops = calibrate(a, cwd)
        ns = measure(a, ops, cwd)
    print_report(a, rows(a, ops, ns))
    return 0

"""toolspeed - how fast tmsync and tmcheck get through a recorded trace: the
protocol and table of tmbench/tools-speed.

Owns: recording the trace (a tmbench workload at `all`, with injected clock
skew and migrations, or a trace given as it is), timing each tool at each
--jobs, its peak resident memory (the child's ru_maxrss), events/s, the
synchronised file's size against the raw one's and whether every --jobs gave
the same JSON; the note of the machine's CPU model and load the figures were
taken under.
Never: interprets a tool run that exits with a status other than its
documented success statuses (tmsync 0, tmcheck 0 or 1): that is an error.
"""
import json
import os
import statistics
import subprocess
import tempfile
import time

from . import bench, cli

# The exit statuses that mean "ran through": tmcheck's 1 is its verdict on
# an unsynchronised trace, not a failure.
OK_STATUS = {"tmsync": (0,), "tmcheck": (0, 1)}


def parse_args(argv, prog):
    p = cli.OneLineParser(
        prog=prog,
        description="Records a trace (a tmbench workload at `all`, 2 threads, injected skew and migrations) or "
        "takes --trace, then times tmsync and tmcheck (on the raw and on the synchronised trace) at each "
        "--jobs and prints per tool the median wall time, events/s, peak RSS and whether every --jobs "
        "gave the same JSON.",
        epilog="Exit status: 0 when every run succeeded; 1 when a run failed or --jobs counts disagreed "
        "(one line naming it); 2 for a bad option or a build without the tools.")
    bench.add_build_arg(p, "tmbench and the tools")
    p.add_argument("--workload", default="vacation", help="tmbench workload to record (default vacation)")
    p.add_argument("--threads", type=cli.positive_int, default=2, help="threads of the recorded run (default 2)")
    p.add_argument("--duration", type=cli.positive_float, default=1.0,
                   help="seconds of the recorded run (default 1): the trace's length")
    p.add_argument("--skew", default="1:250000:120", help="TMTRACE_SKEW of the recorded run (default 1:250000:120)")
    p.add_argument("--migrate", type=int, default=5, help="TMTRACE_MIGRATE ms of the recorded run (default 5)")
    p.add_argument("--trace", metavar="FILE", help="time the tools on this raw trace instead of recording one")
    p.add_argument("--jobs", type=cli.int_list, default=[1, 2], help="--jobs values, comma-separated (default 1,2)")
    p.add_argument("--reps", type=cli.positive_int, default=3, help="runs of each tool and --jobs (default 3)")
    p.add_argument("--work", metavar="DIR", help="keep the traces in DIR (default: a temporary folder, removed)")
    p.add_argument("extra", nargs="*", help="options passed to tmbench, after --")
    a = p.parse_args(argv)
    a.tmsync = bench.need_program(a.build, "tmsync")
    a.tmcheck = bench.need_program(a.build, "tmcheck")
    if not a.trace:
        a.tmbench = bench.need_program(a.build, "tmbench")
    elif not os.path.isfile(a.trace):
        p.error("argument --trace: no such file: %s" % a.trace)
    return a


def timed(cmd):
    """Runs CMD; (exit status, wall seconds, CPU seconds, peak RSS in MiB, stdout)."""
    with tempfile.TemporaryFile() as out:
        t0 = time.monotonic()
        child = subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL)
        _, status, ru = os.wait4(child.pid, 0)
        wall = time.monotonic() - t0
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        cpu = ru.ru_utime + ru.ru_stime
        return child.returncode, wall, cpu, ru.ru_maxrss / 1024.0, out.read().decode("utf-8", "replace")


def record(a, path):
    """The tmbench run that writes the trace at PATH."""
    env = dict(os.environ, TMTRACE_FILE=path, TMTRACE_EVENTS="all", TMTRACE_SKEW=a.skew,
               TMTRACE_MIGRATE=str(a.migrate), TMTRACE_WRITER_SHARE="100")  # the tools read a whole trace
    cmd = [a.tmbench, a.workload, "--threads", str(a.threads), "--duration", str(a.duration)] + a.extra
    r = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise cli.ScriptError("%s failed (exit %d): %s" % (" ".join(cmd), r.returncode, r.stderr.strip()[:200]),
                              cli.EXIT_FAILED)


def cases(a, raw, synced):
    """(label, tool name, argv without --jobs) of every timed command, tmsync first:
    the others read what it writes."""
    return [("tmsync raw", "tmsync", [a.tmsync, "--json", raw, "-o", synced]),
            ("tmcheck raw", "tmcheck", [a.tmcheck, "--json", raw]),
            ("tmcheck synced", "tmcheck", [a.tmcheck, "--json", synced])]


def run_cases(a, raw, synced):
    """{(label, jobs): [(wall, cpu, rss)]}, {(label, jobs): json text}; every case at
    every --jobs in each repetition, so that load hits them alike."""
    times, outputs = {}, {}
    for rep in range(a.reps):
        for label, tool, cmd in cases(a, raw, synced):
            for jobs in a.jobs:
                cli.progress("rep %d/%d: %s --jobs %d" % (rep + 1, a.reps, label, jobs))
                rc, wall, cpu, rss, out = timed(cmd + ["--jobs", str(jobs)])
                if rc not in OK_STATUS[tool]:
                    raise cli.ScriptError("%s failed (exit %d)" % (" ".join(cmd), rc), cli.EXIT_FAILED)
                times.setdefault((label, jobs), []).append((wall, cpu, rss))
                outputs[(label, jobs)] = out
    cli.end_progress()
    return times, outputs


def rows(times, events, jobs_list, labels):
    """Table rows (label, jobs, median wall s, M events/s of it, median CPU s,
    peak RSS MiB)."""
    out = []
    for label in labels:
        for jobs in jobs_list:
            runs = times[(label, jobs)]
            wall = statistics.median(r[0] for r in runs)
            cpu = statistics.median(r[1] for r in runs)
            out.append((label, jobs, wall, events / wall / 1e6 if wall > 0 else 0.0, cpu, max(r[2] for r in runs)))
    return out


def disagreements(outputs, jobs_list, labels):
    """The labels whose JSON differs between --jobs values."""
    return [lb for lb in labels if len({outputs[(lb, j)] for j in jobs_list}) > 1]


def machine_note():
    """'CPU model, N CPUs available, load average a b c' of this machine."""
    load = " ".join("%.2f" % x for x in os.getloadavg())
    return "%s, %d CPUs available, load average %s" % (bench.cpu_model(), len(os.sched_getaffinity(0)), load)


def report(a, raw, synced, events, table, differ, note_before):
    print("trace: %s (%d events, %.1f MB); synchronised: %.1f MB, %.3fx the raw file"
          % (raw, events, os.path.getsize(raw) / 1e6, os.path.getsize(synced) / 1e6,
             os.path.getsize(synced) / os.path.getsize(raw)))
    print("machine: %s (at the start: %s)" % (machine_note(), note_before))
    print("%-16s %5s %10s %12s %10s %12s" % ("tool", "jobs", "wall_s", "M_events/s", "cpu_s", "peak_RSS_MiB"))
    for label, jobs, wall, rate, cpu, rss in table:
        print("%-16s %5d %10.3f %12.1f %10.3f %12.1f" % (label, jobs, wall, rate, cpu, rss))
    print("same JSON at every --jobs: %s" % ("yes" if not differ else "NO: " + ", ".join(differ)))


def main(argv, prog="tools-speed"):
    a = parse_args(argv, prog)
    with tempfile.TemporaryDirectory(prefix="tools-speed.") as tmp:
        work = a.work or tmp
        os.makedirs(work, exist_ok=True)
        raw = a.trace or os.path.join(work, "trace.bin")
        synced = os.path.join(work, "trace.sync.bin")
        note_before = machine_note()
        if not a.trace:
            cli.progress("recording %s for %g s" % (a.workload, a.duration))
            record(a, raw)
        times, outputs = run_cases(a, raw, synced)
        events = json.loads(outputs[("tmsync raw", a.jobs[0])])["events"]
        labels = [c[0] for c in cases(a, raw, synced)]
        differ = disagreements(outputs, a.jobs, labels)
        report(a, raw, synced, events, rows(times, events, a.jobs, labels), differ, note_before)
        return cli.EXIT_FAILED if differ else 0

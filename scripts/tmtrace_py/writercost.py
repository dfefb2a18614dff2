"""writercost - what the tracer's own CPU costs per event: the protocol and
table of tmbench/writer-cost (issue 28's writer figure).

Owns: the cells (workloads x levels tx, all with boundary stamps, all with a
stamp per access, at one thread count), the run of each (tmbench with
--duration, the trace in a temporary folder) and its line: all of the
tracer's CPU per event recorded, exit included (tracer_ns_per_event), the
writer's share of a CPU during the run, the events dropped, the buffers
mapped by the program's threads a second or more after init, bytes per
event; and, with --callgrind, the instructions per event recorded of the
writer by part (row encoding, block compression, CRC, the rest), of
tmt_init and of tmt_shutdown, from callgrind's inclusive function totals:
deterministic where a shared machine moves every time; with --perf, each
run's tracer CPU by thread (the writer by part, the refill thread, init and
exit), from perf's cpu-clock samples of the named threads.
Never: interprets a run that exits non-zero or fails its check (an error,
exit 1); judges the callgrind counts (they are for comparing builds).
"""
import os
import re
import shutil
import statistics
import subprocess
import tempfile

from . import bench, cli, icount

# (name, TMTRACE_EVENTS, TMTRACE_STAMP)
LEVELS = (("tx", "tx", "boundary"), ("all/boundary", "all", "boundary"), ("all/each", "all", "each"))
BOUND_NS = 15.0
# --callgrind's default operations per run: about 3 M events at `all`
# (hash records a few events an operation, vacation a hundred).
DEFAULT_OPS = {"vacation": 30000, "hash": 600000}

# The writer's parts, by the functions callgrind counts inclusively, and
# the tracer's own threads and calls whose whole they are part of.
PARTS = (("encode", ("codec_encode_slots",)),
         ("compress", ("LZ4_compress_fast", "compress2")),
         ("crc", ("codec_crc32",)))
WHOLE = (("writer", ("tw_main", "tw_refill_main")), ("init", ("tmt_init",)), ("exit", ("tmt_shutdown",)))

_INCLUSIVE = re.compile(r"^\s*([\d,]+) \(\s*[\d.]+%\)\s+(\S+)", re.M)


def parse_args(argv, prog):
    p = cli.OneLineParser(
        prog=prog,
        description="Runs tmbench's workloads at each level (tx, all with boundary stamps, all with a stamp per "
        "access) and prints per run all of the tracer's CPU per event recorded (exit included), the writer's "
        "share of a CPU during the run, the events dropped, the buffers the program's threads mapped a second "
        "or more after init and the bytes per event. With --callgrind: instead, one run per cell of --ops "
        "operations under valgrind's callgrind, and the instructions per event of the writer by part.",
        epilog="Exit status: 0 when every run succeeded (a missed 15 ns bound does not change it); 1 when a run "
        "failed; 2 for a bad option or a missing program.")
    bench.add_build_arg(p, "tmbench/")
    p.add_argument("--workloads", type=cli.name_list, default=["vacation", "hash"],
                   help="comma-separated workloads (default vacation,hash)")
    p.add_argument("--threads", type=cli.positive_int, default=2, help="worker threads (default 2)")
    p.add_argument("--duration", type=cli.positive_float, default=10.0, help="seconds per run (default 10)")
    p.add_argument("--reps", type=cli.positive_int, default=1, help="runs per cell, interleaved (default 1)")
    p.add_argument("--levels", type=cli.choice_list([n for n, _, _ in LEVELS]), default=[n for n, _, _ in LEVELS],
                   help="comma-separated levels to run, of tx, all/boundary, all/each (default all three)")
    p.add_argument("--callgrind", action="store_true",
                   help="count instructions under callgrind instead of timing (one run per cell, --ops)")
    p.add_argument("--perf", action="store_true",
                   help="split each run's tracer CPU by thread under perf record (the writer by part, the refill "
                   "thread, init and exit) instead of the table")
    p.add_argument("--ops", type=cli.positive_int,
                   help="with --callgrind: operations per run (default vacation 30000, hash 600000, others 100000)")
    p.add_argument("extra", nargs="*", help="options passed to every tmbench run, after --")
    a = p.parse_args(argv)
    a.levels = [lv for lv in LEVELS if lv[0] in a.levels]
    a.tmbench = bench.need_program(a.build, "tmbench")
    if a.perf and shutil.which("perf") is None:
        raise cli.ScriptError("--perf needs perf, which is not on PATH", cli.EXIT_USAGE)
    if a.callgrind:
        # valgrind has no rdpid: a normal build's stamps then take the
        # records' out-of-line path, where a COMMIT does not carry its write
        # set, and the writer is counted on records no real run makes.
        if bench.build_option(a.build, "countable_stamp") is not True:
            raise cli.ScriptError("--callgrind: %s is not a countable build (configure one with meson "
                                  "-Dcountable_stamp=true and pass it with --build)" % a.build, cli.EXIT_USAGE)
        for tool in ("valgrind", "callgrind_annotate"):
            if shutil.which(tool) is None:
                raise cli.ScriptError("--callgrind needs %s, which is not on PATH" % tool, cli.EXIT_USAGE)
    return a


def level_env(events, stamp, trace):
    return {"TMTRACE_EVENTS": events, "TMTRACE_STAMP": stamp, "TMTRACE_FILE": trace}


def timed_line(name, rec):
    """One run's figures as a table row."""
    dropped = bench.dropped_pct(rec) or 0.0
    shed = bench.shed_pct(rec) or 0.0
    ns = rec["tracer_ns_per_event"]
    return "%-10s %-13s %8.1f %6s %7.3f %8.1f %6.2f %6.2f %7d %6.2f" % (
        name[0], name[1], ns, "ok" if ns <= BOUND_NS else "miss", rec["writer_cpu_share"],
        rec["events_recorded"] / 1e6, dropped, shed, rec["buffer_late_maps"], rec["bytes_per_event"])


def run_timed(a, work):
    print("tracer CPU per event, %d thread(s), %g s runs, %s, load %.2f" % (
        a.threads, a.duration, bench.cpu_model(), os.getloadavg()[0]))
    print("%-10s %-13s %8s %6s %7s %8s %6s %6s %7s %6s" % ("workload", "level", "ns/event", "<=15", "share",
                                                           "M events", "drop%", "shed%", "late", "B/ev"))
    rows = {}
    for _ in range(a.reps):
        for w in a.workloads:
            for name, events, stamp in a.levels:
                trace = os.path.join(work, "t.trace")
                cmd = [a.tmbench, w, "--threads", str(a.threads), "--duration", str(a.duration)] + a.extra
                rec = bench.run_tmbench(cmd, level_env(events, stamp, trace), work)
                os.unlink(trace) if os.path.exists(trace) else None
                print(timed_line((w, name), rec), flush=True)
                rows.setdefault((w, name), []).append(rec["tracer_ns_per_event"])
    if a.reps > 1:
        print("medians: " + ", ".join("%s %s %.1f" % (w, n, statistics.median(v)) for (w, n), v in rows.items()))
    miss = [k for k, v in rows.items() if statistics.median(v) > BOUND_NS]
    print("tracer_ns_per_event <= %g: %s" % (BOUND_NS, "met in every cell" if not miss else
                                            "missed in " + ", ".join("%s %s" % k for k in miss)))


def inclusive(report):
    """{function: inclusive instructions} of callgrind_annotate --inclusive=yes."""
    out = {}
    for n, where in _INCLUSIVE.findall(report):
        name = where.split(":", 1)[-1]
        out.setdefault(name, int(n.replace(",", "")))
    return out


def counted_line(name, fns, events, bytes_per_event):
    """A cell's instructions per event: each part wherever it ran (the writer
    thread, or tmt_shutdown's last drain), the rest of the writer, refill
    thread and tmt_shutdown, tmt_init, and their total."""
    def total(names):
        return sum(fns.get(f, 0) for f in names)
    parts = [total(names) for _, names in PARTS]
    running, init = total(WHOLE[0][1]) + total(WHOLE[2][1]), total(WHOLE[1][1])
    vals = parts + [running - sum(parts), init, running + init]
    return "%-10s %-13s %9.2f " % (name[0], name[1], events / 1e6) + " ".join(
        "%8.1f" % (v / events) for v in vals) + " %6.2f" % bytes_per_event


def run_counted(a, work):
    print("instructions per event recorded (callgrind), %d thread(s), TMTRACE_WRITER_SHARE=100" % a.threads)
    print("%-10s %-13s %9s " % ("workload", "level", "M events") + " ".join(
        "%8s" % h for h in ("encode", "compress", "crc", "rest", "init", "total")) + " %6s" % "B/ev")
    for w in a.workloads:
        ops = a.ops or DEFAULT_OPS.get(w, 100000)
        for name, events, stamp in a.levels:
            trace, out = os.path.join(work, "t.trace"), os.path.join(work, "callgrind.out")
            env = dict(level_env(events, stamp, trace), TMTRACE_WRITER_SHARE="100")
            cmd = icount.valgrind_command(out) + [a.tmbench, w, "--threads", str(a.threads), "--ops",
                                                  str(ops)] + a.extra
            rec = bench.run_tmbench(cmd, env, work)
            report = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", "--auto=no", out],
                                    stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout
            for f in (trace, out):
                os.unlink(f) if os.path.exists(f) else None
            print(counted_line((w, name), inclusive(report), max(rec["events_recorded"], 1),
                               rec["bytes_per_event"]), flush=True)


# --perf: the tracer's threads by name (trace_writer.c names them), the
# writer's samples by part (a symbol's name starts with one of these).
PERF_PARTS = (("compress", ("LZ4_", "compress2", "deflate")), ("encode", ("codec_encode", "codec_slot", "codec_put")),
              ("crc", ("crc32", "codec_crc32")))
PERF_MS = 1  # one sample per millisecond of CPU time


def perf_split(script):
    """Milliseconds by thread group and writer part from `perf script -F
    comm,ip,sym,dso` output: {writer, refill, sampling (the clock sampling
    phases' threads), program, and the writer's compress, encode, crc,
    kernel, rest}."""
    out = dict.fromkeys(("writer", "refill", "sampling", "program", "compress", "encode", "crc", "kernel", "rest"), 0)
    for line in script.splitlines():
        f = line.split()
        if not f:
            continue
        comm = f[0]
        if comm == "tmt-refill":
            out["refill"] += PERF_MS
        elif comm == "tmt-sample":
            out["sampling"] += PERF_MS
        elif comm != "tmt-writer":
            out["program"] += PERF_MS
        else:
            out["writer"] += PERF_MS
            sym, dso = (f[2] if len(f) > 3 else ""), (f[-1] if len(f) > 3 else "")
            part = next((name for name, pre in PERF_PARTS if sym.startswith(pre)), None)
            out[part or ("kernel" if "kernel" in dso else "rest")] += PERF_MS
    return out


def perf_line(name, rec, ms):
    """One cell's tracer CPU by thread: the writer (and its parts), the
    refill thread, the clock sampling phases' threads (in tmt_init and
    tmt_shutdown), and the rest of tmt_init and tmt_shutdown (the tracer's
    total less those threads), in seconds."""
    ev = max(rec["events_recorded"], 1)
    tracer = rec["tracer_cpu_s"] or 0.0
    rest = max(tracer - (ms["writer"] + ms["refill"] + ms["sampling"]) / 1e3, 0.0)
    vals = [ms[k] / 1e3 for k in ("writer", "encode", "compress", "crc", "kernel", "rest", "refill", "sampling")]
    vals.append(rest)
    return "%-10s %-13s %8.1f %8.1f " % (name[0], name[1], ev / 1e6, rec["tracer_ns_per_event"]) + " ".join(
        "%8.3f" % v for v in vals) + " %8.3f" % tracer


def run_perf(a, work):
    print("tracer CPU by thread (perf record -e cpu-clock, s), %d thread(s), %g s runs, %s, load %.2f" % (
        a.threads, a.duration, bench.cpu_model(), os.getloadavg()[0]))
    print("%-10s %-13s %8s %8s " % ("workload", "level", "M events", "ns/event") + " ".join(
        "%8s" % h for h in ("writer", "encode", "compress", "crc", "kernel", "w.rest", "refill", "sampling",
                            "init+exit", "tracer")))
    for w in a.workloads:
        for name, events, stamp in a.levels:
            trace, data = os.path.join(work, "t.trace"), os.path.join(work, "perf.data")
            cmd = ["perf", "record", "-q", "-e", "cpu-clock", "-c", str(PERF_MS * 1000000), "-o", data, "--",
                   a.tmbench, w, "--threads", str(a.threads), "--duration", str(a.duration)] + a.extra
            rec = bench.run_tmbench(cmd, level_env(events, stamp, trace), work)
            script = subprocess.run(["perf", "script", "-i", data, "-F", "comm,ip,sym,dso"], stdout=subprocess.PIPE,
                                    stderr=subprocess.DEVNULL, universal_newlines=True, check=True).stdout
            for f in (trace, data):
                os.unlink(f) if os.path.exists(f) else None
            print(perf_line((w, name), rec, perf_split(script)), flush=True)


def main(argv, prog):
    a = parse_args(argv, prog)
    work = tempfile.mkdtemp(prefix="tmt-writercost-")
    try:
        (run_counted if a.callgrind else run_perf if a.perf else run_timed)(a, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0

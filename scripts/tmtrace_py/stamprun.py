"""stamprun - what the STAMP harnesses (tmbench/stamp/run, tmbench/stamp/gcctm)
do alike: build commands, the input files, running one application, the
check of a trace, the interleaved repetitions and the medians.

Owns: running a build command (a failure is one line naming it and the
last line it printed, exit 1), copying a source tree to build in, the input
files the chosen arguments name (decompressed into WORK/inputs/APP/), one
run of an application with a timeout (its time line, its own verification,
its exit status: a failed run says why; its page faults and CPU time), the check of a traced run's trace
(tmsync, then tmcheck on the synced trace: no dropped event, no grammar
violation, no open attempt, and as many commits and transactions as the
runtime counted at exit), the machine line of a report (CPU model, load
average), the order of the runs (every configuration in
each repetition, in an order drawn anew for each repetition), the
CSV of the runs, and medians, ratios and geometric means.
Never: knows an application, a backend or a level (stamp, gcctm and the
harnesses do).
"""
import csv
import gzip
import os
import random
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import time

from . import bench, cli, programs, schema


def sh(cmd, cwd, what, env=None):
    """Runs a build command; a ScriptError (exit 1) naming WHAT and the last line of its output."""
    proc = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True)
    if proc.returncode != 0:
        last = (proc.stdout.strip().splitlines() or ["no output"])[-1]
        raise cli.ScriptError("%s failed (exit %d): %s" % (what, proc.returncode, last), cli.EXIT_FAILED)


def copy_tree(src, dst, ignore=(".git", "*.o")):
    """Copies the folder SRC to DST (which must not exist), leaving out the patterns IGNORE."""
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns(*ignore))


def prepare_inputs(stamp_dir, work, inputs):
    """Copies (or decompresses, from NAME.gz) each app's input files, INPUTS =
    {app: [file relative to the app's inputs/]}, from STAMP_DIR/APP/inputs into
    WORK/inputs/APP/; a missing one is a ScriptError naming it."""
    for app, files in inputs.items():
        os.makedirs(os.path.join(work, "inputs", app), exist_ok=True)
        for rel in files:
            dst = os.path.join(work, "inputs", app, rel)
            if os.path.exists(dst):
                continue
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            src = os.path.join(stamp_dir, app, "inputs", rel)
            if os.path.exists(src):
                shutil.copyfile(src, dst)
            elif os.path.exists(src + ".gz"):
                with gzip.open(src + ".gz", "rb") as fi, open(dst, "wb") as fo:
                    shutil.copyfileobj(fi, fo)
            else:
                raise cli.ScriptError("%s: no input file %s (or %s.gz)" % (app, src, src), cli.EXIT_FAILED)


def run_app(cmd, cwd, env, timeout, time_line, verify=None):
    """One run of an application: {"seconds": its own time line's figure,
    "wall": s, "faults": its page faults, "cpu": its CPU seconds (user and
    system, all threads), "stdout", "stderr", "failed": why it failed or ""};
    faults and CPU time are the process's whole run, from the rusage of the
    children, which grows by this child alone (the harnesses run one at a
    time). A run
    fails on a timeout, a non-zero exit, no TIME_LINE match (a regular
    expression whose group 1 is the seconds) or, with VERIFY (a regular
    expression), no line of its own verification."""
    what = " ".join(os.path.basename(c) if i == 0 else c for i, c in enumerate(cmd))
    rec = {"seconds": None, "wall": None, "faults": None, "cpu": None, "stdout": "", "stderr": "", "failed": ""}
    t0 = time.monotonic()
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        proc = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, errors="replace", timeout=timeout)
    except subprocess.TimeoutExpired:
        rec["failed"] = "%s ran longer than %g s" % (what, timeout)
        return rec
    rec["wall"] = time.monotonic() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    rec["faults"] = (r1.ru_minflt + r1.ru_majflt) - (r0.ru_minflt + r0.ru_majflt)
    rec["cpu"] = (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)
    rec["stdout"], rec["stderr"] = proc.stdout, proc.stderr
    m = re.search(time_line, proc.stdout, re.M)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or proc.stdout.strip().splitlines() or ["no output"])[-1]
        rec["failed"] = "%s: %s (%s)" % (what, last, exit_text(proc.returncode))
    elif verify and not re.search(verify, proc.stdout, re.M):
        rec["failed"] = "%s: its verification did not pass (no line matching %s)" % (what, verify)
    elif not m:
        rec["failed"] = "%s printed no time line" % what
    else:
        rec["seconds"] = float(m.group(1))
    return rec


def exit_text(status):
    """'exit N', or 'killed by SIGNAME' for a subprocess status -N."""
    if status < 0:
        try:
            return "killed by %s" % signal.Signals(-status).name
        except ValueError:
            return "killed by signal %d" % -status
    return "exit %d" % status


def check_trace(build, trace, commits, work):
    """The problems of a traced run's TRACE, as a list of strings: tmsync and
    tmcheck must read it, and the synced trace must hold COMMITS commits and
    as many transactions (the runtime's count at exit), no dropped event,
    no grammar violation and no open attempt."""
    if commits is None:
        return ["the runtime printed no commit count at exit"]
    synced = os.path.join(work, "trace.sync.bin")
    try:
        # Exit 4 (an incomplete trace: no END chunk, a signal, drops) is a
        # failure of either tool, reported with the tool's own line.
        programs.run([programs.find_program("tmsync", build=build), trace, "-o", synced])
        # exit 1: the trace has violations, which the keys below show
        _, out = programs.run([programs.find_program("tmcheck", build=build), "--json", synced], ok=(0, 1))
        rep = schema.read(schema.TMCHECK, programs.last_json(out, "tmcheck"))
    except (programs.ProgramError, schema.SchemaError) as e:
        return [str(e)]
    finally:
        if os.path.exists(synced):
            os.remove(synced)
    problems = []
    for key, expect in (("commits", commits), ("transactions", commits), ("dropped_events", 0),
                        ("grammar_violations", 0), ("open_attempts", 0)):
        if rep[key] != expect:
            problems.append("trace %s = %s, expected %s" % (key, rep[key], expect))
    return problems


def orders(reps, configs, seed=0):
    """(repetition, configurations in the order of that repetition): each
    repetition runs every configuration once, in an order drawn at random
    for it (the same SEED gives the same orders). On this kind of VM whole
    stretches of seconds run at half speed, and a fixed or rotated order
    gives each configuration the same neighbours in every repetition, so
    such a stretch can fall on some configurations more than on others
    (docs/tracer.md, "What moves rbtree's abort rate")."""
    rng = random.Random(seed)
    for rep in range(reps):
        order = list(configs)
        rng.shuffle(order)
        yield rep + 1, order


class Runs:
    """The records of every run, each written to the CSV (when one is given)
    as it ends and said on stderr when it failed (or always, VERBOSE)."""

    def __init__(self, prog, keys, csv_path=None, verbose=False):
        self.prog, self.keys, self.verbose = prog, keys, verbose
        self.records = []
        self.file = open(csv_path, "w", newline="", buffering=1) if csv_path else None
        self.csv = csv.writer(self.file) if self.file else None
        if self.csv:
            self.csv.writerow(keys)

    def add(self, rec, label):
        self.records.append(rec)
        if self.csv:
            self.csv.writerow([rec.get(k) for k in self.keys])
        if rec["failed"]:
            cli.end_progress()
            sys.stderr.write("%s: %s; left out\n" % (self.prog, rec["failed"]))
        elif self.verbose:
            sys.stderr.write("%s: %s %.4f s\n" % (self.prog, label, rec["seconds"]))

    def close(self):
        if self.file:
            self.file.close()

    def failed(self):
        return [r for r in self.records if r["failed"]]

    def passed(self, where):
        """The runs that did not fail and match WHERE ({key: value})."""
        return [r for r in self.records if not r["failed"] and all(r[k] == v for k, v in where.items())]

    def median(self, where, key="seconds"):
        """The median of KEY over passed(WHERE), or None."""
        vals = [r[key] for r in self.passed(where) if r[key] is not None]
        return statistics.median(vals) if vals else None


def machine():
    """'CPU model, N CPUs': what a closing note says the figures were taken on."""
    return "%s, %d CPUs" % (bench.cpu_model(), os.cpu_count() or 0)


def load_average():
    """The 1-minute load average, or None where the system has none."""
    try:
        return os.getloadavg()[0]
    except OSError:
        return None


def ratio(x, y):
    return x / y if x is not None and y else None


def fmt(v, spec):
    return "-" if v is None else spec % v

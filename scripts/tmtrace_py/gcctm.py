"""gcctm - what tmbench/stamp/gcctm knows about the GCC-TM port of STAMP
(transmem's benchmarks/stamp_c) and about running it on libtmtrace-itm.

Owns: the check that a folder holds the port, the fixes its build copy
needs under GCC 12, how its options differ from STAMP 0.9.10's, the line
each application prints with its time (its verification line is STAMP's,
stamp.VERIFY), the backends (libitm; libtmtrace-itm linked before libitm
or preloaded into the libitm build) and the levels (off; default, with
TMTRACE_EVENTS unset; tx; all), each run's environment, and the small
library a libtmtrace-itm run preloads to print the runtime's counts at exit.
Builds and runs nothing.
"""
import argparse
import os
import re

from . import stamp

APPS = stamp.APPS
# The port names its thread count -t in every application; kmeans' threshold
# and vacation's transaction count, -t in STAMP 0.9.10, are -T.
RENAMED = {"kmeans": ("-t", "-T"), "vacation": ("-t", "-T")}
THREAD_OPTION = "-t"
TIME_LINE = dict({app: r"^Time\s*=\s*([0-9.eE+-]+)" for app in APPS},
                 ssca2=r"Time taken for kernel 1 is\s+([0-9.]+)")

# Text replacements the build copy needs (never the source folder): GCC 12
# rejects element_isSkinny's declaration, which lacks the transaction_safe
# attribute its definition has.
FIXES = [("yada/element.h", "bool_t\nelement_isSkinny (element_t* elementPtr);",
          "bool_t\nTM_SAFE\nelement_isSkinny (element_t* elementPtr);")]

BACKENDS = ("libitm", "linked", "preload")
VARIANTS = BACKENDS[1:]
LEVELS = ("off", "default", "tx", "all")
EXIT_LINE = "libtmtrace-itm at exit:"


def source_dir(d):
    """The port's folder given D (it, or D/benchmarks/stamp_c of a transmem
    checkout): (folder, None), or (None, why D is not one)."""
    if not os.path.isdir(d):
        return None, "no such directory"
    need = ["Makefile.common", "tm.h", "lib/thread.h"] + ["%s/Makefile" % a for a in APPS]
    for cand in (d, os.path.join(d, "benchmarks", "stamp_c")):
        if all(os.path.isfile(os.path.join(cand, f)) for f in need):
            return cand, None
    return None, "not transmem's GCC-TM STAMP port (no Makefile.common, tm.h and <app>/Makefile for each of %s)" \
        % ",".join(APPS)


def apply_fixes(tree):
    """Applies FIXES to the copy TREE; ValueError naming the file when a text to fix is not there."""
    for rel, old, new in FIXES:
        path = os.path.join(tree, rel)
        with open(path) as f:
            text = f.read()
        if new in text:
            continue
        if old not in text:
            raise ValueError("%s: the declaration to fix is not there (another version of the port?)" % path)
        with open(path, "w") as f:
            f.write(text.replace(old, new, 1))


def port_args(app, args):
    """STAMP 0.9.10's arguments ARGS of APP as the port spells them."""
    if app not in RENAMED:
        return list(args)
    old, new = RENAMED[app]
    return [new + w[len(old):] if w.startswith(old) else w for w in args]


def command(app, args, threads):
    return port_args(app, args) + ["%s%d" % (THREAD_OPTION, threads)]


def input_files(app, args):
    """The input files (relative to STAMP 0.9.10's APP/inputs/) of STAMP's ARGS."""
    return stamp.input_files(app, args)


def _choices(names, what):
    """An option checker: a comma-separated list of NAMES, each at most once."""
    def check(text):
        vals = [x for x in text.split(",") if x]
        if not vals or any(x not in names for x in vals) or len(set(vals)) != len(vals):
            raise argparse.ArgumentTypeError("'%s': %s are %s, each at most once" % (text, what, ", ".join(names)))
        return vals
    return check


level_list = _choices(LEVELS, "levels")
variant_list = _choices(VARIANTS, "variants")


def configs(threads, levels, variants):
    """The configurations of one repetition: (backend, level, threads)."""
    out = []
    for t in threads:
        out.append(("libitm", "-", t))
        out += [(v, lv, t) for v in variants for lv in levels]
    return out


def run_env(base, backend, level, trace, itm_lib, exit_lib):
    """The environment of one run: BASE without its TMTRACE_EVENTS and
    TMTRACE_FILE; for libtmtrace-itm, the level's TMTRACE_EVENTS (none at
    default; at all, no cap on the tracer's share of a CPU), the trace file
    and the preloaded libraries (EXIT_LIB, and ITM_LIB first when
    preloaded)."""
    env = {k: v for k, v in base.items() if k not in ("TMTRACE_EVENTS", "TMTRACE_FILE", "LD_PRELOAD")}
    if backend == "libitm":
        return env
    if level != "default":
        env["TMTRACE_EVENTS"] = level
    if level == "all":
        env["TMTRACE_WRITER_SHARE"] = "100"  # every record, for the trace's check (stamp.level_env)
    env["TMTRACE_FILE"] = trace
    env["LD_PRELOAD"] = " ".join(([itm_lib] if backend == "preload" else []) + [exit_lib])
    return env


def traced(backend, level):
    """Whether a run of BACKEND at LEVEL writes a trace."""
    return backend != "libitm" and level != "off"


def exit_counts(stderr):
    """(commits, aborts, dropped) from the exit library's line, (None, None, None) without one."""
    m = re.search(r"^%s commits=(\d+) aborts=(\d+) dropped=(\d+)$" % re.escape(EXIT_LINE), stderr, re.M)
    return tuple(int(x) for x in m.groups()) if m else (None, None, None)


EXIT_LIB = r"""/* Preloaded by tmbench/stamp/gcctm into every libtmtrace-itm run: prints
 * the runtime's counts once the program has ended (a destructor of a library
 * that needs libtmtrace-itm runs before the runtime's own). */
#include <stdio.h>
#include "tmtrace.h"

__attribute__((destructor)) static void gcctm_exit_counts(void)
{
    tmt_stats st;
    if (tmt_stats_get(&st) == 0)
        fprintf(stderr, "@LINE@ commits=%llu aborts=%llu dropped=%llu\n", (unsigned long long)st.commits,
                (unsigned long long)st.aborts, (unsigned long long)st.events_dropped);
}
""".replace("@LINE@", EXIT_LINE)

"""stamp - what the STAMP harnesses know about STAMP 0.9.10 and TinySTM.

Owns: the list of applications, their arguments at each size, their thread
option, the line each prints with its parallel-phase time and the line of
its own verification, the input files their arguments name, the checks
that a directory holds STAMP or TinySTM sources, the two TinySTM builds
compared (their DESIGN line; and for callgrind, their -march), the
TL2-style stm.h written for TinySTM, the traced levels and their TMTRACE_* variables,
the parsing of the commit/abort line libtl2 prints at TxShutdown, and which
runs and apps issue 28's floor table takes and which it sets apart (used by
tmbench/stamp/run; tmbench/stamp/gcctm takes the applications, sizes,
inputs and verification lines from here). Builds and runs nothing.
"""
import argparse
import re
import os
import statistics

from . import bench, floorcost

APPS = ("bayes", "genome", "intruder", "kmeans", "labyrinth", "ssca2", "vacation", "yada")

# small: the arguments STAMP's READMEs give for simulated runs. large: those
# they give for runs without a simulator (kmeans' and yada's large inputs are
# not in the 0.9.10 tree: the largest shipped ones stand in). medium: between
# the two, sized so that the parallel phase takes 0.1-0.3 s on one idle core
# and the setup (input generation or parsing) stays short. long: for issue
# 28's tables, which judge apps whose untraced parallel phase lasts >= 0.1 s
# at 2 threads: each app's phase scaled to about 0.15-0.4 s there from
# medium's, with shipped inputs only and the setup kept short
# (docs/tmbench.md, "Sizes", says how they were chosen).
SIZES = {
    "small": {
        "bayes": "-v32 -r1024 -n2 -p20 -s0 -i2 -e2",
        "genome": "-g256 -s16 -n16384",
        "intruder": "-a10 -l4 -n2038 -s1",
        "kmeans": "-m40 -n40 -t0.05 -i random-n2048-d16-c16.txt",
        "labyrinth": "-i random-x32-y32-z3-n96.txt",
        "ssca2": "-s13 -i1.0 -u1.0 -l3 -p3",
        "vacation": "-n4 -q60 -u90 -r16384 -t4096",
        "yada": "-a20 -i 633.2",
    },
    "medium": {
        "bayes": "-v32 -r1024 -n4 -p40 -i2 -e8 -s1",
        "genome": "-g4096 -s32 -n262144",
        "intruder": "-a10 -l8 -n32768 -s1",
        "kmeans": "-m40 -n40 -t0.00001 -i random-n2048-d16-c16.txt",
        "labyrinth": "-i random-x128-y128-z5-n128.txt",
        "ssca2": "-s15 -i1.0 -u1.0 -l3 -p3",
        "vacation": "-n4 -q60 -u90 -r16384 -t65536",
        "yada": "-a20 -i ttimeu10000.2",
    },
    "long": {
        "bayes": "-v32 -r1024 -n10 -p40 -i2 -e8 -s1",
        "genome": "-g8192 -s32 -n1048576",
        "intruder": "-a10 -l8 -n131072 -s1",
        "kmeans": "-m40 -n40 -t0.00001 -i random-n16384-d24-c16.txt",
        "labyrinth": "-i random-x256-y256-z3-n256.txt",
        "ssca2": "-s17 -i1.0 -u1.0 -l3 -p3",
        "vacation": "-n4 -q60 -u90 -r16384 -t196608",
        "yada": "-a28 -i ttimeu10000.2",
    },
    "large": {
        "bayes": "-v32 -r4096 -n10 -p40 -i2 -e8 -s1",
        "genome": "-g16384 -s64 -n16777216",
        "intruder": "-a10 -l128 -n262144 -s1",
        "kmeans": "-m15 -n15 -t0.00001 -i random-n16384-d24-c16.txt",
        "labyrinth": "-i random-x512-y512-z7-n512.txt",
        "ssca2": "-s20 -i1.0 -u1.0 -l3 -p3",
        "vacation": "-n4 -q60 -u90 -r1048576 -t4194304",
        "yada": "-a15 -i ttimeu100000.2",
    },
}

THREAD_OPTION = {"kmeans": "-p", "vacation": "-c"}  # the others take -t

# The measuring builds (-Dclock_floor) tmbench/stamp/run runs as backends of these names: untraced,
# but the record-only build at the settings of floorcost.RECORDS_AS and, where `all` is measured,
# of floorcost.RECORDS_ALL_AS (floor_env).
# The attempt_pad builds (pad-outside, pad-inside) run untraced as well,
# and join the abort table only.
FLOORS = ("floor-tx", "floor-all", floorcost.RECORDS_FLOOR, floorcost.RECORDS_ALL_FLOOR, "pad-outside", "pad-inside")
# The issue judges the cost above the floor on apps whose untraced parallel
# phase lasts at least this long; bayes and labyrinth, whose runs vary most,
# it lets be reported apart. Both are out of the geomean.
MIN_PHASE_SECONDS = 0.1
VARIES_MOST = ("bayes", "labyrinth")
# Apps whose runs at 2 threads and more end in one of two outcomes, each
# with a time of its own (stats.two_outcome_split): bayes learns in about
# 20 or about 45 ms by the order in which its threads take their tasks
# (docs/design.md). tmbench/stamp/run compares them outcome by outcome.
TWO_OUTCOMES = ("bayes",)

# The line with the time of the parallel (transactional) phase.
TIME_LINE = {
    "bayes": r"^Learn time = ([0-9.]+)",
    "genome": r"^Time = ([0-9.]+)",
    "intruder": r"^Elapsed time\s*= ([0-9.]+)",
    "kmeans": r"^Time: ([0-9.eE+-]+) seconds",
    "labyrinth": r"^Elapsed time\s*= ([0-9.]+)",
    "ssca2": r"Time taken for kernel 1 is\s+([0-9.]+)",
    "vacation": r"^Time = ([0-9.]+)",
    "yada": r"^Elapsed time\s*= ([0-9.]+)",
}

# The line each application prints once its own check passed (the GCC-TM
# port prints the same); the others check with assert() only, and a failed
# one ends the run with SIGABRT.
VERIFY = {"genome": r"^Sequence matches gene: yes$", "labyrinth": r"^Verification passed\.$",
          "yada": r"^Final mesh is valid\.$", "intruder": r"^Num found\s*=", "bayes": r"^Actual score"}

# yada -i NAME reads NAME.node, NAME.ele and NAME.poly.
YADA_SUFFIXES = (".node", ".ele", ".poly")


def app_list(text):
    apps = [x for x in text.split(",") if x]
    bad = [x for x in apps if x not in APPS]
    if bad or not apps:
        raise argparse.ArgumentTypeError("'%s': applications are %s" % (text, ",".join(APPS)))
    return apps


# The traced levels: TMTRACE_EVENTS, the TMTRACE_STAMP and TMTRACE_DETAIL each
# one runs with (set, or unset where None, for every traced run, so that a
# TMTRACE_* in the caller's environment cannot make "all" mean something else
# than its name says). "default" sets none of them: what a user gets.
LEVELS = {"tx": ("tx", "each", None), "all": ("all", "each", None), "all/boundary": ("all", "boundary", None),
          "default": (None, None, None), "detail16": ("tx", "boundary", "16")}


def level_list(text):
    levels = [x for x in text.split(",") if x]
    bad = [x for x in levels if x not in LEVELS]
    if bad or len(set(levels)) != len(levels):
        raise argparse.ArgumentTypeError("'%s': traced levels are %s, each at most once" % (text, ", ".join(LEVELS)))
    return levels


def level_env(level):
    """The TMTRACE_* variables a traced level runs with (None: unset). A
    level that records every access also lifts the tracer's share of a CPU
    (TMTRACE_WRITER_SHARE=100): the harness checks that each traced run's
    trace holds every record, and at that rate, with every CPU busy, the
    default share drops what its tenth of a CPU cannot map (docs/tracer.md,
    "The tracer's share of a CPU")."""
    events, stamp, detail = LEVELS[level]
    env = {"TMTRACE_EVENTS": events, "TMTRACE_STAMP": stamp, "TMTRACE_DETAIL": detail}
    if events == "all":
        env["TMTRACE_WRITER_SHARE"] = "100"
    return env


def floor_env(backend):
    """The TMTRACE_* variables a measuring build's runs take (level_env's form)."""
    if backend in floorcost.RECORDS_FLOORS:
        return level_env(floorcost.RECORDS_FLOORS[backend])
    return {"TMTRACE_EVENTS": "off"}


def apply_env(env, settings):
    """ENV with SETTINGS applied: a value of None removes the variable."""
    for key, value in settings.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def app_args(apps, size, overrides):
    """Each app's argument list at SIZE, with APP=ARGS overrides. ValueError on a bad override."""
    out = {app: SIZES[size][app].split() for app in apps}
    for o in overrides:
        app, sep, args = o.partition("=")
        if not sep or app not in APPS:
            raise ValueError("--args '%s': expected APP=ARGS with APP one of %s" % (o, ",".join(APPS)))
        words = args.split()
        if THREAD_OPTION.get(app, "-t") in [w[:2] for w in words]:
            raise ValueError("--args '%s': the thread option is set by --threads" % o)
        if app in out:
            out[app] = words
    return out


def command(app, args, threads):
    return list(args) + ["%s%d" % (THREAD_OPTION.get(app, "-t"), threads)]


def input_files(app, args):
    """The input files (relative to the app's inputs/) the arguments name."""
    if "-i" in args and app in ("kmeans", "labyrinth", "yada"):
        name = args[args.index("-i") + 1]
        return [name + s for s in YADA_SUFFIXES] if app == "yada" else [name]
    return []


def app_seconds(app, stdout):
    m = re.search(TIME_LINE[app], stdout, re.M)
    return float(m.group(1)) if m else None


def tl2_counts(stderr):
    """(commits, aborts) from libtl2's TxShutdown line, (None, None) without one."""
    m = re.search(r"^TL2 system shutdown: commits=(\d+) aborts=(\d+)", stderr, re.M)
    return (int(m.group(1)), int(m.group(2))) if m else (None, None)


def abort_rate(rec):
    """A run's abort rate in % of attempts (libtl2's counts at exit), or None without them."""
    return bench.abort_rate_pct(rec) if rec["commits"] is not None else None


def floor_runs(records):
    """The runs of libtmtrace and of its floor builds among RECORDS (tmbench/stamp/run's
    passed runs) as floorcost reads them: the app as workload, a floor build's untraced
    runs as its level (floor-tx, floor-all), the parallel phase's seconds, the abort rate,
    the repetition (for floorcost's paired ratios)."""
    return [dict(workload=r["app"], threads=r["threads"], seconds=r["seconds"], abort_rate=abort_rate(r),
                 level=r["level"] if r["backend"] == "libtmtrace" else r["backend"], rep=r.get("rep"))
            for r in records if r["backend"] == "libtmtrace" or r["backend"] in FLOORS]


def apart_cells(runs, apps, threads):
    """{(app, THREADS): why} for floorcost.floor_rows: the apps whose untraced
    parallel phase (median over RUNS, floor_runs) is shorter than MIN_PHASE_SECONDS,
    and those the issue lets be reported apart (VARIES_MOST)."""
    out = {}
    for app in apps:
        off = floorcost.samples(runs, (app, threads), "off", "seconds")
        if off and statistics.median(off) < MIN_PHASE_SECONDS:
            out[(app, threads)] = "untraced phase %.3f s, shorter than %g s" % (statistics.median(off),
                                                                                 MIN_PHASE_SECONDS)
        elif app in VARIES_MOST:
            out[(app, threads)] = "its runs vary most"
    return out


def stamp_dir_problem(d):
    """Why D is not a STAMP 0.9.10 source tree, or None."""
    if not os.path.isdir(d):
        return "no such directory"
    need = ["lib/tm.h", "common/Makefile.stm"] + ["%s/Makefile.stm" % a for a in APPS]
    missing = [f for f in need if not os.path.isfile(os.path.join(d, f))]
    if missing:
        return "not a STAMP source tree (no %s)" % missing[0]
    return None


def tinystm_dir_problem(d):
    """Why D is not a TinySTM source tree, or None."""
    if not os.path.isdir(d):
        return "no such directory"
    need = ["Makefile", "include/stm.h", "include/mod_mem.h", "include/wrappers.h", "src/stm.c"]
    missing = [f for f in need if not os.path.isfile(os.path.join(d, f))]
    if missing:
        return "not a TinySTM source tree (no %s)" % missing[0]
    return None


# The TinySTM builds compared, by backend name: its default (encounter-time
# locking) and commit-time locking, TL2's and libtmtrace's scheme, which
# takes the same aborts and so is the like-for-like baseline.
TINYSTM_BACKENDS = {"tinystm": "WRITE_BACK_ETL", "tinystm-ctl": "WRITE_BACK_CTL"}
# The designs built with TinySTM's epoch-based reclamation (EPOCH_GC, used
# because the glue's mod_mem_init asks for it): a block freed in a
# transaction goes back to malloc once no attempt that began before the free
# runs, as libtmtrace's limbo does. Without it the block is freed at the
# commit; at commit-time locking an attempt may read such a block for its
# whole length after that, and STAMP yada at 2 threads died of it in every
# run. The default build stays TinySTM's default.
TINYSTM_EPOCH_GC = ("WRITE_BACK_CTL",)

_DESIGN_LINE = re.compile(r"^DEFINES \+= -DDESIGN=(\w+)[ \t]*$", re.M)
_EPOCH_GC_LINE = re.compile(r"^DEFINES \+= -[UD]EPOCH_GC[ \t]*$", re.M)


def tinystm_set_design(makefile, design):
    """TinySTM's Makefile text with its one active DESIGN line set to DESIGN;
    ValueError when there is not exactly one."""
    found = _DESIGN_LINE.findall(makefile)
    if len(found) != 1:
        raise ValueError("expected one active 'DEFINES += -DDESIGN=...' line, found %d" % len(found))
    return _DESIGN_LINE.sub("DEFINES += -DDESIGN=" + design, makefile)


def tinystm_set_epoch_gc(makefile):
    """TinySTM's Makefile text with its one active EPOCH_GC line defining it;
    ValueError when there is not exactly one."""
    found = _EPOCH_GC_LINE.findall(makefile)
    if len(found) != 1:
        raise ValueError("expected one active 'DEFINES += -UEPOCH_GC' line, found %d" % len(found))
    return _EPOCH_GC_LINE.sub("DEFINES += -DEPOCH_GC", makefile)


# The builds counted under valgrind (--callgrind): the same two designs,
# compiled for a CPU valgrind can run (its default -march=native may use
# AVX-512, which valgrind cannot decode).
TINYSTM_COUNTED = {"tinystm-vg": "WRITE_BACK_ETL", "tinystm-ctl-vg": "WRITE_BACK_CTL"}
VALGRIND_MARCH = "x86-64-v3"


def tinystm_set_march(makefile_gcc, march):
    """TinySTM's Makefile.gcc text with -march=native replaced by -march=MARCH
    (unchanged when it has none)."""
    return makefile_gcc.replace("-march=native", "-march=" + march)


TINYSTM_GLUE = r"""/* STAMP's STM_* layer (the one TL2's stm.h gives) over TinySTM's API, written
 * by tmbench/stamp/run. Exact-size accesses, like libtmtrace's compat/tl2. */
#ifndef TMBENCH_TINYSTM_GLUE_H
#define TMBENCH_TINYSTM_GLUE_H 1
#include <setjmp.h>
#include <stdint.h>
#include "@INC@/stm.h"
#include "@INC@/mod_mem.h"
#include "@INC@/wrappers.h"

#define STM_THREAD_T struct stm_tx
#define STM_SELF stm_self_
/* mod_mem_init(1): frees go through the epoch GC in a build that has it
 * (EPOCH_GC; tmbench/stamp/run builds WRITE_BACK_CTL so), at once otherwise. */
#define STM_STARTUP() do { stm_init(); mod_mem_init(1); } while (0)
#define STM_SHUTDOWN() stm_exit()
#define STM_NEW_THREAD() stm_init_thread()
#define STM_INIT_THREAD(t, id) ((void)(t), (void)(id))
#define STM_FREE_THREAD(t) stm_exit_thread_tx(t)
#define STM_MALLOC(size) stm_malloc_tx(STM_SELF, size)
#define STM_FREE(ptr) stm_free_tx(STM_SELF, ptr, 0)
#define STM_VALID() (1)
#define STM_RESTART() stm_abort_tx(STM_SELF, STM_ABORT_EXPLICIT)

#define STM_BEGIN(ro)                                                          \
    do {                                                                       \
        stm_tx_attr_t stm_attr_ = { .read_only = (ro) };                       \
        sigjmp_buf *stm_env_ = stm_start_tx(STM_SELF, stm_attr_);              \
        if (stm_env_ != NULL)                                                  \
            sigsetjmp(*stm_env_, 0);                                           \
    } while (0)
#define STM_BEGIN_RD() STM_BEGIN(1)
#define STM_BEGIN_WR() STM_BEGIN(0)
#define STM_END() stm_commit_tx(STM_SELF)

#define STM_UNSIGNED_(var)                                                     \
    _Generic((var), _Bool: 1, unsigned char: 1, unsigned short: 1,             \
             unsigned int: 1, unsigned long: 1, unsigned long long: 1, default: 0)
#define STM_EXTEND_(var, raw, bits)                                            \
    (STM_UNSIGNED_(var) ? (intptr_t)(uint##bits##_t)(raw)                      \
                        : (intptr_t)(int##bits##_t)(raw))
#define STM_READ(var)                                                          \
    (sizeof(var) == 4   ? STM_EXTEND_(var, stm_load_u32((volatile uint32_t *)(void *)&(var)), 32) \
     : sizeof(var) == 1 ? STM_EXTEND_(var, stm_load_u8((volatile uint8_t *)(void *)&(var)), 8)    \
     : sizeof(var) == 2 ? STM_EXTEND_(var, stm_load_u16((volatile uint16_t *)(void *)&(var)), 16) \
                        : (intptr_t)stm_load_tx(STM_SELF, (volatile stm_word_t *)(void *)&(var)))
#define STM_READ_P(var) ((void *)stm_load_tx(STM_SELF, (volatile stm_word_t *)(void *)&(var)))
#define STM_READ_F(var)                                                        \
    __builtin_choose_expr(sizeof(var) == 4,                                    \
        stm_load_float((volatile float *)(void *)&(var)),                      \
        stm_load_double((volatile double *)(void *)&(var)))
#define STM_WRITE(var, val)                                                    \
    (sizeof(var) == 4   ? stm_store_u32((volatile uint32_t *)(void *)&(var), (uint32_t)(intptr_t)(val)) \
     : sizeof(var) == 1 ? stm_store_u8((volatile uint8_t *)(void *)&(var), (uint8_t)(intptr_t)(val))    \
     : sizeof(var) == 2 ? stm_store_u16((volatile uint16_t *)(void *)&(var), (uint16_t)(intptr_t)(val)) \
                        : stm_store_tx(STM_SELF, (volatile stm_word_t *)(void *)&(var), (stm_word_t)(intptr_t)(val)))
#define STM_WRITE_P(var, val)                                                  \
    stm_store_tx(STM_SELF, (volatile stm_word_t *)(void *)&(var), (stm_word_t)(void *)(val))
#define STM_WRITE_F(var, val)                                                  \
    __builtin_choose_expr(sizeof(var) == 4,                                    \
        stm_store_float((volatile float *)(void *)&(var), (float)(val)),       \
        stm_store_double((volatile double *)(void *)&(var), (double)(val)))
#define STM_LOCAL_WRITE(var, val) ({ var = val; var; })
#define STM_LOCAL_WRITE_F(var, val) ({ var = val; var; })
#define STM_LOCAL_WRITE_P(var, val) ({ var = val; var; })
#endif
"""


def tinystm_glue(include_dir):
    """The stm.h STAMP includes, for TinySTM installed at INCLUDE_DIR."""
    return TINYSTM_GLUE.replace("@INC@", include_dir)

"""icount - instructions per transaction, counted by valgrind's callgrind.

Owns: the valgrind command line of one counted run, and reading the
function totals of callgrind_annotate's report into the whole program's
count and the transactional runtime's (its functions, told apart by name:
libtmtrace's, compat/tl2's and TinySTM's, and setjmp, which every
transaction runs). Deterministic where wall time is not: a shared machine
changes no count.
Also the instructions per call of named functions (the accessors), from
the caller tree of an inclusive report (tmbench/access-cost).
Never: builds or runs anything itself (tmbench/stamp/run and
tmbench/access-cost do).
"""
import re

# Function names of the runtimes and of what every transaction calls on
# their behalf (setjmp and its helper).
RUNTIME_PREFIXES = ("Tx", "tmt_", "tx_", "stm_", "tb_", "api_", "txmem_", "htm_", "txreg_", "site_",
                    "int_stm_", "mod_", "gc_", "_setjmp", "__sigsetjmp", "__sigjmp_save")

_TOTAL = re.compile(r"^\s*([\d,]+) \(100\.0%\)\s+PROGRAM TOTALS", re.M)
_FUNCTION = re.compile(r"^\s*([\d,]+) \(\s*[\d.]+%\)\s+(\S+)", re.M)


_CALLER = re.compile(r"^\s*[\d,]+ \(\s*[\d.]+%\)\s+<\s+\S+ \(([\d,]+)x\)")
_CALLEE = re.compile(r"^\s*([\d,]+) \(\s*[\d.]+%\)\s+\*\s+(\S+)")


def valgrind_command(out_file):
    """The prefix of a counted run's command line."""
    return ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out_file]


def tree_command(out_file):
    """callgrind_annotate's command for OUT_FILE: every function's inclusive
    count, each after its callers with their call counts."""
    return ["callgrind_annotate", "--inclusive=yes", "--tree=caller", "--threshold=100", "--auto=no", out_file]


def per_call(report, prefixes):
    """{function: (calls, inclusive instructions)} of the functions whose
    names start with one of PREFIXES, from tree_command's REPORT: a
    function's calls are the sum of its caller lines' counts just above its
    own line."""
    out, calls = {}, 0
    for line in report.splitlines():
        m = _CALLER.match(line)
        if m:
            calls += int(m.group(1).replace(",", ""))
            continue
        m = _CALLEE.match(line)
        if m:
            name = m.group(2).split(":", 1)[-1]
            if name.startswith(prefixes) and calls:
                out[name] = (calls, int(m.group(1).replace(",", "")))
        calls = 0
    return out


def annotate_command(out_file):
    """callgrind_annotate's command for OUT_FILE: every function's own count."""
    return ["callgrind_annotate", "--threshold=100", "--auto=no", out_file]


def counts(report):
    """(whole program, runtime) instruction counts from callgrind_annotate's
    REPORT; ValueError without its PROGRAM TOTALS line."""
    m = _TOTAL.search(report)
    if not m:
        raise ValueError("no PROGRAM TOTALS line in callgrind_annotate's report")
    total = int(m.group(1).replace(",", ""))
    runtime = 0
    for n, where in _FUNCTION.findall(report[m.end():]):
        name = where.split(":", 1)[-1]
        if name.startswith(RUNTIME_PREFIXES):
            runtime += int(n.replace(",", ""))
    return total, runtime


_PLACE = re.compile(r"^\s*([\d,]+) \(\s*[\d.]+%\)\s+(\S+):(\S+)", re.M)
_LINE = re.compile(r"^\s*([\d,]+) \(\s*[\d.]+%\)\s+(\d+):", re.M)


def by_place(report):
    """{(source file's base name, function): own instructions} from
    annotate_command's REPORT. Code inlined from a header is its own entry,
    named by the header and the function it was inlined into, which is what
    tells apart the records of each hook of trace_buffer.h."""
    m = _TOTAL.search(report)
    if not m:
        raise ValueError("no PROGRAM TOTALS line in callgrind_annotate's report")
    out = {}
    for n, where, fn in _PLACE.findall(report[m.end():]):
        key = (where.rsplit("/", 1)[-1], fn)
        out[key] = out.get(key, 0) + int(n.replace(",", ""))
    return out


def lines_command(out_file, source):
    """callgrind_annotate's command for OUT_FILE: SOURCE's lines, each with
    the instructions of that line wherever it was inlined, numbered."""
    return ["callgrind_annotate", "--threshold=100", "--auto=no", "--show-percs=yes", out_file, source]

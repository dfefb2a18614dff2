"""fastpath - the event path stays inline: no call on the fast path of the
accessors and of the START/COMMIT entry points beyond a checked-in baseline.

Owns: which functions are the fast path (every tmt_read_* and tmt_write_*
that libtmtrace/include/tmtrace.h declares, tmt_tx_start and tmt_tx_commit;
an entry point whose whole body is one jump to another function is checked
as that function), the `call` instructions objdump shows in their hot part
(a compiler-split .cold part is the slow path by construction), the
baseline file (one line per function: "name: callee callee ..."), and the
verdict: a callee called more often than the baseline says is a finding.
Exit 1 on any finding.
Never: builds anything or reads the cold parts.
"""
import collections
import os
import re
import sys

from . import cli, csource, objects

PROG = "fastpath"
HEADER = "libtmtrace/include/tmtrace.h"
ENTRIES = ("tmt_tx_start", "tmt_tx_commit")
ACCESSOR = re.compile(r"^tmt_(read|write)_[a-z0-9]+$")
DEFAULT_BASELINE = "test/architecture/fast_path_calls.txt"
DEFAULT_LIB = "libtmtrace/libtmtrace.so"
_TARGET = re.compile(r"<([^>+]+)(\+0x[0-9a-f]+)?>")
_CLONE = re.compile(r"\.(part|isra|constprop|lto_priv|cold)\.?\d*|@plt$")
_PADDING = re.compile(r"^(endbr64|nop|xchg\s+%ax,%ax|data16|cs nop|int3)")


def fast_path_functions(root):
    """The functions of the fast path, from the public header of ROOT."""
    with open(os.path.join(root, HEADER)) as f:
        accessors = [n for n in csource.declared_functions(f.read()) if ACCESSOR.match(n)]
    if not accessors:
        raise cli.ScriptError("%s declares no tmt_read_*/tmt_write_* accessor" % HEADER)
    return sorted(accessors) + list(ENTRIES)


def callee(insn):
    """The function an instruction's operand names, without clone suffixes; '*' for an indirect one."""
    m = _TARGET.search(insn)
    return _CLONE.sub("", m.group(1)) if m else "*"


def wrapped(body):
    """The function BODY only jumps to (a wrapper), else None."""
    real = [i for i in body if not _PADDING.match(i)]
    if len(real) == 1 and real[0].startswith("jmp") and "<" in real[0] and "+0x" not in real[0]:
        return callee(real[0])
    return None


def calls(lib, names):
    """{function: (what was read, Counter of callees)} for NAMES in the binary LIB."""
    want = set(names)
    code = objects.disassemble(lib, lambda n: True)
    out = {}
    for name in names:
        if name not in code:
            raise cli.ScriptError("%s defines no function %s" % (lib, name))
        body, seen = code[name], name
        target = wrapped(body)
        if target and target in code and target not in want:
            body, seen = code[target], "%s (its body: %s)" % (name, target)
        out[name] = (seen, collections.Counter(callee(i) for i in body if i.startswith("call")))
    return out


def read_baseline(path):
    """{function: Counter of callees} from a baseline file."""
    out = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            name, sep, rest = line.partition(":")
            if not sep or not name.strip():
                raise cli.ScriptError("%s:%d: expected 'function: callee ...'" % (path, n))
            out[name.strip()] = collections.Counter(rest.split())
    return out


def write_baseline(path, found, lib):
    with open(path, "w") as f:
        f.write("# The calls on the event path's fast path (scripts/fastpath --help): each function\n"
                "# of the accessors and the START/COMMIT entry points, and what it calls outside\n"
                "# its compiler-split cold part; a call beyond these fails the check. Written by\n"
                "# scripts/fastpath --write-baseline --lib %s (a release build).\n" % os.path.basename(lib))
        for name in sorted(found):
            f.write(("%s: %s" % (name, " ".join(sorted(found[name][1].elements())))).rstrip() + "\n")


def findings(found, baseline):
    """One line per call beyond the baseline, and per function the baseline lacks."""
    out = []
    for name in sorted(found):
        seen, now = found[name]
        if name not in baseline:
            out.append("%s: not in the baseline (it calls: %s)" % (seen, " ".join(sorted(now)) or "nothing"))
            continue
        for target in sorted(now):
            if now[target] > baseline[name][target]:
                out.append("%s: calls %s %d time(s), the baseline %d" % (seen, target, now[target], baseline[name][target]))
    return out


def parse_args(argv):
    p = objects.tree_parser(
        PROG, "Disassembles (objdump) the accessors tmt_read_*/tmt_write_* and the START/COMMIT entry points "
              "tmt_tx_start, tmt_tx_commit of libtmtrace.so and prints every call on their fast path beyond "
              "the baseline (%s). Exit 1 on any, 2 on a usage or read error (objdump missing included)."
              % DEFAULT_BASELINE, build=False)
    p.add_argument("--lib", help="the shared library (default: ROOT/build/%s)" % DEFAULT_LIB)
    p.add_argument("--baseline", help="the baseline file (default: ROOT/%s)" % DEFAULT_BASELINE)
    p.add_argument("--write-baseline", metavar="FILE", help="write LIB's calls as the baseline to FILE instead")
    a = objects.parse_tree_args(p, argv, HEADER)
    a.lib = a.lib or os.path.join(a.root, "build", DEFAULT_LIB)
    a.baseline = a.baseline or os.path.join(a.root, DEFAULT_BASELINE)
    if not os.path.isfile(a.lib):
        p.error("--lib %s: no such file (build it first)" % a.lib)
    return a


def main(argv):
    a = parse_args(argv)
    found = calls(a.lib, fast_path_functions(a.root))
    if a.write_baseline:
        write_baseline(a.write_baseline, found, a.lib)
        return 0
    bad = findings(found, read_baseline(a.baseline))
    for line in bad:
        print(line)
    print("%d fast-path functions of %s, %d findings against %s"
          % (len(found), a.lib, len(bad), a.baseline))
    return cli.EXIT_FAILED if bad else 0


if __name__ == "__main__":
    sys.exit(cli.run_main(PROG, main))

"""objects - what a meson build tree of the project compiled, read back.

Owns: the options naming a source tree and its build (--root, --build),
which object each source file became (the build's
compile_commands.json), the product objects of the library and the tools
(the layer archives' members, libtmtrace-itm's and the tools' objects),
the symbols an object defines and uses (nm), and the disassembly of a
shared library's functions (objdump); a missing build, object or binutils
program is a one-line ScriptError (exit 2).
Never: judges what it reads (modgraph, fastpath, unused do).
"""
import fnmatch
import json
import os
import re
import shutil
import subprocess

from . import cli, programs

# The objects of the product, as meson names their folders: the runtime's
# four layer archives, libtmtrace-itm and everything of the tools.
PRODUCT_DIRS = ("libtmtrace/libtmtrace_format.a.p", "libtmtrace/libtmtrace_tracer.a.p",
                "libtmtrace/libtmtrace_tm.a.p", "libtmtrace/libtmtrace_api.a.p",
                "libtmtrace/libtmtrace-itm.so.*.p", "tools/*.p")
# Objects that are tests, whatever else they are: the test tree's, and the
# runtime recompiled with its test hooks.
TEST_DIRS = ("test/*", "*_testhooks.a.p")


def tree_parser(prog, description, build=True):
    """The parser of a check of the source tree run as scripts/PROG: the
    options --root (the source tree) and, with BUILD, --build (its build tree)."""
    p = cli.OneLineParser(prog=prog, description=description + " Run it as scripts/%s, or python3 -m "
                          "tmtrace_py.%s with scripts/ on PYTHONPATH." % (prog, prog))
    p.add_argument("--root", default=programs.SOURCE_ROOT, help="the source tree (default: this script's)")
    if build:
        p.add_argument("--build", help="its build tree, built (default: ROOT/build)")
    return p


def parse_tree_args(p, argv, need):
    """P's options; a one-line error unless ROOT holds NEED; --build defaults to ROOT/build."""
    a = p.parse_args(argv)
    if not a.root or not os.path.exists(os.path.join(a.root, need)):
        p.error("--root %s: no %s there" % (a.root, need))
    if "build" in a and not a.build:
        a.build = os.path.join(a.root, "build")
    return a


def tool(name):
    """The path of a binutils program, or a ScriptError saying it is needed."""
    path = shutil.which(name)
    if not path:
        raise cli.ScriptError("%s not found: install binutils" % name)
    return path


def compiled(build, source_root):
    """{object path: source path}, both relative (to BUILD and SOURCE_ROOT),
    of every C or assembly file BUILD compiled from SOURCE_ROOT."""
    path = os.path.join(build, "compile_commands.json")
    try:
        with open(path) as f:
            entries = json.load(f)
    except OSError:
        raise cli.ScriptError("%s: no such file (is %s a meson build tree?)" % (path, build))
    except ValueError as e:
        raise cli.ScriptError("%s: not JSON (%s)" % (path, e))
    root = os.path.realpath(source_root)
    out = {}
    for e in entries:
        src = os.path.realpath(os.path.join(e["directory"], e["file"]))
        if src.startswith(root + os.sep):
            out[e["output"]] = os.path.relpath(src, root)
    return out


def in_dirs(obj, patterns):
    """Whether the object path OBJ lies in a folder that matches one of PATTERNS."""
    folder = os.path.dirname(obj)
    return any(fnmatch.fnmatch(folder, p) or fnmatch.fnmatch(os.path.basename(folder), p) for p in patterns)


def select(build, objs, patterns, exclude=()):
    """The objects of OBJS (compiled()) in folders matching PATTERNS and none
    of EXCLUDE, each checked to exist in BUILD."""
    out = {o: s for o, s in objs.items() if in_dirs(o, patterns) and not in_dirs(o, exclude)}
    if not out:
        raise cli.ScriptError("%s holds no objects of %s (build it first: ninja -C %s)"
                              % (build, ", ".join(patterns), build))
    for o in sorted(out):
        if not os.path.isfile(os.path.join(build, o)):
            raise cli.ScriptError("%s: no such object (build it first: ninja -C %s)" % (os.path.join(build, o), build))
    return out


def symbols(build, objs):
    """{object: (defined, used)}: the global symbols each object defines (with
    their nm type letter: {name: letter}) and the set it uses but does not define."""
    out = {o: ({}, set()) for o in objs}
    if not objs:
        return out
    names = sorted(objs)
    for i in range(0, len(names), 200):
        part = names[i:i + 200]
        proc = subprocess.run([tool("nm"), "-A", "-g"] + part, cwd=build, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, universal_newlines=True)
        if proc.returncode != 0:
            raise cli.ScriptError("nm failed: %s" % (proc.stderr.strip().splitlines() or ["?"])[-1])
        for line in proc.stdout.splitlines():
            obj, _, rest = line.partition(":")
            fields = rest.split()
            if obj not in out or len(fields) < 2:
                continue
            letter, name = fields[-2], fields[-1]
            if letter == "U":
                out[obj][1].add(name)
            else:
                out[obj][0][name] = letter
    return out


_FUNC = re.compile(r"^[0-9a-f]+ <([^>]+)>:$")
_INSN = re.compile(r"^\s*[0-9a-f]+:\s+(.*)$")


def disassemble(path, names):
    """{function: [instruction text]} for the functions of the binary PATH whose
    names NAMES matches (a function of names -> bool), from objdump -d."""
    proc = subprocess.run([tool("objdump"), "-d", "--no-show-raw-insn", path], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True)
    if proc.returncode != 0:
        raise cli.ScriptError("objdump -d %s failed: %s" % (path, (proc.stderr.strip().splitlines() or ["?"])[-1]))
    out, current = {}, None
    for line in proc.stdout.splitlines():
        m = _FUNC.match(line)
        if m:
            current = m.group(1) if names(m.group(1)) else None
            if current:
                out[current] = []
            continue
        m = _INSN.match(line)
        if current and m:
            out[current].append(m.group(1).strip())
    return out

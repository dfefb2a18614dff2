"""programs - finding the project's programs and running one.

Owns: where a program is looked for (only in an explicit --bin folder or
build tree when one is given; otherwise TMT_BIN, the running script's own
folder - where an installed script's tools are -, PATH, then the source
tree's build/), the source tree's root when the package runs from one, and
running a program: its exit status and output, or a ProgramError whose one
line names the program and says why (the last line of its stderr, a
timeout, or why it could not start); finding the last JSON line of an output.
Never: interprets what a program printed (schema does) or exits.
"""
import json
import os
import shutil
import subprocess
import sys

from . import cli

PACKAGE_DIR = os.path.dirname(os.path.realpath(__file__))  # through a link: where it really is
_ROOT = os.path.dirname(os.path.dirname(PACKAGE_DIR))
# The repository the package runs from, or None when it is installed.
SOURCE_ROOT = _ROOT if os.path.isfile(os.path.join(_ROOT, "meson.build")) else None
DEFAULT_BUILD = os.path.join(SOURCE_ROOT, "build") if SOURCE_ROOT else None

# Each program's folder in a meson build tree.
BUILD_SUBDIR = {"tmdump": "tools", "tmsync": "tools", "tmcheck": "tools", "tmexport": "tools",
                "tmbench": "tmbench", "tmbench-itm": "tmbench", "tmbench-mutex": "tmbench",
                "triage_prog": "test"}


class ProgramError(cli.ScriptError):
    """A program is missing, could not run, failed or printed no JSON: one line (exit 2
    unless a script says otherwise)."""


def executable(path):
    return os.path.isfile(path) and os.access(path, os.X_OK)


def in_build(build, name):
    """The path NAME has in the meson build tree BUILD (whether or not it exists)."""
    return os.path.join(os.path.abspath(build), BUILD_SUBDIR[name], name)


def search_path(name):
    """Where NAME is looked for without an explicit folder, in order:
    (what the place is called in a message, the path there or None)."""
    # the folder the script was run from, a link not followed: an installed
    # tmplot runs as PREFIX/bin/tmplot, a link to share/libtmtrace/python/tmplot
    script_dir = os.path.dirname(os.path.abspath(sys.argv[0])) if sys.argv and sys.argv[0] else None
    tmt_bin = os.environ.get("TMT_BIN")
    return [("TMT_BIN", os.path.join(tmt_bin, name) if tmt_bin else None),
            (script_dir, os.path.join(script_dir, name) if script_dir else None),
            ("PATH", shutil.which(name)),
            (DEFAULT_BUILD, in_build(DEFAULT_BUILD, name) if DEFAULT_BUILD else None)]


def find_program(name, build=None, bindir=None):
    """The path of the project's program NAME (tmcheck, tmbench, ...): only in
    BINDIR when given, else only in the build tree BUILD when given, else the
    first of TMT_BIN, PATH, the source tree's build/. ProgramError when absent."""
    if bindir:
        cands, why = [os.path.join(bindir, name)], "not found in %s" % bindir
    elif build:
        cands = [in_build(build, name)]
        why = "not found in %s (build it: ninja -C %s, or pass --build DIR)" % (build, build)
    else:
        places = [(where, path) for where, path in search_path(name) if where]
        cands = [path for _, path in places if path]
        why = "not found in %s (build it, or pass --bin DIR)" % ", ".join(where for where, _ in places)
    for c in cands:
        if executable(c):
            return c
    raise ProgramError("%s %s" % (name, why))


def last_line(text):
    """The last non-empty line of TEXT, without progress output redrawn with \\r."""
    lines = [l.split("\r")[-1].strip() for l in text.strip().splitlines()]
    lines = [l for l in lines if l]
    return lines[-1] if lines else ""


def run(cmd, env=None, ok=(0,), timeout=None, cwd=None, clean_env=False):
    """Runs CMD with ENV added to the environment (with clean_env, every
    TMTRACE_* variable of ours is removed first) and returns (status, stdout).
    ok: the accepted exit statuses, or None for any. ProgramError otherwise."""
    full_env = dict((k, v) for k, v in os.environ.items()
                    if not (clean_env and k.startswith("TMTRACE_")))
    full_env.update(env or {})
    name = os.path.basename(cmd[0])
    try:
        p = subprocess.run(cmd, env=full_env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise ProgramError("%s timed out after %g s" % (name, timeout))
    except OSError as e:
        raise ProgramError("%s could not run: %s" % (name, e.strerror or e))
    if ok is not None and p.returncode not in ok:
        msg = last_line(p.stderr) or "exit status %d" % p.returncode
        # the project's tools start their messages with their name
        raise ProgramError(msg if msg.startswith(name + ":") else "%s: %s" % (name, msg))
    return p.returncode, p.stdout


def last_json(text, what):
    """The last line of TEXT that is a JSON object, parsed; ProgramError naming WHAT when none is."""
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                obj = json.loads(line)
            except ValueError:
                break
            if isinstance(obj, dict):
                return obj
            break
    raise ProgramError("%s printed no JSON object" % what)

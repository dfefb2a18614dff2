"""cli - the command-line conventions of the project's scripts.

Owns: argument parsing whose errors are one line, "PROG: message (see PROG
--help)", exit 2; the checkers of option values; ScriptError, the one-line
error a script ends with, and run_main, which turns it (and a file error)
into that line and the exit status (or fail(), which exits at once); the
progress line on a terminal.
Never: runs programs or reads their output (programs, schema do).
"""
import argparse
import sys

EXIT_FAILED = 1   # a run or a check failed
EXIT_USAGE = 2    # bad option, missing program or unreadable input


class ScriptError(Exception):
    """A one-line error for the user; `status` is the script's exit status."""

    def __init__(self, message, status=EXIT_USAGE):
        Exception.__init__(self, message)
        self.status = status


class OneLineParser(argparse.ArgumentParser):
    """argparse with errors as one line: 'PROG: message (see PROG --help)', exit 2.
    Subcommand parsers made by add_subparsers() are of this class too."""

    def error(self, message):
        end_progress()
        sys.stderr.write("%s: %s (see %s --help)\n" % (self.prog, message, self.prog))
        sys.exit(EXIT_USAGE)


def positive_int(text):
    """An option value that must be an integer >= 1."""
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("'%s' is not an integer" % text)
    if v < 1:
        raise argparse.ArgumentTypeError("'%s' must be at least 1" % text)
    return v


def positive_float(text):
    """An option value that must be a number > 0."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("'%s' is not a number" % text)
    if not v > 0:
        raise argparse.ArgumentTypeError("'%s' must be positive" % text)
    return v


def int_list(text):
    """A comma-separated list of thread counts, each >= 1."""
    try:
        vals = [int(x) for x in text.split(",") if x]
    except ValueError:
        raise argparse.ArgumentTypeError("'%s' is not a comma-separated list of integers" % text)
    if not vals or min(vals) < 1:
        raise argparse.ArgumentTypeError("'%s' needs thread counts >= 1" % text)
    return vals


def name_list(text):
    """A comma-separated list of at least one name."""
    vals = [x for x in text.split(",") if x]
    if not vals:
        raise argparse.ArgumentTypeError("'%s' names nothing" % text)
    return vals


def choice_list(choices):
    """A checker for a comma-separated subset of CHOICES (order kept)."""
    def check(text):
        vals = name_list(text)
        bad = [v for v in vals if v not in choices]
        if bad:
            raise argparse.ArgumentTypeError("'%s' is not one of %s" % (",".join(bad), ",".join(choices)))
        return vals
    return check


_progress_shown = False


def progress(text):
    """A status line on stderr, rewritten in place; only when stderr is a terminal."""
    global _progress_shown
    if sys.stderr.isatty():
        sys.stderr.write("\r%-72s" % text)
        sys.stderr.flush()
        _progress_shown = True


def end_progress():
    """Ends the status line, if progress() wrote one."""
    global _progress_shown
    if _progress_shown:
        sys.stderr.write("\n")
        _progress_shown = False


def fail(prog, message):
    """One line 'PROG: message' on stderr (on a line of its own), exit 1: for a
    script that stops where it stands rather than raising ScriptError."""
    end_progress()
    sys.stderr.write("%s: %s\n" % (prog, message))
    sys.exit(EXIT_FAILED)


def run_main(prog, main, argv=None):
    """Calls main(argv) and returns the exit status for sys.exit: main's own,
    or that of a ScriptError (after one line 'PROG: message' on stderr); a
    file error is such a line with exit 2, an interrupt exits 130."""
    try:
        return main(sys.argv[1:] if argv is None else argv)
    except ScriptError as e:
        end_progress()
        sys.stderr.write("%s: %s\n" % (prog, e))
        return e.status
    except OSError as e:
        end_progress()
        sys.stderr.write("%s: %s: %s\n" % (prog, e.filename or "", e.strerror or e))
        return EXIT_USAGE
    except KeyboardInterrupt:
        end_progress()
        return 130

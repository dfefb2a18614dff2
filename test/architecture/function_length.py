#!/usr/bin/env python3
"""Every C function of the library and the tools fits on a screen.

Usage: function_length.py [--limit N] ROOT [DIR...]
  Reads every .c and .h file below ROOT/DIR (default: libtmtrace and tools),
  counts the lines of each function's body (the lines between its opening and
  closing brace) and prints one line per function longer than the limit
  (default 80): "FILE:LINE NAME: N lines (limit 80)". Exit status: 0 when
  every function fits, 1 when one does not, 2 on a usage or read error.

Before it reads the tree it checks itself on a small generated file (one
function one line over the limit, one at it, a struct, a macro with braces),
so that a checker that no longer sees functions fails instead of passing.
Functions that cannot sensibly be split would go in ALLOWED with the reason;
there are none.
"""
import os
import re
import sys

LIMIT = 80
DIRS = ("libtmtrace", "tools")
ALLOWED = {}  # "path/file.c:function": "why it cannot be split"
NOT_NAMES = {"__attribute__", "__attribute", "__declspec", "_Alignas", "alignas",
             "if", "for", "while", "switch", "return", "sizeof"}
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def strip(text):
    """Text with comments, string and character literals and preprocessor
    lines blanked out, newlines kept so that line numbers stay true."""
    out, i, n = [], 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c == "#" or (line_start and c in " \t" and
                                       text[i:].lstrip(" \t").startswith("#")):
            j = i
            while j < n:  # to the end of the directive, continuations included
                if text[j] == "\n" and (j == 0 or text[j - 1] != "\\"):
                    break
                j += 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
            continue
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
            continue
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
            continue
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1:j]) + c)
            i = j + 1
            continue
        out.append(c)
        line_start = c == "\n" or (line_start and c in " \t")
        i += 1
    return "".join(out)


def function_name(head):
    """The name of the function a top-level declaration head defines, or None
    when the head is not a function's (struct, enum, initialiser, ...)."""
    head = " ".join(head.split())
    if not head or "=" in head.split("(")[0]:
        return None
    if re.match(r"^(typedef\b|(static\s+|const\s+)*(struct|union|enum)\b[^(]*$)", head):
        return None
    depth = 0
    for m in re.finditer(r"[()]|" + IDENT.pattern, head):
        tok = m.group(0)
        if tok == "(":
            depth += 1
        elif tok == ")":
            depth -= 1
        elif depth == 0:
            rest = head[m.end():].lstrip()
            if rest.startswith("(") and tok not in NOT_NAMES:
                return tok
    return None


def functions(text):
    """(name, line of the opening brace, body lines) for each function."""
    code = strip(text)
    found, depth, head, start, name = [], 0, [], 0, None
    line, line_begin = 1, 0
    for pos, c in enumerate(code):
        if c == "\n":
            line += 1
            line_begin = pos + 1
        if depth == 0:
            if c == "{":
                name = function_name("".join(head))
                start = line
                depth = 1
                head = []
            elif c in ";}":
                head = []
            else:
                head.append(c)
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0 and name:
                # code before the closing brace on its line is a body line
                tail = 1 if code[line_begin:pos].strip() else 0
                found.append((name, start, max(0, line - start - 1 + tail)))
    return found


def too_long(path, text, limit):
    return [(path, start, name, body) for name, start, body in functions(text)
            if body > limit and f"{path}:{name}" not in ALLOWED]


def self_check(limit):
    body = lambda n: "".join(f"    x += {i};\n" for i in range(n))
    sample = ("#define M(a) do { \\\n  a; \\\n} while (0)\n"
              "struct s {\n" + "    int a;\n" * (limit + 5) + "};\n"
              "/* int fake(void) { */\n"
              "static const char *s = \"{\";\n"
              "__attribute__((noinline)) static int over(int x)\n{\n"
              + body(limit + 1) + "    return x;\n}\n"
              "int at(int x) {\n" + body(limit - 1) + "    return x; }\n"
              "int\nat_too(int x)\n{\n" + body(limit - 1) + "    return x;\n}\n")
    got = {name: n for name, _, n in functions(sample)}
    want = {"over": limit + 2, "at": limit, "at_too": limit}
    if got != want:
        sys.exit(f"function_length.py: self-check failed: found {got}, expected {want}")


def main(argv):
    limit = LIMIT
    if len(argv) >= 2 and argv[0] == "--limit":
        limit, argv = int(argv[1]), argv[2:]
    if not argv:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    root, dirs = argv[0], argv[1:] or DIRS
    self_check(limit)
    bad, seen = [], 0
    for d in dirs:
        top = os.path.join(root, d)
        if not os.path.isdir(top):
            print(f"function_length.py: {top}: not a directory", file=sys.stderr)
            return 2
        for dirpath, _, files in sorted(os.walk(top)):
            for f in sorted(files):
                if not f.endswith((".c", ".h")):
                    continue
                path = os.path.join(dirpath, f)
                with open(path, encoding="utf-8", errors="replace") as fh:
                    text = fh.read()
                seen += len(functions(text))
                bad += too_long(os.path.relpath(path, root), text, limit)
    for path, start, name, body in sorted(bad, key=lambda b: -b[3]):
        print(f"{path}:{start} {name}: {body} lines (limit {limit})")
    print(f"{seen} functions read, {len(bad)} longer than {limit} lines")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

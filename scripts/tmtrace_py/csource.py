"""csource - reading the project's C sources as text.

Owns: blanking out comments and string/character literals (lines kept, so
line numbers stay true), the quoted #include lines of a file, the names of
the functions a header declares, and the identifiers function bodies use.
Never: preprocesses, compiles or judges what it reads (modgraph, unused do).
"""
import re

# A comment, a string or character literal, or anything else up to the next one.
_TOKENS = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.M)
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# A declaration at file scope: a name, its parameters, maybe attributes, then ';'.
_DECL = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(([^;{}()]|\([^;{}]*?\))*\)\s*"
                   r"(?:__attribute__\s*\(\(.*?\)\)\s*)*;", re.S)
_NOT_FUNCTIONS = {"if", "for", "while", "switch", "return", "sizeof", "__attribute__", "_Static_assert",
                  "typeof", "__typeof__", "alignof", "_Alignof"}


def _blank(s):
    return re.sub(r"[^\n]", " ", s)


def strip(text):
    """TEXT with comments and string/character literals blanked (newlines
    kept; a literal keeps its quotes)."""
    def blank(m):
        s = m.group(0)
        return _blank(s) if s[0] == "/" else s[0] + _blank(s[1:-1]) + s[-1]
    return _TOKENS.sub(blank, text)


def _code(text):
    """TEXT with comments, literals and preprocessor lines blanked."""
    return re.sub(r"^[ \t]*#.*?(?<!\\)$", lambda m: _blank(m.group(0)), strip(text), flags=re.M | re.S)


def _file_scope(code):
    """CODE with everything between braces blanked: what is left is declared
    at file scope (an extern "C" block's braces are not a scope; a brace
    without its opening one is passed over)."""
    code = re.sub(r'extern\s*"[^"]*"\s*\{', lambda m: _blank(m.group(0)), code)
    out, depth = [], 0
    for c in code:
        if c == "{":
            depth += 1
        keep = depth == 0 or c == "\n"
        if c == "}":
            depth = max(0, depth - 1)
        out.append(c if keep else " ")
    return "".join(out)


def includes(text):
    """[(line number, name)] of TEXT's #include "name" lines (not those in comments)."""
    out = []
    code = _TOKENS.sub(lambda m: m.group(0) if m.group(0)[0] == '"' else _blank(m.group(0)), text)
    for m in _INCLUDE.finditer(code):
        out.append((code.count("\n", 0, m.start()) + 1, m.group(1)))
    return out


def declared_functions(text):
    """The names of the functions TEXT (a header) declares without defining."""
    code = _file_scope(_code(text))
    return sorted({m.group(1) for m in _DECL.finditer(code) if m.group(1) not in _NOT_FUNCTIONS})


def used_identifiers(text):
    """The identifiers TEXT's code uses between braces (in function bodies
    and initializers), comments, strings and preprocessor lines left out."""
    code = _code(text)
    scope = _file_scope(code)
    inner = "".join(c if s == " " and c != "\n" else " " for c, s in zip(code, scope))
    return set(_IDENT.findall(inner))

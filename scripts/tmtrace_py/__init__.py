"""tmtrace_py - what the project's Python scripts share.

Owns: nothing by itself; its modules are
  cli       the command-line conventions (one-line errors, value checkers,
            the progress line, the exit statuses)
  programs  finding the project's programs (build tree, install, PATH) and
            running one with a one-line error when it fails
  schema    the tools' JSON documents, read by exactly the keys they write
  bench     running one tmbench process and the options of the tmbench scripts
Never: imports anything outside the Python standard library.

Used by validate/run, plots/tmplot and tmbench/compare, overhead, soak. A
script finds the package relative to itself: ../scripts in the source tree,
../share/libtmtrace/python after `meson install` (see scripts/meson.build).
"""

"""tmtrace_py - what the project's Python scripts share.

Owns: nothing by itself; its modules are
  cli       the command-line conventions (one-line errors, value checkers,
            the progress line, the exit statuses)
  programs  finding the project's programs (build tree, install, PATH) and
            running one with a one-line error when it fails
  schema    the tools' JSON documents, read by exactly the keys they write
  bench     running one tmbench process and the options of the tmbench scripts
  stamp     STAMP 0.9.10 and TinySTM as the STAMP harnesses know them
  gcctm     the GCC-TM port of STAMP (transmem's stamp_c) on libtmtrace-itm
  stamprun  what the STAMP harnesses do alike: runs, trace checks, medians
  csource   reading C sources as text (includes, declarations, uses)
  objects   a build tree's objects read back (nm, objdump, compile_commands.json)
  modgraph, fastpath, unused
            the checks of the source tree on a build (scripts/modgraph,
            scripts/fastpath, scripts/unused)
Never: imports anything outside the Python standard library.

Used by validate/run, plots/tmplot, tmbench/compare, overhead, soak,
stamp/run and stamp/gcctm, and the checks above. No script edits sys.path to find it:
Python puts the folder of the script it runs (a link followed) first on the
path, and there the package is - in the source tree a link named tmtrace_py
beside each script leads to scripts/tmtrace_py (scripts/'s own checks sit
beside it); installed, tmplot lies beside the package in
share/libtmtrace/python and bin/tmplot links to it (scripts/meson.build,
plots/meson.build).
"""

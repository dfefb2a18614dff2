"""support - what the tests of scripts/tmtrace_py share: the package on
sys.path, the build tree under test, fake programs in a temporary folder,
planted source trees compiled as meson would."""
import os
import stat
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_ROOT = os.environ.get("TMT_SOURCE_ROOT") or os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SOURCE_ROOT, "scripts"))


def build_root():
    """The build tree meson runs the tests in (TMT_BUILD_ROOT), else the source tree's build/."""
    return os.environ.get("TMT_BUILD_ROOT") or os.path.join(SOURCE_ROOT, "build")


def fake_program(folder, name, body):
    """An executable Python program FOLDER/NAME running BODY; its path."""
    path = os.path.join(folder, name)
    with open(path, "w") as f:
        f.write("#!%s\nimport json, os, sys\n%s\n" % (sys.executable, body))
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
    return path


def temp_dir(case):
    """A temporary folder removed when the test case ends."""
    d = tempfile.TemporaryDirectory(prefix="tmtrace_py-test.")
    case.addCleanup(d.cleanup)
    return d.name



def temp_dir_for_class(cls):
    """A temporary folder removed when the test class ends."""
    d = tempfile.TemporaryDirectory(prefix="tmtrace_py-test.")
    cls.addClassCleanup(d.cleanup)
    return d.name


# Where meson puts the object of a source file, by its folder (what the
# architecture checks read as the product's, a test's or tmbench's objects).
OBJECT_DIR = {"libtmtrace/format": "libtmtrace/libtmtrace_format.a.p",
              "libtmtrace/tracer": "libtmtrace/libtmtrace_tracer.a.p",
              "libtmtrace/tm": "libtmtrace/libtmtrace_tm.a.p",
              "libtmtrace/api": "libtmtrace/libtmtrace_api.a.p",
              "libtmtrace/itm": "libtmtrace/libtmtrace-itm.so.1.0.0.p",
              "tools/reader": "tools/libtmtools_reader.a.p",
              "tools/check": "tools/libtmtools_check.a.p",
              "tools/cmd": "tools/tmcheck.p",
              "test/unit": "test/test_planted.p",
              "tmbench": "tmbench/tmbench.p"}


def planted_tree(root, files):
    """A source tree ROOT holding FILES ({relative path: text}) and its build
    tree ROOT/build as meson would leave it: each .c compiled with cc -c into
    its folder's object folder, listed in compile_commands.json. The build's path."""
    import json
    import subprocess
    build = os.path.join(root, "build")
    commands = []
    for rel, text in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
    for rel in sorted(files):
        if not rel.endswith(".c"):
            continue
        folder = os.path.dirname(rel)
        obj = os.path.join(OBJECT_DIR[folder], folder.split("/")[-1] + "_" + os.path.basename(rel) + ".o")
        os.makedirs(os.path.join(build, os.path.dirname(obj)), exist_ok=True)
        incs = ["-I" + os.path.join(root, d) for d in sorted({os.path.dirname(f) for f in files})]
        cmd = ["cc", "-O2", "-fPIC", "-c", "-o", obj] + incs + [os.path.join("..", rel)]
        subprocess.run(cmd, cwd=build, check=True)
        commands.append({"directory": build, "file": os.path.join("..", rel), "output": obj,
                         "command": " ".join(cmd)})
    with open(os.path.join(build, "compile_commands.json"), "w") as f:
        json.dump(commands, f)
    return build

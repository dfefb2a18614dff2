"""support - what the tests of scripts/tmtrace_py share: the package on
sys.path, the build tree under test, fake programs in a temporary folder."""
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

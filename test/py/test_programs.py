"""tmtrace_py.programs: where programs are found, how a failed run reads."""
import os
import unittest
from unittest import mock

import support
from tmtrace_py import programs


class FindProgram(unittest.TestCase):
    def setUp(self):
        self.dir = support.temp_dir(self)

    def build_with(self, name):
        """A build tree holding an executable NAME in its folder."""
        sub = os.path.join(self.dir, "build", programs.BUILD_SUBDIR[name])
        os.makedirs(sub, exist_ok=True)
        return support.fake_program(sub, name, "")

    def test_a_build_tree_gives_tools_and_tmbench_from_their_folders(self):
        tmcheck = self.build_with("tmcheck")
        tmbench = self.build_with("tmbench")
        build = os.path.join(self.dir, "build")
        self.assertEqual(programs.find_program("tmcheck", build=build), tmcheck)
        self.assertEqual(programs.find_program("tmbench", build=build), tmbench)

    def test_missing_program_in_build_tree_names_program_and_tree(self):
        with self.assertRaises(programs.ProgramError) as ctx:
            programs.find_program("tmsync", build=os.path.join(self.dir, "nothing"))
        msg = str(ctx.exception)
        self.assertTrue(msg.startswith("tmsync not found in "), msg)
        self.assertIn(os.path.join(self.dir, "nothing"), msg)
        self.assertEqual(ctx.exception.status, 2)

    def test_a_file_that_is_not_executable_is_not_found(self):
        path = self.build_with("tmdump")
        os.chmod(path, 0o644)
        with self.assertRaises(programs.ProgramError):
            programs.find_program("tmdump", build=os.path.join(self.dir, "build"))

    def test_explicit_bin_folder_is_the_only_place_looked_at(self):
        a, b = os.path.join(self.dir, "a"), os.path.join(self.dir, "b")
        os.makedirs(a)
        os.makedirs(b)
        in_b = support.fake_program(b, "tmexport", "")
        with mock.patch.dict(os.environ, {"TMT_BIN": b, "PATH": b}):
            with self.assertRaises(programs.ProgramError):
                programs.find_program("tmexport", bindir=a)
            self.assertEqual(programs.find_program("tmexport", bindir=b), in_b)

    def test_search_takes_tmt_bin_before_path(self):
        a, b = os.path.join(self.dir, "a"), os.path.join(self.dir, "b")
        os.makedirs(a)
        os.makedirs(b)
        in_a = support.fake_program(a, "tmcheck", "")
        in_b = support.fake_program(b, "tmcheck", "")
        with mock.patch.dict(os.environ, {"TMT_BIN": a, "PATH": b}):
            self.assertEqual(programs.find_program("tmcheck"), in_a)
        with mock.patch.dict(os.environ, {"TMT_BIN": "", "PATH": b}):
            self.assertEqual(programs.find_program("tmcheck"), in_b)


class Run(unittest.TestCase):
    def setUp(self):
        self.dir = support.temp_dir(self)

    def test_output_and_status_of_an_accepted_exit(self):
        exe = support.fake_program(self.dir, "tool", "print('hello'); sys.exit(1)")
        self.assertEqual(programs.run([exe], ok=(0, 1)), (1, "hello\n"))

    def test_a_failed_run_is_the_program_and_its_last_stderr_line(self):
        exe = support.fake_program(self.dir, "tmsync",
                                   "sys.stderr.write('progress 10%\\rprogress 90%\\rtrace.bin: damaged chunk at 4096\\n');"
                                   "sys.exit(2)")
        with self.assertRaises(programs.ProgramError) as ctx:
            programs.run([exe])
        self.assertEqual(str(ctx.exception), "tmsync: trace.bin: damaged chunk at 4096")

    def test_a_message_that_names_its_program_is_not_prefixed_again(self):
        exe = support.fake_program(self.dir, "tmexport", "sys.stderr.write('tmexport: x.bin: cannot open\\n'); sys.exit(2)")
        with self.assertRaises(programs.ProgramError) as ctx:
            programs.run([exe])
        self.assertEqual(str(ctx.exception), "tmexport: x.bin: cannot open")

    def test_a_failed_run_without_message_says_its_status(self):
        exe = support.fake_program(self.dir, "tmcheck", "sys.exit(3)")
        with self.assertRaises(programs.ProgramError) as ctx:
            programs.run([exe], ok=(0, 1))
        self.assertEqual(str(ctx.exception), "tmcheck: exit status 3")

    def test_a_program_that_cannot_start_is_named(self):
        with self.assertRaises(programs.ProgramError) as ctx:
            programs.run([os.path.join(self.dir, "absent")])
        self.assertTrue(str(ctx.exception).startswith("absent could not run"), str(ctx.exception))

    def test_a_run_that_takes_too_long_is_stopped_and_named(self):
        exe = support.fake_program(self.dir, "slow", "import time; time.sleep(30)")
        with self.assertRaises(programs.ProgramError) as ctx:
            programs.run([exe], timeout=0.5)
        self.assertEqual(str(ctx.exception), "slow timed out after 0.5 s")

    def test_clean_env_passes_only_the_given_tmtrace_variables(self):
        exe = support.fake_program(self.dir, "env", "print(sorted(k for k in os.environ if k.startswith('TMTRACE_')))")
        with mock.patch.dict(os.environ, {"TMTRACE_SKEW": "0:5:0", "TMTRACE_EVENTS": "tx"}):
            _, out = programs.run([exe], env={"TMTRACE_FILE": "t.bin"}, clean_env=True)
            self.assertEqual(out.strip(), "['TMTRACE_FILE']")
            _, out = programs.run([exe], env={"TMTRACE_FILE": "t.bin"})
            self.assertEqual(out.strip(), "['TMTRACE_EVENTS', 'TMTRACE_FILE', 'TMTRACE_SKEW']")


class LastJson(unittest.TestCase):
    def test_the_last_object_line_wins(self):
        text = 'warming up\n{"a": 1}\nnote\n{"a": 2, "b": [1]}\n'
        self.assertEqual(programs.last_json(text, "tmbench"), {"a": 2, "b": [1]})

    def test_no_object_or_a_broken_last_object_is_an_error_naming_the_program(self):
        for text in ("", "no json here\n", '{"a": 1}\n{"a": \n', "[1, 2]\n"):
            with self.assertRaises(programs.ProgramError, msg=text) as ctx:
                programs.last_json(text, "tmcheck")
            self.assertEqual(str(ctx.exception), "tmcheck printed no JSON object")


if __name__ == "__main__":
    unittest.main()

"""tmtrace_py.cli: option checkers, one-line errors, exit statuses."""
import argparse
import contextlib
import io
import unittest

import support  # noqa: F401  (puts the package on sys.path)
from tmtrace_py import cli


def stderr_and_exit(fn, *args):
    """(what FN wrote on stderr, the status it exited with or returned)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            status = fn(*args)
        except SystemExit as e:
            status = e.code
    return err.getvalue(), status


class OptionCheckers(unittest.TestCase):
    def test_int_list_reads_comma_separated_thread_counts(self):
        self.assertEqual(cli.int_list("1,2,8"), [1, 2, 8])
        self.assertEqual(cli.int_list("4,"), [4])

    def test_int_list_rejects_zero_words_and_nothing(self):
        for text in ("0", "1,0", "x", "1,two", "", ","):
            with self.assertRaises(argparse.ArgumentTypeError, msg=text):
                cli.int_list(text)

    def test_positive_int_and_float_reject_zero_negative_and_words(self):
        self.assertEqual(cli.positive_int("3"), 3)
        self.assertEqual(cli.positive_float("0.25"), 0.25)
        for fn, text in ((cli.positive_int, "0"), (cli.positive_int, "1.5"), (cli.positive_int, "a"),
                         (cli.positive_float, "0"), (cli.positive_float, "-1"),
                         (cli.positive_float, "nan"), (cli.positive_float, "a")):
            with self.assertRaises(argparse.ArgumentTypeError, msg=text):
                fn(text)

    def test_choice_list_keeps_order_and_names_the_unknown_choice(self):
        check = cli.choice_list(("off", "tx", "all"))
        self.assertEqual(check("all,off"), ["all", "off"])
        with self.assertRaises(argparse.ArgumentTypeError) as ctx:
            check("tx,nope")
        self.assertIn("nope", str(ctx.exception))
        self.assertNotIn("'tx", str(ctx.exception))
        with self.assertRaises(argparse.ArgumentTypeError):
            check(",")


class OneLineErrors(unittest.TestCase):
    def parser(self):
        p = cli.OneLineParser(prog="prog")
        p.add_argument("--threads", type=cli.int_list)
        sub = p.add_subparsers(dest="cmd")
        sub.add_parser("fit").add_argument("--out", required=True)
        return p

    def test_bad_option_value_is_one_line_naming_program_and_option_exit_2(self):
        err, status = stderr_and_exit(self.parser().parse_args, ["--threads", "0"])
        self.assertEqual(status, cli.EXIT_USAGE)
        self.assertEqual(err.count("\n"), 1)
        self.assertTrue(err.startswith("prog: "), err)
        self.assertIn("--threads", err)
        self.assertTrue(err.endswith("(see prog --help)\n"), err)

    def test_subcommand_error_is_one_line_naming_the_subcommand(self):
        err, status = stderr_and_exit(self.parser().parse_args, ["fit"])
        self.assertEqual(status, cli.EXIT_USAGE)
        self.assertEqual(err.count("\n"), 1)
        self.assertTrue(err.startswith("prog fit: "), err)
        self.assertIn("--out", err)


class RunMain(unittest.TestCase):
    def test_main_status_is_returned_and_nothing_printed(self):
        err, status = stderr_and_exit(cli.run_main, "prog", lambda argv: len(argv), ["a", "b", "c"])
        self.assertEqual((err, status), ("", 3))

    def test_script_error_is_one_line_with_its_status(self):
        def main(argv):
            raise cli.ScriptError("tmbench failed: check failed", cli.EXIT_FAILED)
        err, status = stderr_and_exit(cli.run_main, "prog", main, [])
        self.assertEqual((err, status), ("prog: tmbench failed: check failed\n", 1))

    def test_script_error_exits_2_unless_told(self):
        def main(argv):
            raise cli.ScriptError("gnuplot not found")
        self.assertEqual(stderr_and_exit(cli.run_main, "prog", main, [])[1], cli.EXIT_USAGE)

    def test_fail_is_one_line_on_its_own_line_and_exit_1(self):
        err, status = stderr_and_exit(cli.fail, "prog", "app failed (exit 3)")
        self.assertEqual((err, status), ("prog: app failed (exit 3)\n", cli.EXIT_FAILED))

    def test_file_error_names_the_file_exit_2(self):
        def main(argv):
            open("/nonexistent/results.csv")
        err, status = stderr_and_exit(cli.run_main, "prog", main, [])
        self.assertEqual(status, cli.EXIT_USAGE)
        self.assertTrue(err.startswith("prog: /nonexistent/results.csv: "), err)
        self.assertEqual(err.count("\n"), 1)


if __name__ == "__main__":
    unittest.main()

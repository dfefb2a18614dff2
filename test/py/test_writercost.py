"""tmtrace_py.writercost: the rows of its timed table and of its callgrind
table (instructions per event by part), and its options."""
import contextlib
import io
import unittest

import support
from tmtrace_py import cli, writercost

REPORT = """\
--------------------------------------------------------------------------------
Ir
--------------------------------------------------------------------------------
1,000,000 (100.0%)  PROGRAM TOTALS

--------------------------------------------------------------------------------
Ir                 file:function
--------------------------------------------------------------------------------
600,000 (60.00%)  ???:tw_main [/b/tmbench]
400,000 (40.00%)  ???:codec_encode_slots [/b/tmbench]
150,000 (15.00%)  ???:LZ4_compress_fast [/usr/lib/liblz4.so]
150,000 (15.00%)  ???:LZ4_compress_fast_extState [/usr/lib/liblz4.so]
 20,000 ( 2.00%)  ???:codec_crc32 [/b/tmbench]
 20,000 ( 2.00%)  ???:crc32 [/usr/lib/libz.so]
 10,000 ( 1.00%)  ???:tw_refill_main [/b/tmbench]
 50,000 ( 5.00%)  ???:tmt_init [/b/tmbench]
  5,000 ( 0.50%)  ???:tmt_shutdown [/b/tmbench]
"""


class Counted(unittest.TestCase):
    def test_the_writer_is_split_into_encoding_compression_crc_and_the_rest_per_event(self):
        row = writercost.counted_line(("vacation", "tx"), writercost.inclusive(REPORT), 1000, 2.5).split()
        self.assertEqual(row[:3], ["vacation", "tx", "0.00"])
        encode, compress, crc, rest, init, total, size = (float(x) for x in row[3:])
        self.assertEqual((encode, compress, crc), (400.0, 150.0, 20.0))
        self.assertEqual(rest, 45.0)     # writer, refill thread and exit less the parts
        self.assertEqual((init, total, size), (50.0, 665.0, 2.5))


class Timed(unittest.TestCase):
    REC = {"tracer_ns_per_event": 16.0, "writer_cpu_share": 0.1, "events_recorded": 90_000_000,
           "events_dropped": 10_000_000, "buffer_late_maps": 3, "bytes_per_event": 2.5,
           "commits": 900, "aborts": 100, "attempts_shed": 250}

    def test_a_row_gives_the_ns_per_event_against_15_the_share_drops_shed_attempts_and_late_maps(self):
        row = writercost.timed_line(("hash", "all/each"), self.REC).split()
        self.assertEqual(row, ["hash", "all/each", "16.0", "miss", "0.100", "90.0", "10.00", "25.00", "3", "2.50"])
        ok = writercost.timed_line(("hash", "tx"), dict(self.REC, tracer_ns_per_event=15.0)).split()
        self.assertEqual(ok[3], "ok")


class Perf(unittest.TestCase):
    SCRIPT = """\
      tmt-writer 7f4476caa433 LZ4_compress_fast_extState (/usr/lib/liblz4.so.1.9.4)
      tmt-writer 7f4476caa433 LZ4_compress_fast_extState (/usr/lib/liblz4.so.1.9.4)
      tmt-writer 7f4476caa433 codec_encode_slots (/b/tmbench)
      tmt-writer 7f4476caa433 crc32_fold.constprop.0 (/b/tmbench)
      tmt-writer ffffffff813a4413 copy_folio_from_iter_atomic ([kernel.kallsyms])
      tmt-writer 7f4476caa433 tw_take_and_write (/b/tmbench)
      tmt-refill ffffffff813a4413 clear_page_erms ([kernel.kallsyms])
      tmt-sample 7f4476caa433 cs_worker (/b/tmbench)
      tmt-sample 7f4476caa433 cs_worker (/b/tmbench)
         tmbench 7f4476caa433 intset_worker (/b/tmbench)
"""

    def test_samples_split_into_the_writers_parts_the_refill_and_sampling_threads_and_the_program(self):
        ms = writercost.perf_split(self.SCRIPT)
        self.assertEqual((ms["writer"], ms["compress"], ms["encode"], ms["crc"], ms["kernel"], ms["rest"]),
                         (6, 2, 1, 1, 1, 1))
        self.assertEqual((ms["refill"], ms["sampling"], ms["program"]), (1, 2, 1))

    def test_init_and_exit_are_the_tracers_cpu_less_its_threads_and_the_sampling_phases(self):
        rec = {"events_recorded": 1_000_000, "tracer_ns_per_event": 20.0, "tracer_cpu_s": 0.02}
        row = writercost.perf_line(("hash", "tx"), rec, writercost.perf_split(self.SCRIPT)).split()
        self.assertEqual(row[:4], ["hash", "tx", "1.0", "20.0"])
        self.assertEqual([float(x) for x in row[4:]],
                         [0.006, 0.001, 0.002, 0.001, 0.001, 0.001, 0.001, 0.002, 0.011, 0.02])


class Options(unittest.TestCase):
    def test_a_build_without_tmbench_is_an_error_with_exit_2(self):
        with self.assertRaises(cli.ScriptError) as e:
            writercost.parse_args(["--build", "/no/such/build"], "writer-cost")
        self.assertEqual(e.exception.status, 2)

    def test_callgrind_on_a_build_without_the_countable_stamp_is_an_error_with_exit_2(self):
        with self.assertRaises(cli.ScriptError) as e:
            writercost.parse_args(["--build", support.build_root(), "--callgrind"], "writer-cost")
        self.assertEqual(e.exception.status, 2)
        self.assertIn("countable_stamp", str(e.exception))
        self.assertNotIn("\n", str(e.exception))

    def test_the_defaults_are_the_issues_runs(self):
        a = writercost.parse_args(["--build", support.build_root()], "writer-cost")
        self.assertEqual((a.workloads, a.threads, a.duration), (["vacation", "hash"], 2, 10.0))
        self.assertEqual([n for n, _, _ in a.levels], ["tx", "all/boundary", "all/each"])

    def test_levels_picks_some_in_the_tables_order_with_their_settings(self):
        a = writercost.parse_args(["--build", support.build_root(), "--levels", "all/each,tx"], "writer-cost")
        self.assertEqual(a.levels, [("tx", "tx", "boundary"), ("all/each", "all", "each")])

    def test_an_unknown_level_is_a_one_line_error_with_exit_2(self):
        err = io.StringIO()
        with contextlib.redirect_stderr(err), self.assertRaises(SystemExit) as e:
            writercost.parse_args(["--build", support.build_root(), "--levels", "tx,al"], "writer-cost")
        self.assertEqual(e.exception.code, 2)
        self.assertIn("'al' is not one of tx,all/boundary,all/each", err.getvalue())
        self.assertEqual(err.getvalue().count("\n"), 1)


if __name__ == "__main__":
    unittest.main()

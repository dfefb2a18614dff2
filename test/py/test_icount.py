"""tmtrace_py.icount: the whole program's and the runtime's instruction
counts read from callgrind_annotate's report."""
import unittest

import support  # noqa: F401  (puts the package on the path)
from tmtrace_py import icount

REPORT = """--------------------------------------------------------------------------------
Ir
--------------------------------------------------------------------------------
1,000 (100.0%)  PROGRAM TOTALS

--------------------------------------------------------------------------------
Ir                    file:function
--------------------------------------------------------------------------------
500 (50.00%)  /s/genScalData.c:genScalData_seq [/s/ssca2]
200 (20.00%)  ???:stm_commit_whole [/s/ssca2]
100 (10.00%)  ???:tmt_write_word [/s/ssca2]
 90 ( 9.00%)  ./setjmp/../sysdeps/x86_64/bsd-_setjmp.S:__sigsetjmp [/lib/libc.so.6]
 60 ( 6.00%)  ???:stm_start_tx [/s/ssca2]
 50 ( 5.00%)  ???:TMlist_insert [/s/ssca2]
"""


class Counts(unittest.TestCase):
    def test_the_runtime_is_its_functions_and_setjmp_and_the_total_is_the_programs(self):
        self.assertEqual(icount.counts(REPORT), (1000, 450))

    def test_a_report_without_its_totals_is_refused(self):
        with self.assertRaises(ValueError):
            icount.counts(REPORT.replace("PROGRAM TOTALS", "TOTALS"))

    def test_inlined_code_is_counted_by_its_header_and_the_function_it_is_inlined_into(self):
        places = icount.by_place(REPORT + "40 ( 4.00%)  /b/../tracer/trace_buffer.h:tx_commit_traced\n")
        self.assertEqual(places[("trace_buffer.h", "tx_commit_traced")], 40)
        self.assertEqual(places[("genScalData.c", "genScalData_seq")], 500)
        self.assertEqual(places[("???", "stm_commit_whole")], 200)

    def test_the_counted_run_and_the_report_name_the_same_file(self):
        self.assertIn("--callgrind-out-file=/w/out", icount.valgrind_command("/w/out"))
        self.assertEqual(icount.annotate_command("/w/out")[-1], "/w/out")


TREE = """--------------------------------------------------------------------------------
Ir                    file:function
--------------------------------------------------------------------------------
3,600 (40.00%)  < ???:hash_contains (100x) [/s/tmbench]
  660 ( 7.33%)  < ???:hash_remove (20x) [/s/tmbench]
4,260 (47.33%)  *  ???:tmt_read_ptr [/s/tmbench]

  200 ( 2.22%)  < ???:hash_insert (8x) [/s/tmbench]
  200 ( 2.22%)  *  ???:tmt_write_ptr [/s/tmbench]
   90 ( 1.00%)  >   ???:stm_wappend_slow (1x) [/s/tmbench]

  100 ( 1.11%)  < ???:main (1x) [/s/tmbench]
  100 ( 1.11%)  *  ???:hash_contains [/s/tmbench]
"""


class PerCall(unittest.TestCase):
    def test_a_functions_calls_are_its_callers_counts_and_its_cost_inclusive(self):
        self.assertEqual(icount.per_call(TREE, ("tmt_read_", "tmt_write_")),
                         {"tmt_read_ptr": (120, 4260), "tmt_write_ptr": (8, 200)})

    def test_the_tree_report_is_inclusive_and_names_the_file(self):
        cmd = icount.tree_command("/w/out")
        self.assertIn("--inclusive=yes", cmd)
        self.assertEqual(cmd[-1], "/w/out")


if __name__ == "__main__":
    unittest.main()

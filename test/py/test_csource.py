"""tmtrace_py.csource: comments and literals are not code, includes and
declarations are read at file scope only."""
import unittest

import support  # noqa: F401  (puts the package on sys.path)
from tmtrace_py import csource

HEADER = r'''/* a "comment" with include "x.h" */
#include "a.h"
  #  include "b.h" // and a comment
#include <stdio.h>
#ifdef __cplusplus
extern "C" {
#endif
#define CALL(x) not_declared(x);
int declared(int x) __attribute__((noreturn));
void (*not_a_function)(int);
const char *s = "looks_like(int);";
static inline int defined_here(int y) { return called_inside(y); }
struct with_member { int (*member)(void); };
#ifdef __cplusplus
}
#endif
'''


class Reading(unittest.TestCase):
    def test_quoted_includes_outside_comments_with_their_lines(self):
        self.assertEqual(csource.includes(HEADER), [(2, "a.h"), (3, "b.h")])

    def test_only_declarations_at_file_scope_are_functions_a_header_declares(self):
        self.assertEqual(csource.declared_functions(HEADER), ["declared"])

    def test_function_bodies_name_what_they_use(self):
        used = csource.used_identifiers(HEADER)
        self.assertIn("called_inside", used)
        self.assertNotIn("declared", used)
        self.assertNotIn("looks_like", used)

    def test_strip_keeps_lines_and_the_quotes_of_a_literal(self):
        text = 'a /* x\ny */ "s//t" \'c\' // z\n'
        out = csource.strip(text)
        self.assertEqual(out.count("\n"), text.count("\n"))
        self.assertEqual(out.split(), ["a", '"', '"', "'", "'"])


if __name__ == "__main__":
    unittest.main()

/* A relaxed transaction that does I/O: it goes irrevocable (serial), so the
 * numbers it writes to the file come out in order, one line each. */
#include "itm_prog.h"

#define OPS 500

static long counter;
static FILE *out;

static void worker(int id)
{
    for (int i = 0; i < OPS; i++) {
        __transaction_relaxed {
            counter += 1;
            fprintf(out, "%ld\n", counter);
        }
        prog_commits[id]++;
    }
}

static int check(void)
{
    rewind(out);
    long expect = 1, v, bad = 0;
    while (fscanf(out, "%ld", &v) == 1)
        bad += v != expect++;
    long lines = expect - 1;
    printf("result counter %ld lines %ld out_of_order %ld\n", counter, lines, bad);
    return counter == (long)prog_threads * OPS && lines == counter && bad == 0 ? 0 : 1;
}

__attribute__((constructor)) static void open_out(void)
{
    out = tmpfile();
    if (out == NULL)
        exit(2);
}

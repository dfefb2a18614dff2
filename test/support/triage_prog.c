/*
 * triage_prog.c - a traced program whose aborts have known causes, for
 * tmcheck's triage (test_triage, tmbench/triage-repeat):
 *   - `count_event` threads increment one global word, triage_hot (true
 *     conflicts among themselves);
 *   - two `note_side` threads each increment their own field of one
 *     16-byte struct, triage_pair.evens and triage_pair.odds (one lock
 *     stripe: false sharing), or with --padded those of triage_padded,
 *     whose fields lie on different stripes;
 *   - with --nap-ms N, the first count_event thread sleeps N ms once inside
 *     an attempt, after its read: an attempt descheduled on purpose, which
 *     aborts (the others write the word meanwhile).
 * The causes' sizes are set by design, not left to the scheduler: the
 * note_side threads stop once their site has aborted PAIR_ABORTS times,
 * the count_event threads go on (past --iters) until theirs has aborted
 * HOT_ABORTS times and while the nap lasts; all stop after DEADLINE_S.
 * Usage: triage_prog [--hot-threads N] [--iters N] [--padded] [--nap-ms N]
 * Never: prints anything but a one-line error (exit 2) on a bad option.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "test_util.h"
#include "tmtrace.h"

long triage_hot;
struct pair_s {
    long evens, odds;
} __attribute__((aligned(16))) triage_pair;
struct padded_s {
    long evens;
    char pad[112];
    long odds;
} __attribute__((aligned(128))) triage_padded;

#define PAIR_ABORTS 40
#define HOT_ABORTS 1000
#define DEADLINE_S 20

static int iters = 10000, padded, nap_ms;
static int nap_pending;   /* the first hot thread's one nap, still to take */
static int napping;       /* it is being taken: the other hot threads go on */
static int others_in;     /* another hot thread has committed: the napper is not
                           * alone, so its nap is in an attempt others overtake
                           * (a lone thread's attempt runs serially, and nobody
                           * would abort it) */
static time_t deadline;
static int hot_running;   /* count_event threads not done yet */

static void nap(int ms)
{
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

/* Work between the read and the write: the window in which another
 * count_event commits, so that the hot word is the main cause by design. */
static void spin(int n)
{
    for (volatile int k = 0; k < n; k++)
        ;
}

static void count_event(tmt_tx *tx, int napper)
{
    TMT_ATOMIC(tx, "count_event") {
        long v = tmt_read_long(tx, &triage_hot);
        if (napper && __atomic_load_n(&others_in, __ATOMIC_ACQUIRE) &&
            __atomic_exchange_n(&nap_pending, 0, __ATOMIC_ACQ_REL)) {
            nap(nap_ms);
            __atomic_store_n(&napping, 0, __ATOMIC_RELEASE);
        }
        spin(1000);
        tmt_write_long(tx, &triage_hot, v + 1);
    } TMT_END;
    if (!napper)
        __atomic_store_n(&others_in, 1, __ATOMIC_RELEASE);
}

static void note_side(tmt_tx *tx, long *field)
{
    TMT_ATOMIC(tx, "note_side") {
        long v = tmt_read_long(tx, field);
        spin(300);
        tmt_write_long(tx, field, v + 1);
    } TMT_END;
    spin(1000);   /* spread over the round, so that the two overlap now and then */
}

/* Go on: note_side's threads until their site's target (while count_event's
 * run: padded, they never reach it), count_event's for
 * --iters and then until theirs (and while the nap lasts); never past the
 * deadline. Checked every 64 transactions. */
static int go_on(int hot, int i)
{
    if (i % 64 || i == 0)
        return 1;
    if (time(NULL) >= deadline)
        return 0;
    if (!hot)
        return tu_site_aborts("note_side") < PAIR_ABORTS && __atomic_load_n(&hot_running, __ATOMIC_ACQUIRE) > 0;
    return i < iters || tu_site_aborts("count_event") < HOT_ABORTS || __atomic_load_n(&napping, __ATOMIC_ACQUIRE);
}

/* arg: 0 .. hot threads - 1: count_event; -1, -2: note_side's two fields. */
static void *worker(void *arg)
{
    intptr_t k = (intptr_t)arg;
    tmt_tx *tx = tmt_thread_enter();
    if (!tx)
        return NULL;
    long *field = k == -1 ? (padded ? &triage_padded.evens : &triage_pair.evens)
                          : (padded ? &triage_padded.odds : &triage_pair.odds);
    for (int i = 0; go_on(k >= 0, i); i++) {
        if (k < 0)
            note_side(tx, field);
        else
            count_event(tx, k == 0 && i == 100);
    }
    if (k >= 0)
        __atomic_sub_fetch(&hot_running, 1, __ATOMIC_RELEASE);
    tmt_thread_exit();
    return NULL;
}

static int int_arg(int argc, char **argv, int *i, int *out)
{
    char *end;
    if (*i + 1 >= argc)
        return -1;
    long v = strtol(argv[++*i], &end, 10);
    if (*end || v < 0 || v > 1000000)
        return -1;
    *out = (int)v;
    return 0;
}

int main(int argc, char **argv)
{
    int hot = 3;
    for (int i = 1; i < argc; i++) {
        int bad = 0;
        if (strcmp(argv[i], "--padded") == 0)
            padded = 1;
        else if (strcmp(argv[i], "--hot-threads") == 0)
            bad = int_arg(argc, argv, &i, &hot) < 0 || hot < 1 || hot > 64;
        else if (strcmp(argv[i], "--iters") == 0)
            bad = int_arg(argc, argv, &i, &iters) < 0;
        else if (strcmp(argv[i], "--nap-ms") == 0)
            bad = int_arg(argc, argv, &i, &nap_ms) < 0;
        else
            bad = 1;
        if (bad) {
            fprintf(stderr, "triage_prog: bad option or value: %s\n", argv[i]);
            return 2;
        }
    }
    nap_pending = napping = nap_ms > 0;
    others_in = hot == 1;   /* a lone hot thread naps without waiting for others */
    deadline = time(NULL) + DEADLINE_S;
    hot_running = hot;
    pthread_t t[66];
    int n = 0;
    for (intptr_t k = 0; k < hot + 2; k++)   /* count_event's threads first */
        if (pthread_create(&t[n], NULL, worker, (void *)(k < hot ? k : hot - 1 - k)) == 0)
            n++;
    for (int k = 0; k < n; k++)
        pthread_join(t[k], NULL);
    return tmt_shutdown() == 0 ? 0 : 1;
}

/*
 * itm_prog.h - the frame of the -fgnu-tm test programs: `prog THREADS`
 * runs worker(id) in THREADS threads, then check(); it prints
 * "commits N" (the committed outermost transactions the workers counted)
 * and "result ..." (what must be the same under libitm and libtmtrace-itm),
 * and exits 0 only when the program's own invariant holds. A program that
 * defines PROG_SETUP has it called before the threads start.
 */
#ifndef ITM_PROG_H
#define ITM_PROG_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define PROG_MAX_THREADS 16

static int prog_threads;
static long prog_commits[PROG_MAX_THREADS];

/* The program's parts. */
static void worker(int id);
static int check(void); /* prints the result line; 0 when the invariant holds */
#ifdef PROG_SETUP
static void PROG_SETUP(void);
#endif

static void *prog_run(void *arg)
{
    worker((int)(long)arg);
    return NULL;
}

/* A deterministic per-thread random sequence. */
static inline unsigned prog_rand(unsigned long *s)
{
    *s = *s * 6364136223846793005ul + 1442695040888963407ul;
    return (unsigned)(*s >> 33);
}

int main(int argc, char **argv)
{
    prog_threads = argc > 1 ? atoi(argv[1]) : 1;
    if (prog_threads < 1 || prog_threads > PROG_MAX_THREADS) {
        fprintf(stderr, "%s: THREADS must be 1..%d\n", argv[0], PROG_MAX_THREADS);
        return 2;
    }
#ifdef PROG_SETUP
    PROG_SETUP();
#endif
    pthread_t th[PROG_MAX_THREADS];
    for (long t = 0; t < prog_threads; t++)
        if (pthread_create(&th[t], NULL, prog_run, (void *)t) != 0)
            return 2;
    long commits = 0;
    for (int t = 0; t < prog_threads; t++) {
        pthread_join(th[t], NULL);
        commits += prog_commits[t];
    }
    printf("commits %ld\n", commits);
    return check() == 0 ? 0 : 1;
}

#endif

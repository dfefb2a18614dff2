/*
 * tl2_client.c - a program written for TL2's stm.h, built by test_compat_tl2
 * with exactly `cc -DSTM -I$DIR tl2_client.c -L$DIR -ltl2 -lpthread`.
 *
 * Several threads move amounts between records whose long, int and float
 * fields sit next to guard fields that no transaction writes; read-only
 * audits check the totals inside transactions. The thread descriptors are
 * created and freed once per parallel region, several regions per run.
 * Prints the final totals and guard values; exits 0 only when all hold.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#include "stm.h"

#define NREC 64
#define NTHREADS 4
#define ROUNDS 3
#define OPS 20000
#define GUARD_INT 0x5A5A5A5A
#define GUARD_FLOAT 12345.5f

struct record {
    long balance;     /* STM_READ / STM_WRITE on a long */
    int count;        /* STM_READ / STM_WRITE on an int ... */
    int guard_int;    /* ... whose neighbour no transaction writes */
    float weight;     /* STM_READ_F / STM_WRITE_F on a float ... */
    float guard_float;/* ... and its untouched neighbour */
    struct record *next; /* STM_READ_P / STM_WRITE_P */
};

static struct record recs[NREC];
static volatile long bad_audits;
/* Transfers per thread: allocated by the main thread before TxOnce and any
 * thread descriptor, as STAMP's vacation builds its shared tables. */
static long *transfers;

static unsigned long next_rand(unsigned long *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void *worker(void *arg)
{
    long id = (long)(intptr_t)arg;
    unsigned long rng = 0x9E3779B97F4A7C15UL * (unsigned long)(id + 1);
    STM_THREAD_T *Self = STM_NEW_THREAD();
    STM_INIT_THREAD(Self, id);
    for (int op = 0; op < OPS; op++) {
        int a = (int)(next_rand(&rng) % NREC);
        int b = (int)((unsigned long)a + 1 + next_rand(&rng) % (NREC - 1)) % NREC; /* b != a */
        if (next_rand(&rng) % 10 == 0) {
            long total;
            int count;
            float weight;
            STM_BEGIN_RD();
            total = 0;
            count = 0;
            weight = 0;
            for (int i = 0; i < NREC; i++) {
                total += (long)STM_READ(recs[i].balance);
                count += (int)STM_READ(recs[i].count);
                weight += STM_READ_F(recs[i].weight);
            }
            STM_END();
            if (total != 1000L * NREC || count != 10 * NREC || weight != 2.0f * NREC)
                __atomic_add_fetch(&bad_audits, 1, __ATOMIC_RELAXED);
        } else {
            STM_BEGIN_WR();
            long x = (long)STM_READ(recs[a].balance);
            long y = (long)STM_READ(recs[b].balance);
            STM_WRITE(recs[a].balance, x - 7);
            STM_WRITE(recs[b].balance, y + 7);
            int c = (int)STM_READ(recs[a].count);
            int d = (int)STM_READ(recs[b].count);
            STM_WRITE(recs[a].count, c - 1);
            STM_WRITE(recs[b].count, d + 1);
            /* Powers of two keep float sums exact, whatever the order. */
            float f = STM_READ_F(recs[a].weight);
            float g = STM_READ_F(recs[b].weight);
            STM_WRITE_F(recs[a].weight, f - 0.25f);
            STM_WRITE_F(recs[b].weight, g + 0.25f);
            struct record *pa = STM_READ_P(recs[a].next);
            struct record *pb = STM_READ_P(recs[b].next);
            STM_WRITE_P(recs[a].next, pb);
            STM_WRITE_P(recs[b].next, pa);
            STM_WRITE(transfers[id], (long)STM_READ(transfers[id]) + 1);
            STM_END();
        }
    }
    STM_FREE_THREAD(Self);
    return NULL;
}

/* TL2's own protocol, without stm.h's macros: setjmp, then TxStart. Each
 * call is a site of its own. */
static void plain_txstart(Thread *Self, volatile intptr_t *cell)
{
    jmp_buf env;
    int ro = 0;
    setjmp(env);
    TxStart(Self, &env, &ro);
    TxStore(Self, cell, TxLoad(Self, cell) + 1);
    TxCommit(Self);
    setjmp(env);
    TxStart(Self, &env, &ro);
    TxStore(Self, cell, TxLoad(Self, cell) + 1);
    TxCommit(Self);
}

int main(void)
{
    transfers = calloc(NTHREADS, sizeof *transfers);
    if (!transfers)
        return 1;
    STM_STARTUP();
    for (int i = 0; i < NREC; i++) {
        recs[i].balance = 1000;
        recs[i].count = 10;
        recs[i].guard_int = GUARD_INT;
        recs[i].weight = 2.0f;
        recs[i].guard_float = GUARD_FLOAT;
        recs[i].next = &recs[i];
    }
    for (int round = 0; round < ROUNDS; round++) {
        pthread_t th[NTHREADS];
        for (long t = 0; t < NTHREADS; t++)
            pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t);
        for (int t = 0; t < NTHREADS; t++)
            pthread_join(th[t], NULL);
    }
    /* Transactional malloc/free through the stm.h names. */
    STM_THREAD_T *Self = STM_NEW_THREAD();
    STM_INIT_THREAD(Self, 0);
    long *cell = malloc(sizeof *cell);
    *cell = 0;
    STM_BEGIN_WR();
    long *fresh = STM_MALLOC(sizeof *fresh);
    *fresh = 41;
    STM_WRITE(*cell, 1 + *fresh);
    STM_FREE(fresh);
    STM_END();
    long cell_value = *cell;
    free(cell);
    /* TxStoreLocal: a thread-private store that an abort undoes. */
    static volatile intptr_t local = 5;
    static volatile int tries = 0;
    volatile long local_seen = -1;
    STM_BEGIN_WR();
    if (tries++ == 0) {
        TxStoreLocal(Self, &local, 99);
        STM_RESTART();
    }
    local_seen = local;
    TxStoreLocal(Self, &local, 7);
    STM_END();
    int local_ok = local_seen == 5 && local == 7;
    static volatile intptr_t plain = 0;
    plain_txstart(Self, &plain);
    STM_FREE_THREAD(Self);

    long total = 0, count = 0;
    float weight = 0;
    int guard_int_ok = 1, guard_float_ok = 1, links_ok = 1;
    int seen[NREC] = { 0 };
    for (int i = 0; i < NREC; i++) {
        total += recs[i].balance;
        count += recs[i].count;
        weight += recs[i].weight;
        guard_int_ok &= recs[i].guard_int == GUARD_INT;
        guard_float_ok &= recs[i].guard_float == GUARD_FLOAT;
        long k = recs[i].next - recs;
        if (k < 0 || k >= NREC || seen[k]++)
            links_ok = 0;
    }
    long moves = 0;
    for (int t = 0; t < NTHREADS; t++)
        moves += transfers[t];
    free(transfers);
    printf("plain=%ld\n", (long)plain);
    printf("total=%ld count=%ld weight=%.2f guard_int=%s guard_float=%s links=%s bad_audits=%ld cell=%ld local=%s\n",
           total, count, (double)weight, guard_int_ok ? "untouched" : "CHANGED",
           guard_float_ok ? "untouched" : "CHANGED", links_ok ? "permutation" : "BROKEN", bad_audits,
           cell_value, local_ok ? "restored" : "WRONG");
    STM_SHUTDOWN();
    int ok = total == 1000L * NREC && count == 10L * NREC && weight == 2.0f * NREC && guard_int_ok &&
             guard_float_ok && links_ok && bad_audits == 0 && cell_value == 42 && local_ok &&
             moves > 0 && moves < (long)ROUNDS * NTHREADS * OPS;
    return ok ? 0 : 1;
}

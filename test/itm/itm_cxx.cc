// C++: a stack whose nodes are made with new and freed with delete inside
// transactions, and an exception thrown out of a transaction (which commits
// the transaction's writes, as GCC's TM specifies).
#include <pthread.h>
#include <cstdio>
#include <cstdlib>

#define PROG_MAX_THREADS 16
#define OPS 3000

struct Node {
    long v;
    Node *next;
};

static Node *top;
static long pushed, popped, popped_sum, counter, thrown;
static long commits[PROG_MAX_THREADS];
static int threads;

static void *worker(void *arg)
{
    int id = (int)(long)arg;
    for (int i = 0; i < OPS; i++) {
        __transaction_atomic {
            Node *n = new Node;
            n->v = i;
            n->next = top;
            top = n;
            pushed += 1;
        }
        commits[id]++;
        if (i % 2 == 1) {
            long v = -1;
            __transaction_atomic {
                Node *n = top;
                if (n) {
                    top = n->next;
                    v = n->v;
                    delete n;
                    popped += 1;
                }
            }
            commits[id]++;
            if (v >= 0)
                __atomic_add_fetch(&popped_sum, 1, __ATOMIC_RELAXED);
        }
        try {
            __transaction_atomic {
                counter += 1;
                if (i % 4 == 0)
                    throw i;
            }
        } catch (int) {
            __atomic_add_fetch(&thrown, 1, __ATOMIC_RELAXED);
        }
        commits[id]++;
    }
    return nullptr;
}

int main(int argc, char **argv)
{
    threads = argc > 1 ? atoi(argv[1]) : 1;
    if (threads < 1 || threads > PROG_MAX_THREADS)
        return 2;
    pthread_t th[PROG_MAX_THREADS];
    for (long t = 0; t < threads; t++)
        pthread_create(&th[t], nullptr, worker, (void *)t);
    long c = 0;
    for (int t = 0; t < threads; t++) {
        pthread_join(th[t], nullptr);
        c += commits[t];
    }
    long left = 0;
    for (Node *n = top; n; n = n->next)
        left++;
    long n = (long)threads * OPS;
    std::printf("commits %ld\n", c);
    std::printf("result pushed %ld popped %ld left %ld counter %ld thrown %ld\n", pushed, popped, left, counter,
                thrown);
    return pushed == n && popped == n / 2 && popped_sum == popped && left == n - n / 2 && counter == n &&
                   thrown == (long)threads * ((OPS + 3) / 4)
               ? 0
               : 1;
}

/*
 * stm.c - word-based TL2 (see stm.h and docs/design.md).
 *
 * Owns: the version clock, the stripe table and everything in tx->stm. Every
 * access to memory that other threads write concurrently (data words, stripe
 * words, the clock) goes through __atomic builtins: on x86 these are the plain
 * moves TL2 needs, and they keep the thread sanitizer's model exact. Must
 * never call the tracer or allocate on the read/write fast paths.
 *
 * Stripe word: unlocked = version << 1; locked = address of the owner's
 * struct tx_lockrec | 1.
 */
#include "stm.h"
#include "stm_barrier.h"

#include <cpuid.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "config.h"
#include "error.h"
#include "tx_undo.h"
#include "tx_upcall.h"
#include "tx_util.h"

struct stm_clock_line stm_clock;
struct stm_serial_line stm_serial;

uintptr_t *stm_stripes; /* stm_barrier.h reads them on every access */
unsigned stm_log2;
uint64_t stm_mask;
unsigned stm_shift;
int stm_prefetchw;

/* 1 once membarrier(2) is registered for the process: a begin then announces
 * its start version with a plain store, and the rare threads that must see
 * every announcement (reclamation, the serial drain) pay for the fence with
 * stm_fence_others(). 0: every begin fences itself (also when asked to,
 * stm_fence_begins: stm_self_fenced). */
int stm_asym_fence;
static int stm_self_fenced;

void stm_fence_begins(void)
{
    stm_self_fenced = 1;
    stm_asym_fence = 0;
}

#define STM_BACKOFF_MAX_LOG2 16 /* backoff: at most 2^16 pauses per abort */

#ifdef TMT_TEST_HOOKS
int stm_test_fail_allocs;
unsigned long stm_test_fences;
static inline int stm_test_fail_alloc(void) { return stm_test_fail_allocs; }
#else
static inline int stm_test_fail_alloc(void) { return 0; }
#endif

static long stm_membarrier(int cmd) { return syscall(__NR_membarrier, cmd, 0, 0); }

void stm_fence_others(void)
{
#ifdef TMT_TEST_HOOKS
    __atomic_fetch_add(&stm_test_fences, 1, __ATOMIC_RELAXED);
#endif
    if (stm_asym_fence)
        (void)stm_membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED); /* cannot fail once registered */
}

#define STM_HUGE_PAGE ((size_t)2 << 20)

/* The stripe table: mapped on 2 MiB boundaries, asked for transparent huge
 * pages and populated now. Every access checks a stripe at a hashed, i.e.
 * random, place: with 4 KiB pages the table costs a TLB miss on most of
 * them, and its first touches (page faults: docs/design.md, "TL2 as
 * built") would land in the program's transactions. Zero-filled, like
 * calloc. */
static uintptr_t *stm_table_map(size_t bytes)
{
    size_t span = bytes + STM_HUGE_PAGE;
    char *p = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    char *table = (char *)(((uintptr_t)p + STM_HUGE_PAGE - 1) & ~(uintptr_t)(STM_HUGE_PAGE - 1));
    if (table > p)
        munmap(p, (size_t)(table - p));
    if (table + bytes < p + span)
        munmap(table + bytes, (size_t)(p + span - (table + bytes)));
    (void)madvise(table, bytes, MADV_HUGEPAGE); /* a hint: without THP, 4 KiB pages */
    for (size_t off = 0; off < bytes; off += 4096)
        ((volatile char *)table)[off] = 0;
    return (uintptr_t *)table;
}

int stm_init(void)
{
    unsigned a, b, c, d;
    stm_prefetchw = __get_cpuid(0x80000001u, &a, &b, &c, &d) && (c & (1u << 8)); /* PRFCHW */
    if (!stm_asym_fence && !stm_self_fenced && stm_membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0)
        stm_asym_fence = 1;
    unsigned log2 = (unsigned)config.stripes_log2;
    /* A new width needs no new table: no transaction runs now, so every
     * attempt after this reads a clock at or above any version stored. */
    stm_shift = (unsigned)config.stripe_shift;
    if (stm_stripes != NULL && log2 == stm_log2)
        return 0;
    /* Only reached before any transaction ran (tmt_init) or with a new table
     * size requested while no thread is inside a transaction. */
    size_t bytes = ((size_t)1 << log2) * sizeof *stm_stripes;
    uintptr_t *table = stm_table_map(bytes);
    if (table == NULL)
        return error_set("TMTRACE_STRIPES=%u: cannot map %zu bytes of stripes", log2, bytes);
    if (stm_stripes != NULL)
        munmap(stm_stripes, ((size_t)1 << stm_log2) * sizeof *stm_stripes);
    stm_stripes = table;
    stm_log2 = log2;
    stm_mask = ((uint64_t)1 << log2) - 1;
    return 0;
}

#ifdef TMT_TEST_HOOKS
unsigned stm_stripes_log2(void) { return stm_log2; }

unsigned stm_stripe_shift(void) { return stm_shift; }

uint64_t stm_stripe_index(uintptr_t addr) { return stm_hash(addr); }

uintptr_t *stm_stripe_word(uintptr_t addr) { return stm_stripe(addr); }
#endif

uint64_t stm_clock_now(void) { return __atomic_load_n(&stm_clock.now, __ATOMIC_ACQUIRE); }

/* ---- the redo log's index -------------------------------------------------- */

/* Slot of word w in an index of 2^(64 - shift) slots (Fibonacci hashing:
 * the multiplication spreads words of one object over the table, the top
 * bits are the best mixed; w's three low bits are 0, so the product is that
 * of w >> 3 moved up three bits, as well mixed, one shift fewer). */
static inline uint32_t stm_slot_hash(uintptr_t w, uint32_t shift)
{
    return (uint32_t)(((uint64_t)w * 0x9E3779B97F4A7C15ull) >> shift);
}

/* The index slot of word w: the live one that holds it, or the free one
 * where its probe ends (where an append of w goes: the one probe serves a
 * lookup and the insertion after it). */
static inline __attribute__((always_inline)) uint32_t stm_wslot(const struct tx_stm *s, uintptr_t w)
{
    const struct tx_wslot *slots = s->wslots;
    uint32_t gen = s->wgen, mask = s->wslot_mask;
    uint32_t i = stm_slot_hash(w, s->wshift);
    while (slots[i].gen == gen && slots[i].addr != w)
        i = (i + 1) & mask;
    return i;
}

static inline int stm_wslot_live(const struct tx_stm *s, uint32_t i) { return s->wslots[i].gen == s->wgen; }

/* Redo-log entry idx enters the index at slot i (free, where its probe ends). */
static inline void stm_windex_at(struct tx_stm *s, uint32_t i, uint32_t idx)
{
    s->wslots[i].addr = s->wset[idx].addr;
    s->wslots[i].idx = idx;
    s->wslots[i].gen = s->wgen;
}

static inline void stm_windex(struct tx_stm *s, uint32_t idx) { stm_windex_at(s, stm_wslot(s, s->wset[idx].addr), idx); }

/* The log outgrows STM_WLINEAR: a new generation makes every slot of
 * earlier attempts stale (a begin clears nothing), then the entries so far
 * join the index. */
static void stm_windex_start(struct tx_stm *s)
{
    if (TX_UNLIKELY(++s->wgen == 0)) {
        memset(s->wslots, 0, ((size_t)s->wslot_mask + 1) * sizeof *s->wslots);
        s->wgen = 1;
    }
    for (uint32_t i = 0; i < s->wn; i++)
        stm_windex(s, i);
}

/* The redo-log entry of word w, or NULL. Short logs (most transactions') are
 * searched linearly and never indexed, so appending costs no hashing; from
 * the entry past STM_WLINEAR on, every append takes the out-of-line path
 * (wlimit) and enters its word in the index at once, so a lookup never has
 * to bring the index up to date first and makes no call. Reads of words the
 * attempt wrote are common in code that builds a structure and then walks
 * it, and so are bloom filter false positives that must be told apart
 * (STAMP yada's counts: docs/design.md, "Redo log and read-after-write"). */
static inline __attribute__((always_inline)) struct tx_wentry *stm_wfind(struct tx_stm *s, uintptr_t w)
{
    struct tx_wentry *ws = s->wset;
    uint32_t wn = s->wn;
    /* Read-modify-write code (x = x + d, field by field) looks up the word
     * it wrote last: answer that without a search (what kmeans spent on the
     * search: docs/design.md, "Redo log and read-after-write"). */
    if (wn > 0 && ws[wn - 1].addr == w)
        return &ws[wn - 1];
    if (wn <= STM_WLINEAR) {
        for (uint32_t i = 0; i < wn; i++)
            if (ws[i].addr == w)
                return &ws[i];
        return NULL;
    }
    const struct tx_wslot *slots = s->wslots;
    uint32_t gen = s->wgen, mask = s->wslot_mask;
    for (uint32_t i = stm_slot_hash(w, s->wshift);; i = (i + 1) & mask) {
        if (slots[i].gen != gen)
            return NULL;
        if (slots[i].addr == w)
            return &ws[slots[i].idx];
    }
}

/* Cold: the redo log is full. Grows it and keeps the index at most half
 * full, with every entry re-entered when the log is past STM_WLINEAR. */
__attribute__((noinline)) static void stm_wgrow(struct tx_stm *s)
{
    if (s->wn == s->wcap)
        s->wset = tx_grow(s->wset, &s->wcap, sizeof *s->wset, STM_WLINEAR);
    uint32_t want = s->wslot_mask ? 64 - s->wshift : 6;
    while ((1u << want) < 2 * s->wcap)
        want++;
    if (s->wslots != NULL && want == 64 - s->wshift)
        return;
    free(s->wslots);
    s->wslots = stm_test_fail_alloc() ? NULL : calloc((size_t)1 << want, sizeof *s->wslots);
    if (s->wslots == NULL)
        tx_out_of_memory("the redo log's index", ((size_t)1 << want) * sizeof *s->wslots);
    s->wshift = 64 - want;
    s->wslot_mask = (1u << want) - 1;
    s->wgen = 0;
    if (s->wn > STM_WLINEAR)
        stm_windex_start(s);
}

__attribute__((noinline)) static void stm_rgrow(struct tx_stm *s)
{
    s->rset = tx_grow(s->rset, &s->rcap, sizeof *s->rset, 64);
}

/* ---- begin ------------------------------------------------------------------ */

static void stm_serial_spin(void)
{
    for (unsigned spins = 1; stm_serial_owner(__ATOMIC_ACQUIRE) != 0; spins++) {
        tx_pause();
        if ((spins & 255) == 0)
            sched_yield(); /* the serial attempt may need this core */
    }
}

void stm_lone_wait_out(void)
{
    stm_fence_others();
    for (unsigned spins = 1; __atomic_load_n(&stm_serial.lone, __ATOMIC_ACQUIRE) != 0; spins++) {
        tx_pause();
        if ((spins & 255) == 0)
            sched_yield(); /* the lone attempt may need this core */
    }
}

/* A serial attempt holds the lock: step back (no start version announced,
 * so its drain does not wait for us), wait, announce again. */
void stm_serial_wait(struct tx_stm *s)
{
    do {
        __atomic_store_n(&s->active_rv, TX_IDLE | s->rv, __ATOMIC_RELEASE);
        stm_serial_spin();
        s->rv = __atomic_load_n(&stm_clock.now, __ATOMIC_ACQUIRE);
        __atomic_store_n(&s->active_rv, s->rv, __ATOMIC_SEQ_CST);
    } while (stm_serial_owner(__ATOMIC_SEQ_CST) != 0);
}

void stm_thread_enter(struct tmt_tx *tx)
{
    struct tx_stm *s = &tx->stm;
    s->gate = UINT64_MAX;
    if (s->wslots == NULL)
        stm_wgrow(s);
    if (s->lcap < s->wcap)
        stm_lgrow(s); /* stm_commit_inline's path for one or two words needs two */
    if (s->rcap == 0)
        stm_rgrow(s);
}

/* ---- reads: the slow halves (fast ones in stm_barrier.h) ------------------- */

/* What an aborting attempt found on a locked stripe, for the abort record
 * (tf_abort_held: the holder's thread id and attempt), so that tmcheck can
 * name the culprit by identity. The lock record stays allocated while its
 * descriptor lives, so the loads are safe; they are stale if the lock was
 * released since (tmcheck cross-checks with time). */
static uint64_t stm_lock_holder(uintptr_t v)
{
    const struct tx_lockrec *r = (const struct tx_lockrec *)(v & ~(uintptr_t)1);
    /* The flag again: never 0 (what stm_lock_one returns for "locked it"),
     * even from a record that names no holder. */
    return __atomic_load_n(&r->held, __ATOMIC_RELAXED) | TF_ABORT_HELD;
}

/* A conflict ends the attempt: the STM undoes its own part, then the
 * common restart path records the abort and restarts (tx_upcall.h); it never
 * calls back into the STM. */
__attribute__((noreturn, noinline, cold)) static void stm_abort(struct tmt_tx *tx, unsigned reason, uintptr_t where,
                                                               uint64_t found)
{
    stm_rollback(tx);
    tx_restart(tx, reason, where, found);
}

/* A read's conflict ends the attempt: READ_LOCKED when either stripe load
 * found a lock (the retry waits for its release, stm_backoff_wait), else
 * READ_VERSION with the version found. `ret` is stm_read_slow's return
 * address: the program's call of the access unless access_pc names it. */
__attribute__((noreturn, noinline, cold)) static void stm_read_conflict(struct tmt_tx *tx, uintptr_t a, uintptr_t v1,
                                                                       uintptr_t v2, uint64_t ret)
{
    tx->stm.abort_pc = tx->stm.access_pc ? tx->stm.access_pc : ret;
    tx->stm.access_pc = 0;
    if ((v1 | v2) & 1) {
        tx->stm.busy_stripe = stm_stripe(a);
        stm_abort(tx, TMT_ABORT_READ_LOCKED, a, stm_lock_holder((v1 & 1) ? v1 : v2));
    }
    /* The version found: the later of the two loads (the one that failed). */
    stm_abort(tx, TMT_ABORT_READ_VERSION, a, (v1 != v2 ? v2 : v1) >> 1);
}

/* Polls a locked stripe until its holder releases it, as long as a commit
 * waits for a busy stripe (STM_LOCK_SPINS polls); 1 when it was released. */
static int stm_wait_unlocked(uintptr_t *stripe)
{
    for (unsigned spins = 0; spins < STM_LOCK_SPINS; spins++) {
        if (!(__atomic_load_n(stripe, __ATOMIC_RELAXED) & 1))
            return 1;
#ifdef TMT_TEST_HOOKS
        if (stm_test_busy_hook)
            stm_test_busy_hook(stripe, spins);
#endif
        tx_pause();
    }
    return !(__atomic_load_n(stripe, __ATOMIC_RELAXED) & 1);
}

static inline int stm_validate(struct tx_stm *s, uintptr_t *bad, uint64_t *found);

/* Snapshot extension: when every stripe read so far is still unlocked and at
 * or below rv, those reads hold at the clock's present as well, so rv moves
 * there and the attempt reads on instead of aborting on a newer version
 * (TinySTM's LSA does the same). The clock is read first: a commit it counts
 * locked its stripes before taking its version, so validation sees them
 * locked or newer. Raising the announced start version afterwards is safe
 * for reclamation (txmem.c): a block unlinked by a commit at or below the
 * new rv was reachable only through words that commit wrote, and this
 * attempt read none of them. A read-only attempt keeps no read set to check,
 * so it cannot extend. */
static int stm_extend(struct tx_stm *s)
{
    if (s->ro)
        return 0;
    uint64_t now = __atomic_load_n(&stm_clock.now, __ATOMIC_ACQUIRE);
    uintptr_t bad;
    uint64_t found;
    if (stm_validate(s, &bad, &found) != 0)
        return 0;
    s->rv = now;
    __atomic_store_n(&s->active_rv, now, __ATOMIC_RELEASE);
    return 1;
}

/* Each extension needs a commit since the previous one: a read that keeps
 * meeting newer versions is in a hot spot, where aborting and backing off
 * does better than chasing the clock. */
#define STM_READ_TRIES 4

/* The accessors reach stm_read_slow by tail calls (jmp), so its return
 * address is the program's call of tmt_read_*: where the conflict was
 * found, taken only once it is found, at no cost to the reads that do not
 * abort. */
#define STM_CALLER_PC() ((uint64_t)(uintptr_t)__builtin_return_address(0))

uint64_t stm_read_slow(struct tmt_tx *tx, uintptr_t a, unsigned size)
{
    struct tx_stm *s = &tx->stm;
    uintptr_t *stripe = stm_stripe(a);
    for (unsigned tries = 0;; tries++) {
        uintptr_t v1 = __atomic_load_n(stripe, __ATOMIC_ACQUIRE);
        uint64_t val = tx_mem_load(a, size);
        uintptr_t v2 = __atomic_load_n(stripe, __ATOMIC_ACQUIRE);
        if (v1 == v2 && stm_word_version(v1) <= s->rv)
            return stm_rset_take(tx, a, val);
        if (tries == STM_READ_TRIES)
            stm_read_conflict(tx, a, v1, v2, STM_CALLER_PC());
        if ((v1 | v2) & 1) {
            /* A committer holds it: the version it leaves is what decides. */
            if (!stm_wait_unlocked(stripe))
                stm_read_conflict(tx, a, v1, v2, STM_CALLER_PC());
        } else if (v1 == v2 && !stm_extend(s)) {
            stm_read_conflict(tx, a, v1, v2, STM_CALLER_PC());
        }
    }
}

/* Cold: the read set is full. Grows it, appends `a` and hands `val` back, so
 * that the caller's fast path ends in a tail call and keeps nothing live
 * across a call (no callee-saved registers to spill on every read). */
uint64_t stm_rset_push_grow(struct tmt_tx *tx, uintptr_t a, uint64_t val)
{
    struct tx_stm *s = &tx->stm;
    stm_rgrow(s);
    s->rset[s->rn++] = a;
    return val;
}

/* A read of a word part of which this transaction wrote: memory for the
 * rest (none of it when the read's bytes are all unwritten). */
__attribute__((noinline)) static uint64_t stm_read_part(struct tmt_tx *tx, uintptr_t a, unsigned size,
                                                        const struct tx_wentry *e)
{
    uint32_t mine = e->mask & stm_byte_mask(a, size);
    uint64_t value = e->value;
    if (mine == 0)
        return stm_load_checked(tx, a, size);
    /* A call, not a tail call: the program's call of the access is this
     * function's return address (tail calls from the accessor), unless a
     * traced read named it already. */
    int mark = tx->stm.access_pc == 0;
    if (mark)
        tx->stm.access_pc = STM_CALLER_PC();
    uint64_t mem = stm_load_checked(tx, a, size) << (8 * (a & 7u));
    if (mark)
        tx->stm.access_pc = 0;
    uint64_t own = stm_bits(mine);
    return stm_extract((mem & ~own) | (value & own), a, size);
}

/* A read of a word this attempt wrote (or a bloom filter false positive):
 * off the fast path, which then needs no registers for the redo log. The
 * usual case (the word found, all its bytes written) makes no call. One
 * copy per size, so that the masks and the extraction fold to constants. */
static inline __attribute__((always_inline)) uint64_t stm_read_own_sized(struct tmt_tx *tx, uintptr_t a,
                                                                         unsigned size)
{
    if (size == 8)
        a &= ~(uintptr_t)7; /* aligned by contract: the masks fold away */
    struct tx_wentry *e = stm_wfind(&tx->stm, a & ~(uintptr_t)7);
    if (e == NULL)
        return stm_load_checked(tx, a, size);
    uint32_t need = stm_byte_mask(a, size);
    if (TX_UNLIKELY((e->mask & need) != need))
        return stm_read_part(tx, a, size, e);
    return stm_extract(e->value, a, size);
}

uint64_t stm_read_own_1(struct tmt_tx *tx, uintptr_t a) { return stm_read_own_sized(tx, a, 1); }
uint64_t stm_read_own_4(struct tmt_tx *tx, uintptr_t a) { return stm_read_own_sized(tx, a, 4); }
uint64_t stm_read_own_8(struct tmt_tx *tx, uintptr_t a) { return stm_read_own_sized(tx, a, 8); }

/* ---- writes: the slow halves (fast ones in stm_barrier.h) ------------------ */

/* The rare appends at or past wlimit: to a full log, the one that makes the
 * log outgrow STM_WLINEAR (its index starts), and a read-only attempt's. */
__attribute__((noinline, cold)) static void stm_wappend_rare(struct tmt_tx *tx, uintptr_t w, uint64_t val,
                                                             uint32_t bytes, uint64_t bb)
{
    struct tx_stm *s = &tx->stm;
    if (s->wn == s->wcap)
        stm_wgrow(s); /* the index always has >= 2 * wcap slots */
    uint32_t idx = s->wn;
    stm_wput(s, idx, w, val, bytes, bb);
    if (idx == STM_WLINEAR)
        stm_windex_start(s);
    else if (idx > STM_WLINEAR)
        stm_windex(s, idx);
}

/* An append at or past wlimit: past STM_WLINEAR entries the word also
 * enters the index, so that lookups find the index up to date (stm_wfind).
 * The common case calls nothing. */
void stm_wappend_slow(struct tmt_tx *tx, uintptr_t w, uint64_t val, uint32_t bytes, uint64_t bb)
{
    struct tx_stm *s = &tx->stm;
    uint32_t idx = s->wn;
    if (TX_UNLIKELY(idx <= STM_WLINEAR || idx == s->wcap)) {
        stm_wappend_rare(tx, w, val, bytes, bb);
        return;
    }
    stm_wput(s, idx, w, val, bytes, bb);
    stm_windex(s, idx);
}

/* A write to a word the bloom filter says this attempt may have written:
 * merges into its entry, or appends (a false positive). Out of line. */
void stm_write_again(struct tmt_tx *tx, uintptr_t w, uint64_t val, uint64_t bits, uint32_t bytes, uint64_t bb)
{
    struct tx_stm *s = &tx->stm;
    uint32_t wn = s->wn;
    struct tx_wentry *e;
    if (wn > STM_WLINEAR && s->wset[wn - 1].addr != w) {
        /* An indexed log: a word the probe does not find is appended and
         * takes the free slot the probe ended on, without a second probe
         * (a full log grows and re-indexes, stm_wappend_slow). */
        uint32_t i = stm_wslot(s, w);
        if (!stm_wslot_live(s, i)) {
            if (TX_UNLIKELY(wn == s->wcap)) {
                stm_wappend_slow(tx, w, val, bytes, bb);
                return;
            }
            stm_wput(s, wn, w, val, bytes, bb);
            stm_windex_at(s, i, wn);
            return;
        }
        e = &s->wset[s->wslots[i].idx];
    } else {
        e = stm_wfind(s, w);
        if (e == NULL) {
            stm_wappend(tx, w, val, bytes, bb);
            return;
        }
    }
    e->value = (e->value & ~bits) | val;
    e->mask |= bytes;
}

/* ---- commit ----------------------------------------------------------------- */

static inline int stm_lock_is_mine(const struct tx_stm *s, uintptr_t v)
{
    const struct tx_lockrec *r = (const struct tx_lockrec *)(v & ~(uintptr_t)1);
    return (v & 1) && r >= s->locks && r < s->locks + s->nlocked;
}

/* Unlocks every stripe this commit locked with the version each lock
 * replaced (an abort). */
static void stm_release_old(struct tx_stm *s)
{
    for (const struct tx_lockrec *r = s->locks, *end = r + s->nlocked; r != end; r++)
        __atomic_store_n(r->stripe, r->old, __ATOMIC_RELEASE);
    s->nlocked = 0;
}

/* Locks the stripe of one redo-log entry; 0 on success, else what the
 * abort record says about the holder (tf_abort_held) once the stripe stayed
 * busy. */
static uint64_t stm_lock_one(struct tx_stm *s, uintptr_t addr, uint64_t held)
{
    uintptr_t *stripe = stm_stripe(addr);
    for (unsigned spins = 0;; spins++) {
        uintptr_t v = __atomic_load_n(stripe, __ATOMIC_ACQUIRE);
        if (v & 1) {
            if (stm_lock_is_mine(s, v))
                return 0;
            if (spins >= STM_LOCK_SPINS)
                return stm_lock_holder(v);
            tx_pause();
            continue;
        }
        struct tx_lockrec *r = &s->locks[s->nlocked];
        r->stripe = stripe;
        r->old = v;
        __atomic_store_n(&r->held, held, __ATOMIC_RELAXED);
        /* Release as well as acquire: a thread that finds the stripe locked
         * follows the word to this record and reads its holder, so the record
         * (fresh memory after stm_lgrow) must be published with the lock.
         * On x86 the locked CAS is a full barrier either way. */
        if (__atomic_compare_exchange_n(stripe, &v, (uintptr_t)r | 1, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED)) {
            s->nlocked++;
            return 0;
        }
    }
}

/* Every stripe read is still at a version <= rv and not locked by others.
 * On failure: the address read and what the abort record says about its
 * stripe (the holder, tf_abort_held, or the newer version found). Past one
 * thread every update commit runs this over its whole read set (another
 * commit took a version meanwhile), so the loop keeps the set's bounds, rv
 * and the table in registers (each acquire load would make the compiler
 * reload them, entry by entry) and tests an entry with one comparison, a
 * lock showing as a version above every rv (stm_word_version). Inlined
 * into both callers, as it was before it grew: the commit's validation makes
 * no call. */
static inline __attribute__((always_inline)) int stm_validate(struct tx_stm *s, uintptr_t *bad, uint64_t *found)
{
    const struct stm_table t = stm_table_now();
    const uint64_t rv = s->rv;
    for (const uintptr_t *p = s->rset, *end = p + s->rn; p != end; p++) {
        uintptr_t v = __atomic_load_n(stm_table_stripe(&t, *p), __ATOMIC_ACQUIRE);
        if (TX_LIKELY(stm_word_version(v) <= rv))
            continue;
        if (v & 1) {
            if (!stm_lock_is_mine(s, v)) {
                *bad = *p;
                *found = stm_lock_holder(v);
                return -1;
            }
            v = ((const struct tx_lockrec *)(v & ~(uintptr_t)1))->old;
            if ((v >> 1) <= rv)
                continue;
        }
        *bad = *p;
        *found = v >> 1;
        return -1;
    }
    return 0;
}

/* Exact sizes: a partly written word stores only the bytes this
 * transaction wrote, never rewriting one it did not. Out of line: most
 * entries are whole words. */
__attribute__((noinline)) void stm_writeback_part(const struct tx_wentry *e)
{
    for (unsigned half = 0; half < 2; half++) {
        uint32_t hm = (e->mask >> (4 * half)) & 0xfu;
        if (hm == 0xfu) {
            tx_mem_store(e->addr + 4 * half, e->value >> (32 * half), 4);
            continue;
        }
        for (unsigned b = 0; b < 4; b++)
            if (hm & (1u << b))
                tx_mem_store(e->addr + 4 * half + b, e->value >> (8 * (4 * half + b)), 1);
    }
}

/* A larger lock array. The old one is retired, not freed: another thread
 * may be reading a holder through a stripe word it saw a moment ago. */
__attribute__((noinline, cold)) void stm_lgrow(struct tx_stm *s)
{
    struct tx_lockrec **ret = realloc(s->retired, (s->nretired + 1) * sizeof *ret);
    if (ret == NULL)
        tx_out_of_memory("the list of retired lock arrays", (s->nretired + 1) * sizeof *ret);
    s->retired = ret;
    struct tx_lockrec *locks = stm_test_fail_alloc() ? NULL : malloc((size_t)s->wcap * sizeof *locks);
    if (locks == NULL)
        tx_out_of_memory("the commit's lock array", (size_t)s->wcap * sizeof *locks);
    if (s->locks)
        s->retired[s->nretired++] = s->locks;
    s->locks = locks;
    s->lcap = s->wcap;
}

#ifdef TMT_TEST_HOOKS
void (*stm_test_locked_hook)(const struct tmt_tx *tx);
void (*stm_test_busy_hook)(uintptr_t *stripe, unsigned poll);
void (*stm_test_released_hook)(uintptr_t *stripe);
#endif

/* Locks the stripes of the redo-log entries from `e` on, the general way
 * (stm_lock_one: this commit's own lock on a stripe two entries share is
 * recognised, another's is waited for), and aborts when one stays busy. */
__attribute__((noinline)) void stm_lock_rest(struct tmt_tx *tx, const struct tx_wentry *e)
{
    struct tx_stm *s = &tx->stm;
    for (const struct tx_wentry *end = s->wset + s->wn; e != end; e++) {
        uint64_t holder = stm_lock_one(s, e->addr, stm_holder_of(tx));
        if (holder != 0)
            stm_abort(tx, TMT_ABORT_COMMIT_LOCKED, e->addr, holder);
    }
}

/* Another update committed since this attempt started: its reads must
 * still hold, else it aborts. Out of line, so that the commit keeps no
 * stack slots for what the abort record says. */
__attribute__((noinline)) void stm_commit_validate(struct tmt_tx *tx)
{
    uintptr_t bad = 0;
    uint64_t found = 0;
    if (stm_validate(&tx->stm, &bad, &found) != 0)
        stm_abort(tx, TMT_ABORT_COMMIT_VALIDATE, bad, found);
}

void stm_rollback(struct tmt_tx *tx)
{
    struct tx_stm *s = &tx->stm;
    stm_release_old(s);
    s->gate = UINT64_MAX;
    s->rn = 0;
    s->wn = 0;
    s->bloom = 0;
    s->consecutive_aborts++;
    __atomic_store_n(&s->active_rv, TX_IDLE | s->rv, __ATOMIC_RELEASE);
}

void stm_backoff_wait(struct tmt_tx *tx)
{
    /* A read found this stripe locked: its holder is committing, and until
     * it releases the stripe (with a version past this attempt's start, so
     * the abort was due either way) a retry would only meet the same lock
     * and abort again, over and over while the holder writes back. Wait for
     * the release, as long as a commit waits for a busy stripe. */
    uintptr_t *busy = tx->stm.busy_stripe;
    tx->stm.busy_stripe = NULL;
    if (busy != NULL)
        (void)stm_wait_unlocked(busy);
    uint32_t n = tx->stm.consecutive_aborts;
    if (n < 2)
        return;
    unsigned log2 = n + 3 < STM_BACKOFF_MAX_LOG2 ? n + 3 : STM_BACKOFF_MAX_LOG2;
    uint64_t spins = tx_rand(&tx->rng) & (((uint64_t)1 << log2) - 1);
    for (uint64_t i = 0; i < spins; i++)
        tx_pause();
    /* Many aborts in a row on an oversubscribed machine usually mean a
     * preempted lock holder: let it run. */
    if (n >= 8)
        sched_yield();
}

/* ---- serial mode ------------------------------------------------------------ */

void stm_serial_lock(uint32_t me)
{
    for (;;) {
        uint32_t expect = 0;
        if (__atomic_compare_exchange_n(&stm_serial.owner, &expect, me, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
            return;
        stm_serial_spin();
    }
}

void stm_serial_unlock(void) { __atomic_store_n(&stm_serial.owner, 0, __ATOMIC_RELEASE); }

uint32_t stm_serial_holder(void) { return stm_serial_owner(__ATOMIC_ACQUIRE); }

void stm_serial_begin(struct tmt_tx *tx, int alone)
{
    struct tx_stm *s = &tx->stm;
    s->serial_alone = alone;
    s->ro = 0;
    s->rn = s->wn = 0;
    s->nundo = 0;
    s->serial_reads = 0;
    s->rv = __atomic_load_n(&stm_clock.now, __ATOMIC_ACQUIRE);
    /* Memory reclamation (txmem.c) must not free what this attempt reads.
     * The same announcement as stm_begin's: its xchg was a fifth of a lone
     * thread's in-place transaction in tmbench bank (docs/design.md, "A
     * thread alone"). */
    stm_announce(s, s->rv);
}

void stm_serial_write(struct tmt_tx *tx, uintptr_t addr, uint64_t value, unsigned size)
{
    struct tx_stm *s = &tx->stm;
    tx_undo_write(&s->undo, &s->nundo, &s->undocap, addr, value, size);
}

/* The stripes written get the new version, so that an attempt that took its
 * start version before this commit and reads them afterwards aborts, as it
 * would after a normal commit. Nothing else runs: no locking needed. A
 * serial attempt alone stamps nothing: no attempt of another thread ran
 * when it took the lock (none had started a transaction), and one that
 * starts meanwhile waits for the unlock (stm_begin) and then takes a start
 * version at or above wv, at which memory already holds these writes. A
 * lone thread's transactions all run here, and the stamps were a stripe-
 * table miss per word written (docs/design.md, "TL2 as built"). */
uint64_t stm_serial_commit(struct tmt_tx *tx)
{
    struct tx_stm *s = &tx->stm;
    uint64_t wv = 0;
    if (s->nundo != 0) {
        /* Alone, no other thread can move the clock until the unlock (one
         * that starts waits for it), so a plain increment does: the locked
         * add was a tenth of a lone thread's time in tmbench bank. */
        if (s->serial_alone)
            __atomic_store_n(&stm_clock.now, wv = __atomic_load_n(&stm_clock.now, __ATOMIC_RELAXED) + 1,
                             __ATOMIC_RELEASE);
        else
            wv = __atomic_add_fetch(&stm_clock.now, 1, __ATOMIC_ACQ_REL);
        for (uint32_t i = 0; !s->serial_alone && i < s->nundo; i++)
            __atomic_store_n(stm_stripe(s->undo[i].addr), (uintptr_t)wv << 1, __ATOMIC_RELEASE);
    }
    s->nundo = 0;
    stm_idle(s, wv ? wv : s->rv);
    return wv;
}

void stm_serial_rollback(struct tmt_tx *tx)
{
    struct tx_stm *s = &tx->stm;
    tx_undo_all(s->undo, &s->nundo, tx->frame);
    __atomic_store_n(&s->active_rv, TX_IDLE | s->rv, __ATOMIC_RELEASE);
}

uint32_t stm_serial_mark(const struct tmt_tx *tx) { return tx->stm.nundo; }

void stm_serial_rollback_to(struct tmt_tx *tx, uint32_t mark,
                            void (*undone)(struct tmt_tx *tx, uintptr_t addr, uint64_t value, unsigned size))
{
    struct tx_stm *s = &tx->stm;
    while (s->nundo > mark) {
        const struct tx_undo *u = &s->undo[--s->nundo];
        tx_mem_store(u->addr, u->old, u->size);
        if (undone)
            undone(tx, u->addr, u->old, u->size);
    }
}

/*
 * htm.c - the hardware fast path and its emulation (see htm.h and
 * docs/design.md, "Hardware and software together").
 *
 * Owns: the RTM code (compiled for the "rtm" target only in the functions
 * that use it, so the library runs on any x86-64), the retry/fallback policy,
 * the software-transaction counter and the emulation lock. Must never call a
 * tb_ev_* hook while a hardware attempt runs, and must touch no shared
 * metadata inside one except the counter it subscribes to.
 */
#include "htm.h"

#include <cpuid.h>
#include <immintrin.h>
#include <sched.h>

#include "config.h"
#include "tx_undo.h"
#include "tx_upcall.h"

#define HTM_EMU_ABORT_WINDOW 16 /* injected aborts strike at one of the first 16 accesses */

int htm_rtm;

/* Software transactions running now. Hardware attempts read it right after
 * they begin, so a software start (which writes it) aborts them. */
static struct {
    uint64_t n;
    char pad[56];
} htm_sw __attribute__((aligned(64)));

/* Emulation: the lock an emulated attempt holds from begin to end. */
static struct {
    int held;
    char pad[60];
} htm_emu __attribute__((aligned(64)));

void htm_init(void)
{
    unsigned a, b, c, d;
    htm_rtm = 0;
    /* Leaf 7: EBX bit 11 = RTM, EDX bit 11 = RTM_ALWAYS_ABORT (TSX disabled). */
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d))
        htm_rtm = (b & (1u << 11)) && !(d & (1u << 11));
}

#ifdef TMT_TEST_HOOKS
int htm_rtm_usable(void) { return htm_rtm; }
#endif

/* ---- real RTM ----------------------------------------------------------- */

__attribute__((target("rtm"))) static unsigned htm_rtm_begin(void)
{
    unsigned status = _xbegin();
    if (status == _XBEGIN_STARTED && __atomic_load_n(&htm_sw.n, __ATOMIC_RELAXED) != 0)
        _xabort(0xff);
    return status;
}

__attribute__((target("rtm"))) static void htm_rtm_end(void) { _xend(); }

__attribute__((target("rtm"), noreturn)) static void htm_rtm_abort(unsigned code)
{
    /* _xabort takes an immediate. */
    switch (code) {
    case HTM_CODE_USER_RETRY: _xabort(0xfe); break;
    case HTM_CODE_USER_CANCEL: _xabort(0xfd); break;
    case HTM_CODE_NEED_STM: _xabort(0xfc); break;
    case HTM_CODE_NEED_SERIAL: _xabort(0xfb); break;
    default: _xabort(0xff); break;
    }
    __builtin_unreachable();
}

_Static_assert(HTM_CODE_STM_ACTIVE == 0xff, "the subscription aborts with the STM-active code");

/* ---- emulation ------------------------------------------------------------ */

static uint32_t htm_emu_begin(struct tmt_tx *tx)
{
    struct tx_htm *h = &tx->htm;
    h->accesses = 0;
    h->nundo = 0;
    h->abort_at = 0;
    h->abort_status = 0;
    uint64_t r = tx_rand(&tx->rng) % 100;
    if (r < (uint64_t)config.htm_emu_abort_pct) {
        h->abort_status = TMT_HTM_CONFLICT | TMT_HTM_RETRY;
    } else if (r < (uint64_t)(config.htm_emu_abort_pct + config.htm_emu_explicit_pct)) {
        h->abort_status = TMT_HTM_EXPLICIT | (HTM_CODE_EMU_EXPLICIT << 24);
    }
    if (h->abort_status)
        h->abort_at = 1 + (uint32_t)(tx_rand(&tx->rng) % HTM_EMU_ABORT_WINDOW);
    for (;;) {
        int expect = 0;
        if (__atomic_compare_exchange_n(&htm_emu.held, &expect, 1, 0, __ATOMIC_SEQ_CST,
                                        __ATOMIC_RELAXED))
            break;
        while (__atomic_load_n(&htm_emu.held, __ATOMIC_RELAXED))
            tx_pause();
    }
    /* Dekker with htm_sw_enter(): lock, then look at the counter. */
    if (__atomic_load_n(&htm_sw.n, __ATOMIC_SEQ_CST) != 0) {
        __atomic_store_n(&htm_emu.held, 0, __ATOMIC_RELEASE);
        return TMT_HTM_EXPLICIT | (HTM_CODE_STM_ACTIVE << 24);
    }
    return HTM_STARTED;
}

static void htm_emu_unlock(void) { __atomic_store_n(&htm_emu.held, 0, __ATOMIC_RELEASE); }

/* An emulated attempt aborts: its writes are undone here, then the common
 * restart path records it (tx_upcall.h). */
__attribute__((noreturn, noinline)) static void htm_emu_abort(struct tmt_tx *tx, unsigned reason, uintptr_t addr,
                                                             uint32_t status)
{
    htm_rollback(tx, status);
    tx_restart(tx, reason, addr, status);
}

/* Every access of an emulated attempt is a point where it may abort. */
static inline void htm_emu_access(struct tmt_tx *tx, uintptr_t addr)
{
    struct tx_htm *h = &tx->htm;
    h->accesses++;
    if (TX_UNLIKELY(h->accesses > (uint64_t)config.htm_emu_capacity))
        htm_emu_abort(tx, TMT_ABORT_HTM, addr, TMT_HTM_CAPACITY);
    if (TX_UNLIKELY(h->accesses == h->abort_at))
        htm_emu_abort(tx, TMT_ABORT_HTM, addr, h->abort_status);
}

void htm_rollback(struct tmt_tx *tx, uint32_t status)
{
    struct tx_htm *h = &tx->htm;
    tx_undo_all(h->undo, &h->nundo, tx->frame);
    htm_emu_unlock();
    tx_count(&tx->stats.htm_aborts);
    h->last_status = status;
    h->pending = 1;
}

/* ---- accesses, end, explicit aborts --------------------------------------- */

uint64_t htm_read(struct tmt_tx *tx, uintptr_t addr, unsigned size)
{
    if (tx->mode == TX_MODE_HTM_EMU)
        htm_emu_access(tx, addr);
    return tx_mem_load(addr, size);
}

void htm_write(struct tmt_tx *tx, uintptr_t addr, uint64_t value, unsigned size)
{
    if (tx->mode == TX_MODE_HTM_EMU) {
        struct tx_htm *h = &tx->htm;
        htm_emu_access(tx, addr);
        tx_undo_write(&h->undo, &h->nundo, &h->undocap, addr, value, size);
        return;
    }
    tx_mem_store(addr, value, size);
}

void htm_commit(struct tmt_tx *tx)
{
    if (tx->mode == TX_MODE_HTM) {
        htm_rtm_end();
        return;
    }
    /* An injected conflict that the attempt's accesses did not reach strikes
     * at its end, so the configured share of attempts really aborts. */
    if (tx->htm.abort_at)
        htm_emu_abort(tx, TMT_ABORT_HTM, 0, tx->htm.abort_status);
    tx->htm.nundo = 0;
    htm_emu_unlock();
}

void htm_abort_code(struct tmt_tx *tx, unsigned code)
{
    if (tx->mode == TX_MODE_HTM)
        htm_rtm_abort(code);
    uint32_t status = TMT_HTM_EXPLICIT | (code << 24);
    htm_emu_abort(tx, htm_abort_reason(status), 0, status);
}

/* ---- the policy ----------------------------------------------------------- */

static void htm_wait_drain(void)
{
    for (unsigned spins = 1; __atomic_load_n(&htm_sw.n, __ATOMIC_ACQUIRE) != 0; spins++) {
        tx_pause();
        if ((spins & 1023) == 0)
            sched_yield(); /* the software transactions may need this core */
    }
}

/* The verdict on the last attempt's abort status (docs/design.md's table):
 * TRY again, or give up with *why (enum tf_fallback_reason). */
static enum htm_next htm_policy(struct tmt_tx *tx, uint32_t status, unsigned *why)
{
    unsigned code = tmt_htm_abort_code(status);
    int explicit_ = (status & TMT_HTM_EXPLICIT) != 0;
    int used_up = tx->htm.attempts >= (uint64_t)config.htm_retries;
    if (explicit_ && code == HTM_CODE_USER_CANCEL)
        return HTM_NEXT_CANCEL;
    if (explicit_ && (code == HTM_CODE_NEED_STM || code == HTM_CODE_NEED_SERIAL)) {
        *why = TF_FB_FLAGS;
        return code == HTM_CODE_NEED_SERIAL ? HTM_NEXT_SERIAL : HTM_NEXT_FALLBACK;
    }
    if (status & TMT_HTM_CAPACITY) {
        *why = TF_FB_CAPACITY;
        return HTM_NEXT_FALLBACK;
    }
    if (explicit_ && code == HTM_CODE_STM_ACTIVE && !used_up) {
        htm_wait_drain();
        return HTM_NEXT_TRY;
    }
    if (!(status & TMT_HTM_RETRY) && !(explicit_ && code == HTM_CODE_STM_ACTIVE)) {
        *why = TF_FB_NO_RETRY;
        return HTM_NEXT_FALLBACK;
    }
    if (used_up) {
        *why = TF_FB_ATTEMPTS;
        return HTM_NEXT_FALLBACK;
    }
    return HTM_NEXT_TRY;
}

enum htm_next htm_next(struct tmt_tx *tx)
{
    struct tx_htm *h = &tx->htm;
    if (!h->pending)
        return HTM_NEXT_TRY;
    h->pending = 0;
    unsigned why = 0;
    enum htm_next next = htm_policy(tx, h->last_status, &why);
    if (next == HTM_NEXT_FALLBACK || next == HTM_NEXT_SERIAL) {
        h->fell_back = 1;
        tx_count(&tx->stats.fallbacks);
        tb_ev_fallback(&tx->trace, why, h->last_status);
    }
    return next;
}

uint32_t htm_begin(struct tmt_tx *tx, int path)
{
    struct tx_htm *h = &tx->htm;
    h->attempts++;
    /* On real RTM an abort later in the attempt lands here too, with memory
     * (the stack frames up to here included) as it was at _xbegin. */
    uint32_t status = path == TX_MODE_HTM ? htm_rtm_begin() : htm_emu_begin(tx);
    if (status == HTM_STARTED)
        return status;
    tx_count(&tx->stats.htm_aborts);
    h->last_status = status;
    h->pending = 1;
    return status;
}

void htm_sw_enter(struct tmt_tx *tx)
{
    int path = htm_path();
    tx->htm.sw_counted = path != TX_MODE_NONE;
    if (!tx->htm.sw_counted)
        return;
    __atomic_add_fetch(&htm_sw.n, 1, __ATOMIC_SEQ_CST);
    /* Dekker with htm_emu_begin(): announce, then wait out a running attempt. */
    if (path == TX_MODE_HTM_EMU) {
        while (__atomic_load_n(&htm_emu.held, __ATOMIC_SEQ_CST))
            tx_pause();
    }
}

void htm_fork_prepare(void)
{
    __atomic_add_fetch(&htm_sw.n, 1, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(&htm_emu.held, __ATOMIC_SEQ_CST))
        tx_pause();
}

void htm_fork_parent(void) { __atomic_sub_fetch(&htm_sw.n, 1, __ATOMIC_RELEASE); }

void htm_fork_child(int self_counted)
{
    __atomic_store_n(&htm_sw.n, (uint64_t)self_counted, __ATOMIC_RELEASE);
    __atomic_store_n(&htm_emu.held, 0, __ATOMIC_RELEASE);
}

void htm_sw_release(void) { __atomic_sub_fetch(&htm_sw.n, 1, __ATOMIC_RELEASE); }

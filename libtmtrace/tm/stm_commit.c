/*
 * stm_commit.c - the commit's out-of-line ways, made of stm_commit.h's
 * inline parts: the traced commit's two steps (stm.h: stm_commit,
 * stm_commit_finish; the tracer stamps the COMMIT record between them,
 * with the locks held) and the general ways an untraced commit's inline
 * path (stm_commit_inline) hands over to.
 *
 * Owns: nothing but these entry points. Never: records anything itself.
 */
#include "stm_commit.h"

uint64_t stm_commit(struct tmt_tx *tx) { return stm_commit_read_only(&tx->stm) ? 0 : stm_commit_locked(tx); }

void stm_commit_finish(struct tmt_tx *tx, uint64_t wv)
{
    if (wv != 0)
        stm_commit_release(tx, wv);
}

uint64_t stm_commit_whole(struct tmt_tx *tx)
{
    uint64_t wv = stm_commit_locked(tx);
    stm_commit_release(tx, wv);
    return wv;
}

uint64_t stm_commit_from(struct tmt_tx *tx, uint32_t n)
{
    struct tx_stm *s = &tx->stm;
    stm_lock_rest(tx, s->wset + n);
#ifdef TMT_TEST_HOOKS
    if (stm_test_locked_hook)
        stm_test_locked_hook(tx);
#endif
    uint64_t wv = __atomic_add_fetch(&stm_clock.now, 1, __ATOMIC_ACQ_REL);
    return wv != s->rv + 1 ? stm_commit_validated(tx, wv) : (stm_commit_release(tx, wv), wv);
}

uint64_t stm_commit_validated(struct tmt_tx *tx, uint64_t wv)
{
    stm_commit_validate(tx);
    stm_commit_release(tx, wv);
    return wv;
}

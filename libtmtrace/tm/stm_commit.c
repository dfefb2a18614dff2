/*
 * stm_commit.c - the commit's out-of-line ways, made of stm_commit.h's
 * inline parts: the traced commit's two steps (stm.h: stm_commit,
 * stm_commit_finish; the tracer stamps the COMMIT record between them,
 * with the locks held), the general ways an untraced commit's inline
 * path (stm_commit_try) leaves to stm_commit_rest, and those a traced
 * small commit's first half leaves to stm_commit_rest_locked.
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

/* The general ways stm_commit_rest takes, each returning the write version:
 * the whole commit (any write set); from the entry `n` on, once the entries
 * before it are locked (nlocked); after the write version `wv` was taken
 * with every lock held, when another update committed since the start. */
static uint64_t stm_commit_whole(struct tmt_tx *tx)
{
    uint64_t wv = stm_commit_locked(tx);
    stm_commit_release(tx, wv);
    return wv;
}

static uint64_t stm_commit_validated(struct tmt_tx *tx, uint64_t wv)
{
    stm_commit_validate(tx);
    stm_commit_release(tx, wv);
    return wv;
}

/* The locking step from the entry `n` on, once the entries before it are
 * locked (nlocked): the write version with every lock held, validated. */
static uint64_t stm_commit_locked_from(struct tmt_tx *tx, uint32_t n)
{
    struct tx_stm *s = &tx->stm;
    stm_lock_rest(tx, s->wset + n);
    uint64_t wv = stm_commit_version(tx);
    if (wv != s->rv + 1)
        stm_commit_validate(tx);
    return wv;
}

static uint64_t stm_commit_from(struct tmt_tx *tx, uint32_t n)
{
    uint64_t wv = stm_commit_locked_from(tx, n);
    stm_commit_release(tx, wv);
    return wv;
}

uint64_t stm_commit_rest(struct tmt_tx *tx, uint64_t code)
{
    if (!(code & STM_COMMIT_REST))
        return code;
    if (code & STM_COMMIT_TAKEN)
        return stm_commit_validated(tx, code & ~(STM_COMMIT_REST | STM_COMMIT_TAKEN));
    if (code & 1)
        return stm_commit_from(tx, tx->stm.nlocked);
    return stm_commit_whole(tx);
}

uint64_t stm_commit_rest_locked(struct tmt_tx *tx, uint64_t code)
{
    if (code & STM_COMMIT_TAKEN) {
        stm_commit_validate(tx);
        return code & ~(STM_COMMIT_REST | STM_COMMIT_TAKEN);
    }
    if (code & 1)
        return stm_commit_locked_from(tx, tx->stm.nlocked);
    return stm_commit_locked(tx);
}

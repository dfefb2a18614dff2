/*
 * stm_commit.c - the traced commit's two steps (stm.h: stm_commit,
 * stm_commit_finish), made of stm_commit.h's inline commit: the tracer
 * stamps the COMMIT record between them, with the locks held.
 *
 * Owns: nothing but these two entry points. Never: records anything
 * itself, nor is called on an untraced commit (that one runs
 * stm_commit_inline in the life cycle's frame).
 */
#include "stm_commit.h"

uint64_t stm_commit(struct tmt_tx *tx) { return stm_commit_read_only(&tx->stm) ? 0 : stm_commit_locked(tx); }

void stm_commit_finish(struct tmt_tx *tx, uint64_t wv)
{
    if (wv != 0)
        stm_commit_release(tx, wv);
}

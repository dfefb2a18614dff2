/*
 * trace_format.c - the printed names of the trace format's vocabulary.
 *
 * Owns: the one name table of each enum in trace_format.h (event kinds,
 * abort, fallback and serial reasons, chunk kinds, codecs) and the count
 * of records in the event path's slot stream (a write set counts its words).
 * Never: allocates, prints, or names anything the header does not define.
 */
#include "trace_format.h"

const char *tf_event_kind_name(unsigned kind)
{
    static const char *const names[TF_EV_KINDS] = { "?", "start", "read", "write",
                                                    "commit", "abort", "fallback", "serial", "alloc",
                                                    "wset", "abort-pc", "abort-stack" };
    return kind < TF_EV_KINDS ? names[kind] : "?";
}

const char *tf_abort_reason_name(unsigned reason)
{
    static const char *const names[TMT_ABORT_REASONS] = {
        "none", "read-locked", "read-version", "commit-locked",
        "commit-validate", "user-retry", "user-cancel", "htm",
    };
    return reason < TMT_ABORT_REASONS ? names[reason] : "unknown";
}

const char *tf_fallback_reason_name(unsigned reason)
{
    static const char *const names[TF_FB_REASONS] = { "unknown", "no-retry", "capacity", "attempts",
                                                      "flags" };
    return reason < TF_FB_REASONS ? names[reason] : "unknown";
}

const char *tf_serial_reason_name(unsigned reason)
{
    static const char *const names[TF_SERIAL_REASONS] = { "unknown", "contention", "requested", "alone" };
    return reason < TF_SERIAL_REASONS ? names[reason] : "unknown";
}

const char *tf_chunk_kind_name(unsigned kind)
{
    static const char *const names[TF_CHUNK_KINDS] = { "?", "sites", "threads", "skew",
                                                       "samples", "events", "model", "end", "loadmap",
                                                       "runinfo" };
    return kind < TF_CHUNK_KINDS ? names[kind] : "?";
}

const char *tf_codec_name(unsigned codec)
{
    static const char *const names[TF_CODECS] = { "none", "zlib", "lz4" };
    return codec < TF_CODECS ? names[codec] : "?";
}

size_t tf_slots_records(const struct tf_slot *s, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        if (tf_slot_is_compact(&s[i])) {
            uint32_t e = tf_commit_carried(&s[i]);
            k += e ? 1 + tf_commit_carried_words(&s[i]) : tf_start_folded(&s[i]) ? 2 : 1;
            i += e ? 1 + tf_wset_slots(e) : 1;
            continue;
        }
        const struct tf_record *f = (const struct tf_record *)(const void *)&s[i];
        /* The stream is the runtime's own: a write set's count is sound. */
        k += f->kind == TF_EV_WSET ? f->addr : 1;
        i += f->kind == TF_EV_WSET ? 2 + tf_wset_slots(tf_wset_entries(f)) : 2;
    }
    return k;
}

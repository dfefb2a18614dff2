/*
 * trace_file.h - the trace file's reader and writer, shared by the library's
 * writer and every tool. docs/format.md describes the same bytes for people;
 * the format's vocabulary (kinds, reasons, the record and its rules) is
 * trace_format.h.
 *
 * Owns: the on-disk layout (header, chunk framing, chunk payloads), the
 * decoded event, sample and metadata structures the tools work on, a
 * streaming chunk reader and a chunk writer. Never keeps more than one chunk (plus the
 * caller's) in memory; never exits or prints: every failure is a return code
 * with a message that names the file, the byte offset and what is wrong.
 *
 * File = header, then chunks. Each chunk: a fixed chunk header (magic, kind,
 * codec, payload length, raw length, CRC32 of the stored payload, count,
 * thread) followed by its payload. A trace whose writer died still reads up
 * to the last complete chunk; the END chunk is optional to readers.
 */
#ifndef TMT_TRACE_FILE_H
#define TMT_TRACE_FILE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "trace_format.h"

/* ---- decoded forms the tools use ------------------------------------- */
/* The decoded event, struct tf_event, is the vocabulary's (trace_format.h):
 * the codec decodes into it without knowing the file. */

/* One (TSC, reference) pair from a sampling bracket rdtscp / clock_gettime / rdtscp. */
struct tf_sample {
    uint64_t tsc;        /* midpoint of the bracket (as injected, when injecting) */
    uint64_t ref_ns;     /* the reference clock */
    uint64_t truth_tsc;  /* uninjected midpoint; equal to tsc without injection */
    uint32_t width;      /* bracket width in TSC ticks */
    uint16_t cpu;
    uint8_t phase;       /* enum tf_sample_phase */
    uint8_t pad;
    uint32_t thread;     /* 0 for sampling-phase threads, else the tracing thread */
};

struct tf_site {
    uint32_t id;
    int32_t line;
    char file[256];
    char label[128];
};

struct tf_thread_info {
    uint32_t id;         /* tracer thread id */
    uint32_t os_tid;
    uint64_t events;     /* events recorded (END chunk) */
    uint64_t dropped;    /* events lost (END chunk) */
    uint64_t stack_lo, stack_hi; /* the thread's stack [lo, hi) (META_THREADS with
                                  * TF_THREADS_STACK; 0, 0: not known) */
};

/* Injected clock faults for one CPU (recorded only when injecting). */
struct tf_skew {
    uint32_t cpu;
    int64_t offset_ns;
    double drift_ppm;
    int64_t change_ms;   /* -1 = none */
    double drift2_ppm;
};

/* Clock model of one CPU in a synchronised trace: ns = a * tsc + b, per segment. */
struct tf_model_segment {
    uint64_t tsc_from;   /* segment applies to tsc >= tsc_from */
    double a;
    double b;
};
struct tf_cpu_model {
    uint32_t cpu;
    uint32_t used;       /* samples used / rejected by the fit */
    uint32_t rejected;
    uint32_t nseg;
    double drift_ppm;
    double offset_ns;
    double rms_ns;       /* residuals: the uncertainty of the corrected stamps */
    double max_ns;
    struct tf_model_segment seg[256]; /* nseg used */
};

/* One loaded object of the traced process (LOADMAP chunk): where the
 * executable or shared object was mapped, so that tools can turn run-time
 * addresses into symbols and source lines offline. */
struct tf_object {
    uint64_t base;           /* load bias: run-time address = file vaddr + base */
    uint64_t start, end;     /* run-time extent of its PT_LOAD segments [start, end) */
    uint32_t build_id_len;   /* 0 = none */
    uint8_t build_id[32];    /* NT_GNU_BUILD_ID (usually 20 bytes) */
    char path[512];          /* as the dynamic loader names it; the executable's real path */
};

/* What the tracer measured about itself at init (RUNINFO chunk). */
struct tf_runinfo {
    double event_cost_ns;    /* one event record on the event path, median of its calibration runs */
};

/* ---- header ----------------------------------------------------------- */

struct tf_header {
    uint32_t version;          /* as read; a writer writes it (0 = TF_VERSION) */
    uint32_t flags;            /* enum tf_header_flags */
    uint64_t tsc_hz;           /* TSC frequency estimate */
    uint32_t ref_clock;        /* 0 = CLOCK_MONOTONIC, 1 = CLOCK_MONOTONIC_RAW */
    uint32_t ncpus;
    uint32_t pid;
    uint32_t events_level;     /* 0 off, 1 tx, 2 all */
    uint32_t stripes_log2;     /* the run's TMTRACE_STRIPES; 0 = not recorded */
    uint32_t stripe_shift;     /* the run's TMTRACE_STRIPE_SHIFT; version 2 and before: 3 */
    uint32_t detail;           /* version 4: TMTRACE_DETAIL, one attempt in `detail` recorded with its
                                * reads and writes (TF_START_DETAIL) at level tx; 0 = none */
    int64_t wall_start_ns;     /* CLOCK_REALTIME at init */
    char cmdline[512];
    /* Version 2: enum tf_stamp of reads/writes, of start/abort/fallback and
     * of commits; enum tf_stamp_flags. All 0 in version-1 traces. */
    uint8_t stamp_access, stamp_boundary, stamp_commit, stamp_flags;
};

/* ---- chunks ----------------------------------------------------------- */

/* A chunk as the reader hands it over. Arrays belong to the reader and stay
 * valid until the next call on it. */
struct tf_chunk {
    uint32_t kind;             /* enum tf_chunk_kind */
    uint32_t codec;
    uint32_t thread;           /* EVENTS: the thread (0 in merged, synced chunks) */
    uint64_t offset;           /* byte offset of the chunk header in the file */
    uint64_t stored_len;       /* payload bytes on disk */
    size_t count;              /* number of elements below */
    struct tf_event *events;   /* EVENTS */
    struct tf_sample *samples; /* SAMPLES */
    struct tf_site *sites;     /* META_SITES */
    struct tf_thread_info *threads; /* META_THREADS, END */
    struct tf_skew *skews;     /* META_SKEW */
    struct tf_cpu_model *models;    /* MODEL */
    struct tf_object *objects;      /* LOADMAP */
    struct tf_runinfo *runinfo;     /* RUNINFO */
    uint64_t writer_errors;    /* END: chunks the writer failed to write */
    uint32_t end_signal;       /* END: the signal that terminated the program (TF_END_SIGNAL), 0 = none */
};

/* ---- reading ---------------------------------------------------------- */

enum tf_open_flags {
    TF_SALVAGE = 1u << 0,      /* skip bad chunks (resynchronise on the next chunk magic) */
    TF_SKIP_EVENTS = 1u << 1,  /* do not decode EVENTS payloads (count/offset only) */
};

struct tf_reader;

/* Opens and checks the header. NULL on error (message in error_get()). */
struct tf_reader *tf_open(const char *path, unsigned flags);
const struct tf_header *tf_reader_header(const struct tf_reader *r);
/* Next chunk: 1 = *out filled, 0 = end of file, -1 = error (message names
 * file, offset, problem). With TF_SALVAGE a damaged chunk is counted in
 * tf_reader_skipped() and reading goes on. */
int tf_next(struct tf_reader *r, struct tf_chunk *out);
/* Reads and decodes the chunk whose header is at `offset` (from tf_next). */
int tf_read_at(struct tf_reader *r, uint64_t offset, struct tf_chunk *out);
/* The same, decoding the chunk's elements into the caller's *buf of *cap
 * bytes (grown with realloc as needed; the caller frees it), so that
 * threads each with a reader can keep decoded chunks without copying them. */
int tf_read_events_at(struct tf_reader *r, uint64_t offset, struct tf_chunk *out, void **buf, size_t *cap);
uint64_t tf_reader_skipped(const struct tf_reader *r);   /* damaged chunks skipped */
uint64_t tf_reader_skipped_bytes(const struct tf_reader *r);
const char *tf_reader_path(const struct tf_reader *r);
/* With TF_SALVAGE: the message of the last damage skipped ("" if none). */
const char *tf_reader_damage(const struct tf_reader *r);
void tf_close(struct tf_reader *r);

/* ---- writing ---------------------------------------------------------- */

/* A writer has no lock: one thread at a time may call it. */
struct tf_writer;

enum tf_writer_flags {
    TF_WRITE_ATOMIC = 1u << 0, /* write to PATH.tmp.XXXXXX and rename on close (tools) */
    /* Write a regular file with O_DIRECT where its file system takes it
     * (the library's writer): the bytes gather in a stage (a stored EVENTS
     * chunk is encoded there) and go out in whole 4 KiB blocks each time
     * 512 KiB gather, bypassing the page cache, the tail through it at
     * tf_finish; a direct write that fails hands the rest to the page
     * cache. Until tf_finish the file may lack the last staged bytes (up
     * to 512 KiB). */
    TF_WRITE_DIRECT = 1u << 1,
};

/* Creates the file and writes the header. NULL on error. */
struct tf_writer *tf_create(const char *path, const struct tf_header *hdr, unsigned flags);
/* A thread's slot stream (the library's writer; struct tf_slot_stream,
 * trace_format.h): encoded straight from the slots, in EVENTS chunks of at
 * most TF_SLOTS_PIECE records, the same bytes as encoding the records the
 * slots expand to (codec_encode_slots). Each chunk carries the sequence
 * number and the instance in force at its first record. The stream
 * advances as chunks are appended; 0, or -1 with the stream at the piece
 * that failed. */
#define TF_SLOTS_PIECE 16384
int tf_write_slots(struct tf_writer *w, uint32_t thread, struct tf_slot_stream *ss, int codec, int level);
/* Decoded events (the tools): one EVENTS chunk of at most CODEC_MAX_EVENTS
 * events, encoded and compressed apart from any writer, so that several
 * threads can prepare a writer's chunks; tf_write_prepared appends one.
 * thread = 0 for a merged chunk whose events carry their own thread ids.
 * Start from a zeroed struct; reusable. */
struct tf_prepared {
    uint8_t *raw, *comp;
    size_t raw_cap, comp_cap;
    uint8_t hdr[40];           /* the chunk header */
    const uint8_t *payload;    /* raw or comp */
    size_t stored;
};
int tf_prepare_events(struct tf_prepared *p, uint32_t thread, const struct tf_event *ev, size_t n, int codec,
                      int level);
int tf_write_prepared(struct tf_writer *w, const struct tf_prepared *p);
void tf_prepared_free(struct tf_prepared *p);
int tf_write_samples(struct tf_writer *w, const struct tf_sample *s, size_t n);
int tf_write_sites(struct tf_writer *w, const struct tf_site *s, size_t n);
int tf_write_threads(struct tf_writer *w, const struct tf_thread_info *t, size_t n);
int tf_write_skews(struct tf_writer *w, const struct tf_skew *s, size_t n);
int tf_write_models(struct tf_writer *w, const struct tf_cpu_model *m, size_t n);
int tf_write_objects(struct tf_writer *w, const struct tf_object *o, size_t n);
int tf_write_runinfo(struct tf_writer *w, const struct tf_runinfo *ri);
/* The END chunk: the threads, the chunks the writer failed to write and,
 * for a program a signal terminated, that `signal` (recorded with
 * TF_END_SIGNAL; 0 = it ended otherwise, and the chunk keeps the layout
 * every earlier writer wrote). */
int tf_write_end(struct tf_writer *w, const struct tf_thread_info *t, size_t n, uint64_t writer_errors,
                 uint32_t signal);
/* Bytes written so far (header included), staged ones too. */
uint64_t tf_writer_bytes(const struct tf_writer *w);
/* Bytes the file holds: tf_writer_bytes less those still staged; after a
 * failed write, what reached the file. */
uint64_t tf_writer_durable(const struct tf_writer *w);
/* Writes what is staged (TF_WRITE_DIRECT) through the page cache, so that
 * the file holds every byte appended; the writer stays usable. 0, or -1
 * with the failure in error_get(); 0 after an earlier failure, which was
 * reported when it happened. tf_finish does it too. */
int tf_flush(struct tf_writer *w);
/* Flushes, fsyncs when asked, and (TF_WRITE_ATOMIC) renames into place.
 * Returns 0 or -1; on -1 the temporary file is removed. */
int tf_finish(struct tf_writer *w, int do_fsync);
/* Abandons the file (TF_WRITE_ATOMIC: removes the temporary). */
void tf_abandon(struct tf_writer *w);

#endif

/*
 * trace_file.h - the trace file format, in the one place the library and
 * every tool share it. docs/format.md describes the same bytes for people.
 *
 * Owns: the on-disk layout (header, chunk framing, chunk payloads), the
 * in-memory record that the event path fills (struct tf_record), the
 * decoded event and sample structures the tools work on, a streaming chunk
 * reader and a chunk writer. Never keeps more than one chunk (plus the
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

#define TF_MAGIC "TMTRACE\0"           /* 8 bytes at offset 0 */
#define TF_VERSION 2                   /* bump on any incompatible change; readers keep reading 1 */
#define TF_CHUNK_MAGIC 0x4b4e4843u     /* "CHNK" little-endian */

/* ---- event records (the event path writes these, 32 bytes each) ------- */

enum tf_event_kind {
    TF_EV_START = 1,    /* transaction attempt starts */
    TF_EV_READ = 2,
    TF_EV_WRITE = 3,
    TF_EV_COMMIT = 4,
    TF_EV_ABORT = 5,
    TF_EV_FALLBACK = 6, /* hardware path gives up; the STM takes over */
    TF_EV_SERIAL = 7,   /* the attempt runs alone from here (serial, irrevocable) to its end (v2) */
    TF_EV_KINDS = 8
};

/* Flags of a START record (tf_record.value) and of decoded events. */
enum tf_start_flags {
    TF_START_HTM = 1u << 0,      /* real hardware attempt */
    TF_START_HTM_EMU = 1u << 1,  /* emulated hardware attempt */
    TF_START_READ_ONLY = 1u << 2,
    TF_START_RETRY = 1u << 3,    /* a retry of an aborted attempt of the same transaction */
    TF_START_SERIAL = 1u << 4    /* serial (irrevocable) attempt; a SERIAL record follows (v2) */
};

/* Why an attempt runs in serial mode (SERIAL record, `reason`). */
enum tf_serial_reason {
    TF_SERIAL_CONTENTION = 1, /* TMTRACE_SERIAL_AFTER conflict aborts of this transaction */
    TF_SERIAL_REQUESTED = 2   /* the program asked for it (TMT_TX_IRREVOCABLE, libitm's serial mode) */
};

/* Why the hardware path gave up (FALLBACK record, `reason`). */
enum tf_fallback_reason {
    TF_FB_NO_RETRY = 1,   /* status without the RETRY bit */
    TF_FB_CAPACITY = 2,   /* status with CAPACITY */
    TF_FB_ATTEMPTS = 3,   /* TMTRACE_HTM_RETRIES attempts used up */
    TF_FB_FLAGS = 4       /* the transaction asked for the STM (e.g. nested, TMT_TX_NO_HTM) */
};

/*
 * One event as the event path stores it: fixed size, no pointers. Field use
 * by kind (all little-endian on disk once decoded):
 *
 *   kind      addr                         value
 *   START     instance id                  tf_start_flags | attempt << 16
 *   READ      address read                 value read (zero-extended), size in `reason`
 *   WRITE     address written              value written, size in `reason`
 *   COMMIT    write version (TL2 clock; 0 for read-only and hardware commits)
 *                                          read-set size | write-set size << 32
 *   ABORT     conflicting address (0 = unknown; version 1: the stripe index
 *             for COMMIT_VALIDATE)         HTM status word (TMT_ABORT_HTM); for
 *                                          STM aborts what the attempt found on
 *                                          the stripe: tf_abort_held() when it
 *                                          was locked, else the version found
 *                                          (version 1: the holder's thread id
 *                                          for READ_LOCKED/COMMIT_LOCKED, else 0)
 *   FALLBACK  0                            HTM status word of the last attempt
 *   SERIAL    conflict aborts of the transaction before this attempt
 *                                          0
 *
 * `reason`: READ/WRITE access size in bytes; ABORT enum tmt_abort_reason;
 * FALLBACK enum tf_fallback_reason; SERIAL enum tf_serial_reason. `site` is the site id of the enclosing
 * transaction (START carries it; the others repeat it). `aux` is the raw
 * TSC_AUX of the rdtscp that stamped `tsc` ((node << 12) | cpu on Linux).
 * The thread is the chunk's; the instance of non-START events is the one of
 * the START before them in the thread's program order.
 */
struct tf_record {
    uint64_t tsc;
    uint32_t aux;
    uint8_t kind;
    uint8_t reason;
    uint16_t site;
    uint64_t addr;
    uint64_t value;
};

_Static_assert(sizeof(struct tf_record) == 32, "tf_record is 32 bytes");

static inline unsigned tf_aux_cpu(uint32_t aux) { return aux & 0xfffu; }

/*
 * The `value` of an STM abort record (format version 2): what the aborting
 * attempt found on the conflicting stripe. Locked: TF_ABORT_HELD | the
 * holder's attempt (low 31 bits of its instance id) << 32 | the holder's
 * thread id (0 = unknown). Unlocked: the stripe's version, i.e. the write
 * version of the commit that last wrote it (always < 2^63).
 */
#define TF_ABORT_HELD (UINT64_C(1) << 63)
#define TF_ABORT_INSTANCE_MASK UINT64_C(0x7fffffff)

static inline uint64_t tf_abort_held(uint32_t thread, uint64_t instance)
{
    return TF_ABORT_HELD | (instance & TF_ABORT_INSTANCE_MASK) << 32 | thread;
}
static inline int tf_abort_is_held(uint64_t value) { return (value & TF_ABORT_HELD) != 0; }
static inline uint32_t tf_abort_holder_thread(uint64_t value) { return (uint32_t)value; }
static inline uint64_t tf_abort_holder_instance(uint64_t value)
{
    return (value >> 32) & TF_ABORT_INSTANCE_MASK;
}

/*
 * The lock stripe an address maps to, in a table of 2^log2 stripes. The STM
 * locks with it and the tools attribute conflicts with it, so it lives here,
 * once. Words (addr >> 3) fold their high bits in, so that arrays placed a
 * multiple of the table size apart do not share every stripe.
 */
static inline uint64_t tf_stripe_index(uint64_t addr, unsigned log2)
{
    uint64_t w = addr >> 3;
    return (w ^ (w >> log2)) & ((UINT64_C(1) << log2) - 1);
}

/* ---- decoded forms the tools use ------------------------------------- */

struct tf_event {
    uint64_t ts;        /* raw TSC (raw trace) or ns on the reference clock (synced) */
    uint64_t truth;     /* ground truth: uninjected TSC (raw) or ns (synced); 0 if none */
    uint64_t addr;
    uint64_t value;
    uint64_t instance;  /* dynamic attempt id (per thread) */
    uint64_t seq;       /* index of the event in its thread's program order */
    uint32_t thread;    /* tracer thread id (dense, from 1) */
    uint32_t site;
    uint16_t cpu;
    uint8_t kind;       /* enum tf_event_kind */
    uint8_t reason;
};

enum tf_sample_phase { TF_PHASE_PRE = 0, TF_PHASE_POST = 1, TF_PHASE_INRUN = 2 };

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

/* A site known only by its code address (a call of the libitm ABI's
 * _ITM_beginTransaction): file "", line 0 and a label of this prefix
 * followed by the run-time address in hex ("pc:0x55d0c0de1234"). Tools
 * name it `function (file:line)` through the trace's load map. */
#define TF_SITE_PC_PREFIX "pc:0x"

struct tf_thread_info {
    uint32_t id;         /* tracer thread id */
    uint32_t os_tid;
    uint64_t events;     /* events recorded (END chunk) */
    uint64_t dropped;    /* events lost (END chunk) */
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

/* ---- header ----------------------------------------------------------- */

enum tf_header_flags {
    TF_HDR_SYNCED = 1u << 0,   /* timestamps are reference ns, events merged */
    TF_HDR_INJECTED = 1u << 1, /* clock faults were injected; truth present */
};

/* How the records of one class were stamped (header, version 2). */
enum tf_stamp {
    TF_STAMP_UNKNOWN = 0,    /* not recorded (version 1: rdtscp, or repeated with TMTRACE_STAMP=boundary) */
    TF_STAMP_ORDERED = 1,    /* rdtscp: taken after every earlier instruction */
    TF_STAMP_UNORDERED = 2,  /* rdpid; rdtsc; rdpid naming one CPU: may be taken a few dozen cycles early */
    TF_STAMP_REPEATED = 3    /* no clock read: the stamp and CPU of the thread's previous stamped record */
};

/* Header stamp_flags. */
enum tf_stamp_flags {
    /* A thread's stamps on one CPU strictly increase in program order (an
     * unordered stamp that would not was raised at record time; stamps on
     * different CPUs are never adjusted). Repeated stamps equal the one
     * they repeat. */
    TF_STAMP_CPU_INCREASING = 1u << 0
};

struct tf_header {
    uint32_t version;          /* as read; a writer writes it (0 = TF_VERSION) */
    uint32_t flags;            /* enum tf_header_flags */
    uint64_t tsc_hz;           /* TSC frequency estimate */
    uint32_t ref_clock;        /* 0 = CLOCK_MONOTONIC, 1 = CLOCK_MONOTONIC_RAW */
    uint32_t ncpus;
    uint32_t pid;
    uint32_t events_level;     /* 0 off, 1 tx, 2 all */
    uint32_t stripes_log2;     /* the run's TMTRACE_STRIPES; 0 = not recorded */
    int64_t wall_start_ns;     /* CLOCK_REALTIME at init */
    char cmdline[512];
    /* Version 2: enum tf_stamp of reads/writes, of start/abort/fallback and
     * of commits; enum tf_stamp_flags. All 0 in version-1 traces. */
    uint8_t stamp_access, stamp_boundary, stamp_commit, stamp_flags;
};

/* ---- chunks ----------------------------------------------------------- */

enum tf_chunk_kind {
    TF_CHUNK_META_SITES = 1,   /* struct tf_site[] */
    TF_CHUNK_META_THREADS = 2, /* struct tf_thread_info[] (thread starts) */
    TF_CHUNK_META_SKEW = 3,    /* struct tf_skew[] */
    TF_CHUNK_SAMPLES = 4,      /* struct tf_sample[] */
    TF_CHUNK_EVENTS = 5,       /* one thread's contiguous run of records */
    TF_CHUNK_MODEL = 6,        /* struct tf_cpu_model[] (synced traces) */
    TF_CHUNK_END = 7,          /* struct tf_thread_info[] with final counts, + writer errors */
    TF_CHUNK_LOADMAP = 8,      /* struct tf_object[] (format version 2) */
    TF_CHUNK_KINDS = 9
};

enum tf_codec { TF_CODEC_NONE = 0, TF_CODEC_ZLIB = 1, TF_CODEC_LZ4 = 2 };

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
    uint64_t writer_errors;    /* END: chunks the writer failed to write */
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
};

/* Creates the file and writes the header. NULL on error. */
struct tf_writer *tf_create(const char *path, const struct tf_header *hdr, unsigned flags);
/* Raw records of one thread (the library's writer). `truth` is NULL or one
 * uninjected TSC per record. Encodes, compresses with `codec` and appends one
 * EVENTS chunk. */
int tf_write_records(struct tf_writer *w, uint32_t thread, uint64_t first_seq, uint64_t first_instance,
                     const struct tf_record *recs, const uint64_t *truth, size_t n, int codec, int level);
/* Decoded events (the tools): one EVENTS chunk; thread = 0 for a merged chunk
 * whose events carry their own thread ids. */
int tf_write_events(struct tf_writer *w, uint32_t thread, const struct tf_event *ev, size_t n,
                    int codec, int level);
int tf_write_samples(struct tf_writer *w, const struct tf_sample *s, size_t n);
int tf_write_sites(struct tf_writer *w, const struct tf_site *s, size_t n);
int tf_write_threads(struct tf_writer *w, const struct tf_thread_info *t, size_t n);
int tf_write_skews(struct tf_writer *w, const struct tf_skew *s, size_t n);
int tf_write_models(struct tf_writer *w, const struct tf_cpu_model *m, size_t n);
int tf_write_objects(struct tf_writer *w, const struct tf_object *o, size_t n);
int tf_write_end(struct tf_writer *w, const struct tf_thread_info *t, size_t n, uint64_t writer_errors);
/* Codec of the non-EVENTS chunks (default TF_CODEC_NONE: they are small). */
void tf_writer_set_meta_codec(struct tf_writer *w, int codec, int level);
/* Bytes written so far (header included). */
uint64_t tf_writer_bytes(const struct tf_writer *w);
/* Flushes, fsyncs when asked, and (TF_WRITE_ATOMIC) renames into place.
 * Returns 0 or -1; on -1 the temporary file is removed. */
int tf_finish(struct tf_writer *w, int do_fsync);
/* Abandons the file (TF_WRITE_ATOMIC: removes the temporary). */
void tf_abandon(struct tf_writer *w);

/* Names for printing. */
const char *tf_event_kind_name(unsigned kind);   /* "start", "read", ... */
const char *tf_chunk_kind_name(unsigned kind);
const char *tf_codec_name(unsigned codec);

#endif

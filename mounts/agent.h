/* The JVMTI perf-map agent (build/libflameagent.so): pure helpers shared by the JVMTI glue in
 * agent.c and the unit tests. Nothing here calls the JVM: names are formatted from the strings
 * JVMTI hands out, and a compiled method's code is split into ranges from its pc records. */
#pragma once
#include <stddef.h>
#include <stdint.h>

/* Bounds: one Java frame's name, a whole map name (an inlined chain), one map line. Anything
 * longer is cut, so a crafted class name cannot make a line unbounded. */
#define AGENT_FRAME_MAX 1024
#define AGENT_NAME_MAX 4096
#define AGENT_LINE_MAX (AGENT_NAME_MAX + 64)

/* An error travelling up to the Agent_* entry point, which prints it and returns `code` to the
 * JVM (the library is self-contained: it links nothing of common/ but headers). */
struct agent_err {
    int code; /* an Agent_OnAttach return value, > 0 */
    char msg[512];
};

/* Fill err (if not NULL) and return -1; agent_fail_errno appends ": <strerror(errnum)>". */
int agent_fail(struct agent_err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int agent_fail_errno(struct agent_err *err, int code, int errnum, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Agent_OnAttach return values (HotSpot reports them to the attacher). */
enum agent_rc {
    AGENT_RC_OPTIONS = 1, /* bad options */
    AGENT_RC_FILE = 2,    /* the map file cannot be created or written */
    AGENT_RC_JVMTI = 3,   /* a JVMTI call failed (environment, capability, events) */
    AGENT_RC_BUSY = 4, /* alloc: another agent holds the allocation sampler (= CT_AGENT_RC_BUSY) */
};

/* Stack depth of alloc and lock samples (frames from the leaf): default and bound. */
#define AGENT_DEPTH 512
#define AGENT_DEPTH_MAX 2048

/* Options of Agent_OnAttach/Agent_OnLoad:
 * "start|stop|flush,inline=1|0,sig=0|1,dir=/tmp,verbose=0|1,tag=HEX,alloc=BYTES,rate=N,lock=NS,
 * depth=N".
 * flush: write the alloc/lock samples so far and go on with an empty table (a window of
 * `docker flame record`, docs/MODES.md); every other option is the running profile's. */
struct agent_opts {
    int stop;        /* 0: start (default), 1: stop */
    int flush;       /* 1: flush (stop is 0 then) */
    int inline_on;   /* emit inlined frames (default 1) */
    int sig;         /* append parameter lists (default 0) */
    int verbose;     /* one info line on stderr per start/stop (default 0) */
    char dir[1024];  /* directory of perf-<pid>.map (default /tmp), absolute */
    long long alloc; /* alloc=BYTES: record allocations, a sample every ~BYTES (0 = off) */
    long long rate;  /* rate=N: at most ~N alloc samples a second, the interval raised (0 = none) */
    long long lock;  /* lock=NS: record monitor contention, a sample every ~NS waited (0 = off) */
    int depth;       /* depth=N: frames of each alloc/lock sample (AGENT_DEPTH) */
    char tag[17];    /* 1-16 lowercase hex digits: the map is perf-<pid>.<tag>.map, so that two
                      * profilers of one JVM (two copies of the agent) never share a file;
                      * empty (default): perf-<pid>.map, the name perf itself looks for */
};

/* Parse `options` (NULL or "" = defaults). Returns 0, or -1 with err set (unknown key, bad
 * value, relative or too long dir). */
int agent_parse_opts(const char *options, struct agent_opts *o, struct agent_err *err);

/* Append the readable name of one Java frame to out[*len..cap): the class signature
 * `Ljava/util/HashMap;` becomes `java.util.HashMap`, then `.` and the method name; with
 * `msig` (the method signature, may be NULL) the parameter list `(java.util.Random, int)`.
 * Control bytes become '?'. Output is always NUL-terminated and cut at cap-1. */
void agent_frame_name(char *out, size_t cap, const char *class_sig, const char *method,
                      const char *msig);

/* The readable name of a class from its JVMTI signature: `[B` -> `byte[]`,
 * `[[Ljava/lang/String;` -> `java.lang.String[][]`; anything else is kept, made safe (control
 * bytes '?', ';' '_'). Always NUL-terminated, cut at cap-1. */
void agent_class_name(char *out, size_t cap, const char *sig);

/* The weight of one allocation sample of an object of `size` bytes when the JVM samples about
 * every `interval` bytes (JVMTI SampledObjectAlloc: sample points at exponentially distributed
 * distances in the thread's allocated bytes, an object sampled when a point falls inside it, so
 * with probability p = 1 - e^(-size/interval)): `*bytes` = size / p, `*objects` = 1 / p (at
 * least 1), so that the sampled objects' weights add up to what was allocated whatever the
 * objects' size. Without the correction (max(size, interval)) objects near the interval came out
 * up to 37 % short (size = interval: p = 0.63). */
void agent_alloc_weight(uint64_t size, uint64_t interval, uint64_t *bytes, uint64_t *objects);

/* The allocation sampler's rate cap (rate=N). The interval is alloc << shift; every slot of
 * AGENT_ALLOC_SLOT_NS the agent counts its samples and asks this for the next slot's shift: up
 * by as many doublings as bring `samples` in `ns` under `cap` a second, down by one when they
 * were under a quarter of it (so the halved interval stays under half the cap: no see-saw), never
 * below 0 or above AGENT_ALLOC_SHIFT_MAX (nor an interval above 1 GiB). cap 0 = no cap: 0.
 * Why: each sample costs the JVM a stack walk and our table's work, ~4.5 us measured; an
 * allocation-heavy JVM (10 GB/s) sampled every 512 KiB paid 7-13 % of its work. */
#define AGENT_ALLOC_SLOT_NS 250000000LL
#define AGENT_ALLOC_SHIFT_MAX 16
int agent_alloc_shift(uint64_t samples, uint64_t ns, uint64_t cap, uint64_t interval, int shift);

/* Replace bytes that would break a map line (control bytes, DEL) with '?', in place. */
void agent_sanitize(char *s);

/* One pc record of a compiled method: its pc and an index the caller uses to find the chain. */
struct agent_pc {
    uint64_t pc;
    int idx;
};

/* One output range [start, end) named by chain `idx` (-1: the compiled method alone). */
struct agent_seg {
    uint64_t start, end;
    int idx;
};

/* Split the code [start, start+size) of a compiled method into non-overlapping ranges that
 * cover it without gaps. HotSpot records a pc *after* a call or safepoint poll (the return
 * address perf sees for that frame), so the bytes up to and including pc belong to that pc's
 * chain: ranges are (previous pc, pc]. Bytes after the last pc belong to the method alone.
 * Adjacent ranges with the same chain (same(a, b, ctx) != 0; idx -1 means the method alone) are
 * merged. `pcs` is sorted in place; pcs outside the code are ignored. `segs` needs room for n + 1
 * entries. Returns the number of ranges written (0 only when size is 0). */
size_t agent_split_code(uint64_t start, uint64_t size, struct agent_pc *pcs, size_t n,
                        struct agent_seg *segs, int (*same)(int a, int b, void *ctx), void *ctx);

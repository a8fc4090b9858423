/* The contract between the plugin and the sidecar, in one place (docs/PROTOCOL.md): the
 * sidecar's command line (built by the plugin, parsed by the sidecar, both here), the tags of
 * its result stream, its error codes, and the payload of every line as a struct with its JSON
 * writer. The plugin reads the JSON back into the same structs (plugin/run/proto.c);
 * tests/unit/common_contract.c round-trips every option and message through both sides.
 * Durations are integer milliseconds on both sides. Pure code. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/args.h"
#include "common/err.h"

/* The V line. Bump on any incompatible change; the plugin refuses another version. */
#define CT_VERSION 2

#define CT_SIDECAR_PATH "/flame-sidecar"
#define CT_DURATION_MAX_MS (7ull * 24 * 3600 * 1000) /* one week, both for plugin and sidecar */
#define CT_FREQ_MAX 10000
#define CT_INTERVAL_MIN_MS 100
#define CT_INTERVAL_MAX_MS 60000
#define CT_PID_MAX 4194304     /* PID_MAX_LIMIT */
#define CT_MAX_STACK_MAX 8192  /* --max-stack: the folder keeps no more frames anyway */
#define CT_LINE_MAX (1u << 20) /* longest line of the result stream */

/* ---- the sidecar's command line ---- */

/* host: the whole host, from a sidecar in the host's PID namespace (docs/HOST.md). */
enum ct_verb { CT_RECORD, CT_TOP, CT_RESTORE, CT_HOST, CT_VERB_COUNT };
enum ct_inject { CT_INJECT_AUTO, CT_INJECT_MOUNT, CT_INJECT_COPY, CT_INJECT_COUNT };
/* How samples are taken (docs/SIDECAR.md "Sampling"): auto = per CPU, per thread when per-CPU
 * events are refused (with a W line); cpu = per CPU or fail (perf_denied); thread = per thread. */
enum ct_sampling { CT_SAMPLING_AUTO, CT_SAMPLING_CPU, CT_SAMPLING_THREAD, CT_SAMPLING_COUNT };
/* What a profile measures (--mode, docs/MODES.md). cpu: samples of threads on CPU (F lines);
 * every other mode travels in M lines. Each mode has one value column in folded text and graphs
 * (its unit below) and one or two pprof sample types. */
enum ct_mode {
    CT_MODE_CPU,
    CT_MODE_WALL,
    CT_MODE_OFFCPU,
    CT_MODE_ALLOC,
    CT_MODE_LOCK,
    CT_MODE_COUNT
};
#define CT_MODE_BIT(m) (1u << (m))
#define CT_MODES_DEFAULT CT_MODE_BIT(CT_MODE_CPU)
/* alloc: the agent's sampling interval, bytes (JVMTI SetHeapSamplingInterval): a sample is
 * taken every ~512 KiB allocated by a thread; each weighs max(size, interval) bytes. lock: the
 * wait sampled every ~10 us waited, weighing max(wait, interval) ns. */
#define CT_ALLOC_INTERVAL 524288
/* --mode alloc without --alloc-interval: at most ~this many samples a second (the agent raises
 * its interval by doublings, mounts/agent.h agent_alloc_shift): ~4.5 us each, under 1 % of one
 * core (docs/BENCHMARKS.md "Profile modes: cost") */
#define CT_ALLOC_RATE 2000
#define CT_LOCK_INTERVAL_NS 10000
/* The agent's Agent_OnAttach return value when another agent holds the JVM's allocation sampler
 * (JVMTI can_generate_sampled_object_alloc_events is one agent's at a time): the sidecar then
 * loads it again without alloc and reports alloc refused (mounts/agent.h AGENT_RC_BUSY). */
#define CT_AGENT_RC_BUSY 4
/* For the option table: "cpu", "wall", "offcpu", "alloc", "lock", NULL. */
extern const char *const ct_mode_names[];
typedef struct ct_mode_info {
    const char *name; /* "alloc": the --mode value, the M line's word, the file name's infix */
    const char *what; /* for titles: "allocations" */
    const char *unit; /* of the value column (folded, SVG tooltips): "samples", "bytes", "ns" */
    /* pprof: sample types [0] (the M line's second count; NULL: one type only) and [1] (the
     * value column), the period type; as Go's runtime/pprof, Pyroscope and Parca name them */
    const char *type0, *unit0, *type1, *unit1, *period_type, *period_unit;
} ct_mode_info;
const ct_mode_info *ct_mode(enum ct_mode m);
/* The mode named by s[0..n), or -1. */
int ct_mode_parse(const char *s, size_t n);
/* "alloc,lock": the names of the CT_MODE_BIT()s in modes, cut to cap. */
void ct_modes_name(unsigned modes, char *out, size_t cap);
/* The CT_MODE_BIT()s named in "alloc,lock" (s[0..n)); unknown names are left out. */
unsigned ct_modes_parse_list(const char *s, size_t n);

typedef struct ct_args {
    enum ct_verb verb;
    uint64_t duration_ms;       /* record: 0 = until SIGINT */
    uint64_t interval_ms;       /* top: window length */
    int64_t frequency;          /* Hz */
    uint64_t attach_timeout_ms; /* per attach command */
    int64_t pid;                /* 0 = every JVM; else its pid as seen in the container */
    bool no_inline, signatures;
    /* record, top: kernel stacks too (docs/SIDECAR.md "Kernel frames"); per-CPU sampling only */
    bool kernel;
    bool last_window; /* top: at the stop, send the window cut short too (the recorder keeps it) */
    /* record, top, host: frames kept of each sample, counted from the leaf (the stack walker's
     * limit); 0 = every frame the recorder took */
    int64_t max_stack;
    int inject;   /* enum ct_inject */
    int sampling; /* enum ct_sampling; sent only when not auto, so an older sidecar still runs */
    /* --mode: CT_MODE_BIT()s; 0 = not given (= CT_MODES_DEFAULT: the verbs' ct_modes_of()) */
    unsigned modes;
    /* --offcpu-min (modes wall, offcpu): intervals off CPU shorter than this are not counted */
    uint64_t offcpu_min_ms;
    /* --alloc-interval (mode alloc): a fixed sampling interval in bytes; 0 = not given: every
     * CT_ALLOC_INTERVAL bytes, raised to keep under CT_ALLOC_RATE samples a second */
    int64_t alloc_interval;
    /* host: comma-separated full container ids whose JVMs get the agent (the containers of the
     * plugin's own engine, or those of --container), each "<id>:<pid>" with the host pid of the
     * container's main process (State.Pid): a JVM gets the agent only in that process's mount
     * namespace. NULL = none. At most CT_ATTACH_IDS_MAX. */
    const char *attach_ids;
    /* record, top, restore: the target container's full id (64 lowercase hex). Only the tasks
     * whose cgroup names it are the target's: others sharing the PID namespace (another
     * sidecar, a container started --pid container:<target>, an nsenter, or the donor of a
     * target started --pid host / container:X) are never looked at, attached or sampled. NULL:
     * the container of pid 1 in the namespace (a sidecar started by hand). */
    const char *target;
    bool help;
} ct_args;

/* The recording options every recording verb offers alike (profile, top, record, host), each one
 * entry of this table: the sidecar parses it, each verb takes the table as a group of its own
 * (common/args.h; its ct_args at `off`) so it is in its --help and its completion, and
 * ct_argv_build() sends it whenever it differs from ct_args_default(). A new recording option is
 * a field of ct_args, an entry here (its offset into ct_args; no store(), no ARG_LIST), and the
 * sidecar's use of it (HACKING.md "Add a recording option"). The entry after the last is empty. */
#define CT_RECORD_NSPECS 4
extern const arg_spec ct_record_specs[CT_RECORD_NSPECS + 1];
/* The group of a verb whose ct_args is at `off` in its struct. */
#define CT_RECORD_GROUP(off)                                                                       \
    {                                                                                              \
        ct_record_specs, CT_RECORD_NSPECS, (off)                                                   \
    }

void ct_args_default(ct_args *a, enum ct_verb verb);
/* The modes a run records: a->modes, or CT_MODES_DEFAULT when --mode was not given. */
unsigned ct_modes_of(const ct_args *a);
/* A verb's check of --mode: every mode given must be in `supported` (CT_MODE_BIT()s), else
 * FLAME_EXIT_USAGE with one line naming the mode, the verb and what it supports. */
int ct_modes_check(const ct_args *a, unsigned supported, const char *verb, flame_err *err);
/* The sidecar's argv (argv[0] = CT_SIDECAR_PATH), NULL-terminated; the strings live in buf.
 * Returns argc, or -1 when cap or bufcap is too small (CT_ARGV_MAX / CT_ARGV_BUF suffice). */
#define CT_ARGV_MAX 24
#define CT_ARGV_BUF 8192
#define CT_ATTACH_IDS_MAX 64
int ct_argv_build(const ct_args *a, const char **argv, size_t cap, char *buf, size_t bufcap);
/* pure: is s a full container id (64 lowercase hex digits, nothing else)? */
bool ct_is_container_id(const char *s, size_t n);
/* argv[0] is the program, argv[1] the verb. Errors are FLAME_EXIT_USAGE with one line. */
int ct_argv_parse(int argc, char **argv, ct_args *a, flame_err *err);
const char *ct_verb_name(enum ct_verb v);
const char *ct_inject_name(enum ct_inject i);
const char *ct_sampling_name(enum ct_sampling m);
/* For the plugin's option tables: "auto", "cpu", "thread", NULL. */
extern const char *const ct_sampling_names[];
/* The sidecar's --help. */
void ct_usage(FILE *out);

/* ---- the result stream: "<TAG> <payload>\n" lines ---- */

enum ct_tag {
    CT_TAG_VERSION = 'V', /* CT_VERSION, first line */
    CT_TAG_JVM = 'J',     /* ct_jvm: once per JVM found, before recording */
    CT_TAG_PROGRESS = 'P',
    CT_TAG_WARNING = 'W', /* free text */
    CT_TAG_FOLDED = 'F',  /* "frame;frame;... count" */
    /* a stack of another mode than cpu: "<mode> <count0> frame;frame;... <value>" (value in the
     * mode's unit, count0 its first pprof type's: objects, contentions; ct_mode_info) */
    CT_TAG_MODE = 'M',
    CT_TAG_SUMMARY = 'S',
    CT_TAG_ERROR = 'E',   /* "<code name> <text>", instead of F/S */
    CT_TAG_WINDOW = 'T',  /* top: a window starts; its F lines and a P line follow */
    CT_TAG_DONE = 'D',    /* last line; a stream without it was cut short */
    CT_TAG_HOST = 'H',    /* host: ct_host, before the S line */
    CT_TAG_TASK = 'K',    /* host: "pid tid vpid vtid key;process;thread", a U line's tid */
    CT_TAG_SAMPLES = 'U', /* host: samples for the timeline, "cpu,ms,tid" separated by spaces */
};
bool ct_tag_valid(int tag);

enum ct_error {
    CT_ERR_NO_JVM,           /* no JVM in the container */
    CT_ERR_NO_PID,           /* --pid names no JVM */
    CT_ERR_ATTACH,           /* the JVM refused the attach */
    CT_ERR_INJECT,           /* the agent could not be made visible */
    CT_ERR_PERF_DENIED,      /* perf not permitted */
    CT_ERR_PERF_UNSUPPORTED, /* perf not supported by the kernel */
    CT_ERR_USAGE,            /* bad command line (a plugin/sidecar version mismatch) */
    CT_ERR_ABORTED,          /* SIGTERM: stopped without a profile, target restored */
    CT_ERR_INTERNAL,         /* anything else */
    CT_ERR_COUNT
};
const char *ct_error_name(enum ct_error e); /* "no_jvm", ... */
/* The code named by s[0..n); CT_ERR_INTERNAL for an unknown name. */
enum ct_error ct_error_parse(const char *s, size_t n);
int ct_error_exit(enum ct_error e); /* the plugin's exit code (common/err.h) */

/* Split one line (without its '\n') into tag and payload. -1 (err set) when it is not one. */
int ct_line_split(const char *line, size_t len, enum ct_tag *tag, const char **payload,
                  size_t *plen, flame_err *err);
/* "<tag> <payload>" (or "<tag>" alone) into buf, control bytes of the payload replaced by '?'
 * so that a payload can never start a second line. Returns the length, or -1 when it does not fit
 * (buf then holds nothing). */
int ct_line_format(char *buf, size_t cap, enum ct_tag tag, const char *payload);

/* ---- payloads ---- */

enum ct_attach { CT_ATTACH_NONE, CT_ATTACH_AGENT, CT_ATTACH_PERFMAP, CT_ATTACH_COUNT };
enum ct_injected { CT_INJECTED_NONE, CT_INJECTED_MOUNT, CT_INJECTED_COPY, CT_INJECTED_COUNT };
const char *ct_attach_name(enum ct_attach a);
const char *ct_injected_name(enum ct_injected i);

typedef struct ct_jvm {
    uint32_t pid, nspid, uid, gid;
    char cmdline[1024];
    char java_version[32];
    bool preserve_fp;
    enum ct_attach attach;
    enum ct_injected inject;
    char reason[512]; /* why Java names may be missing; "" = none */
    uint64_t attach_ms;
    char
        container[144]; /* host: the container key of its stacks ("host", "<id>[/<id>]"), else "" */
    /* modes asked for that this JVM refused (CT_MODE_BIT()s: another agent holds the allocation
     * sampler, no agent): the plugin writes no file of them and exits FLAME_EXIT_PERF; why: one
     * line */
    unsigned refused;
    char refused_why[512];
} ct_jvm;

typedef struct ct_progress {
    uint64_t elapsed_ms, duration_ms, samples, jvms;
} ct_progress;

/* Phases the sidecar times, in order (S.timings_ms). */
enum ct_phase {
    CT_PH_SCAN,
    CT_PH_INJECT,
    CT_PH_ATTACH,
    CT_PH_FIRST_SAMPLE,
    CT_PH_RECORD,
    CT_PH_FINISH,
    CT_PH_SANITIZE,
    CT_PH_SCRIPT,
    CT_PH_TOTAL,
    CT_PH_COUNT
};
const char *ct_phase_name(enum ct_phase p);
/* Privilege phases whose CapEff the sidecar reports (S.caps). */
/* open: the recorder while it opens its perf events (per-CPU: CAP_PERFMON or CAP_SYS_ADMIN);
 * record: the recorder once they are open. */
enum ct_cap_phase { CT_CAPS_SETUP, CT_CAPS_OPEN, CT_CAPS_RECORD, CT_CAPS_PROCESS, CT_CAPS_COUNT };
const char *ct_cap_phase_name(enum ct_cap_phase p);

/* The sidecar's stack walks (sidecar/recorder/walk.h), one status each: reached the thread's root,
 * cut at the copy's end or the depth cap, or lost at a kind of frame (docs/SIDECAR.md "Stack
 * walking"). The order is walk.h's enum sc_walk_status. */
#define CT_WALK_NSTATUS 12
const char *ct_walk_status_name(int status);

typedef struct ct_summary {
    uint64_t samples, folded_samples, lost, jit_leaf_samples, jit_leaf_named;
    uint64_t walks, walk_tail;             /* samples walked; of them, read past the copy */
    uint64_t walk_status[CT_WALK_NSTATUS]; /* walks per status */
    double named_share;                    /* 0..1 */
    uint64_t map_lines, map_bytes;
    uint64_t timings_ms[CT_PH_COUNT];
    uint32_t jvms;
    char caps[CT_CAPS_COUNT][20]; /* CapEff as 16 hex digits, or "unknown" */
    char sampling[8];             /* what recorded: "cpu" (per-CPU events) or "thread" */
    char filter[8]; /* how other processes' samples were kept out: "bpf" (in the kernel), "user"
                       (dropped by the sidecar), "pid" (per-thread events: never taken) */
} ct_summary;

/* Walks cut short: at the depth cap, or where the stack could not be read further. */
static inline uint64_t ct_walk_cut(const ct_summary *s)
{
    return s->walk_status[1] + s->walk_status[11]; /* copy_end, max_depth */
}

/* host: what the shares of the table are relative to. */
typedef struct ct_host {
    uint64_t cpus, record_ms, frequency, tasks, unattributed;
    char cgroup[16]; /* the sidecar's view of the cgroup layout: "v1", "v2", "hybrid", "unknown" */
} ct_host;

typedef struct ct_window {
    uint64_t window, start_ms, ms, samples, folded, lost, skipped, jit_leaf, jit_leaf_named,
        process_ms, end_mono_ms;
} ct_window;

/* The uint64_t fields of a payload that travel as plain JSON integers: key and offset. The
 * writer (ct_format_*) and the plugin's reader (plugin/run/proto.c) walk the same table, so a new
 * field is one line here and in the struct. */
typedef struct ct_field {
    const char *key;
    size_t off;
} ct_field;
#define CT_PROGRESS_NFIELDS 4
extern const ct_field ct_progress_fields[CT_PROGRESS_NFIELDS];
#define CT_WINDOW_NFIELDS 11
#define CT_HOST_NFIELDS 5
extern const ct_field ct_host_fields[CT_HOST_NFIELDS];
extern const ct_field ct_window_fields[CT_WINDOW_NFIELDS];
#define CT_SUMMARY_NFIELDS 7 /* the counters; named_share, timings, jvms and caps apart */
extern const ct_field ct_summary_fields[CT_SUMMARY_NFIELDS];
#define CT_FIELD_U64(obj, f) ((uint64_t *)(void *)((char *)(obj) + (f)->off))

/* JSON object text of each payload into buf; the length, or -1 when it does not fit. Strings are
 * escaped (they come from the target). */
int ct_format_jvm(char *buf, size_t cap, const ct_jvm *j);
int ct_format_progress(char *buf, size_t cap, const ct_progress *p);
int ct_format_summary(char *buf, size_t cap, const ct_summary *s);
int ct_format_window(char *buf, size_t cap, const ct_window *w);
int ct_format_host(char *buf, size_t cap, const ct_host *h);
/* "<code name> <text>" */
int ct_format_error(char *buf, size_t cap, enum ct_error code, const char *text);
/* The E payload split back: code and the text that follows it. */
void ct_error_split(const char *payload, size_t n, enum ct_error *code, const char **text,
                    size_t *tlen);

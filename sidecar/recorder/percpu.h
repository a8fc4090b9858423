/* Per-CPU sampling: one cpu-clock event per CPU instead of perf's one event per
 * thread, so the cost no longer follows the target's context-switch rate. A small BPF program
 * attached to every event drops, in the kernel at the sample's overflow, every sample whose task
 * is not in the target's PID namespace (or is one of ours), so other containers' and the host's
 * samples never reach a ring buffer. What does arrive is written as a pipe-format perf.data
 * stream that Debian's `perf script` 6.1 reads unchanged (sidecar/process.c consumes it).
 *
 * Privilege: sc_percpu_open() needs CAP_PERFMON or CAP_SYS_ADMIN (CPU-wide events under
 * perf_event_paranoid > 0; loading a PERF_EVENT program: CAP_BPF+CAP_PERFMON or CAP_SYS_ADMIN);
 * sc_percpu_collect() opens /proc/<pid>/maps of the target's processes (CAP_SYS_PTRACE when
 * their uid differs; the access check is made at open). Nothing else does: synthesize, enable,
 * pump, disable and close work on descriptors already held, so the caller drops every
 * capability and forbids perf_event_open and bpf with seccomp right after collect.
 *
 * Everything read from the target (/proc/<pid>/maps, comm) is bounded and copied, never trusted,
 * and is read only after the privilege drop. Records of processes outside the target (the kernel
 * reports them with pid 0 in our namespace) are dropped as soon as their header is read: nothing
 * of them is kept, logged or sent. Module prefix: sc_percpu_. Errors: int (<0) with err filled;
 * err->detail is an SC_PERCPU_E_* value so the caller can tell "fall back to per-thread" from a
 * real failure. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/err.h"
#include "sidecar/recorder/offcpu.h"

#define SC_PERCPU_MAX_EXCLUDE 8    /* tgids the BPF filter itself refuses (ourselves) */
#define SC_PERCPU_MAX_TRACKED 4096 /* descendants of excluded processes followed in user space */
#define SC_PERCPU_MAX_CPUS 4096
#define SC_PERCPU_MAPS_MAX (8u << 20) /* bytes of one /proc/<pid>/maps read for synthesis */
#define SC_PERCPU_MAX_PROCS 4096      /* processes of the target synthesized at most */
#define SC_PERCPU_MAX_THREADS 65536   /* threads per process synthesized at most */

/* err->detail after a failed sc_percpu_open(): what the caller should do. */
enum sc_percpu_error {
    SC_PERCPU_E_NONE = 0,
    SC_PERCPU_E_PERF_DENIED, /* perf_event_open refused (EPERM/EACCES: no CAP_PERFMON/SYS_ADMIN,
                                seccomp, paranoid 3...): fall back to per-thread events */
    SC_PERCPU_E_BPF_DENIED,  /* bpf() refused or the program rejected: retry with
                                opts.user_filter_only (the sidecar then drops in user space) */
    SC_PERCPU_E_UNSUPPORTED, /* the kernel lacks something else (ENOENT/ENODEV/EOPNOTSUPP) */
    SC_PERCPU_E_OTHER,       /* resources (EMFILE, ENOMEM, mlock limit EPERM on mmap) */
};

/* Which processes of the namespace are the target's (docs/SIDECAR.md "Only the target's
 * tasks"): 1 the target's, 0 another's (another sidecar, a container or an nsenter that joined
 * the namespace), -1 gone. pid as seen in the namespace. Called once per process whose verdict
 * is not known: at synthesis, and for a process that entered the namespace from outside (its
 * FORK's parent is 0 there) or was never seen; children inherit their parent's verdict. */
typedef int (*sc_percpu_classify_fn)(void *ctx, uint32_t pid);

typedef struct sc_percpu_opts {
    unsigned freq; /* samples per second per CPU (the sidecar's --frequency, 99) */
    int pidns_fd;  /* an open fd of the target's PID namespace (/proc/self/ns/pid in a sidecar
                      that joined it): only its tasks are kept */
    pid_t exclude[SC_PERCPU_MAX_EXCLUDE]; /* tgids, as seen in that namespace, never kept (the
                                             sidecar and the recorder share it); their children
                                             are followed through FORK records */
    int n_exclude;
    unsigned ring_pages;      /* data pages per CPU, a power of two; 0 = 32 (128 KiB) */
    bool user_filter_only;    /* no BPF program: every CPU's samples reach us and are dropped here
                                 (costs our CPU; counted in samples_dropped) */
    struct sc_interp *interp; /* not NULL: samples carry bp/sp and a stack copy, rewritten by
                                 sidecar/recorder/interp.h before they are written (not owned) */
    uint64_t kernel_text;     /* not 0 (--kernel): kernel samples and callchains too, and a kernel
                                 MMAP record at this _text address for perf script --kallsyms */
    sc_percpu_classify_fn classify; /* NULL: every task of the namespace is wanted (host) */
    void *classify_ctx;
    /* host: every MMAP2 (the kernel's and ours) names its file by its inode, SC_INODE_DIR/<maj>.
     * <min>.<ino><path> (sidecar.h), so that perf script looks for that very file's copy; the
     * records then carry the inode, not the build-id (attr.build_id off) */
    bool inode_names;
    /* host: sample times in CLOCK_BOOTTIME (attr.clockid), the clock of a task's start time in
     * /proc/<pid>/stat, so that a sample is told to the task that had its tid then; without it
     * (refused) perf's own clock (st.boottime false) */
    bool clock_boottime;
    /* Off-CPU samples too (offcpu.h): SC_PERCPU_OFFCPU instead of cpu-clock samples (a dummy
     * event carries the side-band records), SC_PERCPU_WALL beside them; each weighted by its
     * period in ns (the off-CPU time it stands for; 1e9/freq for a cpu-clock sample). */
    int offcpu;
    uint64_t offcpu_min_ns; /* shorter intervals off CPU are not counted */
    unsigned offcpu_rate;   /* sampled switch-outs per second (0: SC_OFFCPU_RATE) */
} sc_percpu_opts;
enum { SC_PERCPU_ONCPU, SC_PERCPU_OFFCPU, SC_PERCPU_WALL };

typedef struct sc_percpu_stats {
    uint64_t samples;          /* SAMPLE records written */
    uint64_t samples_dropped;  /* SAMPLE records that reached user space and were dropped */
    uint64_t sideband;         /* COMM/MMAP/MMAP2/FORK/EXIT records of the target written */
    uint64_t sideband_dropped; /* side-band records of other processes, dropped unread */
    uint64_t other_dropped;    /* THROTTLE/UNTHROTTLE and record types we never asked for */
    uint64_t lost;             /* records the kernel could not write (ring full) */
    uint64_t synthesized;      /* COMM/MMAP2 records made from /proc at the start */
    uint64_t bytes;            /* bytes written to the output, headers included */
    uint64_t bad;              /* malformed ring records skipped (should stay 0) */
    uint64_t others;           /* samples of other tasks of the namespace, dropped (not ours) */
    uint64_t classified;       /* processes whose cgroup was read to tell whose they are */
    uint64_t wakeups;          /* pump passes */
    uint64_t period_changes;   /* PERF_EVENT_IOC_PERIOD passes over every CPU (varied period) */
    int cpus;                  /* events opened */
    bool bpf;                  /* the kernel filter is attached */
    bool boottime;             /* sample times are CLOCK_BOOTTIME */
} sc_percpu_stats;

typedef struct sc_percpu sc_percpu;

/* PRIVILEGED. Open a disabled cpu-clock event (user-space samples with user callchains, like
 * `perf record -e cpu-clock -g` under paranoid 2) on every online CPU, load the namespace filter
 * and attach it to each, map the ring buffers. *out is NULL on failure. */
int sc_percpu_open(sc_percpu **out, const sc_percpu_opts *o, flame_err *err);

/* PRIVILEGED (another user's maps need PTRACE_MODE_READ, checked at open). Open, but do not read,
 * /proc/<pid>/maps of every process in proc_dirfd (our /proc: the target's namespace) but the
 * excluded ones, at most SC_PERCPU_MAX_PROCS. */
int sc_percpu_collect(sc_percpu *s, int proc_dirfd, flame_err *err);

/* The pipe-format file header and one PERF_RECORD_HEADER_ATTR describing our event. First. */
int sc_percpu_write_header(sc_percpu *s, int fd, flame_err *err);

/* Start sampling on every CPU (ioctl ENABLE: no privilege). Called before synthesizing so that a
 * process started in between is seen by the kernel's own records (duplicates are harmless). */
int sc_percpu_enable(sc_percpu *s, flame_err *err);

/* Unprivileged. COMM for every thread and MMAP2 for every executable mapping of the processes
 * collected, read from the descriptors opened by sc_percpu_collect (closed here). */
int sc_percpu_synthesize(sc_percpu *s, int proc_dirfd, int fd, flame_err *err);

/* Wait up to timeout_ms for a ring to pass its watermark (or ctl_fd, if >= 0, to become
 * readable), then drain every ring once: keep the target's records, drop the rest, write them to
 * fd followed by a FINISHED_ROUND. Returns 1 if ctl_fd is readable, 0 otherwise, <0 on error
 * (a write error on fd, e.g. EPIPE). */
int sc_percpu_pump(sc_percpu *s, int fd, int ctl_fd, int timeout_ms, flame_err *err);

/* Stop sampling (ioctl DISABLE); pump once more afterwards to collect the tail. */
int sc_percpu_disable(sc_percpu *s, flame_err *err);

void sc_percpu_get_stats(const sc_percpu *s, sc_percpu_stats *st);
/* All 0 without off-CPU samples. */
void sc_percpu_get_offcpu_stats(const sc_percpu *s, sc_offcpu_stats *st);

/* Unprivileged. One MMAP2 of an anonymous executable range [start, start+len) of pid, as if the
 * process had mapped it before the recording (interp.h's synthetic addresses). */
int sc_percpu_synth_anon(sc_percpu *s, int fd, pid_t pid, uint64_t start, uint64_t len,
                         flame_err *err);
void sc_percpu_close(sc_percpu *s);

/* pure, for tests: clear a PERF_RECORD_MISC_MMAP_BUILD_ID flag that does not describe the MMAP2
 * record r (in place): the kernel sets it in the header it shares between the events an mmap is
 * written to and never clears it, so an event without attr.build_id (or one whose build-id could
 * not be read) gets the flag over a body of maj/min/ino; perf script then copies "maj" bytes as
 * a build-id into 20 (seen: size 254, a crash). build_id_attr: our event's attr.build_id. */
void sc_percpu_fix_mmap2(unsigned char *r, size_t size, bool build_id_attr);

/* pure, for tests: the MMAP2 record r (size bytes, header included, sample_id trailer of 24
 * bytes) with its file name moved under its inode's prefix (sidecar.h, SC_INODE_DIR), into out
 * (65536 bytes). Returns the new size, or 0 when the record stays as it is: not a file (no
 * inode, "//anon", "[vdso]"), a build-id instead of an inode, or malformed. */
size_t sc_percpu_inode_name(const unsigned char *r, size_t size, unsigned char *out);

/* The cpu-clock period, varied (docs/SIDECAR.md "Varied period"). A cpu-clock event is an
 * hrtimer of a fixed period (1e9/freq ns): a thread whose work repeats at that period (or a
 * multiple) meets every tick of a CPU at the same phase of its round, for as long as the
 * recording lasts, and its share comes out anywhere from 0 to 100 %. So every
 * SC_PERCPU_JITTER_MS or so the recorder gives each CPU's event a new period, drawn uniformly
 * from [Tc/2, 3Tc/2] (PERF_EVENT_IOC_PERIOD; the kernel restarts the timer with it at once):
 * the k-th tick after a change is then at a phase uniform over any round of length Tc, whatever
 * the phase of the change. The restart drops the part of the old period already run (half a
 * period per change on average) and E[1/P] is not 1/E[P]; Tc is chosen so that the ticks still
 * come at freq a second on average:  Tc = T ln 3 / (1 + T / (2 D))  (T = 1e9/freq, D = the mean
 * time between changes seen so far). Every sample keeps the weight T (its period field is
 * written as T): a cpu sample counts one, a wall sample T ns, as before. */
#define SC_PERCPU_JITTER_MS 50
/* pure, for tests: the next period in ns for nominal period t and mean segment d (ns); *rng is
 * a xorshift64 state (not 0). */
uint64_t sc_percpu_jitter_period(uint64_t t, uint64_t d, uint64_t *rng);

/* pure, for tests: the BPF filter as instructions (struct bpf_insn, 8 bytes each) into insns
 * (capacity cap); returns the count or -1. dev/ino: the namespace's nsfs device (kernel encoding)
 * and inode; exclude: tgids to refuse. */
int sc_percpu_build_filter(void *insns, int cap, uint64_t dev, uint64_t ino, const pid_t *exclude,
                           int n_exclude);

/* pure, for tests: one line of /proc/<pid>/maps (without its '\n'). Returns 1 for an executable
 * mapping (fields filled, path NUL-terminated and cut to path_cap-1 bytes; "" for an anonymous
 * one), 0 for a line to skip (not executable), -1 for a malformed line. */
typedef struct sc_maps_entry {
    uint64_t start, end, pgoff, ino;
    uint32_t maj, min, prot, flags;
} sc_maps_entry;
int sc_percpu_parse_maps_line(const char *line, size_t len, sc_maps_entry *e, char *path,
                              size_t path_cap);

/* pure, for tests: decide about one ring record (r, size bytes: header included) as the pump
 * does. Returns true to keep it. Exposed through a standalone state so tests need no events. */
#define SC_PERCPU_VERDICTS 16384 /* processes whose verdict is kept; a full table starts over */
typedef struct sc_percpu_verdict {
    uint32_t pid;        /* 0: an empty slot */
    uint8_t now, before; /* the pid's process now, and the one it had before (SC_PV_*) */
    uint64_t since;      /* perf time of the FORK that gave the pid to `now`'s process; 0: before */
} sc_percpu_verdict;
enum { SC_PV_UNKNOWN, SC_PV_TARGET, SC_PV_OTHER };
typedef struct sc_percpu_filter {
    pid_t tracked[SC_PERCPU_MAX_TRACKED]; /* excluded tgids, then their descendants */
    int n_tracked, n_exclude;
    sc_percpu_stats st;
    sc_percpu_classify_fn classify; /* NULL: every task of the namespace (host) */
    void *classify_ctx;
    sc_percpu_verdict verdict[SC_PERCPU_VERDICTS]; /* open addressing over pids */
    size_t n_verdict;
} sc_percpu_filter;
void sc_percpu_filter_init(sc_percpu_filter *f, const pid_t *exclude, int n_exclude);
/* Keep only the target's processes from now on (classify as in sc_percpu_opts). */
void sc_percpu_filter_set_target(sc_percpu_filter *f, sc_percpu_classify_fn classify, void *ctx);
/* Is process pid the target's (asked at time; 0 = now)? Unknown ones are classified. */
bool sc_percpu_filter_is_target(sc_percpu_filter *f, uint32_t pid, uint64_t time);
/* First pass over a batch: follow FORK records of our own processes (so that their children's
 * samples, possibly read earlier from another CPU's ring, are recognised), give every new
 * process its parent's verdict, and judge again a process of another's that execs (a COMM
 * record with COMM_EXEC: runc moves a `docker exec`'s process into its container's cgroup after
 * it entered the namespace, before it execs the command). */
void sc_percpu_filter_note_fork(sc_percpu_filter *f, const unsigned char *r, size_t size);
bool sc_percpu_filter_record(sc_percpu_filter *f, const unsigned char *r, size_t size);

/* One run of the sidecar, shared by its phases in the order main.c calls them:
 *   discover (discover.c) -> prepare each JVM: inject + attach (jvm.c) -> record (record.c, or the
 *   windows of top.c) -> finish each JVM: complete and fetch its map, undo (jvm.c) -> publish the
 *   maps and drop privilege (process.c, harden.c) -> process: perf script + fold (process.c)
 * Everything it prints is the result stream of common/contract.h (output.c). */
#pragma once
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/contract.h"
#include "common/err.h"
#include "flame/fold.h"
#include "sidecar/sidecar.h"

#define SC_PERF "/usr/bin/perf" /* installed execute-only: it runs non-dumpable (harden.c) */

/* ---- workdir.c: the sidecar's own files, in a directory only root can enter by name ---- */
#define SC_PRIVATE_DIR "/tmp/.flame"       /* 0700, root's */
#define SC_WORK_DIR SC_PRIVATE_DIR "/work" /* 0755: reached through sc_work_fd() only */
#define SC_WORK_DATA "perf.data"           /* the recording (names relative to the work dir) */
#define SC_SYMFS_NAME "symfs"              /* copies of the target's libraries, for perf script */
#define SC_SYMFS SC_WORK_DIR "/" SC_SYMFS_NAME /* the same, for root's path-based copies */
/* /tmp 0711, the private and work directories made (or checked), the work directory opened. */
int sc_work_setup(flame_err *err);
/* The work directory (O_PATH, close-on-exec): every process of the run inherits it. */
int sc_work_fd(void);
/* Create name in the work directory, anew: unlink, then O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC. */
int sc_work_create(const char *name, int flags, mode_t mode);
/* Open an existing name of the work directory (O_NOFOLLOW|O_CLOEXEC added). */
int sc_work_open(const char *name, int flags);
void sc_work_unlink(const char *name);
/* "/proc/self/fd/<work fd>/name": the work directory as an exec'd perf that inherited the
 * descriptor sees it. */
void sc_work_path(char *buf, size_t cap, const char *name);

/* ---- symfs.c: what was copied so far in this run (every JVM shares SC_SYMFS) ---- */
typedef struct sc_symfs_file {
    char path[SC_SYMFS_PATH_MAX + 1]; /* the mapping's path (messages) */
    /* where it is below SC_SYMFS: the mapping's path, or (host) its inode's prefix + the path */
    char name[SC_INODE_PREFIX_MAX + SC_SYMFS_PATH_MAX + 1];
    uint64_t dev, ino;
    bool conflict; /* two different inodes under this name: no copy (never a wrong name) */
    char build_id[2 * SC_BUILD_ID_MAX + 1];
} sc_symfs_file;
typedef struct sc_symfs_tab {
    sc_symfs_file v[SC_SYMFS_FILES_MAX];
    int n;
    uint64_t bytes; /* of every copy, debug files too (SC_SYMFS_TOTAL_MAX) */
} sc_symfs_tab;

typedef struct sc_session {
    ct_args o;
    sc_jvm jvms[SC_MAX_JVMS];
    int ns_fd[SC_MAX_JVMS];  /* each JVM's mount namespace, -1 when it could not be opened */
    int raw_fd[SC_MAX_JVMS]; /* the JVM's map as fetched, -1 when there is none */
    /* the agent's alloc/lock samples as fetched (docs/MODES.md), -1 when none */
    int modes_fd[SC_MAX_JVMS];
    int n;
    int64_t t0; /* mono_ms() at start */
    uint64_t t[CT_PH_COUNT];
    char caps[CT_CAPS_COUNT][20];
    uint64_t samples, lost;
    int sampling;   /* enum ct_sampling: as asked (auto), then what records (cpu or thread) */
    char filter[8]; /* S.filter: "bpf", "user" or "pid" */
    bool interp;    /* name interpreted frames (per-CPU recordings; interp.h) */
    /* --mode lock without cpu, wall or offcpu: the recorder takes off-CPU samples instead of
     * cpu-clock ones, for the java.util.concurrent waits among them (juclock.c); cleared when
     * the kernel refuses them (the lock profile then has the monitors alone) */
    bool juc;
    int interp_window;    /* top: the window being recorded; -1 for a one-shot recording */
    uint64_t kernel_text; /* --kernel: the kernel's _text address (kallsyms.h); 0 without */
    sc_symfs_tab symfs;   /* the target's libraries copied for perf script (symfs.c) */
    int kallsyms_fd;      /* --kernel: the copy of /proc/kallsyms (a memfd, kallsyms.h); -1 */
    /* record, top, restore: the target container's id (--target, or pid 1's container): only
     * processes whose cgroup names it are looked at, attached and sampled */
    char target[65];
    bool boottime; /* host: the recording's sample times are CLOCK_BOOTTIME */
    /* host: the scanner child writing the task table while the recording runs (-1: none), its
     * "stop" pipe, and the table opened as root for processing, which runs as nobody (host.c) */
    struct {
        pid_t scanner_pid;
        int scanner_ctl, table_rfd;
    } host;
    /* set by the signal handlers: SIGINT = stop and still deliver, SIGTERM = abort */
    const volatile sig_atomic_t *stop, *abort;
} sc_session;

/* ---- output.c: the result stream on stdout ---- */
void sc_out(enum ct_tag tag, const char *payload);
void sc_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void sc_out_jvm(const sc_jvm *j);
/* The agent's alloc/lock samples of every JVM as M lines (sidecar/modes.c); unprivileged. */
void sc_emit_modes(sc_session *s);
/* JVM k's samples of one window (top.c), from fd (the fetched file), as M lines; unprivileged. */
void sc_emit_modes_fd(const sc_session *s, int k, int fd);
/* One stack of a mode other than cpu (an M line, common/contract.h): value in the mode's unit,
 * count0 its first pprof type's (objects, contentions; 0 when the mode has one type). The stack
 * is "frame;frame;..." from the root, each frame already checked by its producer; a NUL or
 * control byte becomes '?'. */
void sc_out_mode(enum ct_mode m, uint64_t count0, const char *stack, size_t len, uint64_t value);
void sc_out_progress(uint64_t elapsed_ms, uint64_t duration_ms, uint64_t samples, int jvms);
/* E line for err: its code is err->detail - 1 when set by sc_fail(), else CT_ERR_INTERNAL. */
void sc_out_error(const flame_err *err);
/* flame_fail() with the contract's error code (E line) and its exit code. */
int sc_fail(flame_err *err, enum ct_error code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- limits.c: the container's limits, as the kernel enforced them ---- */
/* OOM kills in our memory cgroup so far (-1: unknown). */
long long sc_oom_kills(void);
/* sc_fail() for a child of ours (what) killed by sig we did not send: the memory limit when the
 * cgroup counted an OOM kill (with the limit and how to raise it), else the signal. */
int sc_fail_killed(flame_err *err, const char *what, int sig);

/* ---- jvm.c: what is done to each JVM in the target, and undone ---- */
/* The modes asked of the agent (alloc, lock) in this run: 0 for verbs that never ask them. */
unsigned sc_agent_modes(const sc_session *s);
void sc_prepare_jvm(sc_session *s, int k);
/* Open JVM k's mount namespace into s->ns_fd[k] (-1 and j->reason set on failure). */
void sc_open_ns(sc_session *s, int k);
/* Name JVM k's root frame ("java-<pid> <Main>") and send its J line. */
void sc_announce_jvm(sc_session *s, int k);
/* fetch: make the map complete and bring it (and libjvm.so) over; false on abort/error paths,
 * which only undo. */
void sc_finish_jvm(sc_session *s, int k, bool fetch);
/* `restore`: undo what a SIGKILLed sidecar left in JVM k (only mounts the kernel shows as ours). */
int sc_restore_jvm(sc_session *s, int k);

/* ---- symfs.c: the target's libraries for perf script (privileged phase) ---- */
typedef struct sc_symfs_stats {
    unsigned files, skipped, unsafe, conflicts, debug;
    uint64_t bytes;
} sc_symfs_stats;
/* Copy the inode of every executable file mapping of JVM j into SC_SYMFS (bounded, deduplicated
 * over the run in t, the session's; W lines for what stays unnamed), and the target's
 * build-id-matched debug files for them (ns: its mount namespace, -1 for none). by_inode (host):
 * each copy under its inode's name (SC_INODE_DIR), as the host recorder names the mappings,
 * instead of its path alone. 0, or -errno when its maps cannot be read. */
int sc_symfs_copy(sc_symfs_tab *t, sc_jvm *j, int ns, bool by_inode, sc_symfs_stats *st);

/* ---- record.c ---- */
/* Record for the duration (or until *stop) into SC_WORK_DATA, P lines every second; with
 * per-CPU sampling, JVMs that start in the container meanwhile are prepared and recorded too. */
int sc_record(sc_session *s, flame_err *err);

/* ---- host.c: the `host` verb (docs/HOST.md) ---- */
/* The hardened scanner child that writes the task table while the recording runs. */
int sc_host_scanner_start(sc_session *s, flame_err *err);
void sc_host_scanner_stop(sc_session *s);
/* Unprivileged: perf script folded with container;process;thread roots, H, F and S lines. */
int sc_host_process(sc_session *s, const int *map_fd, flame_err *err);
/* The JVMs of the containers named by --attach, into s->jvms (their container key set). */
int sc_host_find_jvms(sc_session *s, flame_err *err);

/* ---- process.c ---- */
/* The rename step: our /tmp/perf-<pid>.map for each JVM with a fetched map (as root, before the
 * privilege drop); map_fd[k] is -1 for the others. */
void sc_publish_maps(sc_session *s, int *map_fd);
/* Create our /tmp/perf-<pid>.map for one JVM (and the link named by its in-namespace pid);
 * the fd, or -1. */
int sc_create_map(const sc_jvm *j);
/* top (top.c): windows of interval_ms, each processed by a hardened child and streamed as T, F
 * and P lines while the next one records. Runs until *stop. */
int sc_top_run(sc_session *s, flame_err *err);
/* Unprivileged: sanitise the maps, perf script + fold, F lines and the S line. */
int sc_process(sc_session *s, const int *map_fd, flame_err *err);
/* Unprivileged: each fetched map sanitised into map_fd (the first half of sc_process). */
void sc_refresh_maps(sc_session *s, const int *map_fd, uint64_t *lines, uint64_t *bytes);
/* Rewrite map_fd with the sanitised first `size` bytes of the raw map (sc_map_sanitize). */
int sc_map_refresh(int raw_fd, long long size, int map_fd, sc_map_stats *st, flame_err *err);
/* perf script over the pipe-format data on data_fd (symfs: with the copies of the target's
 * libraries), fed to each of the nf folders f[] line by line (several modes of one recording,
 * each folder keeping its own samples: fold_opts.state_mask), then folder_finish. cpu: print each
 * sample's CPU too (host's timeline). What else perf script is told comes from the session (s):
 * --kernel's copy of the kernel's symbols, --max-stack. perf runs exec'd from an execute-only file
 * (non-dumpable), with a fixed environment, and reaches the work directory only through the
 * inherited descriptor. A perf killed by a signal (the memory limit) fails the run. abort: stop
 * reading when it is set (NULL: never). */
int sc_perf_script(const sc_session *s, int data_fd, bool symfs, bool cpu, folder *const *f, int nf,
                   const volatile sig_atomic_t *abort, flame_err *err);
/* Every folded stack of f as an F line. */
int sc_emit_folded(const folder *f);
/* Every folded stack of f as an M line of mode m (wall, offcpu: values in ns). */
int sc_emit_mode(const folder *f, enum ct_mode m);
/* What the recorder's samples are (docs/MODES.md): CT_MODE_WALL (cpu-clock and off-CPU samples,
 * each tagged with its thread's state: for wall, or for two or more of cpu, wall and offcpu,
 * which sc_process splits by the tag), CT_MODE_OFFCPU (off-CPU samples), or CT_MODE_CPU; each
 * but cpu weighted by its period in ns. */
enum ct_mode sc_perf_mode(const ct_args *a);
/* What the recorder of s records: sc_perf_mode(), or CT_MODE_OFFCPU for s->juc. */
enum ct_mode sc_rec_mode(const sc_session *s);
/* --mode lock is asked for and the recording has off-CPU samples: true when a's modes would have
 * the recorder take them for lock alone (sc_session.juc; a one-shot recording or the top
 * verb's windows, per CPU). */
bool sc_juc_wanted(const ct_args *a);
/* The java.util.concurrent lock waits among f's off-CPU stacks (sc_juc_lock) as lock M lines;
 * nroot: the names above each stack's frames (the thread, and the JVM's root with several). */
int sc_emit_juc(const folder *f, int nroot);
/* One recording's samples split by mode (docs/MODES.md "Several modes in one run"): the
 * folders sc_perf_script feeds (feed[0..nfeed)), one per mode that reads them: from a wall
 * recording (rm) with two or more of cpu, wall and offcpu asked (modes), cpu's keeps the
 * [running] samples one a sample, offcpu's the others in ns, wall's all of them, tagged. The
 * one-shot profile (sc_process) and every window of the top verb (top.c) split alike. */
typedef struct sc_split {
    folder *f[3]; /* as recorded (NULL when no mode reads it), cpu's, offcpu's */
    folder *feed[3];
    int nfeed;
    enum ct_mode rm;
    unsigned modes;
} sc_split;
/* 0, or -1 out of memory (sc_split_free either way). */
int sc_split_new(sc_split *mf, const fold_opts *base, enum ct_mode rm, unsigned modes);
void sc_split_free(sc_split *mf);
/* false: no mode reads the recorder's samples (alloc alone; lock without off-CPU samples). */
bool sc_split_wants_samples(const sc_split *mf);
/* The folder whose stats the S and T lines carry: cpu's, else the recording's, else offcpu's. */
const folder *sc_split_stats(const sc_split *mf);
/* F lines (cpu), M lines (offcpu, wall) and lock's java.util.concurrent waits (sc_emit_juc,
 * nroot as there), each mode's from its folder. */
void sc_split_emit(const sc_split *mf, int nroot);
/* The `S` line: counts, timings and capabilities of the session, the folders' stats fs. */
void sc_emit_summary(sc_session *s, const fold_stats *fs, uint64_t map_lines, uint64_t map_bytes,
                     const char *sampling);
/* Append the recorder's names of JVM k's interpreted and compiled frames (window: as
 * sc_interp_names_path) to its map, sanitised; warn once (first window) when they could not be
 * named or its stacks walked. walk (may be NULL): gets the recorder's walk counts. */
void sc_append_interp(const sc_session *s, int k, int window, int map_fd, sc_map_stats *total,
                      sc_jvm *walk);
/* The root frame of a JVM's stacks when there are several ("java-<pid> <Main>"), or NULL. */
const char *sc_root_for_pid(void *ctx, long pid);

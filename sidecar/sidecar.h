/* flame-sidecar: the privileged helper that runs inside a container sharing the target's PID
 * namespace. It finds the JVMs (/proc), injects the perf-map agent read-only, attaches as the
 * JVM's user, records with perf, folds `perf script` and streams docs/PROTOCOL.md on stdout.
 * Module prefix: sc_. Pure parsers (no I/O) are marked "pure" and are unit-tested. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "common/contract.h"
#include "common/err.h"

/* Bounds on everything read from the (hostile) target. */
#define SC_STATUS_MAX (16 * 1024)       /* /proc/<pid>/status */
#define SC_MAPS_MAX (8 * 1024 * 1024)   /* /proc/<pid>/maps: stop scanning after this */
#define SC_CMDLINE_MAX (64 * 1024)      /* /proc/<pid>/cmdline and environ */
#define SC_MAP_FILE_MAX (256ull << 20)  /* the JVM's perf map */
#define SC_MAP_LINE_MAX 4096            /* one perf map line; longer lines are dropped */
#define SC_ATTACH_REPLY_MAX (64 * 1024) /* attach listener answer */
#define SC_MAX_JVMS 16
#define SC_AGENT_DIR "/opt/docker-flame/agent"
#define SC_AGENT_NAME "libflameagent.so"

/* ---- /proc (discover.c) ---- */
typedef struct sc_status {
    pid_t pid, ppid;
    pid_t nspid; /* innermost NStgid: the pid the JVM sees itself as */
    uid_t uid;   /* effective */
    gid_t gid;   /* effective */
    char name[64];
} sc_status;

/* pure: parse the text of /proc/<pid>/status. */
int sc_parse_status(const char *buf, size_t len, sc_status *out, flame_err *err);
/* pure: does this chunk of /proc/<pid>/maps text map a libjvm.so? Copies its path to
 * path (NUL-terminated, truncated to cap) when found. Only whole lines are considered. */
bool sc_maps_find_libjvm(const char *buf, size_t len, char *path, size_t cap);
/* pure: PreserveFramePointer from NUL-separated JVM options (argv or "A B C" joined): returns
 * 1 on, 0 off, -1 not mentioned. Later mentions win; `prev` is the result so far. */
int sc_flag_preserve_fp(const char *opts, size_t len, char sep, int prev);
/* pure: major version from a JDK `release` file text (JAVA_VERSION="17.0.9" -> 17, "1.8.0" -> 8);
 * copies the quoted version into ver. -1 when absent. */
int sc_parse_release(const char *buf, size_t len, char *ver, size_t cap);

/* pure: the main class (or jar basename) from a space-joined java command line; "" if none. */
void sc_main_class(const char *cmdline, char *out, size_t cap);

typedef struct sc_jvm {
    sc_status st;
    char cmdline[1024]; /* printable, spaces between args, truncated */
    char java_version[32];
    int java_major; /* -1 unknown */
    bool preserve_fp;
    bool attach_disabled; /* -XX:+DisableAttachMechanism */
    char libjvm[512];
    /* state, for undo */
    enum ct_injected inject;
    enum ct_attach attach;
    char inject_dir[64];  /* ".docker-flame-<hex>" under the target's /tmp */
    char agent_path[128]; /* path of the agent as the JVM sees it */
    /* The agent's map is /tmp/perf-<nspid>.<map_tag>.map, the hex of inject_dir: a second
     * profiler of the same JVM (its own copy of the agent, inject.c) has its own file, and
     * neither truncates nor deletes the other's. "" (Compiler.perfmap, HotSpot's fixed name,
     * or no agent): /tmp/perf-<nspid>.map. */
    char map_tag[20];
    char reason[512];      /* why Java names may be missing ("" = none) */
    unsigned refused;      /* modes asked for that this JVM refused (ct_jvm.refused) */
    char refused_why[512]; /* one line: why */
    bool agent_started;
    long attach_ms;
    unsigned long long map_lines, map_bytes;
    char root_frame[96];
    char container[144]; /* host: the key of its container (docs/HOST.md), else "" */
    /* its stack walks (recorder/walk.h), as the recorder reported them in the names file */
    uint64_t walks, walk_tail, walk_status[CT_WALK_NSTATUS];
    char walk_off[192]; /* why its stacks were not walked, "" when they were or no report */
    int pidfd;          /* this process (pidfd_open at discovery), -1 when refused */
} sc_jvm;

/* Scan /proc for HotSpot JVMs, skipping ourselves and our children and, with target (a full
 * container id; NULL: every process), every process whose cgroup does not name it. seen gets
 * "pid comm, ..." of those processes (truncated) for the no_jvm message. Each JVM's pidfd is
 * open (-1 where pidfd_open is refused): the caller closes it. Returns the number found
 * (<= cap) or <0. */
int sc_find_jvms(sc_jvm *out, int cap, char *seen, size_t seen_cap, const char *target,
                 flame_err *err);
/* 1 when the cgroup text at dirfd/path (a /proc/<pid>/cgroup) names target as its innermost
 * container (hostproc.h: sc_cgroup_innermost), 0 when another or none, -1 unreadable (gone). */
int sc_cgroup_is(int dirfd, const char *path, const char *target);
/* Has the process of pidfd not exited yet? (false for -1) */
bool sc_pidfd_alive(int pidfd);
/* Read a whole small file below /proc (bounded, O_NOFOLLOW; procfile.c); NUL-terminates. Returns
 * length or <0 errno. */
ssize_t sc_read_bounded(int dirfd, const char *path, char *buf, size_t cap);

/* ---- the target's libraries for perf's --symfs (symfs.c) ---- */
#define SC_SYMFS_PATH_MAX 480             /* a mapping's path we copy under (longer: skipped) */
#define SC_SYMFS_FILE_MAX (128ull << 20)  /* one copied library */
#define SC_SYMFS_TOTAL_MAX (192ull << 20) /* all copies: the 512 MiB /tmp holds perf.data too */
#define SC_SYMFS_FILES_MAX 64
/* host (docs/HOST.md "Native frames"): every mapped file is named for perf by its inode,
 * <SC_INODE_DIR>/<major>.<minor>.<inode><path>, in the recorder's MMAP2 records and in the symfs
 * copies alike, so that two containers' different files at one path never share a copy. */
#define SC_INODE_DIR "/.by-inode"
#define SC_INODE_PREFIX_MAX 56 /* "/.by-inode/" + 10 + 1 + 10 + 1 + 20 digits + NUL */
/* pure: the prefix for a file (no trailing slash) into buf; its length, or -1 if cap is short */
int sc_inode_prefix(char *buf, size_t cap, uint32_t major, uint32_t minor, uint64_t ino);
typedef struct sc_symfs_map {
    uint64_t start, end, ino;
    uint32_t dev_major, dev_minor;
    char path[SC_SYMFS_PATH_MAX + 1];
} sc_symfs_map;
/* pure: parse one /proc/<pid>/maps line (len bytes, no newline) strictly. Returns 1 for an
 * executable mapping of a file whose path sc_symfs_path_ok accepts (in m->path), 2 for an
 * executable file mapping whose name is refused, 0 for any other valid line, -1 if malformed. */
int sc_symfs_parse_line(const char *line, size_t len, sc_symfs_map *m);
/* pure: may this kernel-printed mapping name be used below SC_SYMFS? Absolute, printable ASCII
 * without backslash (the kernel's escape), no empty, "." or ".." component, no trailing slash,
 * at most SC_SYMFS_PATH_MAX bytes (" (deleted)" is kept: it is the name perf looks up). */
bool sc_symfs_path_ok(const char *path);

#define SC_BUILD_ID_MAX 20 /* bytes (SHA-1); perf keeps no longer ones */
/* pure: the GNU build-id (NT_GNU_BUILD_ID note, through program or section headers) of the ELF64
 * little-endian image p (len bytes) as lowercase hex into hex (2 * SC_BUILD_ID_MAX + 1 bytes).
 * 1 found, 0 not (hex is then ""). */
int sc_elf_build_id(const unsigned char *p, size_t len, char *hex);

/* ---- safe target file helpers (target.c) ---- */
/* openat2 with RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS|RESOLVE_BENEATH; -errno on failure. */
int sc_open_beneath(int dirfd, const char *path, int flags, mode_t mode);
/* Fork a child that setns()es into ns_fd (the target's mount namespace), optionally switches
 * to uid/gid (as_user), and runs fn(arg); its int result (or -errno) comes back through a pipe.
 * The caller must be single-threaded (setns(CLONE_NEWNS) refuses multithreaded callers).
 * Bounded: the child is killed after timeout_ms. */
/* A short text the child sends back with its result (the attach listener's answer). */
typedef struct sc_reply {
    size_t len;
    char text[SC_ATTACH_REPLY_MAX + 1]; /* NUL-terminated */
} sc_reply;
typedef int (*sc_child_fn)(void *arg, sc_reply *reply);
/* reply may be NULL when the child sends no text. */
int sc_in_target(int ns_fd, bool as_user, uid_t uid, gid_t gid, sc_child_fn fn, void *arg,
                 int timeout_ms, sc_reply *reply);

/* ---- injection (inject.c) ---- */
int sc_inject(sc_jvm *j, int ns_fd, enum ct_injected how, flame_err *err);
int sc_inject_undo(sc_jvm *j, int ns_fd, flame_err *err);

/* ---- attach (attach.c) ---- */
/* pure: build "1\0cmd\0a0\0a1\0a2\0" into buf; returns length or -1 if it does not fit. */
ssize_t sc_attach_request(char *buf, size_t cap, const char *cmd, const char *a0, const char *a1,
                          const char *a2);
/* pure: interpret an attach answer. *status = the numeric first line, for a `load` the agent's
 * return value when the JVM gave one (CT_AGENT_RC_BUSY: the allocation sampler is another
 * agent's); returns 0 when the command succeeded (for `load`: agent returned 0, also on JDK 21+
 * "return code: N" texts), 1 when the JVM or agent reported failure, -1 when the answer is
 * malformed. msg gets a printable excerpt. */
int sc_attach_parse_reply(const char *buf, size_t len, bool is_load, int *status, char *msg,
                          size_t cap);
/* Run one attach command as the JVM's user; out gets a printable excerpt of the answer, *status
 * (when not NULL) sc_attach_parse_reply()'s. Returns 0 ok, 1 refused by JVM/agent, <0 when no
 * connection could be made. */
int sc_attach_command(sc_jvm *j, int ns_fd, int timeout_ms, const char *cmd, const char *a0,
                      const char *a1, const char *a2, char *out, size_t cap, int *status,
                      flame_err *err);
/* Copy the JVM's /tmp/perf-<nspid>.map into out_fd (bounded) and delete it in the target. */
int sc_fetch_map(sc_jvm *j, int ns_fd, int out_fd, flame_err *err);
/* Copy a regular file of the target (absolute path as the JVM sees it, no symlinks on the way,
 * <= SC_MAP_FILE_MAX) into out_fd, as the JVM's user. */
int sc_fetch_file(sc_jvm *j, int ns_fd, const char *abs_path, int out_fd, flame_err *err);
/* top: append the map's bytes from offset `from` on to out_fd, leaving the map in place (the
 * agent keeps writing it). Returns the number of bytes copied or <0. */
int sc_peek_map(const sc_jvm *j, int ns_fd, int out_fd, long long from, flame_err *err);
/* 0 when the target's /tmp/perf-<nspid>.map is absent or a regular file of the JVM's user (a map
 * the JVM may rewrite); -EEXIST when something else was planted there (HotSpot's
 * Compiler.perfmap would write through a symlink or block on a FIFO). */
int sc_map_name_free(sc_jvm *j, int ns_fd);
/* Remove the target's /tmp/perf-<nspid>.map if it is a regular file of the JVM's user. */
int sc_remove_map(sc_jvm *j, int ns_fd);
/* The agent's alloc/lock samples, /tmp/perf-<nspid>.<tag>.modes (docs/MODES.md): copied as
 * sc_fetch_map copies the map (the JVM's user, no symlink, regular file, bounded) and removed;
 * sc_remove_modes removes it alone (abort). */
int sc_fetch_modes(sc_jvm *j, int ns_fd, int out_fd, flame_err *err);
int sc_remove_modes(sc_jvm *j, int ns_fd);
/* One line of the agent's alloc/lock file (sidecar/modes.c), checked: mode asked for, counts
 * <= 2^53, value > 0, a stack of 1..SC_MODES_FRAMES_MAX non-empty frames and at most
 * SC_MODES_STACK_MAX bytes; control bytes become '?' in place. stack points into line. */
#define SC_MODES_STACK_MAX (256 * 1024)
#define SC_MODES_FRAMES_MAX 2052  /* the agent's depth bound, 2048, + thread + class */
#define SC_MODES_LINES_MAX 100000 /* the agent keeps 16384 stacks */
typedef struct sc_modes_rec {
    enum ct_mode mode;
    uint64_t count0, value;
    const char *stack;
    size_t len, frames;
} sc_modes_rec;
int sc_modes_parse(char *line, size_t n, unsigned modes, sc_modes_rec *r);
/* The agent modes of a mode set: CT_MODE_ALLOC and CT_MODE_LOCK bits. */
#define SC_AGENT_MODES (CT_MODE_BIT(CT_MODE_ALLOC) | CT_MODE_BIT(CT_MODE_LOCK))

/* ---- java.util.concurrent lock waits (juclock.c), pure ---- */
/* A folded off-CPU stack ("thread;frame;...", from the root; nroot >= 1 names before the frames:
 * the thread, and the JVM's root when there are several) as a lock stack: when the thread left
 * the CPU in LockSupport.park under a lock's acquire (docs/MODES.md "java.util.concurrent
 * locks"), the names, the Java frames from the first one to the acquire, and the lock's class
 * as the leaf ("java.util.concurrent.locks.ReentrantLock_[l]"), written to out. Returns its
 * length, 0 when the stack is no lock wait, -1 when it does not fit in cap (2 * len + 8 always
 * does). */
long sc_juc_lock(const char *stack, size_t len, int nroot, char *out, size_t cap);

/* ---- perf map sanitizer (perfmap.c), pure over buffers ---- */
typedef struct sc_map_stats {
    unsigned long long lines_in, lines_out, dropped, bytes_out;
} sc_map_stats;
/* Sanitize perf map text: keep lines `<hex start> <hex size> <name>` with valid hex (optional
 * 0x), 0 < size <= 1 GiB, no overflow; control bytes in names become '?'; later entries win for
 * overlapping ranges; output sorted by address. Returns 0 or <0 (out of memory). */
int sc_map_sanitize(const char *in, size_t len, FILE *out, sc_map_stats *st, flame_err *err);

/* ---- hardening (harden.c) ---- */
/* CapEff of process pid (0 = this one) as hex text, from its /proc status; "unknown" if unread. */
void sc_cap_eff(pid_t pid, char *out, size_t cap);
/* The run's unprivileged uid (and gid), chosen once at the start by sc_pick_run_uid: a random id
 * that no process we can see uses, mapped in our user namespace, never 65534 (docs/HARDENING.md
 * "Who can reach the sidecar": no process of the target or the host runs as it, so none can
 * signal ours, and the kernel's per-user perf mlock allowance is ours alone). */
int sc_pick_run_uid(flame_err *err);
uid_t sc_run_uid(void);
/* setgroups(0), setresgid and setresuid to the run's uid (needs CAP_SETUID/SETGID); -1 errno. */
int sc_become_run_user(void);
/* Drop to the run's uid with no capabilities at all, set NO_NEW_PRIVS and load the seccomp
 * filter that denies mount/namespace/ptrace/bpf/module/key/kexec/perf_event_open. */
int sc_harden(flame_err *err);
/* The second half of sc_harden, for a process that already is the run's uid (the per-CPU
 * recorder, which kept one capability across the uid change to open its events): every
 * capability gone, NO_NEW_PRIVS, the seccomp deny-list. */
int sc_seal(flame_err *err);
#define SC_NOBODY 65534 /* never the run's uid */
/* TEST ONLY (tests/e2e/privilege-phases.t): FLAME_SIDECAR_TEST_STOP=<phase>[,<phase>] makes the
 * calling process SIGSTOP itself on entering that phase ("setup", "open", "record", "process"),
 * so the test can read its /proc/<pid>/status from the host and SIGCONT it; "script" holds
 * `perf script` alive, exec'd, until the test continues the stopped child that feeds it (once per
 * process). Unset in normal use (the plugin passes it only from $DOCKER_FLAME_SIDECAR_TEST_STOP).
 * sc_test_hook: is phase listed? */
bool sc_test_hook(const char *phase);
void sc_test_stop(const char *phase);

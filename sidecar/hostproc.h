/* `host` (docs/HOST.md): which container each task of the host belongs to, and its ids as seen
 * inside it. Pure parsers over the texts of /proc/<pid>/cgroup, /proc/<pid>/status and
 * /proc/self/mountinfo (unit-tested over captured texts, tests/unit/sidecar_hostproc.c), the task
 * table the hardened scanner writes while recording, and the lookups processing does with it.
 * Every text parsed here comes from the kernel about processes we do not trust (comm and cgroup
 * names are theirs): bounded, strictly parsed, never used as a path. Module prefix: sc_host_. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define SC_HOST_CGROUP_MAX (8 * 1024)  /* /proc/<pid>/cgroup read at most */
#define SC_HOST_NEST_MAX 4             /* container ids kept per task (nested containers) */
#define SC_HOST_KEY_MAX 144            /* "<64 hex>/<64 hex>" + room; longer nests are cut */
#define SC_HOST_MAX_TASKS (256 * 1024) /* tasks the table holds; the rest count as unattributed */
#define SC_HOST_COMM_MAX 16            /* TASK_COMM_LEN */
#define SC_HOST_TABLE "host-tasks"     /* the scanner's output, in the work directory (workdir.c) */

/* pure: the container key of a task from its /proc/<pid>/cgroup text: "host" (in no
 * container), "<id>" or, nested, "<outer id>/<inner id>" (64 lowercase hex each). A level counts
 * only where an engine puts it, so that a delegated cgroup (systemd's user@UID.service) cannot
 * pose as a container: "<id>" right after a "docker" component (cgroupfs driver), or
 * "docker-<id>.scope" right after "*.slice" components not starting with user.slice (systemd
 * driver: /system.slice/docker-<id>.scope), each at the start of the path, right after the
 * previous level (nested engines) or after a ".." prefix (a private cgroup namespace's view of
 * sibling containers). A custom --cgroup-parent other than a *.slice is not recognised (the task
 * is "host"). The cpu/cpuacct line of cgroup v1 is preferred (the hierarchy CPU is accounted
 * in), then the v2 "0::" line, then any. Returns the number of ids (0 = host) or -1 for a text
 * that is not a cgroup file (key then "host": never dropped, counted by the caller). */
int sc_host_cgroup_key(const char *text, size_t len, char *key, size_t cap);

#define SC_HOST_ID_LEN 64
/* pure: the innermost container id a /proc/<pid>/cgroup text names (the same hierarchy as
 * sc_host_cgroup_key; the last path component that is "<64 hex>" or "docker-<id>.scope", under
 * any parent, so that a custom --cgroup-parent still works) into id: 1, 0 when none, -1 for a
 * text that is not a cgroup file. What the sidecar of one container uses to tell the target's
 * processes from the others that share its PID namespace (docs/SIDECAR.md "Only the target"). */
int sc_cgroup_innermost(const char *text, size_t len, char id[SC_HOST_ID_LEN + 1]);

enum sc_host_layout { SC_CG_UNKNOWN, SC_CG_V1, SC_CG_V2, SC_CG_HYBRID };
/* pure: the cgroup layout from /proc/self/mountinfo: v2 when /sys/fs/cgroup is a cgroup2 mount,
 * v1 when only cgroup (v1) hierarchies are mounted, hybrid when both (systemd's
 * /sys/fs/cgroup/unified). */
enum sc_host_layout sc_host_layout(const char *mountinfo, size_t len);
const char *sc_host_layout_name(enum sc_host_layout l);

/* pure: the outermost (host) and innermost ids of the NSpid: line of a status text (a thread's
 * ids when it is /proc/<pid>/task/<tid>/status), and the name from Name:. 0, or -1 when
 * the text has no well-formed NSpid line. levels: how many namespaces (1 = the host's only). */
typedef struct sc_host_ids {
    uint32_t host, inner;
    int levels;
    char name[SC_HOST_COMM_MAX + 1]; /* printable, ';' and tabs replaced */
} sc_host_ids;
int sc_host_parse_status(const char *text, size_t len, sc_host_ids *out);

/* pure: the start time of a task (field 22 of /proc/<pid>/task/<tid>/stat: clock ticks since
 * boot) into *start; 0, or -1 for a text that is not a stat line (the comm, field 2, may hold
 * anything but is the only field in parentheses: the fields are counted after its last ')'). */
int sc_host_parse_stat_start(const char *text, size_t len, uint64_t *start);

/* One task: what the scanner saw and processing uses for the root frames. A tid names one task
 * at a time, but several over a recording: its start time tells them apart. */
typedef struct sc_host_task {
    uint32_t pid, tid, vpid, vtid;
    uint64_t start; /* clock ticks since boot (stat field 22) */
    char key[SC_HOST_KEY_MAX];
    char pcomm[SC_HOST_COMM_MAX + 1], tcomm[SC_HOST_COMM_MAX + 1];
} sc_host_task;

/* pure: one line of the table ("T pid tid vpid vtid key\tpcomm\ttcomm"). 0 or -1. */
int sc_host_task_format(const sc_host_task *t, char *buf, size_t cap);
int sc_host_task_parse(const char *line, size_t len, sc_host_task *t);

/* Read one task from /proc (proc_fd: our /proc), bounded, without following links. 0 or -1. */
int sc_host_read_task(int proc_fd, uint32_t pid, uint32_t tid, sc_host_task *t);

/* The scanner (host.c runs it hardened): every task of /proc not yet written goes to fd as one
 * table line. seen: an open-addressing set of keys (a task: its tid and its /proc directory's
 * inode, which a tid reused by a new task does not keep), owned by the caller. Returns tasks
 * written. */
typedef struct sc_host_seen {
    uint64_t *slot; /* 0 = empty */
    size_t cap, n;
} sc_host_seen;
int sc_host_seen_init(sc_host_seen *s, size_t cap);
void sc_host_seen_free(sc_host_seen *s);
/* true when key (not 0) was already there; adds it otherwise (false when full: not added). */
bool sc_host_seen_add(sc_host_seen *s, uint64_t key, bool *added);
long sc_host_scan(int proc_fd, sc_host_seen *seen, int fd);

/* The table, loaded for processing: tid -> the tasks that had it, latest first. */
typedef struct sc_host_table sc_host_table;
sc_host_table *sc_host_table_load(int fd, size_t max_bytes);
void sc_host_table_free(sc_host_table *t);
/* The task of tid (and pid) that ran a sample taken at time_ns (CLOCK_BOOTTIME; 0: unknown, the
 * latest): the one that started last at or before it, from the table, else read now from /proc
 * (added; it must have started by then too). NULL: unknown -- never a task that started after
 * the sample (a tid reused by another container's task). */
const sc_host_task *sc_host_table_get(sc_host_table *t, int proc_fd, uint32_t pid, uint32_t tid,
                                      uint64_t time_ns);
size_t sc_host_table_count(const sc_host_table *t);

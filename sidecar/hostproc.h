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
 * container), "<id>" or, nested, "<outer id>/<inner id>" (64 lowercase hex each). Recognised
 * path components: a bare 64-hex id (cgroupfs: /docker/<id>, any --cgroup-parent) and
 * docker-<id>.scope (systemd driver: /system.slice/docker-<id>.scope). The cpu/cpuacct line of
 * cgroup v1 is preferred (the hierarchy CPU is accounted in), then the v2 "0::" line, then any.
 * Returns the number of ids (0 = host) or -1 for a text that is not a cgroup file (key then
 * "host": never dropped, counted by the caller). */
int sc_host_cgroup_key(const char *text, size_t len, char *key, size_t cap);

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

/* One task: what the scanner saw and processing uses for the root frames. */
typedef struct sc_host_task {
    uint32_t pid, tid, vpid, vtid;
    char key[SC_HOST_KEY_MAX];
    char pcomm[SC_HOST_COMM_MAX + 1], tcomm[SC_HOST_COMM_MAX + 1];
} sc_host_task;

/* pure: one line of the table ("T pid tid vpid vtid key\tpcomm\ttcomm"). 0 or -1. */
int sc_host_task_format(const sc_host_task *t, char *buf, size_t cap);
int sc_host_task_parse(const char *line, size_t len, sc_host_task *t);

/* Read one task from /proc (proc_fd: our /proc), bounded, without following links. 0 or -1. */
int sc_host_read_task(int proc_fd, uint32_t pid, uint32_t tid, sc_host_task *t);

/* The scanner (host.c runs it hardened): every task of /proc not yet written goes to fd as one
 * table line. seen: an open-addressing set of tids, owned by the caller. Returns tasks written. */
typedef struct sc_host_seen {
    uint32_t *slot; /* 0 = empty */
    size_t cap, n;
} sc_host_seen;
int sc_host_seen_init(sc_host_seen *s, size_t cap);
void sc_host_seen_free(sc_host_seen *s);
/* true when tid was already there; adds it otherwise (false when full: not added). */
bool sc_host_seen_add(sc_host_seen *s, uint32_t tid, bool *added);
long sc_host_scan(int proc_fd, sc_host_seen *seen, int fd);

/* The table, loaded for processing: tid -> task. */
typedef struct sc_host_table sc_host_table;
sc_host_table *sc_host_table_load(int fd, size_t max_bytes);
void sc_host_table_free(sc_host_table *t);
/* The task of tid (and pid): from the table, else read now from /proc (added). NULL: unknown. */
const sc_host_task *sc_host_table_get(sc_host_table *t, int proc_fd, uint32_t pid, uint32_t tid);
size_t sc_host_table_count(const sc_host_table *t);

/* `host` (docs/HOST.md): every CPU of the host, every sample attributed to its container. The
 * sidecar runs in the host's PID (and cgroup) namespace; the per-CPU recorder of sampler.c runs
 * without its PID-namespace filter. While it records, a hardened scanner child (uid 65534, no
 * capability, the seccomp deny-list) writes a table of every task it sees: pid, tid, their ids
 * inside their container (NSpid), the container's id from /proc/<pid>/cgroup, the names. After
 * the recording (and the privilege drop) perf script is folded with one root per sample:
 *   <container key>;<process> <pid> (vpid N);<thread> <tid> (vtid N);frames...
 * The plugin turns the keys into container names (it knows its engine's containers). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "sidecar/hostproc.h"
#include "sidecar/session.h"

#define SCAN_MS                                                                                    \
    500 /* a task living shorter than this may miss the table: read again at the end               \
         */
#define TABLE_MAX (64u << 20)

static char *read_mountinfo(size_t *len)
{
    size_t cap = 1 << 20;
    char *b = malloc(cap);
    /* the host's init (we share its PID namespace): its mounts are the host's cgroup layout;
     * ours, a container's, show only what the engine mounted for us */
    int fd = open("/proc/1/mountinfo", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
    *len = 0;
    if (!b || fd < 0) {
        if (fd >= 0)
            close(fd);
        free(b);
        return NULL;
    }
    for (ssize_t k; *len < cap && (k = read(fd, b + *len, cap - *len)) > 0;)
        *len += (size_t)k;
    close(fd);
    return b;
}

int sc_host_scanner_start(sc_session *s, flame_err *err)
{
    int table = sc_work_create(SC_HOST_TABLE, O_WRONLY | O_APPEND, 0600);
    if (table < 0)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "create %s", SC_HOST_TABLE);
    s->host.table_rfd = sc_work_open(SC_HOST_TABLE, O_RDONLY);
    int c[2];
    if (s->host.table_rfd < 0 || pipe2(c, O_CLOEXEC) < 0) {
        close(table);
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "pipe");
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(table), close(c[0]), close(c[1]);
        return flame_fail_errno(err, FLAME_EXIT_ERROR, e, "fork");
    }
    if (pid == 0) {
        close(c[1]);
        signal(SIGINT, SIG_IGN); /* the parent ends us through the pipe */
        signal(SIGTERM, SIG_DFL);
        int proc = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        flame_err e = FLAME_ERR_INIT;
        /* PRIVILEGE: none is needed: status and cgroup of every process are world-readable.
         * Drop everything before the first byte of another process is read. */
        if (proc < 0 || sc_harden(&e) < 0) {
            fprintf(stderr, "flame-sidecar: host scanner: %s\n", proc < 0 ? "no /proc" : e.msg);
            _exit(1);
        }
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        sc_host_seen seen;
        if (sc_host_seen_init(&seen, (size_t)SC_HOST_MAX_TASKS * 2) < 0)
            _exit(1);
        for (;;) {
            sc_host_scan(proc, &seen, table);
            struct pollfd p = {.fd = c[0], .events = POLLIN};
            if (poll(&p, 1, SCAN_MS) > 0)
                break; /* "stop" or the parent went away */
        }
        sc_host_scan(proc, &seen, table);
        _exit(0);
    }
    close(c[0]);
    close(table);
    s->host.scanner_pid = pid;
    s->host.scanner_ctl = c[1];
    return 0;
}

void sc_host_scanner_stop(sc_session *s)
{
    if (s->host.scanner_ctl >= 0) {
        if (write(s->host.scanner_ctl, "stop\n", 5) < 0) { /* closing below ends it anyway */
        }
        close(s->host.scanner_ctl);
        s->host.scanner_ctl = -1;
    }
    if (s->host.scanner_pid > 0) {
        int st;
        for (int64_t t0 = mono_ms(); waitpid(s->host.scanner_pid, &st, WNOHANG) == 0;) {
            if (mono_ms() - t0 > 5000)
                break; /* it dies with us (PDEATHSIG) */
            sleep_ms(10);
        }
        s->host.scanner_pid = -1;
    }
}

/* ---- processing ---- */

#define TL_MAX (4u << 20) /* samples kept for the timeline; beyond, the timeline stops there */

typedef struct tl_sample {
    uint32_t cpu, ms, tid, pid; /* ms: since base_us (a u32 of ms since boot wraps at 49 days) */
} tl_sample;

typedef struct host_ctx {
    sc_host_table *t;
    int proc;
    uint64_t unattributed;
    bool boottime; /* sample times are CLOCK_BOOTTIME: they can be compared with task starts */
    tl_sample *tl;
    size_t ntl, captl;
    unsigned long long t0_us;   /* the first sample's time */
    unsigned long long base_us; /* the timeline's ms count from here (the first sample's time
                                   less a minute: samples come almost in time order) */
    char buf[SC_HOST_KEY_MAX + 2 * (SC_HOST_COMM_MAX + 64) + 1100];
} host_ctx;

/* The sample's time as the table compares it: boot time (the recorder's clock, when it got it). */
static uint64_t time_ns(const host_ctx *c, unsigned long long us)
{
    return c->boottime ? (uint64_t)us * 1000 : 0;
}

static const char *root_for_task(void *ctx, long pid, long tid, const char *comm, size_t len,
                                 unsigned long long us)
{
    host_ctx *c = ctx;
    /* the task that had this tid when the sample was taken: a tid reused by a task of another
     * container during the recording never takes the earlier one's samples */
    const sc_host_task *t = pid > 0 && tid > 0 ? sc_host_table_get(c->t, c->proc, (uint32_t)pid,
                                                                   (uint32_t)tid, time_ns(c, us))
                                               : NULL;
    if (!t) {
        /* gone before the scanner saw it: named, counted, never dropped */
        c->unattributed++;
        snprintf(c->buf, sizeof c->buf, "unknown;%.*s %ld;%.*s %ld", (int)(len > 64 ? 64 : len),
                 comm, pid, (int)(len > 64 ? 64 : len), comm, tid);
        return c->buf;
    }
    snprintf(c->buf, sizeof c->buf, "%s;%s %u (vpid %u);%s %u (vtid %u)", t->key, t->pcomm, t->pid,
             t->vpid, t->tcomm, t->tid, t->vtid);
    return c->buf;
}

/* The host pid of the main process (State.Pid) of the container whose id is key's innermost
 * level, when --attach names it ("<id>:<pid>,..."); 0 when it does not. */
static long attach_main_pid(const char *ids, const char *key)
{
    const char *inner = strrchr(key, '/');
    inner = inner ? inner + 1 : key;
    if (strlen(inner) != SC_HOST_ID_LEN)
        return 0;
    for (const char *p = ids; p && *p;) {
        size_t l = strcspn(p, ",");
        if (l > SC_HOST_ID_LEN + 1 && p[SC_HOST_ID_LEN] == ':' && !memcmp(p, inner, SC_HOST_ID_LEN))
            return strtol(p + SC_HOST_ID_LEN + 1, NULL, 10); /* digits: checked by the parser */
        p += l + (p[l] == ',');
    }
    return 0;
}

/* Is the JVM in the mount namespace of its container's main process? That process must still
 * be the container's (the same key: State.Pid was not reused). A process that only poses as the
 * container (its cgroup; HOST.md) runs in another mount namespace: it gets no agent. */
static bool in_container_mnt(int proc, pid_t jvm, long main_pid, const char *key)
{
    sc_host_task m;
    char path[64];
    struct stat a, b;
    if (main_pid <= 0 || main_pid > CT_PID_MAX ||
        sc_host_read_task(proc, (uint32_t)main_pid, (uint32_t)main_pid, &m) < 0 ||
        strcmp(m.key, key) != 0)
        return false;
    /* PRIVILEGE: ns links of other users' processes need PTRACE_MODE_READ (CAP_SYS_PTRACE) */
    snprintf(path, sizeof path, "%d/ns/mnt", (int)jvm);
    if (fstatat(proc, path, &a, 0) < 0)
        return false;
    snprintf(path, sizeof path, "%ld/ns/mnt", main_pid);
    if (fstatat(proc, path, &b, 0) < 0)
        return false;
    return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

int sc_host_find_jvms(sc_session *s, flame_err *err)
{
    if (!s->o.attach_ids || !*s->o.attach_ids)
        return 0;
    /* every JVM of the host, then only those of the plugin's containers: we inject into no
     * process we were not asked about (another engine's, the host's own) */
    static sc_jvm all[4 * SC_MAX_JVMS];
    char seen[256];
    int n = sc_find_jvms(all, 4 * SC_MAX_JVMS, seen, sizeof seen, NULL, err);
    if (n < 0)
        return sc_fail(err, CT_ERR_INTERNAL, "%s", err->msg);
    int proc = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    for (int i = 0; i < n; i++) {
        sc_host_task t;
        long main_pid = 0;
        bool take =
            s->n < SC_MAX_JVMS && proc >= 0 &&
            sc_host_read_task(proc, (uint32_t)all[i].st.pid, (uint32_t)all[i].st.pid, &t) == 0 &&
            (main_pid = attach_main_pid(s->o.attach_ids, t.key)) > 0;
        if (take && !in_container_mnt(proc, all[i].st.pid, main_pid, t.key)) {
            sc_warn("pid %d: not in the mount namespace of its container's main process: no "
                    "agent",
                    (int)all[i].st.pid);
            take = false;
        }
        if (!take) {
            if (all[i].pidfd >= 0)
                close(all[i].pidfd);
            continue;
        }
        s->jvms[s->n] = all[i];
        snprintf(s->jvms[s->n].container, sizeof s->jvms[s->n].container, "%s", t.key);
        s->n++;
    }
    if (proc >= 0)
        close(proc);
    return 0;
}

static void on_sample(void *ctx, long pid, long tid, int cpu, unsigned long long us)
{
    host_ctx *c = ctx;
    if (cpu < 0 || !us || pid <= 0 || tid <= 0 || c->ntl >= TL_MAX)
        return;
    if (c->ntl == c->captl) {
        size_t nc = c->captl ? c->captl * 2 : 4096;
        tl_sample *g = realloc(c->tl, nc * sizeof *g);
        if (!g)
            return;
        c->tl = g;
        c->captl = nc;
    }
    if (!c->base_us)
        c->base_us = us > 60000000ull ? us - 60000000ull : 1;
    if (us < c->base_us)
        return;
    if (!c->t0_us || us < c->t0_us)
        c->t0_us = us;
    c->tl[c->ntl++] = (tl_sample){(uint32_t)cpu, (uint32_t)((us - c->base_us) / 1000),
                                  (uint32_t)tid, (uint32_t)pid};
}

/* The timeline: K once per thread that has samples, then U lines of "cpu,ms,tid" (ms from the
 * first sample). */
static void emit_timeline(host_ctx *c)
{
    char line[512];
    uint64_t t0 = (c->t0_us - c->base_us) / 1000;
    sc_host_seen done;
    if (sc_host_seen_init(&done, 1u << 18) < 0)
        return;
    for (size_t i = 0; i < c->ntl; i++) {
        bool added;
        if (sc_host_seen_add(&done, c->tl[i].tid, &added) || !added)
            continue;
        const sc_host_task *t =
            sc_host_table_get(c->t, -1, c->tl[i].pid, c->tl[i].tid,
                              time_ns(c, c->base_us + (uint64_t)c->tl[i].ms * 1000));
        /* no task: the "unknown" key of the graph; its name stays out of the timeline */
        sc_host_task u = {.pid = c->tl[i].pid, .tid = c->tl[i].tid, .key = "unknown"};
        const sc_host_task *x = t ? t : &u;
        /* ';' separates: no name holds one (clean_name), and a K line carries no control byte */
        snprintf(line, sizeof line, "%u %u %u %u %s;%s;%s", x->pid, x->tid, x->vpid, x->vtid,
                 x->key, x->pcomm, x->tcomm);
        sc_out(CT_TAG_TASK, line);
    }
    sc_host_seen_free(&done);
    size_t cap = 60000, used = 0;
    char *b = malloc(cap);
    for (size_t i = 0; b && i < c->ntl; i++) {
        used +=
            (size_t)snprintf(b + used, cap - used, "%s%u,%llu,%u", used ? " " : "", c->tl[i].cpu,
                             (unsigned long long)(c->tl[i].ms - t0), c->tl[i].tid);
        if (used > cap - 64 || i + 1 == c->ntl) {
            sc_out(CT_TAG_SAMPLES, b);
            used = 0;
        }
    }
    free(b);
}

int sc_host_process(sc_session *s, const int *map_fd, flame_err *err)
{
    uint64_t map_lines = 0, map_bytes = 0;
    sc_refresh_maps(s, map_fd, &map_lines, &map_bytes);
    int64_t t = mono_ms();
    _cleanup_close_ int tfd = s->host.table_rfd;
    s->host.table_rfd = -1;
    host_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    c->t = sc_host_table_load(tfd, TABLE_MAX);
    c->boottime = s->boottime;
    c->proc = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (!c->t) {
        free(c);
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    }
    fold_opts fo = {.inline_frames = !s->o.no_inline,
                    .signatures = s->o.signatures,
                    .root_for_task = root_for_task,
                    .on_sample = on_sample,
                    .root_ctx = c};
    folder *f = folder_new(&fo);
    int rc = -1;
    if (!f) {
        flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    } else {
        _cleanup_close_ int data = sc_work_open(SC_WORK_DATA, O_RDONLY);
        /* always our --symfs (made before the privilege drop): perf never reads the sidecar's
         * own files at a target's paths; what is not copied there stays unnamed */
        rc = data < 0 ? flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "open %s", SC_WORK_DATA)
                      : sc_perf_script(s, data, true, true, &f, 1, s->abort, err);
    }
    s->t[CT_PH_SCRIPT] = (uint64_t)(mono_ms() - t);
    if (rc == 0 && !*s->abort) {
        size_t mlen;
        _cleanup_free_ char *mi = read_mountinfo(&mlen);
        ct_host h = {.cpus = (uint64_t)sysconf(_SC_NPROCESSORS_ONLN),
                     .record_ms = s->t[CT_PH_RECORD],
                     .frequency = (uint64_t)s->o.frequency,
                     .tasks = sc_host_table_count(c->t),
                     .unattributed = c->unattributed};
        snprintf(h.cgroup, sizeof h.cgroup, "%s",
                 sc_host_layout_name(mi ? sc_host_layout(mi, mlen) : SC_CG_UNKNOWN));
        char buf[4096];
        if (ct_format_host(buf, sizeof buf, &h) >= 0)
            sc_out(CT_TAG_HOST, buf);
        sc_emit_folded(f);
        emit_timeline(c);
        fold_stats fs;
        folder_get_stats(f, &fs);
        sc_emit_summary(s, &fs, map_lines, map_bytes, "cpu");
    }
    folder_free(f);
    if (c->proc >= 0)
        close(c->proc);
    sc_host_table_free(c->t);
    free(c->tl);
    free(c);
    return rc;
}

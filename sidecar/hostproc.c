/* Which container each task of the host belongs to (hostproc.h). The formats parsed here are
 * the kernel's (Documentation/admin-guide/cgroup-v1 and cgroup-v2: "hierarchy-ID:controller-
 * list:cgroup-path" lines; proc(5): mountinfo fields, the "- fstype" separator, status' NSpid).
 * What they carry is the targets': a container can name its own (nested) cgroups and threads. */
#include "sidecar/hostproc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "sidecar/sidecar.h"

#define ID_LEN 64
#define STATUS_MAX (16 * 1024)
#define LINE_MAX_TABLE 512

/* ---- cgroup paths ---- */

static bool is_hex_id(const char *p, size_t n)
{
    if (n != ID_LEN)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f')))
            return false;
    return true;
}

/* The components of one cgroup path, into c[] (at most cap; -1 when there are more). */
typedef struct comp {
    const char *p;
    size_t n;
} comp;

static int split_path(const char *p, size_t n, comp *c, int cap)
{
    int k = 0;
    for (size_t i = 0; i < n;) {
        while (i < n && p[i] == '/')
            i++;
        size_t s = i;
        while (i < n && p[i] != '/')
            i++;
        if (i == s)
            break;
        if (k == cap)
            return -1;
        c[k++] = (comp){p + s, i - s};
    }
    return k;
}

static bool comp_is(const comp *c, const char *s)
{
    return c->n == strlen(s) && !memcmp(c->p, s, c->n);
}

/* "docker-<id>.scope" (systemd driver): its id, else NULL */
static const char *scope_id(const comp *c)
{
    if (c->n == 7 + ID_LEN + 6 && !memcmp(c->p, "docker-", 7) &&
        !memcmp(c->p + 7 + ID_LEN, ".scope", 6) && is_hex_id(c->p + 7, ID_LEN))
        return c->p + 7;
    return NULL;
}

static bool is_slice(const comp *c)
{
    return c->n > 6 && !memcmp(c->p + c->n - 6, ".slice", 6);
}

/* The container ids one cgroup path names, outermost first, into ids[]. A level counts only
 * where an engine puts it (a delegated cgroup v2 subtree -- systemd's user@UID.service, any
 * container allowed to write its cgroups -- can hold a directory of any name, so a name alone
 * proves nothing):
 *   cgroupfs driver: "<id>" right after a "docker" component;
 *   systemd driver:  "docker-<id>.scope" right after one or more "*.slice" components, the
 *                    first of which is not "user.slice" (slices are never delegated; a delegated
 *                    unit is a .service or .scope, and user.slice holds the users' own);
 * either at the start of the path, right after the previous level (an engine in a container), or
 * right after nothing but ".." (a reader in a private cgroup namespace sees the engine's other
 * containers as its siblings). What follows the innermost level is the container's own. */
static int path_ids(const char *p, size_t n, const char *ids[SC_HOST_NEST_MAX])
{
    comp c[64];
    int nc = split_path(p, n, c, 64);
    if (nc < 0)
        return 0; /* deeper than any engine nests: trust nothing of it */
    int dots = 0; /* the ".." prefix of a relative view */
    while (dots < nc && comp_is(&c[dots], ".."))
        dots++;
    int k = 0, start = dots; /* start: the first component after the last level */
    for (int i = start; i < nc && k < SC_HOST_NEST_MAX; i++) {
        bool sibling = k == 0 && dots > 0 && i == dots;
        const char *id = NULL;
        if (is_hex_id(c[i].p, c[i].n)) {
            if (sibling || (i == start + 1 && comp_is(&c[start], "docker")))
                id = c[i].p;
        } else if ((id = scope_id(&c[i])) && !sibling) {
            bool slices = i > start && !(k == 0 && comp_is(&c[start], "user.slice"));
            for (int j = start; slices && j < i; j++)
                slices = is_slice(&c[j]);
            if (!slices)
                id = NULL;
        }
        if (id) {
            ids[k++] = id;
            start = i + 1;
        }
    }
    return k;
}

/* Does the comma-separated controller list name cpu or cpuacct? */
static bool has_cpu(const char *c, size_t n)
{
    size_t i = 0;
    while (i < n) {
        size_t s = i;
        while (i < n && c[i] != ',')
            i++;
        if ((i - s == 3 && !memcmp(c + s, "cpu", 3)) ||
            (i - s == 7 && !memcmp(c + s, "cpuacct", 7)))
            return true;
        i++;
    }
    return false;
}

/* The path of the hierarchy a task's CPU is accounted in: v1's cpu/cpuacct line, else v2's
 * "0::" line, else the first. -1 when the text is not a cgroup file (every line strictly
 * "hierarchy-id:controllers:/path"), 0 with path and plen set, 1 when it has no line. */
static int cpu_path(const char *text, size_t len, const char **path, size_t *plen)
{
    const char *best = NULL;
    size_t best_len = 0;
    int best_prio = 3;
    if (len == 0)
        return -1;
    for (size_t i = 0; i < len;) {
        const char *l = text + i;
        const char *nl = memchr(l, '\n', len - i);
        size_t ll = nl ? (size_t)(nl - l) : len - i;
        i += ll + 1;
        /* hierarchy id: digits */
        size_t d = 0;
        while (d < ll && l[d] >= '0' && l[d] <= '9')
            d++;
        const char *c1 = d < ll ? memchr(l + d, ':', ll - d) : NULL;
        if (d == 0 || d > 10 || c1 != l + d)
            return -1;
        const char *ctl = c1 + 1;
        const char *c2 = memchr(ctl, ':', (size_t)(l + ll - ctl));
        if (!c2 || c2 + 1 >= l + ll || c2[1] != '/')
            return -1;
        size_t ctl_len = (size_t)(c2 - ctl);
        int prio = has_cpu(ctl, ctl_len) ? 0 : (d == 1 && l[0] == '0' && !ctl_len) ? 1 : 2;
        if (prio < best_prio) {
            best_prio = prio;
            best = c2 + 1;
            best_len = (size_t)(l + ll - best);
        }
    }
    *path = best;
    *plen = best_len;
    return best ? 0 : 1;
}

int sc_host_cgroup_key(const char *text, size_t len, char *key, size_t cap)
{
    const char *best = NULL;
    size_t best_len = 0;
    int r = cpu_path(text, len, &best, &best_len);
    const char *ids[SC_HOST_NEST_MAX];
    int n = r == 0 ? path_ids(best, best_len, ids) : 0;
    size_t used = 0;
    int kept = 0;
    for (int k = 0; k < n && used + ID_LEN + 2 <= cap; k++, kept++) {
        if (k)
            key[used++] = '/';
        memcpy(key + used, ids[k], ID_LEN);
        used += ID_LEN;
    }
    if (!kept && cap > 4) {
        memcpy(key, "host", 4);
        used = 4;
    }
    if (cap)
        key[used < cap ? used : cap - 1] = '\0';
    return r < 0 ? -1 : kept;
}

int sc_cgroup_innermost(const char *text, size_t len, char id[SC_HOST_ID_LEN + 1])
{
    const char *p = NULL;
    size_t n = 0;
    id[0] = '\0';
    int r = cpu_path(text, len, &p, &n);
    if (r != 0)
        return r < 0 ? -1 : 0;
    comp c[64];
    int nc = split_path(p, n, c, 64);
    for (int i = nc - 1; i >= 0; i--) { /* nc < 0 (too deep): no id */
        const char *x = is_hex_id(c[i].p, c[i].n) ? c[i].p : scope_id(&c[i]);
        if (x) {
            memcpy(id, x, ID_LEN);
            id[ID_LEN] = '\0';
            return 1;
        }
    }
    return 0;
}

/* ---- mountinfo ---- */

enum sc_host_layout sc_host_layout(const char *mi, size_t len)
{
    bool v1 = false, v2root = false, unified = false;
    for (size_t i = 0; i < len;) {
        const char *l = mi + i;
        const char *nl = memchr(l, '\n', len - i);
        size_t ll = nl ? (size_t)(nl - l) : len - i;
        i += ll + 1;
        /* fields: id parent maj:min root mountpoint options [optional...] - fstype source opts */
        const char *f[5];
        size_t fl[5];
        size_t p = 0;
        int nf = 0;
        while (nf < 5 && p < ll) {
            while (p < ll && l[p] == ' ')
                p++;
            f[nf] = l + p;
            while (p < ll && l[p] != ' ')
                p++;
            fl[nf] = (size_t)(l + p - f[nf]);
            nf++;
        }
        if (nf < 5)
            continue;
        /* the separator " - " ends the optional fields */
        const char *sep = NULL;
        for (size_t q = p; q + 3 <= ll; q++)
            if (l[q] == ' ' && l[q + 1] == '-' && l[q + 2] == ' ') {
                sep = l + q + 3;
                break;
            }
        if (!sep)
            continue;
        size_t tl = 0;
        while (sep + tl < l + ll && sep[tl] != ' ')
            tl++;
        bool root = fl[4] == 14 && !memcmp(f[4], "/sys/fs/cgroup", 14);
        if (tl == 7 && !memcmp(sep, "cgroup2", 7)) {
            if (root)
                v2root = true;
            else
                unified = true;
        } else if (tl == 6 && !memcmp(sep, "cgroup", 6)) {
            v1 = true;
        }
    }
    if (v1 && (v2root || unified))
        return SC_CG_HYBRID;
    if (v1)
        return SC_CG_V1;
    if (v2root)
        return SC_CG_V2;
    return SC_CG_UNKNOWN;
}

const char *sc_host_layout_name(enum sc_host_layout l)
{
    switch (l) {
    case SC_CG_V1:
        return "v1";
    case SC_CG_V2:
        return "v2";
    case SC_CG_HYBRID:
        return "hybrid";
    case SC_CG_UNKNOWN:
        break;
    }
    return "unknown";
}

/* ---- status ---- */

/* A name as a frame and a table field: printable ASCII, no ';' (frame separator) nor tab. */
static void clean_name(const char *s, size_t n, char *out, size_t cap)
{
    size_t k = 0;
    for (size_t i = 0; i < n && k + 1 < cap; i++) {
        unsigned char c = (unsigned char)s[i];
        out[k++] = c == ';' ? ':' : (c < 0x20 || c >= 0x7f) ? '?' : (char)c;
    }
    out[k] = '\0';
}

int sc_host_parse_status(const char *text, size_t len, sc_host_ids *out)
{
    *out = (sc_host_ids){0};
    bool have = false;
    for (size_t i = 0; i < len;) {
        const char *l = text + i;
        const char *nl = memchr(l, '\n', len - i);
        size_t ll = nl ? (size_t)(nl - l) : len - i;
        i += ll + 1;
        if (ll >= 5 && !memcmp(l, "Name:", 5)) {
            size_t s = 5;
            while (s < ll && (l[s] == '\t' || l[s] == ' '))
                s++;
            /* the kernel caps comm at 15 bytes, escaped: take at most 64 and cut */
            size_t n = ll - s > 64 ? 64 : ll - s;
            clean_name(l + s, n, out->name, sizeof out->name);
        } else if (ll >= 6 && !memcmp(l, "NSpid:", 6)) {
            uint64_t v = 0;
            int levels = 0;
            bool in = false;
            for (size_t p = 6; p <= ll; p++) {
                char c = p < ll ? l[p] : '\t';
                if (c >= '0' && c <= '9') {
                    v = v * 10 + (uint64_t)(c - '0');
                    if (v > 4194304)
                        return -1;
                    in = true;
                } else if (c == '\t' || c == ' ') {
                    if (in) {
                        if (++levels > 32)
                            return -1;
                        if (levels == 1)
                            out->host = (uint32_t)v;
                        out->inner = (uint32_t)v;
                    }
                    in = false;
                    v = 0;
                } else {
                    return -1;
                }
            }
            if (!levels || !out->host)
                return -1;
            out->levels = levels;
            have = true;
        }
    }
    return have ? 0 : -1;
}

int sc_host_parse_stat_start(const char *text, size_t len, uint64_t *start)
{
    const char *close = memrchr(text, ')', len);
    if (!close || !memchr(text, '(', (size_t)(close - text)))
        return -1;
    const char *p = close + 1, *end = text + len;
    /* field 3 (state) is the first after ") "; field 22 is the 20th */
    for (int field = 3; field <= 22; field++) {
        if (p >= end || *p != ' ')
            return -1;
        p++;
        const char *s = p;
        while (p < end && *p != ' ' && *p != '\n')
            p++;
        if (p == s)
            return -1;
        if (field == 22) {
            uint64_t v = 0;
            for (const char *d = s; d < p; d++) {
                if (*d < '0' || *d > '9' || v > UINT64_MAX / 10 - 1)
                    return -1;
                v = v * 10 + (uint64_t)(*d - '0');
            }
            *start = v;
            return 0;
        }
    }
    return -1;
}

/* ---- the table ---- */

int sc_host_task_format(const sc_host_task *t, char *buf, size_t cap)
{
    int n = snprintf(buf, cap, "T %u %u %u %u %llu %s\t%s\t%s\n", t->pid, t->tid, t->vpid, t->vtid,
                     (unsigned long long)t->start, t->key, t->pcomm, t->tcomm);
    return n < 0 || (size_t)n >= cap ? -1 : n;
}

static bool take_u32(const char **p, const char *end, uint32_t *v)
{
    uint64_t x = 0;
    const char *s = *p;
    while (*p < end && **p >= '0' && **p <= '9') {
        x = x * 10 + (uint64_t)(**p - '0');
        if (x > 4194304)
            return false;
        (*p)++;
    }
    if (*p == s || *p >= end || **p != ' ')
        return false;
    (*p)++;
    *v = (uint32_t)x;
    return true;
}

int sc_host_task_parse(const char *line, size_t len, sc_host_task *t)
{
    *t = (sc_host_task){0};
    const char *p = line, *end = line + len;
    if (len < 2 || memcmp(p, "T ", 2))
        return -1;
    p += 2;
    if (!take_u32(&p, end, &t->pid) || !take_u32(&p, end, &t->tid) ||
        !take_u32(&p, end, &t->vpid) || !take_u32(&p, end, &t->vtid))
        return -1;
    const char *s = p;
    while (p < end && *p >= '0' && *p <= '9' && p - s < 20)
        t->start = t->start * 10 + (uint64_t)(*p++ - '0');
    if (p == s || p >= end || *p != ' ')
        return -1;
    p++;
    const char *f[3];
    size_t fl[3];
    for (int k = 0; k < 3; k++) {
        f[k] = p;
        const char *tab = k < 2 ? memchr(p, '\t', (size_t)(end - p)) : end;
        if (!tab)
            return -1;
        fl[k] = (size_t)(tab - p);
        p = tab + (k < 2);
    }
    if (!fl[0] || fl[0] >= sizeof t->key || fl[1] > SC_HOST_COMM_MAX || fl[2] > SC_HOST_COMM_MAX)
        return -1;
    for (size_t i = 0; i < fl[0]; i++) /* "host", hex ids and '/' only */
        if (!((f[0][i] >= '0' && f[0][i] <= '9') || (f[0][i] >= 'a' && f[0][i] <= 'z') ||
              f[0][i] == '/'))
            return -1;
    memcpy(t->key, f[0], fl[0]);
    clean_name(f[1], fl[1], t->pcomm, sizeof t->pcomm);
    clean_name(f[2], fl[2], t->tcomm, sizeof t->tcomm);
    return t->tid ? 0 : -1;
}

int sc_host_read_task(int proc_fd, uint32_t pid, uint32_t tid, sc_host_task *t)
{
    char path[96], buf[STATUS_MAX];
    *t = (sc_host_task){.pid = pid, .tid = tid};
    sc_host_ids pi, ti;
    snprintf(path, sizeof path, "%u/status", pid);
    ssize_t n = sc_read_bounded(proc_fd, path, buf, sizeof buf);
    if (n <= 0 || sc_host_parse_status(buf, (size_t)n, &pi) < 0 || pi.host != pid)
        return -1;
    snprintf(path, sizeof path, "%u/task/%u/status", pid, tid);
    n = sc_read_bounded(proc_fd, path, buf, sizeof buf);
    if (n <= 0 || sc_host_parse_status(buf, (size_t)n, &ti) < 0 || ti.host != tid)
        return -1;
    snprintf(path, sizeof path, "%u/task/%u/stat", pid, tid);
    n = sc_read_bounded(proc_fd, path, buf, sizeof buf);
    if (n <= 0 || sc_host_parse_stat_start(buf, (size_t)n, &t->start) < 0)
        return -1;
    snprintf(path, sizeof path, "%u/cgroup", pid);
    n = sc_read_bounded(proc_fd, path, buf, SC_HOST_CGROUP_MAX);
    if (n < 0)
        return -1;
    sc_host_cgroup_key(buf, (size_t)n, t->key, sizeof t->key); /* malformed: "host" */
    t->vpid = pi.inner;
    t->vtid = ti.inner;
    memcpy(t->pcomm, pi.name, sizeof t->pcomm);
    memcpy(t->tcomm, ti.name, sizeof t->tcomm);
    return 0;
}

int sc_host_seen_init(sc_host_seen *s, size_t cap)
{
    s->cap = cap;
    s->n = 0;
    s->slot = calloc(cap, sizeof *s->slot);
    return s->slot ? 0 : -1;
}

void sc_host_seen_free(sc_host_seen *s)
{
    free(s->slot);
    s->slot = NULL;
}

bool sc_host_seen_add(sc_host_seen *s, uint64_t key, bool *added)
{
    *added = false;
    size_t h = (size_t)((key * 0x9e3779b97f4a7c15ull) >> 32) & (s->cap - 1); /* cap: a power of 2 */
    for (size_t k = 0; k < s->cap; k++, h = (h + 1) & (s->cap - 1)) {
        if (s->slot[h] == key)
            return true;
        if (!s->slot[h]) {
            if (s->n * 4 >= s->cap * 3)
                return false; /* full enough: stop adding, keep probing short */
            s->slot[h] = key;
            s->n++;
            *added = true;
            return false;
        }
    }
    return false;
}

static bool digits(const char *s, uint32_t *v)
{
    uint64_t x = 0;
    if (!*s)
        return false;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return false;
        x = x * 10 + (uint64_t)(*s - '0');
        if (x > 4194304)
            return false;
    }
    *v = (uint32_t)x;
    return x != 0;
}

long sc_host_scan(int proc_fd, sc_host_seen *seen, int fd)
{
    int d0 = openat(proc_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = d0 < 0 ? NULL : fdopendir(d0);
    if (!d) {
        if (d0 >= 0)
            close(d0);
        return -1;
    }
    long written = 0;
    struct dirent *de;
    char path[64], line[LINE_MAX_TABLE];
    while ((de = readdir(d))) {
        uint32_t pid, tid;
        if (!digits(de->d_name, &pid))
            continue;
        snprintf(path, sizeof path, "%u/task", pid);
        int t0 = openat(proc_fd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        DIR *td = t0 < 0 ? NULL : fdopendir(t0);
        if (!td) {
            if (t0 >= 0)
                close(t0);
            continue;
        }
        struct dirent *te;
        while ((te = readdir(td))) {
            bool added;
            /* the task, not only its tid: a tid reused by a new task comes with a new /proc
             * directory (inode), so it is written again, with its own start time */
            if (!digits(te->d_name, &tid) ||
                sc_host_seen_add(seen, (uint64_t)(uint32_t)te->d_ino << 23 | tid, &added) || !added)
                continue;
            sc_host_task t;
            if (sc_host_read_task(proc_fd, pid, tid, &t) < 0)
                continue;
            int n = sc_host_task_format(&t, line, sizeof line);
            if (n > 0 && write(fd, line, (size_t)n) == n)
                written++;
        }
        closedir(td);
    }
    closedir(d);
    return written;
}

/* ---- the loaded table ---- */

struct sc_host_table {
    sc_host_task *t;
    uint32_t *older; /* per task: index + 1 of the previous task with its tid, 0 = none */
    size_t n, cap;
    uint32_t *idx; /* open addressing over tids: index + 1 of its latest task, 0 = empty */
    size_t icap;
    uint64_t tick_ns; /* one clock tick (stat's unit) in ns */
};

static uint32_t *index_slot(const sc_host_table *t, uint32_t tid)
{
    size_t h = (tid * 2654435761u) & (t->icap - 1);
    for (size_t k = 0; k < t->icap; k++, h = (h + 1) & (t->icap - 1))
        if (!t->idx[h] || t->t[t->idx[h] - 1].tid == tid)
            return &t->idx[h];
    return NULL;
}

static int table_add(sc_host_table *t, const sc_host_task *task)
{
    uint32_t *slot = index_slot(t, task->tid);
    if (!slot)
        return -1;
    for (uint32_t i = *slot; i; i = t->older[i - 1]) /* that task again (a fresh read) */
        if (t->t[i - 1].pid == task->pid && t->t[i - 1].start == task->start) {
            t->t[i - 1] = *task;
            return 0;
        }
    if (t->n >= SC_HOST_MAX_TASKS)
        return -1;
    if (t->n == t->cap) {
        size_t nc = t->cap ? t->cap * 2 : 1024;
        sc_host_task *g = realloc(t->t, nc * sizeof *g);
        if (!g)
            return -1;
        t->t = g;
        uint32_t *o = realloc(t->older, nc * sizeof *o);
        if (!o)
            return -1;
        t->older = o;
        t->cap = nc;
    }
    t->t[t->n] = *task;
    t->older[t->n] = *slot;
    t->n++;
    *slot = (uint32_t)t->n;
    return 0;
}

sc_host_table *sc_host_table_load(int fd, size_t max_bytes)
{
    sc_host_table *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->icap = (size_t)SC_HOST_MAX_TASKS * 2;
    long hz = sysconf(_SC_CLK_TCK); /* USER_HZ, the unit of stat's start time */
    t->tick_ns = 1000000000ull / (uint64_t)(hz > 0 ? hz : 100);
    t->idx = calloc(t->icap, sizeof *t->idx);
    if (!t->idx) {
        free(t);
        return NULL;
    }
    if (fd < 0)
        return t;
    _cleanup_free_ char *buf = malloc(LINE_MAX_TABLE * 16);
    if (!buf)
        return t;
    size_t have = 0, total = 0;
    for (;;) {
        ssize_t k = read(fd, buf + have, LINE_MAX_TABLE * 16 - have);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0 || total > max_bytes)
            break;
        total += (size_t)k;
        have += (size_t)k;
        size_t i = 0;
        for (char *nl; (nl = memchr(buf + i, '\n', have - i));) {
            sc_host_task task;
            if (sc_host_task_parse(buf + i, (size_t)(nl - (buf + i)), &task) == 0)
                table_add(t, &task);
            i = (size_t)(nl - buf) + 1;
        }
        memmove(buf, buf + i, have - i);
        have -= i;
        if (have == LINE_MAX_TABLE * 16)
            have = 0; /* a line longer than any we write: drop it */
    }
    return t;
}

void sc_host_table_free(sc_host_table *t)
{
    if (!t)
        return;
    free(t->t);
    free(t->older);
    free(t->idx);
    free(t);
}

/* Did a task that started at `start` (ticks) run at time_ns? Its start is cut down to a tick,
 * so one that started after the sample can look up to a tick older: a reuse within the same
 * 10 ms is the one case told wrongly. */
static bool started_by(const sc_host_table *t, uint64_t start, uint64_t time_ns)
{
    return !time_ns || start <= time_ns / t->tick_ns;
}

static const sc_host_task *latest_by(const sc_host_table *t, uint32_t pid, uint32_t tid,
                                     uint64_t time_ns)
{
    uint32_t *slot = index_slot(t, tid);
    const sc_host_task *best = NULL;
    for (uint32_t i = slot ? *slot : 0; i; i = t->older[i - 1]) {
        const sc_host_task *x = &t->t[i - 1];
        if (x->pid == pid && started_by(t, x->start, time_ns) && (!best || x->start > best->start))
            best = x;
    }
    return best;
}

const sc_host_task *sc_host_table_get(sc_host_table *t, int proc_fd, uint32_t pid, uint32_t tid,
                                      uint64_t time_ns)
{
    const sc_host_task *x = latest_by(t, pid, tid, time_ns);
    if (x)
        return x;
    sc_host_task fresh;
    if (proc_fd < 0 || sc_host_read_task(proc_fd, pid, tid, &fresh) < 0 ||
        !started_by(t, fresh.start, time_ns) || table_add(t, &fresh) < 0)
        return NULL;
    return latest_by(t, pid, tid, time_ns);
}

size_t sc_host_table_count(const sc_host_table *t)
{
    return t->n;
}

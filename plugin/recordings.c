/* The registry of background recordings: see plugin/recordings.h. Everything here is the user's
 * own files, but read as if it were not: names checked, sizes bounded, no symlink followed. */
#include "plugin/recordings.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"

#define RECS_JSON_MAX (64 * 1024)

int recs_dir(char *buf, size_t cap, bool create, flame_err *err)
{
    const char *x = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
    int n;
    if (x && x[0] == '/')
        n = snprintf(buf, cap, "%s/docker-flame/recordings", x);
    else if (home && home[0] == '/')
        n = snprintf(buf, cap, "%s/.local/state/docker-flame/recordings", home);
    else
        return flame_fail(err, FLAME_EXIT_ERROR,
                          "no HOME or XDG_STATE_HOME: cannot keep track of background recordings");
    if (n < 0 || (size_t)n >= cap)
        return flame_fail(err, FLAME_EXIT_ERROR, "the state directory's path is too long");
    if (!create)
        return 0;
    /* mkdir -p, 0700: other users need not know what this one records. */
    for (char *p = buf + 1;; p++) {
        if (*p != '/' && *p)
            continue;
        char c = *p;
        *p = '\0';
        int r = mkdir(buf, 0700);
        *p = c;
        if (r < 0 && errno != EEXIST)
            return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "cannot create %s", buf);
        if (!c)
            break;
    }
    return 0;
}

static int entry_path(const char *dir, const char *id, const char *ext, char *buf, size_t cap)
{
    int n = snprintf(buf, cap, "%s/%s.%s", dir, id, ext);
    return n < 0 || (size_t)n >= cap ? -1 : 0;
}

static json_t *entry_json(const rec_entry *e)
{
    return json_pack("{s:i, s:s, s:I, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:i, s:I, s:I, "
                     "s:I, s:I, s:I, s:I}",
                     "version", 1, "id", e->id, "pid", (json_int_t)e->pid, "arg", e->arg, "name",
                     e->name, "container_id", e->container_id, "state", e->state, "store", e->store,
                     "endpoint", e->endpoint, "log", e->log, "reason", e->reason, "exit_code",
                     e->exit_code, "since_ms", (json_int_t)e->since_ms, "last_window_ms",
                     (json_int_t)e->last_window_ms, "windows", (json_int_t)e->windows, "samples",
                     (json_int_t)e->samples, "window_ms", (json_int_t)e->window_ms, "frequency",
                     (json_int_t)e->frequency);
}

static void get_str(json_t *j, const char *key, char *dst, size_t cap)
{
    const char *s = json_string_value(json_object_get(j, key));
    snprintf(dst, cap, "%s", s ? s : "");
}

static int64_t get_int(json_t *j, const char *key)
{
    json_t *v = json_object_get(j, key);
    return json_is_integer(v) && json_integer_value(v) >= 0 ? (int64_t)json_integer_value(v) : 0;
}

static int entry_from_json(json_t *j, rec_entry *e)
{
    if (!json_is_object(j) || get_int(j, "version") != 1)
        return -1;
    memset(e, 0, sizeof *e);
    get_str(j, "id", e->id, sizeof e->id);
    get_str(j, "arg", e->arg, sizeof e->arg);
    get_str(j, "name", e->name, sizeof e->name);
    get_str(j, "container_id", e->container_id, sizeof e->container_id);
    get_str(j, "state", e->state, sizeof e->state);
    get_str(j, "store", e->store, sizeof e->store);
    get_str(j, "endpoint", e->endpoint, sizeof e->endpoint);
    get_str(j, "log", e->log, sizeof e->log);
    get_str(j, "reason", e->reason, sizeof e->reason);
    e->exit_code = (int)(get_int(j, "exit_code") & 0xff);
    e->since_ms = get_int(j, "since_ms");
    e->last_window_ms = get_int(j, "last_window_ms");
    e->windows = (uint64_t)get_int(j, "windows");
    e->samples = (uint64_t)get_int(j, "samples");
    e->window_ms = (uint64_t)get_int(j, "window_ms");
    e->frequency = (uint64_t)get_int(j, "frequency");
    return 0;
}

int recs_update(rec_reg *r, flame_err *err)
{
    char path[1024], tmp[1024];
    if (r->lock_fd < 0)
        return 0;
    if (entry_path(r->dir, r->e.id, "json", path, sizeof path) < 0 ||
        entry_path(r->dir, r->e.id, "json.tmp", tmp, sizeof tmp) < 0)
        return flame_fail(err, FLAME_EXIT_ERROR, "the state directory's path is too long");
    _cleanup_json_ json_t *j = entry_json(&r->e);
    if (!j)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    /* Written beside and renamed over: `ps` reads the old state or the new one, never half. Only
     * the recorder writes its own entry, so one fixed temporary name is enough. */
    unlink(tmp);
    _cleanup_close_ int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "cannot write %s", tmp);
    if (json_dumpfd(j, fd, JSON_COMPACT) < 0 || rename(tmp, path) < 0) {
        int saved = errno;
        unlink(tmp);
        return flame_fail_errno(err, FLAME_EXIT_ERROR, saved, "cannot write %s", path);
    }
    return 0;
}

int recs_register(rec_reg *r, flame_err *err)
{
    r->lock_fd = -1;
    if (recs_dir(r->dir, sizeof r->dir, true, err) < 0)
        return -1;
    unsigned char raw[8];
    if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "getrandom");
    for (size_t i = 0; i < sizeof raw; i++)
        snprintf(r->e.id + 2 * i, 3, "%02x", raw[i]);
    r->e.pid = (long)getpid();
    char path[1024];
    if (entry_path(r->dir, r->e.id, "lock", path, sizeof path) < 0)
        return flame_fail(err, FLAME_EXIT_ERROR, "the state directory's path is too long");
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "cannot create %s", path);
    /* The lock lives as long as this process (the kernel drops it when we die, even by SIGKILL):
     * that is how `ps` tells a live recorder from the leftovers of a killed one. */
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    if (fcntl(fd, F_SETLK, &fl) < 0) {
        int saved = errno;
        close(fd);
        unlink(path);
        return flame_fail_errno(err, FLAME_EXIT_ERROR, saved, "cannot lock %s", path);
    }
    r->lock_fd = fd;
    if (recs_update(r, err) < 0) {
        recs_unregister(r);
        return -1;
    }
    return 0;
}

void recs_unregister(rec_reg *r)
{
    if (r->lock_fd < 0)
        return;
    char path[1024];
    if (entry_path(r->dir, r->e.id, "json", path, sizeof path) == 0)
        unlink(path);
    if (entry_path(r->dir, r->e.id, "lock", path, sizeof path) == 0)
        unlink(path);
    close(r->lock_fd);
    r->lock_fd = -1;
}

void recs_finish(rec_reg *r)
{
    if (r->lock_fd < 0)
        return;
    char path[1024];
    if (entry_path(r->dir, r->e.id, "lock", path, sizeof path) == 0)
        unlink(path);
    close(r->lock_fd);
    r->lock_fd = -1;
}

static bool is_id(const char *s, size_t n)
{
    return n == 16 && strspn(s, "0123456789abcdef") == 16;
}

/* The pid holding the entry's lock, 0 when none does (its recorder is gone), -1 when it cannot be
 * told (no fd left, no permission): then the entry must be left alone, never reaped; -2 when it
 * is held by a process this one cannot see (l_pid 0: a recorder in another PID namespace, e.g. a
 * container sharing this $HOME): alive, its pid unknown here. */
static long lock_holder(const char *dir, const char *id)
{
    char path[1024];
    if (entry_path(dir, id, "lock", path, sizeof path) < 0)
        return -1;
    _cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : -1;
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    if (fcntl(fd, F_GETLK, &fl) < 0)
        return -1;
    if (fl.l_type == F_UNLCK)
        return 0;
    return fl.l_pid > 0 ? (long)fl.l_pid : -2;
}

size_t recs_log_tail(const char *id, char *buf, size_t cap)
{
    char dir[900], path[1024];
    flame_err err = FLAME_ERR_INIT;
    if (cap == 0)
        return 0;
    buf[0] = '\0';
    if (!is_id(id, strlen(id)) || recs_dir(dir, sizeof dir, false, &err) < 0 ||
        entry_path(dir, id, "log", path, sizeof path) < 0)
        return 0;
    /* no symlink followed, no FIFO or device waited on: a regular file or nothing */
    _cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
        return 0;
    off_t from = st.st_size > (off_t)(cap - 1) ? st.st_size - (off_t)(cap - 1) : 0;
    ssize_t n = pread(fd, buf, cap - 1, from);
    n = n < 0 ? 0 : n;
    buf[n] = '\0';
    return (size_t)n;
}

void recs_forget(const char *id)
{
    char dir[900];
    flame_err err = FLAME_ERR_INIT;
    if (!is_id(id, strlen(id)) || recs_dir(dir, sizeof dir, false, &err) < 0)
        return;
    static const char *const ext[] = {"json", "lock", "log"};
    for (size_t k = 0; k < sizeof ext / sizeof *ext; k++) {
        char path[1024];
        if (entry_path(dir, id, ext[k], path, sizeof path) == 0)
            unlink(path);
    }
}

static int read_entry(const char *dir, const char *id, rec_entry *e)
{
    char path[1024];
    if (entry_path(dir, id, "json", path, sizeof path) < 0)
        return -1;
    _cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > RECS_JSON_MAX)
        return -1;
    _cleanup_json_ json_t *j = json_loadfd(fd, JSON_REJECT_DUPLICATES, NULL);
    if (entry_from_json(j, e) < 0 || strcmp(e->id, id) != 0)
        return -1;
    return 0;
}

static int by_since(const void *a, const void *b)
{
    const rec_entry *x = a, *y = b;
    return x->since_ms < y->since_ms ? -1 : x->since_ms > y->since_ms;
}

int recs_list(rec_entry **out, size_t *n, bool reap, flame_err *err)
{
    *out = NULL;
    *n = 0;
    char dir[900];
    if (recs_dir(dir, sizeof dir, false, err) < 0)
        return -1;
    DIR *d = opendir(dir);
    if (!d)
        return errno == ENOENT ? 0 : flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "%s", dir);
    size_t cap = 0;
    struct dirent *de;
    int rc = 0;
    while ((de = readdir(d))) {
        size_t len = strlen(de->d_name);
        if (len != 21 || strcmp(de->d_name + 16, ".json") != 0 || !is_id(de->d_name, 16))
            continue;
        char id[17];
        memcpy(id, de->d_name, 16);
        id[16] = '\0';
        rec_entry e;
        if (read_entry(dir, id, &e) < 0)
            continue; /* being written for the first time, or not ours to read */
        long holder = lock_holder(dir, id);
        if (holder == -1)
            continue; /* cannot tell whether it lives: leave it alone */
        e.pid = holder == -2 ? -1 : holder;
        /* Its recorder ended (its last state says why) or was killed (SIGKILL, a reboot): the
         * caller that shows it (plain `ps`) forgets it then. */
        if (e.pid == 0 && reap)
            recs_forget(id);
        if (*n == cap) {
            size_t nc = cap ? cap * 2 : 8;
            rec_entry *m = realloc(*out, nc * sizeof *m);
            if (!m) {
                rc = flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
                break;
            }
            *out = m;
            cap = nc;
        }
        (*out)[(*n)++] = e;
    }
    closedir(d);
    if (rc < 0) {
        free(*out);
        *out = NULL;
        *n = 0;
        return rc;
    }
    if (*n > 1)
        qsort(*out, *n, sizeof **out, by_since);
    return 0;
}

bool recs_match(const rec_entry *e, const char *what)
{
    size_t n = strlen(what);
    if (!n)
        return false;
    if (!strcmp(what, e->id) || !strcmp(what, e->arg) || (e->name[0] && !strcmp(what, e->name)))
        return true;
    return n >= 4 && n <= 64 && strspn(what, "0123456789abcdef") == n &&
           !strncmp(what, e->container_id, n);
}

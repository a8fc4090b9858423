/* plugin/recordings.c: the registry of background recordings, in a temporary XDG_STATE_HOME:
 * an entry is listed with its holder's pid while its lock is held, with pid 0 once (then
 * forgotten) when its recorder ended or was killed; seen from another PID namespace, a held lock
 * is a live recorder of unknown pid (never reaped); crafted files (symlinks, oversize, bad JSON,
 * foreign names, a log that is a symlink or a FIFO) are skipped, never followed; matching by
 * name, id and id prefix. */
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "plugin/recordings.h"
#include "tests/unit/tap.h"

static size_t count(rec_entry **v, flame_err *err)
{
    size_t n = 0;
    free(*v);
    *v = NULL;
    if (recs_list(v, &n, true, err) < 0)
        return (size_t)-1;
    return n;
}

static void write_to(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t w = write(fd, text, strlen(text));
        (void)w;
        close(fd);
    }
}

/* recs_list(reap) as run by a `ps` in a PID namespace of its own (a container sharing $HOME):
 * the pid it lists for the single entry, or -100 when it lists none; -101: no namespace. */
static long pid_from_another_namespace(void)
{
    int pfd[2];
    long r = -101;
    if (pipe(pfd) < 0)
        return r;
    fflush(stdout);
    pid_t c = fork();
    if (c == 0) {
        close(pfd[0]);
        if (unshare(CLONE_NEWPID) < 0) { /* not root: a user namespace of our own first */
            char map[64];
            uid_t uid = getuid();
            gid_t gid = getgid();
            if (unshare(CLONE_NEWUSER | CLONE_NEWPID) < 0)
                _exit(1);
            write_to("/proc/self/setgroups", "deny");
            snprintf(map, sizeof map, "%u %u 1", (unsigned)uid, (unsigned)uid);
            write_to("/proc/self/uid_map", map);
            snprintf(map, sizeof map, "%u %u 1", (unsigned)gid, (unsigned)gid);
            write_to("/proc/self/gid_map", map);
        }
        pid_t g = fork(); /* pid 1 of the new namespace */
        if (g == 0) {
            rec_entry *v = NULL;
            size_t n = 0;
            flame_err e = FLAME_ERR_INIT;
            long seen = recs_list(&v, &n, true, &e) == 0 && n == 1 ? v[0].pid : -100;
            _exit(write(pfd[1], &seen, sizeof seen) == sizeof seen ? 0 : 1);
        }
        int st;
        waitpid(g, &st, 0);
        _exit(0);
    }
    close(pfd[1]);
    if (c > 0 && read(pfd[0], &r, sizeof r) != sizeof r)
        r = -101;
    close(pfd[0]);
    if (c > 0)
        waitpid(c, NULL, 0);
    return r;
}

static void put(const char *dir, const char *name, const char *text)
{
    char p[1200];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

int main(void)
{
    char tmpl[] = "/tmp/test_recs_XXXXXX";
    if (!mkdtemp(tmpl))
        return 1;
    setenv("XDG_STATE_HOME", tmpl, 1);
    flame_err err = FLAME_ERR_INIT;
    rec_entry *v = NULL;

    ok(count(&v, &err) == 0, "no directory yet: an empty list, not an error");

    /* The recorder is a child: a process never sees its own POSIX lock as held (and closing any
     * fd of the lock file would drop it), so the registry is read from another process, as
     * `ps` does. It obeys one-byte commands: u = update, f = finish, q = quit. */
    int cmd[2], ack[2];
    if (pipe(cmd) < 0 || pipe(ack) < 0)
        return 1;
    fflush(stdout);
    pid_t rp = fork();
    if (rp == 0) {
        rec_reg r = {.lock_fd = -1};
        snprintf(r.e.arg, sizeof r.e.arg, "web");
        snprintf(r.e.state, sizeof r.e.state, "starting");
        snprintf(r.e.container_id, sizeof r.e.container_id, "%s",
                 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
        r.e.since_ms = 1000;
        flame_err e2 = FLAME_ERR_INIT;
        char k = recs_register(&r, &e2) == 0 ? 'R' : 'E';
        for (;;) {
            if (write(ack[1], &k, 1) != 1 || read(cmd[0], &k, 1) != 1 || k == 'q')
                _exit(0);
            if (k == 'u') {
                r.e.windows = 7;
                snprintf(r.e.state, sizeof r.e.state, "recording");
                k = recs_update(&r, &e2) == 0 ? 'U' : 'E';
            } else if (k == 'f') {
                snprintf(r.e.state, sizeof r.e.state, "ended");
                snprintf(r.e.reason, sizeof r.e.reason, "stopped");
                k = recs_update(&r, &e2) == 0 ? 'F' : 'E';
                recs_finish(&r);
            }
        }
    }
    char k = 0;
#define ASK(c) (write(cmd[1], c, 1) == 1 && read(ack[0], &k, 1) == 1)
    ok(read(ack[0], &k, 1) == 1 && k == 'R', "register");
    char dir[1200];
    ok(recs_dir(dir, sizeof dir, false, &err) == 0, "the registry's directory");
    struct stat st;
    ok(stat(dir, &st) == 0 && (st.st_mode & 0777) == 0700, "the directory is private (0700)");
    ok(count(&v, &err) == 1 && v[0].pid == (long)rp && !strcmp(v[0].arg, "web"),
       "listed, held by the recorder's pid");
    ok(strlen(v[0].id) == 16 && strspn(v[0].id, "0123456789abcdef") == 16, "a 16-hex-digit id (%s)",
       v[0].id);
    char id[17];
    snprintf(id, sizeof id, "%s", v[0].id);
    ok(ASK("u") && k == 'U', "update");
    ok(count(&v, &err) == 1 && v[0].windows == 7 && !strcmp(v[0].state, "recording"),
       "the update is what is read back");
    ok(recs_match(&v[0], "web"), "matched by the container as typed");
    ok(recs_match(&v[0], id), "matched by its id");
    ok(recs_match(&v[0], "0123"), "matched by a container id prefix");
    ok(!recs_match(&v[0], "012"), "not by a prefix shorter than 4");
    ok(!recs_match(&v[0], "api") && !recs_match(&v[0], ""), "not by another name, nor by nothing");

    /* `ps` in another PID namespace sees the lock held by a process it cannot see (F_GETLK's
     * l_pid is 0 there): a live recorder, never reaped as a dead one. */
    long other = pid_from_another_namespace();
    ok(other == -1, "seen from another PID namespace: running, pid unknown (-1; got %ld)", other);
    ok(count(&v, &err) == 1 && v[0].pid == (long)rp,
       "and not reaped: still listed here, with its pid");

    /* Its log: <dir>/<id>.log only (never the path the JSON names), a regular file only. */
    char logp[1300], buf[64], secret[1300];
    snprintf(logp, sizeof logp, "%s/%s.log", dir, id);
    snprintf(secret, sizeof secret, "%s/secret.txt", tmpl);
    put(tmpl, "secret.txt", "not the log\n");
    put(dir, "ffffffffffffffff.log", "not this one either\n");
    ok(recs_log_tail(id, buf, sizeof buf) == 0, "no log yet: nothing");
    ok(symlink(secret, logp) == 0 && recs_log_tail(id, buf, sizeof buf) == 0,
       "a log that is a symlink is not followed");
    unlink(logp);
    ok(mkfifo(logp, 0600) == 0 && recs_log_tail(id, buf, sizeof buf) == 0,
       "a log that is a FIFO is not waited on");
    unlink(logp);
    ok(recs_log_tail("../../etc/passwd", buf, sizeof buf) == 0, "an id that is not one: nothing");
    put(dir, strrchr(logp, '/') + 1, "line 1\nline 2\n");
    ok(recs_log_tail(id, buf, sizeof buf) == 14 && !strcmp(buf, "line 1\nline 2\n"),
       "a regular log is read");
    ok(recs_log_tail(id, buf, 8) == 7 && !strcmp(buf, "line 2\n"), "its end when it is longer");
    unlink(logp);

    /* Crafted neighbours: a symlink, an oversize file, bad JSON, a foreign name: all skipped. */
    char target[1300], link[1300];
    snprintf(target, sizeof target, "%s/%s.json", dir, id);
    snprintf(link, sizeof link, "%s/aaaaaaaaaaaaaaaa.json", dir);
    ok(symlink(target, link) == 0, "plant a symlinked entry");
    put(dir, "bbbbbbbbbbbbbbbb.json", "{\"version\":1, \"id\":");
    put(dir, "notanid.json", "{\"version\":1,\"id\":\"notanid\"}");
    char *big = malloc(70000);
    memset(big, ' ', 69999);
    big[69999] = '\0';
    put(dir, "cccccccccccccccc.json", big);
    free(big);
    put(dir, "dddddddddddddddd.json", "{\"version\":1,\"id\":\"eeeeeeeeeeeeeeee\"}");
    ok(count(&v, &err) == 1 && !strcmp(v[0].id, id), "crafted entries are skipped");

    /* The recorder ends: listed once, with pid 0 and its reason, then forgotten. */
    ok(ASK("f") && k == 'F', "final state");
    {
        rec_entry *nv = NULL;
        size_t nn = 0;
        ok(recs_list(&nv, &nn, false, &err) == 0 && nn == 1 && nv[0].pid == 0,
           "listed without reaping: the entry stays for whoever shows it");
        free(nv);
    }
    ok(count(&v, &err) == 1 && v[0].pid == 0 && !strcmp(v[0].reason, "stopped"),
       "an ended recording is listed once, not running, with why");
    ok(count(&v, &err) == 0, "then forgotten");
    int status = 0;
    ok(write(cmd[1], "q", 1) == 1 && waitpid(rp, &status, 0) == rp, "the recorder quits");

    /* A killed recorder (a child that registers, then dies by SIGKILL): listed once as gone. */
    fflush(stdout);
    pid_t p;
    int pfd[2];
    status = 0;
    if (pipe(pfd) < 0)
        return 1;
    p = fork();
    if (p == 0) {
        rec_reg cr = {.lock_fd = -1};
        snprintf(cr.e.arg, sizeof cr.e.arg, "api");
        flame_err e2 = FLAME_ERR_INIT;
        if (recs_register(&cr, &e2) < 0)
            _exit(1);
        if (write(pfd[1], "R", 1) != 1)
            _exit(1);
        pause();
        _exit(0);
    }
    char c = 0;
    close(pfd[1]);
    ok(read(pfd[0], &c, 1) == 1 && c == 'R', "a recorder registered");
    close(pfd[0]);
    ok(count(&v, &err) == 1 && v[0].pid == (long)p, "listed with its pid");
    kill(p, SIGKILL);
    waitpid(p, &status, 0);
    ok(count(&v, &err) == 1 && v[0].pid == 0 && !strcmp(v[0].arg, "api"),
       "killed: listed once, not running");
    ok(count(&v, &err) == 0, "then forgotten, files removed");
    free(v);

    /* Clean up the test's own files. */
    char rm[1300];
    snprintf(rm, sizeof rm, "rm -rf '%s'", tmpl);
    ok(system(rm) == 0, "temporary directory removed");
    return tap_done();
}

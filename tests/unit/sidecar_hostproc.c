/* sidecar/hostproc.c: container keys from captured and documented /proc/<pid>/cgroup texts
 * (cgroup v1 + cgroupfs of the test bed, v2 + systemd, hybrid, nested, malformed), the cgroup
 * layout from mountinfo, NSpid from status, the task table's lines, and a live scan. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sidecar/hostproc.h"
#include "tests/unit/tap.h"

#define ID "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define ID2 "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
#define BED "9d8be12d3ed9486d0857ca8a8eacf1133910e2a35e964e8d3ec3ec324e9a36ec"

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    char *b = calloc(1, 1 << 16);
    *len = b ? fread(b, 1, (1 << 16) - 1, f) : 0;
    fclose(f);
    return b;
}

static void key_of_file(const char *file, int want_n, const char *want_key)
{
    char path[256], key[SC_HOST_KEY_MAX];
    size_t len = 0;
    snprintf(path, sizeof path, "tests/data/host/%s", file);
    char *t = slurp(path, &len);
    ok(t != NULL, "%s readable", file);
    int n = t ? sc_host_cgroup_key(t, len, key, sizeof key) : -2;
    is_int(n, want_n, "%s: %d container level(s)", file, want_n);
    is_str(key, want_key, "%s: key", file);
    free(t);
}

static void test_cgroup(void)
{
    key_of_file("cgroup-v1-cgroupfs.txt", 1, BED);
    key_of_file("cgroup-v1-host.txt", 0, "host"); /* memory:/process_api/<32 hex> is no id */
    key_of_file("cgroup-v2-systemd.txt", 1, ID);
    key_of_file("cgroup-v2-nested.txt", 2, ID "/" ID2);
    key_of_file("cgroup-v2-host.txt", 0, "host");
    key_of_file("cgroup-hybrid-systemd.txt", 1, ID);

    char key[SC_HOST_KEY_MAX];
    const char *cpu_wins = "3:memory:/docker/" ID2 "\n1:cpu,cpuacct:/docker/" ID "\n";
    sc_host_cgroup_key(cpu_wins, strlen(cpu_wins), key, sizeof key);
    is_str(key, ID, "the cpu hierarchy's path is the one used");
    const char *bad[] = {"", "x:cpu:/docker/" ID "\n", "1:cpu\n", "1:cpu:docker/" ID "\n",
                         "12345678901:cpu:/\n"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        is_int(sc_host_cgroup_key(bad[i], strlen(bad[i]), key, sizeof key), -1,
               "malformed cgroup text %zu refused", i);
        is_str(key, "host", "... and named host, never dropped");
    }
    const char *upper = "0::/docker/"
                        "0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef\n";
    is_int(sc_host_cgroup_key(upper, strlen(upper), key, sizeof key), 0, "upper-case hex is no id");
    const char *scope63 = "0::/system.slice/docker-" ID ".scopeX\n";
    is_int(sc_host_cgroup_key(scope63, strlen(scope63), key, sizeof key), 0,
           "a unit name that only starts like a scope is no id");
    char deep[2048] = "0::";
    for (int i = 0; i < 8; i++)
        strcat(deep, "/docker/" ID);
    strcat(deep, "\n");
    is_int(sc_host_cgroup_key(deep, strlen(deep), key, sizeof key), 2,
           "nesting cut where the key buffer ends (whole ids only)");
    char small[70];
    is_int(sc_host_cgroup_key(deep, strlen(deep), small, sizeof small), 1, "one id fits in 70");
    is_int((int)strlen(small), 64, "... and the key is that id");
    /* no NUL inside: the text is bounded by len, not by a terminator */
    char raw[80];
    memcpy(raw, "0::/docker/" ID, 75);
    is_int(sc_host_cgroup_key(raw, 75, key, sizeof key), 1, "no newline, no NUL: still parsed");
}

/* A level counts only where an engine puts it: what a delegated cgroup (systemd's
 * user@UID.service, a container allowed to write its cgroups) can name is never a container. */
static void test_cgroup_spoof(void)
{
    char key[SC_HOST_KEY_MAX];
    struct {
        const char *text, *key;
        int n;
        const char *why;
    } t[] = {
        {"0::/user.slice/user-1000.slice/user@1000.service/docker-" ID ".scope\n", "host", 0,
         "a user's own docker-<id>.scope (delegated user@.service) is no container"},
        {"0::/user.slice/user-1000.slice/user@1000.service/app.slice/docker-" ID ".scope\n", "host",
         0, "... nor below a slice the user made inside it"},
        {"0::/user.slice/docker-" ID ".scope\n", "host", 0, "... nor anything in user.slice"},
        {"0::/user.slice/user-1000.slice/user@1000.service/docker/" ID "\n", "host", 0,
         "a user's own docker/<id> is no container"},
        {"0::/machine.slice/machine-x.scope/system.slice/docker-" ID ".scope\n", "host", 0,
         "a delegated scope's subtree is no engine's"},
        {"1:cpu:/" ID "\n", "host", 0, "a bare id at the root: no engine parent"},
        {"1:cpu:/custom/" ID "\n", "host", 0, "a custom cgroupfs parent is not recognised"},
        {"0::/a.slice/a-b.slice/docker-" ID ".scope\n", ID, 1,
         "systemd driver under a custom slice (--cgroup-parent a-b.slice)"},
        {"0::/system.slice/docker-" ID ".scope/init.scope\n", ID, 1,
         "the container's own sub-cgroup below its level"},
        {"0::/docker/" ID "/docker/" ID2 "\n", ID "/" ID2, 2, "cgroupfs engine in a container"},
        {"0::/docker/" ID "/x/docker/" ID2 "\n", ID, 1,
         "a cgroup the container made between two levels: not nested"},
        {"0::/docker/" ID "/" ID2 "\n", ID, 1,
         "an id the container named directly below its own: not nested"},
        {"0::/docker/" ID "/system.slice/docker-" ID2 ".scope\n", ID "/" ID2, 2,
         "systemd engine in a cgroupfs container"},
        {"0::/../docker-" ID ".scope\n", ID, 1, "private cgroup namespace: a sibling scope"},
        {"0::/../" ID "\n", ID, 1, "private cgroup namespace: a sibling (cgroupfs)"},
        {"0::/../../user.slice/user-1000.slice/user@1000.service/docker-" ID ".scope\n", "host", 0,
         "private cgroup namespace: a user's delegated cgroup is still none"},
        {"0::/../" ID "/sub/" ID2 "\n", ID, 1, "private cgroup namespace: no id below a sibling's"},
    };
    for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
        is_int(sc_host_cgroup_key(t[i].text, strlen(t[i].text), key, sizeof key), t[i].n, "%s",
               t[i].why);
        is_str(key, t[i].key, "... key");
    }
    char deep[4096] = "0::/docker/" ID;
    for (int i = 0; i < 70; i++)
        strcat(deep, "/d");
    strcat(deep, "\n");
    is_int(sc_host_cgroup_key(deep, strlen(deep), key, sizeof key), 0,
           "a path deeper than any engine nests: host");
}

/* The target's identity in a one-container sidecar: the innermost id, under any parent. */
static void test_cgroup_innermost(void)
{
    char id[SC_HOST_ID_LEN + 1];
    struct {
        const char *text, *id;
        int r;
    } t[] = {
        {"1:cpu:/docker/" ID "\n0::/docker/" ID "\n", ID, 1},
        {"0::/../docker-" ID ".scope\n", ID, 1},
        {"1:cpu:/custom/parent/" ID "\n", ID, 1},
        {"0::/docker/" ID "/docker/" ID2 "\n", ID2, 1},
        {"0::/system.slice/docker-" ID ".scope/init.scope\n", ID, 1},
        {"9:name=systemd:/\n1:cpu:/\n0::/\n", "", 0},
        {"1:cpu\n", "", -1},
        {"", "", -1},
    };
    for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
        is_int(sc_cgroup_innermost(t[i].text, strlen(t[i].text), id), t[i].r, "innermost %zu", i);
        is_str(id, t[i].id, "... id %zu", i);
    }
    size_t len;
    char *b = slurp("tests/data/host/cgroup-v1-cgroupfs.txt", &len);
    ok(b && sc_cgroup_innermost(b, len, id) == 1 && !strcmp(id, BED),
       "the test bed's captured text: the container's id");
    free(b);
}

static void test_layout(void)
{
    size_t len;
    char *t = slurp("tests/data/host/mountinfo-v1.txt", &len);
    is_str(sc_host_layout_name(sc_host_layout(t, len)), "hybrid",
           "test bed: v1 hierarchies + cgroup2 at /sys/fs/cgroup/unified");
    free(t);
    t = slurp("tests/data/host/mountinfo-v2.txt", &len);
    is_str(sc_host_layout_name(sc_host_layout(t, len)), "v2", "cgroup2 at /sys/fs/cgroup");
    free(t);
    const char *v1 = "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n";
    is_str(sc_host_layout_name(sc_host_layout(v1, strlen(v1))), "v1", "only v1 hierarchies");
    const char *junk = "garbage\n1 2 3\n - cgroup2\n";
    is_str(sc_host_layout_name(sc_host_layout(junk, strlen(junk))), "unknown", "junk: unknown");
}

static void test_status(void)
{
    sc_host_ids id;
    const char *s = "Name:\tworker;0\x01\nTgid:\t6676\nNSpid:\t6690\t14\n";
    is_int(sc_host_parse_status(s, strlen(s), &id), 0, "status with NSpid");
    is_int(id.host, 6690, "host tid");
    is_int(id.inner, 14, "vtid");
    is_int(id.levels, 2, "two namespaces");
    is_str(id.name, "worker:0?", "name: ';' and control bytes replaced");
    const char *one = "Name:\tbash\nNSpid:\t42\n";
    is_int(sc_host_parse_status(one, strlen(one), &id), 0, "host process");
    ok(id.host == 42 && id.inner == 42 && id.levels == 1, "vpid = pid on the host");
    const char *bad[] = {"Name:\tx\n", "NSpid:\t\n", "NSpid:\t12x\n", "NSpid:\t99999999\n",
                         "NSpid:\t0\t1\n"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        is_int(sc_host_parse_status(bad[i], strlen(bad[i]), &id), -1, "bad status %zu refused", i);
    char many[512] = "NSpid:";
    for (int i = 0; i < 40; i++)
        strcat(many, "\t7");
    is_int(sc_host_parse_status(many, strlen(many), &id), -1, "more than 32 levels refused");
}

static void test_stat_start(void)
{
    uint64_t st = 0;
    const char *s = "4242 (java) S 1 4242 4242 0 -1 4194560 6 0 0 0 1 2 0 0 20 0 1 0 98765 "
                    "1000 100 18446744073709551615\n";
    is_int(sc_host_parse_stat_start(s, strlen(s), &st), 0, "stat line");
    ok(st == 98765, "start time: field 22 (%llu)", (unsigned long long)st);
    const char *odd = "7 (a) S (x) S 1 7 7 0 -1 1 0 0 0 0 0 0 0 0 20 0 1 0 555 1 1\n";
    ok(sc_host_parse_stat_start(odd, strlen(odd), &st) == 0 && st == 555,
       "a comm holding ') S (': fields counted after the last ')'");
    const char *bad[] = {"", "7 a S 1\n", "7 (x) S 1 2 3\n",
                         "7 (x) S 1 7 7 0 -1 1 0 0 0 0 0 0 0 0 20 0 1 0 5x5 1\n",
                         "7 (x) S 1 7 7 0 -1 1 0 0 0 0 0 0 0 0 20 0 1 0 99999999999999999999 1\n"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        is_int(sc_host_parse_stat_start(bad[i], strlen(bad[i]), &st), -1, "bad stat %zu", i);
    char buf[1024];
    int fd = open("/proc/self/stat", O_RDONLY);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf) : -1;
    if (fd >= 0)
        close(fd);
    ok(n > 0 && sc_host_parse_stat_start(buf, (size_t)n, &st) == 0 && st > 0,
       "our own /proc/self/stat");
}

static void test_table(void)
{
    sc_host_task t = {.pid = 10, .tid = 11, .vpid = 1, .vtid = 2, .start = 123456789012ull}, u;
    strcpy(t.key, ID);
    strcpy(t.pcomm, "java");
    strcpy(t.tcomm, "C2 CompilerThre");
    char line[512];
    int n = sc_host_task_format(&t, line, sizeof line);
    ok(n > 0 && line[n - 1] == '\n', "formatted");
    is_int(sc_host_task_parse(line, (size_t)n - 1, &u), 0, "parsed back");
    ok(u.pid == 10 && u.tid == 11 && u.vpid == 1 && u.vtid == 2, "ids round-trip");
    ok(u.start == 123456789012ull, "start time round-trips");
    is_str(u.key, ID, "key round-trips");
    is_str(u.tcomm, "C2 CompilerThre", "thread name with a space round-trips");
    const char *bad[] = {"X 1 2 3 4 5 host\ta\tb",  "T 1 2 3 5 host\ta\tb",
                         "T 1 2 3 4 5 ho st\ta\tb", "T 1 2 3 4 5 host\ta",
                         "T 1 2 3 4 5 ../x\ta\tb",  "T 1 2 3 4 5 host\t01234567890123456789\tb",
                         "T 1 0 3 4 5 host\ta\tb",  "T 1 2 3 4 host\ta\tb",
                         "T 1 2 3 4 x host\ta\tb"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        is_int(sc_host_task_parse(bad[i], strlen(bad[i]), &u), -1, "bad table line %zu", i);

    /* a table file: load, look up, and a live fallback for a tid it lacks */
    char path[] = "/tmp/flame-hostproc-XXXXXX";
    int fd = mkstemp(path);
    ok(fd >= 0, "temp table");
    if (fd < 0)
        return;
    unlink(path);
    for (uint32_t k = 1; k <= 3000; k++) {
        sc_host_task x = {
            .pid = 100000 + k / 10, .tid = 100000 + k, .vpid = 1, .vtid = k, .start = 5};
        strcpy(x.key, k % 2 ? ID : "host");
        strcpy(x.pcomm, "p");
        strcpy(x.tcomm, "t");
        n = sc_host_task_format(&x, line, sizeof line);
        if (write(fd, line, (size_t)n) != n)
            break;
    }
    if (write(fd, "garbage line\n", 13) != 13)
        return;
    lseek(fd, 0, SEEK_SET);
    sc_host_table *tab = sc_host_table_load(fd, 1 << 20);
    ok(tab && sc_host_table_count(tab) == 3000, "3000 tasks loaded, garbage skipped");
    const sc_host_task *g = sc_host_table_get(tab, -1, 100000 + 1234 / 10, 100000 + 1234, 0);
    ok(g && g->vtid == 1234 && !strcmp(g->key, "host"), "lookup by tid");
    ok(!sc_host_table_get(tab, -1, 5, 100000 + 1234, 0), "another pid for that tid: not it");
    int proc = open("/proc", O_RDONLY | O_DIRECTORY);
    g = sc_host_table_get(tab, proc, (uint32_t)getpid(), (uint32_t)getpid(), 0);
    ok(g && g->vpid >= 1 && g->pid == (uint32_t)getpid(), "a live task is read from /proc");
    sc_host_table_free(tab);
    close(fd);

    /* a tid reused by a task of another container (pid = tid: a main thread): each sample goes
     * to the task that had the tid when it was taken, by start time (ticks; 10 ms at USER_HZ 100)
     */
    tab = sc_host_table_load(-1, 0);
    sc_host_task v = {.pid = 4242, .tid = 4242, .vpid = 1, .vtid = 1, .start = 1000};
    strcpy(v.key, ID);
    strcpy(v.pcomm, "victim");
    ok(tab && sc_host_task_format(&v, line, sizeof line) > 0, "victim's task");
    sc_host_task c = v;
    c.start = 2000;
    strcpy(c.key, ID2);
    strcpy(c.pcomm, "churner");
    /* the victim's line arrives after the churner's: the order of the table does not matter */
    char path2[] = "/tmp/flame-hostproc-XXXXXX";
    int tfd = mkstemp(path2);
    unlink(path2);
    n = sc_host_task_format(&c, line, sizeof line);
    ok(write(tfd, line, (size_t)n) == n, "churner written");
    n = sc_host_task_format(&v, line, sizeof line);
    ok(write(tfd, line, (size_t)n) == n, "victim written");
    lseek(tfd, 0, SEEK_SET);
    sc_host_table_free(tab);
    tab = sc_host_table_load(tfd, 1 << 20);
    close(tfd);
    long hz = sysconf(_SC_CLK_TCK);
    uint64_t tick = 1000000000ull / (uint64_t)hz;
    g = sc_host_table_get(tab, -1, 4242, 4242, 1500 * tick);
    ok(g && !strcmp(g->key, ID), "a sample before the reuse: the victim's container");
    g = sc_host_table_get(tab, -1, 4242, 4242, 2500 * tick);
    ok(g && !strcmp(g->key, ID2), "a sample after it: the churner's");
    ok(!sc_host_table_get(tab, -1, 4242, 4242, 500 * tick),
       "a sample before either started: unknown, never the later task's");
    g = sc_host_table_get(tab, -1, 4242, 4242, 0);
    ok(g && !strcmp(g->key, ID2), "no time: the latest task");
    is_int((int)sc_host_table_count(tab), 2, "both tasks kept");
    sc_host_table_free(tab);

    /* a live scan of this machine's /proc: at least ourselves */
    sc_host_seen seen;
    ok(sc_host_seen_init(&seen, 1 << 16) == 0, "seen set");
    int out = open("/dev/null", O_WRONLY);
    long w = sc_host_scan(proc, &seen, out);
    ok(w >= 1, "live scan wrote %ld tasks", w);
    is_int(sc_host_scan(proc, &seen, out) < w, 1, "a second scan writes only new tasks");
    bool added;
    ok(!sc_host_seen_add(&seen, 12345ull << 23 | 7, &added) && added, "a new key is added");
    ok(sc_host_seen_add(&seen, 12345ull << 23 | 7, &added) && !added, "... once");
    ok(!sc_host_seen_add(&seen, 12346ull << 23 | 7, &added) && added,
       "the same tid with another /proc inode (a reused tid) is a new task");
    sc_host_seen_free(&seen);
    close(out);
    close(proc);
}

int main(void)
{
    test_cgroup();
    test_cgroup_spoof();
    test_cgroup_innermost();
    test_layout();
    test_status();
    test_stat_start();
    test_table();
    return tap_done();
}

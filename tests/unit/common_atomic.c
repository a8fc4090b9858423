/* common/atomic.c: outputs reach the file whole and byte-exact through the writer thread,
 * buffered below 32 MB and O_DIRECT above (an unaligned tail, tmpfs), a failing generator leaves
 * nothing behind and the old file untouched, and a write error inside the writer thread comes
 * back to the caller as an error naming the file. What the output path is decides how it is
 * written: a symbolic link is followed only as the kernel's protected_symlinks rule would (never
 * another user's link in a sticky world-writable directory), a FIFO is written in place only when
 * it is trusted the same way, and the fallback of atomic_write_new gets a fresh random name. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/atomic.h"
#include "tests/unit/tap.h"

/* Deterministic bytes: byte i of a stream seeded with s. */
static unsigned char byte_at(uint64_t s, size_t i)
{
    uint64_t x = (s + i / 8) * 0x9e3779b97f4a7c15ULL;
    x ^= x >> 29;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 32;
    return (unsigned char)(x >> (8 * (i % 8)));
}

typedef struct gen {
    size_t size;    /* bytes to write */
    size_t fail_at; /* return an error after this many (0 = never) */
    uint64_t seed;
} gen;

/* Writes the stream in pieces of varying size through fputc, fwrite and fputs, as the renderers
 * do (one byte, a line, a 1 MB block). */
static int write_gen(void *ctx, FILE *out, flame_err *err)
{
    const gen *g = ctx;
    static unsigned char block[3 << 20];
    size_t i = 0, step = 0;
    while (i < g->size) {
        if (g->fail_at && i >= g->fail_at)
            return flame_fail(err, FLAME_EXIT_ERROR, "generator gave up");
        size_t kind = step++ % 3, want = kind == 0 ? 1 : kind == 1 ? 777 : sizeof block - 13;
        if (want > g->size - i)
            want = g->size - i;
        for (size_t k = 0; k < want; k++)
            block[k] = byte_at(g->seed, i + k);
        if (want == 1)
            fputc(block[0], out);
        else
            fwrite(block, 1, want, out);
        i += want;
    }
    return 0;
}

/* The file holds exactly the generator's stream. */
static bool file_matches(const char *path, const gen *g)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    static unsigned char buf[1 << 20];
    size_t i = 0, n;
    bool same = true;
    while (same && (n = fread(buf, 1, sizeof buf, f)) > 0) {
        for (size_t k = 0; k < n && same; k++)
            same = i + k < g->size && buf[k] == byte_at(g->seed, i + k);
        i += n;
    }
    fclose(f);
    return same && i == g->size;
}

/* Entries in dir other than the names given (temporary files left behind). */
static int others_in(const char *dir, const char *keep)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strcmp(e->d_name, keep))
            n++;
    if (d)
        closedir(d);
    return n;
}

static void test_sizes(const char *dir, const char *where)
{
    char path[512];
    snprintf(path, sizeof path, "%s/out.bin", dir);
    /* empty, small, just under / over the O_DIRECT switch, a 4 KiB-aligned size, odd tails */
    const size_t sizes[] = {0,
                            1,
                            4095,
                            (size_t)(32 << 20) - 1,
                            (size_t)(32 << 20) + (4 << 20),
                            (size_t)(40 << 20) + 777};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        gen g = {.size = sizes[k], .seed = k + 1};
        flame_err err = FLAME_ERR_INIT;
        int rc = atomic_write_file(path, write_gen, &g, &err);
        ok(rc == 0, "%s: %zu bytes written (%s)", where, sizes[k], rc ? err.msg : "ok");
        ok(file_matches(path, &g), "%s: %zu bytes read back identical", where, sizes[k]);
    }
    ok(others_in(dir, "out.bin") == 0, "%s: no temporary file left", where);
    struct stat st;
    mode_t um = umask(0);
    umask(um);
    ok(stat(path, &st) == 0 && (st.st_mode & 0777) == (0666 & ~um),
       "%s: mode is 0666 & ~umask (%o)", where, st.st_mode & 0777);
}

static void test_failure(const char *dir)
{
    char path[512];
    snprintf(path, sizeof path, "%s/keep.bin", dir);
    gen old = {.size = 5000, .seed = 99};
    flame_err err = FLAME_ERR_INIT;
    ok(atomic_write_file(path, write_gen, &old, &err) == 0, "old file written");
    /* fails after 40 MB: past the O_DIRECT switch, buffers in flight */
    gen bad = {.size = 64 << 20, .fail_at = 40 << 20, .seed = 7};
    err = (flame_err)FLAME_ERR_INIT;
    int rc = atomic_write_file(path, write_gen, &bad, &err);
    ok(rc < 0 && strstr(err.msg, "generator gave up"), "a failing generator is an error (%s)",
       err.msg);
    ok(file_matches(path, &old), "the old file is untouched");
    ok(others_in(dir, "keep.bin") == 0, "no temporary file left after the failure");
}

/* A write the kernel refuses inside the writer thread (the file size limit: EFBIG) is reported
 * by atomic_write_file, with the path. In a child: the limit and SIGXFSZ stay there. */
static void test_write_error(const char *dir)
{
    char path[512];
    snprintf(path, sizeof path, "%s/big.bin", dir);
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {.rlim_cur = 48 << 20, .rlim_max = 48 << 20};
        setrlimit(RLIMIT_FSIZE, &rl);
        gen g = {.size = 64 << 20, .seed = 3};
        flame_err err = FLAME_ERR_INIT;
        int rc = atomic_write_file(path, write_gen, &g, &err);
        char want[600];
        snprintf(want, sizeof want, "cannot write %s: %s", path, strerror(EFBIG));
        bool named = strstr(err.msg, want) != NULL;
        if (!named)
            fprintf(stderr, "# got: %s\n", err.msg);
        _exit(rc < 0 && named && access(path, F_OK) != 0 ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
       "a write error in the writer thread is an error naming the file, and no file is made");
    /* test_failure() left keep.bin; anything else is the failed write's temporary file */
    ok(others_in(dir, "keep.bin") == 0, "no temporary file left after the write error");
}

/* A file holding exactly text (or, with text NULL, missing). */
static bool holds(const char *path, const char *text)
{
    char buf[256] = {0};
    FILE *f = fopen(path, "rb");
    if (!f)
        return text == NULL;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    return text && n == strlen(text) && !memcmp(buf, text, n);
}

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

/* The kernel's protected_symlinks rule, whatever the sysctl says: a world-writable sticky
 * directory (/tmp) is where another user plants `web.svg -> /home/victim/.bashrc`. Run as root
 * (CI): the links are given to uid 65534 with lchown. */
static void test_links(const char *top)
{
    if (strlen(top) > 150)
        return;
    if (geteuid() != 0) {
        ok(getenv("CI") == NULL, "# SKIP the planted-link checks need root (CI runs as root)");
        return;
    }
    char sticky[200], victim[300], link[300], own[300], out[300], fifo[300];
    snprintf(sticky, sizeof sticky, "%s/sticky", top);
    snprintf(victim, sizeof victim, "%s/victim", top);
    mkdir(sticky, 0777);
    chmod(sticky, 01777);
    put(victim, "secret\n");
    gen g = {.size = 3000, .seed = 5};
    flame_err err = FLAME_ERR_INIT;

    /* another user's link in the sticky directory: refused, the file it names untouched */
    snprintf(link, sizeof link, "%s/web.svg", sticky);
    ok(symlink(victim, link) == 0 && lchown(link, 65534, 65534) == 0,
       "a link planted by uid 65534");
    int rc = atomic_write_file(link, write_gen, &g, &err);
    ok(rc < 0 && strstr(err.msg, "will not write") && strstr(err.msg, "protected_symlinks"),
       "another user's link in a sticky world-writable dir is not followed (%s)", err.msg);
    ok(holds(victim, "secret\n"), "... the file it names is untouched");
    struct stat st;
    ok(lstat(link, &st) == 0 && S_ISLNK(st.st_mode), "... and the link is left as it was");
    ok(others_in(sticky, "web.svg") == 0, "... no temporary file left");

    /* a dangling one too: no file is created where it points */
    char made[300];
    snprintf(made, sizeof made, "%s/created-through-link", top);
    snprintf(link, sizeof link, "%s/dangling.svg", sticky);
    ok(symlink(made, link) == 0 && lchown(link, 65534, 65534) == 0, "a dangling planted link");
    err = (flame_err)FLAME_ERR_INIT;
    ok(atomic_write_file(link, write_gen, &g, &err) < 0 && access(made, F_OK) != 0,
       "another user's dangling link: nothing created where it points");

    /* our own link there: followed, the file it names replaced, the link kept */
    snprintf(own, sizeof own, "%s/mine.svg", sticky);
    snprintf(out, sizeof out, "%s/latest.bin", top);
    put(out, "old\n");
    ok(symlink(out, own) == 0, "our own link in the sticky dir");
    err = (flame_err)FLAME_ERR_INIT;
    ok(atomic_write_file(own, write_gen, &g, &err) == 0 && file_matches(out, &g),
       "our own link is followed: the file it names holds the output (%s)", err.msg);
    ok(lstat(own, &st) == 0 && S_ISLNK(st.st_mode), "... the link stays a link");

    /* a link owned by the directory's owner (the kernel trusts it) */
    char downer[200], dlink[300], dout[300];
    snprintf(downer, sizeof downer, "%s/shared", top);
    snprintf(dlink, sizeof dlink, "%s/p.svg", downer);
    snprintf(dout, sizeof dout, "%s/by-owner.bin", top);
    mkdir(downer, 0777);
    chmod(downer, 01777);
    ok(chown(downer, 65534, 65534) == 0 && symlink(dout, dlink) == 0 &&
           lchown(dlink, 65534, 65534) == 0,
       "a sticky dir of uid 65534 with its owner's link");
    err = (flame_err)FLAME_ERR_INIT;
    ok(atomic_write_file(dlink, write_gen, &g, &err) == 0 && file_matches(dout, &g),
       "the directory owner's link is followed (%s)", err.msg);

    /* another user's link in a directory that is not sticky: the kernel follows it, so do we */
    char plain[200], plink[300], pout[300];
    snprintf(plain, sizeof plain, "%s/plain", top);
    snprintf(plink, sizeof plink, "%s/x.svg", plain);
    snprintf(pout, sizeof pout, "%s/plain-target.bin", top);
    mkdir(plain, 0755);
    ok(symlink(pout, plink) == 0 && lchown(plink, 65534, 65534) == 0,
       "another user's link in a 0755 dir");
    err = (flame_err)FLAME_ERR_INIT;
    ok(atomic_write_file(plink, write_gen, &g, &err) == 0 && file_matches(pout, &g),
       "... followed, as the kernel would (%s)", err.msg);

    /* another user's FIFO in the sticky dir: refused at once (opening it would block until the
     * planter reads, and hand them the output) */
    snprintf(fifo, sizeof fifo, "%s/pipe.svg", sticky);
    ok(mkfifo(fifo, 0666) == 0 && chown(fifo, 65534, 65534) == 0, "a FIFO planted by uid 65534");
    err = (flame_err)FLAME_ERR_INIT;
    ok(atomic_write_file(fifo, write_gen, &g, &err) < 0 && strstr(err.msg, "named pipe"),
       "another user's FIFO in a sticky dir is refused (%s)", err.msg);

    /* a regular file of another user there is replaced, not written through */
    char theirs[300];
    snprintf(theirs, sizeof theirs, "%s/theirs.svg", sticky);
    put(theirs, "x\n");
    ok(chown(theirs, 65534, 65534) == 0, "another user's regular file");
    err = (flame_err)FLAME_ERR_INIT;
    ok(atomic_write_file(theirs, write_gen, &g, &err) == 0 && file_matches(theirs, &g) &&
           lstat(theirs, &st) == 0 && st.st_uid == 0,
       "... replaced by a file of ours (%s)", err.msg);
}

/* atomic_write_new: a random name next to nothing that was planted, mode 0600; never the
 * predictable name. */
static void test_new(const char *dir)
{
    char planted[300], victim[300];
    snprintf(planted, sizeof planted, "%s/web.svg", dir);
    snprintf(victim, sizeof victim, "%s/victim.txt", dir);
    put(victim, "keep\n");
    ok(symlink(victim, planted) == 0, "a link at the predictable name");
    gen g = {.size = 5000, .seed = 11};
    flame_err err = FLAME_ERR_INIT;
    char *a = NULL, *b = NULL;
    ok(atomic_write_new(dir, "web", ".svg", write_gen, &g, &a, &err) == 0 && a &&
           atomic_write_new(dir, "web", ".svg", write_gen, &g, &b, &err) == 0 && b,
       "two files made (%s, %s)", a ? a : "-", b ? b : "-");
    size_t dl = strlen(dir);
    ok(a && b && strcmp(a, b) && strcmp(a, planted) && !strncmp(a, dir, dl) &&
           !strncmp(a + dl, "/web-", 5) && strlen(a + dl) == strlen("/web-XXXXXX.svg") &&
           !strcmp(a + strlen(a) - 4, ".svg"),
       "each under a random name web-XXXXXX.svg, never web.svg");
    ok(a && file_matches(a, &g) && holds(victim, "keep\n"),
       "the output is in it; the planted link's target untouched");
    struct stat st;
    ok(a && stat(a, &st) == 0 && (st.st_mode & 0777) == 0600, "mode 0600 (%o)",
       a ? (unsigned)(st.st_mode & 0777) : 0);
    if (a)
        unlink(a);
    if (b)
        unlink(b);
    free(a);
    free(b);
    gen bad = {.size = 64 << 10, .fail_at = 500, .seed = 1};
    char *c = NULL;
    err = (flame_err)FLAME_ERR_INIT;
    ok(atomic_write_new(dir, "web", ".svg", write_gen, &bad, &c, &err) < 0 && !c &&
           others_in(dir, "web.svg") == 1,
       "a failing generator leaves nothing (only the link and its target stay)");
}

int main(void)
{
    char disk[] = "/tmp/test_atomic.XXXXXX", shm[] = "/dev/shm/test_atomic.XXXXXX";
    if (!mkdtemp(disk)) {
        printf("Bail out! mkdtemp\n");
        return 1;
    }
    char sub[5][128];
    for (int i = 0; i < 5; i++) {
        snprintf(sub[i], sizeof sub[i], "%s/%d", disk, i);
        mkdir(sub[i], 0700);
    }
    test_sizes(sub[0], "disk");
    test_failure(sub[1]);
    test_write_error(sub[1]);
    test_links(sub[2]);
    test_new(sub[3]);
    if (mkdtemp(shm)) {
        test_sizes(shm, "tmpfs");
        char cmd[600];
        snprintf(cmd, sizeof cmd, "rm -rf %s", shm);
        if (system(cmd) != 0)
            printf("# could not remove %s\n", shm);
    } else {
        ok(1, "# SKIP no /dev/shm");
    }
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", disk);
    if (system(cmd) != 0)
        printf("# could not remove %s\n", disk);
    return tap_done();
}

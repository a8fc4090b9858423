/* common/atomic.c: outputs reach the file whole and byte-exact through the writer thread,
 * buffered below 32 MB and O_DIRECT above (an unaligned tail, tmpfs), a failing generator leaves
 * nothing behind and the old file untouched, and a write error inside the writer thread comes
 * back to the caller as an error naming the file. */
#include <dirent.h>
#include <errno.h>
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

int main(void)
{
    char disk[] = "/tmp/test_atomic.XXXXXX", shm[] = "/dev/shm/test_atomic.XXXXXX";
    if (!mkdtemp(disk)) {
        printf("Bail out! mkdtemp\n");
        return 1;
    }
    char sub[3][128];
    for (int i = 0; i < 3; i++) {
        snprintf(sub[i], sizeof sub[i], "%s/%d", disk, i);
        mkdir(sub[i], 0700);
    }
    test_sizes(sub[0], "disk");
    test_failure(sub[1]);
    test_write_error(sub[1]);
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

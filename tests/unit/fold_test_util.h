/* Helpers shared by the folding tests: fold a file or a string into a malloc'd string. */
#pragma once
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "flame/fold.h"
#include "tests/unit/render_test_util.h"

static int out_folder(const void *f, const void *arg, FILE *out, flame_err *err)
{
    (void)arg;
    return folder_write(f, out, err);
}

/* The end of folding: finish f (when r, what feeding it returned, is 0), its text, its stats;
 * f is freed. NULL when anything failed. */
static inline char *fold_done(folder *f, int r, flame_err *err, fold_stats *st)
{
    if (r == 0)
        r = folder_finish(f, err);
    char *text = r == 0 ? out_str(out_folder, f, NULL, NULL) : NULL;
    if (r < 0)
        printf("# fold failed: %s\n", err->msg);
    if (st)
        folder_get_stats(f, st);
    folder_free(f);
    return text;
}

/* Fold everything in fd; returns the folded text (caller frees) or NULL. */
static inline char *fold_fd(int fd, const fold_opts *o, fold_stats *st)
{
    flame_err err = FLAME_ERR_INIT;
    folder *f = folder_new(o);
    return f ? fold_done(f, folder_read_fd(f, fd, &err), &err, st) : NULL;
}

static inline char *fold_path(const char *path, const fold_opts *o, fold_stats *st)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    char *s = fold_fd(fd, o, st);
    close(fd);
    return s;
}

/* Fold a string fed line by line through folder_feed (no fd). */
static inline char *fold_str(const char *text, const fold_opts *o, fold_stats *st)
{
    flame_err err = FLAME_ERR_INIT;
    folder *f = folder_new(o);
    if (!f)
        return NULL;
    const char *p = text;
    int r = 0;
    while (*p && r == 0) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        r = folder_feed(f, p, n, &err);
        p += n + (nl ? 1 : 0);
    }
    return fold_done(f, r, &err, st);
}

static inline char *slurp(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return NULL;
    char *buf = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n + 65536 > cap) {
            cap = (n + 65536) * 2;
            char *nb = realloc(buf, cap + 1);
            if (!nb) {
                free(buf);
                fclose(fp);
                return NULL;
            }
            buf = nb;
        }
        size_t k = fread(buf + n, 1, cap - n, fp);
        n += k;
        if (k == 0)
            break;
    }
    fclose(fp);
    buf[n] = 0;
    if (len)
        *len = n;
    return buf;
}

/* Print the first differing line as a TAP comment. */
static inline void show_first_diff(const char *got, const char *want)
{
    int line = 1;
    while (*got && *got == *want) {
        if (*got == '\n')
            line++;
        got++, want++;
    }
    printf("#   first difference at line %d\n", line);
    const char *g = got, *w = want;
    printf("#   got:  '%.*s'\n", (int)strcspn(g, "\n") > 300 ? 300 : (int)strcspn(g, "\n"), g);
    printf("#   want: '%.*s'\n", (int)strcspn(w, "\n") > 300 ? 300 : (int)strcspn(w, "\n"), w);
}

/* The stackcollapse corpus: the part committed in tests/data/stackcollapse (our JDK 17 capture
 * and Perl's outputs for it), or $FLAME_TESTDATA/stackcollapse when set: FlameGraph's own 13
 * inputs are CDDL and stay out of the repository, so the full corpus is an explicit opt-in. */
static inline const char *corpus_dir(void)
{
    static char buf[4096 + 16];
    const char *env = getenv("FLAME_TESTDATA");
    if (env && *env) {
        snprintf(buf, sizeof buf, "%.4000s/stackcollapse", env);
        return buf;
    }
    return "tests/data/stackcollapse";
}

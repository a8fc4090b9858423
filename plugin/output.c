/* Output naming and atomic writing. */
#include "plugin/output.h"

#include "common/atomic.h"

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "flame/profile.h"
#include "flame/render.h"

void out_safe_name(const char *in, char *out, size_t n)
{
    size_t o = 0;
    for (; *in && o + 1 < n; in++) {
        char c = *in;
        bool okc = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                   c == '_' || c == '.' || c == '-';
        out[o++] = okc ? c : '_';
    }
    out[o] = 0;
    if (out[0] == '.' || !out[0]) /* no hidden files, no empty names */
        out[0] = '_', out[o ? o : 1] = 0;
}

static bool is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* "web.svg" with formats {svg, folded} -> stem "web"; a known extension is dropped. */
static char *stem_of(const char *out)
{
    size_t n = strlen(out);
    for (int f = 0; f < FMT_COUNT; f++) {
        const char *ext = opts_format_ext(f);
        size_t e = strlen(ext);
        if (n > e && !strcmp(out + n - e, ext))
            return strndup(out, n - e);
    }
    if (n > 5 && !strcmp(out + n - 5, ".json"))
        return strndup(out, n - 5);
    return strdup(out);
}

int out_paths(const flame_opts *o, const char *container, int n, time_t when,
              char *paths[FMT_COUNT], flame_err *err)
{
    char safe[128], stamp[32];
    struct tm tm;
    localtime_r(&when, &tm);
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
    out_safe_name(container, safe, sizeof safe);
    for (int f = 0; f < FMT_COUNT; f++)
        paths[f] = NULL;

    _cleanup_free_ char *dir = NULL, *stem = NULL;
    bool verbatim = false;
    if (o->output && (is_dir(o->output) || o->output[strlen(o->output) - 1] == '/')) {
        dir = strdup(o->output);
    } else if (o->output) {
        if (n > 1)
            return flame_fail(err, FLAME_EXIT_USAGE,
                              "-o %s: with several containers, -o must be an existing directory",
                              o->output);
        stem = stem_of(o->output);
        verbatim = o->nformats == 1; /* one format: the name exactly as given */
    }
    for (int f = 0; f < FMT_COUNT; f++) {
        if (!o->formats[f])
            continue;
        int r;
        if (verbatim)
            r = asprintf(&paths[f], "%s", o->output);
        else if (stem)
            r = asprintf(&paths[f], "%s%s", stem, opts_format_ext(f));
        else
            r = asprintf(&paths[f], "%s%sflame-%s-%s%s", dir ? dir : "",
                         dir && dir[strlen(dir) - 1] != '/' ? "/" : "", safe, stamp,
                         opts_format_ext(f));
        if (r < 0) {
            paths[f] = NULL;
            return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
        }
    }
    return 0;
}

int out_write_atomic(const char *path, out_writer_fn fn, void *ctx, flame_err *err)
{
    int rc = atomic_write_file(path, fn, ctx, err);
    /* the renderer's "write error: No space left on device" does not know the file */
    if (rc < 0 && err->msg[0] && !strstr(err->msg, path))
        flame_wrap(err, "cannot write %s", path);
    return rc;
}

static int write_svg(void *ud, FILE *f, flame_err *err)
{
    const out_render *r = ud;
    render_opts ro;
    render_opts_default(&ro);
    char title[512];
    snprintf(title, sizeof title, "%s", r->o->title ? r->o->title : r->name);
    ro.title = title;
    if (r->subtitle)
        ro.subtitle = r->subtitle;
    if (r->o->colors)
        ro.colors = r->o->colors;
    if (r->o->minwidth_set) {
        ro.minwidth = r->o->minwidth;
        ro.minwidth_pct = r->o->minwidth_pct;
    }
    ro.embed_folded = true; /* `docker flame diff` reads SVGs back */
    return render_svg(r->prof, &ro, f, err);
}

static int write_folded(void *ud, FILE *f, flame_err *err)
{
    const out_render *r = ud;
    return profile_write_folded(r->prof, f, err);
}

static int write_speedscope(void *ud, FILE *f, flame_err *err)
{
    const out_render *r = ud;
    return export_speedscope(r->prof, r->name, f, err);
}

typedef struct out_guard {
    out_writer_fn fn;
    const out_render *r;
} out_guard;

static int guarded(void *ud, FILE *f, flame_err *err)
{
    out_guard *g = ud;
    if (g->fn((void *)g->r, f, err) < 0)
        return -1;
    if (g->r->cancelled && g->r->cancelled(g->r->cancel_ctx))
        return flame_fail(err, FLAME_EXIT_INTERRUPTED,
                          "interrupted while writing: nothing written");
    return 0;
}

int out_write_format(int fmt, const char *path, const out_render *r, flame_err *err)
{
    out_writer_fn fn = NULL;
    switch ((enum opt_format)fmt) {
    case FMT_SVG:
        fn = write_svg;
        break;
    case FMT_FOLDED:
        fn = write_folded;
        break;
    case FMT_SPEEDSCOPE:
        fn = write_speedscope;
        break;
    case FMT_COUNT:
        break;
    }
    if (!fn)
        return flame_fail(err, FLAME_EXIT_ERROR, "unknown output format %d", fmt);
    out_guard g = {fn, r};
    return out_write_atomic(path, guarded, &g, err);
}

int out_check_dir(const char *path, flame_err *err)
{
    const char *slash = strrchr(path, '/');
    _cleanup_free_ char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path))
                                     : strdup(".");
    if (!dir)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    /* access() as root still reports EROFS for a read-only mount, and ENOENT/ENOTDIR. */
    if (access(dir, W_OK | X_OK) != 0)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno,
                                "cannot write to %s (choose another -o)", dir);
    return 0;
}

int out_write_saved(int fmt, char **path, const out_render *r, flame_err *err)
{
    if (out_write_format(fmt, *path, r, err) == 0)
        return 0;
    if (err->code == FLAME_EXIT_INTERRUPTED || !err->msg[0] || (r->cancelled && r->cancelled(r->cancel_ctx)))
        return -1;
    const char *t = getenv("TMPDIR");
    const char *dir = t && t[0] == '/' ? t : "/tmp";
    const char *slash = strrchr(*path, '/');
    const char *base = slash ? slash + 1 : *path;
    _cleanup_free_ char *alt = NULL;
    if (asprintf(&alt, "%s/%s", dir, base) < 0) {
        alt = NULL;
        return -1;
    }
    char a[PATH_MAX], b[PATH_MAX];
    _cleanup_free_ char *odir = slash ? strndup(*path, (size_t)(slash - *path)) : strdup(".");
    /* the same directory again would fail the same way */
    if (!odir || (realpath(odir, a) && realpath(dir, b) && !strcmp(a, b)))
        return -1;
    flame_err e2 = FLAME_ERR_INIT;
    if (out_write_format(fmt, alt, r, &e2) < 0)
        return -1;
    char first[sizeof err->msg];
    snprintf(first, sizeof first, "%s", err->msg);
    flame_fail(err, FLAME_EXIT_ERROR, "%s; the profile was saved to %s instead", first, alt);
    free(*path);
    *path = alt;
    alt = NULL;
    return 1;
}

/* Output files for every verb (plugin/out/output.h). */
#include "plugin/out/output.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/atomic.h"
#include "common/cleanup.h"
#include "flame/diff.h"

const char *const out_fmt_names[] = {"svg", "folded", "speedscope", "pprof", NULL};
static const char *const fmt_exts[FMT_COUNT] = {".svg", ".folded", ".speedscope.json", ".pb.gz"};

const char *out_fmt_name(int f)
{
    return f >= 0 && f < FMT_COUNT ? out_fmt_names[f] : "?";
}

const char *out_fmt_ext(int f)
{
    return f >= 0 && f < FMT_COUNT ? fmt_exts[f] : "";
}

static bool has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcasecmp(s + n - k, suffix) == 0;
}

int out_fmt_of_path(const char *path)
{
    if (has_suffix(path, ".svg"))
        return FMT_SVG;
    if (has_suffix(path, ".folded") || has_suffix(path, ".txt") || has_suffix(path, ".collapsed"))
        return FMT_FOLDED;
    if (has_suffix(path, ".json"))
        return FMT_SPEEDSCOPE;
    if (has_suffix(path, ".pb.gz") || has_suffix(path, ".pb") || has_suffix(path, ".pprof"))
        return FMT_PPROF;
    return -1;
}

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
        const char *ext = out_fmt_ext(f);
        size_t e = strlen(ext);
        if (n > e && !strcmp(out + n - e, ext))
            return strndup(out, n - e);
    }
    if (n > 5 && !strcmp(out + n - 5, ".json"))
        return strndup(out, n - 5);
    return strdup(out);
}

int out_paths(const char *output, unsigned formats, const char *container, int n, time_t when,
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
    if (output && (is_dir(output) || output[strlen(output) - 1] == '/')) {
        dir = strdup(output);
    } else if (output) {
        if (n > 1)
            return flame_fail(err, FLAME_EXIT_USAGE,
                              "-o %s: with several containers, -o must be an existing directory",
                              output);
        stem = stem_of(output);
        verbatim = __builtin_popcount(formats) == 1; /* one format: the name exactly as given */
    }
    for (int f = 0; f < FMT_COUNT; f++) {
        if (!(formats & (1u << f)))
            continue;
        int r;
        if (verbatim)
            r = asprintf(&paths[f], "%s", output);
        else if (stem)
            r = asprintf(&paths[f], "%s%s", stem, out_fmt_ext(f));
        else
            r = asprintf(&paths[f], "%s%sflame-%s-%s%s", dir ? dir : "",
                         dir && dir[strlen(dir) - 1] != '/' ? "/" : "", safe, stamp,
                         out_fmt_ext(f));
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

/* One job, in its format. Two-column (differential) profiles go through diff_write_folded, which
 * writes them in big blocks (a 1M-stack diff is ~500 MB of text). */
static int write_job(void *ud, FILE *f, flame_err *err)
{
    const out_job *j = ud;
    int rc;
    switch ((enum out_fmt)j->fmt) {
    case FMT_SVG: {
        render_opts ro;
        if (!j->ro)
            render_opts_default(&ro);
        rc = render_svg(j->p, j->ro ? j->ro : &ro, f, err);
        break;
    }
    case FMT_FOLDED:
        rc = profile_is_diff(j->p) ? diff_write_folded(j->p, f, err)
                                   : profile_write_folded(j->p, f, err);
        break;
    case FMT_SPEEDSCOPE:
        rc = export_speedscope(j->p, j->name ? j->name : "profile", f, err);
        break;
    case FMT_PPROF:
        rc = export_pprof(j->p, j->pm, f, err);
        break;
    case FMT_COUNT:
    default:
        rc = flame_fail(err, FLAME_EXIT_ERROR, "unknown output format %d", j->fmt);
        break;
    }
    if (rc == 0 && j->cancelled && j->cancelled(j->cancel_ctx))
        rc = flame_fail(err, FLAME_EXIT_INTERRUPTED, "interrupted while writing: nothing written");
    return rc;
}

int out_write_with(const char *path, out_writer_fn fn, void *ctx, flame_err *err)
{
    if (strcmp(path, "-") != 0)
        return out_write_atomic(path, fn, ctx, err);
    int rc = fn(ctx, stdout, err);
    if (rc == 0 && (fflush(stdout) != 0 || ferror(stdout)))
        rc = flame_fail_errno(err, FLAME_EXIT_ERROR, errno ? errno : EIO, "writing stdout");
    return rc;
}

int out_write(const char *path, const out_job *j, flame_err *err)
{
    return out_write_with(path, write_job, (void *)j, err);
}

int out_check_dir(const char *path, flame_err *err)
{
    const char *slash = strrchr(path, '/');
    _cleanup_free_ char *dir =
        slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
    if (!dir)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    /* access() as root still reports EROFS for a read-only mount, and ENOENT/ENOTDIR. */
    if (access(dir, W_OK | X_OK) != 0)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno,
                                "cannot write to %s (choose another -o)", dir);
    return 0;
}

int out_write_saved(char **path, const out_job *j, flame_err *err)
{
    if (out_write(*path, j, err) == 0)
        return 0;
    if (err->code == FLAME_EXIT_INTERRUPTED || !err->msg[0] ||
        (j->cancelled && j->cancelled(j->cancel_ctx)) || !strcmp(*path, "-"))
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
    if (out_write(alt, j, &e2) < 0)
        return -1;
    char first[sizeof err->msg];
    snprintf(first, sizeof first, "%s", err->msg);
    flame_fail(err, FLAME_EXIT_ERROR, "%s; the profile was saved to %s instead", first, alt);
    free(*path);
    *path = alt;
    alt = NULL;
    return 1;
}

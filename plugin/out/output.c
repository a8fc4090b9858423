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
#include "flame/speedscope.h"

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

/* The one table of known extensions (docs/PLUGIN.md "Formats"), longest first where one ends
 * another (.speedscope.json before .json). Case does not matter. */
static const struct {
    const char *ext;
    enum out_fmt fmt;
} known_exts[] = {
    {".svg", FMT_SVG},
    {".folded", FMT_FOLDED},
    {".txt", FMT_FOLDED},
    {".collapsed", FMT_FOLDED},
    {".speedscope.json", FMT_SPEEDSCOPE},
    {".json", FMT_SPEEDSCOPE},
    {".pb.gz", FMT_PPROF},
    {".pb", FMT_PPROF},
    {".pprof", FMT_PPROF},
};

/* The known extension path ends in (index into known_exts), or -1. */
static int known_ext(const char *path)
{
    for (size_t i = 0; path && i < sizeof known_exts / sizeof *known_exts; i++)
        if (has_suffix(path, known_exts[i].ext) && strlen(path) > strlen(known_exts[i].ext))
            return (int)i;
    return -1;
}

int out_fmt_of_path(const char *path)
{
    int k = known_ext(path);
    return k < 0 ? -1 : (int)known_exts[k].fmt;
}

/* "svg, folded and pprof" for messages. */
static void mask_text(unsigned mask, char *buf, size_t cap)
{
    size_t o = 0;
    int n = __builtin_popcount(mask), k = 0;
    buf[0] = 0;
    for (int f = 0; f < FMT_COUNT && o < cap; f++)
        if (mask & (1u << f))
            o += (size_t)snprintf(buf + o, cap - o, "%s%s",
                                  k++ == 0 ? ""
                                  : k == n ? " and "
                                           : ", ",
                                  out_fmt_names[f]);
}

int out_formats(const char *path, unsigned given, unsigned allowed, int dflt, unsigned *out,
                flame_err *err)
{
    int k = path && strcmp(path, "-") != 0 ? known_ext(path) : -1;
    int by_ext = k < 0 ? -1 : (int)known_exts[k].fmt;
    char a[64], g[64];
    mask_text(allowed, a, sizeof a);
    if (given & ~allowed) {
        mask_text(given & ~allowed, g, sizeof g);
        return flame_fail(err, FLAME_EXIT_USAGE, "--format %s: this command writes %s", g, a);
    }
    if (by_ext >= 0 && !(allowed & (1u << by_ext)))
        return flame_fail(err, FLAME_EXIT_USAGE,
                          "%s: a %s extension is %s, which this command cannot write (it "
                          "writes %s)",
                          path, known_exts[k].ext, out_fmt_names[by_ext], a);
    if (by_ext >= 0 && given && !(given & (1u << by_ext))) {
        mask_text(given, g, sizeof g);
        return flame_fail(err, FLAME_EXIT_USAGE,
                          "%s: the extension %s says %s, but --format says %s: drop one of "
                          "them (or use a name without a known extension)",
                          path, known_exts[k].ext, out_fmt_names[by_ext], g);
    }
    *out = given ? given : by_ext >= 0 ? 1u << by_ext : dflt >= 0 ? 1u << dflt : 0;
    if (!*out)
        return flame_fail(err, FLAME_EXIT_USAGE,
                          "cannot tell the format of '%s' from its extension: give --format (%s) "
                          "or a known extension (docs/PLUGIN.md)",
                          path ? path : "-", a);
    return 0;
}

int out_format(const char *path, int given, unsigned allowed, int dflt, flame_err *err)
{
    unsigned m = 0;
    if (out_formats(path, given >= 0 ? 1u << given : 0, allowed, dflt, &m, err) < 0)
        return -1;
    return __builtin_ctz(m);
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
    int k = known_ext(out);
    return k < 0 ? strdup(out) : strndup(out, strlen(out) - strlen(known_exts[k].ext));
}

int out_paths(const char *output, unsigned formats, const char *container, int n, time_t when,
              char *paths[FMT_COUNT], flame_err *err)
{
    return out_paths_mode(output, formats, container, n, when, NULL, paths, err);
}

/* Does the file name (after its last '/') hold ".<mode>." already? */
static bool names_mode(const char *path, const char *mode)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t ml = strlen(mode);
    for (const char *p = strchr(base, '.'); p; p = strchr(p + 1, '.'))
        if (!strncmp(p + 1, mode, ml) && p[1 + ml] == '.')
            return true;
    return false;
}

int out_paths_mode(const char *output, unsigned formats, const char *container, int n, time_t when,
                   const char *mode, char *paths[FMT_COUNT], flame_err *err)
{
    char infix[40] = "";
    if (mode)
        snprintf(infix, sizeof infix, ".%s", mode);
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
        /* one format: the name exactly as given (with a mode, when it names the mode) */
        verbatim = __builtin_popcount(formats) == 1 &&
                   (!mode || !strcmp(output, "-") || names_mode(output, mode));
        if (mode && !verbatim && names_mode(output, mode))
            *infix = 0; /* web.alloc.svg for svg and folded: web.alloc.folded */
    }
    for (int f = 0; f < FMT_COUNT; f++) {
        if (!(formats & (1u << f)))
            continue;
        int r;
        if (verbatim)
            r = asprintf(&paths[f], "%s", output);
        else if (stem)
            r = asprintf(&paths[f], "%s%s%s", stem, infix, out_fmt_ext(f));
        else
            r = asprintf(&paths[f], "%s%sflame-%s-%s%s%s", dir ? dir : "",
                         dir && dir[strlen(dir) - 1] != '/' ? "/" : "", safe, stamp, infix,
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
        rc = speedscope_export(j->p, j->name ? j->name : "profile", f, err);
        break;
    case FMT_PPROF:
        rc = pprof_export(j->p, j->pm, f, err);
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

int out_write_to(FILE *f, const out_job *j, flame_err *err)
{
    return write_job((void *)j, f, err);
}

int out_write(const char *path, const out_job *j, flame_err *err)
{
    return out_write_with(path, write_job, (void *)j, err);
}

int out_check_dir(const char *path, flame_err *err)
{
    /* standard output, a device or a pipe (-o /dev/null) is written in place: only it must be
     * writable, not its directory (a user cannot create files in /dev) */
    struct stat st;
    if (!strcmp(path, "-"))
        return 0;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
        if (access(path, W_OK) != 0)
            return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "cannot write %s", path);
        return 0;
    }
    const char *slash = strrchr(path, '/');
    _cleanup_free_ char *dir =
        slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
    if (!dir)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    /* access() as root still reports EROFS for a read-only mount, and ENOENT/ENOTDIR. */
    if (access(dir, W_OK | X_OK) != 0)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno,
                                "cannot write to %s (choose another -o)", dir);
    /* ... but not a directory where nothing can be created (/proc, /sys): make the temporary
     * file the write will need, and remove it at once */
    _cleanup_free_ char *probe = NULL;
    if (asprintf(&probe, "%s/.flame-probe-XXXXXX", dir) < 0) {
        probe = NULL;
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    }
    int fd = mkostemp(probe, O_CLOEXEC);
    if (fd < 0)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno,
                                "cannot write to %s (choose another -o)", dir);
    close(fd);
    unlink(probe);
    return atomic_check(path, err); /* e.g. another user's link planted in /tmp */
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
    char a[PATH_MAX], b[PATH_MAX];
    _cleanup_free_ char *odir = slash ? strndup(*path, (size_t)(slash - *path)) : strdup(".");
    /* the same directory again would fail the same way */
    if (!odir || (realpath(odir, a) && realpath(dir, b) && !strcmp(a, b)))
        return -1;
    /* "web.svg" -> $TMPDIR/web-Xk3q9Z.svg: a new file with a name nobody can plant a link or a
     * file under in a shared /tmp (mkostemps), the format's extension kept so it opens */
    const char *ext = out_fmt_ext(j->fmt);
    _cleanup_free_ char *stem =
        has_suffix(base, ext) ? strndup(base, strlen(base) - strlen(ext)) : strdup(base);
    if (!stem)
        return -1;
    char *alt = NULL;
    flame_err e2 = FLAME_ERR_INIT;
    if (atomic_write_new(dir, *stem ? stem : "flame", ext, write_job, (void *)j, &alt, &e2) < 0)
        return -1;
    char first[sizeof err->msg];
    snprintf(first, sizeof first, "%s", err->msg);
    flame_fail(err, FLAME_EXIT_ERROR, "%s; the profile was saved to %s instead", first, alt);
    free(*path);
    *path = alt;
    return 1;
}

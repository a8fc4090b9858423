/* The bounded line reader under profile_load() and the embedded data of an SVG
 * (profile_embed.c), and the check of a count read: a leaf both use, so neither calls into the
 * other for it. Never getline: a hostile input is one endless line. */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "flame/alloc.h"
#include "flame/profile_impl.h"

bool prof_bad_count(double c)
{
    return !(c >= 0) || !isfinite(c);
}

/* Next line (without its newline) in out and n: 1, 0 at EOF, -1 on error (err filled). */
int prof_reader_next(prof_reader *r, const char **out, size_t *n, flame_err *err)
{
    r->line_len = 0;
    for (;;) {
        if (r->pos < r->len) {
            char *s = r->buf + r->pos;
            size_t avail = r->len - r->pos;
            char *nl = memchr(s, '\n', avail);
            size_t take = nl ? (size_t)(nl - s) : avail;
            if (r->line_len + take > PROFILE_MAX_LINE)
                return flame_fail(err, FLAME_EXIT_ERROR, "line %lu: longer than %u MiB",
                                  r->lineno + 1, PROFILE_MAX_LINE >> 20);
            if (nl && r->line_len == 0) { /* the common case: no copy */
                r->pos += take + 1;
                r->lineno++;
                *out = s;
                *n = take;
                return 1;
            }
            if (!GROW(r->line, r->line_cap, r->line_len + take + 1))
                return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
            memcpy(r->line + r->line_len, s, take);
            r->line_len += take;
            r->pos += take + (nl ? 1 : 0);
            if (nl) {
                r->lineno++;
                *out = r->line;
                *n = r->line_len;
                return 1;
            }
        }
        if (r->eof) {
            if (r->line_len == 0)
                return 0;
            r->lineno++;
            *out = r->line;
            *n = r->line_len;
            r->line_len = 0;
            return 1;
        }
        r->pos = 0;
        r->len = fread(r->buf, 1, PROF_READ_CHUNK, r->in);
        if (r->len < PROF_READ_CHUNK) {
            if (ferror(r->in))
                return flame_fail_errno(err, FLAME_EXIT_ERROR, errno ? errno : EIO, "read error");
            r->eof = true;
        }
    }
}

/* speedscope file format export: one "sampled" profile, frames in a shared table, one sample
 * per distinct stack (root first) weighted by its count. Schema:
 * https://www.speedscope.app/file-format-schema.json */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "flame/profile_impl.h"
#include "flame/render.h"

/* A JSON string: valid UTF-8 passes, invalid bytes become U+FFFD, controls are \u-escaped. */
static void json_string(FILE *out, const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    putc('"', out);
    size_t run = 0, i = 0;
    while (i < n) {
        unsigned c = u[i];
        size_t l = 1;
        bool ok = true;
        if (c >= 0x80) {
            size_t need = c >= 0xc2 && c <= 0xdf   ? 2
                          : c >= 0xe0 && c <= 0xef ? 3
                          : c >= 0xf0 && c <= 0xf4 ? 4
                                                   : 0;
            uint32_t cp = need == 2 ? c & 0x1f : need == 3 ? c & 0x0f : c & 0x07;
            ok = need && i + need <= n;
            for (size_t k = 1; ok && k < need; k++) {
                ok = (u[i + k] & 0xc0) == 0x80;
                cp = cp << 6 | (u[i + k] & 0x3f);
            }
            if (ok)
                ok = !(need == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) &&
                     !(need == 4 && (cp < 0x10000 || cp > 0x10ffff));
            if (ok)
                l = need;
        }
        const char *rep = NULL;
        char esc[8];
        if (!ok)
            rep = "\\ufffd";
        else if (c == '"')
            rep = "\\\"";
        else if (c == '\\')
            rep = "\\\\";
        else if (c < 0x20 || c == 0x7f) {
            snprintf(esc, sizeof esc, "\\u%04x", c);
            rep = esc;
        }
        if (rep) {
            fwrite(s + run, 1, i - run, out);
            fputs(rep, out);
            run = i + l;
        }
        i += l;
    }
    fwrite(s + run, 1, i - run, out);
    putc('"', out);
}

int export_speedscope(const profile *p, const char *name, FILE *out, flame_err *err)
{
    if (p->nstacks == 0)
        return flame_fail(err, FLAME_EXIT_ERROR, "empty profile: nothing to export");
    prof_view v;
    if (prof_view_build(p, false, PROF_ORDER_FRAMES, &v) < 0)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    if (!name)
        name = "docker-flame";
    char num[64];
    fputs("{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\n"
          "\"exporter\":\"docker-flame@" FLAME_VERSION "\",\"name\":",
          out);
    json_string(out, name, strlen(name));
    fputs(",\"activeProfileIndex\":0,\n\"shared\":{\"frames\":[\n", out);
    for (uint32_t r = 0; r < p->nnames; r++) {
        uint32_t id = v.by_rank[r];
        fputs(r ? ",\n{\"name\":" : "{\"name\":", out);
        json_string(out, prof_name_str(p, id), p->names[id].len);
        putc('}', out);
    }
    fputs("]},\n\"profiles\":[{\"type\":\"sampled\",\"name\":", out);
    json_string(out, name, strlen(name));
    prof_format_count(num, sizeof num, p->total);
    fprintf(out, ",\"unit\":\"none\",\"startValue\":0,\"endValue\":%s,\n\"samples\":[\n", num);
    for (uint32_t k = 0; k < p->nstacks; k++) {
        const prof_stack *st = &p->stacks[v.order[k]];
        const uint32_t *ranks = v.seq + st->off;
        fputs(k ? ",\n[" : "[", out);
        for (uint32_t i = 0; i < st->depth; i++)
            fprintf(out, i ? ",%u" : "%u", ranks[i]);
        putc(']', out);
    }
    fputs("],\n\"weights\":[", out);
    for (uint32_t k = 0; k < p->nstacks; k++) {
        prof_format_count(num, sizeof num, p->stacks[v.order[k]].count);
        fprintf(out, k ? ",%s" : "%s", num);
    }
    fputs("]}]}\n", out);
    prof_view_free(&v);
    if (fflush(out) != 0 || ferror(out))
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno ? errno : EIO, "write error");
    return 0;
}

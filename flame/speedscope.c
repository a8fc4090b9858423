/* speedscope file format export: one "sampled" profile, frames in a shared table, one sample
 * per distinct stack (root first) weighted by its count. Schema:
 * https://www.speedscope.app/file-format-schema.json */
#include "flame/speedscope.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "flame/escape.h"
#include "flame/profile_impl.h"

int speedscope_export(const profile *p, const char *name, FILE *out, flame_err *err)
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
    escape_json_string(out, name, strlen(name));
    fputs(",\"activeProfileIndex\":0,\n\"shared\":{\"frames\":[\n", out);
    for (uint32_t r = 0; r < p->nnames; r++) {
        uint32_t id = v.by_rank[r];
        fputs(r ? ",\n{\"name\":" : "{\"name\":", out);
        escape_json_string(out, prof_name_str(p, id), p->names[id].len);
        putc('}', out);
    }
    fputs("]},\n\"profiles\":[{\"type\":\"sampled\",\"name\":", out);
    escape_json_string(out, name, strlen(name));
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

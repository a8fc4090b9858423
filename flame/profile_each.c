/* Walking a profile's stacks as folded text (flame/profile.h), for writers that keep stacks one
 * by one in their own format (the profile store) rather than as a folded file. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "flame/profile.h"
#include "flame/profile_impl.h"

int profile_each_stack(const profile *p, profile_stack_fn fn, void *ctx)
{
    char *buf = NULL;
    size_t cap = 0;
    int rc = 0;
    for (uint32_t k = 0; k < p->nstacks && rc == 0; k++) {
        const prof_stack *st = &p->stacks[k];
        const uint32_t *ids = p->ids + st->off;
        size_t len = 0;
        for (uint32_t i = 0; i < st->depth; i++)
            len += p->names[ids[i]].len + 1;
        if (len > cap) {
            char *nb = realloc(buf, len);
            if (!nb) {
                errno = ENOMEM;
                rc = -1;
                break;
            }
            buf = nb;
            cap = len;
        }
        size_t o = 0;
        for (uint32_t i = 0; i < st->depth; i++) {
            if (i)
                buf[o++] = ';';
            memcpy(buf + o, prof_name_str(p, ids[i]), p->names[ids[i]].len);
            o += p->names[ids[i]].len;
        }
        rc = fn(ctx, buf, o, st->count);
    }
    free(buf);
    return rc;
}

/* sidecar/modes.c: the agent's alloc/lock lines, read as the target's data they are. */
#include <stdlib.h>
#include <string.h>

#include "sidecar/sidecar.h"
#include "tests/unit/tap.h"

static int parse(const char *text, unsigned modes, sc_modes_rec *r, char *buf)
{
    strcpy(buf, text);
    return sc_modes_parse(buf, strlen(buf), modes, r);
}

int main(void)
{
    unsigned both = CT_MODE_BIT(CT_MODE_ALLOC) | CT_MODE_BIT(CT_MODE_LOCK);
    static char buf[SC_MODES_STACK_MAX + 256];
    sc_modes_rec r;
    ok(parse("A 3 1572864 alloc;ModesFixture.smallSite;long[]_[a]", both, &r, buf) == 0 &&
           r.mode == CT_MODE_ALLOC && r.count0 == 3 && r.value == 1572864 && r.frames == 3 &&
           r.len == strlen("alloc;ModesFixture.smallSite;long[]_[a]"),
       "an alloc line: objects, bytes, three frames");
    ok(parse("L 1 20000 lock-0;M.contend;M$Monitor_[l]", both, &r, buf) == 0 &&
           r.mode == CT_MODE_LOCK && r.value == 20000,
       "a lock line");
    ok(parse("L 1 20000 lock-0;M.c;X_[l]", CT_MODE_BIT(CT_MODE_ALLOC), &r, buf) < 0,
       "a mode not asked for is dropped");
    ok(parse("A 1 0 t;X_[a]", both, &r, buf) < 0, "a zero value is dropped");
    ok(parse("A 1 99999999999999999 t;X_[a]", both, &r, buf) < 0, "a count over 2^53 is dropped");
    ok(parse("A -1 5 t;X_[a]", both, &r, buf) < 0, "a negative count is dropped");
    ok(parse("A 1 5 t;;X_[a]", both, &r, buf) < 0, "an empty frame is dropped");
    ok(parse("A 1 5 ;X_[a]", both, &r, buf) < 0, "an empty root frame is dropped");
    ok(parse("A 1 5 t;X_[a];", both, &r, buf) < 0, "an empty leaf frame is dropped");
    ok(parse("A 1 5 ", both, &r, buf) < 0, "no stack");
    ok(parse("Z 1 5 t;X", both, &r, buf) < 0, "an unknown kind");
    ok(parse("A 1 5 t\x1b[31m;X\x7f_[a]", both, &r, buf) == 0 && !strchr(r.stack, 0x1b) &&
           !strchr(r.stack, 0x7f) && strstr(r.stack, "t?[31m;X?_[a]"),
       "control bytes become '?'");
    /* as deep as the bound, and one frame deeper */
    char *deep = malloc(8 * SC_MODES_FRAMES_MAX + 64);
    size_t o = (size_t)sprintf(deep, "A 1 5 t");
    for (int i = 1; i < SC_MODES_FRAMES_MAX; i++)
        o += (size_t)sprintf(deep + o, ";f");
    ok(parse(deep, both, &r, buf) == 0 && r.frames == SC_MODES_FRAMES_MAX, "%d frames pass",
       SC_MODES_FRAMES_MAX);
    sprintf(deep + o, ";f");
    ok(parse(deep, both, &r, buf) < 0, "one more is dropped");
    free(deep);
    char *big = malloc(SC_MODES_STACK_MAX + 64);
    o = (size_t)sprintf(big, "A 1 5 ");
    memset(big + o, 'x', SC_MODES_STACK_MAX + 1);
    big[o + SC_MODES_STACK_MAX + 1] = 0;
    ok(parse(big, both, &r, buf) < 0, "a stack over %d bytes is dropped", SC_MODES_STACK_MAX);
    free(big);
    return tap_done();
}

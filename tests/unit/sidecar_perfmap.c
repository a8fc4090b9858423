/* sidecar/perfmap.c: the perf map sanitizer (malformed, overflow, huge, control bytes,
 * overlaps both ways, over-long lines). */
#include <stdlib.h>
#include <string.h>

#include "sidecar/sidecar.h"
#include "tests/unit/tap.h"

static char *sanitize(const char *in, sc_map_stats *st)
{
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    flame_err err = FLAME_ERR_INIT;
    int r = sc_map_sanitize(in, strlen(in), f, st, &err);
    fclose(f);
    if (r < 0) {
        free(out);
        return NULL;
    }
    return out;
}

static void test_map(void)
{
    sc_map_stats st;
    char *o = sanitize("0x1000 0x100 A.a\n2000 10 B.b\n", &st);
    is_str(o, "1000 100 A.a\n2000 10 B.b\n", "valid lines kept, 0x optional");
    is_int(st.lines_out, 2, "two lines");
    free(o);
    o = sanitize("zz 10 bad\n1000 0 zero\n1000 10\n1000  10 x\nffffffffffffffff 10 wrap\n"
                 "1000 80000000 huge\n12345678901234567 1 long\n3000 10 ok\n",
                 &st);
    is_str(o, "3000 10 ok\n", "malformed, zero, overflowing and oversized entries dropped");
    is_int(st.dropped, 7, "seven dropped");
    free(o);
    o = sanitize("1000 10 a\x01"
                 "b\x1b[0m\r\n",
                 &st);
    is_str(o, "1000 10 a?b?[0m?\n", "control bytes in names replaced");
    free(o);
    o = sanitize("1000 100 old\n1000 100 new\n", &st);
    is_str(o, "1000 100 new\n", "same range: the later entry wins");
    free(o);
    o = sanitize("1000 100 old\n1080 100 new\n", &st);
    is_str(o, "1000 80 old\n1080 100 new\n", "later overlapping entry truncates the earlier");
    free(o);
    o = sanitize("1080 100 old\n1000 100 new\n", &st);
    is_str(o, "1000 100 new\n1100 80 old\n", "earlier entry cut where the later one ends");
    free(o);
    o = sanitize("1000 1000 new_big\n", &st);
    free(o);
    o = sanitize("1100 10 old_inner\n1000 1000 new_big\n", &st);
    is_str(o, "1000 1000 new_big\n", "later big entry swallows an older one inside");
    free(o);
    char *longl = malloc(SC_MAP_LINE_MAX + 64);
    memset(longl, 'x', SC_MAP_LINE_MAX + 32);
    memcpy(longl, "1000 10 ", 8);
    strcpy(longl + SC_MAP_LINE_MAX + 32, "\n2000 10 y\n");
    o = sanitize(longl, &st);
    is_str(o, "2000 10 y\n", "over-long line dropped");
    free(o);
    free(longl);
    o = sanitize("", &st);
    is_str(o, "", "empty map");
    free(o);
}

int main(void)
{
    test_map();
    return tap_done();
}

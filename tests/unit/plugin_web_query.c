/* plugin/web/web_query.c: serve's query strings. Defaults, each key and its bounds, both sides of
 * a comparison, times in show's forms and unix ms, percent-decoding, and what is refused (unknown
 * keys, too many pairs, malformed escapes, a NUL byte, since after until). */
#include <stdlib.h>
#include <string.h>

#include "plugin/out/output.h"
#include "plugin/web/web_query.h"
#include "tests/unit/tap.h"

#define NOW 1795711262500LL /* 2026-11-26T16:41:02.500Z */

static int parse(const char *qs, web_query *q, flame_err *err)
{
    static char buf[1 << 16];
    web_query_init(q);
    *err = (flame_err)FLAME_ERR_INIT;
    return web_query_parse(q, qs, buf, sizeof buf, NOW, err);
}

static void test_defaults(void)
{
    web_query q;
    flame_err err;
    ok(parse("", &q, &err) == 0, "an empty query is fine");
    is_int(q.a.until_ms, NOW, "until: now");
    is_int(q.a.since_ms, NOW - 3600000, "since: an hour before");
    is_int(q.a.ncontainers, 0, "every container");
    is_int(q.nodes, WEB_NODES_DEFAULT, "8192 nodes");
    is_str(q.palette, "java", "palette java");
    is_int(q.format, -1, "no format");
    ok(!q.has_b && !q.search && !q.root && !q.fn, "no compare side, search, zoom or function");
}

static void test_keys(void)
{
    web_query q;
    flame_err err;
    ok(parse("since=1795711200000&until=1795711260000&c=web&c=api%20b&host=n1&pid=42"
             "&nodes=100&root=main%3BWork.run&q=%2FWork%5C.step%2F&icase=1&fn=a%2Bb"
             "&palette=hot&format=pprof&sort=total&limit=5&norm=absolute&width=300",
             &q, &err) == 0,
       "every key: %s", err.msg);
    is_int(q.a.since_ms, 1795711200000LL, "since in unix ms");
    is_int(q.a.until_ms, 1795711260000LL, "until in unix ms");
    is_int(q.a.ncontainers, 2, "two containers");
    is_str(q.a.container[1], "api b", "%%20 decoded");
    is_str(q.a.host, "n1", "host");
    is_int(q.a.pid, 42, "pid");
    is_int(q.nodes, 100, "nodes");
    is_str(q.root, "main;Work.run", "root, %%3B decoded");
    ok(q.regex && q.icase, "/.../ is a regex, icase");
    is_str(q.search, "/Work\\.step/", "the search as given");
    is_str(q.fn, "a+b", "%%2B is a plus");
    is_str(q.palette, "hot", "palette");
    is_int(q.format, FMT_PPROF, "format pprof");
    is_int(q.sort, WEB_SORT_TOTAL, "sort total");
    is_int(q.limit, 5, "limit");
    is_int(q.norm, WEB_NORM_ABSOLUTE, "norm");
    is_int(q.buckets, 300, "width");

    ok(parse("q=a+b", &q, &err) == 0 && !strcmp(q.search, "a b") && !q.regex,
       "+ is a space; a substring search");
    ok(parse("q=/", &q, &err) == 0 && !q.regex, "a lone slash is a substring");
    ok(parse("since=-2h&until=now", &q, &err) == 0 && q.a.since_ms == NOW - 7200000,
       "show's forms: 2 h ago");
    ok(parse("since=2026-11-26T16:00:00Z&until=2026-11-26T16:30:00.250Z", &q, &err) == 0 &&
           q.a.since_ms == 1795708800000LL && q.a.until_ms == 1795710600250LL,
       "RFC 3339 with and without ms");
    ok(parse("until=1795711200000", &q, &err) == 0 && q.a.since_ms == 1795711200000LL - 3600000,
       "until alone: the hour before it");
}

static void test_sides(void)
{
    web_query q;
    flame_err err;
    ok(parse("c=web&b.c=web2&b.since=-3h&b.until=-2h&b.host=x&b.pid=7", &q, &err) == 0,
       "side B: %s", err.msg);
    ok(q.has_b, "has B");
    is_str(q.b.container[0], "web2", "B's container");
    is_int(q.b.since_ms, NOW - 3 * 3600000LL, "B's since");
    is_int(q.b.until_ms, NOW - 2 * 3600000LL, "B's until");
    is_str(q.b.host, "x", "B's host");
    is_int(q.b.pid, 7, "B's pid");
    is_str(q.a.container[0], "web", "A untouched");
    ok(parse("b.c=web2", &q, &err) == 0 && q.b.until_ms == NOW, "B's range defaults too");
    ok(parse("b.since=-1h&b.until=-2h", &q, &err) < 0, "B's since after its until refused");
    ok(strstr(err.msg, "b.since") != NULL, "the message names b.since: %s", err.msg);
}

/* type=: the words of --mode; both sides get it (a comparison never mixes types); cpu is the
 * default and its type NULL (one cache key for both spellings) */
static void test_type(void)
{
    web_query q;
    flame_err err;
    ok(parse("", &q, &err) == 0 && q.a.type == NULL && q.mode == 0, "no type: cpu (NULL)");
    ok(parse("type=cpu", &q, &err) == 0 && q.a.type == NULL, "type=cpu: the same as none");
    ok(parse("type=wall&b.since=-2h&b.until=-1h", &q, &err) == 0, "type=wall with a compare side");
    is_str(q.a.type, "wall", "side A: wall");
    is_str(q.b.type, "wall", "side B: wall too");
    ok(parse("type=offcpu", &q, &err) == 0 && q.a.type && !strcmp(q.a.type, "offcpu"), "offcpu");
    ok(parse("type=gpu", &q, &err) < 0 && !strcmp(err.msg, "type: a profile type: cpu, wall, "
                                                           "offcpu, alloc or lock"),
       "an unknown type says which there are: %s", err.msg);
}

static void test_refused(void)
{
    web_query q;
    flame_err err;
    static const char *const bad[] = {
        "nosuch=1",
        "b.nosuch=1",
        "since=yesterday",
        "since=123",
        "pid=0",
        "pid=x",
        "nodes=0",
        "nodes=65537",
        "limit=0",
        "width=5",
        "width=1501",
        "format=png",
        "sort=name",
        "norm=x",
        "icase=yes",
        "palette=<b>",
        "fn=",
        "c=",
        "c=%",
        "c=%zz",
        "c=a%00b",
        "q=%4",
        "since=-1h&until=-2h",
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa=1",
        "type=",
        "type=gpu",
        "type=WALL",
        "type=wall%00",
        "type=wall,cpu",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int rc = parse(bad[i], &q, &err);
        ok(rc < 0 && err.code == FLAME_EXIT_USAGE && err.msg[0], "refused: %s (%s)", bad[i],
           err.msg);
    }
    char big[80 * 20 + 1] = "";
    for (int i = 0; i < 20; i++)
        strcat(big, "c=a&");
    ok(parse(big, &q, &err) < 0, "17 containers a side refused: %s", err.msg);
    char many[WEB_MAX_PAIRS * 8 + 16] = "";
    for (int i = 0; i < WEB_MAX_PAIRS + 1; i++)
        strcat(many, "icase=1&");
    ok(parse(many, &q, &err) < 0 && strstr(err.msg, "too many"), "65 pairs refused: %s", err.msg);
    char *longv = malloc(WEB_MAX_VALUE + 16);
    memcpy(longv, "q=", 2);
    memset(longv + 2, 'a', WEB_MAX_VALUE + 1);
    longv[WEB_MAX_VALUE + 3] = 0;
    ok(parse(longv, &q, &err) < 0 && strstr(err.msg, "too long"), "a 4 KiB + 1 value refused");
    free(longv);
    /* the message goes back to the page and into logs: a key made of other bytes is not echoed */
    ok(parse("a%0Ab=1", &q, &err) < 0 && !strchr(err.msg, '\n') && strstr(err.msg, "a parameter"),
       "a key with a newline is not echoed: %s", err.msg);
    ok(parse("nosuch=1", &q, &err) < 0 && strstr(err.msg, "nosuch"), "a plain key is named: %s",
       err.msg);
    char small[8];
    web_query_init(&q);
    ok(web_query_parse(&q, "c=abcdefgh", small, sizeof small, NOW, &err) < 0,
       "a buffer too small is an error, not an overflow");
}

static void test_decode(void)
{
    char out[16];
    is_int(web_query_decode("a%41+b", 6, true, out, sizeof out), 4, "decoded length");
    is_str(out, "aA b", "%%41 and +");
    is_int(web_query_decode("a+b", 3, false, out, sizeof out), 3, "no plus rule");
    is_str(out, "a+b", "+ kept");
    is_int(web_query_decode("%", 1, true, out, sizeof out), -1, "a cut escape");
    is_int(web_query_decode("%4", 2, true, out, sizeof out), -1, "half an escape");
    is_int(web_query_decode("%00", 3, true, out, sizeof out), -1, "a NUL");
    is_int(web_query_decode("abc", 3, true, out, 3), -1, "no room for the NUL");
}

int main(void)
{
    test_type();
    test_defaults();
    test_keys();
    test_sides();
    test_refused();
    test_decode();
    return tap_done();
}

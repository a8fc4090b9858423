/* libFuzzer harness: what a browser (or anyone who reaches the port) sends serve
 * (plugin/web/). Input: a mode byte, then
 *   mode % 3 == 0: a query string for web_query_parse (the API's parameters, decoded and checked)
 *   mode % 3 == 1: a Host header for web_host_ok, with two --allow-host names after NULs
 *   mode % 3 == 2: a --listen value for web_host_parse_listen */
#include "fuzz/fuzz.h"

#include <strings.h>

#include "plugin/web/web_query.h"
#include "plugin/web/web_host.h"

#define NOW 1795711262500LL

static void query(const uint8_t *data, size_t size)
{
    char *qs = fuzz_cstr(data, size);
    size_t cap = size + 2;
    char *buf = malloc(cap);
    FUZZ_ASSERT(buf);
    web_query q;
    web_query_init(&q);
    flame_err err = FLAME_ERR_INIT;
    if (web_query_parse(&q, qs, buf, cap, NOW, &err) == 0) {
        /* what the handlers count on */
        FUZZ_ASSERT(q.a.since_ms < q.a.until_ms);
        FUZZ_ASSERT(!q.has_b || q.b.since_ms < q.b.until_ms);
        FUZZ_ASSERT(q.a.ncontainers <= WEB_MAX_SOURCES && q.b.ncontainers <= WEB_MAX_SOURCES);
        FUZZ_ASSERT(q.nodes >= 1 && q.nodes <= WEB_NODES_MAX);
        FUZZ_ASSERT(q.limit >= 1 && q.limit <= WEB_TABLE_MAX);
        FUZZ_ASSERT(q.buckets >= 10 && q.buckets <= WEB_BUCKETS_MAX);
        FUZZ_ASSERT(q.format >= -1 && q.format < 4);
        FUZZ_ASSERT(q.a.pid >= 0 && q.a.pid <= (1 << 22));
        for (size_t i = 0; i < q.a.ncontainers; i++)
            FUZZ_ASSERT(*q.a.container[i] && strlen(q.a.container[i]) <= 256);
        /* every string points into buf, NUL-terminated there */
        const char *strs[] = {q.root, q.search, q.fn, q.a.host, q.b.host};
        for (size_t i = 0; i < sizeof strs / sizeof *strs; i++)
            FUZZ_ASSERT(!strs[i] || (strs[i] >= buf && strs[i] + strlen(strs[i]) < buf + cap));
    } else {
        FUZZ_ASSERT(err.code != 0 && err.msg[0] && !strchr(err.msg, '\n'));
    }
    free(buf);
    free(qs);
}

static void host(const uint8_t *data, size_t size)
{
    char *s = fuzz_cstr(data, size);
    /* the host, then up to two allowed names, NUL-separated */
    const char *allow[2];
    size_t nallow = 0;
    for (char *p = s + strlen(s); p < s + size && nallow < 2; p += strlen(p))
        allow[nallow++] = ++p;
    bool okay = web_host_ok(s, 8080, "10.0.0.1", allow, nallow);
    /* nothing but a listed name (or a loopback one, or ours) with the right port passes */
    if (okay && nallow == 0)
        FUZZ_ASSERT(strncasecmp(s, "127.0.0.1:", 10) == 0 ||
                    strncasecmp(s, "localhost:", 10) == 0 || strncmp(s, "[::1]:", 6) == 0 ||
                    strncmp(s, "10.0.0.1:", 9) == 0);
    free(s);
}

static void listen_value(const uint8_t *data, size_t size)
{
    char *s = fuzz_cstr(data, size);
    char addr[64];
    int port = -1;
    flame_err err = FLAME_ERR_INIT;
    if (web_host_parse_listen(s, addr, sizeof addr, &port, &err) == 0) {
        FUZZ_ASSERT(port >= 0 && port <= 65535);
        FUZZ_ASSERT(memchr(addr, 0, sizeof addr));
        FUZZ_ASSERT(strchr(addr, '.') || strchr(addr, ':'));
    } else {
        FUZZ_ASSERT(err.code == FLAME_EXIT_USAGE);
    }
    free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    switch (data[0] % 3) {
    case 0:
        query(data + 1, size - 1);
        break;
    case 1:
        host(data + 1, size - 1);
        break;
    default:
        listen_value(data + 1, size - 1);
        break;
    }
    return 0;
}

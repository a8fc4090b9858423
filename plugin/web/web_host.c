/* Addresses and Host headers for serve (plugin/web/web_host.h). */
#include "plugin/web/web_host.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

bool web_host_is_loopback(const char *addr)
{
    struct in_addr a4;
    struct in6_addr a6;
    if (inet_pton(AF_INET, addr, &a4) == 1)
        return (ntohl(a4.s_addr) >> 24) == 127;
    if (inet_pton(AF_INET6, addr, &a6) == 1)
        return IN6_IS_ADDR_LOOPBACK(&a6);
    return false;
}

int web_host_parse_listen(const char *s, char *addr, size_t cap, int *port, flame_err *err)
{
    const char *host = s, *p = NULL;
    size_t hn;
    if (s[0] == '[') {
        const char *close = strchr(s, ']');
        if (!close || (close[1] && close[1] != ':'))
            goto bad;
        host = s + 1;
        hn = (size_t)(close - host);
        p = close[1] ? close + 2 : NULL;
    } else {
        const char *colon = strrchr(s, ':');
        if (colon && strchr(s, ':') != colon) /* a bare IPv6 address: no port */
            colon = NULL;
        bool digits = *s && strspn(s, "0123456789") == strlen(s);
        if (digits) { /* PORT alone */
            hn = 0;
            p = s;
        } else {
            hn = colon ? (size_t)(colon - s) : strlen(s);
            p = colon ? colon + 1 : NULL;
        }
    }
    *port = 0;
    if (p) {
        if (!*p || strspn(p, "0123456789") != strlen(p) || strlen(p) > 5 || atoi(p) > 65535)
            goto bad;
        *port = atoi(p);
    }
    if (hn == 0) {
        snprintf(addr, cap, "127.0.0.1");
    } else if (hn == 9 && !strncmp(host, "localhost", 9)) {
        snprintf(addr, cap, "127.0.0.1");
    } else {
        char tmp[INET6_ADDRSTRLEN + 1];
        struct in6_addr a6;
        if (hn >= sizeof tmp)
            goto bad;
        memcpy(tmp, host, hn);
        tmp[hn] = 0;
        if (inet_pton(AF_INET, tmp, &a6) != 1 && inet_pton(AF_INET6, tmp, &a6) != 1)
            return flame_fail(err, FLAME_EXIT_USAGE,
                              "--listen: \"%.64s\" is not a numeric address (127.0.0.1, ::1, "
                              "0.0.0.0 or this machine's address) nor localhost",
                              tmp);
        snprintf(addr, cap, "%s", tmp);
    }
    return 0;
bad:
    return flame_fail(err, FLAME_EXIT_USAGE,
                      "--listen: \"%.64s\" is not ADDR:PORT, [ADDR6]:PORT, ADDR or PORT", s);
}

/* name[0..n) equals want, ignoring case */
static bool name_is(const char *name, size_t n, const char *want)
{
    return strlen(want) == n && strncasecmp(name, want, n) == 0;
}

bool web_host_ok(const char *h, int port, const char *listen_addr, const char *const *allow,
                 size_t nallow)
{
    if (!h || !*h || strlen(h) > 300)
        return false;
    /* split "name:port" ("[v6]:port") */
    const char *colon = h[0] == '[' ? strstr(h, "]:") : strrchr(h, ':');
    if (colon && h[0] == '[')
        colon++;
    size_t n = colon ? (size_t)(colon - h) : strlen(h);
    const char *p = colon ? colon + 1 : NULL;
    int hport = 80;
    if (p) {
        if (!*p || strlen(p) > 5 || strspn(p, "0123456789") != strlen(p))
            return false;
        hport = atoi(p);
    }
    for (size_t i = 0; i < nallow; i++) {
        const char *a = allow[i], *ac = strrchr(a, ':');
        if (a[0] == '[') /* [v6] or [v6]:port */
            ac = strstr(a, "]:") ? strstr(a, "]:") + 1 : NULL;
        if (ac && (size_t)(ac - a) == n && !strncasecmp(a, h, n) && atoi(ac + 1) == hport)
            return true;
        if (!ac && name_is(h, n, a))
            return true;
    }
    if (hport != port)
        return false;
    if (name_is(h, n, "127.0.0.1") || name_is(h, n, "localhost") || name_is(h, n, "[::1]"))
        return true;
    return listen_addr && *listen_addr && name_is(h, n, listen_addr);
}

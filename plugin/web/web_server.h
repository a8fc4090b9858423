/* The HTTP server of `docker flame serve`, on libmicrohttpd (docs/SERVE.md "Security"): one
 * thread per connection (a handler may wait on the store), at most max_conns of them; only GET
 * and HEAD; the Host header checked against the names this server answers to (DNS rebinding); a
 * token, given once in the URL and then kept in a SameSite=Strict cookie; every answer with a
 * strict Content-Security-Policy, nosniff, no referrer, never a CORS header. Routes: the page's
 * files (embedded, web_assets.c) and /api/v1/ (web_api.c); anything else is 404. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "plugin/web/web_api.h"

typedef struct web_server web_server;

typedef struct web_server_opts {
    const char *addr;  /* a numeric address ("127.0.0.1", "::1", "0.0.0.0") */
    int port;          /* 0: a free port (web_server_port says which) */
    const char *token; /* what a client must show; NULL: none (loopback only) */
    /* Further names the Host header may carry (a proxy, an ssh tunnel): "name" with any port, or
     * "name:port". The loopback names (127.0.0.1, localhost, [::1]) with our port always. */
    const char *const *allow;
    size_t nallow;
    unsigned max_conns; /* 8 */
    web_api *api;
    int64_t (*now_ms)(void); /* wall clock, unix ms */
} web_server_opts;

/* Bind, listen and start serving (threads of its own). Errors name the address. */
int web_server_start(const web_server_opts *o, web_server **out, flame_err *err);
int web_server_port(const web_server *s);
/* Stop accepting, finish the requests in flight, free. NULL-safe. */
void web_server_stop(web_server *s);

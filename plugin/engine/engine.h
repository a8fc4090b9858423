/* The Docker Engine API over libcurl: unix socket, tcp, tcp+TLS, and anything else (ssh://...)
 * through `docker system dial-stdio`. Versioned paths after negotiating with GET /_ping. HTTP
 * errors come back as flame_err carrying the engine's own message, plus the status. */
#pragma once
#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>

#include "common/err.h"
#include "plugin/engine/endpoint.h"

typedef struct engine engine;

/* Streaming body callback: return 0 to continue, <0 to stop the transfer (err already set). */
typedef int (*engine_data_fn)(void *ctx, const char *buf, size_t len, flame_err *err);

typedef struct engine_req {
    const char *method; /* "GET", "POST", "DELETE" */
    const char *path;   /* unversioned, e.g. "/containers/web/json" (caller escapes) */
    json_t *body;       /* JSON request body, or NULL */
    FILE *upload;       /* raw request body streamed from this file, or NULL */
    const char *content_type;
    engine_data_fn on_data; /* stream the response body here; NULL = buffer and parse JSON */
    void (*on_open)(void *ctx, long status); /* called once the response headers are in */
    void *ctx;
    const volatile sig_atomic_t *cancel; /* non-zero => abort the transfer */
    long timeout_ms;                     /* whole transfer; 0 = unbounded (streams) */
} engine_req;

/* The engine Docker's global flags name (ep_resolve), reachable: a new engine that answered
 * GET /_ping (API version negotiated). */
int engine_open(const ep_globals *g, engine **out, flame_err *err);
/* Does not touch the network. ep is copied. */
int engine_new(const ep_endpoint *ep, bool debug, engine **out, flame_err *err);
void engine_free(engine *e);
/* Every later request, the ping too, gives up after ms (connect and transfer): shell completion
 * must answer a Tab at once, even when the engine hangs. */
void engine_limit_time(engine *e, long ms);
/* GET /_ping, pick the API version (min of the engine's and ours). Errors: unreachable,
 * permission denied, too old. */
int engine_ping(engine *e, flame_err *err);
const char *engine_api_version(const engine *e);
const char *engine_host(const engine *e);

/* One request. *status gets the HTTP status (0 when no answer). On status >= 400 returns -1 with
 * err = the engine's message (exit code FLAME_EXIT_ENGINE); callers map 404/409 themselves.
 * *resp (optional) gets the parsed JSON body when on_data is NULL and the body is JSON. */
int engine_do(engine *e, const engine_req *rq, long *status, json_t **resp, flame_err *err);

/* Convenience: method + printf path, JSON in/out. */
int engine_json(engine *e, const char *method, json_t *body, json_t **resp, long *status,
                flame_err *err, const char *pathfmt, ...) __attribute__((format(printf, 7, 8)));

/* Percent-encode a path segment / query value (container names are user input). Caller frees. */
char *engine_escape(const char *s);

/* The JSON API of `docker flame serve` (docs/SERVE.md "API"): GET /api/v1/<endpoint>?<query>.
 * Read-only; every figure computed here, on the whole merged range (the page draws, it does not
 * count): sources, timeline, flamegraph (with search), table, sandwich, diff, export. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "common/err.h"
#include "flame/profile.h"
#include "plugin/web/web_cache.h"
#include "plugin/web/web_query.h"
#include "store/store.h"

/* An answer: status, type, body (malloc'd), and the attachment name of an export. */
typedef struct web_resp {
    int status;
    const char *type;
    char *body;
    size_t len;
    char *filename; /* Content-Disposition: attachment (safe characters only); malloc'd */
    /* Server-Timing: where a graph's time went (merge, tree, json; ms), for the page's and the
     * bench's figures; "" when none */
    char timing[96];
} web_resp;

/* What an export needs to write show's bytes (the verb supplies the writer: show's title,
 * subtitle and pprof figures are the verb's, plugin/stored.c). */
typedef struct web_export {
    const profile *p;
    const store_info *info;
    const store_query *q; /* the range (container: the only one, or NULL) */
    const char *const *containers;
    size_t ncontainers;
    int format;          /* enum out_fmt */
    const char *palette; /* --colors */
} web_export;
/* Write it to f; *filename: the name show would give the file (malloc'd). */
typedef int (*web_export_fn)(void *ctx, const web_export *x, FILE *f, char **filename,
                             flame_err *err);

typedef struct web_api {
    web_cache *cache;
    web_export_fn export_fn;
    void *export_ctx;
} web_api;

/* Answer GET /api/v1/<endpoint> (the query already checked). Always fills r: errors become a
 * JSON {"error": "..."} with 400 (bad request), 404 (no such endpoint, nothing to export), 503
 * (busy, store unreachable) or 500. */
void web_api_handle(web_api *api, const char *endpoint, const web_query *q, int64_t now_ms,
                    web_resp *r);
/* A JSON error answer. */
void web_api_error(web_resp *r, int status, const char *msg);

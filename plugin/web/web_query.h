/* The query string of an API request of `docker flame serve` (docs/SERVE.md "API"), checked into
 * one struct: every value bounded, times in the forms `show` takes (store/when.h) or unix ms,
 * unknown keys refused (a typo is a 400, not a silently different view). Pure: the server hands
 * it the pairs libmicrohttpd decoded; web_query_parse decodes a raw query string itself (the fuzz
 * target, and tests). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

#define WEB_MAX_SOURCES 16     /* containers per side */
#define WEB_MAX_VALUE 4096     /* bytes of one value */
#define WEB_MAX_PAIRS 64       /* key=value pairs of one request */
#define WEB_NODES_DEFAULT 8192 /* nodes of a flame graph, besides the root and zoom path */
#define WEB_NODES_MAX 65536
#define WEB_TABLE_DEFAULT 200 /* rows of the function table */
#define WEB_TABLE_MAX 100000
#define WEB_BUCKETS_DEFAULT 1000 /* points of a timeline series */
#define WEB_BUCKETS_MAX 1500     /* Pyroscope's bound: a series is drawn, not read */

/* One side of a request: which windows (a range and sources). The strings point into the
 * request's memory (libmicrohttpd's, or web_query_parse's buffer). */
typedef struct web_side {
    const char *container[WEB_MAX_SOURCES]; /* names, ids, id prefixes; none = every container */
    size_t ncontainers;
    const char *host;           /* NULL = every host */
    int64_t pid;                /* 0 = every JVM */
    int64_t since_ms, until_ms; /* [since, until) */
    bool has_since, has_until;
    /* the profile type (store_query.type): NULL = cpu; else a static name of ct_mode_names
     * (both sides: a comparison never mixes types) */
    const char *type;
} web_side;

enum web_sort { WEB_SORT_SELF, WEB_SORT_TOTAL };
enum web_norm { WEB_NORM_RELATIVE, WEB_NORM_ABSOLUTE };

typedef struct web_query {
    web_side a; /* since, until, c, host, pid */
    web_side b; /* b.since, b.until, b.c, b.host, b.pid: the compare side */
    bool has_b;
    size_t nodes;        /* nodes=N */
    const char *root;    /* root=a;b;c: the zoomed frame's path (full names) */
    const char *search;  /* q=TEXT (substring) or q=/RE/ (POSIX extended regex) */
    bool regex, icase;   /* from q's slashes; icase=1 */
    const char *fn;      /* fn=NAME: the sandwich's function (as shown) */
    const char *palette; /* palette=java (flame/palette.h's names) */
    int format;          /* format=svg|folded|speedscope|pprof: enum out_fmt, -1 = none */
    enum web_sort sort;  /* sort=self|total */
    size_t limit;        /* limit=N table rows */
    enum web_norm norm;  /* norm=relative|absolute */
    size_t buckets;      /* width=N timeline points */
    int mode;            /* type=cpu|wall|offcpu|alloc|lock: enum ct_mode (a.type, b.type) */
} web_query;

/* Defaults: every container, the last hour before now_ms (until absent: now; since absent: an
 * hour before until), 8192 nodes, palette java, table by self. */
void web_query_init(web_query *q);
/* One pair (value decoded, NUL-terminated, pointing into memory that outlives q). 0, or -1 with
 * err (FLAME_EXIT_USAGE) naming the key. */
int web_query_set(web_query *q, const char *key, const char *value, int64_t now_ms, flame_err *err);
/* After the pairs: the ranges completed and checked (since < until). */
int web_query_finish(web_query *q, int64_t now_ms, flame_err *err);
/* A raw query string ("a=1&b=%2F"; '+' is a space): split, decoded into buf (cap >= strlen(qs)
 * + 2; the values point into it), each pair set, then finished. */
int web_query_parse(web_query *q, const char *qs, char *buf, size_t cap, int64_t now_ms,
                    flame_err *err);
/* Percent-decode s[0..n) into out (cap >= n + 1, NUL-terminated; '+' a space when plus): its
 * length, or -1 for a malformed escape or a NUL byte. */
long web_query_decode(const char *s, size_t n, bool plus, char *out, size_t cap);

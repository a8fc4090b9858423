/* Inside the ClickHouse backend (store/clickhouse.c: schema, put, readers; clickhouse_http.c:
 * URL and requests; clickhouse_compact.c: retention and compaction by day partitions). */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "store/store_impl.h"

typedef struct ch {
    void *curl;     /* CURL * */
    char base[300]; /* http://host:port/ */
    char db[65];    /* [A-Za-z0-9_] */
    char user[128]; /* "" = none */
    char password[128];
    bool no_db;       /* send the next requests without ?database= (to create it) */
    bool ready;       /* database and tables checked */
    bool distributed; /* samples is a Distributed table */
    uint64_t *known;  /* stack keys the server already has (open addressing, 0 = free) */
    size_t known_n, known_cap;
} ch;

/* A response body (NUL-terminated); reused from one request to the next, freed by the owner. */
typedef struct ch_buf {
    char *p;
    size_t n;
} ch_buf;

/* The store URL into s (name, spool) and c (base URL, database, credentials). */
int ch_parse_url(store *s, ch *c, const char *url, flame_err *err);
/* POST sql (with body: the rows of an INSERT ... FORMAT TabSeparated, sql then goes in the
 * URL); the answer into out (may be NULL). Errors: STORE_ERR_UNREACHABLE (no connection,
 * timeout), STORE_ERR_SERVER (an HTTP error, with the server's first line). */
int ch_post(store *s, const char *sql, const char *body, size_t blen, ch_buf *out, flame_err *err);
/* The same, for a query built into a memstream: closes f and frees its buffer. */
int ch_post_file(store *s, FILE *f, char **text, ch_buf *out, flame_err *err);
/* Each TabSeparated row of b in turn: 1 = a row (fields in place), 0 = the end, -1 malformed. */
int ch_next_row(ch_buf *b, size_t *pos, char **fields, size_t *lens, int want);
/* The database and tables exist and are of a version we read (once per handle). */
int ch_ready(store *s, flame_err *err);
/* The WHERE clause of q (windows overlapping [since, until), container, host, pid). */
void ch_where(FILE *f, const store_query *q);
/* Disk used by our tables on the server asked (a Distributed table has no parts there), and the
 * bytes per row of samples. */
int ch_disk(store *s, uint64_t *disk, double *per_row, flame_err *err);
/* A number of a response field. */
int64_t ch_int(const char *s);

static inline ch *ch_of(store *s)
{
    return s->impl;
}

int ch_compact(store *s, int64_t now_ms, const store_policy *pol, store_compact_stats *st,
               flame_err *err);

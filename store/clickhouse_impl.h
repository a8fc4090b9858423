/* Inside the ClickHouse backend (store/clickhouse.c: the face; clickhouse_schema.c: tables and
 * versions; clickhouse_put.c: puts; clickhouse_read.c: readers; clickhouse_compact.c: retention
 * and compaction by day partitions; clickhouse_http.c: URL and requests). */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "store/dict.h"
#include "store/store_impl.h"

typedef struct ch {
    void *curl;     /* CURL * */
    char base[300]; /* http://host:port/ */
    char db[65];    /* [A-Za-z0-9_] */
    char user[128]; /* "" = none */
    char password[128];
    bool no_db;       /* send the next requests without ?database= (to create it) */
    long timeout_s;   /* of a whole request: CH_READ_TIMEOUT_S, CH_PUT_TIMEOUT_S in a put */
    bool ready;       /* database and tables checked */
    bool distributed; /* windows is a Distributed table */
    bool prewhere;    /* windows is of the MergeTree family: PREWHERE works */
    bool has_type;    /* windows has its type column (a version 3 store read as it is has not) */
    bool rollups;     /* the store has its rollups table (docs/STORE.md, "Hour rollups") */
    bool rollups6;    /* ... and its rollups_6h table (docs/STORE.md, "6-hour rollups") */
    /* how much of the runs' decoded dictionaries a profile read decodes while the server still
     * sums the pairs (CH_DECODE_AHEAD; the rest one run at a time after: bounds the memory) */
    size_t decode_ahead;
    /* this handle's run (clickhouse_put.c; 0 = none yet): its key, its dictionary of stacks
     * (store/dict.h), the chunks of it sent so far, and when it started (a run lasts a day) */
    uint64_t run;
    dict d;
    uint32_t seq;
    int64_t run_start_ms;
} ch;

/* Schema 2's windows table: the columns of an INSERT, and the expressions that turn a row's
 * arrays back into its ids and counts. Each value is split in its low byte and the rest (x =
 * lo + 256 * hi), in two arrays of the same length: the hi arrays are nearly all zeros, which
 * LZ4 stores in almost nothing (18.16 has no column codecs; lambdas there cannot see other
 * columns, so no escape-and-lookup). Ids are stored as gaps from the previous id. Lambda
 * parameters are named v_*: 18.16 puts a query's aliases into lambda bodies, so a parameter named
 * like an alias (compaction's b) silently reads the alias. */
#define CH_ID_MAX ((uint64_t)1 << 24)    /* a gap must fit lo + 256 * UInt16 */
#define CH_COUNT_MAX ((uint64_t)1 << 40) /* a count: lo + 256 * UInt32 */
#define CH_WINDOW_COLS                                                                             \
    "host, container_id, container_name, image, jvm_pid, jvm_version, start_ms, end_ms,"           \
    " frequency, samples, level, run, ids, ids_hi, counts, counts_hi, uid, type"
/* What identifies a window: its uid, or for a row written without one (uid 0: an older schema's)
 * a hash of what it is (the same window, the same number). Not a DEFAULT of the column: 18.16
 * cannot compute a default that reads other columns for parts written before the column was
 * added ("Unknown identifier"). */
#define CH_UID_KEY                                                                                 \
    "if(uid = 0, cityHash64(host, container_id, jvm_pid, start_ms, end_ms, level, run), uid)"
#define CH_IDS                                                                                     \
    "arrayMap(v_x -> toUInt32(v_x), arrayCumSum(arrayMap((v_lo, v_hi) -> toUInt32(v_lo) + 256 * "  \
    "toUInt32(v_hi),"                                                                              \
    " ids, ids_hi)))"
#define CH_COUNTS                                                                                  \
    "arrayMap((v_lo, v_hi) -> toUInt64(v_lo) + 256 * toUInt64(v_hi), counts, counts_hi)"
/* SQL of the four arrays from a sorted id array g (already as gaps) and a count array n */
#define CH_SPLIT(g, n)                                                                             \
    "arrayMap(v_x -> toUInt8(bitAnd(v_x, 255)), " g                                                \
    "), arrayMap(v_x -> toUInt16(bitShiftRight(v_x, 8)), " g                                       \
    "), arrayMap(v_x -> toUInt8(bitAnd(v_x, 255)), " n                                             \
    "), arrayMap(v_x -> toUInt32(bitShiftRight(v_x,"                                               \
    " 8)), " n ")"

/* A rollup's key (the labels that tell JVMs and runs apart, and the hour), and the fingerprint of
 * the windows it sums: their number and the sum of a hash of each one's uid (CH_UID_KEY). */
#define CH_ROLLUP_KEY "host, container_id, jvm_pid, type, run, hour"
#define CH_HOUR "toInt64(intDiv(start_ms, 3600000))"
/* 6-hour rollups (rollups_6h): a block of CH_BLOCK_HOURS hours from a multiple of it (UTC: 00,
 * 06, 12, 18 h), its `hour` its first; CH_BLOCK its hour of a window's start */
#define CH_BLOCK_HOURS 6
#define CH_BLOCK "toInt64(intDiv(start_ms, 21600000) * 6)"
/* "(SELECT key, nw, fp FROM the windows of q whose hour is in [h0, h1), each once, GROUP BY key)"
 * with hour the window's hour (span 1) or its block's first (span CH_BLOCK_HOURS): reads the
 * windows' labels and uids, none of their arrays (clickhouse_read.c) */
void ch_fingerprints(FILE *f, const store_query *q, int64_t h0, int64_t h1, int span);

/* One row of the fingerprints: a key's hour (or block) and the count and hash sum of its windows
 * (kind W), or of a rollup (H an hour's, B a block's) */
typedef struct ch_fp {
    uint64_t kid, nw, fp;
    int64_t hour;
} ch_fp;
enum { FP_W, FP_H, FP_B, FP_N };

/* The rollups a range reads and the hours of windows it reads, by key: the valid block rollups
 * of its whole blocks, the valid hour rollups of its whole hours outside those blocks, and the
 * (key, hour) of its whole hours that neither holds. Lists of numbers for the pairs query. */
typedef struct ch_cover {
    ch_fp *use[FP_N]; /* [FP_W]: the (key, hour)s read from windows; [FP_H], [FP_B]: rollups */
    size_t n[FP_N];
} ch_cover;

/* The pairs query names each rollup and uncovered hour: beyond this many, the one-query form
 * (SQL of ~60 bytes each, under the server's 256 KiB max_query_size) */
#define CH_COVER_MAX 2000

/* Which rollups a read takes and which hours it leaves to windows, from the rows of the
 * fingerprints query by kind (each array sorted here): 1 = cv filled, 0 = more than
 * CH_COVER_MAX to name (cv empty: the one-query form), -1 = out of memory. Pure. */
int ch_cover_make(ch_fp *const row[FP_N], const size_t n[FP_N], ch_cover *cv);
void ch_cover_free(ch_cover *cv);

/* How long a request may take: a reader's (a day's GROUP BY) is long; a put's is short, so a
 * server that hangs (accepts, never answers) is given up on and the window spooled instead of
 * holding the recorder for minutes. A dead server is seen at connect (5 s) either way. */
#define CH_READ_TIMEOUT_S 300L
#define CH_PUT_TIMEOUT_S 15L

/* A response body (NUL-terminated); reused from one request to the next, freed by the owner. */
typedef struct ch_buf {
    char *p;
    size_t n;
} ch_buf;

/* url as it may be shown: without user and password ("clickhouse://host:port/db?..."). */
void ch_url_shown(const char *url, char *out, size_t cap);
/* The store URL into s (name, spool) and c (base URL, database, credentials: from the URL, else
 * its password_file, else $DOCKER_FLAME_STORE_PASSWORD). */
int ch_parse_url(store *s, ch *c, const char *url, flame_err *err);
/* POST sql (with body: the rows of an INSERT ... FORMAT TabSeparated, sql then goes in the
 * URL); the answer into out (may be NULL). Errors: STORE_ERR_UNREACHABLE (no connection,
 * timeout), STORE_ERR_SERVER (an HTTP error, with the server's first line). */
int ch_post(store *s, const char *sql, const char *body, size_t blen, ch_buf *out, flame_err *err);
/* The queries sql[0..n) sent at once (a connection each, so the server works on them at the
 * same time), answer i into out[i]; done(ctx, i, &out[i], err), when not NULL, is called as
 * each answer is complete, while the others go on. A NULL sql[i] is a query that needs an
 * answer first: asked as soon as done has written it into sql[i] (through ctx), or never.
 * idle(ctx, err), when not NULL, is called while no answer is ready, for a short piece of
 * work: 1 when it did one (called again after a look at the answers), 0 when it has none,
 * -1 on error (err set).
 * 0 once all asked are answered; the first failure (a request's, as ch_post's, or done's
 * nonzero result) ends the others. n <= CH_POST_ALL_MAX. Bit i of whole: answer i is sent by
 * the server only once its query has ended, so a failure halfway is a 500 and its message,
 * never appended to rows (for binary answers). */
#define CH_POST_ALL_MAX 5
#define CH_DECODE_AHEAD ((size_t)16 << 20)
int ch_post_all(store *s, char *const *sql, ch_buf *out, size_t n, unsigned whole,
                int (*done)(void *ctx, size_t i, ch_buf *b, flame_err *err),
                int (*idle)(void *ctx, flame_err *err), void *ctx, flame_err *err);
/* The same, for a query built into a memstream: closes f and frees its buffer. */
int ch_post_file(store *s, FILE *f, char **text, ch_buf *out, flame_err *err);
/* sql without a body (a statement, or a query whose answer goes into out, may be NULL). */
int ch_post_sql(store *s, const char *sql, ch_buf *out, flame_err *err);
/* The first field of the first row of sql's answer, as a number (0 when none). */
int ch_one(store *s, const char *sql, int64_t *out, flame_err *err);
/* Each TabSeparated row of b in turn: 1 = a row (fields in place), 0 = the end, -1 malformed. */
int ch_next_row(ch_buf *b, size_t *pos, char **fields, size_t *lens, int want);
/* The database and tables exist and are of a version we read (once per handle;
 * clickhouse_schema.c). */
int ch_ready(store *s, flame_err *err);
/* The WHERE clause of q (windows overlapping [since, until), container, host, pid, and the
 * type when q names one: has_type says whether the table has the column, whose windows are
 * otherwise all cpu). */
void ch_where(FILE *f, const store_query *q, bool has_type);
/* "(SELECT cols FROM windows WHERE <q> LIMIT 1 BY <uid>)": the windows of q, each counted once
 * (a window sent twice is stored twice until a compaction rebuilds its day). */
void ch_windows(FILE *f, const char *cols, const store_query *q, bool has_type);
/* Disk used by our tables on the server asked (a Distributed table has no parts there). */
int ch_disk(store *s, uint64_t *disk, flame_err *err);
/* A number of a response field. */
int64_t ch_int(const char *s);

static inline ch *ch_of(store *s)
{
    return s->impl;
}

/* Store n windows (clickhouse_put.c). */
int ch_put(store *s, const store_window *w, size_t n, flame_err *err);

/* The readers (clickhouse_read.c). */
int ch_profile(store *s, const store_query *q, profile *out, store_info *info, flame_err *err);
int ch_timeline(store *s, const store_query *q, store_series_list *out, flame_err *err);
int ch_list(store *s, const store_query *q, store_listing *out, flame_err *err);

int ch_compact(store *s, int64_t now_ms, const store_policy *pol, store_compact_stats *st,
               flame_err *err);

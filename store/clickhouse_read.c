/* The ClickHouse backend's readers (store/clickhouse_impl.h), whose sums and groupings of
 * windows the SERVER does (GROUP BY), each window counted once (its uid), so a day of windows
 * costs the client one answer of distinct (run, stack) pairs; the rollups' few rows of whole
 * runs this client adds to them, and makes the stacks' texts from the runs' dictionaries. Also
 * the WHERE clause of a query and the disk our tables use. */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "flame/alloc.h"
#include "store/chtext.h"
#include "store/clickhouse_impl.h"
#include "store/varint.h"

/* q's conditions after kw (" WHERE ", " PREWHERE ") */
static void where_as(FILE *f, const char *kw, const store_query *q, bool has_type)
{
    /* the hour (the first column of the sort key) bounds what the server reads: a short range
     * reads its hours, not its day partition */
    int64_t from = q->since_ms - STORE_MAX_WINDOW_MS, to = q->until_ms;
    fprintf(f,
            "%sintDiv(start_ms, 3600000) >= %lld AND intDiv(start_ms, 3600000) <= %lld"
            " AND start_ms < %lld AND start_ms > %lld AND end_ms > %lld",
            kw, (long long)(from / 3600000), (long long)(to / 3600000), (long long)to,
            (long long)from, (long long)q->since_ms);
    if (q->container) {
        fputs(" AND (container_name = ", f);
        ch_sql_str(f, q->container);
        fputs(" OR container_id = ", f);
        ch_sql_str(f, q->container);
        if (strlen(q->container) >= STORE_ID_PREFIX_MIN) {
            fprintf(f, " OR substring(container_id, 1, %zu) = ", strlen(q->container));
            ch_sql_str(f, q->container);
        }
        fputc(')', f);
    }
    if (q->host) {
        fputs(" AND host = ", f);
        ch_sql_str(f, q->host);
    }
    if (q->jvm_pid)
        fprintf(f, " AND jvm_pid = %lld", (long long)q->jvm_pid);
    if (q->type && has_type) {
        fputs(" AND type = ", f);
        ch_sql_str(f, q->type);
    } else if (q->type && strcmp(q->type, "cpu")) {
        fputs(" AND 0", f);
    }
}

void ch_where(FILE *f, const store_query *q, bool has_type)
{
    where_as(f, " WHERE ", q, has_type);
}

void ch_windows(FILE *f, const char *cols, const store_query *q, bool has_type)
{
    fprintf(f, "(SELECT %s FROM windows", cols);
    ch_where(f, q, has_type);
    fputs(" LIMIT 1 BY " CH_UID_KEY ")", f);
}

void ch_fingerprints(FILE *f, const store_query *q, int64_t h0, int64_t h1, int span)
{
    fprintf(f,
            "(SELECT " CH_ROLLUP_KEY ", count() AS nw, sum(cityHash64(u)) AS fp FROM (SELECT host,"
            " container_id, jvm_pid, type, run, %s AS hour, " CH_UID_KEY " AS u FROM windows",
            span == 1 ? CH_HOUR : CH_BLOCK);
    ch_where(f, q, true);
    fprintf(f,
            " AND start_ms >= %lld AND start_ms < %lld LIMIT 1 BY u) GROUP BY " CH_ROLLUP_KEY ")",
            (long long)(h0 * 3600000), (long long)(h1 * 3600000));
}

/* The rollups of hours [h0, h1) whose fingerprint is that of q's windows of their key now: of
 * the hour (span 1: rollups) or of the 6-hour block (span CH_BLOCK_HOURS: rollups_6h) */
static void valid_rollups(FILE *f, const char *cols, const store_query *q, int64_t h0, int64_t h1,
                          int span)
{
    fprintf(f,
            "SELECT %s FROM %s WHERE hour >= %lld AND hour < %lld AND (" CH_ROLLUP_KEY
            ", nw, fp) IN ",
            cols, span == 1 ? "rollups" : "rollups_6h", (long long)h0, (long long)h1);
    ch_fingerprints(f, q, h0, h1, span);
}

/* ---- readers ---- */

/* A query built around the windows of q, each once: head, (SELECT cols ...), tail. */
static int ch_select(store *s, const store_query *q, bool all_types, const char *head,
                     const char *cols, const char *tail, ch_buf *out, flame_err *err)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    fputs(head, f);
    /* profile and timeline: one type, cpu unless q names another */
    store_query one = *q;
    one.type = store_type_of(q->type);
    ch_windows(f, cols, all_types ? q : &one, ch_of(s)->has_type);
    fputs(tail, f);
    return ch_post_file(s, f, &text, out, err);
}

/* A stack's sum in a run: laid out as a row of the pairs' RowBinary answer (run UInt64, id
 * UInt32, the sum UInt64, no padding), so the answer is the array, read where it arrived when
 * no rollup's rows are added to it (all_sums) */
typedef struct __attribute__((packed)) ch_sum {
    uint64_t run;
    uint32_t id;
    uint64_t count;
} ch_sum;

static int by_run(const void *a, const void *b)
{
    const ch_sum *x = a, *y = b;
    return x->run != y->run ? (x->run > y->run) - (x->run < y->run)
                            : (x->id > y->id) - (x->id < y->id);
}

/* Whether each of d's frame names is one frame of a stack's text (not empty, no ';'): then its
 * stacks can be added by their frames (profile_add_names), each name interned once for the run
 * instead of once for every stack it is in; otherwise through the text, as it reads. */
static bool plain_names(const dict *d)
{
    for (uint32_t i = 1; i <= d->nframes; i++)
        if (d->name_len[i] == 0 || memchr(d->names + d->name_off[i], ';', d->name_len[i]))
            return false;
    return true;
}

/* Stack id's frames into ids[] (root first) as p's names, each of d's frames interned the first
 * time a stack has it (so in the order the text path interns them), kept in names[]. 1 = done,
 * 0 = a stack whose text is unknown, -1 = out of memory, -2 = deeper than PROFILE_MAX_DEPTH. */
static int stack_names(const dict *d, uint32_t id, profile *p, uint32_t *names, uint32_t **ids,
                       size_t *cap, size_t *n)
{
    if (id == 0 || id > d->nstacks || d->leaf[id] == 0)
        return 0;
    size_t k = 0;
    for (uint32_t v = d->leaf[id]; v; v = d->parent[v], k++)
        if (k > PROFILE_MAX_DEPTH)
            return -2;
    if (k > *cap) {
        uint32_t *ni = realloc(*ids, k * sizeof *ni);
        if (!ni)
            return -1;
        *ids = ni;
        *cap = k;
    }
    size_t o = k;
    for (uint32_t v = d->leaf[id]; v; v = d->parent[v])
        (*ids)[--o] = d->frame[v]; /* d's frame numbers for now */
    for (size_t i = 0; i < k; i++) {
        uint32_t f = (*ids)[i];
        if (names[f] == UINT32_MAX &&
            (names[f] = profile_name(p, d->names + d->name_off[f], d->name_len[f])) == UINT32_MAX)
            return -1;
        (*ids)[i] = names[f];
    }
    *n = k;
    return 1;
}

/* The sums of one run named through its dictionary d (a stack d cannot name is counted as
 * missing). */
static int name_run(store *s, const dict *d, const ch_sum *sums, size_t n, profile *out,
                    store_info *info, char **text, size_t *cap, flame_err *err)
{
    int rc = 0;
    uint32_t *names = NULL, *ids = NULL;
    size_t icap = 0;
    if (rc == 0 && plain_names(d)) {
        names = malloc(((size_t)d->nframes + 1) * sizeof *names);
        if (!names)
            rc = flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
        else
            memset(names, 0xff, ((size_t)d->nframes + 1) * sizeof *names);
    }
    for (size_t i = 0; rc == 0 && i < n; i++) {
        size_t len = 0;
        int t = names ? stack_names(d, sums[i].id, out, names, &ids, &icap, &len)
                      : dict_stack_text(d, sums[i].id, text, cap, &len);
        if (t == -1) {
            rc = flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
        } else if (t == 0) {
            info->missing += sums[i].count;
        } else if (t < 0 || (names ? profile_add_names(out, ids, len, (double)sums[i].count)
                                   : profile_add(out, *text, len, (double)sums[i].count,
                                                 PROFILE_ONE_COLUMN)) < 0) {
            rc = t != -2 && errno == ENOMEM
                     ? flame_fail(err, FLAME_EXIT_ERROR, "out of memory")
                     : store_fail(err, STORE_ERR_CORRUPT, "%s: a stored stack is not a stack",
                                  s->name);
        }
    }
    free(names);
    free(ids);
    return rc;
}

/* The whole hours [h0, h1) of q's range, when there is one and the store has rollups to use:
 * every window that starts in such an hour overlaps the range. Not through a Distributed
 * windows (compaction, which writes them, works shard by shard). */
static bool use_rollups(store *s, const store_query *q, int64_t *h0, int64_t *h1)
{
    const ch *c = ch_of(s);
    if (!c->rollups || !c->has_type || c->distributed || q->since_ms < 0)
        return false;
    *h0 = (q->since_ms + 3599999) / 3600000;
    *h1 = q->until_ms / 3600000;
    return *h0 < *h1;
}

/* The runs of q's windows, numbered by their place in a sorted array (the same each time); a 0
 * at the end: transform refuses an empty array (a range with no windows) */
static void runs_of(FILE *f, store *s, const store_query *one)
{
    fputs("(SELECT arrayPushBack(arraySort(groupUniqArray(run)), toUInt64(0)) FROM windows", f);
    ch_where(f, one, ch_of(s)->has_type);
    fputc(')', f);
}

/* The pairs summed per (run, id), grouped by one UInt64 made of the run's number in q's runs
 * (high half) and the id (low half): exact, and 3-5 times less of the server's CPU than
 * GROUP BY run, id (two keys) on a day of 10 containers. Every run summed is one of q's
 * windows' (a rollup is used only when its windows are q's). */
static void pairs_head(FILE *f, store *s, const store_query *one)
{
    fputs("SELECT toUInt64(", f);
    runs_of(f, s, one);
    fputs("[intDiv(k, 4294967296) + 1]) AS run, toUInt32(k % 4294967296) AS id,"
          " toUInt64(sum(c)) AS n FROM"
          " (SELECT bitOr(bitShiftLeft(transform(run, ",
          f);
    runs_of(f, s, one);
    fputs(", range(length(", f);
    runs_of(f, s, one);
    fputs(")), toUInt64(4294967295)), 32), toUInt64(toUInt32(lo + 256 * hi))) AS k,"
          " clo + 256 * toUInt64(chi) AS c FROM ",
          f);
}

/* Sorted by k, which is by (run, id) as the runs' array is sorted: what ch_profile names the sums
 * in. The server sorts 200,000 keys in a few ms; the client's qsort of them was a tenth of its
 * CPU for a day of 10 JVMs (it stays, for an answer that comes unsorted). RowBinary: fixed rows
 * of PAIR_ROW bytes, read without parsing (as TSV, 200,000 rows took the client ~55 ms). */
#define PAIRS_TAIL                                                                                 \
    ") ARRAY JOIN ilo AS lo, ihi AS hi, counts AS clo, counts_hi AS chi) GROUP BY k ORDER BY k"    \
    " FORMAT RowBinary"
/* run UInt64, id UInt32, n UInt64, little-endian */
#define PAIR_ROW 20

/* The rollups' rows as they are stored, when the client sums them (client_sums, all_sums). A
 * day of 10 JVMs is 40 block rollups of 20,000 pairs each; the server summed their 800,000
 * pairs in 150-330 ms of its CPU (ARRAY JOIN and GROUP BY k, or sumMap), on the cores the
 * client's own work needs; sending them as they are takes it 10-40 ms, and the client merges
 * them in 30-50 ms, each row's ids being sorted. Windows stay summed by the server
 * (pairs_head): a day of them is 75 million pairs. */
#define ROLLED_HEAD "SELECT run, ids, ids_hi, counts, counts_hi FROM ("
#define ROLLED_TAIL ") FORMAT RowBinary"

/* The pairs of q in one query, without a cover: the valid hour rollups of the range's whole
 * hours [h0, h1) (rolled_one_sql) and the windows no valid rollup holds (windows_one_sql), each
 * window once (ch_cover below says which, when it could be asked first). */
static void windows_one_sql(FILE *f, store *s, const store_query *one, int64_t h0, int64_t h1)
{
    /* PREWHERE: the server reads the arrays of the windows no valid rollup holds only (without
     * it, all of the range's: 590 MB for a day of 10 containers, to keep none of them) */
    fputs("(SELECT run, ids, ids_hi, counts, counts_hi FROM windows", f);
    where_as(f, ch_of(s)->prewhere ? " PREWHERE " : " WHERE ", one, true);
    fputs(" AND (host, container_id, jvm_pid, type, run, " CH_HOUR ") NOT IN (", f);
    valid_rollups(f, CH_ROLLUP_KEY, one, h0, h1, 1);
    fputs(") LIMIT 1 BY " CH_UID_KEY ")", f);
}

static void rolled_one_sql(FILE *f, const store_query *one, int64_t h0, int64_t h1)
{
    valid_rollups(f, "run, ids, ids_hi, counts, counts_hi", one, h0, h1, 1);
    fputs(" LIMIT 1 BY " CH_ROLLUP_KEY, f);
}

/* ---- what the rollups cover, asked first (docs/STORE.md, "6-hour rollups") ---- */

/* A JVM's (labels, type, run) as one number the server computes: lists of keys in a query are
 * then numbers, never a container's text in SQL */
#define CH_KID "cityHash64(host, container_id, jvm_pid, type, run)"

void ch_cover_free(ch_cover *cv)
{
    for (int k = 0; k < FP_N; k++)
        free(cv->use[k]);
    *cv = (ch_cover){0};
}

static int by_key_hour(const void *a, const void *b)
{
    const ch_fp *x = a, *y = b;
    if (x->kid != y->kid)
        return (x->kid > y->kid) - (x->kid < y->kid);
    return (x->hour > y->hour) - (x->hour < y->hour);
}

static const ch_fp *find_w(const ch_fp *w, size_t n, uint64_t kid, int64_t hour)
{
    ch_fp k = {.kid = kid, .hour = hour};
    return n ? bsearch(&k, w, n, sizeof *w, by_key_hour) : NULL; /* w is NULL when empty */
}

static int cover_push(ch_cover *cv, int k, ch_fp v, size_t *cap)
{
    if (cv->n[k] == cap[k]) {
        size_t nc = cap[k] ? cap[k] * 2 : 64;
        ch_fp *p = realloc(cv->use[k], nc * sizeof *p);
        if (!p)
            return -1;
        cv->use[k] = p;
        cap[k] = nc;
    }
    cv->use[k][cv->n[k]++] = v;
    return 0;
}

/* The windows' fingerprints of q's whole hours [h0, h1) by key and hour, and the rollups of
 * those hours and of the blocks [b0, b1) (their keys, not their arrays), in one query; then
 * which rollups hold which hours. 1 = cv filled, 0 = too many to name (cv empty), -1 = error.
 * A rollup with a fingerprint of its own windows is valid; a block's windows are its hours'
 * (their counts and hash sums add up). Duplicates of a key not merged yet by the server
 * (ReplacingMergeTree) are told apart by their fingerprint, and the pairs query takes one. */
static bool cover_sql(FILE *f, store *s, const store_query *q, const ch_cover *cv)
{
    (void)cv;
    int64_t h0 = 0, h1 = 0;
    if (!ch_of(s)->rollups6 || !use_rollups(s, q, &h0, &h1))
        return false;
    int64_t b0 = (h0 + CH_BLOCK_HOURS - 1) / CH_BLOCK_HOURS * CH_BLOCK_HOURS,
            b1 = h1 / CH_BLOCK_HOURS * CH_BLOCK_HOURS;
    if (b0 >= b1)
        return false;
    store_query one = *q;
    one.type = store_type_of(q->type);
    fputs("SELECT 0, " CH_KID ", hour, nw, fp FROM ", f);
    ch_fingerprints(f, &one, h0, h1, 1);
    fprintf(f,
            " UNION ALL SELECT 1, " CH_KID ", hour, nw, fp FROM rollups WHERE hour >= %lld AND"
            " hour < %lld",
            (long long)h0, (long long)h1);
    if (b0 < b1)
        fprintf(f,
                " UNION ALL SELECT 2, " CH_KID ", hour, nw, fp FROM rollups_6h WHERE hour >="
                " %lld AND hour < %lld",
                (long long)b0, (long long)b1);
    fputs(" FORMAT TabSeparated", f);
    return true;
}

/* cover_sql's answer b into *cv: 1 when cv is to be used, 0 when not (too long a list),
 * -1 on error */
static int cover_read(store *s, ch_buf *b, ch_cover *cv, flame_err *err)
{
    *cv = (ch_cover){0};
    int rc = 0;
    ch_fp *row[FP_N] = {0};
    size_t n[FP_N] = {0}, cap[FP_N] = {0}, pos = 0;
    char *fl[5];
    size_t l[5];
    int got = 0;
    while (rc == 0 && (got = ch_next_row(b, &pos, fl, l, 5)) == 1) {
        int k = (int)ch_int(fl[0]);
        if (k < 0 || k >= FP_N) {
            got = -1;
            break;
        }
        if (n[k] == cap[k]) {
            cap[k] = cap[k] ? cap[k] * 2 : 256;
            ch_fp *p = realloc(row[k], cap[k] * sizeof *p);
            if (!p) {
                rc = flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
                break;
            }
            row[k] = p;
        }
        row[k][n[k]++] = (ch_fp){strtoull(fl[1], NULL, 10), strtoull(fl[3], NULL, 10),
                                 strtoull(fl[4], NULL, 10), ch_int(fl[2])};
    }
    if (rc == 0 && got < 0)
        rc = store_fail(err, STORE_ERR_SERVER, "%s: unreadable answer", s->name);
    if (rc == 0 && (rc = ch_cover_make(row, n, cv)) < 0)
        flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    for (int k = 0; k < FP_N; k++)
        free(row[k]);
    return rc;
}

int ch_cover_make(ch_fp *const row[FP_N], const size_t n[FP_N], ch_cover *cv)
{
    size_t ucap[FP_N] = {0};
    int rc = 0;
    *cv = (ch_cover){0};
    if (n[FP_W] > 1)
        qsort(row[FP_W], n[FP_W], sizeof *row[FP_W], by_key_hour);
    /* the valid blocks: their hours' windows add up to the rollup's fingerprint */
    for (size_t i = 0; rc == 0 && i < n[FP_B]; i++) {
        ch_fp r = row[FP_B][i], sum = {0};
        for (int64_t h = r.hour; h < r.hour + CH_BLOCK_HOURS; h++) {
            const ch_fp *w = find_w(row[FP_W], n[FP_W], r.kid, h);
            if (w)
                sum.nw += w->nw, sum.fp += w->fp;
        }
        if (sum.nw == r.nw && sum.fp == r.fp && cover_push(cv, FP_B, r, ucap) < 0)
            rc = -1;
    }
    if (rc == 0 && cv->n[FP_B] > 1) /* sorted: the blocks are looked up by key, first hour */
        qsort(cv->use[FP_B], cv->n[FP_B], sizeof *cv->use[FP_B], by_key_hour);
#define IN_BLOCK(kid_, hour_)                                                                      \
    (find_w(cv->use[FP_B], cv->n[FP_B], (kid_), (hour_) / CH_BLOCK_HOURS * CH_BLOCK_HOURS) != NULL)
    /* the valid hour rollups of the hours no valid block holds */
    for (size_t i = 0; rc == 0 && i < n[FP_H]; i++) {
        ch_fp r = row[FP_H][i];
        const ch_fp *w = find_w(row[FP_W], n[FP_W], r.kid, r.hour);
        if (w && w->nw == r.nw && w->fp == r.fp && !IN_BLOCK(r.kid, r.hour) &&
            cover_push(cv, FP_H, r, ucap) < 0)
            rc = -1;
    }
    if (rc == 0 && cv->n[FP_H] > 1)
        qsort(cv->use[FP_H], cv->n[FP_H], sizeof *cv->use[FP_H], by_key_hour);
    /* the (key, hour)s of windows neither holds (an hour with two valid rollups, duplicates
     * not merged yet, is found once: the pairs query takes one of them) */
    for (size_t i = 0; rc == 0 && i < n[FP_W]; i++) {
        ch_fp w = row[FP_W][i];
        if (!IN_BLOCK(w.kid, w.hour) && !find_w(cv->use[FP_H], cv->n[FP_H], w.kid, w.hour) &&
            cover_push(cv, FP_W, w, ucap) < 0)
            rc = -1;
    }
#undef IN_BLOCK
    if (rc < 0 || cv->n[FP_W] + cv->n[FP_H] + cv->n[FP_B] > CH_COVER_MAX) {
        ch_cover_free(cv);
        return rc < 0 ? -1 : 0;
    }
    return 1;
}

/* " (kid, hour[, nw, fp]) IN ((...), ...)" of cv's list k */
static void cover_list(FILE *f, const ch_cover *cv, int k, const char *hexpr, bool fps)
{
    fprintf(f, "(" CH_KID ", %s%s) IN (", hexpr, fps ? ", nw, fp" : "");
    for (size_t i = 0; i < cv->n[k]; i++) {
        const ch_fp *r = &cv->use[k][i];
        fprintf(f, "%s(%llu, %lld", i ? ", " : "", (unsigned long long)r->kid, (long long)r->hour);
        if (fps)
            fprintf(f, ", %llu, %llu", (unsigned long long)r->nw, (unsigned long long)r->fp);
        fputc(')', f);
    }
    fputc(')', f);
}

/* The pairs of q's range as cv says: the windows outside its whole hours [h0, h1) (its edges)
 * and those of the hours no rollup holds, each once; the hour and block rollups named, each
 * once (LIMIT 1 BY: a duplicate the server has not merged yet: rolled_cover_sql) */
static void windows_cover_sql(FILE *f, store *s, const store_query *one, int64_t h0, int64_t h1,
                              const ch_cover *cv)
{
    fputs("(SELECT run, ids, ids_hi, counts, counts_hi FROM windows", f);
    where_as(f, ch_of(s)->prewhere ? " PREWHERE " : " WHERE ", one, true);
    fprintf(f, " AND (NOT (start_ms >= %lld AND start_ms < %lld)", (long long)(h0 * 3600000),
            (long long)(h1 * 3600000));
    if (cv->n[FP_W]) {
        fputs(" OR ", f);
        cover_list(f, cv, FP_W, CH_HOUR, false);
    }
    fputs(") LIMIT 1 BY " CH_UID_KEY ")", f);
}

/* The rows of cv's rollups of list k (FP_H: hours, FP_B: blocks) */
static void rollup_rows_sql(FILE *f, const ch_cover *cv, int k)
{
    fprintf(f, "SELECT run, ids, ids_hi, counts, counts_hi FROM %s WHERE ",
            k == FP_H ? "rollups" : "rollups_6h");
    cover_list(f, cv, k, "hour", true);
    fputs(" LIMIT 1 BY " CH_ROLLUP_KEY, f);
}

static void rolled_cover_sql(FILE *f, const ch_cover *cv)
{
    const char *sep = "";
    for (int k = FP_H; k <= FP_B; k++) {
        if (!cv->n[k])
            continue;
        fputs(sep, f);
        rollup_rows_sql(f, cv, k);
        sep = " UNION ALL ";
    }
}

/* Whether the client sums the rollups cv names (rolled_sql): a few rows of whole runs. Beyond
 * CH_ROLLED_ROWS (a week of 10 JVMs is 280 block rows), or without a cover (the one-query form:
 * how many the server finds is not known; a month of 10 JVMs' hour rollups is 576 MB as
 * stored), the server sums them with the windows, into one answer of distinct pairs.
 * NEEDSWORK: the bound counts rows, sized for runs of ~20,000 stacks (a day's 40 rows: 6.4 MB);
 * 200 rows of runs of a million stacks would be 1.6 GB, past the answer's 1 GiB bound (an
 * error, "larger than"): the cover could ask each rollup's length(ids) and bound the pairs. */
#define CH_ROLLED_ROWS 200
static bool client_sums(const ch_cover *cv)
{
    return cv && cv->n[FP_H] + cv->n[FP_B] > 0 && cv->n[FP_H] + cv->n[FP_B] <= CH_ROLLED_ROWS;
}

/* The query of q's pairs summed per (run, id), into f: the windows alone, or with the rollups
 * of its whole hours and blocks: as cv says when it was asked (not NULL), else in one query;
 * without the rollups the client sums (client_sums). The same sums either way (docs/STORE.md,
 * "Hour rollups", "6-hour rollups"). */
static bool pairs_sql(FILE *f, store *s, const store_query *q, const ch_cover *cv)
{
    static const char pairs_of[] = "SELECT run, arrayCumSum(ids) AS ilo, arrayCumSum(ids_hi) AS"
                                   " ihi, counts, counts_hi FROM ";
    int64_t h0 = 0, h1 = 0;
    store_query one = *q;
    one.type = store_type_of(q->type);
    pairs_head(f, s, &one);
    fprintf(f, "(%s", pairs_of);
    if (!use_rollups(s, q, &h0, &h1)) {
        ch_windows(f, "run, ids, ids_hi, counts, counts_hi", &one, ch_of(s)->has_type);
    } else if (cv) {
        windows_cover_sql(f, s, &one, h0, h1, cv);
        for (int k = FP_H; k <= FP_B && !client_sums(cv); k++) {
            if (!cv->n[k])
                continue;
            fprintf(f, " UNION ALL %s(", pairs_of);
            rollup_rows_sql(f, cv, k);
            fputc(')', f);
        }
    } else {
        windows_one_sql(f, s, &one, h0, h1);
        fprintf(f, " UNION ALL %s(", pairs_of);
        rolled_one_sql(f, &one, h0, h1);
        fputc(')', f);
    }
    fputs(PAIRS_TAIL, f);
    return true;
}

/* The query of the rollups' rows the client sums (ROLLED_HEAD's), into f, or false when it
 * sums none (nothing written) */
static bool rolled_sql(FILE *f, store *s, const store_query *q, const ch_cover *cv)
{
    int64_t h0 = 0, h1 = 0;
    if (!use_rollups(s, q, &h0, &h1) || !client_sums(cv))
        return false;
    fputs(ROLLED_HEAD, f);
    rolled_cover_sql(f, cv);
    fputs(ROLLED_TAIL, f);
    return true;
}

/* The window totals of q */
static bool totals_sql(FILE *f, store *s, const store_query *q, const ch_cover *cv)
{
    (void)cv;
    store_query one = *q;
    one.type = store_type_of(q->type);
    fputs("SELECT count(), sum(samples), min(start_ms), max(end_ms), min(frequency),"
          " max(frequency) FROM ",
          f);
    ch_windows(f, "samples, start_ms, end_ms, frequency", &one, ch_of(s)->has_type);
    fputs(" FORMAT TabSeparated", f);
    return true;
}

/* The dictionaries of q's runs */
static bool dicts_sql(FILE *f, store *s, const store_query *q, const ch_cover *cv)
{
    (void)cv;
    store_query one = *q;
    one.type = store_type_of(q->type);
    fputs("SELECT run, seq, chunk FROM dict WHERE run IN (SELECT run FROM windows", f);
    ch_where(f, &one, ch_of(s)->has_type);
    /* unsorted: got_answer sorts the rows (a few dozen). Sorted by the server, a day of 10
     * JVMs' 10 MB of chunks took it 200-220 ms of CPU instead of 80-110, and came whole only
     * when sorted (its first byte at 0.17-0.19 s instead of 0.01-0.04 s) */
    fputs(") FORMAT TabSeparated", f);
    return true;
}

/* A query of ch_profile's into f: false when it has none to ask (nothing written) */
typedef bool (*sql_fn)(FILE *f, store *s, const store_query *q, const ch_cover *cv);

/* fn's query into *out (NULL: none to ask). -1: out of memory */
static int sql_write(char **out, sql_fn fn, store *s, const store_query *q, const ch_cover *cv)
{
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    if (!m)
        return -1;
    bool any = fn(m, s, q, cv);
    if ((ferror(m) | fclose(m)) != 0 || !text || !any) {
        free(text);
        text = NULL;
    }
    *out = text;
    return any && !text ? -1 : 0;
}

/* A row of dict, in the answer's buffer. */
typedef struct ch_chunk {
    uint64_t run;
    int64_t seq;
    const uint8_t *p;
    size_t len;
} ch_chunk;

/* A run's dictionary: its chunks c[c0..c1) (in seq order), decoded into d when decoded */
typedef struct ch_run {
    uint64_t run;
    size_t c0, c1;
    bool decoded;
    dict d;
} ch_run;

/* The dictionaries' answer, by run */
typedef struct ch_runs {
    ch_chunk *c;
    size_t nc;
    ch_run *r;
    size_t n;
    size_t ahead;      /* decode up to this many bytes of dictionaries while answers are awaited */
    size_t next, used; /* the next run to decode ahead; the bytes decoded ahead */
} ch_runs;

enum { Q_TOTALS, Q_PAIRS, Q_DICTS, Q_ROLLED, Q_COVER, Q_N };

/* What ch_profile's answers need as they come: the dictionaries' (runs); the cover's, from
 * which the pairs' queries are written (sql) */
typedef struct ch_asked {
    store *s;
    const store_query *q;
    char **sql;
    ch_runs runs;
    ch_cover cv;
} ch_asked;

/* What a decoded dictionary holds in memory */
static size_t dict_bytes(const dict *d)
{
    return d->names_cap + (size_t)d->frames_cap * (sizeof *d->name_off + sizeof *d->name_len) +
           (size_t)d->nodes_cap * (sizeof *d->parent + sizeof *d->frame) +
           (size_t)d->stacks_cap * sizeof *d->leaf;
}

/* r's chunks applied in order (a chunk sent twice is one (run, seq): applied once; a damaged or
 * missing one ends what can be named, the rest is counted as missing). */
static int decode_run(ch_runs *runs, ch_run *r, flame_err *err)
{
    for (size_t i = r->c0; i < r->c1; i++)
        if ((i == r->c0 || runs->c[i].seq != runs->c[i - 1].seq) &&
            dict_apply(&r->d, runs->c[i].p, runs->c[i].len) == -2)
            return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    r->decoded = true;
    return 0;
}

/* (run, seq), then the place in the answer: of a chunk sent twice, the first is applied */
static int by_run_seq(const void *a, const void *b)
{
    const ch_chunk *x = a, *y = b;
    if (x->run != y->run)
        return (x->run > y->run) - (x->run < y->run);
    if (x->seq != y->seq)
        return (x->seq > y->seq) - (x->seq < y->seq);
    return (x->p > y->p) - (x->p < y->p);
}

/* The dictionaries' answer, as soon as it comes: its rows sorted by (run, seq) and split by
 * run, for the first runs to be decoded while the server still sums the pairs (decode_ahead),
 * up to runs->ahead bytes of them (decoded, a day's run of 20,000 stacks takes ~5 MB: 5 times
 * its chunks). */
static int got_dicts(ch_runs *runs, ch_buf *b, flame_err *err)
{
    char *f[3];
    size_t l[3], pos = 0, cap = 0, rcap = 0;
    int rc = 0;
    while ((rc = ch_next_row(b, &pos, f, l, 3)) == 1) {
        if (runs->nc == cap) {
            cap = cap ? cap * 2 : 256;
            ch_chunk *nc = realloc(runs->c, cap * sizeof *nc);
            if (!nc)
                return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
            runs->c = nc;
        }
        runs->c[runs->nc++] =
            (ch_chunk){strtoull(f[0], NULL, 10), ch_int(f[1]), (const uint8_t *)f[2], l[2]};
    }
    if (rc < 0)
        return -1; /* ch_profile names the store */
    if (runs->nc > 1)
        qsort(runs->c, runs->nc, sizeof *runs->c, by_run_seq);
    for (size_t k = 0; k < runs->nc; k++) {
        const ch_chunk c = runs->c[k];
        if (!runs->n || runs->r[runs->n - 1].run != c.run) {
            if (runs->n == rcap) {
                rcap = rcap ? rcap * 2 : 16;
                ch_run *nr = realloc(runs->r, rcap * sizeof *nr);
                if (!nr)
                    return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
                runs->r = nr;
            }
            runs->r[runs->n] = (ch_run){.run = c.run, .c0 = k};
            dict_init(&runs->r[runs->n++].d);
        }
        runs->r[runs->n - 1].c1 = k + 1;
    }
    return 0;
}

/* While ch_profile waits for answers: the next run's dictionary decoded (1), as long as the
 * runs decoded ahead take less than runs->ahead bytes; 0: nothing to do; -1: out of memory.
 * One run at a time (~10 ms), so that an answer is read, and the queries it lets ask are asked,
 * between two (a day's dictionaries decoded in one go delayed the pairs' queries that wait
 * for the cover by 0.1 s). */
static int decode_ahead(void *ctx, flame_err *err)
{
    ch_runs *runs = &((ch_asked *)ctx)->runs;
    if (runs->next >= runs->n || runs->used >= runs->ahead)
        return 0;
    ch_run *r = &runs->r[runs->next++];
    if (decode_run(runs, r, err) < 0)
        return -1;
    runs->used += dict_bytes(&r->d);
    return 1;
}

/* An answer of ch_profile's, as it comes: the dictionaries decoded ahead; the cover read and
 * the pairs' queries written from it, to be asked at once */
static int got_answer(void *ctx, size_t i, ch_buf *b, flame_err *err)
{
    ch_asked *a = ctx;
    if (i == Q_DICTS)
        return got_dicts(&a->runs, b, err);
    if (i != Q_COVER)
        return 0;
    int have = cover_read(a->s, b, &a->cv, err);
    if (have < 0)
        return -1;
    const ch_cover *cv = have > 0 ? &a->cv : NULL;
    if (sql_write(&a->sql[Q_PAIRS], pairs_sql, a->s, a->q, cv) < 0 ||
        sql_write(&a->sql[Q_ROLLED], rolled_sql, a->s, a->q, cv) < 0)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    return 0;
}

/* A row of the rollups' answer (ROLLED_HEAD's, in RowBinary: run UInt64; ids Array(UInt8),
 * ids_hi Array(UInt16), counts Array(UInt8), counts_hi Array(UInt32), each a LEB128 length
 * and its items, little-endian): where its arrays are in the answer */
typedef struct rolled_row {
    uint64_t run;
    size_t n;
    const uint8_t *lo, *hi, *clo, *chi;
} rolled_row;

/* The row at *p (moved past it) into r. -1: not that shape (arrays of unequal lengths too). */
static int rolled_get(const uint8_t **p, const uint8_t *end, rolled_row *r)
{
    static const size_t size[4] = {1, 2, 1, 4};
    const uint8_t **arr[4] = {&r->lo, &r->hi, &r->clo, &r->chi};
    if (end - *p < 8)
        return -1;
    memcpy(&r->run, *p, 8);
    r->run = le64toh(r->run);
    *p += 8;
    for (int i = 0; i < 4; i++) {
        uint64_t n;
        if (varint_get(p, end, &n) < 0 || n > (size_t)(end - *p) / size[i] || (i > 0 && n != r->n))
            return -1;
        r->n = n;
        *arr[i] = *p;
        *p += n * size[i];
    }
    return 0;
}

static int by_row_run(const void *a, const void *b)
{
    const rolled_row *x = a, *y = b;
    return (x->run > y->run) - (x->run < y->run);
}

/* a[0..na) and row r's pairs (ids as the sums of its gaps) merged by id into o, the counts of
 * one id summed: how many rows o has. Both sorted by id as a rollup's are; if not (a crafted
 * answer), all_sums' caller sorts what comes out, and every count is in it all the same. */
static size_t merge_row(const ch_sum *a, size_t na, const rolled_row *r, ch_sum *o)
{
    size_t i = 0, k = 0;
    uint64_t lo = 0, hi = 0;
    for (size_t j = 0; j < r->n; j++) {
        uint16_t ih;
        uint32_t cnt_hi;
        memcpy(&ih, r->hi + 2 * j, 2);
        memcpy(&cnt_hi, r->chi + 4 * j, 4);
        lo += r->lo[j];
        hi += le16toh(ih);
        ch_sum x = {r->run, (uint32_t)(lo + 256 * hi), r->clo[j] + 256 * (uint64_t)le32toh(cnt_hi)};
        while (i < na && a[i].id < x.id)
            o[k++] = a[i++];
        if (i < na && a[i].id == x.id)
            x.count += a[i++].count;
        o[k++] = x;
    }
    while (i < na)
        o[k++] = a[i++];
    return k;
}

/* The rollups' rows (Q_ROLLED's answer) summed per (run, id) into *out, *n rows sorted by
 * them. -1: an answer not of that shape (*err says so), or out of memory. */
static int rolled_sums(store *s, const ch_buf *b, ch_sum **out, size_t *n, flame_err *err)
{
    *out = NULL;
    *n = 0;
    if (!b->n) /* not asked, or no rollup */
        return 0;
    const uint8_t *p = (const uint8_t *)b->p, *end = p + b->n;
    rolled_row *row = NULL;
    size_t nrow = 0, cap = 0, most = 0, acap = 0;
    ch_sum *all = NULL, *tmp = NULL;
    int rc = 0;
    while (rc == 0 && p < end) {
        if (!GROW(row, cap, nrow + 1))
            rc = flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
        else if (rolled_get(&p, end, &row[nrow]) < 0)
            rc = store_fail(err, STORE_ERR_SERVER, "%s: unreadable answer (%zu bytes of rollups)",
                            s->name, b->n);
        else
            nrow++;
    }
    if (nrow > 1)
        qsort(row, nrow, sizeof *row, by_row_run);
    /* a run's sums grow in two arrays by turns, each the size of all the run's pairs: the end
     * of the answer's array (grown to it for each run; what stays is its distinct ids) and a
     * scratch one of the largest run's */
    for (size_t i = 0, k; rc == 0 && i < nrow; i = k) {
        size_t run_pairs = 0;
        for (k = i; k < nrow && row[k].run == row[i].run; k++)
            run_pairs += row[k].n;
        most = run_pairs > most ? run_pairs : most;
    }
    if (rc == 0 && most && !(tmp = malloc(most * sizeof *tmp)))
        rc = flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    size_t done = 0;
    for (size_t i = 0, k; rc == 0 && i < nrow; i = k) {
        size_t run_pairs = 0;
        for (k = i; k < nrow && row[k].run == row[i].run; k++)
            run_pairs += row[k].n;
        if (!GROW(all, acap, done + run_pairs + 1)) {
            rc = flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
            break;
        }
        ch_sum *acc = all + done, *next = tmp;
        size_t na = 0;
        for (k = i; k < nrow && row[k].run == row[i].run; k++) {
            na = merge_row(acc, na, &row[k], next);
            ch_sum *t = acc;
            acc = next;
            next = t;
        }
        if (na && acc != all + done)
            memcpy(all + done, acc, na * sizeof *acc);
        done += na;
    }
    free(row);
    free(tmp);
    if (rc < 0) {
        free(all);
        return -1;
    }
    *out = all;
    *n = done;
    return 0;
}

/* The windows' sums (the pairs' answer, rows of PAIR_ROW bytes) and the rollups' (Q_ROLLED's,
 * when asked) into one array *out of *n rows: each comes sorted by (run, id), and so are the
 * rows, merged (ch_profile sorts what a crafted answer leaves unsorted). */
static int all_sums(store *s, ch_buf *pairs, const ch_buf *rolled, ch_sum **out, size_t *n,
                    flame_err *err)
{
    _Static_assert(sizeof(ch_sum) == PAIR_ROW, "a sum is a row of the pairs' answer");
    if (pairs->n % PAIR_ROW)
        return store_fail(err, STORE_ERR_SERVER, "%s: unreadable answer (%zu bytes of pairs)",
                          s->name, pairs->n);
    ch_sum *r = NULL;
    size_t nw = pairs->n / PAIR_ROW, nr = 0;
    if (rolled_sums(s, rolled, &r, &nr, err) < 0)
        return -1;
    if (nr == 0) { /* the windows' alone: read where they arrived */
        ch_sum *w = (ch_sum *)pairs->p;
        for (size_t i = 0; i < nw; i++) /* no-ops on a little-endian CPU */
            w[i] = (ch_sum){le64toh(w[i].run), le32toh(w[i].id), le64toh(w[i].count)};
        *out = w;
        *n = nw;
        pairs->p = NULL;
        pairs->n = 0;
        free(r);
        return 0;
    }
    ch_sum *all = malloc((nw + nr) * sizeof *all), *o = all;
    if (!all) {
        free(r);
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    }
    const ch_sum *w = (const ch_sum *)pairs->p;
    size_t i = 0, j = 0;
    while (i < nw || j < nr) {
        ch_sum x = {0};
        if (i < nw) /* no-ops on a little-endian CPU */
            x = (ch_sum){le64toh(w[i].run), le32toh(w[i].id), le64toh(w[i].count)};
        int c = i == nw ? 1 : j == nr ? -1 : by_run(&x, &r[j]);
        if (c == 0) /* in both: one row, as the server's sums are (else ch_profile sorts) */
            x.count += r[j++].count;
        *o++ = c <= 0 ? (i++, x) : r[j++];
    }
    free(r);
    *out = all;
    *n = (size_t)(o - all);
    return 0;
}

int ch_profile(store *s, const store_query *q, profile *out, store_info *info, flame_err *err)
{
    if (ch_ready(s, err) < 0)
        return -1;
    /* the window totals, the windows' pairs summed by the server per (run, id) (a day of
     * windows is one answer of its distinct stacks), the rollups of the range's whole hours
     * and blocks where they are valid (summed by this client, or by the server with the
     * windows: client_sums), and the runs' dictionaries: asked at once, so the server works
     * on them together and this client decodes the dictionaries while it waits */
    char *sql[Q_N] = {0};
    ch_buf b[Q_N] = {{0}};
    ch_asked a = {.s = s, .q = q, .sql = sql, .runs = {.ahead = ch_of(s)->decode_ahead}};
    ch_runs *runs = &a.runs;
    /* a range with whole 6-hour blocks: which rollups hold which hours (the cover), asked
     * with the others (one scan of the windows' labels); the pairs' queries, which name them
     * instead of computing each set of fingerprints again (a day of 10 JVMs: its pairs 0.2 s
     * of the server instead of 0.6-1.6), are asked as soon as it is in. A range of whole
     * hours only keeps the one query: the round trip costs there what the second fingerprint
     * scan does (3-h ranges of 10 JVMs: 0.80-0.89 s against 0.76-0.86) */
    int rc = 0;
    if (sql_write(&sql[Q_COVER], cover_sql, s, q, NULL) < 0 ||
        sql_write(&sql[Q_TOTALS], totals_sql, s, q, NULL) < 0 ||
        sql_write(&sql[Q_DICTS], dicts_sql, s, q, NULL) < 0 ||
        (!sql[Q_COVER] && (sql_write(&sql[Q_PAIRS], pairs_sql, s, q, NULL) < 0 ||
                           sql_write(&sql[Q_ROLLED], rolled_sql, s, q, NULL) < 0)))
        rc = flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    if (rc == 0)
        rc = ch_post_all(s, sql, b, Q_N, 1u << Q_PAIRS | 1u << Q_ROLLED, got_answer, decode_ahead,
                         &a, err);
    if (rc == 0 && !sql[Q_PAIRS]) /* the cover's answer wrote no pairs' query: never empty */
        rc = store_fail(err, STORE_ERR_SERVER, "%s: unreadable answer (no pairs asked)", s->name);
    size_t pos = 0;
    char *f[6];
    size_t l[6];
    if (rc == 0 && (rc = ch_next_row(&b[Q_TOTALS], &pos, f, l, 6)) == 1 && ch_int(f[0]) > 0) {
        store_info_add(info, (uint64_t)ch_int(f[0]), (uint64_t)ch_int(f[1]), ch_int(f[4]),
                       ch_int(f[5]), ch_int(f[2]), ch_int(f[3]));
    }
    ch_sum *sums = NULL; /* the windows' and the rollups' sums, in one array */
    size_t n = 0;
    if (rc >= 0)
        rc = all_sums(s, &b[Q_PAIRS], &b[Q_ROLLED], &sums, &n, err);
    /* each run's sums named through its dictionary (a run with none: counted as missing) */
    if (rc >= 0 && n) {
        size_t sorted = 1;
        while (sorted < n && by_run(&sums[sorted - 1], &sums[sorted]) < 0)
            sorted++;
        if (sorted < n)
            qsort(sums, n, sizeof *sums, by_run);
        dict none, spare; /* spare: the last named run's arrays, for the next to decode into */
        dict_init(&none);
        dict_init(&spare);
        char *text = NULL;
        size_t tcap = 0, r = 0;
        for (size_t i = 0; rc >= 0 && i < n;) {
            size_t k = i;
            while (k < n && sums[k].run == sums[i].run)
                k++;
            while (r < runs->n && runs->r[r].run < sums[i].run) /* runs with no pairs in range */
                r++;
            ch_run *run = r < runs->n && runs->r[r].run == sums[i].run ? &runs->r[r] : NULL;
            if (run && !run->decoded) {
                run->d = spare;
                dict_init(&spare);
                rc = decode_run(runs, run, err);
            }
            if (rc >= 0)
                rc = name_run(s, run ? &run->d : &none, sums + i, k - i, out, info, &text, &tcap,
                              err);
            if (run) { /* named: its memory is the next run's */
                dict_free(&spare);
                dict_empty(&run->d);
                spare = run->d;
                dict_init(&run->d);
            }
            i = k;
        }
        dict_free(&spare);
        free(text);
    }
    free(sums);
    for (size_t i = 0; i < runs->n; i++)
        dict_free(&runs->r[i].d);
    free(runs->r);
    free(runs->c);
    ch_cover_free(&a.cv);
    for (int i = 0; i < Q_N; i++) {
        free(sql[i]);
        free(b[i].p);
    }
    if (rc < 0 && !err->code)
        return store_fail(err, STORE_ERR_SERVER, "%s: unreadable answer", s->name);
    return rc < 0 ? -1 : 0;
}

/* The numbers of a TabSeparated array ("[1,-2,3]"; of a UInt64 one: uns, read as such into the
 * int64_t's bits) into v[0..max): how many, or -1 when it is not one or holds more. */
static long ch_int_array(const char *f, int64_t *v, size_t max, bool uns)
{
    if (*f++ != '[')
        return -1;
    size_t n = 0;
    while (*f != ']') {
        char *e;
        errno = 0;
        if (!(*f >= '0' && *f <= '9') && !(!uns && *f == '-' && f[1] >= '0' && f[1] <= '9'))
            return -1;
        int64_t x = uns ? (int64_t)strtoull(f, &e, 10) : (int64_t)strtoll(f, &e, 10);
        if (errno || n == max || (*e != ',' && *e != ']') || (*e == ',' && e[1] == ']'))
            return -1;
        v[n++] = x;
        f = *e == ',' ? e + 1 : e;
    }
    return !f[1] ? (long)n : -1;
}

static int by_start(const void *a, const void *b)
{
    const store_point *x = a, *y = b;
    return x->start_ms != y->start_ms ? (x->start_ms > y->start_ms) - (x->start_ms < y->start_ms)
                                      : (x->end_ms > y->end_ms) - (x->end_ms < y->end_ms);
}

/* A bucket's windows that may hide a gap, or of several rates, as a point each in time order,
 * from the row's arrays f[12..15] (starts, ends, samples, rates). 0, -1 out of memory, -2
 * unreadable. */
static int ch_timeline_each(store_series_list *out, char **f, int64_t *buf, size_t max)
{
    int64_t *st = buf, *en = buf + max, *sa = buf + 2 * max, *fr = buf + 3 * max;
    long n = ch_int_array(f[12], st, max, false);
    if (n < 1 || ch_int_array(f[13], en, max, false) != n ||
        ch_int_array(f[14], sa, max, true) != n || ch_int_array(f[15], fr, max, false) != n)
        return -2;
    store_point *p = malloc((size_t)n * sizeof *p);
    if (!p)
        return -1;
    for (long i = 0; i < n; i++)
        p[i] = (store_point){
            .start_ms = st[i], .end_ms = en[i], .samples = (uint64_t)sa[i], .frequency = fr[i]};
    qsort(p, (size_t)n, sizeof *p, by_start);
    int rc = 0;
    for (long i = 0; rc == 0 && i < n; i++)
        rc = store_timeline_add(out, f[0], f[1], f[2], ch_int(f[3]), &p[i]);
    free(p);
    return rc;
}

/* At most this many windows of one series in one bucket are read one by one, when they may hide
 * a gap (the page's buckets are minutes to hours: 900 1-s windows in the 15 min of a week's) */
#define CH_TL_EACH_MAX (1 << 20)

int ch_timeline(store *s, const store_query *q, store_series_list *out, flame_err *err)
{
    if (ch_ready(s, err) < 0)
        return -1;
    ch_buf b = {0};
    size_t pos = 0;
    char *f[16];
    size_t l[16];
    int rc;
    int64_t *each = NULL; /* 4 arrays of neach */
    size_t neach = 0;
    if (q->bucket_ms <= 0) {
        rc = ch_select(s, q, false,
                       "SELECT host, container_id, any(container_name), jvm_pid, start_ms,"
                       " end_ms, sum(samples), max(frequency) FROM ",
                       "host, container_id, container_name, jvm_pid, start_ms, end_ms, samples,"
                       " frequency",
                       " GROUP BY host, container_id, jvm_pid, start_ms, end_ms"
                       " ORDER BY host, container_id, jvm_pid, start_ms FORMAT TabSeparated",
                       &b, err);
        while (rc >= 0 && (rc = ch_next_row(&b, &pos, f, l, 8)) == 1) {
            store_point pt = {.start_ms = ch_int(f[4]),
                              .end_ms = ch_int(f[5]),
                              .samples = (uint64_t)strtoull(f[6], NULL, 10),
                              .frequency = ch_int(f[7])};
            if (store_timeline_add(out, f[0], f[1], f[2], ch_int(f[3]), &pt) < 0)
                rc = flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
        }
        goto out;
    }
    /* A day of 10 JVMs is 86,400 windows: their rows (with their labels) cost the server, the
     * wire and this client ~0.5 s on 2 cores, while the page's first graph is being merged.
     * The server groups them instead, by series and bucket: the windows that lie whole in one
     * bucket and are not compacted ones (mergeable, m) become one row, ~1 a bucket; the others
     * keep a row each (g, e = their times). The row's end and last length are those of its
     * last window by start, as the per-window path sees them. A bucket where one window
     * starts more than STORE_MERGE_PAUSE_MS after the one before it ends (in start order, as
     * the gap rule reads them: overlapping windows cannot hide a pause) may hide a gap, and
     * one of several rates has no one rate: its windows come along as arrays, read one by
     * one. The inner grouping is the per-window query's (windows of the same times added). A
     * series is grouped by a hash of its labels (strings carried through the groupings cost
     * 18.16 most of the time) and its labels joined once a series: the first window's name,
     * as above. */
    char *text = NULL;
    size_t len = 0;
    FILE *qf = open_memstream(&text, &len);
    if (!qf)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    long long bk = (long long)q->bucket_ms;
    store_query one = *q;
    one.type = store_type_of(q->type);
    fprintf(qf,
            "SELECT lh, lc, ln, jvm_pid, s0, e1, sn, f0, nw, cov, last, p, a1, a2, a3, a4 FROM"
            " (SELECT k, jvm_pid, min(s) AS s0, argMax(e, s) AS e1, sum(n) AS sn, min(f) AS f0,"
            " count() AS nw, sum(e - s) AS cov, argMax(e - s, s) AS last, arrayReduce('max',"
            " arrayMap((x, y) -> x - y, arrayPopFront(arraySort(groupArray(s))),"
            " arrayPopBack(arraySort((x, y) -> y, groupArray(e), groupArray(s))))) > %d OR"
            " min(f) != max(f) AS p, if(p, groupArray(s), emptyArrayInt64()) AS a1, if(p,"
            " groupArray(e), emptyArrayInt64()) AS a2, if(p, groupArray(n), emptyArrayUInt64())"
            " AS a3, if(p, groupArray(f), emptyArrayInt64()) AS a4 FROM (SELECT k, jvm_pid,"
            " start_ms AS s, end_ms AS e, sum(samples) AS n, max(frequency) AS f, s >= 0 AND e >"
            " s AND e - s <= %d AND intDiv(s, %lld) = intDiv(e - 1, %lld) AS m, if(m, intDiv(s,"
            " %lld), s) AS g FROM ",
            STORE_MERGE_PAUSE_MS, STORE_MERGE_WINDOW_MS, bk, bk, bk);
    ch_windows(qf,
               "cityHash64(host, container_id) AS k, jvm_pid, start_ms, end_ms, samples,"
               " frequency",
               &one, ch_of(s)->has_type);
    fputs(" GROUP BY k, jvm_pid, start_ms, end_ms) GROUP BY k, jvm_pid, m, g, if(m, 0, e))"
          " ANY LEFT JOIN (SELECT cityHash64(host, container_id) AS k, jvm_pid, any(host) AS lh,"
          " any(container_id) AS lc, argMin(container_name, start_ms) AS ln FROM windows",
          qf);
    ch_where(qf, &one, ch_of(s)->has_type);
    fputs(" GROUP BY k, jvm_pid) USING (k, jvm_pid) ORDER BY lh, lc, jvm_pid, s0"
          " FORMAT TabSeparated",
          qf);
    rc = ch_post_file(s, qf, &text, &b, err);
    while (rc >= 0 && (rc = ch_next_row(&b, &pos, f, l, 16)) == 1) {
        int64_t nw = ch_int(f[8]);
        store_point pt = {.start_ms = ch_int(f[4]),
                          .end_ms = ch_int(f[5]),
                          .samples = (uint64_t)strtoull(f[6], NULL, 10),
                          .frequency = ch_int(f[7])};
        if (nw > 1) {
            pt.windows = nw > UINT32_MAX ? UINT32_MAX : (uint32_t)nw;
            pt.covered_ms = ch_int(f[9]);
            pt.last_ms = ch_int(f[10]);
        }
        if (!strcmp(f[11], "0")) {
            if (store_timeline_add(out, f[0], f[1], f[2], ch_int(f[3]), &pt) < 0)
                rc = flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
            continue;
        }
        if (nw < 1 || nw > CH_TL_EACH_MAX) {
            rc = flame_fail(err, FLAME_EXIT_ERROR,
                            "%s: more than %d windows of one JVM in one bucket of the timeline:"
                            " ask for more buckets (a shorter range or a larger width)",
                            s->name, CH_TL_EACH_MAX);
            break;
        }
        if ((size_t)nw > neach) {
            int64_t *ne = realloc(each, 4 * (size_t)nw * sizeof *ne);
            if (!ne) {
                rc = flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
                break;
            }
            each = ne;
            neach = (size_t)nw;
        }
        int r = ch_timeline_each(out, f, each, (size_t)nw);
        if (r == -1)
            rc = flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
        else if (r < 0)
            rc = -1;
    }
out:
    free(each);
    free(b.p);
    if (rc < 0 && !err->code)
        return store_fail(err, STORE_ERR_SERVER, "%s: unreadable answer", s->name);
    return rc < 0 ? -1 : 0;
}

int ch_disk(store *s, uint64_t *disk, flame_err *err)
{
    int64_t n = 0;
    int rc =
        ch_one(s,
               "SELECT sum(bytes_on_disk) FROM system.parts WHERE active AND"
               " database = currentDatabase() AND table IN ('meta', 'dict', 'windows', 'rollups',"
               " 'rollups_6h')"
               " FORMAT TabSeparated",
               &n, err);
    *disk = (uint64_t)n;
    return rc;
}

/* What ls counts as a window's own: a byte a pair (ids, counts and their high parts compress
 * to about that) and a few for its row. */
#define CH_WEIGHT "sum(length(ids)) + 16 * count()"

int ch_list(store *s, const store_query *q, store_listing *out, flame_err *err)
{
    if (ch_ready(s, err) < 0)
        return -1;
    store_query all = {.since_ms = 0, .until_ms = INT64_MAX};
    store_query mine = {.container = q ? q->container : NULL,
                        .host = q ? q->host : NULL,
                        .jvm_pid = q ? q->jvm_pid : 0,
                        .type = q ? q->type : NULL,
                        .since_ms = 0,
                        .until_ms = INT64_MAX};
    /* the sizes read every window's arrays (18.16's length() reads them whole): 170 MiB for a
     * day of 10 containers, which serve's page does not show */
    bool sizes = !(q && q->no_sizes);
    ch_buf b = {0};
    size_t pos = 0;
    char *f[12];
    size_t l[12];
    uint64_t disk = 0;
    int64_t total = 0, stacks = 0;
    int rc = sizes ? ch_disk(s, &disk, err) : 0;
    if (rc == 0 && sizes)
        rc = ch_select(s, &all, true, "SELECT " CH_WEIGHT " FROM ", "ids", " FORMAT TabSeparated",
                       &b, err);
    if (rc == 0 && sizes && ch_next_row(&b, &pos, f, l, 1) == 1)
        total = ch_int(f[0]);
    store_share share = {.total = (uint64_t)total, .disk = disk};
    char head[200], cols[200];
    snprintf(head, sizeof head,
             "SELECT host, container_id, container_name, image, min(start_ms), max(end_ms),"
             " count(), sum(samples), %s, jvm_pid, jvm_version, type FROM ",
             sizes ? CH_WEIGHT : "0");
    snprintf(cols, sizeof cols,
             "host, container_id, container_name, image, start_ms, end_ms, samples, %sjvm_pid,"
             " jvm_version, %s",
             sizes ? "ids, " : "", ch_of(s)->has_type ? "type" : "'cpu' AS type");
    if (rc == 0)
        rc = ch_select(s, &mine, true, head, cols,
                       " GROUP BY host, container_id, container_name, image, jvm_pid, jvm_version,"
                       " type ORDER BY max(end_ms) DESC, jvm_pid, type FORMAT TabSeparated",
                       &b, err);
    for (pos = 0; rc >= 0 && (rc = ch_next_row(&b, &pos, f, l, 12)) == 1;) {
        store_entry e = {f[0],
                         f[1],
                         f[2],
                         f[3],
                         ch_int(f[4]),
                         ch_int(f[5]),
                         (uint64_t)ch_int(f[6]),
                         (uint64_t)strtoull(f[7], NULL, 10),
                         store_share_of(&share, (uint64_t)ch_int(f[8])),
                         ch_int(f[9]),
                         f[10],
                         f[11]};
        if (store_listing_add(out, &e) < 0)
            rc = flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    }
    /* stacks: each run's, once a (run, seq) */
    if (rc == 0 && sizes)
        rc = ch_one(s,
                    "SELECT sum(n) FROM (SELECT run, seq, any(stacks) AS n FROM dict GROUP BY"
                    " run, seq) FORMAT TabSeparated",
                    &stacks, err);
    free(b.p);
    out->stacks = (uint64_t)stacks;
    out->disk_bytes = disk;
    out->sizes_unknown |= ch_of(s)->distributed || !sizes;
    if (rc < 0 && !err->code)
        return store_fail(err, STORE_ERR_SERVER, "%s: unreadable answer", s->name);
    return rc < 0 ? -1 : 0;
}

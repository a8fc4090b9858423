/* Retention and compaction of a ClickHouse store, by day partitions (windows is partitioned by
 * the day of start_ms): a day past the retention is dropped whole (DROP PARTITION: instant); a
 * finished day with windows to merge is rebuilt into a scratch table, buckets summed by the
 * server, each window counted once (a window sent twice is stored once again), and swapped in
 * atomically (REPLACE PARTITION), so a reader sees the old day or the new one, never both. The
 * day being written is left alone: a rebuild would lose what arrives during it. Then the
 * dictionaries of the runs no window names any more are deleted. Works on MergeTree tables; a
 * Distributed one is compacted shard by shard. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "store/clickhouse_impl.h"

/* A day is rebuilt only once its last window is this old (late windows from a spool). */
#define QUIET_MS (3600LL * 1000)
#define DAY_EXPR "toYYYYMMDD(toDateTime(intDiv(start_ms, 1000)))"

/* greatest(level, the level a row of that start reaches by now): the coarsest level whose
 * bucket lies wholly before that level's age */
static void level_expr(FILE *f, const store_policy *pol, int64_t now)
{
    fputs("greatest(level, multiIf(", f);
    for (int i = STORE_LEVELS - 1; i >= 0; i--) {
        const store_level *l = &pol->level[i];
        int64_t cut = l->bucket_ms > 0 ? (now - l->age_ms) / l->bucket_ms * l->bucket_ms : 0;
        fprintf(f, "start_ms < %lld, %d, ", (long long)cut, l->bucket_ms > 0 ? i + 1 : 0);
    }
    fputs("0))", f);
}

/* the start of a row's bucket at level lv */
static void bucket_expr(FILE *f, const store_policy *pol)
{
    fputs("multiIf(", f);
    for (int i = 0; i < STORE_LEVELS; i++)
        fprintf(f, "lv = %d, intDiv(start_ms, %lld) * %lld, ", i + 1,
                (long long)(pol->level[i].bucket_ms > 0 ? pol->level[i].bucket_ms : 1),
                (long long)(pol->level[i].bucket_ms > 0 ? pol->level[i].bucket_ms : 1));
    fputs("start_ms)", f);
}

typedef struct day {
    int64_t day, last_end, windows, to_merge, first_start;
} day;

static int list_days(store *s, const store_policy *pol, int64_t now, day **out, size_t *n,
                     flame_err *err)
{
    char *text = NULL;
    size_t len = 0, pos = 0, cap = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    fputs("SELECT " DAY_EXPR " AS d, max(end_ms), count(), countIf(level < ", f);
    level_expr(f, pol, now);
    fputs("), min(start_ms) FROM windows GROUP BY d ORDER BY d FORMAT TabSeparated", f);
    ch_buf b = {0};
    char *fl[5];
    size_t l[5];
    int rc = ch_post_file(s, f, &text, &b, err);
    while (rc >= 0 && (rc = ch_next_row(&b, &pos, fl, l, 5)) == 1) {
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            day *nd = realloc(*out, cap * sizeof *nd);
            if (!nd) {
                rc = flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
                break;
            }
            *out = nd;
        }
        (*out)[(*n)++] =
            (day){ch_int(fl[0]), ch_int(fl[1]), ch_int(fl[2]), ch_int(fl[3]), ch_int(fl[4])};
    }
    free(b.p);
    if (rc < 0 && !err->code)
        return store_fail(err, STORE_ERR_SERVER, "%s: unreadable answer", s->name);
    return rc < 0 ? -1 : 0;
}

/* Run one statement, printf-style. */
static int run(store *s, flame_err *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int run(store *s, flame_err *err, const char *fmt, ...)
{
    _cleanup_free_ char *sql = NULL;
    va_list ap;
    va_start(ap, fmt);
    int r = vasprintf(&sql, fmt, ap);
    va_end(ap);
    if (r < 0) {
        sql = NULL;
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    }
    return ch_post(s, sql, NULL, 0, NULL, err);
}

/* The day's windows (each uid once), bucketed and summed, into the scratch table: per run (ids
 * mean something within their run only), the pairs decoded, added by sumMap (sorted by id),
 * encoded again. A window alone in its bucket keeps its uid; a bucket gets one made of its key. */
static int fill_scratch(store *s, const char *tmp, const day *d, const store_policy *pol,
                        int64_t now, flame_err *err)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    fprintf(
        f,
        "INSERT INTO %s (" CH_WINDOW_COLS ") SELECT host, container_id, cn, im, jvm_pid, jv,"
        " s, e, fr, sa, lv, run, " CH_SPLIT(
            "g",
            "m.2") ", u, type FROM (SELECT *,"
                   " arrayPopFront(arrayDifference(arrayPushFront(m.1, 0))) AS g FROM (SELECT "
                   "host, container_id,"
                   " any(container_name) AS cn, any(image) AS im, jvm_pid, any(jvm_version) AS jv,"
                   " min(start_ms) AS s, max(end_ms) AS e, max(frequency) AS fr, sum(samples) AS "
                   "sa, lv,"
                   " run, type, sumMap(i, n) AS m, if(count() = 1, any(uid), cityHash64(host,"
                   " container_id, jvm_pid, run, lv, b, type)) AS u FROM (SELECT host,"
                   " container_id, container_name, image, jvm_pid, jvm_version, start_ms, end_ms,"
                   " frequency, samples, run, uid, type, " CH_IDS " AS i, " CH_COUNTS " AS n, ",
        tmp);
    level_expr(f, pol, now);
    fputs(" AS lv, ", f);
    bucket_expr(f, pol);
    fprintf(f,
            " AS b FROM (SELECT * FROM windows WHERE " DAY_EXPR " = %lld LIMIT 1 BY " CH_UID_KEY
            "))"
            " GROUP BY host, container_id, jvm_pid, run, type, lv, b))",
            (long long)d->day);
    return ch_post_file(s, f, &text, NULL, err);
}

/* What the day's rows are, in a line: their number and the sum of a hash of each (a background
 * merge of parts changes neither; a window added, by a spool drained late or a host whose clock
 * is off, or removed changes both). */
static int day_print(store *s, const day *d, char *out, size_t cap, flame_err *err)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    fprintf(f,
            "SELECT count(), sum(cityHash64(host, container_id, jvm_pid, start_ms, end_ms, level,"
            " run, uid, samples)) FROM windows WHERE " DAY_EXPR " = %lld FORMAT TabSeparated",
            (long long)d->day);
    ch_buf b = {0};
    int rc = ch_post_file(s, f, &text, &b, err);
    if (rc == 0)
        snprintf(out, cap, "%.*s", (int)(b.n < cap ? b.n : cap - 1), b.p ? b.p : "");
    free(b.p);
    return rc;
}

/* Rebuild one day into a scratch table and swap it in. 1 (nothing done) when windows arrived
 * in the day meanwhile: REPLACE PARTITION would have dropped them; a later run merges it. The
 * check is made right before the swap: what lands in the one request between them is still
 * lost (NEEDSWORK: each window's uid would let compaction find such windows after the swap). */
static int rebuild_day(store *s, const day *d, const store_policy *pol, int64_t now,
                       store_compact_stats *st, flame_err *err)
{
    char tmp[80], before[128], after[128];
    uint64_t r = 0;
    /* a random name: two hosts compacting the same day never drop each other's table */
    if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r)
        r = (uint64_t)getpid() * 0x9e3779b97f4a7c15ull ^ (uint64_t)now;
    snprintf(tmp, sizeof tmp, "samples_compact_%lld_%016llx", (long long)d->day,
             (unsigned long long)r);
    int rc = day_print(s, d, before, sizeof before, err);
    if (rc == 0)
        rc = run(s, err, "CREATE TABLE %s AS windows", tmp);
    if (rc == 0)
        rc = fill_scratch(s, tmp, d, pol, now, err);
    if (rc == 0)
        rc = day_print(s, d, after, sizeof after, err);
    bool changed = rc == 0 && strcmp(before, after) != 0;
    if (rc == 0 && !changed)
        rc = run(s, err, "ALTER TABLE windows REPLACE PARTITION %lld FROM %s", (long long)d->day,
                 tmp);
    flame_err quiet = FLAME_ERR_INIT;
    run(s, &quiet, "DROP TABLE IF EXISTS %s", tmp);
    if (rc < 0)
        return -1;
    if (changed) {
        st->days_skipped++;
        return 1;
    }
    st->merged += (uint64_t)d->windows;
    return 0;
}

/* The count a "SELECT count() ..." query built in f answers (f closed, text freed) */
static int count_of(store *s, FILE *f, char **text, int64_t *n, flame_err *err)
{
    ch_buf b = {0};
    int rc = ch_post_file(s, f, text, &b, err);
    *n = rc == 0 ? ch_int(b.p ? b.p : "0") : 0;
    free(b.p);
    return rc;
}

/* The rollups of hours [h0, h1) (ended) that have none matching their windows now (never built,
 * or made stale by a late window or the day's rebuild): how many, then built in one INSERT by
 * the server, the windows' pairs summed per key as the day's rebuild sums its buckets. A day's
 * hours at a time: the server holds one day's sums. */
static int build_rollups(store *s, int64_t h0, int64_t h1, int64_t now, store_compact_stats *st,
                         flame_err *err)
{
    if (h0 >= h1)
        return 0;
    store_query all = {.since_ms = h0 * 3600000, .until_ms = h1 * 3600000};
    /* the keys whose windows (labels and uids only) no rollup matches */
    char *keys = NULL;
    size_t klen = 0;
    FILE *g = open_memstream(&keys, &klen);
    if (!g)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    fputs("(SELECT " CH_ROLLUP_KEY " FROM ", g);
    ch_fingerprints(g, &all, h0, h1, 1);
    fputs(" WHERE (" CH_ROLLUP_KEY ", nw, fp) NOT IN (SELECT " CH_ROLLUP_KEY
          ", nw, fp FROM rollups WHERE hour >= ",
          g);
    fprintf(g, "%lld AND hour < %lld))", (long long)h0, (long long)h1);
    if ((ferror(g) | fclose(g)) != 0) {
        free(keys);
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    }
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) {
        free(keys);
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    }
    fprintf(f, "SELECT count() FROM %s FORMAT TabSeparated", keys);
    int64_t n = 0;
    int rc = count_of(s, f, &text, &n, err);
    if (rc < 0 || n == 0) {
        free(keys);
        return rc;
    }
    f = open_memstream(&text, &len);
    if (!f) {
        free(keys);
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    }
    fprintf(
        f,
        "INSERT INTO rollups (host, container_id, container_name, image, jvm_pid, jvm_version,"
        " type, run, hour, start_ms, end_ms, samples, nw, fp, ids, ids_hi, counts, counts_hi,"
        " at) SELECT host, container_id, cn, im, jvm_pid, jv, type, run, hour, s, e, sa, nw,"
        " fp, " CH_SPLIT(
            "g",
            "m.2") ", %lld FROM (SELECT *,"
                   " arrayPopFront(arrayDifference(arrayPushFront(m.1, 0))) AS g FROM (SELECT host,"
                   " container_id, any(container_name) AS cn, any(image) AS im, jvm_pid,"
                   " any(jvm_version) AS jv, type, run, " CH_HOUR " AS hour, min(start_ms) AS s,"
                   " max(end_ms) AS e, sum(samples) AS sa, count() AS nw, sum(cityHash64(u)) AS fp,"
                   " sumMap(i, n) AS m FROM (SELECT *, " CH_IDS " AS i, " CH_COUNTS
                   " AS n, " CH_UID_KEY
                   " AS u FROM windows WHERE start_ms >= %lld AND start_ms < %lld AND (host,"
                   " container_id, jvm_pid, type, run, " CH_HOUR ") IN %s LIMIT 1 BY u)"
                   " GROUP BY host, container_id, jvm_pid, type, run, hour))",
        (long long)now, (long long)(h0 * 3600000), (long long)(h1 * 3600000), keys);
    free(keys);
    rc = ch_post_file(s, f, &text, NULL, err);
    if (rc == 0)
        st->rollups += (uint64_t)n;
    return rc;
}

/* The 6-hour blocks' sums of the valid hour rollups of hours [b0, b1) (whole blocks), whose
 * hour rollups hold every window of the block (their fingerprints add up to the block's) and
 * that have no 6-hour rollup matching them: "SELECT * FROM (SELECT key, nw, fp[, the rollup's
 * columns] FROM (...) GROUP BY key) WHERE ..." into f; with pairs, the rows to insert. */
static void blocks_sql(FILE *f, int64_t b0, int64_t b1, bool pairs)
{
    store_query all = {.since_ms = b0 * 3600000, .until_ms = b1 * 3600000};
    /* aliases apart from the columns: ClickHouse puts an alias into the expressions that name
     * it (sum(nw) AS nw would sum itself) */
    fputs("SELECT * FROM (SELECT host, container_id, jvm_pid, type, run, blk, sum(nw) AS bnw,"
          " sum(fp) AS bfp",
          f);
    if (pairs)
        fputs(", any(container_name) AS cn, any(image) AS im, any(jvm_version) AS jv,"
              " min(start_ms) AS s, max(end_ms) AS e, sum(samples) AS sa, sumMap(i, n) AS m",
              f);
    fprintf(f,
            " FROM (SELECT *, toInt64(intDiv(hour, %d) * %d) AS blk%s FROM rollups WHERE hour >="
            " %lld AND hour < %lld AND (" CH_ROLLUP_KEY ", nw, fp) IN ",
            CH_BLOCK_HOURS, CH_BLOCK_HOURS, pairs ? ", " CH_IDS " AS i, " CH_COUNTS " AS n" : "",
            (long long)b0, (long long)b1);
    ch_fingerprints(f, &all, b0, b1, 1);
    /* the conditions on the sums outside: 18.16 does not see a subquery's own names in HAVING */
    fputs(" LIMIT 1 BY " CH_ROLLUP_KEY ") GROUP BY host, container_id, jvm_pid, type, run, blk)"
          " WHERE (host, container_id, jvm_pid, type, run, blk, bnw, bfp) IN ",
          f);
    ch_fingerprints(f, &all, b0, b1, CH_BLOCK_HOURS);
    fprintf(
        f,
        " AND (host, container_id, jvm_pid, type, run, blk, bnw, bfp) NOT IN (SELECT " CH_ROLLUP_KEY
        ", nw, fp FROM rollups_6h WHERE hour >= %lld AND hour < %lld)",
        (long long)b0, (long long)b1);
}

/* The 6-hour rollups of the ended blocks in hours [h0, h1) that have none matching their
 * windows now, summed by the server from the blocks' hour rollups (docs/STORE.md, "6-hour
 * rollups"): after the hour rollups, a day's blocks at a time. A block whose hours are not all
 * rolled up yet waits for the next compaction. */
static int build_blocks(store *s, int64_t h0, int64_t h1, int64_t now, store_compact_stats *st,
                        flame_err *err)
{
    int64_t b0 = h0 / CH_BLOCK_HOURS * CH_BLOCK_HOURS, b1 = h1 / CH_BLOCK_HOURS * CH_BLOCK_HOURS;
    if (b0 >= b1)
        return 0;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    fputs("SELECT count() FROM (", f);
    blocks_sql(f, b0, b1, false);
    fputs(") FORMAT TabSeparated", f);
    int64_t n = 0;
    int rc = count_of(s, f, &text, &n, err);
    if (rc < 0 || n == 0)
        return rc;
    f = open_memstream(&text, &len);
    if (!f)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    fputs("INSERT INTO rollups_6h (host, container_id, container_name, image, jvm_pid,"
          " jvm_version, type, run, hour, start_ms, end_ms, samples, nw, fp, ids, ids_hi, counts,"
          " counts_hi, at) SELECT host, container_id, cn, im, jvm_pid, jv, type, run, blk, s, e,"
          " sa, bnw, bfp, " CH_SPLIT("g", "m.2") ", ",
          f);
    fprintf(f,
            "%lld FROM (SELECT *, arrayPopFront(arrayDifference(arrayPushFront(m.1, 0))) AS g"
            " FROM (",
            (long long)now);
    blocks_sql(f, b0, b1, true);
    fputs("))", f);
    rc = ch_post_file(s, f, &text, NULL, err);
    if (rc == 0)
        st->rollups6 += (uint64_t)n;
    return rc;
}

int ch_compact(store *s, int64_t now_ms, const store_policy *pol, store_compact_stats *st,
               flame_err *err)
{
    if (ch_ready(s, err) < 0)
        return -1;
    if (ch_of(s)->distributed)
        return store_fail(err, STORE_ERR_SERVER,
                          "%s: windows is a Distributed table: prune each shard's own tables "
                          "(--store clickhouse://SHARD:8123/LOCAL_DB)",
                          s->name);
    _cleanup_free_ day *days = NULL;
    size_t n = 0;
    if (ch_disk(s, &st->disk_before, err) < 0 || list_days(s, pol, now_ms, &days, &n, err) < 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        const day *d = &days[i];
        if (pol->retain_ms > 0 && d->last_end <= now_ms - pol->retain_ms) {
            if (run(s, err, "ALTER TABLE windows DROP PARTITION %lld", (long long)d->day) < 0 ||
                (ch_of(s)->rollups &&
                 run(s, err, "ALTER TABLE rollups DROP PARTITION %lld", (long long)d->day) < 0) ||
                (ch_of(s)->rollups6 &&
                 run(s, err, "ALTER TABLE rollups_6h DROP PARTITION %lld", (long long)d->day) < 0))
                return -1;
            st->deleted += (uint64_t)d->windows;
        } else if (d->to_merge > 0 && d->last_end <= now_ms - QUIET_MS) {
            int r = rebuild_day(s, d, pol, now_ms, st, err);
            if (r < 0)
                return -1;
            if (r > 0)
                days[i].to_merge = 0; /* not rebuilt: its windows are not buckets */
        }
    }
    /* buckets written: the windows of the rebuilt days now */
    _cleanup_free_ day *after = NULL;
    size_t na = 0;
    if ((st->merged || ch_of(s)->rollups) && list_days(s, pol, now_ms, &after, &na, err) < 0)
        return -1;
    for (size_t i = 0; i < na; i++)
        for (size_t k = 0; k < n; k++)
            if (after[i].day == days[k].day && days[k].to_merge > 0 &&
                days[k].last_end <= now_ms - QUIET_MS)
                st->buckets += (uint64_t)after[i].windows;
    /* the rollups of the ended hours (docs/STORE.md, "Hour rollups"): after the rebuilds,
     * whose buckets they sum */
    int64_t ended = now_ms / 3600000;
    for (size_t i = 0; ch_of(s)->rollups && i < na; i++) {
        int64_t h0 = after[i].first_start / 3600000, h1 = after[i].last_end / 3600000 + 1;
        if (build_rollups(s, h0, h1 < ended ? h1 : ended, now_ms, st, err) < 0 ||
            (ch_of(s)->rollups6 &&
             build_blocks(s, h0, h1 < ended ? h1 : ended, now_ms, st, err) < 0))
            return -1;
    }
    /* the dictionaries no window names any more (a day after they were written: a put sends
     * its chunk before its windows) */
    if (st->deleted &&
        run(s, err,
            "ALTER TABLE dict DELETE WHERE at < %lld AND run NOT IN (SELECT run FROM windows)",
            (long long)(now_ms - 86400LL * 1000)) < 0)
        return -1;
    return ch_disk(s, &st->disk_after, err);
}

/* The ClickHouse backend of the profile store, over the HTTP interface (clickhouse_http.c): the
 * tables (created when missing, versioned in a meta table), storing windows as
 * rows, and the readers, whose sums and groupings the SERVER does (GROUP BY), so a day of windows
 * costs the client one answer of distinct stacks. SQL kept to what 18.16 and current servers
 * both accept. Tables: docs/STORE.md. */
#include <curl/curl.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "store/chtext.h"
#include "store/clickhouse_impl.h"

#define CH_SCHEMA_VERSION 2

/* The tables of schema 2, created when missing (meta first: an empty database gets the current
 * version). windows: one row per window (docs/STORE.md); its pairs as byte arrays, see
 * clickhouse_put.c. A granule of 64 rows (not 8192): a row holds a whole window, so an hour's
 * query reads its hour (not the day) and spreads over the server's threads (0.14 -> 0.05 s for
 * the pairs of an hour, docs/BENCHMARKS.md). */
#define CH_TABLES 4
static const char *const tables[CH_TABLES][2] = {
    {"meta", "CREATE TABLE IF NOT EXISTS meta (key String, value String) ENGINE = TinyLog"},
    {"stacks", "CREATE TABLE IF NOT EXISTS stacks (stack_hash UInt64, folded String)"
               " ENGINE = ReplacingMergeTree ORDER BY stack_hash"},
    {"stack_ids", "CREATE TABLE IF NOT EXISTS stack_ids (run UInt64, id UInt32, stack_hash UInt64)"
                  " ENGINE = ReplacingMergeTree ORDER BY (run, id)"},
    {"windows", "CREATE TABLE IF NOT EXISTS windows (host String, container_id String,"
                " container_name String, image String, jvm_pid Int64, jvm_version String,"
                " start_ms Int64, end_ms Int64, frequency Int64, samples UInt64, level UInt8,"
                " run UInt64, ids Array(UInt8), ids_hi Array(UInt16), counts Array(UInt8),"
                " counts_hi Array(UInt32)) ENGINE = MergeTree"
                " PARTITION BY toYYYYMMDD(toDateTime(intDiv(start_ms, 1000)))"
                " ORDER BY (intDiv(start_ms, 3600000), container_name, container_id, jvm_pid,"
                " start_ms) SETTINGS index_granularity = 64"},
};

static void ch_close(store *s)
{
    ch *c = ch_of(s);
    if (!c)
        return;
    curl_easy_cleanup(c->curl); /* NULL-safe */
    explicit_bzero(c->password, sizeof c->password);
    free(c->id_keys);
    free(c->id_vals);
    free(c);
}

/* ---- schema ---- */

/* One-column answer rows, for the checks below. */
static int ch_strings(store *s, const char *sql, ch_buf *out, flame_err *err)
{
    return ch_post(s, sql, NULL, 0, out, err);
}

/* The highest schema_version in meta (0 when none). */
static int read_version(store *s, int64_t *version, flame_err *err)
{
    ch_buf b = {0};
    size_t pos = 0;
    char *f[1];
    size_t l[1];
    int rc = ch_strings(
        s, "SELECT value FROM meta WHERE key = 'schema_version' FORMAT TabSeparated", &b, err);
    *version = 0;
    while (rc >= 0 && (rc = ch_next_row(&b, &pos, f, l, 1)) == 1)
        *version = ch_int(f[0]) > *version ? ch_int(f[0]) : *version;
    free(b.p);
    if (rc < 0 && !err->code)
        return store_fail(err, STORE_ERR_SERVER, "%s: unreadable answer", s->name);
    return rc < 0 ? -1 : 0;
}

static int set_version(store *s, flame_err *err)
{
    char ins[128];
    snprintf(ins, sizeof ins, "INSERT INTO meta VALUES ('schema_version', '%d')",
             CH_SCHEMA_VERSION);
    return ch_strings(s, ins, NULL, err);
}

/* Schema 1 -> 2: the rows of samples (one per window and stack, 64-bit stack hashes) become
 * windows rows, numbered per JVM by a run key derived from its labels (ids in hash order). The
 * old table is renamed first (of two processes migrating at once, one gets to do it) and kept
 * as samples_v1 (drop it once the store reads right); a migration cut short (the version still
 * 1, samples_v1 there, windows empty) is done again by the next open. */
static int migrate_1(store *s, const char *samples_engine, bool have_v1, flame_err *err)
{
    if (samples_engine && !strcmp(samples_engine, "Distributed"))
        return store_fail(err, STORE_ERR_SERVER,
                          "%s: a version 1 store over a Distributed samples table: migrate each "
                          "shard (open it once), then see docs/STORE.md (Versions)",
                          s->name);
    int rc = 0;
    if (samples_engine) {
        rc = ch_strings(s, "RENAME TABLE samples TO samples_v1", NULL, err);
        have_v1 = rc == 0;
    }
    if (rc == 0 && have_v1) {
        ch_buf b = {0};
        size_t pos = 0;
        char *f[1];
        size_t l[1];
        rc = ch_strings(s, "SELECT count() FROM windows FORMAT TabSeparated", &b, err);
        if (rc == 0 && (ch_next_row(&b, &pos, f, l, 1) != 1 || ch_int(f[0]) != 0))
            have_v1 = false; /* converted already (or unreadable: leave it be) */
        free(b.p);
    }
    if (rc == 0 && have_v1) {
#define RUN_EXPR "cityHash64(host, container_id, jvm_pid)"
        if (rc == 0)
            rc =
                ch_strings(s,
                           "INSERT INTO stack_ids SELECT run, id, stack_hash FROM (SELECT " RUN_EXPR
                           " AS run, arraySort(groupUniqArray(stack_hash)) AS hs FROM samples_v1"
                           " WHERE stack_hash != 0 GROUP BY run) ARRAY JOIN hs AS stack_hash,"
                           " arrayEnumerate(hs) AS id",
                           NULL, err);
        /* a window's pairs sorted by id, then as gaps, split like the put does */
        if (rc == 0)
            rc = ch_strings(
                s,
                "INSERT INTO windows (" CH_WINDOW_COLS ") SELECT host, container_id, cn, im,"
                " jvm_pid, jv, start_ms, end_ms, fr, sa, level, run, " CH_SPLIT(
                    "g",
                    "n") " FROM"
                         " (SELECT *, arrayPopFront(arrayDifference(arrayPushFront(i, 0))) AS g"
                         " FROM (SELECT host, container_id, any(container_name) AS cn, any(image) "
                         "AS im,"
                         " jvm_pid, any(jvm_version) AS jv, start_ms, end_ms, any(frequency) AS fr,"
                         " any(samples) AS sa, level, run, arraySort(v_x -> v_x.1, "
                         "groupArrayIf((id, count),"
                         " stack_hash != 0)) AS p, arrayMap(v_x -> v_x.1, p) AS i, arrayMap(v_x -> "
                         "v_x.2, p) AS n"
                         " FROM (SELECT *, " RUN_EXPR
                         " AS run FROM samples_v1) ANY LEFT JOIN (SELECT run,"
                         " stack_hash, id FROM stack_ids) USING (run, stack_hash) GROUP BY host,"
                         " container_id, jvm_pid, start_ms, end_ms, level, run))",
                NULL, err);
#undef RUN_EXPR
    }
    return rc == 0 ? set_version(s, err) : -1;
}

int ch_ready(store *s, flame_err *err)
{
    ch *c = ch_of(s);
    if (c->ready)
        return 0;
    _cleanup_free_ char *sql = NULL, *samples = NULL;
    ch_buf b = {0};
    size_t pos = 0;
    char *f[2];
    size_t l[2];
    bool have[CH_TABLES] = {false}, have_v1 = false;
    /* the database: created when missing (its name is checked: [A-Za-z0-9_]) */
    if (asprintf(&sql, "CREATE DATABASE IF NOT EXISTS %s", c->db) < 0) {
        sql = NULL;
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    }
    /* ?database= must name an existing database: create it without (a reader creates
     * nothing: it asks without, so a missing database is an empty list) */
    c->no_db = true;
    int rc = s->readonly ? 0 : ch_strings(s, sql, NULL, err);
    c->no_db = s->readonly;
    free(sql);
    sql = NULL;
    if (rc == 0 && asprintf(&sql,
                            "SELECT name, engine FROM system.tables WHERE database = '%s'"
                            " FORMAT TabSeparated",
                            c->db) < 0) {
        sql = NULL;
        rc = flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    }
    if (rc == 0)
        rc = ch_strings(s, sql, &b, err);
    c->no_db = false;
    while (rc >= 0 && (rc = ch_next_row(&b, &pos, f, l, 2)) == 1) {
        for (int i = 0; i < CH_TABLES; i++)
            if (!strcmp(f[0], tables[i][0])) {
                have[i] = true;
                if (i == CH_TABLES - 1)
                    c->distributed = !strcmp(f[1], "Distributed");
            }
        have_v1 |= !strcmp(f[0], "samples_v1");
        if (!strcmp(f[0], "samples") && !samples && !(samples = strdup(f[1])))
            rc = flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    }
    free(b.p);
    if (rc < 0)
        return err->code ? -1 : store_fail(err, STORE_ERR_SERVER, "%s: unreadable answer", s->name);
    /* the version first: a newer store is refused before anything is made in it */
    int64_t version = CH_SCHEMA_VERSION;
    if (have[0] && read_version(s, &version, err) < 0)
        return -1;
    if (version > CH_SCHEMA_VERSION)
        return store_fail(err, STORE_ERR_NEWER,
                          "%s: written by a newer docker-flame (store version %lld, this one "
                          "reads up to %d): upgrade docker-flame",
                          s->name, (long long)version, CH_SCHEMA_VERSION);
    if (version < 1)
        return store_fail(err, STORE_ERR_CORRUPT, "%s: the meta table has no schema version",
                          s->name);
    if (s->readonly) { /* nothing made, nothing migrated: what is there is read, or refused */
        if (!have[0])
            return store_fail(err, STORE_ERR_MISSING,
                              "%s: no store in that database (docker flame record makes it)",
                              s->name);
        if (version < CH_SCHEMA_VERSION)
            return store_fail(err, STORE_ERR_OLDER,
                              "%s: a store of version %lld, this docker-flame reads version %d: a "
                              "recorder upgrades it when it starts, or `docker flame prune "
                              "--retain 0 --no-compact --store URL` (deletes nothing)",
                              s->name, (long long)version, CH_SCHEMA_VERSION);
        for (int i = 0; i < CH_TABLES; i++)
            if (!have[i])
                return store_fail(err, STORE_ERR_CORRUPT,
                                  "%s: the store has no %s table (docker flame prune --retain 0 "
                                  "--no-compact makes it)",
                                  s->name, tables[i][0]);
        c->ready = true;
        return 0;
    }
    for (int i = 0; rc == 0 && i < CH_TABLES; i++)
        if (!have[i])
            rc = ch_strings(s, tables[i][1], NULL, err);
    if (rc == 0 && !have[0])
        rc = set_version(s, err);
    if (rc == 0 && version == 1)
        rc = migrate_1(s, samples, have_v1, err);
    if (rc < 0)
        return -1;
    c->ready = true;
    return 0;
}

void ch_where(FILE *f, const store_query *q)
{
    /* the hour (the first column of the sort key) bounds what the server reads: a short range
     * reads its hours, not its day partition */
    int64_t from = q->since_ms - STORE_MAX_WINDOW_MS, to = q->until_ms;
    fprintf(f,
            " WHERE intDiv(start_ms, 3600000) >= %lld AND intDiv(start_ms, 3600000) <= %lld"
            " AND start_ms < %lld AND start_ms > %lld AND end_ms > %lld",
            (long long)(from / 3600000), (long long)(to / 3600000), (long long)to, (long long)from,
            (long long)q->since_ms);
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
}

/* ---- readers ---- */

/* A query built with the WHERE clause of q in the middle: head, WHERE, tail. */
static int ch_select(store *s, const store_query *q, const char *head, const char *tail,
                     ch_buf *out, flame_err *err)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    fputs(head, f);
    ch_where(f, q);
    fputs(tail, f);
    return ch_post_file(s, f, &text, out, err);
}

static int ch_profile(store *s, const store_query *q, profile *out, store_info *info,
                      flame_err *err)
{
    if (ch_ready(s, err) < 0)
        return -1;
    ch_buf b = {0};
    char *text = NULL;
    size_t len = 0, pos = 0;
    char *f[6];
    size_t l[6];
    /* the window totals */
    int rc = ch_select(s, q,
                       "SELECT count(), sum(samples), min(start_ms), max(end_ms), min(frequency),"
                       " max(frequency) FROM windows",
                       " FORMAT TabSeparated", &b, err);
    if (rc == 0 && (rc = ch_next_row(&b, &pos, f, l, 6)) == 1 && ch_int(f[0]) > 0) {
        store_info_add(info, (uint64_t)ch_int(f[0]), (uint64_t)ch_int(f[1]), ch_int(f[4]),
                       ch_int(f[5]), ch_int(f[2]), ch_int(f[3]));
    }
    /* the stacks, summed by the server; their texts joined on the server too */
    FILE *m = rc >= 0 ? open_memstream(&text, &len) : NULL;
    if (rc >= 0 && !m)
        rc = flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    if (m) {
        /* each window's pairs summed per (run, id), named by the run's dictionary, summed per
         * stack (one stack may have ids in several runs), then its text: an id or a text the
         * store lacks comes back as an empty text (counted as missing) */
        fputs("SELECT folded, c FROM (SELECT stack_hash, sum(c) AS c FROM (SELECT run,"
              " toUInt32(lo + 256 * hi) AS id, sum(clo + 256 * toUInt64(chi)) AS c FROM (SELECT"
              " run, arrayCumSum(ids) AS ilo, arrayCumSum(ids_hi) AS ihi, counts, counts_hi"
              " FROM windows",
              m);
        ch_where(m, q);
        fputs(") ARRAY JOIN ilo AS lo, ihi AS hi, counts AS clo, counts_hi AS chi GROUP BY run, id)"
              " ANY LEFT JOIN (SELECT run, id,"
              " stack_hash FROM stack_ids WHERE run IN (SELECT run FROM windows",
              m);
        ch_where(m, q);
        fputs(")) USING (run, id) GROUP BY stack_hash) ANY LEFT JOIN (SELECT stack_hash, folded"
              " FROM stacks WHERE stack_hash IN (SELECT stack_hash FROM stack_ids WHERE run IN"
              " (SELECT run FROM windows",
              m);
        ch_where(m, q);
        fputs("))) USING stack_hash FORMAT TabSeparated", m);
        rc = ch_post_file(s, m, &text, &b, err);
    }
    for (pos = 0; rc >= 0 && (rc = ch_next_row(&b, &pos, f, l, 2)) == 1;) {
        double count = (double)strtoull(f[1], NULL, 10);
        if (l[0] == 0) {
            info->missing += (uint64_t)count;
        } else if (profile_add(out, f[0], l[0], count, PROFILE_ONE_COLUMN) < 0) {
            rc = errno == ENOMEM ? flame_fail(err, FLAME_EXIT_ERROR, "out of memory")
                                 : store_fail(err, STORE_ERR_CORRUPT,
                                              "%s: a stored stack is not a stack", s->name);
        }
    }
    free(b.p);
    if (rc < 0 && !err->code)
        return store_fail(err, STORE_ERR_SERVER, "%s: unreadable answer", s->name);
    return rc < 0 ? -1 : 0;
}

static int ch_timeline(store *s, const store_query *q, store_series_list *out, flame_err *err)
{
    if (ch_ready(s, err) < 0)
        return -1;
    ch_buf b = {0};
    size_t pos = 0;
    char *f[7];
    size_t l[7];
    int rc = ch_select(s, q,
                       "SELECT host, container_id, any(container_name), jvm_pid, start_ms,"
                       " end_ms, sum(samples) FROM windows",
                       " GROUP BY host, container_id, jvm_pid, start_ms, end_ms"
                       " ORDER BY host, container_id, jvm_pid, start_ms FORMAT TabSeparated",
                       &b, err);
    while (rc >= 0 && (rc = ch_next_row(&b, &pos, f, l, 7)) == 1) {
        store_point pt = {ch_int(f[4]), ch_int(f[5]), (uint64_t)strtoull(f[6], NULL, 10)};
        if (store_timeline_add(out, f[0], f[1], f[2], ch_int(f[3]), &pt) < 0)
            rc = flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    }
    free(b.p);
    if (rc < 0 && !err->code)
        return store_fail(err, STORE_ERR_SERVER, "%s: unreadable answer", s->name);
    return rc < 0 ? -1 : 0;
}

int ch_disk(store *s, uint64_t *disk, double *per_row, flame_err *err)
{
    ch_buf b = {0};
    size_t pos = 0;
    char *f[3];
    size_t l[3];
    int rc = ch_strings(s,
                        "SELECT sum(bytes_on_disk), sumIf(bytes_on_disk, table = 'windows'),"
                        " sumIf(rows, table = 'windows') FROM system.parts WHERE active AND"
                        " database = currentDatabase() AND table IN ('meta', 'stacks',"
                        " 'stack_ids', 'windows')"
                        " FORMAT TabSeparated",
                        &b, err);
    if (rc == 0 && ch_next_row(&b, &pos, f, l, 3) == 1) {
        *disk = (uint64_t)ch_int(f[0]);
        double rows = (double)ch_int(f[2]);
        *per_row = rows > 0 ? (double)ch_int(f[1]) / rows : 0;
    }
    free(b.p);
    return rc;
}

static int ch_list(store *s, const store_query *q, store_listing *out, flame_err *err)
{
    if (ch_ready(s, err) < 0)
        return -1;
    store_query all = {.container = q ? q->container : NULL,
                       .host = q ? q->host : NULL,
                       .since_ms = 0,
                       .until_ms = INT64_MAX};
    ch_buf b = {0};
    size_t pos = 0;
    char *f[9];
    size_t l[9];
    double per_row = 0;
    uint64_t disk = 0;
    int rc = ch_disk(s, &disk, &per_row, err);
    if (rc == 0)
        rc = ch_select(s, &all,
                       "SELECT host, container_id, container_name, image, min(start_ms),"
                       " max(end_ms), count(), sum(samples), count() FROM windows",
                       " GROUP BY host, container_id, container_name, image ORDER BY max(end_ms)"
                       " DESC"
                       " FORMAT TabSeparated",
                       &b, err);
    while (rc >= 0 && (rc = ch_next_row(&b, &pos, f, l, 9)) == 1) {
        store_entry e = {f[0],
                         f[1],
                         f[2],
                         f[3],
                         ch_int(f[4]),
                         ch_int(f[5]),
                         (uint64_t)ch_int(f[6]),
                         (uint64_t)strtoull(f[7], NULL, 10),
                         (uint64_t)llround((double)ch_int(f[8]) * per_row)};
        if (store_listing_add(out, &e) < 0)
            rc = flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    }
    if (rc == 0) {
        pos = 0;
        rc = ch_strings(s, "SELECT uniqExact(stack_hash) FROM stacks FORMAT TabSeparated", &b, err);
        if (rc == 0 && ch_next_row(&b, &pos, f, l, 1) == 1)
            out->stacks += (uint64_t)ch_int(f[0]);
    }
    free(b.p);
    out->disk_bytes += disk;
    out->sizes_unknown |= ch_of(s)->distributed;
    if (rc < 0 && !err->code)
        return store_fail(err, STORE_ERR_SERVER, "%s: unreadable answer", s->name);
    return rc < 0 ? -1 : 0;
}

static const struct store_ops ch_ops = {ch_put,  ch_profile, ch_timeline,
                                        ch_list, ch_compact, ch_close};

int ch_open(store *s, const char *url, flame_err *err)
{
    ch *c = calloc(1, sizeof *c);
    if (!c)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    s->impl = c;
    s->ops = &ch_ops;
    if (ch_parse_url(s, c, url, err) < 0)
        return -1;
    /* no request yet: a recorder must start (and spool) while the server is down */
    if (!(c->curl = curl_easy_init()))
        return flame_fail(err, FLAME_EXIT_ERROR, "cannot initialise libcurl");
    return 0;
}

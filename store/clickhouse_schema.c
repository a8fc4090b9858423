/* The ClickHouse backend's tables (store/clickhouse_impl.h): created when missing, versioned in a
 * meta table, and older schemas migrated when a store is opened (1 -> 2 -> 3: docs/STORE.md,
 * "Versions"), once per handle (ch_ready) before anything else reads or writes. */
#include <curl/curl.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "store/chtext.h"
#include "store/clickhouse_impl.h"

#define CH_SCHEMA_VERSION 4
/* The oldest version a reader reads: version 3 lacks only the windows' type column, and its
 * windows are all cpu (docs/STORE.md, "Profile types"). */
#define CH_READ_MIN 3

/* The tables of schema 3, created when missing (meta first: an empty database gets the current
 * version). dict: each run's dictionary of stacks (store/dict.h), a chunk a row, numbered (seq)
 * in the run; stacks: how many the chunk adds; at: when it was written (unix ms). windows: one
 * row per window (docs/STORE.md); its pairs as byte arrays, see clickhouse_put.c; uid: the
 * window's id (0: none, see CH_UID_KEY). A granule of 64 rows (not 8192): a
 * row holds a whole window, so an hour's query reads its hour (not the day) and spreads over the
 * server's threads (0.14 -> 0.05 s for the pairs of an hour, docs/BENCHMARKS.md). */
enum { T_META, T_DICT, T_WINDOWS, CH_TABLES };
static const char *const tables[CH_TABLES][2] = {
    {"meta", "CREATE TABLE IF NOT EXISTS meta (key String, value String) ENGINE = TinyLog"},
    {"dict", "CREATE TABLE IF NOT EXISTS dict (run UInt64, seq UInt32, stacks UInt32, at Int64,"
             " chunk String) ENGINE = ReplacingMergeTree ORDER BY (run, seq)"},
    {"windows", "CREATE TABLE IF NOT EXISTS windows (host String, container_id String,"
                " container_name String, image String, jvm_pid Int64, jvm_version String,"
                " start_ms Int64, end_ms Int64, frequency Int64, samples UInt64, level UInt8,"
                " run UInt64, ids Array(UInt8), ids_hi Array(UInt16), counts Array(UInt8),"
                " counts_hi Array(UInt32), uid UInt64, type String DEFAULT 'cpu')"
                " ENGINE = MergeTree PARTITION BY toYYYYMMDD(toDateTime(intDiv(start_ms, 1000)))"
                " ORDER BY (intDiv(start_ms, 3600000), container_name, container_id, jvm_pid,"
                " start_ms) SETTINGS index_granularity = 64"},
};
/* Hour rollups (docs/STORE.md, "Hour rollups" in ClickHouse): per (labels, type, run, hour) the
 * sum of the windows that start in that hour, in the windows' arrays, and the fingerprint of the
 * windows it sums (nw: how many, fp: the sum of a hash of each uid). A reader uses a row only
 * where its fingerprint equals that of the windows it stands for, so a late window, a day's
 * rebuild or a retention makes it unused without any trigger. ReplacingMergeTree(at): a newer
 * rollup of the same key replaces the older in the background (until then the fingerprint
 * tells them apart); partitioned by day as windows, so a day's DROP PARTITION drops both. */
#define CH_ROLLUPS_TABLE(name)                                                                     \
    "CREATE TABLE IF NOT EXISTS " name " (host String, container_id String,"                       \
    " container_name String, image String, jvm_pid Int64, jvm_version String, type String,"        \
    " run UInt64, hour Int64, start_ms Int64, end_ms Int64, samples UInt64, nw UInt64, fp UInt64," \
    " ids Array(UInt8), ids_hi Array(UInt16), counts Array(UInt8), counts_hi Array(UInt32),"       \
    " at Int64) ENGINE = ReplacingMergeTree(at)"                                                   \
    " PARTITION BY toYYYYMMDD(toDateTime(intDiv(start_ms, 1000)))"                                 \
    " ORDER BY (hour, host, container_id, jvm_pid, type, run) SETTINGS index_granularity = 8"
/* 6-hour rollups ("Hour rollups" in ClickHouse, "6-hour rollups"): the same columns, hour the
 * block's first (a multiple of CH_BLOCK_HOURS), summed by compaction from the block's hour
 * rollups, read while their fingerprint is that of the block's windows. A block lies in one day:
 * the same partitions. */
/* Schema 2's columns of windows, and its dictionary (kept as stacks_v2 and stack_ids_v2 by the
 * migration to 3), which the migration from 1 still makes first. */
#define CH_WINDOW_COLS_V2                                                                          \
    "host, container_id, container_name, image, jvm_pid, jvm_version, start_ms, end_ms,"           \
    " frequency, samples, level, run, ids, ids_hi, counts, counts_hi"
#define CH_STACK_IDS_V2                                                                            \
    "CREATE TABLE IF NOT EXISTS stack_ids (run UInt64, id UInt32, stack_hash UInt64)"              \
    " ENGINE = ReplacingMergeTree ORDER BY (run, id)"

/* The highest schema_version in meta (0 when none). */
static int read_version(store *s, int64_t *version, flame_err *err)
{
    ch_buf b = {0};
    size_t pos = 0;
    char *f[1];
    size_t l[1];
    int rc = ch_post_sql(
        s, "SELECT value FROM meta WHERE key = 'schema_version' FORMAT TabSeparated", &b, err);
    *version = 0;
    while (rc >= 0 && (rc = ch_next_row(&b, &pos, f, l, 1)) == 1)
        *version = ch_int(f[0]) > *version ? ch_int(f[0]) : *version;
    free(b.p);
    if (rc < 0 && !err->code)
        return store_fail(err, STORE_ERR_SERVER, "%s: unreadable answer", s->name);
    return rc < 0 ? -1 : 0;
}

static int set_version(store *s, int version, flame_err *err)
{
    char ins[128];
    snprintf(ins, sizeof ins, "INSERT INTO meta VALUES ('schema_version', '%d')", version);
    return ch_post_sql(s, ins, NULL, err);
}

/* The tables of the database (name -> engine), as a list of the names we look at. */
typedef struct ch_tables {
    bool have[CH_TABLES];
    bool distributed, prewhere, stacks, stack_ids, stacks_v2, stack_ids_v2, samples_v1, rollups,
        rollups6;
    char samples_engine[64]; /* "" = no samples table (schema 1's) */
} ch_tables;

static int list_tables(store *s, ch_tables *t, flame_err *err)
{
    ch_buf b = {0};
    size_t pos = 0;
    char *f[2];
    size_t l[2];
    *t = (ch_tables){0};
    ch *c = ch_of(s);
    _cleanup_free_ char *sql = NULL;
    if (asprintf(&sql,
                 "SELECT name, engine FROM system.tables WHERE database = '%s'"
                 " FORMAT TabSeparated",
                 c->db) < 0) {
        sql = NULL;
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    }
    /* a reader made no database: it asks without ?database= (a missing one lists nothing) */
    c->no_db = s->readonly;
    int rc = ch_post_sql(s, sql, &b, err);
    c->no_db = false;
    while (rc >= 0 && (rc = ch_next_row(&b, &pos, f, l, 2)) == 1) {
        for (int i = 0; i < CH_TABLES; i++)
            if (!strcmp(f[0], tables[i][0])) {
                t->have[i] = true;
                if (i == T_WINDOWS) {
                    t->distributed = !strcmp(f[1], "Distributed");
                    t->prewhere = l[1] >= 9 && !strcmp(f[1] + l[1] - 9, "MergeTree");
                }
            }
        t->stacks |= !strcmp(f[0], "stacks");
        t->stack_ids |= !strcmp(f[0], "stack_ids");
        t->stacks_v2 |= !strcmp(f[0], "stacks_v2");
        t->stack_ids_v2 |= !strcmp(f[0], "stack_ids_v2");
        t->samples_v1 |= !strcmp(f[0], "samples_v1");
        t->rollups |= !strcmp(f[0], "rollups");
        t->rollups6 |= !strcmp(f[0], "rollups_6h");
        if (!strcmp(f[0], "samples"))
            snprintf(t->samples_engine, sizeof t->samples_engine, "%s", f[1]);
    }
    free(b.p);
    if (rc < 0)
        return err->code ? -1 : store_fail(err, STORE_ERR_SERVER, "%s: unreadable answer", s->name);
    return 0;
}

/* Schema 1 -> 2: the rows of samples (one per window and stack, 64-bit stack hashes) become
 * windows rows, numbered per JVM by a run key derived from its labels (ids in hash order). The
 * old table is renamed first (of two processes migrating at once, one gets to do it) and kept
 * as samples_v1 (drop it once the store reads right); a migration cut short (the version still
 * 1, samples_v1 there, windows empty) is done again by the next open. Schema 2's dictionary
 * (stacks, stack_ids) is what migrate_2 then turns into schema 3's. */
static int migrate_1(store *s, const ch_tables *t, flame_err *err)
{
    if (!strcmp(t->samples_engine, "Distributed"))
        return store_fail(err, STORE_ERR_SERVER,
                          "%s: a version 1 store over a Distributed samples table: migrate each "
                          "shard (open it once), then see docs/STORE.md (Versions)",
                          s->name);
    bool have_v1 = t->samples_v1;
    int rc = ch_post_sql(s, CH_STACK_IDS_V2, NULL, err);
    if (rc == 0 && t->samples_engine[0]) {
        rc = ch_post_sql(s, "RENAME TABLE samples TO samples_v1", NULL, err);
        have_v1 = rc == 0;
    }
    if (rc == 0 && have_v1) {
        int64_t n = 0;
        rc = ch_one(s, "SELECT count() FROM windows FORMAT TabSeparated", &n, err);
        if (n != 0)
            have_v1 = false; /* converted already */
    }
    if (rc == 0 && have_v1) {
#define RUN_EXPR "cityHash64(host, container_id, jvm_pid)"
        if (rc == 0)
            rc = ch_post_sql(
                s,
                "INSERT INTO stack_ids SELECT run, id, stack_hash FROM (SELECT " RUN_EXPR
                " AS run, arraySort(groupUniqArray(stack_hash)) AS hs FROM samples_v1"
                " WHERE stack_hash != 0 GROUP BY run) ARRAY JOIN hs AS stack_hash,"
                " arrayEnumerate(hs) AS id",
                NULL, err);
        /* a window's pairs sorted by id, then as gaps, split like the put does */
        if (rc == 0)
            rc = ch_post_sql(
                s,
                "INSERT INTO windows (" CH_WINDOW_COLS_V2 ") SELECT host, container_id, cn, im,"
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
    return rc == 0 ? set_version(s, 2, err) : -1;
}

typedef struct conv {
    store *s;
    uint64_t run;
    uint32_t seq;
    FILE *rows;
    uint32_t stacks_before; /* the chunk's first stack - 1 */
} conv;

/* One chunk of a migrated run, as a row of dict. */
static int conv_chunk(void *ctx, const uint8_t *chunk, size_t len)
{
    conv *v = ctx;
    dict_span sp;
    dict_chunk_span(chunk, len, &sp);
    fprintf(v->rows, "%llu\t%u\t%u\t0\t", (unsigned long long)v->run, v->seq++, sp.nstacks);
    ch_tsv_put(v->rows, (const char *)chunk, len);
    fputc('\n', v->rows);
    return 0;
}

/* Schema 2's dictionary of one run (ids -> stack hashes -> texts) as schema 3's: the stacks get
 * the same ids (a hole in them becomes a stack whose text is unknown: counted as missing, as
 * schema 2's readers did). */
static int convert_run(store *s, uint64_t run, flame_err *err)
{
    char *text = NULL;
    size_t tlen = 0;
    FILE *f = open_memstream(&text, &tlen);
    if (!f)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    fprintf(f,
            "SELECT id, folded FROM (SELECT id, stack_hash FROM stack_ids_v2 WHERE run = %llu)"
            " ANY LEFT JOIN (SELECT stack_hash, folded FROM stacks_v2 WHERE stack_hash IN (SELECT"
            " stack_hash FROM stack_ids_v2 WHERE run = %llu)) USING stack_hash ORDER BY id"
            " FORMAT TabSeparated",
            (unsigned long long)run, (unsigned long long)run);
    ch_buf b = {0};
    int rc = ch_post_file(s, f, &text, &b, err);
    dict d;
    dict_init(&d);
    size_t pos = 0;
    char *fl[2];
    size_t l[2];
    int r = 0;
    while (rc == 0 && (r = ch_next_row(&b, &pos, fl, l, 2)) == 1) {
        int64_t id = ch_int(fl[0]);
        uint32_t got = 0;
        if (id <= (int64_t)d.nstacks) /* the same id twice (its rows not merged yet) */
            continue;
        if (id > (int64_t)DICT_MAX_STACKS) {
            rc = store_fail(err, STORE_ERR_CORRUPT, "%s: damaged store (stack id %lld)", s->name,
                            (long long)id);
            break;
        }
        while (rc == 0 && (int64_t)d.nstacks + 1 < id) /* a hole in the ids */
            rc = dict_add_gap(&d, &got);
        bool fine = rc == 0 && l[1] > 0 && dict_add_stack(&d, fl[1], l[1], &got) == 0 && got == id;
        /* no text, or one seen under an earlier id (a hash collision, never in practice) */
        if (rc == 0 && !fine && (int64_t)d.nstacks < id)
            rc = dict_add_gap(&d, &got);
        if (rc < 0)
            rc = flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    }
    if (rc == 0 && r < 0)
        rc = store_fail(err, STORE_ERR_SERVER, "%s: unreadable answer", s->name);
    free(b.p);
    char *rows = NULL;
    size_t rlen = 0;
    conv v = {s, run, 0, rc == 0 ? open_memstream(&rows, &rlen) : NULL, 0};
    if (rc == 0 && !v.rows)
        rc = flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    if (rc == 0 && dict_encode_all(&d, 1u << 20, conv_chunk, &v) < 0)
        rc = flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    dict_free(&d);
    if (v.rows && (ferror(v.rows) | fclose(v.rows)) != 0 && rc == 0)
        rc = flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    /* all of the run's chunks in one insert: a run is converted whole or not at all */
    if (rc == 0 && rlen)
        rc = ch_post(s, "INSERT INTO dict (run, seq, stacks, at, chunk) FORMAT TabSeparated", rows,
                     rlen, NULL, err);
    free(rows);
    return rc;
}

/* Schema 2 -> 3: the dictionary tables are renamed stacks_v2 and stack_ids_v2 (of two processes
 * migrating at once, one gets to do it; they are kept: drop them once the store reads right),
 * windows gets its uid column, and each run of stack_ids_v2 without a dictionary in dict gets
 * one, converted by this client. A migration cut short is done again by the next open. */
static int migrate_2(store *s, ch_tables *t, flame_err *err)
{
    int rc = 0;
    if (t->stacks && t->stack_ids) {
        flame_err quiet = FLAME_ERR_INIT;
        if (ch_post_sql(s, "RENAME TABLE stacks TO stacks_v2, stack_ids TO stack_ids_v2", NULL,
                        &quiet) < 0 &&
            (list_tables(s, t, err) < 0 || !t->stacks_v2 || !t->stack_ids_v2))
            return flame_wrap(err, "%s", quiet.msg); /* not another process's doing */
        t->stacks_v2 = t->stack_ids_v2 = true;
    }
    int64_t has_uid = 0;
    rc = ch_one(s,
                "SELECT count() FROM system.columns WHERE database = currentDatabase() AND"
                " table = 'windows' AND name = 'uid' FORMAT TabSeparated",
                &has_uid, err);
    if (rc == 0 && !has_uid) {
        flame_err quiet = FLAME_ERR_INIT;
        if (ch_post_sql(s, "ALTER TABLE windows ADD COLUMN uid UInt64", NULL, &quiet) < 0 &&
            (ch_one(s,
                    "SELECT count() FROM system.columns WHERE database = currentDatabase() AND"
                    " table = 'windows' AND name = 'uid' FORMAT TabSeparated",
                    &has_uid, err) < 0 ||
             !has_uid))
            return store_fail(err, quiet.detail, "%s", quiet.msg);
    }
    if (rc == 0 && t->stacks_v2 && t->stack_ids_v2) {
        ch_buf b = {0};
        size_t pos = 0;
        char *f[1];
        size_t l[1];
        rc = ch_post_sql(s,
                         "SELECT DISTINCT run FROM stack_ids_v2 WHERE run NOT IN (SELECT run FROM"
                         " dict) FORMAT TabSeparated",
                         &b, err);
        while (rc == 0 && ch_next_row(&b, &pos, f, l, 1) == 1)
            rc = convert_run(s, strtoull(f[0], NULL, 10), err);
        free(b.p);
    }
    return rc == 0 ? set_version(s, 3, err) : -1;
}

/* Whether windows has the column name (system.columns: a Distributed table lists its own). */
static int has_column(store *s, const char *name, bool *has, flame_err *err)
{
    char sql[256];
    int64_t n = 0;
    snprintf(sql, sizeof sql,
             "SELECT count() FROM system.columns WHERE database = currentDatabase() AND"
             " table = 'windows' AND name = '%s' FORMAT TabSeparated",
             name);
    int rc = ch_one(s, sql, &n, err);
    *has = n > 0;
    return rc;
}

/* Version 3 -> 4: windows gets its profile type, 'cpu' for the rows before. Looks for the
 * column itself (two processes migrating at once, or a store that reached version 4 by another
 * path, e.g. a step of the same number that adds something else): run at every writer's open. */
static int add_type(store *s, flame_err *err)
{
    ch *c = ch_of(s);
    if (has_column(s, "type", &c->has_type, err) < 0)
        return -1;
    if (c->has_type)
        return 0;
    flame_err quiet = FLAME_ERR_INIT;
    if (ch_post_sql(s, "ALTER TABLE windows ADD COLUMN type String DEFAULT 'cpu'", NULL, &quiet) <
            0 &&
        (has_column(s, "type", &c->has_type, err) < 0 || !c->has_type))
        return store_fail(err, quiet.detail, "%s", quiet.msg);
    c->has_type = true;
    return 0;
}

int ch_ready(store *s, flame_err *err)
{
    ch *c = ch_of(s);
    if (c->ready)
        return 0;
    _cleanup_free_ char *sql = NULL;
    ch_tables t;
    /* the database: created when missing (its name is checked: [A-Za-z0-9_]) */
    if (asprintf(&sql, "CREATE DATABASE IF NOT EXISTS %s", c->db) < 0) {
        sql = NULL;
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    }
    /* ?database= must name an existing database: create it without (a reader creates
     * nothing) */
    c->no_db = true;
    int rc = s->readonly ? 0 : ch_post_sql(s, sql, NULL, err);
    c->no_db = false;
    if (rc < 0 || list_tables(s, &t, err) < 0)
        return -1;
    c->distributed = t.distributed;
    c->prewhere = t.prewhere;
    /* the version first: a newer store is refused before anything is made in it */
    int64_t version = CH_SCHEMA_VERSION;
    if (t.have[T_META] && read_version(s, &version, err) < 0)
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
        if (!t.have[T_META])
            return store_fail(err, STORE_ERR_MISSING,
                              "%s: no store in that database (docker flame record makes it)",
                              s->name);
        if (version < CH_READ_MIN)
            return store_fail(err, STORE_ERR_OLDER,
                              "%s: a store of version %lld, this docker-flame reads version %d: a "
                              "recorder upgrades it when it starts, or `docker flame prune "
                              "--retain 0 --no-compact --store URL` (deletes nothing)",
                              s->name, (long long)version, CH_SCHEMA_VERSION);
        for (int i = 0; i < CH_TABLES; i++)
            if (!t.have[i])
                return store_fail(err, STORE_ERR_CORRUPT,
                                  "%s: the store has no %s table (docker flame prune --retain 0 "
                                  "--no-compact makes it)",
                                  s->name, tables[i][0]);
        if (has_column(s, "type", &c->has_type, err) < 0)
            return -1;
        c->rollups = t.rollups;
        c->rollups6 = t.rollups && t.rollups6;
        c->ready = true;
        return 0;
    }
    for (int i = 0; rc == 0 && i < CH_TABLES; i++)
        if (!t.have[i])
            rc = ch_post_sql(s, tables[i][1], NULL, err);
    if (rc == 0 && !t.have[T_META])
        rc = set_version(s, CH_SCHEMA_VERSION, err);
    if (rc == 0 && version == 1) {
        rc = migrate_1(s, &t, err);
        if (rc == 0 && (rc = list_tables(s, &t, err)) == 0)
            version = 2;
    }
    if (rc == 0 && version == 2)
        rc = migrate_2(s, &t, err);
    if (rc == 0)
        rc = add_type(s, err);
    /* not a version: a store without the table is read from its windows (docs/STORE.md, "Hour
     * rollups"); a writer's open makes it, whatever the version */
    if (rc == 0 && !t.rollups)
        rc = ch_post_sql(s, CH_ROLLUPS_TABLE("rollups"), NULL, err);
    c->rollups = rc == 0;
    if (rc == 0 && !t.rollups6)
        rc = ch_post_sql(s, CH_ROLLUPS_TABLE("rollups_6h"), NULL, err);
    c->rollups6 = rc == 0;
    if (rc == 0 && version < CH_SCHEMA_VERSION)
        rc = set_version(s, CH_SCHEMA_VERSION, err);
    if (rc < 0)
        return -1;
    c->ready = true;
    return 0;
}

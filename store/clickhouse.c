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

#define CH_SCHEMA_VERSION 1
/* Stack keys remembered as sent, per handle; past it the memory starts over. */
#define CH_KNOWN_MAX ((size_t)1 << 20)

static const char *const tables[][2] = {
    {"meta", "CREATE TABLE IF NOT EXISTS meta (key String, value String) ENGINE = TinyLog"},
    {"stacks", "CREATE TABLE IF NOT EXISTS stacks (stack_hash UInt64, folded String)"
               " ENGINE = ReplacingMergeTree ORDER BY stack_hash"},
    {"samples", "CREATE TABLE IF NOT EXISTS samples (host String, container_id String,"
                " container_name String, image String, jvm_pid Int64, jvm_version String,"
                " start_ms Int64, end_ms Int64, frequency Int64, samples UInt64, level UInt8,"
                " stack_hash UInt64, count UInt64) ENGINE = MergeTree"
                " PARTITION BY toYYYYMMDD(toDateTime(intDiv(start_ms, 1000)))"
                " ORDER BY (intDiv(start_ms, 3600000), container_name, container_id, jvm_pid,"
                " start_ms, stack_hash)"},
};
/* The columns of samples in that order, for INSERTs */
#define CH_SAMPLE_COLS                                                                             \
    "host, container_id, container_name, image, jvm_pid, jvm_version, start_ms, end_ms,"           \
    " frequency, samples, level, stack_hash, count"

static void ch_close(store *s)
{
    ch *c = ch_of(s);
    if (!c)
        return;
    curl_easy_cleanup(c->curl); /* NULL-safe */
    free(c->known);
    free(c);
}

/* ---- schema ---- */

/* One-column answer rows, for the checks below. */
static int ch_strings(store *s, const char *sql, ch_buf *out, flame_err *err)
{
    return ch_post(s, sql, NULL, 0, out, err);
}

int ch_ready(store *s, flame_err *err)
{
    ch *c = ch_of(s);
    if (c->ready)
        return 0;
    _cleanup_free_ char *sql = NULL;
    ch_buf b = {0};
    size_t pos = 0;
    char *f[2];
    size_t l[2];
    bool have[3] = {false};
    /* the database: created when missing (its name is checked: [A-Za-z0-9_]) */
    if (asprintf(&sql, "CREATE DATABASE IF NOT EXISTS %s", c->db) < 0) {
        sql = NULL;
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    }
    /* ?database= must name an existing database: create it without */
    c->no_db = true;
    int rc = ch_strings(s, sql, NULL, err);
    c->no_db = false;
    if (rc == 0)
        rc = ch_strings(s,
                        "SELECT name, engine FROM system.tables WHERE database = currentDatabase()"
                        " FORMAT TabSeparated",
                        &b, err);
    while (rc >= 0 && (rc = ch_next_row(&b, &pos, f, l, 2)) == 1)
        for (int i = 0; i < 3; i++)
            if (!strcmp(f[0], tables[i][0])) {
                have[i] = true;
                if (i == 2)
                    c->distributed = !strcmp(f[1], "Distributed");
            }
    for (int i = 0; rc == 0 && i < 3; i++)
        if (!have[i])
            rc = ch_strings(s, tables[i][1], NULL, err);
    char ins[128];
    snprintf(ins, sizeof ins, "INSERT INTO meta VALUES ('schema_version', '%d')",
             CH_SCHEMA_VERSION);
    if (rc == 0 && !have[0])
        rc = ch_strings(s, ins, NULL, err);
    if (rc == 0)
        rc = ch_strings(
            s, "SELECT value FROM meta WHERE key = 'schema_version' FORMAT TabSeparated", &b, err);
    int64_t version = 0;
    for (pos = 0; rc >= 0 && (rc = ch_next_row(&b, &pos, f, l, 1)) == 1;)
        version = ch_int(f[0]) > version ? ch_int(f[0]) : version;
    free(b.p);
    if (rc < 0)
        return err->code ? -1 : store_fail(err, STORE_ERR_SERVER, "%s: unreadable answer", s->name);
    if (version > CH_SCHEMA_VERSION)
        return store_fail(err, STORE_ERR_NEWER,
                          "%s: written by a newer docker-flame (store version %lld, this one "
                          "reads up to %d): upgrade docker-flame",
                          s->name, (long long)version, CH_SCHEMA_VERSION);
    if (version < 1)
        return store_fail(err, STORE_ERR_CORRUPT, "%s: the meta table has no schema version",
                          s->name);
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

/* ---- put ---- */

static bool known_has(const ch *c, uint64_t k)
{
    if (!c->known_cap)
        return false;
    for (size_t i = k & (c->known_cap - 1); c->known[i]; i = (i + 1) & (c->known_cap - 1))
        if (c->known[i] == k)
            return true;
    return false;
}

static void known_add(ch *c, uint64_t k)
{
    if (c->known_n * 2 >= c->known_cap) {
        size_t nc = c->known_cap ? c->known_cap * 2 : 4096;
        uint64_t *old = c->known, *nk = nc <= CH_KNOWN_MAX ? calloc(nc, sizeof *nk) : NULL;
        size_t oc = c->known_cap;
        if (!nk) { /* full, or no memory: forget (the server dedups what is sent again) */
            memset(c->known, 0, c->known_cap * sizeof *c->known);
            c->known_n = 0;
            if (!c->known_cap)
                return;
        } else {
            c->known = nk;
            c->known_cap = nc;
            c->known_n = 0;
            for (size_t i = 0; i < oc; i++)
                if (old[i])
                    known_add(c, old[i]);
            free(old);
        }
    }
    size_t i = k & (c->known_cap - 1);
    while (c->known[i] && c->known[i] != k)
        i = (i + 1) & (c->known_cap - 1);
    c->known_n += !c->known[i];
    c->known[i] = k;
}

typedef struct put_ctx {
    ch *c;
    FILE *stacks, *rows;
    const char *prefix; /* the window's columns before stack_hash */
    char *cut;
    uint64_t sent_keys; /* stacks in the stacks body */
    flame_err *err;
} put_ctx;

static int put_stack(void *ud, const char *stack, size_t len, double count)
{
    put_ctx *p = ud;
    if (!(count >= 0.5))
        return 0;
    if (len > STORE_MAX_STACK && !p->cut && !(p->cut = malloc(STORE_MAX_STACK)))
        return flame_fail(p->err, FLAME_EXIT_ERROR, "out of memory");
    const char *text;
    len = stack_bound(stack, len, p->cut, &text);
    uint64_t key = stack_key(text, len);
    key += key == 0; /* 0 marks a window without stacks */
    if (!known_has(p->c, key)) {
        fprintf(p->stacks, "%llu\t", (unsigned long long)key);
        ch_tsv_put(p->stacks, text, len);
        fputc('\n', p->stacks);
        known_add(p->c, key);
        p->sent_keys++;
    }
    fprintf(p->rows, "%s%llu\t%llu\n", p->prefix, (unsigned long long)key,
            count >= 9e18 ? 9000000000000000000ull : (unsigned long long)llround(count));
    return 0;
}

static int put_window(put_ctx *p, const store_window *w)
{
    _cleanup_free_ char *prefix = NULL;
    size_t plen = 0;
    FILE *f = open_memstream(&prefix, &plen);
    if (!f)
        return flame_fail(p->err, FLAME_EXIT_ERROR, "out of memory");
    const char *labels[] = {w->host, w->container_id, w->container_name, w->image};
    char buf[STORE_MAX_LABEL];
    for (int i = 0; i < 4; i++) {
        label_copy(buf, labels[i]);
        ch_tsv_put(f, buf, strlen(buf));
        fputc('\t', f);
    }
    label_copy(buf, w->jvm_version);
    fprintf(f, "%lld\t", (long long)w->jvm_pid);
    ch_tsv_put(f, buf, strlen(buf));
    fprintf(f, "\t%lld\t%lld\t%lld\t%llu\t0\t", (long long)w->start_ms, (long long)w->end_ms,
            (long long)w->frequency, (unsigned long long)w->samples);
    if (fclose(f) != 0 || !prefix)
        return flame_fail(p->err, FLAME_EXIT_ERROR, "out of memory");
    p->prefix = prefix;
    /* one row that holds the window itself, even when nothing ran: stack 0, count 0 */
    fprintf(p->rows, "%s0\t0\n", prefix);
    int rc = profile_each_stack(w->stacks, put_stack, p);
    p->prefix = NULL;
    if (rc != 0)
        return p->err->code ? -1 : flame_fail(p->err, FLAME_EXIT_ERROR, "out of memory");
    return 0;
}

static int ch_put(store *s, const store_window *w, size_t n, flame_err *err)
{
    ch *c = ch_of(s);
    if (ch_ready(s, err) < 0)
        return -1;
    char *sbody = NULL, *rbody = NULL;
    size_t slen = 0, rlen = 0;
    put_ctx p = {.c = c, .err = err};
    p.stacks = open_memstream(&sbody, &slen);
    p.rows = open_memstream(&rbody, &rlen);
    int rc = p.stacks && p.rows ? 0 : flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = put_window(&p, &w[i]);
    bool bad = (p.stacks && (ferror(p.stacks) | fclose(p.stacks))) ||
               (p.rows && (ferror(p.rows) | fclose(p.rows)));
    if (rc == 0 && (bad || !sbody || !rbody))
        rc = flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    /* stacks first: rows never name a stack the server cannot have yet (a second copy of a
     * stack, when a later put is retried, is merged away by ReplacingMergeTree) */
    if (rc == 0 && slen)
        rc = ch_post(s, "INSERT INTO stacks (stack_hash, folded) FORMAT TabSeparated", sbody, slen,
                     NULL, err);
    if (rc == 0)
        rc = ch_post(s, "INSERT INTO samples (" CH_SAMPLE_COLS ") FORMAT TabSeparated", rbody, rlen,
                     NULL, err);
    if (rc < 0 && p.sent_keys) { /* which of them arrived is unknown: send them all again */
        memset(c->known, 0, c->known_cap * sizeof *c->known);
        c->known_n = 0;
    }
    free(sbody);
    free(rbody);
    free(p.cut);
    return rc;
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
    char *f[4];
    size_t l[4];
    /* the window totals (each window's rows repeat them: one per window) */
    int rc = ch_select(s, q,
                       "SELECT count(), sum(ws), min(s), max(e) FROM (SELECT any(samples) AS ws,"
                       " min(start_ms) AS s, max(end_ms) AS e FROM samples",
                       " GROUP BY host, container_id, jvm_pid, start_ms, end_ms)"
                       " FORMAT TabSeparated",
                       &b, err);
    if (rc == 0 && (rc = ch_next_row(&b, &pos, f, l, 4)) == 1 && ch_int(f[0]) > 0) {
        store_info_add(info, (uint64_t)ch_int(f[0]), (uint64_t)ch_int(f[1]), ch_int(f[2]),
                       ch_int(f[3]));
    }
    /* the stacks, summed by the server; their texts joined on the server too */
    FILE *m = rc >= 0 ? open_memstream(&text, &len) : NULL;
    if (rc >= 0 && !m)
        rc = flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    if (m) {
        fputs("SELECT folded, c FROM (SELECT stack_hash, sum(count) AS c FROM samples", m);
        ch_where(m, q);
        /* ANY JOIN takes one row of a stack that was sent twice and not merged away yet:
         * cheaper than any(folded) ... GROUP BY over every text (~20 % of the query) */
        fputs(" AND stack_hash != 0 GROUP BY stack_hash) ANY LEFT JOIN (SELECT stack_hash, folded"
              " FROM stacks WHERE stack_hash GLOBAL IN (SELECT stack_hash FROM samples",
              m);
        ch_where(m, q);
        fputs(")) USING stack_hash FORMAT TabSeparated", m);
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
                       " end_ms, any(samples) FROM samples",
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
                        "SELECT sum(bytes_on_disk), sumIf(bytes_on_disk, table = 'samples'),"
                        " sumIf(rows, table = 'samples') FROM system.parts WHERE active AND"
                        " database = currentDatabase() AND table IN ('meta', 'stacks', 'samples')"
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
                       "SELECT host, container_id, container_name, image, min(s), max(e), count(),"
                       " sum(ws), sum(r) FROM (SELECT host, container_id, container_name, image,"
                       " min(start_ms) AS s, max(end_ms) AS e, any(samples) AS ws, count() AS r"
                       " FROM samples",
                       " GROUP BY host, container_id, container_name, image, jvm_pid, start_ms)"
                       " GROUP BY host, container_id, container_name, image ORDER BY max(e) DESC"
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

/* The ClickHouse backend's plumbing: the store URL (user, host, port, database, spool
 * parameters) and one HTTP request per statement through libcurl, with its answer bounded and a
 * failure named as unreachable (no connection, timeout) or refused (the server's own message). */
#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "flame/alloc.h"
#include "store/chtext.h"
#include "store/clickhouse_impl.h"

/* An answer larger than this is refused (a profile of distinct stacks is far smaller). */
#define CH_MAX_ANSWER ((size_t)1 << 30)
#define CH_SPOOL_MAX_DEFAULT ((uint64_t)64 << 20)

int64_t ch_int(const char *s)
{
    return s ? strtoll(s, NULL, 10) : 0;
}

/* ---- HTTP ---- */

/* An answer as it comes, straight into its ch_buf, counted: past CH_MAX_ANSWER, curl is told to
 * stop. Not an open_memstream: glibc grows one by copying it into a new buffer and zeroing the
 * rest each time it doubles, a quarter of the CPU of serve's first graph of a day (16 MB of
 * answers, each new page faulted in, at ~15 us a fault on the VMs this runs on); GROW's realloc
 * grows a block in place when it can (mremap for one from mmap), else copies what it holds, and
 * zeroes nothing. Always NUL-terminated, as a memstream's was. */
typedef struct sink {
    ch_buf *b;
    size_t cap;
    bool oom;
} sink;

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *ud)
{
    sink *k = ud;
    size_t n = size * nmemb;
    if (k->b->n + n > CH_MAX_ANSWER)
        return 0; /* curl stops with a write error */
    if (!GROW(k->b->p, k->cap, k->b->n + n + 1)) {
        k->oom = true;
        return 0;
    }
    memcpy(k->b->p + k->b->n, ptr, n);
    k->b->n += n;
    k->b->p[k->b->n] = 0;
    return n;
}

/* The answer complete: an empty one is "" (never NULL). -1 when out of memory. Not shrunk to
 * fit: measured, a realloc down of the dictionaries' answer cost ~300 ms of the first graph's
 * CPU (what the request freed after it was copied and faulted in again). */
static int sink_end(sink *k)
{
    if (!k->oom && !k->b->p && !(k->b->p = calloc(1, 1)))
        k->oom = true;
    return k->oom ? -1 : 0;
}

/* The server's message, one line of printable text (it may quote our hostile data back). */
static void first_line(const ch_buf *b, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < b->n && b->p[i] != '\n' && o + 1 < cap; i++) {
        unsigned char k = (unsigned char)b->p[i];
        out[o++] = k >= 0x20 && k < 0x7f ? (char)k : '?';
    }
    out[o] = 0;
}

/* What the request came to: the connection failed, the server refused, or the answer is ours. */
static int answer_status(store *s, CURL *h, CURLcode cc, const ch_buf *b, flame_err *err)
{
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    if (cc == CURLE_WRITE_ERROR && status == 200)
        return store_fail(err, STORE_ERR_SERVER, "%s: the answer is larger than %zu MiB", s->name,
                          CH_MAX_ANSWER >> 20);
    if (cc != CURLE_OK)
        return store_fail(err, STORE_ERR_UNREACHABLE, "%s: cannot reach the server: %s", s->name,
                          curl_easy_strerror(cc));
    if (status != 200) {
        char line[400];
        first_line(b, line, sizeof line);
        return store_fail(err, STORE_ERR_SERVER, "%s: the server answered %ld: %s", s->name, status,
                          line);
    }
    return 0;
}

/* h set to POST sql (or, with body, the body with sql in url) to url, its answer into k */
static void request(ch *c, CURL *h, const char *url, struct curl_slist *hdr, const char *sql,
                    const char *body, size_t blen, sink *k)
{
    curl_easy_setopt(h, CURLOPT_URL, url);
    /* ClickHouse answers in its own time (a day's GROUP BY), but a put's time is bounded
     * (clickhouse_impl.h); a dead server is seen at connect */
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 5L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, c->timeout_s > 0 ? c->timeout_s : CH_READ_TIMEOUT_S);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body ? body : sql);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(body ? blen : strlen(sql)));
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, k);
    if (c->user[0]) {
        curl_easy_setopt(h, CURLOPT_USERNAME, c->user);
        curl_easy_setopt(h, CURLOPT_PASSWORD, c->password);
    }
}

/* The URL of a request: the database, and the statement when a body is sent. whole: the server
 * holds the answer until the query has ended (wait_end_of_query), so a failure halfway comes as
 * a 500 with its message, not as that message appended to a 200 answer already under way (which
 * a binary answer could take for rows) */
static char *request_url(ch *c, const char *sql, bool body, bool whole)
{
    char *url = NULL, *q = body ? curl_easy_escape(c->curl, sql, 0) : NULL;
    if (body && !q)
        return NULL;
    /* into Distributed tables, an INSERT returns once the shards have the rows: a shard that
     * is down fails the put (which the spool then keeps) instead of a queue on this node */
    int r = asprintf(&url, "%s?%s%s%s%s%s%s", c->base,
                     c->no_db ? "" : "database=", c->no_db ? "" : c->db, q ? "&query=" : "",
                     q ? q : "", q && c->distributed ? "&insert_distributed_sync=1" : "",
                     whole ? "&wait_end_of_query=1" : "");
    curl_free(q);
    return r < 0 ? NULL : url;
}

int ch_post(store *s, const char *sql, const char *body, size_t blen, ch_buf *out, flame_err *err)
{
    ch *c = ch_of(s);
    ch_buf local = {0}, *b = out ? out : &local;
    free(b->p);
    *b = (ch_buf){0};
    sink k = {b, 0, false};
    _cleanup_free_ char *url = request_url(c, sql, body != NULL, false);
    _cleanup_curl_slist_ struct curl_slist *hdr = curl_slist_append(NULL, "Expect:");
    int rc = !url || !hdr ? flame_fail(err, FLAME_EXIT_ERROR, "out of memory") : 0;
    CURL *h = c->curl;
    if (rc == 0) {
        curl_easy_reset(h);
        request(c, h, url, hdr, sql, body, blen, &k);
    }
    CURLcode cc = rc == 0 ? curl_easy_perform(h) : CURLE_OK;
    if (rc == 0 && sink_end(&k) < 0)
        rc = flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    if (rc == 0)
        rc = answer_status(s, h, cc, b, err);
    free(local.p);
    return rc;
}

/* ch_post_all's requests */
typedef struct batch {
    ch *c;
    CURLM *m;
    struct curl_slist *hdr;
    CURL *h[CH_POST_ALL_MAX];
    char *url[CH_POST_ALL_MAX];
    sink k[CH_POST_ALL_MAX];
} batch;

/* request i (sql, its answer into *out) added to b's: -1 out of memory */
static int batch_add(batch *b, size_t i, const char *sql, ch_buf *out, bool whole)
{
    free(out->p);
    *out = (ch_buf){0};
    b->k[i] = (sink){out, 0, false};
    b->url[i] = request_url(b->c, sql, false, whole);
    b->h[i] = curl_easy_init();
    if (!b->url[i] || !b->h[i])
        return -1;
    request(b->c, b->h[i], b->url[i], b->hdr, sql, NULL, 0, &b->k[i]);
    curl_easy_setopt(b->h[i], CURLOPT_PRIVATE, (void *)&b->k[i]);
    return curl_multi_add_handle(b->m, b->h[i]) == CURLM_OK ? 0 : -1;
}

int ch_post_all(store *s, char *const *sql, ch_buf *out, size_t n, unsigned whole,
                int (*done)(void *ctx, size_t i, ch_buf *b, flame_err *err),
                int (*idle)(void *ctx, flame_err *err), void *ctx, flame_err *err)
{
    if (n == 0 || n > CH_POST_ALL_MAX)
        return flame_fail(err, FLAME_EXIT_ERROR, "ch_post_all: %zu requests", n);
    _cleanup_curl_slist_ struct curl_slist *hdr = curl_slist_append(NULL, "Expect:");
    batch b = {.c = ch_of(s), .m = curl_multi_init(), .hdr = hdr};
    int rc = !hdr || !b.m ? flame_fail(err, FLAME_EXIT_ERROR, "out of memory") : 0;
    bool asked[CH_POST_ALL_MAX] = {0};
    size_t left = 0; /* asked, not answered yet */
    /* each answer handed to done as it comes: the others go on meanwhile, and the requests
     * done has just written are asked; the first failure (a request's, or done's) ends them
     * all */
    while (rc == 0) {
        for (size_t i = 0; rc == 0 && i < n; i++) {
            if (asked[i] || !sql[i])
                continue;
            asked[i] = true;
            left++;
            if (batch_add(&b, i, sql[i], &out[i], whole >> i & 1) < 0)
                rc = flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
        }
        if (left == 0) /* all answered, and done asked for no more */
            break;
        int running = 0, msgs = 0;
        CURLMcode mc = rc == 0 ? curl_multi_perform(b.m, &running) : CURLM_OK;
        CURLMsg *msg;
        bool answered = false;
        while (mc == CURLM_OK && rc == 0 && (msg = curl_multi_info_read(b.m, &msgs))) {
            if (msg->msg != CURLMSG_DONE)
                continue;
            sink *p = NULL;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&p);
            size_t i = (size_t)(p - b.k);
            CURLcode cc = msg->data.result;
            left--;
            answered = true;
            rc = sink_end(&b.k[i]) < 0 ? flame_fail(err, FLAME_EXIT_ERROR, "out of memory")
                                       : answer_status(s, b.h[i], cc, &out[i], err);
            if (rc == 0 && done)
                rc = done(ctx, i, &out[i], err);
        }
        /* an answer: the loop's start asks what done wrote before waiting; none: idle's work,
         * a piece at a time, then a look at the connections again */
        int busy = 0;
        if (mc == CURLM_OK && rc == 0 && !answered && idle && (busy = idle(ctx, err)) < 0)
            rc = -1;
        if (mc == CURLM_OK && rc == 0 && left > 0 && !answered)
            mc = curl_multi_poll(b.m, NULL, 0, busy ? 0 : 1000, NULL);
        if (mc != CURLM_OK && rc == 0)
            rc = store_fail(err, STORE_ERR_UNREACHABLE, "%s: cannot reach the server: %s", s->name,
                            curl_multi_strerror(mc));
    }
    for (size_t i = 0; i < n; i++) {
        if (b.h[i]) {
            curl_multi_remove_handle(b.m, b.h[i]);
            curl_easy_cleanup(b.h[i]);
        }
        free(b.url[i]);
    }
    curl_multi_cleanup(b.m);
    return rc;
}

int ch_post_file(store *s, FILE *f, char **text, ch_buf *out, flame_err *err)
{
    bool bad = ferror(f);
    fclose(f);
    if (bad || !*text) {
        free(*text);
        *text = NULL;
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    }
    int rc = ch_post(s, *text, NULL, 0, out, err);
    free(*text);
    *text = NULL;
    return rc;
}

int ch_next_row(ch_buf *b, size_t *pos, char **fields, size_t *lens, int want)
{
    if (*pos >= b->n)
        return 0;
    char *line = b->p + *pos, *nl = memchr(line, '\n', b->n - *pos);
    size_t len = nl ? (size_t)(nl - line) : b->n - *pos;
    *pos += len + 1;
    return ch_tsv_fields(line, len, fields, lens, want) == want ? 1 : -1;
}

/* ---- the URL ---- */

/* %XX decoded copy of s[0..n) into out (cap bytes): user names and passwords may hold any
 * byte. -1 when it does not fit. */
static int decode(const char *s, size_t n, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++, o++) {
        unsigned v;
        if (o + 1 >= cap)
            return -1;
        if (s[i] == '%' && i + 2 < n && isxdigit((unsigned char)s[i + 1]) &&
            isxdigit((unsigned char)s[i + 2]) && sscanf(s + i + 1, "%2x", &v) == 1) {
            out[o] = (char)v;
            i += 2;
        } else {
            out[o] = s[i];
        }
    }
    out[o] = 0;
    return 0;
}

static bool all_of(const char *s, size_t n, const char *set)
{
    for (size_t i = 0; i < n; i++)
        if (!s[i] || !strchr(set, s[i]))
            return false;
    return n > 0;
}

#define ALNUM "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

/* "64M", "1G", "500000": bytes; -1 bad */
static int parse_size(const char *s, size_t n, uint64_t *out)
{
    char buf[32], *end;
    if (n == 0 || n >= sizeof buf)
        return -1;
    memcpy(buf, s, n);
    buf[n] = 0;
    errno = 0;
    unsigned long long v = strtoull(buf, &end, 10);
    int shift = *end == 'K' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : 0;
    if (end == buf || errno || (*end && (!shift || end[1])) || v > (1ull << 40))
        return -1;
    *out = (uint64_t)v << shift;
    return 0;
}

/* The password in file path: a regular file that only its owner may read or write (0600, 0400:
 * like ssh's keys), its first line. */
static int password_from_file(ch *c, const char *path, flame_err *err)
{
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0)
        return store_fail(err, STORE_ERR_URL, "store URL: password_file %.300s: %s", path,
                          strerror(errno));
    if (!S_ISREG(st.st_mode))
        return store_fail(err, STORE_ERR_URL, "store URL: password_file %.300s is not a file",
                          path);
    if (st.st_mode & 077)
        return store_fail(err, STORE_ERR_URL,
                          "store URL: password_file %.300s may be read or written by others: chmod "
                          "600 it",
                          path);
    char buf[sizeof c->password + 2];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    if (n < 0)
        return store_fail(err, STORE_ERR_URL, "store URL: password_file %.300s: %s", path,
                          strerror(errno));
    buf[n] = 0;
    size_t len = strcspn(buf, "\r\n"); /* the first line: a trailing newline is no part of it */
    if (len >= sizeof c->password) {
        explicit_bzero(buf, sizeof buf);
        return store_fail(err, STORE_ERR_URL,
                          "store URL: password_file %.300s: longer than %zu bytes", path,
                          sizeof c->password - 1);
    }
    memcpy(c->password, buf, len);
    c->password[len] = 0;
    explicit_bzero(buf, sizeof buf);
    return 0;
}

static int query_params(store *s, ch *c, const char *q, const char *tag, flame_err *err)
{
    s->spool_max = CH_SPOOL_MAX_DEFAULT;
    bool spool_set = false;
    while (q && *q) {
        size_t n = strcspn(q, "&");
        const char *eq = memchr(q, '=', n);
        size_t kl = eq ? (size_t)(eq - q) : n, vl = eq ? n - kl - 1 : 0;
        const char *v = eq ? eq + 1 : "";
        if (kl == 5 && !strncmp(q, "spool", 5)) {
            char path[4096];
            if (decode(v, vl, path, sizeof path) < 0)
                return store_fail(err, STORE_ERR_URL, "store URL: spool path too long");
            free(s->spool_path);
            s->spool_path = strdup(vl == 3 && !strncmp(v, "off", 3) ? "" : path);
            spool_set = true;
        } else if (kl == 9 && !strncmp(q, "spool_max", 9)) {
            if (parse_size(v, vl, &s->spool_max) < 0)
                return store_fail(err, STORE_ERR_URL,
                                  "store URL: spool_max wants a size (64M, 1G, bytes)");
        } else if (kl == 13 && !strncmp(q, "password_file", 13)) {
            char path[4096];
            if (decode(v, vl, path, sizeof path) < 0 || !path[0])
                return store_fail(err, STORE_ERR_URL, "store URL: password_file wants a path");
            /* a password in the URL itself wins (the URL is the more specific) */
            if (!c->password[0] && password_from_file(c, path, err) < 0)
                return -1;
        } else {
            return store_fail(err, STORE_ERR_URL,
                              "store URL: unknown parameter \"%.*s\" (spool, spool_max, "
                              "password_file)",
                              (int)(kl < 40 ? kl : 40), q);
        }
        q += n + (q[n] == '&');
    }
    if (!spool_set)
        return (s->spool_path = store_spool_default(tag, err)) ? 0 : -1;
    return s->spool_path ? 0 : flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
}

void ch_url_shown(const char *url, char *out, size_t cap)
{
    /* after the last '@' of the whole URL, not only of its authority: a password may hold an
     * unencoded '/' or '?' (which is why the URL is being refused) */
    const char *sep = strstr(url, "://");
    const char *p = sep ? sep + 3 : url;
    const char *at = strrchr(p, '@');
    snprintf(out, cap, "%.*s%.200s", (int)(p - url), url, at ? at + 1 : p);
}

int ch_parse_url(store *s, ch *c, const char *url, flame_err *err)
{
    bool tls = !strncmp(url, "clickhouses://", 14);
    const char *p = strstr(url, "://") + 3;
    size_t auth = strcspn(p, "/?");
    const char *at = memrchr(p, '@', auth);
    if (at) {
        size_t ul = strcspn(p, ":@");
        if (decode(p, ul, c->user, sizeof c->user) < 0 ||
            (p + ul < at &&
             decode(p + ul + 1, (size_t)(at - p - ul - 1), c->password, sizeof c->password) < 0))
            return store_fail(err, STORE_ERR_URL, "store URL: user or password too long");
        auth -= (size_t)(at + 1 - p);
        p = at + 1;
    }
    size_t hl = p[0] == '[' ? strcspn(p, "]") + 1 : strcspn(p, ":/?");
    if (hl > auth || hl > 255 ||
        !(p[0] == '[' ? all_of(p + 1, hl - 2, "0123456789abcdefABCDEF:.")
                      : all_of(p, hl, ALNUM ".-"))) {
        char shown[256];
        ch_url_shown(url, shown, sizeof shown);
        return store_fail(err, STORE_ERR_URL, "store URL: bad host in \"%s\"", shown);
    }
    long port = tls ? 8443 : 8123;
    if (hl < auth) {
        char *end = NULL;
        port = p[hl] == ':' ? strtol(p + hl + 1, &end, 10) : -1;
        if (port < 1 || port > 65535 || end != p + auth) {
            char shown[256];
            ch_url_shown(url, shown, sizeof shown);
            return store_fail(err, STORE_ERR_URL, "store URL: bad port in \"%s\"", shown);
        }
    }
    const char *path = p + auth, *q = strchr(path, '?');
    size_t dl = path[0] == '/' ? (q ? (size_t)(q - path) : strlen(path)) - 1 : 0;
    snprintf(c->db, sizeof c->db, "%.*s", (int)dl, path + 1);
    if (!dl)
        snprintf(c->db, sizeof c->db, "default");
    /* the name goes into SQL (CREATE DATABASE): letters, digits and _ only */
    if (dl >= sizeof c->db || !all_of(c->db, strlen(c->db), ALNUM "_"))
        return store_fail(err, STORE_ERR_URL,
                          "store URL: the database name may hold only letters, digits and _ "
                          "(64 at most)");
    char tag[200];
    snprintf(tag, sizeof tag, "%.*s_%ld_%s", (int)hl, p, port, c->db);
    /* hl is below 256: the host was checked character by character above */
    snprintf(c->base, sizeof c->base, "%s://%.*s:%ld/", tls ? "https" : "http", (int)hl, p, port);
    if (asprintf(&s->name, "%s://%.*s:%ld/%s", tls ? "clickhouses" : "clickhouse", (int)hl, p, port,
                 c->db) < 0) {
        s->name = NULL;
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    }
    if (query_params(s, c, q ? q + 1 : NULL, tag, err) < 0)
        return -1;
    /* no password in the URL nor in a file: the environment's (which other users cannot read,
     * unlike a command line) */
    const char *env = getenv("DOCKER_FLAME_STORE_PASSWORD");
    if (!c->password[0] && env && *env &&
        snprintf(c->password, sizeof c->password, "%s", env) >= (int)sizeof c->password)
        return store_fail(err, STORE_ERR_URL, "$DOCKER_FLAME_STORE_PASSWORD: longer than %zu bytes",
                          sizeof c->password - 1);
    /* a password alone is the default user's (ClickHouse's name for no name) */
    if (c->password[0] && !c->user[0])
        snprintf(c->user, sizeof c->user, "default");
    return 0;
}

int ch_post_sql(store *s, const char *sql, ch_buf *out, flame_err *err)
{
    return ch_post(s, sql, NULL, 0, out, err);
}

int ch_one(store *s, const char *sql, int64_t *out, flame_err *err)
{
    ch_buf b = {0};
    size_t pos = 0;
    char *f[1];
    size_t l[1];
    int rc = ch_post_sql(s, sql, &b, err);
    *out = rc == 0 && ch_next_row(&b, &pos, f, l, 1) == 1 ? ch_int(f[0]) : 0;
    free(b.p);
    return rc;
}

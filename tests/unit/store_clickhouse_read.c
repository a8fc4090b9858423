/* The ClickHouse reader's requests for a profile (store/clickhouse_read.c), against a fake server
 * in a thread of this program (no ClickHouse): the window totals, the pairs and the runs'
 * dictionaries are asked AT ONCE (the server answers none of them before all three are in), and
 * answered in any order: the dictionaries first (decoded while the pairs are still summed), or
 * last; a stack named through its run's dictionary, a chunk sent twice applied once, a run with
 * no dictionary counted as missing, the dictionaries' rows in any order; the rollups' rows
 * summed by the client with the windows' sums; the pairs' queries asked once the cover (which
 * rollups to read) is in; a request the server refuses ends them all with its message; no
 * server is "cannot reach". */
#include <arpa/inet.h>
#include <endian.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "store/chtext.h"
#include "store/clickhouse_impl.h"
#include "flame/profile.h"
#include "store/store.h"
#include "store/varint.h"
#include "tests/unit/render_test_util.h"
#include "tests/unit/tap.h"

enum { TOTALS, PAIRS, DICTS, ROLLED, COVER, NQ };

typedef struct fake {
    int lfd, port;
    bool dicts_first; /* answer the dictionaries first (else the pairs first, the dicts last) */
    int refuse;       /* -1, or the request answered 500 */
    char *answer[NQ];
    size_t len[NQ]; /* an answer's bytes (the pairs are binary); 0: strlen */
    int rollups;    /* the store's: 0 none, 1 hour rollups, 2 and 6-hour ones (a cover asked) */
    int first;      /* the requests that are to come at once (3 when 0) */
    int total;      /* all the requests that are to come (first when 0) */
    int asked;      /* requests that came in before any answer */
    bool apart;     /* the client waited for an answer before asking the next */
    bool whole[NQ]; /* the request asked for its answer whole (wait_end_of_query=1) */
    bool late[NQ];  /* the request came after the first ones were answered */
    bool got[NQ];   /* the request came */
    char sql[NQ][65536]; /* what it asked */
    size_t ahead;        /* the client's decode_ahead */
} fake;

/* A whole request from fd (headers and Content-Length body); which of the three it is, or -1;
 * *whole: its request line asks for the answer once the query has ended */
static int read_request(int fd, int64_t deadline_ms, char *body_out, size_t body_cap, bool *whole)
{
    char buf[65536];
    size_t n = 0;
    long body = -1;
    char *end = NULL;
    for (;;) {
        struct pollfd p = {fd, POLLIN, 0};
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        int64_t left = deadline_ms - (ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
        if (left <= 0 || poll(&p, 1, (int)left) <= 0)
            return -2; /* nothing more came in time */
        ssize_t r = read(fd, buf + n, sizeof buf - 1 - n);
        if (r <= 0)
            return -1;
        n += (size_t)r;
        buf[n] = 0;
        if (!end && (end = strstr(buf, "\r\n\r\n"))) {
            char *cl = strcasestr(buf, "Content-Length:");
            body = cl ? strtol(cl + 15, NULL, 10) : 0;
        }
        if (end && (long)(n - (size_t)(end + 4 - buf)) >= body)
            break;
        if (n + 1 >= sizeof buf)
            return -1;
    }
    if (body_out)
        snprintf(body_out, body_cap, "%s", end + 4);
    if (whole) {
        char *eol = strstr(buf, "\r\n"), *w = strstr(buf, "wait_end_of_query=1");
        *whole = w && w < eol;
    }
    return strstr(end, "FROM dict")                         ? DICTS
           : strstr(end, "GROUP BY k")                      ? PAIRS
           : strstr(end, "SELECT run, ids, ids_hi, counts") ? ROLLED
           : strstr(end, "SELECT 0, cityHash64")            ? COVER
                                                            : TOTALS;
}

static void answer_n(int fd, int status, const char *body, size_t len)
{
    char head[200];
    int h =
        snprintf(head, sizeof head,
                 "HTTP/1.1 %d X\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n", status, len);
    if (write(fd, head, (size_t)h) != h || write(fd, body, len) != (ssize_t)len)
        perror("fake server: write");
}

static void answer(int fd, int status, const char *body)
{
    answer_n(fd, status, body, strlen(body));
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void answer_one(fake *f, int w, int fd)
{
    if (f->apart)
        answer(fd, 500, "Code: 0, e.displayText() = asked one at a time\n");
    else if (w == f->refuse)
        answer(fd, 500, "Code: 47, e.displayText() = DB::Exception: refused\n");
    else
        answer_n(fd, 200, f->answer[w], f->len[w] ? f->len[w] : strlen(f->answer[w]));
    close(fd);
}

/* Accept the first requests, answering none before all are in (a client that asks one at a
 * time waits 10 s, then is told so: a 500); then answer them in the chosen order; then the
 * later ones (the pairs', once the cover is in) as they come. */
static void *serve(void *arg)
{
    fake *f = arg;
    int fd[NQ] = {-1, -1, -1, -1, -1};
    int64_t deadline = now_ms() + 10000;
    int first = f->first ? f->first : 3, total = f->total ? f->total : first;
    memset(f->late, 0, sizeof f->late);
    memset(f->got, 0, sizeof f->got);
    memset(f->sql, 0, sizeof f->sql);
    for (f->asked = 0; f->asked < first;) {
        struct pollfd p = {f->lfd, POLLIN, 0};
        int64_t left = deadline - now_ms();
        if (left <= 0 || poll(&p, 1, (int)left) <= 0)
            break;
        int c = accept(f->lfd, NULL, NULL);
        if (c < 0)
            break;
        bool whole = false;
        static char body[65536];
        int w = read_request(c, deadline, body, sizeof body, &whole);
        if (w >= 0)
            snprintf(f->sql[w], sizeof f->sql[w], "%s", body);
        if (w < 0 || fd[w] >= 0) {
            close(c);
            continue;
        }
        f->whole[w] = whole;
        f->got[w] = true;
        fd[w] = c;
        f->asked++;
    }
    f->apart = f->asked < first;
    static const int dicts_first[NQ] = {DICTS, COVER, TOTALS, PAIRS, ROLLED};
    static const int dicts_last[NQ] = {COVER, PAIRS, ROLLED, TOTALS, DICTS};
    for (int i = 0; i < NQ; i++) {
        int w = f->dicts_first ? dicts_first[i] : dicts_last[i];
        if (fd[w] >= 0)
            answer_one(f, w, fd[w]);
    }
    for (int n = f->apart ? total : first; n < total; n++) {
        struct pollfd p = {f->lfd, POLLIN, 0};
        int64_t left = deadline - now_ms();
        int c = left > 0 && poll(&p, 1, (int)left) > 0 ? accept(f->lfd, NULL, NULL) : -1;
        if (c < 0)
            break;
        bool whole = false;
        static char body[65536];
        int w = read_request(c, deadline, body, sizeof body, &whole);
        if (w < 0) {
            close(c);
            continue;
        }
        snprintf(f->sql[w], sizeof f->sql[w], "%s", body);
        f->whole[w] = whole;
        f->late[w] = f->got[w] = true;
        answer_one(f, w, c);
    }
    /* a request more than expected is refused at once (a connection reset), never left to
     * wait for an answer that does not come */
    close(f->lfd);
    f->lfd = -1;
    return NULL;
}

/* A listing's requests, one after the other, each answered as ClickHouse would for a store of
 * one JVM; what was asked is kept in f->asked_sql (until f->stop) */
typedef struct lister {
    int lfd;
    volatile bool stop;
    char asked_sql[16384];
} lister;

static void *serve_list(void *arg)
{
    lister *f = arg;
    char body[8192];
    for (;;) {
        struct pollfd p = {f->lfd, POLLIN, 0};
        if (poll(&p, 1, 100) <= 0) {
            if (f->stop)
                break;
            continue;
        }
        int c = accept(f->lfd, NULL, NULL);
        if (c < 0)
            break;
        if (read_request(c, now_ms() + 10000, body, sizeof body, NULL) >= -1) {
            size_t n = strlen(f->asked_sql);
            snprintf(f->asked_sql + n, sizeof f->asked_sql - n, "%s\n", body);
            answer(c, 200,
                   strstr(body, "SELECT host, container_id, container_name, image")
                       ? "h1\tabc123\tweb\timg\t1000\t2000\t3\t42\t70\t7\t17.0.1\tcpu\n"
                   : strstr(body, "sum(length(ids))") ? "100\n"
                   : strstr(body, "system.parts")     ? "4096\n"
                                                      : "5\n");
        }
        close(c);
    }
    return NULL;
}

static int fake_start(fake *f, pthread_t *t)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    f->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (f->lfd < 0 || bind(f->lfd, (struct sockaddr *)&a, sizeof a) < 0 || listen(f->lfd, 8) < 0 ||
        getsockname(f->lfd, (struct sockaddr *)&a, &al) < 0) {
        perror("fake server");
        return -1;
    }
    f->port = ntohs(a.sin_port);
    return pthread_create(t, NULL, serve, f) == 0 ? 0 : -1;
}

/* A dictionary of the stacks texts[0..n) as one chunk, TSV-escaped into f */
static void dict_row(FILE *f, uint64_t run, int seq, const char *const *texts, size_t n)
{
    dict d;
    dict_init(&d);
    uint32_t id;
    for (size_t i = 0; i < n; i++)
        if (dict_add_stack(&d, texts[i], strlen(texts[i]), &id) < 0)
            abort();
    uint8_t *chunk = NULL;
    size_t len = 0;
    if (dict_encode(&d, &chunk, &len) < 0)
        abort();
    fprintf(f, "%llu\t%d\t", (unsigned long long)run, seq);
    ch_tsv_put(f, (const char *)chunk, len);
    fputc('\n', f);
    free(chunk);
    dict_free(&d);
}

/* The pairs' answer as ClickHouse's RowBinary has it: per row run UInt64, id UInt32, the sum
 * UInt64, little-endian; into out (PAIR_ROW bytes a row), its length returned */
static size_t pair_rows(char *out, const uint64_t (*rows)[3], size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t run = htole64(rows[i][0]), sum = htole64(rows[i][2]);
        uint32_t id = htole32((uint32_t)rows[i][1]);
        memcpy(out + 20 * i, &run, 8);
        memcpy(out + 20 * i + 8, &id, 4);
        memcpy(out + 20 * i + 12, &sum, 8);
    }
    return 20 * n;
}

/* A rollup's row as ClickHouse's RowBinary has the rollups' query's: run UInt64; the ids as
 * gaps, each split in a low byte (Array(UInt8)) and the rest (Array(UInt16)); the counts split
 * likewise (Array(UInt8), Array(UInt32)); each array a LEB128 length, then its items */
static void rollup_row(FILE *f, uint64_t run, const uint32_t *ids, const uint64_t *counts, size_t n,
                       size_t ncounts)
{
    uint8_t v[10];
    uint64_t r = htole64(run);
    fwrite(&r, 8, 1, f);
    for (int a = 0; a < 4; a++) {
        size_t len = a < 2 ? n : ncounts;
        fwrite(v, 1, (size_t)(varint_put(v, len) - v), f);
        for (size_t i = 0; i < len; i++) {
            uint64_t x = a < 2 ? ids[i] - (i ? ids[i - 1] : 0) : counts[i];
            uint16_t h16 = htole16((uint16_t)(x / 256));
            uint32_t h32 = htole32((uint32_t)(x / 256));
            uint8_t lo = (uint8_t)(x % 256);
            if (a % 2 == 0)
                fwrite(&lo, 1, 1, f);
            else if (a == 1)
                fwrite(&h16, 2, 1, f);
            else
                fwrite(&h32, 4, 1, f);
        }
    }
}

/* One profile read through a fake server; its folded text (or NULL) and the error */
static char *read_one(fake *f, store_info *info, flame_err *e)
{
    pthread_t t;
    char url[100];
    store *s = NULL;
    profile *p = profile_new();
    char *text = NULL;
    *e = (flame_err)FLAME_ERR_INIT;
    *info = (store_info){0};
    if (!p || fake_start(f, &t) < 0)
        return NULL;
    snprintf(url, sizeof url, "clickhouse://127.0.0.1:%d/flame?spool=off", f->port);
    if (store_open(url, &s, e) == 0) {
        /* the schema's looks are not this test's: the tables are taken as they are now */
        ch_of(s)->ready = ch_of(s)->has_type = ch_of(s)->prewhere = true;
        ch_of(s)->decode_ahead = f->ahead;
        ch_of(s)->rollups = f->rollups > 0;
        ch_of(s)->rollups6 = f->rollups > 1;
        store_query q = {.since_ms = 0, .until_ms = 86400000};
        if (store_profile(s, &q, p, info, e) == 0)
            text = out_str(out_folded, p, NULL, NULL);
    }
    store_close(s);
    pthread_join(t, NULL);
    if (f->lfd >= 0)
        close(f->lfd);
    profile_free(p);
    return text;
}

/* ---- which rollups a read takes (ch_cover_make, docs/STORE.md "6-hour rollups") ---- */

static bool has(const ch_cover *cv, int k, uint64_t kid, int64_t hour)
{
    for (size_t i = 0; i < cv->n[k]; i++)
        if (cv->use[k][i].kid == kid && cv->use[k][i].hour == hour)
            return true;
    return false;
}

/* Two JVMs (kid 1, 2) over hours 6..18 (blocks 6 and 12), a window-fingerprint row per hour;
 * JVM 1's block 6 and its hour rollups valid, its block 12 stale (a window came after it) with
 * hour 14's rollup stale too; JVM 2 with hour rollups only, hour 7's twice (a duplicate not
 * merged yet) and hour 9 without one. */
static void cover_rules(void)
{
    ch_fp w[24], h[24], b[4];
    size_t nw = 0, nh = 0, nb = 0;
    for (uint64_t kid = 1; kid <= 2; kid++)
        for (int64_t hr = 6; hr < 18; hr++) {
            uint64_t late = kid == 1 && hr == 14; /* one window more than its rollups counted */
            w[nw++] = (ch_fp){kid, 10 + late, 1000 * kid + (uint64_t)hr + late, hr};
            if (!(kid == 2 && hr == 9))
                h[nh++] = (ch_fp){kid, 10, 1000 * kid + (uint64_t)hr, hr};
        }
    h[nh++] = (ch_fp){2, 10, 2007, 7}; /* the duplicate */
    for (int64_t blk = 6; blk < 18; blk += 6) {
        ch_fp sum = {1, 0, 0, blk};
        for (int64_t hr = blk; hr < blk + 6; hr++)
            sum.nw += 10, sum.fp += 1000 + (uint64_t)hr;
        b[nb++] = sum; /* block 12's misses the late window */
    }
    ch_fp *row[FP_N] = {w, h, b};
    size_t n[FP_N] = {nw, nh, nb};
    ch_cover cv;
    int rc = ch_cover_make(row, n, &cv);
    ok(rc == 1 && cv.n[FP_B] == 1 && has(&cv, FP_B, 1, 6),
       "the valid block is taken, the stale one not (%zu blocks)", cv.n[FP_B]);
    bool hours_ok = true;
    for (int64_t hr = 6; hr < 18; hr++) {
        hours_ok &= has(&cv, FP_H, 1, hr) == (hr >= 12 && hr != 14);
        hours_ok &= has(&cv, FP_H, 2, hr) == (hr != 9);
    }
    ok(hours_ok && cv.n[FP_H] == 5 + 11 + 1,
       "hour rollups: none inside the valid block, the stale one not, the duplicate named twice "
       "(%zu)",
       cv.n[FP_H]);
    ok(cv.n[FP_W] == 2 && has(&cv, FP_W, 1, 14) && has(&cv, FP_W, 2, 9),
       "the hours read from windows: the stale hour's and the one without a rollup (%zu)",
       cv.n[FP_W]);
    ch_cover_free(&cv);
    /* a range of more names than a query should carry: the one-query form */
    size_t big = CH_COVER_MAX + 1;
    ch_fp *many = calloc(big, sizeof *many);
    for (size_t i = 0; many && i < big; i++)
        many[i] = (ch_fp){i + 1, 1, i, 100};
    ch_fp *row2[FP_N] = {many, NULL, NULL};
    size_t n2[FP_N] = {many ? big : 0, 0, 0};
    rc = ch_cover_make(row2, n2, &cv);
    ok(many && rc == 0 && !cv.use[FP_W] && !cv.n[FP_W],
       "more than CH_COVER_MAX names: none (rc %d)", rc);
    free(many);
}

int main(void)
{
    static const char *const run7[] = {"main;a;b", "main;c"}, *const run9[] = {"x;y"},
                             *const run11[] = {"z;w"};
    char *dicts = NULL;
    size_t dl = 0;
    FILE *m = open_memstream(&dicts, &dl);
    dict_row(m, 9, 1, run9, 1); /* not in run order: the server does not sort them */
    dict_row(m, 7, 1, run7, 2);
    dict_row(m, 7, 1, run7, 2);   /* the same chunk twice: applied once */
    dict_row(m, 11, 1, run11, 1); /* a run of the rollups only */
    fclose(m);
    /* run 8 has no dictionary: its samples are missing; not in (run, id) order, as a server
     * might answer */
    static const uint64_t pairs[][3] = {{7, 1, 5}, {9, 1, 4}, {8, 1, 2}, {7, 2, 3}};
    char pairs_bin[4 * 20];
    fake f = {
        .refuse = -1,
        .answer = {[TOTALS] = "4\t14\t0\t40000\t99\t99\n", [PAIRS] = pairs_bin, [DICTS] = dicts},
        .len = {[PAIRS] = pair_rows(pairs_bin, pairs, 4)}};
    store_info info;
    flame_err e;
    static const char want[] = "main;a;b 5\nmain;c 3\nx;y 4\n";

    /* the dictionaries answered first or last; all decoded before the pairs are in, none (each
     * after, one at a time), or the first run only */
    static const struct {
        bool dicts_first;
        size_t ahead;
        const char *what;
    } rounds[] = {
        {true, CH_DECODE_AHEAD, "dictionaries answered first, decoded at once"},
        {false, CH_DECODE_AHEAD, "dictionaries answered last"},
        {true, 0, "dictionaries decoded one at a time after the pairs"},
        {true, 1, "the first run's dictionary decoded ahead, the next after the pairs"},
    };
    for (size_t r = 0; r < sizeof rounds / sizeof *rounds; r++) {
        f.dicts_first = rounds[r].dicts_first;
        f.ahead = rounds[r].ahead;
        char *text = read_one(&f, &info, &e);
        ok(!f.apart && f.asked == 3,
           "the totals, pairs and dictionaries are asked at once (%d of 3 came in before any "
           "answer)",
           f.asked);
        ok(f.whole[PAIRS] && !f.whole[DICTS],
           "the pairs (binary rows) are asked whole, the dictionaries as they come");
        ok(text && !strcmp(text, want), "%s: each stack named by its run's dictionary%s%s",
           rounds[r].what, text && !strcmp(text, want) ? "" : ": got ",
           text ? (strcmp(text, want) ? text : "") : e.msg);
        ok(info.windows == 4 && info.samples == 14 && info.missing == 2 && info.hz_max == 99,
           "the totals counted, a run without a dictionary missing (windows %llu, missing %llu)",
           (unsigned long long)info.windows, (unsigned long long)info.missing);
        free(text);
    }

    f.dicts_first = true;
    f.ahead = CH_DECODE_AHEAD;
    f.refuse = PAIRS;
    char *text = read_one(&f, &info, &e);
    ok(!text && e.code && strstr(e.msg, "answered 500") && strstr(e.msg, "refused"),
       "a refused request ends the read with the server's line: %s", e.msg);
    free(text);

    /* a pairs answer that is not whole rows (another format, a cut answer): refused, never
     * read as sums. A failure halfway is not among them: the pairs are asked whole, so it comes
     * as a 500 (checked above) */
    f.refuse = -1;
    f.len[PAIRS] = 3 * 20 + 7;
    text = read_one(&f, &info, &e);
    ok(!text && e.code && strstr(e.msg, "unreadable answer (67 bytes of pairs)"),
       "a pairs answer of a broken row: %s", e.msg);
    free(text);

    /* rollups: without a cover (hour rollups alone), summed by the server with the windows (one
     * pairs' query, no rows of rollups asked); with one (a valid 6-hour block), their rows
     * summed by the client with the windows' sums (run 7's id 300, a gap of more than a byte,
     * is no stack of its dictionary: missing; run 11 only in a rollup), the pairs' queries
     * asked once the cover is in */
    f.len[PAIRS] = pair_rows(pairs_bin, pairs, 4);
    char *rolled = NULL;
    size_t rl = 0;
    m = open_memstream(&rolled, &rl);
    rollup_row(m, 9, (const uint32_t[]){1}, (const uint64_t[]){1}, 1, 1);
    rollup_row(m, 7, (const uint32_t[]){1, 2}, (const uint64_t[]){10, 20}, 2, 2);
    rollup_row(m, 7, (const uint32_t[]){2, 300}, (const uint64_t[]){5, 300}, 2, 2);
    rollup_row(m, 11, (const uint32_t[]){1}, (const uint64_t[]){7}, 1, 1);
    fclose(m);
    char cover[400];
    int cl = 0;
    for (int hr = 0; hr < 6; hr++)
        cl += snprintf(cover + cl, sizeof cover - (size_t)cl, "0\t77\t%d\t1\t1\n", hr);
    snprintf(cover + cl, sizeof cover - (size_t)cl, "2\t77\t0\t6\t6\n");
    f.answer[ROLLED] = rolled;
    f.len[ROLLED] = rl;
    f.answer[COVER] = cover;
    static const char want_rolled[] = "main;a;b 15\nmain;c 28\nx;y 5\nz;w 7\n";
    f.rollups = 1;
    text = read_one(&f, &info, &e);
    bool one_query = text && !strcmp(text, want);
    ok(one_query && f.asked == 3 && !f.got[ROLLED] && !f.got[COVER],
       "hour rollups without a cover: summed by the server with the windows (%d asked)%s%s",
       f.asked, one_query ? "" : ": got ",
       one_query ? ""
       : text    ? text
                 : e.msg);
    ok(strstr(f.sql[PAIRS], "UNION ALL") && strstr(f.sql[PAIRS], "FROM rollups WHERE"),
       "... the hour rollups in the pairs' query");
    free(text);
    for (int dicts_first = 0; dicts_first < 2; dicts_first++) {
        f.rollups = 2;
        f.first = 3;
        f.total = 5;
        f.dicts_first = dicts_first;
        text = read_one(&f, &info, &e);
        bool same = text && !strcmp(text, want_rolled);
        ok(same && info.missing == 2 + 300,
           "6-hour rollups, the %s first: the rollups' rows summed with the windows' (missing "
           "%llu)%s%s",
           dicts_first ? "dictionaries" : "cover", (unsigned long long)info.missing,
           same ? "" : ": got ",
           same   ? ""
           : text ? text
                  : e.msg);
        ok(f.whole[ROLLED] && f.whole[PAIRS],
           "the rollups' rows and the pairs (binary) are asked whole");
        ok(!f.apart && f.asked == 3 && !f.late[DICTS] && f.late[PAIRS] && f.late[ROLLED],
           "the cover asked with the totals and the dictionaries, the pairs' queries once it is "
           "in (%d at once)",
           f.asked);
        ok(!strstr(f.sql[PAIRS], "rollups") && strstr(f.sql[ROLLED], "FROM rollups_6h WHERE"),
           "the block rollup named in the rollups' query only, not in the pairs'");
        free(text);
    }
    /* a cover of more rollup rows than the client sums (204 valid blocks of 51 JVMs): summed
     * by the server with the windows, no rows of rollups asked */
    size_t bcap = 51 * 28 * 40, bl = 0;
    char *big = malloc(bcap);
    for (int kid = 1; big && kid <= 51; kid++) {
        for (int hr = 0; hr < 24; hr++)
            bl += (size_t)snprintf(big + bl, bcap - bl, "0\t%d\t%d\t1\t1\n", kid, hr);
        for (int blk = 0; blk < 24; blk += 6)
            bl += (size_t)snprintf(big + bl, bcap - bl, "2\t%d\t%d\t6\t6\n", kid, blk);
    }
    f.answer[COVER] = big;
    f.total = 4;
    text = read_one(&f, &info, &e);
    ok(text && !strcmp(text, want) && !f.got[ROLLED] && strstr(f.sql[PAIRS], "FROM rollups_6h"),
       "204 block rollups: summed by the server with the windows (%s)", text ? "" : e.msg);
    free(text);
    free(big);
    f.answer[COVER] = cover;
    f.total = 5;
    /* a rollups' answer whose arrays do not match (a cut or crafted answer): refused */
    m = open_memstream(&rolled, &rl);
    rollup_row(m, 7, (const uint32_t[]){1, 2}, (const uint64_t[]){10}, 2, 1);
    fclose(m);
    free((char *)f.answer[ROLLED]);
    f.answer[ROLLED] = rolled;
    f.len[ROLLED] = rl;
    text = read_one(&f, &info, &e);
    ok(!text && e.code && strstr(e.msg, "unreadable answer") && strstr(e.msg, "of rollups"),
       "a rollups' answer of arrays that do not match: %s", e.msg);
    free(text);
    free(rolled);
    f.rollups = f.first = f.total = 0;

    /* the listing: with its sizes, and without them (serve's sources), which asks for no
     * window's arrays */
    for (int no_sizes = 0; no_sizes < 2; no_sizes++) {
        static lister lf;
        pthread_t t;
        struct sockaddr_in la = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t lal = sizeof la;
        memset(&lf, 0, sizeof lf);
        lf.lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (lf.lfd < 0 || bind(lf.lfd, (struct sockaddr *)&la, sizeof la) < 0 ||
            listen(lf.lfd, 8) < 0 || getsockname(lf.lfd, (struct sockaddr *)&la, &lal) < 0 ||
            pthread_create(&t, NULL, serve_list, &lf) != 0)
            return perror("fake server"), 1;
        char lurl[100];
        snprintf(lurl, sizeof lurl, "clickhouse://127.0.0.1:%d/flame?spool=off",
                 ntohs(la.sin_port));
        store *ls = NULL;
        store_listing li = {0};
        e = (flame_err)FLAME_ERR_INIT;
        int rc = store_open(lurl, &ls, &e);
        if (rc == 0) {
            ch_of(ls)->ready = ch_of(ls)->has_type = true;
            store_query q = {.no_sizes = no_sizes};
            rc = store_list(ls, &q, &li, &e);
        }
        store_close(ls);
        lf.stop = true;
        pthread_join(t, NULL);
        close(lf.lfd);
        ok(rc == 0 && li.n == 1 && !strcmp(li.e[0].container_name, "web") && li.e[0].windows == 3 &&
               li.e[0].samples == 42 && li.e[0].jvm_pid == 7,
           "listed %s the sizes: one JVM (%s)", no_sizes ? "without" : "with", rc ? e.msg : "");
        if (no_sizes)
            ok(!strstr(lf.asked_sql, "ids") && !strstr(lf.asked_sql, "system.parts") &&
                   li.sizes_unknown && li.stacks == 0,
               "without the sizes: no window's arrays read, no disk or stacks asked");
        else
            ok(strstr(lf.asked_sql, "sum(length(ids))") && li.stacks == 5 &&
                   li.disk_bytes == 4096 && !li.sizes_unknown,
               "with the sizes: the arrays' lengths, the disk and the stacks asked");
        store_listing_free(&li);
    }

    /* nobody listens: the port of a socket bound but not listening */
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    bind(s, (struct sockaddr *)&a, sizeof a);
    getsockname(s, (struct sockaddr *)&a, &al);
    char url[100];
    snprintf(url, sizeof url, "clickhouse://127.0.0.1:%d/flame?spool=off", ntohs(a.sin_port));
    store *st = NULL;
    e = (flame_err)FLAME_ERR_INIT;
    profile *p = profile_new();
    info = (store_info){0};
    if (store_open(url, &st, &e) == 0) {
        ch_of(st)->ready = ch_of(st)->has_type = true;
        store_query q = {.since_ms = 0, .until_ms = 86400000};
        ok(store_profile(st, &q, p, &info, &e) < 0 && strstr(e.msg, "cannot reach the server"),
           "no server: %s", e.msg);
    } else {
        ok(0, "open %s: %s", url, e.msg);
    }
    store_close(st);
    profile_free(p);
    close(s);
    free(dicts);
    cover_rules();
    return tap_done();
}

/* flame/pb.c and flame/pprof.c: the protobuf writer against known bytes, and pprof files decoded
 * by a reader written here (gunzip, then profile.proto's fields by number) back into folded
 * stacks with their labels: JIT marks, inlined frames, labels per layout, differentials, period
 * and times, hostile names (every byte value, 100 kB), and the errors. go tool pprof reads the
 * same files in tests/e2e/pprof-go.t. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "flame/pb.h"
#include "flame/escape.h"
#include "flame/pprof.h"
#include "tests/unit/render_test_util.h"
#include "tests/unit/tap.h"

/* ---- a minimal profile.proto reader ---- */

typedef struct rd {
    const uint8_t *p, *end;
    int bad;
} rd;

static uint64_t rd_varint(rd *r)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (r->p >= r->end) {
            r->bad = 1;
            return 0;
        }
        uint8_t b = *r->p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return v;
    }
    r->bad = 1;
    return 0;
}

/* Next field: its number, wire type; a LEN field's bytes in *sub. 0 at the end. */
static uint32_t rd_field(rd *r, unsigned *wt, uint64_t *val, rd *sub)
{
    if (r->p >= r->end || r->bad)
        return 0;
    uint64_t key = rd_varint(r);
    *wt = (unsigned)(key & 7);
    if (*wt == PB_VARINT) {
        *val = rd_varint(r);
    } else if (*wt == PB_LEN) {
        uint64_t n = rd_varint(r);
        if (n > (uint64_t)(r->end - r->p)) {
            r->bad = 1;
            return 0;
        }
        *sub = (rd){r->p, r->p + n, 0};
        r->p += n;
    } else {
        r->bad = 1;
        return 0;
    }
    return r->bad ? 0 : (uint32_t)(key >> 3);
}

/* Packed or single varints of a repeated field, appended to v. */
static void rd_repeated(unsigned wt, uint64_t val, rd *sub, uint64_t *v, size_t *n, size_t cap)
{
    if (wt == PB_VARINT) {
        if (*n < cap)
            v[(*n)++] = val;
        return;
    }
    while (sub->p < sub->end && !sub->bad && *n < cap)
        v[(*n)++] = rd_varint(sub);
}

#define MAXT 4096
typedef struct decoded {
    int bad;
    size_t nstr;
    const uint8_t *str[MAXT];
    size_t strlen_[MAXT];
    uint64_t sample_type[4][2];
    size_t nsample_type;
    uint64_t fn_id[MAXT], fn_name[MAXT];
    size_t nfn;
    uint64_t loc_id[MAXT], loc_fn[MAXT][16], loc_mapping[MAXT];
    size_t loc_nfn[MAXT], nloc;
    size_t nmapping;
    int64_t time_ns, duration_ns, period;
    uint64_t period_type[2];
    uint64_t comment[4];
    size_t ncomment;
    rd samples[MAXT];
    size_t nsamples;
    uint8_t *raw;
} decoded;

static uint8_t *gunzip(const uint8_t *in, size_t n, size_t *outn)
{
    z_stream z = {0};
    if (inflateInit2(&z, 15 + 16) != Z_OK)
        return NULL;
    size_t cap = 1 << 16, len = 0;
    uint8_t *out = malloc(cap);
    z.next_in = (Bytef *)in;
    z.avail_in = (uInt)n;
    int r;
    do {
        if (len == cap)
            out = realloc(out, cap *= 2);
        z.next_out = out + len;
        z.avail_out = (uInt)(cap - len);
        r = inflate(&z, Z_NO_FLUSH);
        len = cap - z.avail_out;
    } while (r == Z_OK);
    inflateEnd(&z);
    if (r != Z_STREAM_END) {
        free(out);
        return NULL;
    }
    *outn = len;
    return out;
}

static void decode(const char *gz, size_t gzn, decoded *d)
{
    memset(d, 0, sizeof *d);
    size_t n;
    d->raw = gunzip((const uint8_t *)gz, gzn, &n);
    if (!d->raw) {
        d->bad = 1;
        return;
    }
    rd r = {d->raw, d->raw + n, 0};
    unsigned wt;
    uint64_t v;
    rd sub;
    for (uint32_t f; (f = rd_field(&r, &wt, &v, &sub));) {
        rd s2;
        unsigned wt2;
        uint64_t v2;
        switch (f) {
        case 1: /* sample_type */
        case 11: /* period_type */ {
            uint64_t vt[2] = {0, 0};
            for (uint32_t g; (g = rd_field(&sub, &wt2, &v2, &s2));)
                if (g <= 2)
                    vt[g - 1] = v2;
            if (f == 11)
                memcpy(d->period_type, vt, sizeof vt);
            else if (d->nsample_type < 4)
                memcpy(d->sample_type[d->nsample_type++], vt, sizeof vt);
            break;
        }
        case 2:
            if (d->nsamples < MAXT)
                d->samples[d->nsamples++] = sub;
            break;
        case 3:
            d->nmapping++;
            break;
        case 4: {
            size_t k = d->nloc++;
            for (uint32_t g; (g = rd_field(&sub, &wt2, &v2, &s2));) {
                if (g == 1)
                    d->loc_id[k] = v2;
                if (g == 2)
                    d->loc_mapping[k] = v2;
                if (g == 4) {
                    rd s3;
                    unsigned wt3;
                    uint64_t v3;
                    for (uint32_t h; (h = rd_field(&s2, &wt3, &v3, &s3));)
                        if (h == 1 && d->loc_nfn[k] < 16)
                            d->loc_fn[k][d->loc_nfn[k]++] = v3;
                }
            }
            break;
        }
        case 5: {
            size_t k = d->nfn++;
            for (uint32_t g; (g = rd_field(&sub, &wt2, &v2, &s2));) {
                if (g == 1)
                    d->fn_id[k] = v2;
                if (g == 2)
                    d->fn_name[k] = v2;
            }
            break;
        }
        case 6:
            if (d->nstr < MAXT) {
                d->str[d->nstr] = sub.p;
                d->strlen_[d->nstr++] = (size_t)(sub.end - sub.p);
            }
            break;
        case 9:
            d->time_ns = (int64_t)v;
            break;
        case 10:
            d->duration_ns = (int64_t)v;
            break;
        case 12:
            d->period = (int64_t)v;
            break;
        case 13:
            rd_repeated(wt, v, &sub, d->comment, &d->ncomment, 4);
            break;
        default:
            break;
        }
        if (d->nloc >= MAXT || d->nfn >= MAXT)
            break;
    }
    d->bad |= r.bad;
}

static void put_str(FILE *f, const decoded *d, uint64_t i)
{
    if (i < d->nstr)
        fwrite(d->str[i], 1, d->strlen_[i], f);
    else
        fputs("<bad string>", f);
}

static const char *cstr(const decoded *d, uint64_t i, char *buf, size_t cap)
{
    size_t n = i < d->nstr ? d->strlen_[i] : 0;
    if (n >= cap)
        n = cap - 1;
    if (n)
        memcpy(buf, d->str[i], n);
    buf[n] = 0;
    return buf;
}

static void put_fn(FILE *f, const decoded *d, uint64_t id)
{
    for (size_t i = 0; i < d->nfn; i++)
        if (d->fn_id[i] == id) {
            put_str(f, d, d->fn_name[i]);
            return;
        }
    fputs("<bad function>", f);
}

/* The samples as sorted text lines "root;...;leaf V0 V1 {key=value,...}": locations expanded,
 * inline lines innermost first as pprof keeps them, so a location shows caller;inlined. */
static int cmp_lines(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *samples_text(decoded *d)
{
    char **lines = calloc(d->nsamples + 1, sizeof *lines);
    for (size_t s = 0; s < d->nsamples; s++) {
        size_t len;
        FILE *f = open_memstream(&lines[s], &len);
        uint64_t locs[256], vals[4];
        size_t nl = 0, nv = 0;
        rd sub = d->samples[s], s2;
        unsigned wt;
        uint64_t v;
        char labels[4096] = "";
        for (uint32_t g; (g = rd_field(&sub, &wt, &v, &s2));) {
            if (g == 1)
                rd_repeated(wt, v, &s2, locs, &nl, 256);
            if (g == 2)
                rd_repeated(wt, v, &s2, vals, &nv, 4);
            if (g == 3) {
                uint64_t key = 0, str = 0, num = 0;
                rd s3;
                unsigned wt3;
                uint64_t v3;
                for (uint32_t h; (h = rd_field(&s2, &wt3, &v3, &s3));)
                    *(h == 1 ? &key : h == 2 ? &str : &num) = v3;
                char kb[64], vb[2048];
                size_t o = strlen(labels);
                if (str)
                    snprintf(labels + o, sizeof labels - o, "%s%s=%s", o ? "," : "",
                             cstr(d, key, kb, sizeof kb), cstr(d, str, vb, sizeof vb));
                else
                    snprintf(labels + o, sizeof labels - o, "%s%s=%lld", o ? "," : "",
                             cstr(d, key, kb, sizeof kb), (long long)num);
            }
        }
        for (size_t i = nl; i-- > 0;) {
            size_t k = 0;
            while (k < d->nloc && d->loc_id[k] != locs[i])
                k++;
            if (k == d->nloc) {
                fputs("<bad location>;", f);
                continue;
            }
            for (size_t j = d->loc_nfn[k]; j-- > 0;) {
                put_fn(f, d, d->loc_fn[k][j]);
                fputc(i || j ? ';' : ' ', f);
            }
        }
        fprintf(f, "%lld %lld {%s}", nv > 0 ? (long long)vals[0] : -1,
                nv > 1 ? (long long)vals[1] : -1, labels);
        fclose(f);
    }
    qsort(lines, d->nsamples, sizeof *lines, cmp_lines);
    size_t len;
    char *all;
    FILE *f = open_memstream(&all, &len);
    for (size_t s = 0; s < d->nsamples; s++) {
        fprintf(f, "%s\n", lines[s]);
        free(lines[s]);
    }
    fclose(f);
    free(lines);
    return all;
}

/* ---- writing ---- */

static char *pprof_bytes(const profile *p, const pprof_meta *m, size_t *n)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, n);
    flame_err err = FLAME_ERR_INIT;
    int rc = pprof_export(p, m, f, &err);
    fclose(f);
    if (rc < 0) {
        printf("# export failed: %s\n", err.msg);
        free(buf);
        return NULL;
    }
    return buf;
}

/* Decoded samples of the folded text given, with m. */
static char *roundtrip(const char *folded, const pprof_meta *m, decoded *d)
{
    profile *p = load_str(folded);
    size_t n = 0;
    char *gz = p ? pprof_bytes(p, m, &n) : NULL;
    profile_free(p);
    if (!gz)
        return strdup("<export failed>");
    decode(gz, n, d);
    free(gz);
    return d->bad ? strdup("<undecodable>") : samples_text(d);
}

static void test_wire(void)
{
    pb_buf w = {0};
    pb_varint(&w, 300);
    ok(w.n == 2 && w.b[0] == 0xac && w.b[1] == 0x02, "varint 300 = ac 02 (the protobuf docs')");
    pb_reset(&w);
    pb_int(&w, 1, -1);
    ok(w.n == 11 && w.b[0] == 0x08 && w.b[1] == 0xff && w.b[9] == 0xff && w.b[10] == 0x01,
       "int64 -1: key 08, ten bytes of two's complement");
    pb_reset(&w);
    pb_uint(&w, 9, 0);
    ok(w.n == 0, "zero varint fields are left out (proto3 default)");
    pb_bytes(&w, 6, "", 0);
    pb_bytes(&w, 6, "ab", 2);
    ok(w.n == 6 && !memcmp(w.b,
                           "\x32\x00\x32\x02"
                           "ab",
                           6),
       "strings: 32 00, 32 02 'ab'");
    pb_reset(&w);
    uint64_t v[3] = {1, 128, 3};
    pb_packed_u64(&w, 1, v, 3);
    ok(w.n == 6 && !memcmp(w.b, "\x0a\x04\x01\x80\x01\x03", 6), "packed: 0a 04 01 80 01 03");
    pb_reset(&w);
    pb_varint(&w, UINT64_MAX);
    ok(w.n == 10 && pb_varint_len(UINT64_MAX) == 10 && pb_varint_len(127) == 1 &&
           pb_varint_len(128) == 2,
       "varint lengths at the edges");
    pb_free(&w);
}

static void test_stacks(void)
{
    decoded *d = calloc(1, sizeof *d);
    char *t = roundtrip("main;Work.run_[j];Work.step_[j] 70\n"
                        "main;Work.run_[j];Work.step_[j];Inl.x_[i];Inl.y_[i] 20\n"
                        "main;Work.run_[j];Util.y 10\n"
                        "main;Interpreter;Work.step 5\n"
                        "vm_[k];Inl.z_[i] 1\n",
                        NULL, d);
    is_str(t,
           "main;Interpreter;Work.step 5 50505050 {}\n"
           "main;Work.run;Util.y 10 101010100 {}\n"
           "main;Work.run;Work.step 70 707070700 {}\n"
           "main;Work.run;Work.step;Inl.x;Inl.y 20 202020200 {}\n"
           "vm_[k];Inl.z 1 10101010 {}\n",
           "stacks: _[j] dropped, _[i] inline, others as they are; values samples and ns at 99 Hz");
    char b1[32], b2[32];
    ok(d->nsample_type == 2 && !strcmp(cstr(d, d->sample_type[0][0], b1, 32), "samples") &&
           !strcmp(cstr(d, d->sample_type[0][1], b2, 32), "count"),
       "sample type 0: samples/count");
    ok(!strcmp(cstr(d, d->sample_type[1][0], b1, 32), "cpu") &&
           !strcmp(cstr(d, d->sample_type[1][1], b2, 32), "nanoseconds") &&
           !strcmp(cstr(d, d->period_type[0], b1, 32), "cpu"),
       "sample type 1 and period type: cpu/nanoseconds");
    is_int(d->period, 10101010, "period: 1e9 / 99 Hz ns");
    ok(d->nstr > 0 && d->strlen_[0] == 0, "string 0 is \"\"");
    /* Work.step appears alone and as the host of Inl.x/Inl.y: two locations, one function */
    size_t step_fns = 0;
    for (size_t i = 0; i < d->nfn; i++)
        step_fns += !strcmp(cstr(d, d->fn_name[i], b1, 32), "Work.step");
    is_int(step_fns, 1, "one function per name (Work.step_[j] and Work.step are one)");
    size_t inl = 0;
    for (size_t k = 0; k < d->nloc; k++)
        if (d->loc_nfn[k] == 3)
            inl++;
    is_int(inl, 1, "the inlined run is one location with three lines");
    is_int(d->nloc, 7, "locations: one per distinct frame run");
    ok(d->nmapping == 1 && d->loc_mapping[0] == 1, "one mapping, every location in it");
    ok(d->ncomment == 1 && !strcmp(cstr(d, d->comment[0], b1, 32), "docker-flame " FLAME_VERSION),
       "comment names the writer");
    ok(d->time_ns == 0 && d->duration_ns == 0, "no time or duration when unknown");
    free(t);
    free(d->raw);
    free(d);
}

static void test_labels(void)
{
    decoded *d = calloc(1, sizeof *d);
    pprof_meta m = {.hz = 49,
                    .time_ns = 1700000000123456789,
                    .duration_ns = 30000000000,
                    .container = "web",
                    .jvm_pid = 7,
                    .layout = PPROF_THREAD_FIRST,
                    .comment = "web, 30 s"};
    char *t = roundtrip("worker-0;Work.run_[j] 3\nC2 CompilerThre;[unknown] 2\nlonely 1\n", &m, d);
    is_str(t,
           "C2 CompilerThre;[unknown] 2 40816326 {container=web,thread=C2 CompilerThre,pid=7}\n"
           "lonely 1 20408163 {container=web,thread=lonely,pid=7}\n"
           "worker-0;Work.run 3 61224489 {container=web,thread=worker-0,pid=7}\n",
           "one JVM: container, thread (the first frame) and pid labels; 49 Hz");
    is_int(d->period, 20408163, "period at 49 Hz");
    ok(d->time_ns == 1700000000123456789 && d->duration_ns == 30000000000, "time and duration");
    char b[32];
    ok(d->ncomment == 2 && !strcmp(cstr(d, d->comment[1], b, 32), "web, 30 s"), "the comment");
    free(t);
    free(d->raw);

    m = (pprof_meta){.container = "api", .layout = PPROF_JVM_THEN_THREAD};
    t = roundtrip("java-12 App;main;App.run 4\njava-345 Other;GC Thread#0;gc 1\n"
                  "java-x;t;f 1\njava-99999999999;t;f 1\n",
                  &m, d);
    is_str(
        t,
        "java-12 App;main;App.run 4 40404040 {container=api,thread=main,pid=12}\n"
        "java-345 Other;GC Thread#0;gc 1 10101010 {container=api,thread=GC Thread#0,pid=345}\n"
        "java-99999999999;t;f 1 10101010 {container=api,thread=t}\n"
        "java-x;t;f 1 10101010 {container=api,thread=t}\n",
        "several JVMs: pid from the java-<pid> root, thread the second frame; bad roots: no pid");
    free(t);
    free(d->raw);
    free(d);
}

static void test_diff(void)
{
    decoded *d = calloc(1, sizeof *d);
    char *t = roundtrip("a;b 10 4\na;c 0 6\na;d 3 0\n", NULL, d);
    is_str(t,
           "a;b -10 -101010100 {pprof::base=true}\n"
           "a;b 4 40404040 {}\n"
           "a;c 6 60606060 {}\n"
           "a;d -3 -30303030 {pprof::base=true}\n",
           "differential: AFTER as samples, BEFORE negated with pprof::base (go's -diff_base)");
    free(t);
    free(d->raw);
    free(d);
}

static void test_hostile(void)
{
    decoded *d = calloc(1, sizeof *d);
    /* every byte but ';' '\n' NUL (a folded frame cannot hold them) in one name, a 100 kB name,
     * markup and invalid UTF-8: the string table holds the bytes, except that invalid UTF-8
     * becomes U+FFFD (proto3 strings must be UTF-8: a strict reader refuses the whole file) */
    char all[300];
    size_t o = 0;
    for (int c = 1; c < 256; c++)
        if (c != ';' && c != '\n' && c != '\r' && c != ' ')
            all[o++] = (char)c;
    all[o] = 0;
    size_t big = 100000;
    char *text = malloc(big + 2 * sizeof all + 64);
    char *w = text;
    w += sprintf(w, "x%sy;", all);
    memset(w, 'A', big);
    w += big;
    w += sprintf(w, "_[i] 2\n<&\"\xff\xfe]]>;\xc3 1\n");
    profile *p = load_str(text);
    size_t n = 0;
    char *gz = p ? pprof_bytes(p, NULL, &n) : NULL;
    ok(gz != NULL, "hostile names export");
    if (gz)
        decode(gz, n, d);
    ok(gz && !d->bad, "and decode");
    /* what `all` becomes: bytes >= 0x80 alone are invalid UTF-8 here (no valid sequence among
     * consecutive values but c2 80.. is not formed: each lead byte is followed by another lead) */
    char want[1200];
    size_t wn = 0;
    want[wn++] = 'x';
    const unsigned char *ua = (const unsigned char *)all;
    for (size_t i = 0; i < o;) {
        size_t l;
        if (escape_utf8_next(ua + i, o - i, &l) >= 0) {
            memcpy(want + wn, ua + i, l);
            wn += l;
        } else {
            memcpy(want + wn, "\xef\xbf\xbd", 3);
            wn += 3;
        }
        i += l;
    }
    want[wn++] = 'y';
    int found_all = 0, found_big = 0, found_bad = 0, found_markup = 0;
    for (size_t i = 0; i < d->nstr; i++) {
        if (d->strlen_[i] == wn && !memcmp(d->str[i], want, wn))
            found_all = 1;
        if (d->strlen_[i] == 12 && !memcmp(d->str[i], "<&\"\xef\xbf\xbd\xef\xbf\xbd]]>", 12))
            found_markup = 1;
        if (d->strlen_[i] == big && d->str[i][0] == 'A' && d->str[i][big - 1] == 'A')
            found_big = 1;
        if (d->strlen_[i] == 3 && !memcmp(d->str[i], "\xef\xbf\xbd", 3))
            found_bad = 1;
    }
    ok(found_all && found_big && found_bad && found_markup,
       "every byte value, 100 kB (its _[i] dropped), markup, a lone UTF-8 lead byte: the bytes, "
       "invalid UTF-8 as U+FFFD");
    free(gz);
    free(text);
    profile_free(p);
    free(d->raw);
    free(d);
}

static void test_errors(void)
{
    profile *p = profile_new();
    flame_err err = FLAME_ERR_INIT;
    FILE *f = fopen("/dev/null", "w");
    ok(pprof_export(p, NULL, f, &err) < 0 && strstr(err.msg, "empty profile"),
       "an empty profile is an error: %s", err.msg);
    fclose(f);
    profile_free(p);
    p = load_str("a;b 1\n");
    f = fopen("/dev/full", "w");
    err = (flame_err)FLAME_ERR_INIT;
    ok(f && pprof_export(p, NULL, f, &err) < 0 && strstr(err.msg, "No space left"),
       "a full disk is a write error: %s", err.msg);
    if (f)
        fclose(f);
    /* huge counts saturate instead of wrapping */
    decoded *d = calloc(1, sizeof *d);
    char *t = roundtrip("a 1e30\n", NULL, d);
    is_str(t, "a 9223372036854775807 9223372036854775807 {}\n", "counts beyond int64 saturate");
    free(t);
    free(d->raw);
    free(d);
    profile_free(p);
}

/* Another mode's types (docs/MODES.md): alloc = alloc_objects/count + alloc_space/bytes, the
 * objects from a profile built stack for stack; a one-type mode (wall) writes one value. */
static void test_modes(void)
{
    decoded *d = calloc(1, sizeof *d);
    profile *p = load_str("main;A.f;byte[]_[a] 1048576\nmain;B.g;java.lang.String_[a] 524288\n");
    profile *objs = load_str("main;A.f;byte[]_[a] 2\nmain;B.g;java.lang.String_[a] 16384\n");
    pprof_meta m = {.type0 = "alloc_objects",
                    .unit0 = "count",
                    .type1 = "alloc_space",
                    .unit1 = "bytes",
                    .period_type = "space",
                    .period_unit = "bytes",
                    .first = objs,
                    .period = 524288};
    size_t n = 0;
    char *gz = p && objs ? pprof_bytes(p, &m, &n) : NULL;
    if (gz)
        decode(gz, n, d);
    free(gz);
    char *t = samples_text(d);
    is_str(t,
           "main;A.f;byte[]_[a] 2 1048576 {}\n"
           "main;B.g;java.lang.String_[a] 16384 524288 {}\n",
           "alloc: objects from the first profile, bytes from the profile, stack for stack");
    free(t);
    char b1[32], b2[32];
    ok(d->nsample_type == 2 && !strcmp(cstr(d, d->sample_type[0][0], b1, 32), "alloc_objects") &&
           !strcmp(cstr(d, d->sample_type[0][1], b2, 32), "count") &&
           !strcmp(cstr(d, d->sample_type[1][0], b1, 32), "alloc_space") &&
           !strcmp(cstr(d, d->sample_type[1][1], b2, 32), "bytes"),
       "alloc: sample types alloc_objects/count, alloc_space/bytes");
    ok(!strcmp(cstr(d, d->period_type[0], b1, 32), "space") && d->period == 524288,
       "alloc: period type space/bytes, period = the interval");
    profile_free(p);
    profile_free(objs);
    free(d->raw);
    memset(d, 0, sizeof *d);
    pprof_meta w = {.type1 = "wall",
                    .unit1 = "nanoseconds",
                    .period_type = "wall",
                    .period_unit = "nanoseconds",
                    .period = 1000000};
    t = roundtrip("main;A.f 5000000\n", &w, d);
    is_str(t, "main;A.f 5000000 -1 {}\n", "wall: one value per sample");
    free(t);
    ok(d->nsample_type == 1 && !strcmp(cstr(d, d->sample_type[0][0], b1, 32), "wall") &&
           !strcmp(cstr(d, d->sample_type[0][1], b2, 32), "nanoseconds"),
       "wall: one sample type, wall/nanoseconds");
    free(d->raw);
    free(d);
}

int main(void)
{
    test_modes();
    test_wire();
    test_stacks();
    test_labels();
    test_diff();
    test_hostile();
    test_errors();
    return tap_done();
}

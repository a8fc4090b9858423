/* pprof export (flame/pprof.h): one Sample per distinct stack, one Function per distinct name,
 * one Location per distinct (frame, frames inlined into it) run. Top-level fields of a protobuf
 * message need no length, so each one is encoded in a scratch buffer and streamed through zlib
 * at once: memory is the tables, not the whole file. Format notes: docs/PPROF.md. */
#include "flame/pprof.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "flame/escape.h"
#include "flame/pb.h"
#include "flame/profile_impl.h"

/* profile.proto's field numbers (perftools.profiles). */
enum {
    P_SAMPLE_TYPE = 1,
    P_SAMPLE = 2,
    P_MAPPING = 3,
    P_LOCATION = 4,
    P_FUNCTION = 5,
    P_STRING_TABLE = 6,
    P_TIME_NANOS = 9,
    P_DURATION_NANOS = 10,
    P_PERIOD_TYPE = 11,
    P_PERIOD = 12,
    P_COMMENT = 13,
    VT_TYPE = 1,
    VT_UNIT = 2,
    S_LOCATION_ID = 1,
    S_VALUE = 2,
    S_LABEL = 3,
    L_KEY = 1,
    L_STR = 2,
    L_NUM = 3,
    M_ID = 1,
    M_FILENAME = 5,
    M_HAS_FUNCTIONS = 7,
    LOC_ID = 1,
    LOC_MAPPING_ID = 2,
    LOC_LINE = 4,
    LINE_FUNCTION_ID = 1,
    F_ID = 1,
    F_NAME = 2,
};

/* The gzip stream to the caller's FILE. */
typedef struct gz_out {
    z_stream z;
    FILE *f;
    bool open, failed;
    int errnum; /* the write's errno, 0 = zlib (memory) */
    uint8_t buf[1 << 16];
} gz_out;

static void gz_feed(gz_out *g, const uint8_t *d, size_t n, int flush)
{
    do {
        /* avail_in is an unsigned int: feed a huge buffer in pieces */
        size_t piece = n > (1u << 30) ? (1u << 30) : n;
        g->z.next_in = (Bytef *)d;
        g->z.avail_in = (uInt)piece;
        int fl = piece == n ? flush : Z_NO_FLUSH;
        do {
            g->z.next_out = g->buf;
            g->z.avail_out = sizeof g->buf;
            int r = deflate(&g->z, fl);
            if (r == Z_STREAM_ERROR) {
                g->failed = true;
                return;
            }
            size_t have = sizeof g->buf - g->z.avail_out;
            if (have && fwrite(g->buf, 1, have, g->f) != have) {
                g->failed = true;
                g->errnum = errno ? errno : EIO;
                return;
            }
        } while (g->z.avail_out == 0);
        if (piece) /* d may be NULL with n 0 (Z_FINISH): no arithmetic on it */
            d += piece;
        n -= piece;
    } while (n);
}

/* Strings, functions and locations, interned in a profile of their own: a string's index in
 * the string table is its name id + 1 (0 is ""), a function's id is its name's string index,
 * a location is a "stack" of function name ids (innermost first) and its id is that stack's
 * index + 1. */
typedef struct pprof_tabs {
    profile *s;
    uint8_t *is_fn; /* by name id */
    size_t is_fn_cap;
    uint64_t k_samples, k_count, k_cpu, k_ns, k_container, k_thread, k_pid, k_base, k_true,
        v_container;
} pprof_tabs;

/* The string index of s[0..n); 0 on OOM (never an index of ours but ""). */
static uint64_t str_id(pprof_tabs *t, const char *s, size_t n)
{
    uint32_t id = prof_name_intern(t->s, s, n);
    return id == UINT32_MAX ? 0 : (uint64_t)id + 1;
}

static uint64_t str_c(pprof_tabs *t, const char *s)
{
    return str_id(t, s, strlen(s));
}

static bool ends_with(const char *s, size_t n, const char *suffix)
{
    return n >= 4 && memcmp(s + n - 4, suffix, 4) == 0;
}

/* The function of frame name s[0..n): the JIT mark _[j] is dropped (pprof has no use for it;
 * a method is one function whether interpreted or compiled), _[i] is dropped and reported as
 * inlined (it becomes a Line of its caller's Location). Other names are kept as they are. */
static int fn_of_frame(pprof_tabs *t, const char *s, size_t n, bool *inlined, uint32_t *fid)
{
    *inlined = ends_with(s, n, "_[i]");
    if (*inlined || ends_with(s, n, "_[j]"))
        n -= 4;
    uint32_t id = prof_name_intern(t->s, s, n);
    if (id == UINT32_MAX)
        return -1;
    if (id >= t->is_fn_cap) {
        size_t cap = t->is_fn_cap ? t->is_fn_cap * 2 : 1024;
        while (cap <= id)
            cap *= 2;
        uint8_t *m = realloc(t->is_fn, cap);
        if (!m)
            return -1;
        memset(m + t->is_fn_cap, 0, cap - t->is_fn_cap);
        t->is_fn = m;
        t->is_fn_cap = cap;
    }
    t->is_fn[id] = 1;
    *fid = id;
    return 0;
}

/* The location id of the function ids key[0..n) (innermost first); 0 on OOM. */
static uint64_t loc_id(pprof_tabs *t, const uint32_t *key, size_t n)
{
    uint32_t k = prof_stack_find(t->s, key, n, prof_ids_hash(t->s, key, n));
    if (k == UINT32_MAX) {
        if (prof_stack_add_deep(t->s, key, n, 1, 0) < 0)
            return 0;
        k = t->s->nstacks - 1;
    }
    return (uint64_t)k + 1;
}

/* "java-<pid> <Main>" -> pid, or 0. The frame came from the sidecar's root_for_pid, but the
 * file may be anything: at most 10 digits, then the end or a blank. */
static long pid_of_root(const char *s, size_t n)
{
    if (n < 6 || memcmp(s, "java-", 5) != 0)
        return 0;
    long v = 0;
    size_t i = 5;
    for (; i < n && i < 15 && s[i] >= '0' && s[i] <= '9'; i++)
        v = v * 10 + (s[i] - '0');
    return i > 5 && (i == n || s[i] == ' ') && v <= INT_MAX ? v : 0;
}

static int64_t to_i64(double c)
{
    if (!(c == c)) /* NaN: cannot be in a profile, but never let it through */
        return 0;
    if (c >= 9.2e18)
        return INT64_MAX;
    if (c <= -9.2e18)
        return -INT64_MAX;
    return llround(c);
}

typedef struct enc {
    const profile *p;
    const pprof_meta *m;
    pprof_tabs t;
    gz_out *g;
    pb_buf msg, sub;
    uint32_t *key; /* the current location's function ids */
    uint64_t *locs;
    /* By the profile's name id, 0 = not known yet: the name's function id + 1, the location of
     * the frame alone, the string of the raw name (thread labels). A frame is looked up once,
     * not once per stack it is in (1M stacks of 20 frames: 2.9 s -> see docs/BENCHMARKS.md). */
    uint32_t *fn_cache;
    uint64_t *loc1_cache, *raw_cache;
    int64_t period;
    uint32_t k; /* the stack being written (its index in p and in m->first) */
} enc;

static void put_label_str(enc *e, uint64_t key, uint64_t val)
{
    pb_reset(&e->sub);
    pb_uint(&e->sub, L_KEY, key);
    pb_uint(&e->sub, L_STR, val);
    pb_msg(&e->msg, S_LABEL, &e->sub);
}

static void put_label_num(enc *e, uint64_t key, int64_t num)
{
    pb_reset(&e->sub);
    pb_uint(&e->sub, L_KEY, key);
    pb_int(&e->sub, L_NUM, num);
    pb_msg(&e->msg, S_LABEL, &e->sub);
}

static void flush_msg(enc *e, uint32_t field)
{
    pb_buf top = {0};
    /* key + length prefix in a tiny buffer, then the message itself: no copy of msg */
    pb_key(&top, field, PB_LEN);
    pb_varint(&top, e->msg.n);
    if (!top.oom)
        gz_feed(e->g, top.b, top.n, Z_NO_FLUSH);
    gz_feed(e->g, e->msg.b, e->msg.n, Z_NO_FLUSH);
    e->msg.oom |= top.oom;
    pb_free(&top);
}

/* The function of the profile's name id (cached). */
static int frame_fn(enc *e, uint32_t id, uint32_t *fid)
{
    if (!e->fn_cache[id]) {
        bool inl;
        if (fn_of_frame(&e->t, prof_name_str(e->p, id), e->p->names[id].len, &inl, fid) < 0)
            return -1;
        e->fn_cache[id] = *fid + 1;
    }
    *fid = e->fn_cache[id] - 1;
    return 0;
}

/* One stack: its locations (leaf first), then a Sample for each non-zero column. */
static int put_stack(enc *e, const prof_stack *st)
{
    const uint32_t *ids = e->p->ids + st->off;
    size_t nlocs = 0;
    /* Walk root to leaf; a run "host; inl_[i]; inl2_[i]" is one location, lines innermost
     * first (profile.proto: the last line is the caller the others were inlined into). */
    for (uint32_t i = 0; i < st->depth;) {
        size_t n = 0;
        uint32_t fid, host = ids[i];
        if (frame_fn(e, host, &fid) < 0)
            return -1;
        e->key[n++] = fid;
        for (i++; i < st->depth; i++) {
            const prof_name *nm = &e->p->names[ids[i]];
            if (!ends_with(prof_name_str(e->p, ids[i]), nm->len, "_[i]"))
                break;
            if (frame_fn(e, ids[i], &fid) < 0)
                return -1;
            e->key[n++] = fid;
        }
        if (n == 1 && e->loc1_cache[host]) {
            e->locs[nlocs++] = e->loc1_cache[host];
            continue;
        }
        for (size_t a = 0, b = n - 1; a < b; a++, b--) { /* innermost first */
            uint32_t x = e->key[a];
            e->key[a] = e->key[b];
            e->key[b] = x;
        }
        uint64_t id = loc_id(&e->t, e->key, n);
        if (!id)
            return -1;
        if (n == 1)
            e->loc1_cache[host] = id;
        e->locs[nlocs++] = id;
    }
    for (size_t a = 0, b = nlocs - 1; a < b; a++, b--) { /* leaf first */
        uint64_t x = e->locs[a];
        e->locs[a] = e->locs[b];
        e->locs[b] = x;
    }
    /* labels from the frames, when the layout says where they are */
    long pid = e->m->jvm_pid > 0 ? e->m->jvm_pid : 0;
    int thread_at = -1;
    if (e->m->layout == PPROF_THREAD_FIRST)
        thread_at = 0;
    if (e->m->layout == PPROF_JVM_THEN_THREAD) {
        thread_at = 1;
        if (!pid)
            pid = pid_of_root(prof_name_str(e->p, ids[0]), e->p->names[ids[0]].len);
    }
    uint64_t thread = 0;
    if (thread_at >= 0 && (uint32_t)thread_at < st->depth) {
        uint32_t id = ids[thread_at];
        if (!e->raw_cache[id])
            e->raw_cache[id] = str_id(&e->t, prof_name_str(e->p, id), e->p->names[id].len);
        thread = e->raw_cache[id];
        if (!thread)
            return -1;
    }
    bool diff = profile_is_diff(e->p);
    for (int col = 0; col < (diff ? 2 : 1); col++) {
        double c = col == 0 ? st->count : -st->before;
        int64_t n = to_i64(c);
        if (n == 0)
            continue;
        int64_t cpu = e->period > 0 && llabs(n) <= INT64_MAX / e->period ? n * e->period
                      : n > 0                                            ? INT64_MAX
                                                                         : -INT64_MAX;
        int64_t vals[2] = {n, cpu};
        size_t nvals = 2;
        if (e->m->type1 && e->m->type0) { /* another mode: [first's count, our count] */
            const profile *f = e->m->first;
            vals[0] = f && e->k < f->nstacks ? to_i64(f->stacks[e->k].count) : 0;
            vals[1] = n;
        } else if (e->m->type1) {
            vals[0] = n;
            nvals = 1;
        }
        pb_reset(&e->msg);
        pb_packed_u64(&e->msg, S_LOCATION_ID, e->locs, nlocs);
        pb_packed_i64(&e->msg, S_VALUE, vals, nvals);
        if (e->t.v_container)
            put_label_str(e, e->t.k_container, e->t.v_container);
        if (thread)
            put_label_str(e, e->t.k_thread, thread);
        if (pid)
            put_label_num(e, e->t.k_pid, pid);
        if (col == 1)
            put_label_str(e, e->t.k_base, e->t.k_true);
        flush_msg(e, P_SAMPLE);
    }
    return e->msg.oom || e->sub.oom ? -1 : 0;
}

static void put_value_type(enc *e, uint32_t field, uint64_t type, uint64_t unit)
{
    pb_reset(&e->msg);
    pb_uint(&e->msg, VT_TYPE, type);
    pb_uint(&e->msg, VT_UNIT, unit);
    flush_msg(e, field);
}

/* Locations, functions, strings, then the scalars. */
/* A string-table entry. proto3 `string` fields must be UTF-8 and strict readers refuse a file
 * with one bad entry; names come from the profiled container, so invalid sequences become
 * U+FFFD (as in every other output). Valid names are written as they are, without a copy. */
static void put_utf8(pb_buf *w, uint32_t field, const char *str, size_t n)
{
    const unsigned char *u = (const unsigned char *)str;
    size_t i = 0, l;
    while (i < n && escape_utf8_next(u + i, n - i, &l) >= 0)
        i += l;
    if (i == n) {
        pb_bytes(w, field, str, n);
        return;
    }
    char *fixed = n <= SIZE_MAX / 3 ? malloc(n * 3) : NULL;
    if (!fixed) {
        w->oom = true;
        return;
    }
    size_t o = 0;
    for (i = 0; i < n; i += l) {
        if (escape_utf8_next(u + i, n - i, &l) >= 0) {
            memcpy(fixed + o, u + i, l);
            o += l;
        } else {
            memcpy(fixed + o, "\xef\xbf\xbd", 3);
            o += 3;
        }
    }
    pb_bytes(w, field, fixed, o);
    free(fixed);
}

static int put_tables(enc *e)
{
    const profile *s = e->t.s;
    for (uint32_t k = 0; k < s->nstacks; k++) {
        const prof_stack *st = &s->stacks[k];
        pb_reset(&e->msg);
        pb_uint(&e->msg, LOC_ID, (uint64_t)k + 1);
        pb_uint(&e->msg, LOC_MAPPING_ID, 1);
        for (uint32_t i = 0; i < st->depth; i++) {
            pb_reset(&e->sub);
            pb_uint(&e->sub, LINE_FUNCTION_ID, (uint64_t)s->ids[st->off + i] + 1);
            pb_msg(&e->msg, LOC_LINE, &e->sub);
        }
        flush_msg(e, P_LOCATION);
    }
    /* No system_name: our names are already what people read (perf demangled them, the agent
     * wrote Java's), and pprof "demangles" a function whose system_name equals its name: it
     * cuts C++ template arguments, so "std::vector<int>::push_back" and any name with "<...>"
     * would lose text. */
    for (uint32_t id = 0; id < s->nnames && id < e->t.is_fn_cap; id++) {
        if (!e->t.is_fn[id])
            continue;
        pb_reset(&e->msg);
        pb_uint(&e->msg, F_ID, (uint64_t)id + 1);
        pb_uint(&e->msg, F_NAME, (uint64_t)id + 1);
        flush_msg(e, P_FUNCTION);
    }
    pb_reset(&e->msg);
    pb_bytes(&e->msg, P_STRING_TABLE, "", 0);
    for (uint32_t id = 0; id < s->nnames; id++) {
        put_utf8(&e->msg, P_STRING_TABLE, prof_name_str(s, id), s->names[id].len);
        if (e->msg.n > (1u << 20)) { /* each entry is a top-level field: stream them */
            gz_feed(e->g, e->msg.b, e->msg.n, Z_NO_FLUSH);
            pb_reset(&e->msg);
        }
    }
    pb_int(&e->msg, P_TIME_NANOS, e->m->time_ns);
    pb_int(&e->msg, P_DURATION_NANOS, e->m->duration_ns);
    pb_int(&e->msg, P_PERIOD, e->period);
    gz_feed(e->g, e->msg.b, e->msg.n, Z_NO_FLUSH);
    return e->msg.oom || e->sub.oom ? -1 : 0;
}

static int encode(enc *e)
{
    pprof_tabs *t = &e->t;
    t->k_samples = str_c(t, "samples");
    t->k_count = str_c(t, "count");
    t->k_cpu = str_c(t, "cpu");
    t->k_ns = str_c(t, "nanoseconds");
    t->k_container = str_c(t, "container");
    t->k_thread = str_c(t, "thread");
    t->k_pid = str_c(t, "pid");
    t->k_base = str_c(t, "pprof::base");
    t->k_true = str_c(t, "true");
    if (e->m->container && *e->m->container)
        t->v_container = str_c(t, e->m->container);
    uint64_t comments[2] = {str_c(t, "docker-flame " FLAME_VERSION), 0};
    size_t ncomments = 1;
    if (e->m->comment && *e->m->comment)
        comments[ncomments++] = str_c(t, e->m->comment);
    if (!t->k_samples || !t->k_count || !t->k_cpu || !t->k_ns || !t->k_container || !t->k_thread ||
        !t->k_pid || !t->k_base || !t->k_true || !comments[ncomments - 1] ||
        (e->m->container && *e->m->container && !t->v_container))
        return -1;

    if (e->m->type1) { /* another mode: its own types, as the ecosystem names them */
        uint64_t t0 = e->m->type0 ? str_c(t, e->m->type0) : 0,
                 u0 = e->m->type0 ? str_c(t, e->m->unit0 ? e->m->unit0 : "count") : 0,
                 t1 = str_c(t, e->m->type1), u1 = str_c(t, e->m->unit1 ? e->m->unit1 : "count"),
                 pt = e->m->period_type ? str_c(t, e->m->period_type) : 0,
                 pu = e->m->period_type ? str_c(t, e->m->period_unit ? e->m->period_unit : "count")
                                        : 0;
        if ((e->m->type0 && (!t0 || !u0)) || !t1 || !u1 || (e->m->period_type && (!pt || !pu)))
            return -1;
        if (e->m->type0)
            put_value_type(e, P_SAMPLE_TYPE, t0, u0);
        put_value_type(e, P_SAMPLE_TYPE, t1, u1);
        if (e->m->period_type)
            put_value_type(e, P_PERIOD_TYPE, pt, pu);
    } else {
        put_value_type(e, P_SAMPLE_TYPE, t->k_samples, t->k_count);
        put_value_type(e, P_SAMPLE_TYPE, t->k_cpu, t->k_ns);
        put_value_type(e, P_PERIOD_TYPE, t->k_cpu, t->k_ns);
    }
    /* One mapping for every location, its functions already named: without one, pprof tools
     * complain that the main binary is unknown, and with has_functions they never try to
     * symbolize addresses (we have none). Its file name is what pprof prints as "File:". */
    uint64_t file = t->v_container ? t->v_container : str_c(t, "docker-flame");
    pb_reset(&e->msg);
    pb_uint(&e->msg, M_ID, 1);
    pb_uint(&e->msg, M_FILENAME, file);
    pb_uint(&e->msg, M_HAS_FUNCTIONS, 1);
    flush_msg(e, P_MAPPING);
    pb_reset(&e->msg);
    pb_packed_u64(&e->msg, P_COMMENT, comments, ncomments);
    gz_feed(e->g, e->msg.b, e->msg.n, Z_NO_FLUSH);

    uint32_t maxdepth = 1;
    for (uint32_t k = 0; k < e->p->nstacks; k++)
        if (e->p->stacks[k].depth > maxdepth)
            maxdepth = e->p->stacks[k].depth;
    e->key = calloc(maxdepth, sizeof *e->key);
    e->locs = calloc(maxdepth, sizeof *e->locs);
    size_t nn = e->p->nnames ? e->p->nnames : 1;
    e->fn_cache = calloc(nn, sizeof *e->fn_cache);
    e->loc1_cache = calloc(nn, sizeof *e->loc1_cache);
    e->raw_cache = calloc(nn, sizeof *e->raw_cache);
    if (!e->key || !e->locs || !e->fn_cache || !e->loc1_cache || !e->raw_cache)
        return -1;
    for (uint32_t k = 0; k < e->p->nstacks && !e->g->failed; k++) {
        e->k = k;
        if (put_stack(e, &e->p->stacks[k]) < 0)
            return -1;
    }
    return put_tables(e);
}

int pprof_export(const profile *p, const pprof_meta *m, FILE *out, flame_err *err)
{
    pprof_meta none = {0};
    if (!m)
        m = &none;
    if (p->nstacks == 0)
        return flame_fail(err, FLAME_EXIT_ERROR, "empty profile: nothing to export");
    gz_out *g = calloc(1, sizeof *g);
    enc e = {.p = p, .m = m, .g = g};
    double hz = m->hz > 0 ? m->hz : PPROF_DEFAULT_HZ;
    e.period = hz >= 1e-3 ? llround(1e9 / hz) : (int64_t)1e12;
    if (e.period < 1)
        e.period = 1;
    if (m->type1)
        e.period = m->period;
    e.t.s = profile_new();
    int rc = -1;
    /* windowBits 15 + 16: a gzip header and trailer around the deflate stream (zlib.h); level 1:
     * 3 % bigger than the default level, a fifth faster (docs/BENCHMARKS.md) */
    if (g && e.t.s &&
        deflateInit2(&g->z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK) {
        g->open = true;
        g->f = out;
        rc = encode(&e);
        if (rc == 0 && !g->failed)
            gz_feed(g, NULL, 0, Z_FINISH);
    }
    int errnum = g ? g->errnum : 0;
    bool failed = !g || g->failed;
    if (g && g->open)
        deflateEnd(&g->z);
    free(g);
    free(e.key);
    free(e.locs);
    free(e.fn_cache);
    free(e.loc1_cache);
    free(e.raw_cache);
    free(e.t.is_fn);
    pb_free(&e.msg);
    pb_free(&e.sub);
    profile_free(e.t.s);
    if (errnum)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errnum, "write error");
    if (rc < 0 || failed)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    if (fflush(out) != 0 || ferror(out))
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno ? errno : EIO, "write error");
    return 0;
}

/* Folding `perf script` text into folded stacks, streaming: one sample's frames are held at a
 * time (as interned frame ids), finished samples are counted in a profile, the one table of
 * stacks that rendering, diff and methods read too; it is sorted only when written. Two
 * dialects: compat (byte-exact stackcollapse-perf.pl) and ours (docs/FOLDING.md). Lines are
 * parsed in fold_parse.c, names tidied in fold_tidy.c, repeated lines cached in fold_cache.c. */
#include "flame/fold.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "flame/alloc.h"
#include "flame/fold_cache.h"
#include "flame/fold_parse.h"
#include "flame/fold_tidy.h"
#include "flame/profile_impl.h"

/* ---- the folder ---- */

enum leaf_kind { LEAF_NONE, LEAF_OTHER, LEAF_JIT, LEAF_JIT_NAMED };

typedef struct fold_span {
    uint32_t off, len;
} fold_span;

struct folder {
    fold_opts o;
    char *filter; /* owned: opts.event_filter or the first event seen */
    bool filter_defaulted;
    /* The folded stacks: frame names interned, stacks as runs of ids (the one stack table of
     * flame/). Names of dropped samples may linger: folder_profile() removes them. */
    profile *prof;
    double *events; /* fold_opts.events: each stack's (by its index in prof) */
    size_t events_cap;
    bool maybe_unused; /* names were interned for frames no stack kept */

    /* The sample being read: frame ids leaf first, as perf prints them, and their bytes. */
    bool in_sample;
    char *pname;
    size_t pname_len;
    long pid, tid;
    int cpu; /* -1 unknown */
    unsigned long long time_us;
    unsigned long long period;
    enum leaf_kind leaf;
    bool truncated;
    enum leaf_kind last_leaf; /* what the last frame line would make of a leaf */
    uint32_t *fr;
    size_t nfr, fr_cap, fr_bytes;
    char *fbuf; /* scratch: the piece being tidied */
    size_t fbuf_cap;
    fold_span *pieces; /* scratch: one frame line split on "->" */
    size_t pieces_cap;
    uint32_t *key; /* scratch: the stack being counted, root first */
    size_t key_cap;
    char *text; /* scratch: a stack's folded text for folder_each() */
    size_t text_cap;

    /* Frame lines already parsed, tidied and interned (perf repeats the same lines endlessly) */
    fold_cache lc;

    fold_stats st;
};

/* ---- the sample being read ---- */

/* Keep a runaway stack bounded: drop the leaf-most half of what we hold (the root side is what
 * makes a flame graph readable) and remember to mark the stack truncated. */
static void trim_stack(folder *f)
{
    while (f->nfr > FOLD_MAX_FRAMES || f->fr_bytes > FOLD_MAX_STACK_BYTES) {
        size_t drop = f->nfr / 2 ? f->nfr / 2 : f->nfr;
        for (size_t i = 0; i < drop; i++)
            f->fr_bytes -= f->prof->names[f->fr[i]].len;
        memmove(f->fr, f->fr + drop, (f->nfr - drop) * sizeof *f->fr);
        f->nfr -= drop;
        f->truncated = true;
        f->maybe_unused = true;
    }
}

static int push_frames(folder *f, const uint32_t *ids, size_t n)
{
    if (!GROW(f->fr, f->fr_cap, f->nfr + n))
        return -1;
    for (size_t k = 0; k < n; k++) {
        f->fr[f->nfr++] = ids[k];
        f->fr_bytes += f->prof->names[ids[k]].len;
    }
    trim_stack(f);
    return 0;
}

/* In compat mode, the tidy of JIT names depends on the comm starting with "java". */
static bool java_comm_of(const folder *f)
{
    return f->o.compat && f->pname_len >= 4 && memcmp(f->pname, "java", 4) == 0;
}

static void reset_sample(folder *f)
{
    if (f->nfr)
        f->maybe_unused = true; /* frames interned for a sample that is not counted */
    f->in_sample = false;
    f->nfr = 0;
    f->fr_bytes = 0;
    f->leaf = LEAF_NONE;
    f->truncated = false;
}

/* One frame line's frames: its symbol split on "->" when it is an inline chain, each piece
 * tidied and interned, leaf first. */
static int add_frame(folder *f, const frame_line *fl)
{
    span func = fl->func;
    /* perf >= 4.8 appends "+0x<offset>"; only lowercase hex, as stackcollapse-perf.pl. */
    /* Scanning back over the hex digits finds the last "+0x" iff everything after it is hex. */
    size_t e = func.len;
    while (e > 0 && (fold_cls[(unsigned char)func.p[e - 1]] & C_XLOWER))
        e--;
    if (e < func.len && e >= 3 && memcmp(func.p + e - 3, "+0x", 3) == 0)
        func.len = e - 3;
    if (func.len > 0 && func.p[0] == '(') { /* perf prints process names as "(name)" frames */
        f->last_leaf = LEAF_NONE;
        return 0;
    }

    bool perfmap = fold_mod_is_perfmap(fl->mod);
    /* Split "a->b->c" (perf-map-agent / our agent: b inlined into a, c into b). Perl splits
     * every symbol and drops trailing empty pieces; we split only JIT frames, and with
     * --no-inline keep the outermost (compiled) method alone. */
    size_t np = 0;
    const char *p = func.p, *end = func.p + func.len;
    bool split = f->o.compat || (perfmap && f->o.inline_frames);
    bool first_only = !f->o.compat && perfmap && !f->o.inline_frames;
    for (;;) {
        const char *arrow = split || first_only ? fold_find_arrow(p, end) : NULL;
        const char *pe = arrow ? arrow : end;
        if (!GROW(f->pieces, f->pieces_cap, np + 1))
            return -1;
        f->pieces[np++] = (fold_span){(uint32_t)(p - func.p), (uint32_t)(pe - p)};
        if (!arrow || first_only)
            break;
        p = arrow + 2;
    }
    if (split && !first_only)
        while (np > 0 && f->pieces[np - 1].len == 0)
            np--;
    if (np == 0) {
        f->last_leaf = LEAF_NONE;
        return 0;
    }

    enum leaf_kind leaf = perfmap ? span_eq(func, "[unknown]") ? LEAF_JIT : LEAF_JIT_NAMED
                          : span_eq(fl->mod, "[unknown]") ? LEAF_JIT
                                                          : LEAF_OTHER;
    f->last_leaf = leaf;
    if (f->nfr == 0 && f->leaf == LEAF_NONE)
        f->leaf = leaf;
    bool java_comm = java_comm_of(f);
    if (!GROW(f->fr, f->fr_cap, f->nfr + np))
        return -1;
    /* Leaf first: the chain's last piece is the innermost, so it goes in first. */
    for (size_t k = np; k-- > 0;) {
        span piece = {func.p + f->pieces[k].off, f->pieces[k].len};
        long n = fold_tidy_piece(&f->o, &f->fbuf, &f->fbuf_cap, fl, piece, k, java_comm, perfmap);
        uint32_t id = n < 0 ? UINT32_MAX : prof_name_intern(f->prof, f->fbuf, (size_t)n);
        if (id == UINT32_MAX)
            return -1;
        f->fr[f->nfr++] = id;
        f->fr_bytes += (size_t)n;
    }
    trim_stack(f);
    return 0;
}

/* add_frame for a whole frame line, through the cache. */
static int add_frame_line(folder *f, const frame_line *fl, const char *line, size_t len)
{
    size_t from = f->nfr;
    bool was_truncated = f->truncated;
    if (add_frame(f, fl) < 0)
        return -1;
    if (!was_truncated && !f->truncated) /* the bound moved frames: not worth caching */
        fold_cache_insert(&f->lc, line, len, java_comm_of(f), f->fr + from, f->nfr - from,
                          f->last_leaf);
    return 0;
}

/* ---- counting a sample ---- */

static int key_push(folder *f, size_t *n, uint32_t id)
{
    if (id == UINT32_MAX || !GROW(f->key, f->key_cap, *n + 1))
        return -1;
    f->key[(*n)++] = id;
    return 0;
}

/* Intern s[0..len) as frames: one, or (split) one per ';'-separated piece, as a folded line
 * would be read back. */
static int key_push_text(folder *f, size_t *n, const char *s, size_t len, bool split)
{
    const char *semi;
    while (split && (semi = memchr(s, ';', len))) {
        if (key_push(f, n, prof_name_intern(f->prof, s, (size_t)(semi - s))) < 0)
            return -1;
        len -= (size_t)(semi + 1 - s);
        s = semi + 1;
    }
    return key_push(f, n, prof_name_intern(f->prof, s, len));
}

/* wall's thread states, by the period's two low bits (fold_opts.state_tags) */
static const char *const state_tag[4] = {NULL, "[running]", "[runnable]", "[sleeping]"};

/* The sample's stack, root first: [root;] process; frames...; [truncated]; [state]. */
static int count_sample(folder *f)
{
    size_t n = 0;
    const char *task = f->o.root_for_task ? f->o.root_for_task(f->o.root_ctx, f->pid, f->tid,
                                                               f->pname, f->pname_len, f->time_us)
                                          : NULL;
    if (task) {
        if (key_push_text(f, &n, task, strnlen(task, 4096), true) < 0)
            return -1;
    } else if (f->o.root_for_pid) {
        const char *root = f->o.root_for_pid(f->o.root_ctx, f->pid);
        if (root) {
            char buf[FOLD_MAX_FRAME];
            size_t rn = strnlen(root, FOLD_MAX_FRAME);
            for (size_t i = 0; i < rn; i++) { /* the caller's name is data, too */
                unsigned char c = (unsigned char)root[i];
                buf[i] = c == ';' ? ':' : c < 0x20 || c == 0x7f ? '?' : (char)c;
            }
            if (rn && key_push_text(f, &n, buf, rn, false) < 0) /* "": no root frame */
                return -1;
        }
    }
    /* compat keeps a ';' in the comm, which then separates frames, as in Perl's output */
    if (!task && key_push_text(f, &n, f->pname, f->pname_len, f->o.compat) < 0)
        return -1;
    if (!GROW(f->key, f->key_cap, n + f->nfr + 1))
        return -1;
    for (size_t i = f->nfr; i-- > 0;)
        f->key[n++] = f->fr[i];
    if (f->truncated && key_push(f, &n, prof_name_intern(f->prof, "[truncated]", 11)) < 0)
        return -1;
    unsigned long long count = f->o.compat || f->o.period ? f->period : 1;
    double events = 0;
    if (f->o.events && !f->o.compat) {
        events = fold_events_of((unsigned)(f->period >> FOLD_EVENTS_SHIFT));
        if (f->o.period)
            count &= FOLD_EVENTS_VALUE_MAX;
    }
    if ((f->o.state_tags || f->o.state_mask) && !f->o.compat) {
        const char *tag = f->o.state_tags ? state_tag[f->period & 3] : NULL;
        if (tag && key_push(f, &n, prof_name_intern(f->prof, tag, strlen(tag))) < 0)
            return -1;
        if (f->o.period)
            count &= ~3ull;
    }
    if (f->o.on_sample)
        f->o.on_sample(f->o.root_ctx, f->pid, f->tid, f->cpu, f->time_us);
    prof_staged st;
    if (prof_stage_ids(f->prof, f->key, n, (double)count, 0, &st) < 0 ||
        prof_commit_ids(f->prof, &st) < 0)
        return -1;
    f->prof->columns = 1;
    if (f->o.events && !f->o.compat) {
        size_t cap = f->events_cap;
        if (st.idx >= cap) {
            size_t want = cap ? cap : 64;
            while (want <= st.idx)
                want *= 2;
            double *e = realloc(f->events, want * sizeof *e);
            if (!e)
                return -1;
            memset(e + cap, 0, (want - cap) * sizeof *e);
            f->events = e;
            f->events_cap = want;
        }
        f->events[st.idx] += events;
    }
    return 0;
}

double fold_events_of(unsigned code)
{
    if (code >= FOLD_EVENTS_NONE)
        return 0;
    /* exact for whole powers of two (p = 1: one event) */
    return ldexp(exp2((double)(code % FOLD_EVENTS_STEPS) / FOLD_EVENTS_STEPS),
                 (int)(code / FOLD_EVENTS_STEPS));
}

static int flush_sample(folder *f, flame_err *err)
{
    if (!f->in_sample)
        return 0;
    if (count_sample(f) < 0)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, ENOMEM, "fold");
    f->st.samples++;
    if (f->truncated)
        f->st.truncated++;
    if (f->leaf == LEAF_JIT || f->leaf == LEAF_JIT_NAMED)
        f->st.jit_leaf++;
    if (f->leaf == LEAF_JIT_NAMED)
        f->st.jit_leaf_named++;
    f->nfr = 0; /* counted: its names are used */
    reset_sample(f);
    return 0;
}

/* ---- headers ---- */

/* Perl's truth: "" and "0" are false; anything else counts by its numeric value. */
static unsigned long long parse_period(span p)
{
    if (!p.p || p.len == 0 || span_eq(p, "0"))
        return 1;
    unsigned long long v = 0;
    for (size_t i = 0; i < p.len; i++) {
        unsigned d = (unsigned)(p.p[i] - '0');
        v = v > (~0ULL - d) / 10 ? ~0ULL : v * 10 + d;
    }
    return v;
}

static bool event_matches(const folder *f, span ev)
{
    size_t fl = strlen(f->filter);
    if (ev.len == fl && memcmp(ev.p, f->filter, fl) == 0)
        return true;
    /* ours: "cpu-clock" also selects "cpu-clock:pppH" (perf appends modifiers) */
    return !f->o.compat && ev.len > fl && ev.p[fl] == ':' && memcmp(ev.p, f->filter, fl) == 0;
}

#define PNAME_MAX (FOLD_MAX_FRAME + 64)

static void pname_append(folder *f, size_t *len, const char *s, size_t n)
{
    size_t room = PNAME_MAX - *len;
    if (n > room)
        n = room;
    memcpy(f->pname + *len, s, n);
    *len += n;
}

static long span_long(span s)
{
    long v = 0;
    for (size_t i = 0; i < s.len && v < 100000000000L; i++)
        v = v * 10 + (s.p[i] - '0');
    return v;
}

static int on_header(folder *f, header *h, flame_err *err)
{
    if (!f->o.compat && flush_sample(f, err) < 0) /* ours: a header ends an unterminated sample */
        return -1;
    if (h->event.p) {
        if (!f->filter) {
            f->filter = strndup(h->event.p, h->event.len);
            if (!f->filter)
                return flame_fail_errno(err, FLAME_EXIT_ERROR, ENOMEM, "fold");
            f->filter_defaulted = true;
        } else if (!event_matches(f, h->event)) {
            f->st.filtered++;
            if (!f->o.compat)
                reset_sample(f);
            return 0;
        }
    }
    /* Perl: a lone number is the tid and the pid is "?"; a tid of "0" counts as absent. */
    span pid = h->pid, tid = h->tid;
    if (f->o.compat ? !tid.p || span_eq(tid, "0") : !tid.p) {
        tid = pid;
        pid = (span){"?", 1};
    } else if (!pid.p) /* ours: perf printed the tid only */
        pid = (span){"?", 1};
    f->pid = span_long(span_eq(pid, "?") ? tid : pid);
    f->tid = span_long(tid);
    f->cpu = h->cpu.p ? (int)span_long(h->cpu) : -1;
    f->time_us = 0;
    if (h->time.p) { /* "seconds.fraction": microseconds, whatever the fraction's digits */
        const char *dot = memchr(h->time.p, '.', h->time.len);
        size_t il = dot ? (size_t)(dot - h->time.p) : h->time.len;
        unsigned long long us = (unsigned long long)span_long((span){h->time.p, il}) * 1000000ull;
        unsigned long long frac = 0, scale = 100000;
        for (size_t k = il + 1; dot && k < h->time.len && scale; k++, scale /= 10)
            frac += (unsigned long long)(h->time.p[k] - '0') * scale;
        f->time_us = us + frac;
    }
    f->period = parse_period(h->period);
    if (f->o.state_mask && !f->o.compat && !((f->o.state_mask >> (f->period & 3)) & 1)) {
        f->st.other_state++; /* another mode's sample (fold_opts.state_mask) */
        reset_sample(f);
        return 0;
    }

    size_t comm_len = h->comm.len > FOLD_MAX_FRAME ? FOLD_MAX_FRAME : h->comm.len;
    size_t len = 0;
    pname_append(f, &len, h->comm.p, comm_len);
    if (f->o.tid || f->o.pid) {
        pname_append(f, &len, "-", 1);
        pname_append(f, &len, pid.p, pid.len > 20 ? 20 : pid.len);
        if (f->o.tid) {
            pname_append(f, &len, "/", 1);
            pname_append(f, &len, tid.p, tid.len > 20 ? 20 : tid.len);
        }
    }
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)f->pname[i];
        if (c == ' ')
            f->pname[i] = '_';
        else if (!f->o.compat && c == ';')
            f->pname[i] = ':';
        else if (c < 0x20 || c == 0x7f)
            f->pname[i] = '?';
    }
    f->pname_len = len;
    f->in_sample = true;
    return 0;
}

/* ---- lines ---- */

int folder_feed(folder *f, const char *line, size_t len, flame_err *err)
{
    if (len > FOLD_MAX_LINE)
        len = FOLD_MAX_LINE;
    if (!f->o.compat && len > 0 && line[len - 1] == '\r')
        len--;
    if (len == 0) { /* end of a sample */
        return flush_sample(f, err);
    }
    if (line[0] == '#')
        return 0;

    /* A line that starts with a blank is never a header for Perl, and for us only when it does
     * not parse as a frame; a cached line did parse as a frame. */
    bool blank = pl_space((unsigned char)line[0]);
    if (blank && f->in_sample) {
        uint32_t ids[FOLD_CACHE_MAX_PIECES];
        size_t n;
        int leaf;
        if (fold_cache_lookup(&f->lc, line, len, java_comm_of(f), ids, &n, &leaf)) {
            if (n && f->nfr == 0 && f->leaf == LEAF_NONE)
                f->leaf = (enum leaf_kind)leaf;
            return push_frames(f, ids, n) < 0
                       ? flame_fail_errno(err, FLAME_EXIT_ERROR, ENOMEM, "fold")
                       : 0;
        }
    }
    header h;
    memset(&h, 0, sizeof h);
    frame_line fl;
    if (f->o.compat) {
        if (fold_header_perl(line, len, 2, &h)) {
            fold_event_perl(line, len, &h);
            return on_header(f, &h, err);
        }
        if (fold_parse_frame(line, len, &fl)) {
            if (!f->in_sample)
                return 0;
            int r = blank ? add_frame_line(f, &fl, line, len) : add_frame(f, &fl);
            return r < 0 ? flame_fail_errno(err, FLAME_EXIT_ERROR, ENOMEM, "fold") : 0;
        }
        f->st.unrecognized++;
        return 0;
    }

    if (blank && fold_parse_frame(line, len, &fl)) {
        bool hex = true;
        for (size_t i = 0; i < fl.pc.len && hex; i++)
            hex = is_hex((unsigned char)fl.pc.p[i]);
        if (hex) {
            if (!f->in_sample)
                return 0;
            return add_frame_line(f, &fl, line, len) < 0
                       ? flame_fail_errno(err, FLAME_EXIT_ERROR, ENOMEM, "fold")
                       : 0;
        }
    }
    if (fold_header_ours(line, len, &h)) {
        if (on_header(f, &h, err) < 0)
            return -1;
        if (h.rest.p && f->in_sample && fold_parse_frame(h.rest.p, h.rest.len, &fl) &&
            add_frame(f, &fl) < 0)
            return flame_fail_errno(err, FLAME_EXIT_ERROR, ENOMEM, "fold");
        return 0;
    }
    if (!pl_space((unsigned char)line[0]) && fold_header_perl(line, len, 1, &h)) {
        fold_event_perl(line, len, &h);
        return on_header(f, &h, err);
    }
    if (fold_parse_frame(line, len, &fl)) {
        if (f->in_sample && add_frame(f, &fl) < 0)
            return flame_fail_errno(err, FLAME_EXIT_ERROR, ENOMEM, "fold");
        return 0;
    }
    f->st.unrecognized++;
    return 0;
}

int folder_finish(folder *f, flame_err *err)
{
    /* stackcollapse-perf.pl drops a last sample with no blank line after it; we keep it. */
    if (f->o.compat) {
        reset_sample(f);
        return 0;
    }
    return flush_sample(f, err);
}

int folder_read_fd(folder *f, int fd, flame_err *err)
{
    const size_t bufsz = 1u << 20; /* > FOLD_MAX_LINE: a full buffer always holds a newline or
                                      a line to cut */
    _cleanup_free_ char *buf = malloc(bufsz);
    if (!buf)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, ENOMEM, "read perf script");
    size_t have = 0;
    bool skipping = false; /* inside the remainder of an over-long line */
    for (;;) {
        ssize_t n = TEMP_FAILURE_RETRY(read(fd, buf + have, bufsz - have));
        if (n < 0)
            return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "read perf script");
        if (n == 0)
            break;
        have += (size_t)n;
        size_t start = 0;
        const char *nl;
        while ((nl = memchr(buf + start, '\n', have - start))) {
            size_t end = (size_t)(nl - buf);
            if (!skipping && folder_feed(f, buf + start, end - start, err) < 0)
                return -1;
            skipping = false;
            start = end + 1;
        }
        memmove(buf, buf + start, have - start);
        have -= start;
        if (have >= FOLD_MAX_LINE) {
            if (!skipping && folder_feed(f, buf, FOLD_MAX_LINE, err) < 0)
                return -1;
            skipping = true;
            have = 0;
        }
    }
    if (have > 0 && !skipping && folder_feed(f, buf, have, err) < 0)
        return -1;
    return 0;
}

/* ---- output ---- */

/* A stack's count as folded text prints it: an integer. Counts are doubles in the profile,
 * exact up to 2^53 (9.0e15: about 1.8 billion 5-ms cpu-clock periods summed into one stack);
 * beyond, they round, and they saturate at 2^64 - 1 instead of wrapping. */
static unsigned long long count_of(double c)
{
    return c >= 18446744073709551615.0 ? ~0ULL : c > 0 ? (unsigned long long)c : 0;
}

typedef struct each_plain {
    fold_emit_fn fn;
    void *ctx;
} each_plain;

static int emit_plain(void *ctx, const char *stack, size_t len, unsigned long long count,
                      unsigned long long events)
{
    (void)events;
    const each_plain *e = ctx;
    return e->fn(e->ctx, stack, len, count);
}

int folder_each(const folder *f, fold_emit_fn fn, void *ctx)
{
    each_plain e = {fn, ctx};
    return folder_each_events(f, emit_plain, &e);
}

int folder_each_events(const folder *f, fold_emit_events_fn fn, void *ctx)
{
    const profile *p = f->prof;
    if (p->nstacks == 0)
        return 0;
    prof_view v;
    if (prof_view_build(p, false, PROF_ORDER_TEXT, &v) < 0)
        return -ENOMEM;
    _cleanup_free_ char *text = NULL;
    size_t cap = 0;
    int r = 0;
    for (uint32_t k = 0; k < p->nstacks && r == 0; k++) {
        const prof_stack *st = &p->stacks[v.order[k]];
        const uint32_t *ids = p->ids + st->off;
        size_t len = 0;
        for (uint32_t i = 0; i < st->depth; i++)
            len += p->names[ids[i]].len + 1;
        if (!GROW(text, cap, len)) {
            r = -ENOMEM;
            break;
        }
        len = 0;
        for (uint32_t i = 0; i < st->depth; i++) {
            if (i)
                text[len++] = ';';
            memcpy(text + len, prof_name_str(p, ids[i]), p->names[ids[i]].len);
            len += p->names[ids[i]].len;
        }
        uint32_t idx = v.order[k];
        double ev = idx < f->events_cap ? f->events[idx] : 0;
        r = fn(ctx, text, len, count_of(st->count), count_of(ev + 0.5));
    }
    prof_view_free(&v);
    return r;
}

static int write_one(void *ctx, const char *stack, size_t len, unsigned long long count)
{
    FILE *out = ctx;
    char num[24];
    size_t i = sizeof num;
    num[--i] = '\n';
    do
        num[--i] = (char)('0' + count % 10);
    while ((count /= 10));
    num[--i] = ' ';
    if (fwrite(stack, 1, len, out) != len ||
        fwrite(num + i, 1, sizeof num - i, out) != sizeof num - i)
        return -EIO;
    return 0;
}

int folder_write(const folder *f, FILE *out, flame_err *err)
{
    int r = folder_each(f, write_one, out);
    if (r == -ENOMEM)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, ENOMEM, "write folded stacks");
    if (r < 0 || fflush(out) != 0 || ferror(out))
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno ? errno : EIO, "write folded stacks");
    return 0;
}

/* Names of frames no stack kept (dropped samples, trimmed frames) leave the profile, so it is
 * exactly what loading the folded text would make. The cache's ids change with them. */
static int drop_unused(folder *f)
{
    if (!f->maybe_unused || f->nfr) /* a sample being read still needs its ids */
        return 0;
    if (prof_drop_unused_names(f->prof) < 0)
        return -1;
    fold_cache_clear(&f->lc);
    f->maybe_unused = false;
    return 0;
}

const profile *folder_profile(folder *f)
{
    return drop_unused(f) < 0 ? NULL : f->prof;
}

profile *folder_steal_profile(folder *f)
{
    profile *fresh = profile_new();
    if (!fresh || drop_unused(f) < 0) {
        profile_free(fresh);
        return NULL;
    }
    profile *p = f->prof;
    f->prof = fresh;
    if (f->events_cap) /* they were the old profile's stacks' */
        memset(f->events, 0, f->events_cap * sizeof *f->events);
    fold_cache_clear(&f->lc); /* its ids are the old profile's */
    f->nfr = 0;
    reset_sample(f);
    f->maybe_unused = false;
    return p;
}

void folder_get_stats(const folder *f, fold_stats *st)
{
    *st = f->st;
    st->stacks = f->prof->nstacks;
}

const char *folder_event(const folder *f)
{
    return f->filter;
}

/* ---- life cycle ---- */

folder *folder_new(const fold_opts *opts)
{
    folder *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    f->o = *opts;
    fold_cache_init(&f->lc);
    if ((opts->event_filter && !(f->filter = strdup(opts->event_filter))) ||
        !(f->pname = malloc(PNAME_MAX)) || !(f->prof = profile_new())) {
        folder_free(f);
        return NULL;
    }
    f->o.event_filter = NULL; /* ours is f->filter; the caller's string may go away */
    return f;
}

void folder_free(folder *f)
{
    if (!f)
        return;
    profile_free(f->prof);
    free(f->events);
    free(f->filter);
    free(f->pname);
    free(f->fbuf);
    free(f->fr);
    free(f->pieces);
    free(f->key);
    fold_cache_free(&f->lc);
    free(f);
}

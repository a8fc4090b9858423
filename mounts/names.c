/* Pure helpers of the perf-map agent: option parsing, readable Java names, and the split of a
 * compiled method's code into inlined ranges. No JVM calls, so tests/agent/ can unit-test them. */
#include "mounts/agent.h"

#include <stdarg.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int agent_fail(struct agent_err *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        err->code = code;
    }
    return -1;
}

int agent_fail_errno(struct agent_err *err, int code, int errnum, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        if (n >= 0 && (size_t)n < sizeof err->msg)
            snprintf(err->msg + n, sizeof err->msg - (size_t)n, ": %s", strerror(errnum));
        err->code = code;
    }
    return -1;
}

/* Bounded string builder over a caller's buffer: appends are cut at cap-1, never overflow. */
struct sbuf {
    char *p;
    size_t len, cap;
    int cut; /* something did not fit */
};

static void sb_putn(struct sbuf *b, const char *s, size_t n)
{
    if (b->len + 1 >= b->cap) {
        b->cut |= n > 0;
        return;
    }
    size_t room = b->cap - 1 - b->len;
    if (n > room) {
        n = room;
        b->cut = 1;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void sb_puts(struct sbuf *b, const char *s)
{
    sb_putn(b, s, strlen(s));
}

/* A class name in internal form (`java/util/HashMap`) as a dotted name. '$' of nested and
 * lambda classes is kept: it is part of the name the user knows. */
static void sb_put_internal_name(struct sbuf *b, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (b->len + 1 >= b->cap) {
            b->cut = 1;
            return;
        }
        char c = s[i] == '/' ? '.' : s[i];
        sb_putn(b, &c, 1);
    }
}

/* Mark a cut string: its last three bytes become "...". */
static void sb_mark_cut(struct sbuf *b)
{
    if (b->cut && b->len >= 3)
        memcpy(b->p + b->len - 3, "...", 3);
}

/* One field type descriptor at *sp (`I`, `[J`, `Ljava/util/Random;`) as Java source spelling
 * (`int`, `long[]`, `java.util.Random`); advances *sp. Returns -1 on a malformed descriptor. */
static int sb_put_type(struct sbuf *b, const char **sp)
{
    const char *s = *sp;
    int dims = 0;
    while (*s == '[') {
        dims++;
        s++;
    }
    static const struct {
        char code;
        const char *name;
    } prims[] = {{'B', "byte"}, {'C', "char"},  {'D', "double"},  {'F', "float"}, {'I', "int"},
                 {'J', "long"}, {'S', "short"}, {'Z', "boolean"}, {'V', "void"}};
    if (*s == 'L') {
        const char *end = strchr(s, ';');
        if (!end)
            return -1;
        sb_put_internal_name(b, s + 1, (size_t)(end - s - 1));
        s = end + 1;
    } else {
        size_t i;
        for (i = 0; i < sizeof prims / sizeof prims[0]; i++)
            if (prims[i].code == *s)
                break;
        if (i == sizeof prims / sizeof prims[0])
            return -1;
        sb_puts(b, prims[i].name);
        s++;
    }
    while (dims-- > 0)
        sb_puts(b, "[]");
    *sp = s;
    return 0;
}

/* Hidden classes (lambdas, JDK 15+) have signatures like
 * `LFlameFixture$$Lambda$14.0x0000000800c0b000;`, the VM-anonymous classes of JDK 11-14
 * `LFlameFixture$$Lambda$14/0x0000000800066840;`: the address differs in every run, which
 * would keep two profiles of the same code from matching in a diff. Returns the length of the
 * name without that suffix: a last segment of "0x" and at least 8 hex digits ('.' never occurs
 * in an ordinary internal class name, and no real class is called 0x00000008...). */
static size_t hidden_class_len(const char *s, size_t n)
{
    size_t i = n;
    while (i > 0 && strchr("0123456789abcdefABCDEF", s[i - 1]))
        i--;
    if (n - i < 8 || i < 3 || s[i - 1] != 'x' || s[i - 2] != '0' ||
        (s[i - 3] != '.' && s[i - 3] != '/'))
        return n;
    return i - 3;
}

/* 1 - e^(-x) for x >= 0, without libm (the agent depends on libc alone): e^(-y) by its series
 * for y = x / 2^k <= 1/64, squared k times (relative error ~ 2^k * 1e-16). */
static double one_minus_exp_neg(double x)
{
    if (x >= 40)
        return 1;
    if (x < 1e-4) /* no cancellation: the series of 1 - e^(-x) itself */
        return x - x * x / 2 + x * x * x / 6;
    int k = 0;
    double y = x;
    while (y > 1.0 / 64) {
        y /= 2;
        k++;
    }
    double e = 1 - y * (1 - y / 2 * (1 - y / 3 * (1 - y / 4 * (1 - y / 5 * (1 - y / 6)))));
    while (k-- > 0)
        e *= e;
    return 1 - e;
}

void agent_alloc_weight(uint64_t size, uint64_t interval, uint64_t *bytes, uint64_t *objects)
{
    if (size == 0)
        size = 1;
    if (interval == 0)
        interval = 1;
    double p = one_minus_exp_neg((double)size / (double)interval);
    double b = (double)size / p, n = 1 / p;
    *bytes = b >= 9e18 ? UINT64_C(9000000000000000000) : (uint64_t)(b + 0.5);
    *objects = n < 1.5 ? 1 : (uint64_t)(n + 0.5);
}

int agent_alloc_shift(uint64_t samples, uint64_t ns, uint64_t cap, uint64_t interval, int shift)
{
    if (cap == 0 || interval == 0)
        return 0;
    if (shift < 0)
        shift = 0;
    if (ns == 0)
        return shift;
    /* samples a second, compared as integers: samples * 1e9 against cap * ns (ns <= ~1e12 and
     * samples, cap < 2^32 in any real slot, so no product overflows; bounded anyway) */
    if (samples > UINT32_MAX)
        samples = UINT32_MAX;
    if (cap > UINT32_MAX)
        cap = UINT32_MAX;
    if (ns > UINT64_C(1000000000000))
        ns = UINT64_C(1000000000000);
    unsigned __int128 rate = (unsigned __int128)samples * 1000000000u,
                      lim = (unsigned __int128)cap * ns;
    if (rate > lim)
        while (rate > lim && shift < AGENT_ALLOC_SHIFT_MAX &&
               (interval << (shift + 1)) <= (1u << 30)) {
            shift++;
            rate /= 2; /* the doubled interval halves the samples */
        }
    else if (shift > 0 && rate * 4 < lim)
        shift--;
    return shift;
}

void agent_sanitize(char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            *s = '?';
}

void agent_frame_name(char *out, size_t cap, const char *class_sig, const char *method,
                      const char *msig)
{
    if (cap == 0)
        return;
    out[0] = '\0';
    /* The method part first, in at most half the room: a huge class name must not push the
     * method name out of the frame. */
    char mpart[AGENT_FRAME_MAX];
    struct sbuf m = {mpart, 0, cap / 2 < sizeof mpart ? cap / 2 : sizeof mpart, 0};
    if (m.cap > 0) {
        mpart[0] = '\0';
        sb_puts(&m, ".");
        sb_puts(&m, method && *method ? method : "[unknown]");
        if (msig && msig[0] == '(') {
            const char *s = msig + 1;
            sb_puts(&m, "(");
            for (int first = 1; *s && *s != ')'; first = 0) {
                if (!first)
                    sb_puts(&m, ", ");
                if (sb_put_type(&m, &s) < 0)
                    break;
            }
            sb_puts(&m, ")");
        }
        sb_mark_cut(&m);
    }
    struct sbuf b = {out, 0, cap - m.len, 0};
    size_t n = class_sig ? strlen(class_sig) : 0;
    if (n >= 2 && class_sig[0] == 'L' && class_sig[n - 1] == ';') {
        sb_put_internal_name(&b, class_sig + 1, hidden_class_len(class_sig + 1, n - 2));
    } else if (n > 0 && class_sig[0] == '[') {
        const char *s = class_sig;
        if (sb_put_type(&b, &s) < 0)
            sb_put_internal_name(&b, class_sig, n);
    } else if (n > 0) {
        sb_put_internal_name(&b, class_sig, n);
    } else {
        sb_puts(&b, "[unknown]");
    }
    sb_mark_cut(&b);
    memcpy(out + b.len, mpart, m.len);
    out[b.len + m.len] = '\0';
    agent_sanitize(out);
}

static int parse_bool(const char *v, int *out)
{
    if (strcmp(v, "0") == 0 || strcmp(v, "false") == 0 || strcmp(v, "no") == 0) {
        *out = 0;
        return 0;
    }
    if (strcmp(v, "1") == 0 || strcmp(v, "true") == 0 || strcmp(v, "yes") == 0) {
        *out = 1;
        return 0;
    }
    return -1;
}

int agent_parse_opts(const char *options, struct agent_opts *o, struct agent_err *err)
{
    *o = (struct agent_opts){
        .stop = 0, .inline_on = 1, .sig = 0, .verbose = 0, .dir = "/tmp", .depth = AGENT_DEPTH};
    if (!options)
        return 0;
    /* Options come from whoever can attach to the JVM; still, bound them instead of trusting. */
    char buf[2048];
    if (strlen(options) >= sizeof buf)
        return agent_fail(err, AGENT_RC_OPTIONS, "options too long (%zu bytes, at most %zu)",
                          strlen(options), sizeof buf - 1);
    strcpy(buf, options);
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        const char *val = eq ? eq + 1 : NULL;
        if (eq)
            *eq = '\0';
        int bad = 0;
        if (strcmp(tok, "start") == 0 && !val) {
            o->stop = o->flush = 0;
        } else if (strcmp(tok, "stop") == 0 && !val) {
            o->stop = 1;
            o->flush = 0;
        } else if (strcmp(tok, "flush") == 0 && !val) {
            o->flush = 1;
            o->stop = 0;
        } else if (strcmp(tok, "inline") == 0 && val) {
            bad = parse_bool(val, &o->inline_on);
        } else if (strcmp(tok, "sig") == 0 && val) {
            bad = parse_bool(val, &o->sig);
        } else if (strcmp(tok, "verbose") == 0 && val) {
            bad = parse_bool(val, &o->verbose);
        } else if (strcmp(tok, "dir") == 0 && val) {
            /* Absolute only: a relative dir would depend on the JVM's cwd, which nobody checks. */
            if (val[0] != '/' || strlen(val) >= sizeof o->dir - 32)
                return agent_fail(err, AGENT_RC_OPTIONS,
                                  "dir=%.64s: need an absolute path shorter than %zu bytes", val,
                                  sizeof o->dir - 32);
            strcpy(o->dir, val);
        } else if ((strcmp(tok, "alloc") == 0 || strcmp(tok, "lock") == 0 ||
                    strcmp(tok, "depth") == 0 || strcmp(tok, "rate") == 0) &&
                   val) {
            /* alloc=BYTES (sampling interval), lock=NS (wait sampled every NS), depth=FRAMES,
             * rate=N (alloc samples a second at most) */
            char *end;
            errno = 0;
            long long v = strtoll(val, &end, 10);
            long long hi = tok[0] == 'd' ? AGENT_DEPTH_MAX : (1ll << 30);
            if (!*val || *end || errno || v < 1 || v > hi)
                return agent_fail(err, AGENT_RC_OPTIONS,
                                  "%s=%.32s: need a whole number from 1 to %lld", tok, val, hi);
            if (tok[0] == 'a')
                o->alloc = v;
            else if (tok[0] == 'r')
                o->rate = v;
            else if (tok[0] == 'l')
                o->lock = v;
            else
                o->depth = (int)v;
        } else if (strcmp(tok, "tag") == 0 && val) {
            /* Part of a file name: hex only, so no '/', '.' or control byte can get in. */
            size_t n = strspn(val, "0123456789abcdef");
            if (n == 0 || val[n] != '\0' || n >= sizeof o->tag)
                return agent_fail(err, AGENT_RC_OPTIONS, "tag: need 1 to %zu lowercase hex digits",
                                  sizeof o->tag - 1);
            strcpy(o->tag, val);
        } else {
            agent_sanitize(tok);
            return agent_fail(
                err, AGENT_RC_OPTIONS,
                "unknown option '%.64s' (use "
                "start|stop|flush,inline=1|0,sig=0|1,dir=PATH,tag=HEX,alloc=BYTES,rate=N,lock=NS,"
                "depth=N)",
                tok);
        }
        if (bad) {
            agent_sanitize(tok);
            return agent_fail(err, AGENT_RC_OPTIONS, "option %.32s wants 0 or 1", tok);
        }
    }
    return 0;
}

void agent_class_name(char *out, size_t cap, const char *sig)
{
    if (!cap)
        return;
    out[0] = 0;
    if (!sig || !*sig) {
        snprintf(out, cap, "[unknown class]");
        return;
    }
    size_t dims = 0;
    while (sig[dims] == '[' && dims < 255)
        dims++;
    const char *e = sig + dims, *base = NULL;
    size_t blen = 0;
    static const char *const prim[][2] = {{"B", "byte"},  {"C", "char"},    {"D", "double"},
                                          {"F", "float"}, {"I", "int"},     {"J", "long"},
                                          {"S", "short"}, {"Z", "boolean"}, {"V", "void"}};
    if (*e == 'L') {
        base = e + 1;
        blen = strcspn(base, ";");
    } else {
        for (size_t i = 0; i < sizeof prim / sizeof prim[0]; i++)
            if (e[0] == prim[i][0][0] && e[1] == 0) {
                base = prim[i][1];
                blen = strlen(base);
            }
    }
    if (!base) { /* not a signature: keep it, made safe */
        base = sig;
        blen = strlen(sig);
    }
    size_t len = 0;
    for (size_t i = 0; i < blen && len + 1 < cap; i++) {
        char c = base[i];
        out[len++] = c == '/' ? '.' : c == ';' ? '_' : c;
    }
    for (size_t d = 0; d < dims && len + 3 <= cap; d++) {
        out[len++] = '[';
        out[len++] = ']';
    }
    out[len] = 0;
    agent_sanitize(out);
}

static int cmp_pc(const void *a, const void *b)
{
    const struct agent_pc *x = a, *y = b;
    if (x->pc != y->pc)
        return x->pc < y->pc ? -1 : 1;
    /* Stable for equal pcs: the first record at a pc wins (see below). */
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

size_t agent_split_code(uint64_t start, uint64_t size, struct agent_pc *pcs, size_t n,
                        struct agent_seg *segs, int (*same)(int a, int b, void *ctx), void *ctx)
{
    uint64_t end = start + size;
    if (size == 0 || end < start)
        return 0;
    if (n > 0)
        qsort(pcs, n, sizeof *pcs, cmp_pc);
    size_t ns = 0;
    uint64_t cur = start;
    for (size_t i = 0; i < n && cur < end; i++) {
        if (pcs[i].pc < start)
            continue;
        /* (previous pc, pc] — the return address itself must resolve to its own chain. */
        uint64_t seg_end = pcs[i].pc >= end ? end : pcs[i].pc + 1;
        if (seg_end <= cur)
            continue; /* a second record at the same pc */
        if (ns > 0 && (segs[ns - 1].idx == pcs[i].idx || same(segs[ns - 1].idx, pcs[i].idx, ctx))) {
            segs[ns - 1].end = seg_end;
        } else {
            segs[ns++] = (struct agent_seg){cur, seg_end, pcs[i].idx};
        }
        cur = seg_end;
    }
    if (cur < end) {
        if (ns > 0 && (segs[ns - 1].idx == -1 || same(segs[ns - 1].idx, -1, ctx)))
            segs[ns - 1].end = end;
        else
            segs[ns++] = (struct agent_seg){cur, end, -1};
    }
    return ns;
}

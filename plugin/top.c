/* `docker flame top`: the sidecar streams one window of folded stacks per interval (T, F..., P);
 * the stream thread (session.c) hands those lines to top_line() which keeps the last K windows;
 * a UI thread draws them (ncurses on a terminal, plain snapshots otherwise) while the main thread
 * runs the ordinary sidecar lifecycle (run_profile: create, attach, start, follow, remove), so
 * every exit path — q, Ctrl-C, SIGHUP, the container stopping — goes through its undo list. */
#include <curses.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <locale.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "flame/profile.h"
#include "common/args.h"
#include "common/contract.h"
#include "plugin/cli.h"
#include "plugin/cmd.h"
#include "plugin/opts.h"
#include "plugin/proto.h"
#include "plugin/session.h"
#include "plugin/sidecar.h"
#include "plugin/signals.h"
#include "plugin/top.h"

#include "common/atomic.h"

#define TOP_MAX_WINDOWS 120
#define TOP_MAX_STACKS 200000 /* per window: a hostile sidecar cannot make us grow without end */
#define TOP_MAX_FRAMES 4096

/* ---- aggregation (pure) ---- */

void top_table_clear(top_table *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->rows[i].name);
    free(t->rows);
    free(t->slots);
    *t = (top_table){0};
}

static size_t hash_name(const char *s, size_t len)
{
    size_t h = 1469598103934665603ull;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

static int table_grow(top_table *t)
{
    size_t ns = t->nslots ? t->nslots * 2 : 1024;
    size_t *slots = calloc(ns, sizeof *slots);
    if (!slots)
        return -1;
    for (size_t i = 0; i < t->n; i++) {
        size_t h = hash_name(t->rows[i].name, strlen(t->rows[i].name)) & (ns - 1);
        while (slots[h])
            h = (h + 1) & (ns - 1);
        slots[h] = i + 1;
    }
    free(t->slots);
    t->slots = slots;
    t->nslots = ns;
    return 0;
}

static top_row *table_get(top_table *t, const char *name, size_t len)
{
    if ((t->n + 1) * 2 > t->nslots && table_grow(t) < 0)
        return NULL;
    size_t h = hash_name(name, len) & (t->nslots - 1);
    while (t->slots[h]) {
        top_row *r = &t->rows[t->slots[h] - 1];
        if (!strncmp(r->name, name, len) && r->name[len] == 0)
            return r;
        h = (h + 1) & (t->nslots - 1);
    }
    if (t->n == t->cap) {
        size_t nc = t->cap ? t->cap * 2 : 256;
        top_row *rows = realloc(t->rows, nc * sizeof *rows);
        if (!rows)
            return NULL;
        t->rows = rows;
        t->cap = nc;
    }
    char *copy = strndup(name, len);
    if (!copy)
        return NULL;
    t->rows[t->n] = (top_row){.name = copy};
    t->slots[h] = ++t->n;
    return &t->rows[t->n - 1];
}

bool top_is_java(const char *f, size_t len)
{
    if (!len || f[0] == '[' || !memchr(f, '.', len))
        return false;
    for (size_t i = 0; i < len; i++) {
        if (f[i] == ' ' || f[i] == '/' || (f[i] == ':' && i + 1 < len && f[i + 1] == ':'))
            return false;
    }
    /* kernel frames (_[k]) are not Java; inlined Java frames (_[i]) are */
    return !(len > 4 && !memcmp(f + len - 4, "_[k]", 4));
}

typedef struct frames {
    const char *p[TOP_MAX_FRAMES];
    size_t len[TOP_MAX_FRAMES];
    int n;
} frames;

/* Split on ';'. A deeper stack keeps its root side and its leaf (the leaf matters most). */
static void split(const char *s, size_t len, frames *fr)
{
    fr->n = 0;
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && s[i] != ';')
            continue;
        if (fr->n == TOP_MAX_FRAMES)
            fr->n--; /* overwrite: the last slot ends up holding the leaf */
        fr->p[fr->n] = s + start;
        fr->len[fr->n] = i - start;
        fr->n++;
        start = i + 1;
    }
}

static void where_of(const frames *fr, int roots, char *out, size_t cap)
{
    if (roots >= 2 && fr->n >= 2)
        snprintf(out, cap, "%.*s/%.*s", (int)fr->len[0], fr->p[0], (int)fr->len[1], fr->p[1]);
    else if (fr->n >= 1)
        snprintf(out, cap, "%.*s", (int)fr->len[0], fr->p[0]);
    else
        out[0] = 0;
}

static void note_where(top_row *r, const char *where, double count)
{
    if (count > r->where_best) {
        r->where_best = count;
        snprintf(r->where, sizeof r->where, "%s", where);
    }
}

int top_table_add(top_table *t, const char *stack, size_t len, double count, int roots,
                  bool java_only)
{
    static __thread frames fr;
    static __thread unsigned stamp;
    split(stack, len, &fr);
    char where[96];
    where_of(&fr, roots, where, sizeof where);
    t->samples += count;
    stamp++;
    int self = -1;
    for (int i = fr.n - 1; i >= roots && self < 0; i--)
        if (!java_only || top_is_java(fr.p[i], fr.len[i]))
            self = i;
    top_row *r;
    if (self < 0) {
        r = table_get(t, java_only ? "(no Java frame)" : "(no frame)",
                      java_only ? strlen("(no Java frame)") : strlen("(no frame)"));
        if (!r)
            return -1;
        r->self += count;
        r->total += count;
        note_where(r, where, count);
        return 0;
    }
    r = table_get(t, fr.p[self], fr.len[self]);
    if (!r)
        return -1;
    r->self += count;
    for (int i = roots; i < fr.n; i++) {
        if (java_only && !top_is_java(fr.p[i], fr.len[i]))
            continue;
        r = table_get(t, fr.p[i], fr.len[i]);
        if (!r)
            return -1;
        if (r->stamp == stamp)
            continue; /* recursion: a frame counts once per stack */
        r->stamp = stamp;
        r->total += count;
        note_where(r, where, count);
    }
    return 0;
}

int top_table_add_callers(top_table *t, const char *stack, size_t len, double count, int roots,
                          bool java_only, const char *method)
{
    static __thread frames fr;
    split(stack, len, &fr);
    size_t ml = strlen(method);
    for (int i = fr.n - 1; i >= roots; i--) {
        if (fr.len[i] != ml || memcmp(fr.p[i], method, ml) != 0)
            continue;
        int c = i - 1;
        while (java_only && c >= roots && !top_is_java(fr.p[c], fr.len[c]))
            c--;
        top_row *r = c >= roots ? table_get(t, fr.p[c], fr.len[c]) : table_get(t, "(root)", 6);
        if (!r)
            return -1;
        char where[96];
        where_of(&fr, roots, where, sizeof where);
        r->self += count;
        r->total += count;
        note_where(r, where, count);
        t->samples += count;
        return 0;
    }
    return 0;
}

static bool g_sort_total;
static int row_cmp(const void *a, const void *b)
{
    const top_row *x = a, *y = b;
    double kx = g_sort_total ? x->total : x->self, ky = g_sort_total ? y->total : y->self;
    if (kx != ky)
        return kx < ky ? 1 : -1;
    double sx = g_sort_total ? x->self : x->total, sy = g_sort_total ? y->self : y->total;
    if (sx != sy)
        return sx < sy ? 1 : -1;
    return strcmp(x->name, y->name);
}

void top_table_sort(top_table *t, bool by_total)
{
    g_sort_total = by_total; /* only the UI thread sorts */
    if (t->n)
        qsort(t->rows, t->n, sizeof *t->rows, row_cmp);
    free(t->slots); /* indexes are stale after sorting; the table is read-only from here */
    t->slots = NULL;
    t->nslots = 0;
}

/* ---- the windows seen so far (filled by the stream thread) ---- */

typedef struct top_win {
    long long id, start_ms, ms, samples, end_mono_ms;
    char **stk;
    double *cnt;
    size_t n, cap;
} top_win;

typedef struct top_model {
    pthread_mutex_t lock;
    int k; /* windows in the sliding window */
    top_win ring[TOP_MAX_WINDOWS];
    int nring; /* filled slots, newest at (head - 1) */
    int head;
    top_win cur;
    bool in_win;
    unsigned gen; /* completed windows so far */
    int jvms;
    long long total_samples, skipped;
    double last_latency_ms; /* T arrival minus the window's end (same host clocks) */
    double lat_sum, lat_max;
    long long lat_n;
    profile *rec; /* --record */
    bool ended;   /* E or D seen */
    int wake[2];  /* UI wake-up pipe */
} top_model;

static void win_free(top_win *w)
{
    for (size_t i = 0; i < w->n; i++)
        free(w->stk[i]);
    free(w->stk);
    free(w->cnt);
    *w = (top_win){0};
}

static void wake_ui(top_model *m)
{
    if (m->wake[1] >= 0) {
        ssize_t w = write(m->wake[1], "w", 1);
        (void)w;
    }
}

/* cur -> ring (the oldest window falls out) */
static void win_complete(top_model *m)
{
    if (!m->in_win)
        return;
    m->in_win = false;
    win_free(&m->ring[m->head]);
    m->ring[m->head] = m->cur;
    m->cur = (top_win){0};
    m->head = (m->head + 1) % m->k;
    if (m->nring < m->k)
        m->nring++;
    m->gen++;
    wake_ui(m);
}

/* The session's line hook (stream thread, sess lock held). 1 = consumed (T, F); 0 = let the
 * protocol parser have it too (V, J, P, W, E, D). Malformed T/F lines are ignored: the stream
 * is not trusted, but a bad window must not end the view. */
static int top_line(void *ctx, const char *line, size_t len)
{
    top_model *m = ctx;
    if (len < 1)
        return 0;
    char tag = line[0];
    if (tag != 'T' && tag != 'F' && tag != 'P' && tag != 'E' && tag != 'D' && tag != 'J')
        return 0;
    pthread_mutex_lock(&m->lock);
    int rc = 0;
    if (tag == 'T' && len > 2) {
        win_complete(m);
        ct_window w = {0};
        flame_err e = FLAME_ERR_INIT;
        proto_read_window(line + 2, len - 2, &w, &e); /* malformed: zeroes, as documented */
        m->cur = (top_win){.id = (long long)w.window,
                           .start_ms = (long long)w.start_ms,
                           .ms = (long long)w.ms,
                           .samples = (double)w.folded,
                           .end_mono_ms = (long long)w.end_mono_ms};
        m->skipped = (long long)w.skipped;
        m->in_win = true;
        m->total_samples += m->cur.samples;
        if (m->cur.end_mono_ms > 0) {
            double lat = (double)mono_ms() - (double)m->cur.end_mono_ms;
            m->last_latency_ms = lat;
            m->lat_sum += lat;
            m->lat_n++;
            if (lat > m->lat_max)
                m->lat_max = lat;
        }
        rc = 1;
    } else if (tag == 'F' && len > 2) {
        rc = 1;
        /* "F stack count": the count is after the last space */
        const char *s = line + 2;
        size_t n = len - 2;
        const char *sp = memrchr(s, ' ', n);
        char *end = NULL;
        double c = sp ? strtod(sp + 1, &end) : 0;
        if (m->in_win && sp && sp > s && end == s + n && c > 0 && c < 1e12 &&
            m->cur.n < TOP_MAX_STACKS) {
            size_t sl = (size_t)(sp - s);
            char *stk = malloc(sl + 1);
            if (stk) {
                memcpy(stk, s, sl);
                stk[sl] = 0;
                char *clean = malloc(sl + 1);
                if (clean)
                    proto_sanitize(stk, clean, sl + 1); /* what reaches the terminal */
                free(stk);
                stk = clean;
            }
            if (stk && m->cur.n == m->cur.cap) {
                size_t nc = m->cur.cap ? m->cur.cap * 2 : 64;
                char **a = realloc(m->cur.stk, nc * sizeof *a);
                double *b = a ? realloc(m->cur.cnt, nc * sizeof *b) : NULL;
                if (a)
                    m->cur.stk = a;
                if (b) {
                    m->cur.cnt = b;
                    m->cur.cap = nc;
                }
            }
            if (stk && m->cur.n < m->cur.cap) {
                m->cur.stk[m->cur.n] = stk;
                m->cur.cnt[m->cur.n++] = c;
                if (m->rec)
                    profile_add(m->rec, stk, sl, c, PROFILE_ONE_COLUMN);
            } else {
                free(stk);
            }
        }
    } else if (tag == 'P') {
        win_complete(m);
    } else if (tag == 'J') {
        m->jvms++;
    } else { /* E, D */
        win_complete(m);
        m->ended = true;
        wake_ui(m);
    }
    pthread_mutex_unlock(&m->lock);
    return rc;
}

/* ---- the view ---- */

typedef struct top_ui {
    top_model *m;
    const char *container;
    double interval_s, window_s;
    bool tty, by_total, java_only, paused;
    bool callers; /* showing the callers of `focus` */
    char focus[512];
    int sel, scroll;
    top_table tab;
    double samples, span_ms;
    int wins;
    double t0;
    volatile bool main_done; /* run_profile returned */
    bool quit_sent;
    const char *status; /* "stopping ..." */
} top_ui;

/* Rebuild the table from the ring (under the model lock). */
static void ui_aggregate(top_ui *u)
{
    top_model *m = u->m;
    top_table_clear(&u->tab);
    u->samples = u->span_ms = 0;
    u->wins = 0;
    int roots = m->jvms > 1 ? 2 : 1;
    for (int i = 0; i < m->nring; i++) {
        const top_win *w = &m->ring[i];
        u->span_ms += (double)w->ms;
        u->wins++;
        for (size_t s = 0; s < w->n; s++) {
            size_t len = strlen(w->stk[s]);
            if (u->callers)
                top_table_add_callers(&u->tab, w->stk[s], len, w->cnt[s], roots, u->java_only,
                                      u->focus);
            else
                top_table_add(&u->tab, w->stk[s], len, w->cnt[s], roots, u->java_only);
            u->samples += w->cnt[s];
        }
    }
    top_table_sort(&u->tab, u->by_total);
}

static void fmt_elapsed(double s, char *buf, size_t n)
{
    long t = (long)s;
    if (t >= 3600)
        snprintf(buf, n, "%ldh%02ldm%02lds", t / 3600, t / 60 % 60, t % 60);
    else
        snprintf(buf, n, "%ldm%02lds", t / 60, t % 60);
}

static void header_text(top_ui *u, char *buf, size_t n)
{
    char el[32];
    fmt_elapsed(mono_s() - u->t0, el, sizeof el);
    double rate = u->span_ms > 0 ? u->samples * 1000.0 / u->span_ms : 0;
    snprintf(buf, n,
             "docker flame top - %s  JVMs: %d  elapsed %s  %.0f samples/s  window %.0fs (%d x "
             "%.1fs)  refresh lag %.0f ms%s",
             u->container, u->m->jvms, el, rate, u->window_s, u->wins, u->interval_s,
             u->m->last_latency_ms, u->paused ? "  [PAUSED]" : "");
}

static void request_quit(top_ui *u, const char *why);

static void plain_snapshot(top_ui *u)
{
    char hdr[512];
    header_text(u, hdr, sizeof hdr);
    printf("--- %s\n", hdr);
    printf("sort: %s  frames: %s  samples in window: %.0f\n", u->by_total ? "total" : "self",
           u->java_only ? "java" : "all", u->samples);
    printf("%7s %7s %8s  %-60s %s\n", "SELF%", "TOTAL%", "SAMPLES", "METHOD", "JVM/THREAD");
    double tot = u->tab.samples > 0 ? u->tab.samples : 1;
    for (size_t i = 0; i < u->tab.n && i < 20; i++) {
        const top_row *r = &u->tab.rows[i];
        printf("%6.1f%% %6.1f%% %8.0f  %-60s %s\n", 100 * r->self / tot, 100 * r->total / tot,
               u->by_total ? r->total : r->self, r->name, r->where);
    }
    if (fflush(stdout) != 0 || ferror(stdout))
        request_quit(u, "stdout closed"); /* `| head`: nobody reads any more */
}

static void draw(top_ui *u)
{
    int rows, cols;
    getmaxyx(stdscr, rows, cols);
    erase();
    char buf[1024];
    header_text(u, buf, sizeof buf);
    attron(A_BOLD);
    mvaddnstr(0, 0, buf, cols);
    attroff(A_BOLD);
    snprintf(buf, sizeof buf,
             "sort: %s   frames: %s   keys: q quit  s/t sort self/total  j java/all  p pause  "
             "Up/Down + Enter callers%s",
             u->by_total ? "total" : "self", u->java_only ? "java" : "all",
             u->callers ? "  Esc back" : "");
    mvaddnstr(1, 0, buf, cols);
    if (u->status)
        mvaddnstr(2, 0, u->status, cols);
    else if (u->callers)
        snprintf(buf, sizeof buf, "callers of %s (%.0f samples)", u->focus, u->tab.samples),
            mvaddnstr(2, 0, buf, cols);
    else if (!u->wins)
        mvaddnstr(2, 0, "waiting for the first window (injecting the agent, attaching)...", cols);
    int namew = cols - 7 - 8 - 9 - 4 - 28;
    if (namew < 20)
        namew = 20;
    snprintf(buf, sizeof buf, "%6s %7s %8s  %-*s  %s", "SELF%", "TOTAL%", "SAMPLES", namew,
             u->callers ? "CALLER" : "METHOD", "JVM/THREAD");
    attron(A_REVERSE);
    mvaddnstr(3, 0, buf, cols);
    for (int x = (int)strlen(buf); x < cols; x++)
        mvaddch(3, x, ' ');
    attroff(A_REVERSE);
    int lines = rows - 4;
    if (u->sel >= (int)u->tab.n)
        u->sel = u->tab.n ? (int)u->tab.n - 1 : 0;
    if (u->sel < u->scroll)
        u->scroll = u->sel;
    if (lines > 0 && u->sel >= u->scroll + lines)
        u->scroll = u->sel - lines + 1;
    double tot = u->tab.samples > 0 ? u->tab.samples : 1;
    for (int i = 0; i < lines && u->scroll + i < (int)u->tab.n; i++) {
        const top_row *r = &u->tab.rows[u->scroll + i];
        snprintf(buf, sizeof buf, "%5.1f%% %6.1f%% %8.0f  %-*.*s  %s", 100 * r->self / tot,
                 100 * r->total / tot, u->by_total ? r->total : r->self, namew, namew, r->name,
                 r->where);
        if (u->scroll + i == u->sel)
            attron(A_REVERSE);
        mvaddnstr(4 + i, 0, buf, cols);
        if (u->scroll + i == u->sel)
            attroff(A_REVERSE);
    }
    refresh();
}

static void request_quit(top_ui *u, const char *why)
{
    if (u->quit_sent)
        return;
    u->quit_sent = true;
    u->status = why;
    /* The ordinary stop path: the session's SIGINT handling stops the sidecar, which restores
     * the target and ends its stream; run_profile then removes it. */
    kill(getpid(), SIGINT);
}

static void key(top_ui *u, int c, bool *dirty)
{
    switch (c) {
    case 'q':
    case 'Q':
        request_quit(u, "quitting: stopping the sidecar and restoring the target...");
        break;
    case 's':
        u->by_total = false;
        break;
    case 't':
        u->by_total = true;
        break;
    case 'j':
        u->java_only = !u->java_only;
        u->callers = false;
        break;
    case 'p':
        u->paused = !u->paused;
        break;
    case KEY_UP:
        if (u->sel > 0)
            u->sel--;
        *dirty = true;
        return; /* no re-aggregation: rows stay where they are */
    case KEY_DOWN:
        u->sel++;
        *dirty = true;
        return;
    case KEY_NPAGE:
        u->sel += 10;
        *dirty = true;
        return;
    case KEY_PPAGE:
        u->sel = u->sel > 10 ? u->sel - 10 : 0;
        *dirty = true;
        return;
    case '\n':
    case '\r':
    case KEY_ENTER:
        if (!u->callers && u->sel < (int)u->tab.n) {
            snprintf(u->focus, sizeof u->focus, "%s", u->tab.rows[u->sel].name);
            u->callers = true;
            u->sel = u->scroll = 0;
        } else if (u->callers) {
            u->callers = false;
        }
        break;
    case 27: /* Esc */
    case KEY_LEFT:
    case KEY_BACKSPACE:
        u->callers = false;
        break;
    case KEY_RESIZE:
        break;
    default:
        return;
    }
    *dirty = true;
    u->sel = c == 's' || c == 't' || c == 'j' ? 0 : u->sel;
}

static void *ui_main(void *arg)
{
    top_ui *u = arg;
    top_model *m = u->m;
    unsigned seen = 0;
    bool dirty = true, need_agg = true;
    double last_draw = 0;
    while (!u->main_done) {
        pthread_mutex_lock(&m->lock);
        if (m->gen != seen && !u->paused) {
            seen = m->gen;
            need_agg = true;
        }
        if (need_agg) {
            ui_aggregate(u);
            need_agg = false;
            dirty = true;
            if (!u->tty && m->gen)
                plain_snapshot(u);
        }
        pthread_mutex_unlock(&m->lock);
        if (u->tty && (dirty || mono_s() - last_draw >= 1.0)) {
            draw(u);
            last_draw = mono_s();
            dirty = false;
        }
        struct pollfd p[2] = {{.fd = m->wake[0], .events = POLLIN},
                              {.fd = u->tty ? 0 : -1, .events = POLLIN}};
        if (poll(p, 2, 200) <= 0)
            continue;
        if (p[0].revents) {
            char b[64];
            while (read(m->wake[0], b, sizeof b) > 0) {
            }
        }
        if (u->tty && p[1].revents) {
            int c;
            while ((c = getch()) != ERR) {
                bool re = false;
                key(u, c, &re);
                if (re)
                    dirty = true;
                if (re && c != KEY_UP && c != KEY_DOWN && c != KEY_NPAGE && c != KEY_PPAGE)
                    need_agg = true;
            }
        }
        if (p[1].revents & (POLLHUP | POLLERR))
            request_quit(u, "the terminal went away");
    }
    return NULL;
}

/* ---- the command ---- */

typedef struct top_args {
    uint64_t interval_ms, window_ms;
    int64_t frequency, pid;
    const char *record, *container;
    bool no_inline, help;
    args_operands ops;
} top_args;

#define F(field, T) ARG_FIELD(top_args, field, T)
// clang-format off
static const arg_spec top_specs[] = {
    {.lng = "interval", .shrt = 'i', .kind = ARG_DURATION, .off = F(interval_ms, uint64_t),
     .meta = "DURATION", .help = "refresh interval (default 1s)", .lo = CT_INTERVAL_MIN_MS,
     .hi = CT_INTERVAL_MAX_MS},
    {.lng = "window", .shrt = 'w', .kind = ARG_DURATION, .off = F(window_ms, uint64_t),
     .meta = "DURATION", .help = "sliding window the shares are computed over (default 5s)",
     .lo = CT_INTERVAL_MIN_MS, .hi = (double)CT_INTERVAL_MAX_MS * TOP_MAX_WINDOWS},
    {.lng = "frequency", .shrt = 'F', .kind = ARG_INT, .off = F(frequency, int64_t), .meta = "HZ",
     .help = "sampling frequency (default 99)", .lo = 1, .hi = CT_FREQ_MAX},
    {.lng = "pid", .shrt = 'p', .kind = ARG_INT, .off = F(pid, int64_t), .meta = "PID",
     .help = "only this JVM (pid in the container)", .lo = 1, .hi = CT_PID_MAX},
    {.lng = "record", .kind = ARG_STR, .off = F(record, const char *), .meta = "FILE",
     .help = "on exit, write every stack seen as folded text", .complete = "file"},
    {.lng = "no-inline", .kind = ARG_FLAG, .off = F(no_inline, bool),
     .help = "do not split inlined Java frames"},
    {.lng = "help", .shrt = 'h', .kind = ARG_FLAG, .off = F(help, bool), .help = "this help"},
};
// clang-format on
static const args_verb top_verb = {.name = "docker flame top",
                                   .specs = top_specs,
                                   .nspecs = sizeof top_specs / sizeof *top_specs,
                                   .operands_off = F(ops, args_operands)};
#undef F

static void top_usage(FILE *f)
{
    fprintf(f, "Usage:  docker flame top [OPTIONS] CONTAINER\n\n"
               "A live view of the hottest Java methods in the container's JVM(s).\n\n"
               "Options:\n");
    args_help(&top_verb, f);
    fprintf(f, "\nKeys: q quit, s/t sort by self/total, j Java-only/all frames, p pause,\n"
               "Up/Down + Enter show a method's callers (Esc back).\n"
               "When stdout is not a terminal, a plain snapshot is printed every interval.\n");
}

static int parse_args(int argc, char **argv, top_args *a, flame_err *err)
{
    *a = (top_args){.interval_ms = 1000, .window_ms = 5000, .frequency = 99};
    if (args_parse(&top_verb, argc - 1, argv + 1, a, NULL, err) < 0)
        return -1;
    if (a->help)
        return 1;
    if (a->ops.n == 0)
        return args_error(&top_verb, err,
                          "which container? usage: docker flame top [OPTIONS] CONTAINER");
    if (a->ops.n > 1)
        return args_error(&top_verb, err, "one container at a time");
    a->container = a->ops.v[0];
    if (a->window_ms < a->interval_ms)
        a->window_ms = a->interval_ms;
    if ((double)a->window_ms / (double)a->interval_ms > TOP_MAX_WINDOWS - 0.5)
        return args_error(&top_verb, err, "--window is at most %d intervals", TOP_MAX_WINDOWS);
    return 0;
}

static int write_record_cb(void *ctx, FILE *out, flame_err *err)
{
    return profile_write_folded(ctx, out, err);
}

static int write_record(const char *path, profile *p, flame_err *err)
{
    if (atomic_write_file(path, write_record_cb, p, err) < 0)
        return flame_wrap(err, "--record");
    return 0;
}

int flame_cmd_top(const ep_globals *g, int argc, char **argv)
{
    flame_err err = FLAME_ERR_INIT;
    top_args a;
    int pr = parse_args(argc, argv, &a, &err);
    if (pr == 1) {
        top_usage(stdout);
        return 0;
    }
    if (pr < 0)
        return cli_fail("top", &err);
    static top_model m; /* the stream thread may outlive nothing: joined in run_profile */
    m = (top_model){.k = (int)((double)a.window_ms / (double)a.interval_ms + 0.5),
                    .wake = {-1, -1}};
    if (m.k < 1)
        m.k = 1;
    pthread_mutex_init(&m.lock, NULL);
    if (pipe2(m.wake, O_CLOEXEC | O_NONBLOCK) < 0) {
        fprintf(stderr, "docker flame: pipe: %s\n", strerror(errno));
        return FLAME_EXIT_ERROR;
    }
    if (a.record && !(m.rec = profile_new())) {
        fprintf(stderr, "docker flame: out of memory\n");
        return FLAME_EXIT_ERROR;
    }

    flame_opts o;
    opts_init(&o);
    o.containers.v[0] = a.container;
    o.containers.n = 1;
    o.duration_ms = 0;
    o.frequency = a.frequency;
    o.pid = a.pid;
    o.no_inline = a.no_inline;
    o.quiet = true; /* the view is the progress */
    o.top = true;
    o.interval_ms = a.interval_ms;

    sess s = {.arg = a.container, .line_hook = top_line, .hook_ctx = &m};
    run_ctx r = {.o = &o, .s = &s, .n = 1, .debug = g->debug};
    r.tm.t0 = mono_s();
    progress_init(&r.pg, stderr, true);

    /* a full container id is 64 hex digits: show docker's short form */
    char shown[16];
    const char *cname = a.container;
    if (strlen(cname) == 64 && strspn(cname, "0123456789abcdef") == 64) {
        snprintf(shown, sizeof shown, "%.12s", cname);
        cname = shown;
    }
    top_ui u = {.m = &m,
                .container = cname,
                .interval_s = (double)a.interval_ms / 1000,
                .window_s = (double)a.window_ms / 1000,
                .tty = isatty(1) && isatty(0) && getenv("TERM"),
                .java_only = true,
                .t0 = mono_s()};
    engine *e = NULL;
    int rc = engine_open(g, &e, &err);
    r.e = e;
    pthread_t ui;
    bool ui_started = false;
    if (rc == 0) {
        if (u.tty) {
            setlocale(LC_ALL, "");
            initscr();
            cbreak(); /* not raw: Ctrl-C stays SIGINT, the session's stop path */
            noecho();
            keypad(stdscr, TRUE);
            nodelay(stdscr, TRUE);
            curs_set(0);
            set_escdelay(25);
        }
        /* The UI thread must not take the session's signals: the main thread's loop does. */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, &old);
        ui_started = pthread_create(&ui, NULL, ui_main, &u) == 0;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        rc = run_profile(&r, &err);
    }
    u.main_done = true;
    if (ui_started)
        pthread_join(ui, NULL);
    if (u.tty)
        endwin(); /* every path: the terminal is restored before anything is printed */

    int exit_code = 0;
    if (rc < 0 && err.code != FLAME_EXIT_INTERRUPTED) {
        fprintf(stderr, "docker flame: %s\n", err.msg);
        exit_code = err.code ? err.code : FLAME_EXIT_ERROR;
    } else if (s.pr.failed) {
        char text[1024];
        proto_sanitize(s.pr.err_text ? s.pr.err_text : "", text, sizeof text);
        fprintf(stderr, "docker flame: top %s: %s: %s\n", s.name, ct_error_name(s.pr.err), text);
        exit_code = ct_error_exit(s.pr.err);
    } else if (rc == 0 && !s.pr.done && !u.quit_sent && !sess_interrupted()) {
        fprintf(stderr,
                "docker flame: top %s: the sidecar ended without finishing (did the "
                "container stop?)\n",
                s.name);
        exit_code = FLAME_EXIT_ERROR;
    }
    if (m.rec) {
        flame_err e2 = FLAME_ERR_INIT;
        if (write_record(a.record, m.rec, &e2) < 0) {
            fprintf(stderr, "docker flame: %s\n", e2.msg);
            if (!exit_code)
                exit_code = e2.code ? e2.code : FLAME_EXIT_ERROR;
        } else {
            fprintf(stderr, "docker flame: wrote %s (%.0f samples)\n", a.record,
                    profile_total(m.rec));
        }
        profile_free(m.rec);
    }
    if (getenv("DOCKER_FLAME_TOP_STATS"))
        fprintf(stderr,
                "docker flame: top stats: windows %u, samples %lld, skipped %lld, refresh lag "
                "last %.0f ms, mean %.0f ms, max %.0f ms\n",
                m.gen, m.total_samples, m.skipped, m.last_latency_ms,
                m.lat_n ? m.lat_sum / (double)m.lat_n : 0, m.lat_max);
    sess_clear(&s);
    engine_free(e);
    pthread_mutex_lock(&m.lock);
    win_free(&m.cur);
    for (int i = 0; i < TOP_MAX_WINDOWS; i++)
        win_free(&m.ring[i]);
    pthread_mutex_unlock(&m.lock);
    top_table_clear(&u.tab);
    close(m.wake[0]);
    close(m.wake[1]);
    return exit_code;
}

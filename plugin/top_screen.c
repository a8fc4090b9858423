/* The screen of `docker flame top` (plugin/top.h): the windows of the model aggregated per
 * method (flame/methods), drawn with ncurses on a terminal (keys: sort, Java-only, pause,
 * callers), or printed as a plain snapshot per window otherwise. Names come from the target:
 * they reach the terminal only through proto_sanitize(). */
#include <ctype.h>
#include <curses.h>
#include <locale.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/contract.h"
#include "plugin/inputs.h"
#include "plugin/run/proto.h"
#include "plugin/top.h"

/* Rebuild the table from the ring (caller holds the model lock). On failure (out of memory) the
 * screen shows an empty table rather than ending the view. */
static void aggregate(top_ui *u)
{
    top_model *m = u->m;
    methods_free(u->tab);
    methods_opts o = {.java_only = u->java_only,
                      .self_to_java = u->java_only,
                      .roots = m->jvms > 1 ? 2 : 1,
                      .callers_of = u->callers ? u->focus : NULL};
    u->tab = methods_new(&o);
    flame_err err = FLAME_ERR_INIT;
    if (u->tab && top_model_aggregate(m, u->tab, &u->span_ms, &u->wins, &err) == 0)
        methods_sort(u->tab, u->by_total);
}

static double table_samples(const top_ui *u)
{
    double s = u->tab ? methods_samples(u->tab, false) : 0;
    return s > 0 ? s : 1;
}

static const methods_row *rows_of(const top_ui *u, size_t *n)
{
    *n = 0;
    return u->tab ? methods_rows(u->tab, n) : NULL;
}

/* A row's name and JVM/thread as they may reach the terminal. */
static void clean_row(const methods_row *r, char *name, size_t ncap, char *where, size_t wcap)
{
    proto_sanitize(r->name ? r->name : "", name, ncap);
    proto_sanitize(r->where ? r->where : "", where, wcap);
}

static void fmt_elapsed(double s, char *buf, size_t n)
{
    long t = (long)s;
    if (t >= 3600)
        snprintf(buf, n, "%ldh%02ldm%02lds", t / 3600, t / 60 % 60, t % 60);
    else
        snprintf(buf, n, "%ldm%02lds", t / 60, t % 60);
}

/* The counts' unit: "samples", "bytes" or "ns" (the profile type's) */
static const char *unit_of(const top_ui *u)
{
    return ct_mode((enum ct_mode)u->mode)->unit;
}

/* The window's rate in its unit: "1,234 samples/s", "56.7 MB/s" allocated, "1.50 threads"
 * (ns waited per ns: how many threads, on average, were in it) */
static void rate_text(const top_ui *u, double per_s, char *buf, size_t n)
{
    char g[32];
    if (!strcmp(unit_of(u), "ns"))
        snprintf(buf, n, "%.2f threads in %s", per_s / 1e9, ct_mode((enum ct_mode)u->mode)->what);
    else if (!strcmp(unit_of(u), "bytes"))
        snprintf(buf, n, "%.1f MB/s allocated", per_s / 1e6);
    else
        snprintf(buf, n, "%s samples/s", count_grouped(per_s, g, sizeof g));
}

/* The column header of the counts: SAMPLES, BYTES, NS */
static void unit_header(const top_ui *u, char *buf, size_t n)
{
    size_t i = 0;
    for (const char *c = unit_of(u); *c && i + 1 < n; c++)
        buf[i++] = (char)toupper((unsigned char)*c);
    buf[i] = '\0';
}

static void header_text(top_ui *u, char *buf, size_t n)
{
    char el[32], rate[64];
    fmt_elapsed(mono_s() - u->t0, el, sizeof el);
    rate_text(u, u->span_ms > 0 ? table_samples(u) * 1000.0 / u->span_ms : 0, rate, sizeof rate);
    snprintf(buf, n,
             "docker flame top - %s  JVMs: %d  elapsed %s  %s  window %.0fs (%d x "
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
    char g[32], uh[16];
    unit_header(u, uh, sizeof uh);
    printf("sort: %s  frames: %s  %s in window: %s\n", u->by_total ? "total" : "self",
           u->java_only ? "java" : "all", unit_of(u),
           count_grouped(u->tab ? methods_samples(u->tab, false) : 0, g, sizeof g));
    printf("%7s %7s %8s  %-60s %s\n", "SELF%", "TOTAL%", uh, "METHOD", "JVM/THREAD");
    size_t n;
    const methods_row *rows = rows_of(u, &n);
    double tot = table_samples(u);
    for (size_t i = 0; i < n && i < 20; i++) {
        char name[512], where[128];
        clean_row(&rows[i], name, sizeof name, where, sizeof where);
        printf("%6.1f%% %6.1f%% %8s  %-60s %s\n", 100 * rows[i].self / tot,
               100 * rows[i].total / tot,
               count_grouped(u->by_total ? rows[i].total : rows[i].self, g, sizeof g), name, where);
    }
    if (fflush(stdout) != 0 || ferror(stdout))
        request_quit(u, "stdout closed"); /* `| head`: nobody reads any more */
}

static void draw(top_ui *u)
{
    int rows, cols;
    getmaxyx(stdscr, rows, cols);
    erase();
    char buf[1024], cnt[32];
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
        snprintf(buf, sizeof buf, "callers of %s (%s %s)", u->focus,
                 count_grouped(table_samples(u), cnt, sizeof cnt), unit_of(u)),
            mvaddnstr(2, 0, buf, cols);
    else if (!u->wins)
        mvaddnstr(2, 0, "waiting for the first window (injecting the agent, attaching)...", cols);
    int namew = cols - 7 - 8 - 9 - 4 - 28;
    if (namew < 20)
        namew = 20;
    char uh[16];
    unit_header(u, uh, sizeof uh);
    snprintf(buf, sizeof buf, "%6s %7s %8s  %-*s  %s", "SELF%", "TOTAL%", uh, namew,
             u->callers ? "CALLER" : "METHOD", "JVM/THREAD");
    attron(A_REVERSE);
    mvaddnstr(3, 0, buf, cols);
    for (int x = (int)strlen(buf); x < cols; x++)
        mvaddch(3, x, ' ');
    attroff(A_REVERSE);
    int lines = rows - 4;
    size_t nrows;
    const methods_row *tab = rows_of(u, &nrows);
    if (u->sel >= (int)nrows)
        u->sel = nrows ? (int)nrows - 1 : 0;
    if (u->sel < u->scroll)
        u->scroll = u->sel;
    if (lines > 0 && u->sel >= u->scroll + lines)
        u->scroll = u->sel - lines + 1;
    double tot = table_samples(u);
    for (int i = 0; i < lines && u->scroll + i < (int)nrows; i++) {
        const methods_row *r = &tab[u->scroll + i];
        char name[512], where[128];
        clean_row(r, name, sizeof name, where, sizeof where);
        snprintf(buf, sizeof buf, "%5.1f%% %6.1f%% %8s  %-*.*s  %s", 100 * r->self / tot,
                 100 * r->total / tot,
                 count_grouped(u->by_total ? r->total : r->self, cnt, sizeof cnt), namew, namew,
                 name, where);
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
        size_t nrows;
        const methods_row *tab = rows_of(u, &nrows);
        if (!u->callers && u->sel < (int)nrows) {
            snprintf(u->focus, sizeof u->focus, "%s", tab[u->sel].name);
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

void *top_screen_main(void *arg)
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
            aggregate(u);
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

void top_screen_start(void)
{
    setlocale(LC_ALL, "");
    initscr();
    cbreak(); /* not raw: Ctrl-C stays SIGINT, the session's stop path */
    noecho();
    keypad(stdscr, TRUE);
    nodelay(stdscr, TRUE);
    curs_set(0);
    set_escdelay(25);
}

void top_screen_end(void)
{
    endwin(); /* every path: the terminal is restored before anything is printed */
}

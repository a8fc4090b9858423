/* The windows of `docker flame top` (plugin/top.h): the stream thread turns each T line into a
 * new window and its F lines into that window's profile; the last k windows stay in a ring. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "plugin/run/proto.h"
#include "plugin/top.h"

int top_model_init(top_model *m, int k, bool with_record)
{
    *m = (top_model){.k = k < 1 ? 1 : k > TOP_MAX_WINDOWS ? TOP_MAX_WINDOWS : k, .wake = {-1, -1}};
    pthread_mutex_init(&m->lock, NULL);
    if (pipe2(m->wake, O_CLOEXEC | O_NONBLOCK) < 0)
        return -1;
    if (with_record && !(m->rec = profile_new()))
        return -1;
    return 0;
}

static void win_free(top_win *w)
{
    for (int i = 0; i < CT_MODE_COUNT; i++)
        profile_free(w->p[i]);
    *w = (top_win){0};
}

void top_model_free(top_model *m)
{
    pthread_mutex_lock(&m->lock);
    win_free(&m->cur);
    for (int i = 0; i < TOP_MAX_WINDOWS; i++)
        win_free(&m->ring[i]);
    profile_free(m->rec);
    m->rec = NULL;
    pthread_mutex_unlock(&m->lock);
    for (int i = 0; i < 2; i++)
        if (m->wake[i] >= 0)
            close(m->wake[i]);
    pthread_mutex_destroy(&m->lock);
}

static void wake_ui(top_model *m)
{
    if (m->wake[1] >= 0) {
        ssize_t w = write(m->wake[1], "w", 1); /* a full pipe already wakes the screen */
        (void)w;
    }
}

/* cur -> ring (the oldest window falls out) */
static void win_complete(top_model *m)
{
    if (!m->in_win)
        return;
    m->in_win = false;
    if (m->on_window)
        m->on_window(m->on_window_ctx, &m->cur);
    win_free(&m->ring[m->head]);
    m->ring[m->head] = m->cur;
    m->cur = (top_win){0};
    m->head = (m->head + 1) % m->k;
    if (m->nring < m->k)
        m->nring++;
    m->gen++;
    wake_ui(m);
}

static void window_starts(top_model *m, const char *payload, size_t n)
{
    win_complete(m);
    ct_window w = {0};
    flame_err e = FLAME_ERR_INIT;
    proto_read_window(payload, n, &w, &e); /* malformed: zeroes, the window still counts */
    m->cur = (top_win){.id = (long long)w.window,
                       .start_ms = (long long)w.start_ms,
                       .ms = (long long)w.ms,
                       .end_mono_ms = (long long)w.end_mono_ms};
    m->skipped = (long long)w.skipped;
    m->in_win = true;
    m->total_samples += (long long)w.folded;
    if (m->cur.end_mono_ms > 0) {
        double lat = (double)mono_ms() - (double)m->cur.end_mono_ms;
        m->last_latency_ms = lat;
        m->lat_sum += lat;
        m->lat_n++;
        if (lat > m->lat_max)
            m->lat_max = lat;
    }
}

/* "F stack count" (mode: cpu) into the current window's profile of mode (and --record); a bad
 * line is dropped. */
static void stack_seen(top_model *m, enum ct_mode mode, const char *payload, size_t n)
{
    if (!m->in_win || m->cur.stacks >= TOP_MAX_STACKS)
        return;
    if (!m->cur.p[mode] && !(m->cur.p[mode] = profile_new()))
        return;
    flame_err e = FLAME_ERR_INIT;
    if (profile_add_line(m->cur.p[mode], payload, n, &e) < 0)
        return;
    m->cur.stacks++;
    if (m->rec)
        profile_add_line(m->rec, payload, n, &e);
}

/* An M line's stack and value into the current window's profile of its mode (record --mode
 * wall, offcpu, alloc, lock; cpu,alloc: the F lines beside them); an unknown mode is dropped. */
static void mode_seen(top_model *m, const char *payload, size_t n)
{
    const char *end = payload + n, *sp = memchr(payload, ' ', n);
    int mode = sp ? ct_mode_parse(payload, (size_t)(sp - payload)) : -1;
    sp = sp ? memchr(sp + 1, ' ', (size_t)(end - sp - 1)) : NULL; /* past the mode and count0 */
    if (mode >= 0 && mode != CT_MODE_CPU && sp && sp + 1 < end)
        stack_seen(m, (enum ct_mode)mode, sp + 1, (size_t)(end - sp - 1));
}

int top_model_line(void *ctx, const char *line, size_t len)
{
    top_model *m = ctx;
    if (len < 1 || !strchr("TFMPEDJ", line[0]))
        return 0;
    pthread_mutex_lock(&m->lock);
    int consumed = 0;
    switch (line[0]) {
    case 'T':
        if (len > 2)
            window_starts(m, line + 2, len - 2);
        consumed = 1;
        break;
    case 'F':
        if (len > 2)
            stack_seen(m, CT_MODE_CPU, line + 2, len - 2);
        consumed = 1;
        break;
    case 'M': /* "M <mode> <count0> stack value": a window of record --mode wall/offcpu */
        if (len > 2)
            mode_seen(m, line + 2, len - 2);
        consumed = 1;
        break;
    case 'P':
        win_complete(m);
        break;
    case 'J':
        m->jvms++;
        break;
    default: /* E, D */
        win_complete(m);
        m->ended = true;
        wake_ui(m);
        break;
    }
    pthread_mutex_unlock(&m->lock);
    return consumed;
}

int top_model_aggregate(const top_model *m, methods *t, double *span_ms, int *wins, flame_err *err)
{
    *span_ms = 0;
    *wins = 0;
    for (int i = 0; i < m->nring; i++) {
        const top_win *w = &m->ring[i];
        *span_ms += (double)w->ms;
        (*wins)++;
        for (int k = 0; k < CT_MODE_COUNT; k++) /* top: one mode */
            if (w->p[k] && methods_add(t, w->p[k], err) < 0)
                return -1;
    }
    return 0;
}

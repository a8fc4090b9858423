/* Progress line and notes on stderr. */
#include "plugin/run/progress.h"

#include <stdarg.h>
#include <string.h>
#include <unistd.h>

#include "common/count.h"

void progress_init(progress *pg, FILE *out, bool quiet)
{
    memset(pg, 0, sizeof *pg);
    pg->out = out;
    pg->quiet = quiet;
    pg->tty = isatty(fileno(out)) == 1;
    pg->interval = 5;
    pg->last_plain = -1e9;
}

void progress_fmt_secs(double s, char *buf, size_t n)
{
    long t = (long)(s + 0.5);
    if (t >= 60)
        snprintf(buf, n, "%ldm%02lds", t / 60, t % 60);
    else
        snprintf(buf, n, "%lds", t);
}

static void item_text(const progress_item *it, char *buf, size_t n)
{
    char el[32], dur[32], cnt[32];
    grouped((double)it->samples, cnt, sizeof cnt);
    progress_fmt_secs((double)it->elapsed_ms / 1000, el, sizeof el);
    switch (it->state) {
    case PS_STARTING:
        snprintf(buf, n, "%s: starting", it->name);
        break;
    case PS_RECORDING:
        if (it->duration_ms > 0) {
            double rem = (double)(it->duration_ms - it->elapsed_ms) / 1000;
            progress_fmt_secs(rem > 0 ? rem : 0, dur, sizeof dur);
            snprintf(buf, n, "%s: recording %s, %s left, %s samples, %lld JVM%s", it->name, el, dur,
                     cnt, it->jvms, it->jvms == 1 ? "" : "s");
        } else {
            snprintf(buf, n, "%s: recording %s (Ctrl-C to stop), %s samples, %lld JVM%s", it->name,
                     el, cnt, it->jvms, it->jvms == 1 ? "" : "s");
        }
        break;
    case PS_PROCESSING:
        /* no count here: the recorder's last progress count lags the profile (and differs
         * from what folding keeps); the summary gives the one exact count */
        snprintf(buf, n, "%s: processing %s of recording", it->name, el);
        break;
    case PS_DONE:
        snprintf(buf, n, "%s: done", it->name);
        break;
    case PS_FAILED:
        snprintf(buf, n, "%s: failed", it->name);
        break;
    }
}

void progress_update(progress *pg, const progress_item *items, int n, double now, bool force)
{
    if (pg->quiet)
        return;
    if (!pg->tty && !force && now - pg->last_plain < pg->interval)
        return;
    char line[1024] = "", part[256];
    size_t len = 0;
    for (int i = 0; i < n; i++) {
        item_text(&items[i], part, sizeof part);
        len += (size_t)snprintf(line + len, len < sizeof line ? sizeof line - len : 0, "%s%s",
                                i ? " | " : "", part);
        if (len >= sizeof line)
            break;
    }
    if (pg->tty) {
        if (pg->shown && !strcmp(line, pg->last))
            return; /* nothing new: no flicker */
        snprintf(pg->last, sizeof pg->last, "%s", line);
        /* One line, redrawn in place; clipped so it never wraps on an 80-column terminal. */
        fprintf(pg->out, "\r\033[Kdocker flame: %.100s", line);
        pg->shown = true;
    } else {
        fprintf(pg->out, "docker flame: %s\n", line);
        pg->last_plain = now;
    }
    fflush(pg->out);
}

void progress_clear(progress *pg)
{
    if (pg->tty && pg->shown) {
        fputs("\r\033[K", pg->out);
        fflush(pg->out);
        pg->shown = false;
    }
}

void progress_note(progress *pg, const char *fmt, ...)
{
    if (pg->quiet)
        return;
    progress_clear(pg);
    va_list ap;
    va_start(ap, fmt);
    fputs("docker flame: ", pg->out);
    vfprintf(pg->out, fmt, ap);
    fputc('\n', pg->out);
    va_end(ap);
    fflush(pg->out);
}

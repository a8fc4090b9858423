/* Times and ranges as users type them (store/when.h). Written by hand rather than with
 * strptime: strptime accepts what it pleases (blanks, one-digit months, "%z" forms differ between
 * libcs) and says nothing of impossible dates. */
#include "store/when.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/args.h"

/* exactly n digits at *p: their value; -1 otherwise */
static int digits(const char **p, int n)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        char c = (*p)[i];
        if (c < '0' || c > '9')
            return -1;
        v = v * 10 + (c - '0');
    }
    *p += n;
    return v;
}

/* ".250" after the seconds: milliseconds (digits beyond the third are dropped) */
static int fraction_ms(const char **p)
{
    if (**p != '.')
        return 0;
    (*p)++;
    if (**p < '0' || **p > '9')
        return -1;
    int ms = 0, n = 0;
    for (; **p >= '0' && **p <= '9'; (*p)++, n++)
        if (n < 3)
            ms = ms * 10 + (**p - '0');
    for (; n < 3; n++)
        ms *= 10;
    return ms;
}

/* HH:MM[:SS[.fff]] into tm (and *ms) */
static int clock_part(const char **p, struct tm *tm, int *ms)
{
    const char *s = *p;
    int h = (s[1] == ':') ? digits(&s, 1) : digits(&s, 2);
    if (h < 0 || h > 23 || *s++ != ':')
        return -1;
    int m = digits(&s, 2), sec = 0;
    if (m < 0 || m > 59)
        return -1;
    *ms = 0;
    if (*s == ':') {
        s++;
        sec = digits(&s, 2);
        if (sec < 0 || sec > 60 || (*ms = fraction_ms(&s)) < 0)
            return -1;
        if (sec == 60) /* a leap second: the last ms of the minute */
            sec = 59, *ms = 999;
    }
    tm->tm_hour = h;
    tm->tm_min = m;
    tm->tm_sec = sec;
    *p = s;
    return 0;
}

static bool leap(int y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* local time tm to unix ms; -1 when it does not exist (mktime moved it) */
static int local_ms(struct tm *tm, int ms, int64_t *out)
{
    struct tm want = *tm;
    tm->tm_isdst = -1;
    time_t t = mktime(tm);
    /* mktime moves a time the clock skipped (02:30 when summer time starts) instead of failing */
    if (t == (time_t)-1 || tm->tm_mday != want.tm_mday || tm->tm_mon != want.tm_mon ||
        tm->tm_hour != want.tm_hour || tm->tm_min != want.tm_min)
        return -1;
    *out = (int64_t)t * 1000 + ms;
    return 0;
}

static int relative(const char *s, int64_t now_ms, int64_t *out)
{
    if (*s == '-')
        s++;
    size_t n = strlen(s);
    uint64_t ago;
    /* a unit is required: a bare "30" would read as seconds here but minutes to some users */
    if (n == 0 || s[n - 1] < 'a' || s[n - 1] > 'z' || args_duration_ms(s, &ago) < 0 ||
        ago > (uint64_t)now_ms)
        return -1;
    *out = now_ms - (int64_t)ago;
    return 0;
}

static int date_time(const char *s, int64_t *out)
{
    struct tm tm = {0};
    int y = digits(&s, 4), ms = 0;
    if (y < 1970 || *s++ != '-')
        return -1;
    int mo = digits(&s, 2);
    if (mo < 1 || mo > 12 || *s++ != '-')
        return -1;
    int d = digits(&s, 2);
    static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (d < 1 || d > mdays[mo - 1] + (mo == 2 && leap(y)))
        return -1;
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    if (*s == 'T' || *s == 't' || *s == ' ') {
        s++;
        if (s[0] < '0' || s[0] > '9' || s[1] < '0' || s[1] > '9' || clock_part(&s, &tm, &ms) < 0)
            return -1;
    } else if (*s) {
        return -1;
    }
    if (!*s)
        return local_ms(&tm, ms, out);
    int off = 0; /* minutes east of UTC */
    if (*s == 'Z' || *s == 'z') {
        s++;
    } else if (*s == '+' || *s == '-') {
        int sign = *s++ == '-' ? -1 : 1;
        int oh = digits(&s, 2);
        if (oh < 0 || oh > 23 || *s++ != ':')
            return -1;
        int om = digits(&s, 2);
        if (om < 0 || om > 59)
            return -1;
        off = sign * (oh * 60 + om);
    } else {
        return -1;
    }
    if (*s)
        return -1;
    *out = ((int64_t)timegm(&tm) - off * 60) * 1000 + ms;
    return 0;
}

int when_parse(const char *s, int64_t now_ms, int64_t *out_ms)
{
    if (!s || !*s)
        return -1;
    if (!strcmp(s, "now")) {
        *out_ms = now_ms;
        return 0;
    }
    if (strlen(s) > 40)
        return -1;
    if (strchr(s, ':') && !strchr(s, '-') && !strchr(s, 'T') && !strchr(s, 't')) {
        time_t now = (time_t)(now_ms / 1000);
        struct tm tm;
        int ms;
        localtime_r(&now, &tm);
        const char *p = s;
        if (clock_part(&p, &tm, &ms) < 0 || *p)
            return -1;
        return local_ms(&tm, ms, out_ms);
    }
    if (s[0] >= '0' && s[0] <= '9' && strlen(s) >= 10 && s[4] == '-')
        return date_time(s, out_ms);
    return relative(s, now_ms, out_ms);
}

int when_parse_range(const char *s, int64_t now_ms, int64_t *since_ms, int64_t *until_ms)
{
    char a[64];
    const char *dots = strstr(s, "..");
    const char *until = dots ? dots + 2 : "";
    size_t n = dots ? (size_t)(dots - s) : strlen(s);
    if (n == 0 || n >= sizeof a)
        return -1;
    memcpy(a, s, n);
    a[n] = 0;
    if (when_parse(a, now_ms, since_ms) < 0)
        return -1;
    if (!*until)
        *until_ms = now_ms;
    else if (when_parse(until, now_ms, until_ms) < 0)
        return -1;
    return *since_ms < *until_ms ? 0 : -1;
}

int when_parse_input(const char *arg, int64_t now_ms, char *buf, size_t cap, int64_t *since_ms,
                     int64_t *until_ms)
{
    const char *at = strchr(arg, '@');
    if (!at)
        return 0;
    size_t n = (size_t)(at - arg);
    if (n == 0 || n >= cap || when_parse_range(at + 1, now_ms, since_ms, until_ms) < 0)
        return -1;
    memcpy(buf, arg, n);
    buf[n] = 0;
    return 1;
}

void when_format(int64_t ms, char *buf, size_t cap)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    localtime_r(&t, &tm);
    size_t n = strftime(buf, cap, "%Y-%m-%d %H:%M:%S", &tm);
    if (ms % 1000 && n + 5 <= cap)
        snprintf(buf + n, cap - n, ".%03d", (int)(ms % 1000));
}

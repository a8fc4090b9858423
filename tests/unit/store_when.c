/* store/when.c: every form of --since/--until (times ago, times of today, dates, RFC 3339 with
 * zones and fractions), in UTC and in a zone with summer time, what is refused, the SINCE..UNTIL
 * ranges and the CONTAINER@RANGE inputs of diff and merge. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/when.h"
#include "tests/unit/tap.h"

/* 2026-11-24 15:30:00 UTC */
#define NOW 1795534200000LL
#define H (3600LL * 1000)
#define M (60LL * 1000)

static int64_t at(const char *s)
{
    int64_t v = -1;
    return when_parse(s, NOW, &v) == 0 ? v : -1;
}

static void zone(const char *tz)
{
    setenv("TZ", tz, 1);
    tzset();
}

static void test_forms_utc(void)
{
    zone("UTC");
    is_int(at("now"), NOW, "now");
    is_int(at("15m"), NOW - 15 * M, "15m ago");
    is_int(at("2h"), NOW - 2 * H, "2h ago");
    is_int(at("1d"), NOW - 24 * H, "1d ago");
    is_int(at("1h30m"), NOW - 90 * M, "1h30m ago");
    is_int(at("-2h"), NOW - 2 * H, "-2h: the same");
    is_int(at("500ms"), NOW - 500, "500ms ago");
    is_int(at("14:03"), NOW - 87 * M, "14:03 today");
    is_int(at("14:03:30"), NOW - 87 * M + 30000, "14:03:30 today");
    is_int(at("9:05"), NOW - 6 * H - 25 * M, "9:05 (one-digit hour)");
    is_int(at("14:03:30.25"), NOW - 87 * M + 30250, "fraction of a second");
    is_int(at("2026-11-24"), NOW - 15 * H - 30 * M, "a date: local midnight");
    is_int(at("2026-11-24T14:03:00Z"), NOW - 87 * M, "RFC 3339, Z");
    is_int(at("2026-11-24t14:03:00z"), NOW - 87 * M, "RFC 3339, lower case");
    is_int(at("2026-11-24 14:03:00Z"), NOW - 87 * M, "RFC 3339, space");
    is_int(at("2026-11-24T15:03:00+01:00"), NOW - 87 * M, "RFC 3339, +01:00");
    is_int(at("2026-11-24T08:33:00-05:30"), NOW - 87 * M, "RFC 3339, -05:30");
    is_int(at("2026-11-24T14:03:00.250Z"), NOW - 87 * M + 250, "RFC 3339, milliseconds");
    is_int(at("2026-11-24T14:03:00.123456789Z"), NOW - 87 * M + 123, "nanoseconds cut to ms");
    is_int(at("2026-11-24T14:03"), NOW - 87 * M, "date and time without seconds or zone");
    is_int(at("2024-02-29T00:00:00Z"), 1709164800000LL, "a leap day");
    is_int(at("2026-11-24T23:59:60Z"), 1795564799999LL, "a leap second: the minute's last ms");

    static const char *const bad[] = {"",
                                      "30",
                                      "15x",
                                      "1.h",
                                      "-",
                                      "now2",
                                      "24:00",
                                      "14:60",
                                      "14:3",
                                      "14:03:61",
                                      "14:03:",
                                      "14:03 ",
                                      "2026-02-29",
                                      "2026-13-01",
                                      "2026-11-31",
                                      "2026-11-24T25:00Z",
                                      "2026-11-24X",
                                      "2026-11-24T14:03:00+1:00",
                                      "2026-11-24T14:03:00+01",
                                      "1969-12-31",
                                      "1000000d",
                                      "2026-11-24T14:03:00.Z",
                                      "14:03:00.x"};
    int refused = 0;
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int64_t v;
        int r = when_parse(bad[i], NOW, &v);
        refused += r < 0;
        if (r == 0)
            printf("# accepted \"%s\"\n", bad[i]);
    }
    is_int(refused, sizeof bad / sizeof *bad, "malformed times are refused (%zu forms)",
           sizeof bad / sizeof *bad);
}

static void test_forms_zone(void)
{
    zone("Europe/Paris"); /* UTC+1 in November, UTC+2 in summer */
    is_int(at("14:03"), NOW - 87 * M - H, "14:03 Paris time");
    is_int(at("2026-11-24T14:03"), NOW - 87 * M - H, "a local date and time");
    is_int(at("2026-11-24T14:03:00Z"), NOW - 87 * M, "Z is still UTC");
    int64_t v;
    is_int(when_parse("2026-07-01T12:00", NOW, &v), 0, "a summer date");
    is_int(v, 1782900000000LL, "summer time: UTC+2");
    is_int(when_parse("2026-03-29T02:30", NOW, &v), -1, "a time skipped by the clock change");
    char buf[64];
    when_format(NOW, buf, sizeof buf);
    is_str(buf, "2026-11-24 16:30:00", "formatted in local time");
    when_format(NOW + 250, buf, sizeof buf);
    is_str(buf, "2026-11-24 16:30:00.250", "with milliseconds when there are some");
    zone("UTC");
}

static void test_ranges(void)
{
    int64_t a = 0, b = 0;
    ok(when_parse_range("14:00..14:05", NOW, &a, &b) == 0 && a == NOW - 90 * M && b == NOW - 85 * M,
       "14:00..14:05");
    ok(when_parse_range("-2h..-1h", NOW, &a, &b) == 0 && a == NOW - 2 * H && b == NOW - H,
       "-2h..-1h");
    ok(when_parse_range("1h", NOW, &a, &b) == 0 && a == NOW - H && b == NOW, "1h: until now");
    ok(when_parse_range("14:00..", NOW, &a, &b) == 0 && a == NOW - 90 * M && b == NOW,
       "14:00..: until now");
    ok(when_parse_range("2026-11-24T14:00:00.5..2026-11-24T14:05:00Z", NOW, &a, &b) == 0 &&
           a == NOW - 90 * M + 500 && b == NOW - 85 * M,
       "fractions next to the dots");
    ok(when_parse_range("14:05..14:00", NOW, &a, &b) < 0, "a range ending before it starts");
    ok(when_parse_range("14:00..14:00", NOW, &a, &b) < 0, "an empty range");
    ok(when_parse_range("..14:00", NOW, &a, &b) < 0, "no start");
    ok(when_parse_range("a..b", NOW, &a, &b) < 0, "garbage");

    char name[64];
    is_int(when_parse_input("web@14:00..14:05", NOW, name, sizeof name, &a, &b), 1,
           "web@14:00..14:05 is a stored input");
    ok(!strcmp(name, "web") && a == NOW - 90 * M && b == NOW - 85 * M, "its container and range");
    is_int(when_parse_input("web@-1h", NOW, name, sizeof name, &a, &b), 1, "web@-1h");
    ok(a == NOW - H && b == NOW, "the last hour");
    is_int(when_parse_input("profile.folded", NOW, name, sizeof name, &a, &b), 0,
           "no @: not a stored input");
    is_int(when_parse_input("@-1h", NOW, name, sizeof name, &a, &b), -1, "no container");
    is_int(when_parse_input("web@soon", NOW, name, sizeof name, &a, &b), -1, "a bad range");
    is_int(when_parse_input("web@", NOW, name, sizeof name, &a, &b), -1, "no range");
    char small[3];
    is_int(when_parse_input("web@-1h", NOW, small, sizeof small, &a, &b), -1,
           "a name longer than the buffer");
}

int main(void)
{
    test_forms_utc();
    test_forms_zone();
    test_ranges();
    return tap_done();
}

/* Times and time ranges as users type them for the stored profiles (--since/--until, and the
 * CONTAINER@SINCE..UNTIL inputs of diff and merge). Pure: "now" is a parameter; local time is
 * the process's time zone (TZ). */
#pragma once
#include <stddef.h>
#include <stdint.h>

/* The forms, for error messages. */
#define WHEN_FORMS                                                                                 \
    "a time of today (14:03, 14:03:30), a date and time (2026-11-24T14:03:00Z, 2026-11-24 "        \
    "14:03, RFC 3339), or a time ago (15m, 2h, 1d, 1h30m, now)"

/* One point in time, unix ms:
 *   now                        now_ms
 *   15m 2h 1d 1h30m 500ms -2h  that long before now_ms (a unit is required; '-' optional)
 *   14:03 14:03:30 14:03:30.5  today at that local time
 *   2026-11-24                 local midnight of that day
 *   2026-11-24T14:03:00Z  2026-11-24T14:03:00.250+01:00  2026-11-24 14:03  (RFC 3339; without
 *                              a zone it is local time; 't', 'z' and a space for 'T' accepted)
 * 0 or -1 (bad syntax, impossible date, out of range). */
int when_parse(const char *s, int64_t now_ms, int64_t *out_ms);

/* "SINCE..UNTIL" or "SINCE.." or "SINCE" (until now). -1 on bad syntax or an empty range. */
int when_parse_range(const char *s, int64_t now_ms, int64_t *since_ms, int64_t *until_ms);

/* A stored input "CONTAINER@RANGE" (docker flame diff web@14:00..14:05 web@-1h): 0 when arg has
 * no '@' (not one), 1 parsed (container copied into buf of cap bytes), -1 malformed. */
int when_parse_input(const char *arg, int64_t now_ms, char *buf, size_t cap, int64_t *since_ms,
                     int64_t *until_ms);

/* "2026-11-24 14:05:10" in local time (".250" added when ms is not whole seconds). */
void when_format(int64_t ms, char *buf, size_t cap);

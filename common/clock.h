/* Monotonic time for timeouts, deadlines and timings: the one clock every module reads
 * (CLOCK_MONOTONIC: immune to the wall clock being set while we wait). */
#pragma once
#include <stdint.h>
#include <time.h>

static inline int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Sleep ms milliseconds (restarted after signals would only delay the caller's own checks:
 * callers loop on a deadline anyway). */
static inline void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

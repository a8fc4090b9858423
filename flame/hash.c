/* Seeds for flame/hash.h: random per table, so crafted keys cannot be aimed at one bucket. */
#include "flame/hash.h"

#include <sys/random.h>
#include <time.h>

uint64_t hash_random_seed(void)
{
    uint64_t seed;
    if (getrandom(&seed, sizeof seed, GRND_NONBLOCK) == sizeof seed)
        return seed;
    static int here;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return hash_mix64((uint64_t)ts.tv_nsec ^ (uint64_t)ts.tv_sec << 30 ^
                      (uint64_t)(uintptr_t)&here);
}

/* Counts for people (common/count.h). */
#include "common/count.h"

#include <stdio.h>

const char *grouped(double v, char *buf, size_t n)
{
    char tmp[64];
    int l = snprintf(tmp, sizeof tmp, "%.0f", v);
    size_t o = 0;
    for (int i = 0; i < l && o + 2 < n; i++) {
        if (i > 0 && tmp[i - 1] != '-' && (l - i) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = tmp[i];
    }
    buf[o] = '\0';
    return buf;
}

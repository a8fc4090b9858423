/* plugin/run/progress.c: the plain progress lines' words: counts with thousands separators, and the
 * processing line without a sample count (the recorder's last progress count lags the profile;
 * the summary gives the one exact count). */
#include <stdlib.h>
#include <string.h>

#include "plugin/run/progress.h"
#include "tests/unit/tap.h"

/* The plain line progress_update prints for one item. */
static const char *line_of(progress_item it)
{
    static char *buf;
    size_t len = 0;
    free(buf);
    buf = NULL;
    FILE *f = open_memstream(&buf, &len);
    progress pg;
    progress_init(&pg, f, false);
    pg.tty = false;
    progress_update(&pg, &it, 1, 100, true);
    fclose(f);
    return buf;
}

int main(void)
{
    progress_item it = {.name = "web",
                        .state = PS_RECORDING,
                        .elapsed_ms = 3000,
                        .duration_ms = 10000,
                        .samples = 12345,
                        .jvms = 1};
    is_str(line_of(it), "docker flame: web: recording 3s, 7s left, 12,345 samples, 1 JVM\n",
           "recording: the count with separators");
    it.duration_ms = 0;
    it.samples = 999;
    is_str(line_of(it), "docker flame: web: recording 3s (Ctrl-C to stop), 999 samples, 1 JVM\n",
           "until Ctrl-C; below 1,000 no separator");
    it.state = PS_PROCESSING;
    it.elapsed_ms = 65000;
    it.samples = 364;
    is_str(line_of(it), "docker flame: web: processing 1m05s of recording\n",
           "processing: how long was recorded, no sample count the summary could contradict");
    return tap_done();
}

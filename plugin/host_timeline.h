/* The CPU timeline picture of `docker flame host` (plugin/host_timeline.c, docs/HOST.md). Pure:
 * writes SVG from the sidecar's K and U lines; rows (containers) come from the caller. */
#pragma once
#include <stdint.h>
#include <stdio.h>

#include "common/err.h"
#include "plugin/run/proto.h"

typedef struct tl_input {
    const proto_task *tasks;
    size_t ntasks;
    const proto_tl *tl;
    size_t ntl;
    uint64_t cpus, record_ms, frequency, bucket_ms;
    int nrows;
    /* the row of a container key (-1: not shown), and a row's name */
    int (*row_of)(void *ctx, const char *key);
    const char *(*row_name)(void *ctx, int row);
    void *ctx;
} tl_input;

/* An out_writer_fn (plugin/out/output.h): ctx is a tl_input. */
int host_timeline_write(void *ctx, FILE *f, flame_err *err);

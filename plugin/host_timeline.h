/* The CPU timeline picture of `docker flame host` (plugin/host_timeline.c, docs/HOST.md). Pure:
 * writes SVG from the sidecar's K and U lines; rows (containers) and their CPU limits come from
 * the caller. */
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
    /* a row's CPU limit in cores (its quota or cpuset), 0 = none or unknown; NULL = none */
    double (*row_quota)(void *ctx, int row);
    void *ctx;
} tl_input;

/* The CPU limit of a container in cores, from its engine's HostConfig: NanoCpus (--cpus),
 * CpuQuota / CpuPeriod (--cpu-quota, default period 100 ms), the CPUs of CpusetCpus
 * (--cpuset-cpus "0-2,5"): the smallest that is set; 0 when none is (a cpuset that does not
 * parse counts as none). */
double tl_quota_cores(long long nano_cpus, long long cpu_quota, long long cpu_period,
                      const char *cpuset);

/* An out_writer_fn (plugin/out/output.h): ctx is a tl_input. */
int host_timeline_write(void *ctx, FILE *f, flame_err *err);

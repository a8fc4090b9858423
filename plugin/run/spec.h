/* The sidecar's create request (POST /containers/create body), per the contract in
 * docs/PROTOCOL.md "The sidecar container". Pure code. */
#pragma once
#include <jansson.h>
#include <stdbool.h>

#include "common/contract.h"
#include "common/err.h"

#define SPEC_IMAGE_REPO "docker-flame-sidecar"
#define SPEC_IMAGE_TAG FLAME_VERSION
#define SPEC_IMAGE SPEC_IMAGE_REPO ":" SPEC_IMAGE_TAG
#define SPEC_LABEL_SIDECAR "com.docker-flame.sidecar"
#define SPEC_LABEL_TARGET "com.docker-flame.target"
#define SPEC_LABEL_OWNER "com.docker-flame.owner-pid"
#define SPEC_LABEL_CREATED "com.docker-flame.created"
/* A random id of the plugin process that created the sidecar: owner-pid alone is not unique on
 * an engine that several hosts (or containers with their own pid namespaces) share. */
#define SPEC_LABEL_RUN "com.docker-flame.run"

/* This process's run id (16 hex digits; a new one after fork). */
const char *spec_run_id(void);

/* The sidecar container's limits (docs/SIDECAR.md "Limits"), from measured peaks with margin:
 * memory (its /tmp tmpfs, which counts in it, gets half), tasks, CPUs. The memory limit is the
 * one a run can reach (a very busy host's `docker flame host`): $DOCKER_FLAME_SIDECAR_MEMORY. */
#define SPEC_MEMORY_DEFAULT (1ll << 30)
#define SPEC_MEMORY_MIN (16ll << 20)
#define SPEC_MEMORY_MAX (1ll << 40)
#define SPEC_PIDS_LIMIT 64
#define SPEC_NANO_CPUS 1000000000ll /* one CPU */
/* "<n>[k|m|g]" (binary units; bytes without a suffix) within [SPEC_MEMORY_MIN, SPEC_MEMORY_MAX]
 * into *bytes; <0 with one line in err. Pure. */
int spec_memory_parse(const char *text, long long *bytes, flame_err *err);

typedef struct spec_args {
    const char *image; /* NULL = SPEC_IMAGE */
    const char *target_id;
    ct_args cmd; /* what the sidecar does: its command line (common/contract.h) */
    long owner_pid;
    long long created;  /* unix time */
    const char *run_id; /* spec_run_id(), or NULL */
    const char
        *caps; /* comma list replacing the default CapAdd ($DOCKER_FLAME_SIDECAR_CAPS), or NULL */
    const char *test_owner; /* $FLAME_TEST_OWNER: extra test labels so test cleanup finds it */
    /* TEST ONLY: $DOCKER_FLAME_SIDECAR_TEST_STOP (comma list of sidecar phases) becomes the
     * sidecar's env FLAME_SIDECAR_TEST_STOP: it SIGSTOPs itself there so a test can read its
     * /proc status (tests/e2e/privilege-phases.t). NULL in normal use. */
    const char *test_stop;
    /* TEST ONLY: $DOCKER_FLAME_SIDECAR_TEST_NO_PERFMON set: the sidecar's recorder opens its
     * events without CAP_PERFMON/CAP_SYS_ADMIN, as on an engine that withholds them (Docker 20.10
     * cannot grant or withhold CAP_PERFMON alone; tests/e2e/recorder-cpu.t). */
    bool test_no_perfmon;
    /* `docker flame host` (docs/HOST.md): the host's PID and cgroup namespaces instead of the
     * target's; target_id is then "host". */
    bool host;
    long long memory; /* the memory limit in bytes; 0 = SPEC_MEMORY_DEFAULT */
    /* TEST ONLY: $DOCKER_FLAME_SIDECAR_TEST_TMPFS (bytes) replaces the tmpfs size, half of the
     * memory limit otherwise: a /tmp larger than the limit makes a run meet the limit itself
     * (tests/e2e/sidecar-limits.t). 0 in normal use. */
    long long test_tmpfs;
} spec_args;

/* The sidecar image: $DOCKER_FLAME_SIDECAR_IMAGE (tests: a stub sidecar) or SPEC_IMAGE. */
const char *spec_image(void);
/* New reference, or NULL with err set. */
json_t *spec_sidecar(const spec_args *a, flame_err *err);

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
} spec_args;

/* The sidecar image: $DOCKER_FLAME_SIDECAR_IMAGE (tests: a stub sidecar) or SPEC_IMAGE. */
const char *spec_image(void);
/* New reference, or NULL with err set. */
json_t *spec_sidecar(const spec_args *a, flame_err *err);

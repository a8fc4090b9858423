/* Making sure the sidecar image is on the engine we talk to: import the rootfs tarball installed
 * next to the plugin when it is missing (works for remote engines: the tar is the request body). */
#pragma once
#include <signal.h>

#include "common/err.h"
#include "plugin/engine/engine.h"

/* Where the tarball is: $DOCKER_FLAME_SIDECAR_TAR, else <dir of realpath(/proc/self/exe)>/
 * flame-sidecar.tar. Caller frees. */
char *image_tar_path(void);
/* 0 when present (or imported now); *imported says which. */
int image_ensure(engine *e, const volatile sig_atomic_t *cancel, bool *imported, flame_err *err);

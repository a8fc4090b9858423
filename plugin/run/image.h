/* Making sure the sidecar image is on the engine we talk to: import the rootfs tarball installed
 * next to the plugin when it is missing (works for remote engines: the tar is the request body). */
#pragma once
#include <signal.h>

#include "common/err.h"
#include "plugin/engine/engine.h"

/* Where the tarball is: $DOCKER_FLAME_SIDECAR_TAR, else <dir of realpath(/proc/self/exe)>/
 * flame-sidecar.tar. Caller frees. */
char *image_tar_path(void);
/* 0 when present (or imported now); *imported says which; pinned: the engine's id of the image
 * whose identity (the tarball's label) was checked, "sha256:<64 hex>": the run creates its
 * sidecars from it, not from the tag. Two commands importing at the same moment leave one image:
 * each imports untagged, tags only while the tag is still missing, and the loser removes its
 * own copy. */
int image_ensure(engine *e, const volatile sig_atomic_t *cancel, bool *imported, char pinned[80],
                 flame_err *err);

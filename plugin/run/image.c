/* Sidecar image: inspect, import from the tarball when missing. */
#include "plugin/run/image.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/cleanup.h"
#include "plugin/run/spec.h"

#define TAR_LABEL "com.docker-flame.tar-sha256"

char *image_tar_path(void)
{
    const char *env = getenv("DOCKER_FLAME_SIDECAR_TAR");
    if (env && *env)
        return strdup(env);
    /* realpath: the plugin is usually a symlink in ~/.docker/cli-plugins; the tar sits next to
     * the real binary (build/ during development, the install dir otherwise). */
    char exe[PATH_MAX];
    if (!realpath("/proc/self/exe", exe))
        return strdup("flame-sidecar.tar");
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = 0;
    char *p = NULL;
    if (asprintf(&p, "%s/flame-sidecar.tar", exe) < 0)
        return NULL;
    return p;
}

typedef struct import_ctx {
    char buf[4096]; /* the engine's progress stream: we only need its error, if any */
    size_t len;
    char error[512];
} import_ctx;

static int on_import(void *ud, const char *b, size_t n, flame_err *err)
{
    (void)err;
    import_ctx *c = ud;
    for (size_t i = 0; i < n; i++) {
        if (b[i] != '\n' && c->len + 1 < sizeof c->buf) {
            c->buf[c->len++] = b[i];
            continue;
        }
        if (b[i] != '\n')
            continue; /* overlong progress line: ignore its tail */
        c->buf[c->len] = 0;
        json_t *j = json_loads(c->buf, 0, NULL);
        const char *m = json_string_value(json_object_get(j, "error"));
        if (m && !c->error[0])
            snprintf(c->error, sizeof c->error, "%s", m);
        json_decref(j);
        c->len = 0;
    }
    return 0;
}

/* The tarball's identity: the first 16 hex digits of its sha256, written by `make` next to it
 * (flame-sidecar.tar.sha256). An image with the same tag but another label is a stale build
 * (same VERSION, newer sidecar) and is replaced. No identity file: presence is enough. */
static void tar_identity(const char *tar, char id[17])
{
    id[0] = 0;
    _cleanup_free_ char *p = NULL;
    if (asprintf(&p, "%s.sha256", tar) < 0)
        return;
    _cleanup_fclose_ FILE *f = fopen(p, "re");
    char buf[64] = {0};
    if (!f || !fgets(buf, sizeof buf, f))
        return;
    size_t n = strspn(buf, "0123456789abcdef");
    if (n >= 16) {
        memcpy(id, buf, 16);
        id[16] = 0;
    }
}

/* stale_id: when the image under our tag is another build's, its engine id ("sha256:<64 hex>"),
 * so that it can be removed once replaced. */
static int image_present(engine *e, const char *want_id, bool *present, char stale_id[80],
                         flame_err *err)
{
    long st = 0;
    json_t *resp = NULL;
    int rc = engine_json(e, "GET", NULL, &resp, &st, err, "/images/%s/json", spec_image());
    if (rc == 0 && want_id && *want_id) {
        const char *have = json_string_value(
            json_object_get(json_object_get(json_object_get(resp, "Config"), "Labels"), TAR_LABEL));
        if (!have || strcmp(have, want_id) != 0) {
            rc = 1; /* stale: import again */
            const char *old = json_string_value(json_object_get(resp, "Id"));
            if (stale_id && old && strlen(old) < 80)
                strcpy(stale_id, old);
        }
    }
    json_decref(resp);
    if (rc < 0 && st != 404)
        return flame_wrap(err, "inspect image %s", spec_image());
    *present = rc == 0;
    return 0;
}

int image_ensure(engine *e, const volatile sig_atomic_t *cancel, bool *imported, flame_err *err)
{
    bool present;
    *imported = false;
    _cleanup_free_ char *tar = image_tar_path();
    if (!tar)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    char id[17], stale[80] = "";
    tar_identity(tar, id);
    if (image_present(e, id, &present, stale, err) < 0)
        return -1;
    if (present)
        return 0;
    _cleanup_fclose_ FILE *f = fopen(tar, "rbe");
    if (!f)
        return flame_fail_errno(err, FLAME_EXIT_ENGINE, errno,
                                "sidecar image %s is not on the engine at %s and cannot be loaded "
                                "from %s (reinstall docker-flame or set DOCKER_FLAME_SIDECAR_TAR)",
                                spec_image(), engine_host(e), tar);
    import_ctx c = {.len = 0};
    /* repo:tag -> ?repo=&tag= (the last ':' after the last '/' separates the tag) */
    const char *img = spec_image(), *slash = strrchr(img, '/'), *colon = strrchr(img, ':');
    if (colon && slash && colon < slash)
        colon = NULL;
    _cleanup_free_ char *repo = strndup(img, colon ? (size_t)(colon - img) : strlen(img));
    _cleanup_free_ char *erepo = repo ? engine_escape(repo) : NULL;
    _cleanup_free_ char *etag = engine_escape(colon ? colon + 1 : "latest");
    _cleanup_free_ char *path = NULL;
    if (!erepo || !etag ||
        asprintf(&path, "/images/create?fromSrc=-&repo=%s&tag=%s%s%s%s", erepo, etag,
                 id[0] ? "&changes=LABEL%20" : "", id[0] ? TAR_LABEL "%3D" : "", id) < 0)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    engine_req rq = {.method = "POST",
                     .path = path,
                     .upload = f,
                     .content_type = "application/x-tar",
                     .on_data = on_import,
                     .ctx = &c,
                     .cancel = cancel,
                     .timeout_ms = 600000};
    long st = 0;
    if (engine_do(e, &rq, &st, NULL, err) < 0)
        return flame_wrap(err, "load sidecar image %s from %s", spec_image(), tar);
    if (c.len)
        on_import(&c, "\n", 1, err);
    if (c.error[0])
        return flame_fail(err, FLAME_EXIT_ENGINE, "load sidecar image %s from %s: %s", spec_image(),
                          tar, c.error);
    if (image_present(e, id, &present, NULL, err) < 0)
        return -1;
    if (!present)
        return flame_fail(err, FLAME_EXIT_ENGINE,
                          "load sidecar image %s from %s: the engine accepted the tarball but has "
                          "no such image afterwards",
                          spec_image(), tar);
    /* The build it replaced is now an untagged image of ~36 MB that nothing would ever remove
     * (every upgrade of docker-flame would leave one). Removed without force: if a sidecar of
     * that build still runs (a detached recording), the engine refuses (409) and it stays, as
     * `docker rmi` would leave it; that is not worth a warning. */
    if (stale[0]) {
        json_t *ignored = NULL;
        flame_err quiet = FLAME_ERR_INIT;
        long dst = 0;
        _cleanup_free_ char *eid = engine_escape(stale);
        if (eid)
            engine_json(e, "DELETE", NULL, &ignored, &dst, &quiet, "/images/%s", eid);
        json_decref(ignored);
    }
    *imported = true;
    return 0;
}

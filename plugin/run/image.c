/* Sidecar image: inspect, import from the tarball when missing. */
#include "plugin/run/image.h"

#include <errno.h>
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
    char id[80]; /* the new image's id: the stream's last status "sha256:<64 hex>" */
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
        const char *st = json_string_value(json_object_get(j, "status"));
        if (st && strlen(st) == 71 && !strncmp(st, "sha256:", 7) &&
            strspn(st + 7, "0123456789abcdef") == 64)
            snprintf(c->id, sizeof c->id, "%s", st);
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

/* What our tag points at: *present when it is this build (its label is want_id, or no identity
 * is known), with its engine id in have_id; another build's id in stale_id (it is replaced, then
 * removed). */
static int image_present(engine *e, const char *want_id, bool *present, char have_id[80],
                         char stale_id[80], flame_err *err)
{
    long st = 0;
    json_t *resp = NULL;
    have_id[0] = 0;
    if (stale_id)
        stale_id[0] = 0;
    int rc = engine_json(e, "GET", NULL, &resp, &st, err, "/images/%s/json", spec_image());
    const char *id = json_string_value(json_object_get(resp, "Id"));
    if (rc == 0 && want_id && *want_id) {
        const char *have = json_string_value(
            json_object_get(json_object_get(json_object_get(resp, "Config"), "Labels"), TAR_LABEL));
        if (!have || strcmp(have, want_id) != 0) {
            rc = 1; /* stale: import again */
            if (stale_id && id && strlen(id) < 80)
                strcpy(stale_id, id);
        }
    }
    if (rc == 0 && id && strlen(id) < 80)
        strcpy(have_id, id);
    json_decref(resp);
    if (rc < 0 && st != 404)
        return flame_wrap(err, "inspect image %s", spec_image());
    *present = rc == 0;
    return 0;
}

/* An image of ours that nothing needs: removed without force (a container using it, e.g. a
 * detached recording of an older build, makes the engine refuse; it then stays, as `docker rmi`
 * would leave it, and that is not worth a warning). */
static void remove_image(engine *e, const char *id)
{
    json_t *ignored = NULL;
    flame_err quiet = FLAME_ERR_INIT;
    long dst = 0;
    _cleanup_free_ char *eid = engine_escape(id);
    if (eid)
        engine_json(e, "DELETE", NULL, &ignored, &dst, &quiet, "/images/%s", eid);
    json_decref(ignored);
}

/* spec_image() as ?repo=&tag= (the last ':' after the last '/' separates the tag); NULL when out
 * of memory. */
static char *repo_tag_query(void)
{
    const char *img = spec_image(), *slash = strrchr(img, '/'), *colon = strrchr(img, ':');
    if (colon && slash && colon < slash)
        colon = NULL;
    _cleanup_free_ char *repo = strndup(img, colon ? (size_t)(colon - img) : strlen(img));
    _cleanup_free_ char *erepo = repo ? engine_escape(repo) : NULL;
    _cleanup_free_ char *etag = engine_escape(colon ? colon + 1 : "latest");
    char *q = NULL;
    if (!erepo || !etag || asprintf(&q, "repo=%s&tag=%s", erepo, etag) < 0)
        return NULL;
    return q;
}

/* The tarball imported as a new image labelled with its identity; tagged only when asked
 * (tagged), else untagged: *new_id says which image it is. */
static int import_tar(engine *e, const char *tar, const char *tid, bool tagged,
                      const volatile sig_atomic_t *cancel, char new_id[80], flame_err *err)
{
    new_id[0] = 0;
    _cleanup_fclose_ FILE *f = fopen(tar, "rbe");
    if (!f)
        return flame_fail_errno(err, FLAME_EXIT_ENGINE, errno,
                                "sidecar image %s is not on the engine at %s and cannot be loaded "
                                "from %s (reinstall docker-flame or set DOCKER_FLAME_SIDECAR_TAR)",
                                spec_image(), engine_host(e), tar);
    _cleanup_free_ char *q = tagged ? repo_tag_query() : strdup("");
    _cleanup_free_ char *path = NULL;
    if (!q || asprintf(&path, "/images/create?fromSrc=-%s%s%s%s%s", *q ? "&" : "", q,
                       tid[0] ? "&changes=LABEL%20" : "", tid[0] ? TAR_LABEL "%3D" : "", tid) < 0)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    import_ctx c = {.len = 0};
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
    snprintf(new_id, 80, "%s", c.id);
    return 0;
}

static int tag_image(engine *e, const char *id, flame_err *err)
{
    _cleanup_free_ char *q = repo_tag_query();
    _cleanup_free_ char *eid = engine_escape(id);
    json_t *ignored = NULL;
    if (!q || !eid)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    int rc = engine_json(e, "POST", NULL, &ignored, NULL, err, "/images/%s/tag?%s", eid, q);
    json_decref(ignored);
    return rc < 0 ? flame_wrap(err, "tag the sidecar image %s", spec_image()) : 0;
}

int image_ensure(engine *e, const volatile sig_atomic_t *cancel, bool *imported, char pinned[80],
                 flame_err *err)
{
    bool present;
    *imported = false;
    pinned[0] = 0;
    _cleanup_free_ char *tar = image_tar_path();
    if (!tar)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    char tid[17], stale[80], have[80], ours[80];
    tar_identity(tar, tid);
    if (image_present(e, tid, &present, have, stale, err) < 0)
        return -1;
    if (present) {
        snprintf(pinned, 80, "%s", have);
        return 0;
    }
    /* Untagged first, tagged only if no other command's import of this build got there while
     * we uploaded: two commands that find the image missing at the same moment (the first
     * `record web api`, one recorder per container) would otherwise each tag their own copy,
     * and the one tagged first would stay behind untagged (~36 MB). The loser removes its own
     * copy, which nothing else knows of. */
    if (import_tar(e, tar, tid, false, cancel, ours, err) < 0)
        return -1;
    if (!ours[0]) {
        /* an engine that does not say the new image's id: tag in the same request, as docker
         * import does (and accept the race above) */
        if (import_tar(e, tar, tid, true, cancel, ours, err) < 0)
            return -1;
    } else {
        if (image_present(e, tid, &present, have, NULL, err) < 0)
            return -1;
        if (!present && tag_image(e, ours, err) < 0) {
            remove_image(e, ours);
            return -1;
        }
    }
    if (image_present(e, tid, &present, have, NULL, err) < 0)
        return -1;
    if (!present && !ours[0])
        return flame_fail(err, FLAME_EXIT_ENGINE,
                          "load sidecar image %s from %s: the engine accepted the tarball but has "
                          "no such image afterwards",
                          spec_image(), tar);
    /* The run uses exactly the image whose identity was checked, by id: a tag moved meanwhile
     * (another command's import, another build's) cannot give it a different sidecar. When
     * another command's copy of this build holds the tag, ours goes and theirs is used. */
    if (present && ours[0] && strcmp(have, ours) != 0) {
        remove_image(e, ours);
        snprintf(pinned, 80, "%s", have);
    } else {
        snprintf(pinned, 80, "%s", ours[0] ? ours : have);
        *imported = true;
    }
    /* The build it replaced is now an untagged image of ~36 MB that nothing would ever remove
     * (every upgrade of docker-flame would leave one). */
    if (stale[0] && strcmp(stale, pinned) != 0)
        remove_image(e, stale);
    return 0;
}

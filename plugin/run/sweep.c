/* Sidecars left behind (plugin/run/sweep.h): listed by label, removed through the ordinary removal
 * of one sidecar (plugin/run/sidecar.c), their target restored when they were SIGKILLed. */
#include "plugin/run/sweep.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "common/cleanup.h"
#include "plugin/run/sidecar.h"
#include "plugin/run/spec.h"

int sweep_list(engine *e, json_t **list, flame_err *err)
{
    long st = 0;
    /* filters={"label":["com.docker-flame.sidecar=1"]}, URL-encoded */
    if (engine_json(
            e, "GET", NULL, list, &st, err,
            "/containers/json?all=1&filters=%%7B%%22label%%22%%3A%%5B%%22%s%%3D1%%22%%5D%%7D",
            SPEC_LABEL_SIDECAR) < 0)
        return flame_wrap(err, "list sidecars");
    return 0;
}

int sweep_remove(engine *e, json_t *c, sweep_done *d, flame_err *err)
{
    const char *id = json_string_value(json_object_get(c, "Id"));
    const char *state = json_string_value(json_object_get(c, "State"));
    json_t *labels = json_object_get(c, "Labels");
    bool running = state && !strcmp(state, "running");
    *d = (sweep_done){.was_running = running, .restore_err = FLAME_ERR_INIT};
    run_ctx r = {.e = e};
    sess s = {.sidecar_id = (char *)id, .created = true, .started = running, .exit_status = -1};
    pthread_mutex_init(&s.lock, NULL);
    snprintf(s.name, sizeof s.name, "%.12s", id);
    int rc = sidecar_remove(&r, &s, err);
    pthread_mutex_destroy(&s.lock);
    if (rc < 0)
        return -1;
    /* Killed (SIGKILL: "Exited (137)") it could not undo its work in the target. */
    const char *status = json_string_value(json_object_get(c, "Status"));
    const char *target = json_string_value(json_object_get(labels, SPEC_LABEL_TARGET));
    if (!running && status && !strncmp(status, "Exited (137)", 12) && target) {
        d->restore_tried = true;
        d->target = target;
        d->restored = sidecar_restore_target(e, target, &d->restore_err) == 0;
    }
    return 0;
}

int sweep_owned(engine *e, const char *run_id, unsigned *removed, flame_err *err)
{
    _cleanup_json_ json_t *list = NULL;
    *removed = 0;
    if (sweep_list(e, &list, err) < 0)
        return -1;
    size_t i;
    json_t *c;
    json_array_foreach(list, i, c)
    {
        const char *run =
            json_string_value(json_object_get(json_object_get(c, "Labels"), SPEC_LABEL_RUN));
        if (!json_string_value(json_object_get(c, "Id")) || !run || strcmp(run, run_id) != 0)
            continue;
        sweep_done d;
        if (sweep_remove(e, c, &d, err) < 0)
            return -1;
        /* NEEDSWORK: the one line printed below the verbs, in gc's words: hand the failed
         * restore to the recorder instead, which says it in its own. */
        if (d.restore_tried && !d.restored)
            fprintf(stderr, "docker flame gc: could not restore container %.12s: %s\n", d.target,
                    d.restore_err.msg);
        (*removed)++;
    }
    return 0;
}

/* The container profiler of diff and merge (plugin/run/profiler.h). */
#include "plugin/run/profiler.h"

#include <stdlib.h>

#include "common/cleanup.h"
#include "plugin/run/run.h"

static int profiler_engine(profiler *c, flame_err *err)
{
    return c->e ? 0 : engine_open(c->g, &c->e, err);
}

int profiler_is_container(void *ud, const char *arg)
{
    profiler *c = ud;
    flame_err err = FLAME_ERR_INIT;
    if (profiler_engine(c, &err) < 0)
        return 0;
    _cleanup_free_ char *esc = engine_escape(arg);
    json_t *j = NULL;
    long st = 0;
    int rc = esc ? engine_json(c->e, "GET", NULL, &j, &st, &err, "/containers/%s/json", esc) : -1;
    json_decref(j);
    return rc == 0;
}

int profiler_profile(void *ud, const char *const *containers, size_t n, uint64_t duration_ms,
                     profile **out, flame_err *err)
{
    profiler *c = ud;
    if (profiler_engine(c, err) < 0)
        return -1;
    run_req req = {.targets = containers, .n = (int)n, .debug = c->g->debug};
    ct_args_default(&req.sidecar, CT_RECORD);
    req.sidecar.duration_ms = duration_ms;
    run_result res;
    if (run_result_init(&res, &req, err) < 0)
        return -1;
    int rc = run_profile(c->e, &req, &res, err);
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (res.t[i].why.code) {
            *err = res.t[i].why;
            rc = -1;
            break;
        }
        out[i] = steal_pointer(&res.t[i].pr.prof);
    }
    run_result_free(&res);
    return rc;
}

void profiler_close(profiler *c)
{
    engine_free(c->e);
    c->e = NULL;
}

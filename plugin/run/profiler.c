/* The container profiler of diff and merge (plugin/run/profiler.h). */
#include "plugin/run/profiler.h"

#include <stdlib.h>

#include "common/cleanup.h"
#include "plugin/opts.h"
#include "plugin/run/session.h"
#include "plugin/run/sidecar.h"

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
    flame_opts o;
    opts_init(&o);
    o.duration_ms = duration_ms;
    sess *ss = calloc(n, sizeof *ss);
    if (!ss)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    run_ctx r = {.e = c->e, .o = &o, .s = ss, .n = (int)n, .debug = c->g->debug};
    progress_init(&r.pg, stderr, false);
    for (size_t i = 0; i < n; i++)
        ss[i].arg = containers[i];
    int rc = run_profile(&r, err);
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (run_failure(&ss[i], r.interrupts > 0, err)) {
            rc = -1;
            break;
        }
        out[i] = steal_pointer(&ss[i].pr.prof);
    }
    for (size_t i = 0; i < n; i++)
        sess_clear(&ss[i]);
    free(ss);
    return rc;
}

void profiler_close(profiler *c)
{
    engine_free(c->e);
    c->e = NULL;
}

/* --summary-json for the profile verb and top (plugin/summary.h). Field by field what
 * print_summary() in cmd_profile.c prints on stderr, plus what a script needs to act on it
 * (exit codes, errors, files, timings); the contract is docs/SUMMARY.md. */
#include "plugin/summary.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "common/contract.h"
#include "flame/methods.h"

void summary_jvms(jsonw *w, const proto *pr)
{
    jsonw_array(w, "jvms");
    for (size_t i = 0; pr && i < pr->njvms; i++) {
        const ct_jvm *j = &pr->jvms[i];
        jsonw_object(w, NULL);
        jsonw_uint(w, "pid", j->nspid);
        jsonw_uint(w, "host_pid", j->pid);
        jsonw_strn(w, "java_version", j->java_version,
                   strnlen(j->java_version, sizeof j->java_version));
        jsonw_str(w, "names_via", ct_attach_name(j->attach));
        jsonw_str(w, "agent_injected", ct_injected_name(j->inject));
        jsonw_bool(w, "preserve_frame_pointer", j->preserve_fp);
        jsonw_strn(w, "note", j->reason, strnlen(j->reason, sizeof j->reason));
        jsonw_uint(w, "attach_ms", j->attach_ms);
        if (j->refused) { /* modes this JVM refused (docs/MODES.md) */
            jsonw_array(w, "refused");
            for (int m = 0; m < CT_MODE_COUNT; m++)
                if (j->refused & CT_MODE_BIT(m))
                    jsonw_str(w, NULL, ct_mode((enum ct_mode)m)->name);
            jsonw_end(w);
            jsonw_strn(w, "refused_why", j->refused_why,
                       strnlen(j->refused_why, sizeof j->refused_why));
        }
        jsonw_end(w);
    }
    jsonw_end(w);
}

void summary_top_methods(jsonw *w, const profile *p, size_t n)
{
    const char *names[SUMMARY_TOP_METHODS];
    double counts[SUMMARY_TOP_METHODS];
    double total = p ? profile_total(p) : 0;
    if (n > SUMMARY_TOP_METHODS)
        n = SUMMARY_TOP_METHODS;
    size_t k = total > 0 ? methods_top_self(p, n, true, names, counts) : 0;
    jsonw_array(w, "top_methods");
    for (size_t i = 0; i < k; i++) {
        size_t len = strlen(names[i]); /* the folder's _[j]/_[i]/_[k]/_[w] is not the name */
        if (len > 4 && names[i][len - 4] == '_' && names[i][len - 3] == '[' &&
            names[i][len - 1] == ']')
            len -= 4;
        jsonw_object(w, NULL);
        jsonw_strn(w, "name", names[i], len);
        jsonw_num(w, "self_samples", counts[i]);
        jsonw_num(w, "self_share", counts[i] / total);
        jsonw_end(w);
    }
    jsonw_end(w);
}

static void warnings(jsonw *w, const proto *pr)
{
    jsonw_array(w, "warnings");
    for (size_t i = 0; pr && i < pr->nwarn; i++)
        jsonw_str(w, NULL, pr->warnings[i]);
    jsonw_end(w);
    jsonw_uint(w, "warnings_dropped", pr ? pr->dropped_warn : 0);
}

/* The sidecar's stack walks (docs/SIDECAR.md "Stack walking"): null when none was made (per
 * thread, or an old sidecar). cut: at the depth cap or where the stack could not be read. */
static void summary_walk(jsonw *w, const ct_summary *sum)
{
    if (!sum || !sum->walks) {
        jsonw_null(w, "walk");
        return;
    }
    jsonw_object(w, "walk");
    jsonw_uint(w, "walks", sum->walks);
    jsonw_uint(w, "root", sum->walk_status[0]);
    jsonw_uint(w, "cut", ct_walk_cut(sum));
    jsonw_uint(w, "tail", sum->walk_tail);
    jsonw_object(w, "status");
    for (int k = 0; k < CT_WALK_NSTATUS; k++)
        jsonw_uint(w, ct_walk_status_name(k), sum->walk_status[k]);
    jsonw_end(w);
    jsonw_end(w);
}

static void target(jsonw *w, const sum_target *t)
{
    const run_target *s = t->s;
    const proto *pr = &s->pr;
    const ct_summary *sum = pr->have_summary ? &pr->summary : NULL;
    jsonw_object(w, NULL);
    jsonw_str(w, "container", s->arg);
    jsonw_strn(w, "name", s->name, strnlen(s->name, sizeof s->name));
    jsonw_str(w, "id", s->target_id);
    jsonw_strn(w, "image", s->image, strnlen(s->image, sizeof s->image));
    jsonw_bool(w, "ok", t->error == NULL);
    jsonw_int(w, "exit_code", t->exit_code);
    jsonw_str(w, "error", t->error);
    jsonw_num(w, "samples", pr->prof ? profile_total(pr->prof) : 0);
    jsonw_uint(w, "stacks", pr->prof ? profile_stacks(pr->prof) : 0);
    if (sum) {
        jsonw_strn(w, "sampling", sum->sampling, strnlen(sum->sampling, sizeof sum->sampling));
        jsonw_strn(w, "filter", sum->filter, strnlen(sum->filter, sizeof sum->filter));
        jsonw_uint(w, "lost", sum->lost);
        jsonw_object(w, "jit");
        jsonw_uint(w, "samples", sum->jit_leaf_samples);
        jsonw_uint(w, "named", sum->jit_leaf_named);
        jsonw_num(w, "named_share", sum->jit_leaf_samples ? sum->named_share : 0);
        jsonw_end(w);
    } else {
        jsonw_null(w, "sampling");
        jsonw_null(w, "filter");
        jsonw_null(w, "lost");
        jsonw_null(w, "jit");
    }
    summary_walk(w, sum);
    summary_jvms(w, pr);
    summary_top_methods(w, pr->prof, SUMMARY_TOP_METHODS);
    jsonw_array(w, "files"); /* every mode's (docs/MODES.md) */
    for (int m = 0; t->paths && m < CT_MODE_COUNT; m++)
        for (int f = 0; f < FMT_COUNT; f++) {
            if (!t->paths[m][f])
                continue;
            jsonw_object(w, NULL);
            jsonw_str(w, "format", out_fmt_name(f));
            jsonw_str(w, "mode", ct_mode((enum ct_mode)m)->name);
            jsonw_str(w, "path", t->paths[m][f]);
            jsonw_end(w);
        }
    jsonw_end(w);
    warnings(w, pr);
    jsonw_object(w, "sidecar_timings_ms");
    for (int ph = 0; sum && ph < CT_PH_COUNT; ph++)
        jsonw_uint(w, ct_phase_name((enum ct_phase)ph), sum->timings_ms[ph]);
    jsonw_end(w);
    jsonw_end(w);
}

static int write_profile(void *ctx, FILE *f, flame_err *err)
{
    const sum_profile *sp = ctx;
    jsonw w;
    jsonw_init(&w, f);
    jsonw_object(&w, NULL);
    jsonw_summary_header(&w, "profile", sp->started);
    jsonw_int(&w, "exit_code", sp->exit_code);
    jsonw_str(&w, "error", sp->error);
    jsonw_int(&w, "frequency_hz", sp->o->rec.frequency);
    jsonw_uint(&w, "duration_ms", sp->o->rec.duration_ms);
    jsonw_array(&w, "containers");
    for (size_t i = 0; i < sp->n; i++)
        target(&w, &sp->t[i]);
    jsonw_end(&w);
    if (sp->o->cmd) {
        /* the command's own status: the run's exit code is 1 whatever it failed with */
        int st = sp->r ? sp->r->cmd_status : 0;
        bool ran = sp->r && sp->r->cmd_done && sp->r->cmd_started;
        jsonw_object(&w, "command");
        jsonw_str(&w, "argv0", sp->o->cmd[0]);
        if (ran && WIFEXITED(st))
            jsonw_int(&w, "exit_code", WEXITSTATUS(st));
        else
            jsonw_null(&w, "exit_code");
        if (ran && WIFSIGNALED(st))
            jsonw_int(&w, "signal", WTERMSIG(st));
        else
            jsonw_null(&w, "signal");
        jsonw_end(&w);
    }
    jsonw_object(&w, "timings_ms");
    if (sp->r) {
        double ms[RUN_TIMINGS];
        run_timings_ms(sp->r, sp->t_written, ms);
        for (int i = 0; i < RUN_TIMINGS; i++)
            jsonw_num(&w, run_timing_names[i], (double)(long long)(ms[i] + 0.5));
    }
    jsonw_end(&w);
    jsonw_end(&w);
    if (fflush(f) != 0 || ferror(f))
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno ? errno : EIO, "write error");
    return 0;
}

static int write_top(void *ctx, FILE *f, flame_err *err)
{
    const sum_top *st = ctx;
    jsonw w;
    jsonw_init(&w, f);
    jsonw_object(&w, NULL);
    jsonw_summary_header(&w, "top", st->started);
    jsonw_int(&w, "exit_code", st->exit_code);
    jsonw_str(&w, "container", st->container);
    jsonw_int(&w, "frequency_hz", st->frequency);
    /* --mode alloc counts bytes, lock/wall/offcpu ns: "samples" and the methods' counts are in
     * this unit (the profile verb says it per file instead) */
    const ct_mode_info *mi = ct_mode((enum ct_mode)st->mode);
    jsonw_str(&w, "mode", mi->name);
    jsonw_str(&w, "unit", mi->unit);
    jsonw_uint(&w, "windows", st->windows);
    jsonw_num(&w, "samples", st->p ? profile_total(st->p) : 0);
    jsonw_uint(&w, "stacks", st->p ? profile_stacks(st->p) : 0);
    summary_jvms(&w, st->pr);
    summary_top_methods(&w, st->p, SUMMARY_TOP_METHODS);
    jsonw_array(&w, "files");
    if (st->record) {
        jsonw_object(&w, NULL);
        int rf = out_fmt_of_path(st->record); /* the rule top --record follows */
        jsonw_str(&w, "format", out_fmt_name(rf >= 0 ? rf : FMT_FOLDED));
        jsonw_str(&w, "path", st->record);
        jsonw_str(&w, "mode", mi->name);
        jsonw_end(&w);
    }
    jsonw_end(&w);
    warnings(&w, st->pr);
    jsonw_object(&w, "timings_ms");
    jsonw_num(&w, "total", (double)(long long)(st->seconds * 1000 + 0.5));
    jsonw_end(&w);
    jsonw_end(&w);
    if (fflush(f) != 0 || ferror(f))
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno ? errno : EIO, "write error");
    return 0;
}

int summary_write(const char *path, out_writer_fn fn, const void *ctx, flame_err *err)
{
    if (out_write_with(path, fn, (void *)ctx, err) < 0)
        return flame_wrap(err, "--summary-json");
    return 0;
}

int summary_write_profile(const char *path, const sum_profile *sp, flame_err *err)
{
    return summary_write(path, write_profile, sp, err);
}

int summary_write_top(const char *path, const sum_top *st, flame_err *err)
{
    return summary_write(path, write_top, st, err);
}

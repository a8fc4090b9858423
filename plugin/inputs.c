/* Inputs of diff and merge (plugin/inputs.h). */
#include "plugin/inputs.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/cleanup.h"
#include "common/contract.h"
#include "flame/diff.h"
#include "flame/render.h"

/* The smallest count of a profile decides what it counts: sample counts always include small
 * numbers (1, 2, ...), sums of periods (ns of CPU, events) never go below one period. */
enum unit { UNIT_UNKNOWN, UNIT_SAMPLES, UNIT_PERIODS };

void inputs_ptype_of(const char *path, char *out, size_t cap)
{
    snprintf(out, cap, "cpu");
    FILE *f = fopen(path, "re");
    if (f) {
        char head[4097];
        size_t n = fread(head, 1, sizeof head - 1, f);
        fclose(f);
        head[n] = 0;
        char t[16];
        render_svg_ptype(head, t, sizeof t);
        if (*t && ct_mode_parse(t, strlen(t)) >= 0) {
            snprintf(out, cap, "%s", t);
            return;
        }
        if (strstr(head, "<svg"))
            return; /* an SVG without the mark: cpu, whatever its name says */
    }
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    for (const char *p = strchr(base, '.'); p; p = strchr(p + 1, '.')) {
        const char *e = strchr(p + 1, '.');
        if (!e)
            break;
        if (ct_mode_parse(p + 1, (size_t)(e - p - 1)) >= 0) {
            snprintf(out, cap, "%.*s", (int)(e - p - 1), p + 1);
            return;
        }
    }
}

/* One profile type for all: a diff of allocated bytes against CPU samples means nothing. */
static int check_types(const input *in, size_t n, flame_err *err)
{
    const input *first = NULL;
    for (size_t i = 0; i < n; i++) {
        if (!*in[i].ptype)
            continue;
        if (!first) {
            first = &in[i];
        } else if (strcmp(first->ptype, in[i].ptype)) {
            int a = ct_mode_parse(first->ptype, strlen(first->ptype)),
                b = ct_mode_parse(in[i].ptype, strlen(in[i].ptype));
            bool stored = first->stored || in[i].stored;
            return flame_fail(err, FLAME_EXIT_USAGE,
                              "%s is a profile of %s (%s) but %s of %s (%s): compare "
                              "profiles of one type (docs/MODES.md%s)",
                              first->arg, first->ptype, ct_mode((enum ct_mode)a)->unit, in[i].arg,
                              in[i].ptype, ct_mode((enum ct_mode)b)->unit,
                              stored ? "; a stored range is of --mode's type, cpu by default" : "");
        }
    }
    return 0;
}

int inputs_mode(const input *in, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int m = *in[i].ptype ? ct_mode_parse(in[i].ptype, strlen(in[i].ptype)) : -1;
        if (m > CT_MODE_CPU)
            return m;
    }
    return -1;
}

void inputs_apply_mode(int m, render_opts *ro, pprof_meta *pm)
{
    if (m <= CT_MODE_CPU)
        return;
    const ct_mode_info *mi = ct_mode((enum ct_mode)m);
    ro->countname = mi->unit;
    ro->ptype = mi->name;
    pm->type1 = mi->type1;
    pm->unit1 = mi->unit1;
    pm->period_type = mi->type1;
    pm->period_unit = mi->unit1;
    pm->period = 1;
}

static bool is_file(const input *in)
{
    return !in->container && !in->stored;
}

static void *load_thread(void *ud)
{
    input *in = ud;
    in->rc = profile_load_path(in->p, in->arg, &in->err);
    return NULL;
}

/* Resolve each argument (file, "-", stored range or container), load the files (two at a time in
 * parallel: loading is the bulk of a big diff and there is nothing shared between two profiles),
 * then profile all the containers in ONE call so they are sampled over the same window. */
int inputs_load(input *in, size_t n, const flame_profiler *prof, uint64_t duration_ms,
                const char *stored_type, flame_err *err)
{
    size_t stdin_uses = 0, ncont = 0;
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        if (strcmp(in[i].arg, "-") == 0) {
            if (++stdin_uses > 1)
                return flame_fail(err, FLAME_EXIT_USAGE,
                                  "standard input (-) can be read only once");
        } else if (stat(in[i].arg, &st) == 0) {
            if (S_ISDIR(st.st_mode))
                return flame_fail(err, FLAME_EXIT_ERROR,
                                  "%s: is a directory, not a profile (a folded file or an SVG "
                                  "written by docker flame)",
                                  in[i].arg);
        } else if (prof && prof->stored && strchr(in[i].arg, '@')) {
            in[i].stored = true; /* no container name holds an '@' */
        } else if (prof && prof->is_container && prof->is_container(prof->ctx, in[i].arg) > 0) {
            in[i].container = true;
            ncont++;
        } else if (prof) {
            return flame_fail(err, FLAME_EXIT_ERROR, "no such file or running container: %s",
                              in[i].arg);
        } else {
            return flame_fail(err, FLAME_EXIT_ERROR, "no such file: %s", in[i].arg);
        }
        if (strcmp(in[i].arg, "-") == 0)
            in[i].ptype[0] = 0;
        else if (is_file(&in[i]))
            inputs_ptype_of(in[i].arg, in[i].ptype, sizeof in[i].ptype);
        else if (in[i].stored && stored_type)
            snprintf(in[i].ptype, sizeof in[i].ptype, "%s", stored_type);
        else
            snprintf(in[i].ptype, sizeof in[i].ptype, "cpu");
    }
    if (check_types(in, n, err) < 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (!is_file(&in[i]))
            continue;
        in[i].p = profile_new();
        if (!in[i].p)
            return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
        in[i].err = (flame_err)FLAME_ERR_INIT;
    }
    /* files: pairs in parallel (2 cores is the machine we size for) */
    for (size_t i = 0; i < n; i++) {
        if (!is_file(&in[i]))
            continue;
        size_t j = i + 1;
        while (j < n && !is_file(&in[j]))
            j++;
        pthread_t t;
        bool threaded = j < n && pthread_create(&t, NULL, load_thread, &in[j]) == 0;
        load_thread(&in[i]);
        if (threaded) {
            pthread_join(t, NULL);
        } else if (j < n) {
            load_thread(&in[j]);
        }
        if (in[i].rc < 0) {
            *err = in[i].err;
            return -1;
        }
        if (j < n && in[j].rc < 0) {
            *err = in[j].err;
            return -1;
        }
        i = j;
    }
    for (size_t i = 0; i < n; i++)
        if (in[i].stored && prof->stored(prof->ctx, in[i].arg, stored_type, &in[i].p, err) < 0)
            return -1;
    if (ncont == 0)
        return 0;
    if (!prof || !prof->profile)
        return flame_fail(err, FLAME_EXIT_ERROR, "cannot profile containers here");
    _cleanup_free_ const char **names = calloc(ncont, sizeof *names);
    _cleanup_free_ profile **out = calloc(ncont, sizeof *out);
    if (!names || !out)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (in[i].container)
            names[k++] = in[i].arg;
    if (prof->profile(prof->ctx, names, ncont, duration_ms, out, err) < 0) {
        for (k = 0; k < ncont; k++)
            profile_free(out[k]);
        return -1;
    }
    k = 0;
    for (size_t i = 0; i < n; i++)
        if (in[i].container)
            in[i].p = out[k++];
    for (size_t i = 0; i < n; i++)
        if (!in[i].p)
            return flame_fail(err, FLAME_EXIT_ERROR, "%s: profiling gave no profile", in[i].arg);
    return 0;
}

void inputs_free(input *in, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        profile_free(in[i].p);
        in[i].p = NULL;
    }
}

int inputs_check_plain(const input *in, flame_err *err)
{
    if (profile_is_diff(in->p))
        return flame_fail(err, FLAME_EXIT_ERROR,
                          "%s: is a differential profile (two count columns, e.g. a diff.svg); "
                          "give plain profiles",
                          in->arg);
    if (profile_stacks(in->p) == 0 || !(profile_total(in->p) > 0))
        return flame_fail(err, FLAME_EXIT_ERROR, "%s: empty profile (no samples)", in->arg);
    return 0;
}

static enum unit guess_unit(const profile *p)
{
    if (profile_stacks(p) < 20)
        return UNIT_UNKNOWN; /* too few stacks to tell */
    double m = diff_smallest_count(p);
    if (m <= 100)
        return UNIT_SAMPLES;
    if (m >= 10000)
        return UNIT_PERIODS;
    return UNIT_UNKNOWN;
}

void inputs_print_timings(const char *verb, const char *combine, const double *t)
{
    if (!getenv("DOCKER_FLAME_TIMINGS"))
        return;
    fprintf(stderr,
            "docker flame %s: timings (ms): load %.0f, %s %.0f, summary %.0f, write %.0f, "
            "total %.0f\n",
            verb, (t[1] - t[0]) * 1000, combine, (t[2] - t[1]) * 1000, (t[3] - t[2]) * 1000,
            (t[4] - t[3]) * 1000, (t[4] - t[0]) * 1000);
}

int inputs_check_units(const input *a, const input *b, flame_err *err)
{
    enum unit ua = guess_unit(a->p), ub = guess_unit(b->p);
    if (ua == UNIT_UNKNOWN || ub == UNIT_UNKNOWN || ua == ub)
        return 0;
    return flame_fail(err, FLAME_EXIT_ERROR,
                      "%s counts %s but %s counts %s (smallest counts %.0f and %.0f): fold both "
                      "the same way, or pass --ignore-units",
                      a->arg, ua == UNIT_SAMPLES ? "samples" : "periods", b->arg,
                      ub == UNIT_SAMPLES ? "samples" : "periods", diff_smallest_count(a->p),
                      diff_smallest_count(b->p));
}

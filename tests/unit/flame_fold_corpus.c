/* stackcollapse-perf.pl compatibility: --compat output equals the Perl script's on every input of
 * the corpus, for every option it was run with (expected/<input>-collapsed-<opt>.txt). */
#include "tests/unit/tap.h"
#include "tests/unit/fold_test_util.h"

static const char *const opt_names[] = {"default", "pid", "tid", "kernel", "jit", "all", "addrs"};

static fold_opts opts_for(const char *name)
{
    fold_opts o = {.compat = true};
    if (!strcmp(name, "pid"))
        o.pid = true;
    else if (!strcmp(name, "tid"))
        o.tid = true;
    else if (!strcmp(name, "kernel"))
        o.kernel = true;
    else if (!strcmp(name, "jit"))
        o.jit = true;
    else if (!strcmp(name, "all"))
        o.kernel = o.jit = true;
    else if (!strcmp(name, "addrs"))
        o.addrs = true;
    return o;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(void)
{
    const char *dir = corpus_dir();
    char *path = NULL;
    if (asprintf(&path, "%s/inputs", dir) < 0)
        return 1;
    printf("# corpus: %s\n", dir);
    DIR *d = opendir(path);
    ok(d != NULL, "corpus directory %s is readable", path);
    if (!d) {
        free(path);
        return tap_done();
    }
    char *names[256];
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d)) && n < 256) {
        size_t l = strlen(de->d_name);
        if (l > 4 && !strcmp(de->d_name + l - 4, ".txt"))
            names[n++] = strdup(de->d_name);
    }
    closedir(d);
    free(path);
    qsort(names, n, sizeof *names, cmp_names);
    ok(n >= 1, "corpus has inputs (%zu)", n);

    for (size_t i = 0; i < n; i++) {
        char base[256];
        snprintf(base, sizeof base, "%.*s", (int)(strlen(names[i]) - 4) & 0xff, names[i]);
        for (size_t k = 0; k < sizeof opt_names / sizeof *opt_names; k++) {
            char *in = NULL, *exp = NULL;
            if (asprintf(&in, "%s/inputs/%s", dir, names[i]) < 0 ||
                asprintf(&exp, "%s/expected/%s-collapsed-%s.txt", dir, base, opt_names[k]) < 0)
                return 1;
            char *want = slurp(exp, NULL);
            free(exp);
            if (!want) {
                free(in);
                continue; /* no reference for this option */
            }
            fold_opts o = opts_for(opt_names[k]);
            char *got = fold_path(in, &o, NULL);
            free(in);
            int same = got && strcmp(got, want) == 0;
            ok(same, "compat %s --%s", base, opt_names[k]);
            if (!same && got)
                show_first_diff(got, want);
            free(got);
            free(want);
        }
        free(names[i]);
    }
    return tap_done();
}

/* `docker flame diff` and `docker flame merge`: inputs (folded files, docker-flame SVGs, running
 * containers through the plugin's profiler hook) in, differential or merged profiles out, plus
 * the movers summary on stdout. The verbs' main(): only here are errors printed. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "plugin/cmd.h"
#include "plugin/cli_util.h"

#include "common/atomic.h"
#include "flame/diff.h"
#include "flame/profile.h"
#include "flame/render.h"

static const char diff_usage[] =
    "Usage: docker flame diff [OPTIONS] BEFORE AFTER [-o diff.svg]\n"
    "\n"
    "Compare two profiles. BEFORE and AFTER are each a folded file (\"a;b;c 12\" lines), an SVG\n"
    "written by docker flame (it carries its data), - for standard input, or a running\n"
    "container: two containers are profiled at the same time for the same window; a container\n"
    "and a file: the container is profiled and compared with the file.\n"
    "\n"
    "Writes two differential flame graphs (difffolded.pl + flamegraph.pl semantics):\n"
    "  diff.svg         widths = AFTER; red = grew, blue = shrank (self change of each frame)\n"
    "  diff.mirror.svg  widths = BEFORE, same colours: shows the stacks that vanished, which have\n"
    "                   no width in diff.svg\n"
    "and prints the methods whose share of the samples grew or shrank most.\n"
    "\n"
    "Options:\n"
    "  -o, --output FILE    diff.svg (default); FILE.folded or FILE.txt writes 'stack BEFORE\n"
    "                       AFTER' lines instead (what difffolded.pl prints); - = stdout\n"
    "  --format FMT         svg or folded (default: from the extension of FILE)\n"
    "  --single             write only FILE, not the mirrored graph\n"
    "  -n, --normalize      scale BEFORE to AFTER's total (default when the totals differ;\n"
    "                       counts are truncated to integers as difffolded.pl -n does)\n"
    "  --no-normalize       compare raw counts\n"
    "  -s, --strip-hex      turn every 0x1234abcd in frame names into 0x... (difffolded.pl -s)\n"
    "  --top N              movers to list each way (10); 0 = no summary\n"
    "  --inclusive          movers by total (inclusive) share instead of self share\n"
    "  --all-frames         movers among all frames, not only Java methods\n"
    "  --ignore-units       compare even if one profile counts samples and the other periods\n"
    "  -d, --duration SEC   how long to profile containers (30)\n"
    "  --title TEXT, --colors PALETTE, --minwidth PX|N%, --width PX: as for docker flame render\n"
    "\n"
    "Examples:\n"
    "  docker flame diff before.folded after.folded            # diff.svg, diff.mirror.svg\n"
    "  docker flame diff web-v1.svg web-v2.svg -o web.svg\n"
    "  docker flame diff app-mysql app-postgres -d 60 -o db.svg   # two running containers\n"
    "  docker flame diff baseline.folded web --inclusive        # a container against a file\n"
    "  docker flame diff -s --no-normalize a.folded b.folded -o ab.folded\n"
    "\n"
    "Environment: DOCKER_FLAME_TIMINGS=1 prints where the time went (load, union, write).\n"
    "\n"
    "Exit status: 0 ok, 1 bad input or I/O error, 2 bad command line; profiling containers\n"
    "uses the exit codes of docker flame (3 no container, 4 no JVM, ...).\n";

static const char merge_usage[] =
    "Usage: docker flame merge [OPTIONS] INPUT INPUT... -o OUT\n"
    "\n"
    "Add several profiles into one: several runs of one configuration, runs at several\n"
    "frequencies, several containers. Rare code paths caught by one run show up in the sum.\n"
    "Each INPUT is a folded file, an SVG written by docker flame, - for standard input, or a\n"
    "running container (all containers are profiled at the same time). The result can be\n"
    "given to docker flame diff.\n"
    "\n"
    "Options:\n"
    "  -o, --output OUT     required; the format follows the extension: .svg (flame graph with\n"
    "                       its data), .folded or .txt (folded stacks), .json (speedscope)\n"
    "  --format FMT         svg, folded or speedscope, whatever the extension\n"
    "  --normalize          scale every input to the same total before adding, so each run\n"
    "                       weighs the same (counts rounded; without it, longer runs weigh more)\n"
    "  -d, --duration SEC   how long to profile containers (30)\n"
    "  --title TEXT, --colors PALETTE, --minwidth PX|N%, --width PX: as for docker flame render\n"
    "\n"
    "Examples:\n"
    "  docker flame merge run1.folded run2.folded run3.folded -o all.svg\n"
    "  docker flame merge --normalize r99hz.svg r997hz.svg -o all.folded\n"
    "  docker flame merge web-1 web-2 web-3 -d 20 -o web.json   # three replicas, one profile\n"
    "\n"
    "Environment: DOCKER_FLAME_TIMINGS=1 prints where the time went (load, sum, write).\n"
    "\n"
    "Exit status: 0 ok, 1 bad input or I/O error, 2 bad command line.\n";

enum {
    OPT_NO_NORMALIZE = 256,
    OPT_SINGLE,
    OPT_TOP,
    OPT_INCLUSIVE,
    OPT_ALL_FRAMES,
    OPT_IGNORE_UNITS,
    OPT_FORMAT,
    OPT_TITLE,
    OPT_COLORS,
    OPT_MINWIDTH,
    OPT_WIDTH,
    OPT_NORMALIZE_LONG,
};

static const struct option diff_opts_long[] = {
    {"output", required_argument, NULL, 'o'},
    {"format", required_argument, NULL, OPT_FORMAT},
    {"single", no_argument, NULL, OPT_SINGLE},
    {"normalize", no_argument, NULL, 'n'},
    {"normalise", no_argument, NULL, 'n'},
    {"no-normalize", no_argument, NULL, OPT_NO_NORMALIZE},
    {"no-normalise", no_argument, NULL, OPT_NO_NORMALIZE},
    {"strip-hex", no_argument, NULL, 's'},
    {"top", required_argument, NULL, OPT_TOP},
    {"inclusive", no_argument, NULL, OPT_INCLUSIVE},
    {"all-frames", no_argument, NULL, OPT_ALL_FRAMES},
    {"ignore-units", no_argument, NULL, OPT_IGNORE_UNITS},
    {"duration", required_argument, NULL, 'd'},
    {"title", required_argument, NULL, OPT_TITLE},
    {"colors", required_argument, NULL, OPT_COLORS},
    {"colours", required_argument, NULL, OPT_COLORS},
    {"minwidth", required_argument, NULL, OPT_MINWIDTH},
    {"width", required_argument, NULL, OPT_WIDTH},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static const struct option merge_opts_long[] = {
    {"output", required_argument, NULL, 'o'},
    {"format", required_argument, NULL, OPT_FORMAT},
    {"normalize", no_argument, NULL, OPT_NORMALIZE_LONG},
    {"normalise", no_argument, NULL, OPT_NORMALIZE_LONG},
    {"duration", required_argument, NULL, 'd'},
    {"title", required_argument, NULL, OPT_TITLE},
    {"colors", required_argument, NULL, OPT_COLORS},
    {"colours", required_argument, NULL, OPT_COLORS},
    {"minwidth", required_argument, NULL, OPT_MINWIDTH},
    {"width", required_argument, NULL, OPT_WIDTH},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static int say_error(const char *verb, const flame_err *err)
{
    fprintf(stderr, "docker flame %s: %s\n", verb, err->msg[0] ? err->msg : "failed");
    return err->code ? err->code : FLAME_EXIT_ERROR;
}

/* ---- output ------------------------------------------------------------------------------------
 */

typedef enum out_format { FMT_NONE, FMT_SVG, FMT_FOLDED, FMT_SPEEDSCOPE } out_format;

static bool has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcasecmp(s + n - k, suffix) == 0;
}

static out_format format_of_path(const char *path)
{
    if (has_suffix(path, ".svg"))
        return FMT_SVG;
    if (has_suffix(path, ".folded") || has_suffix(path, ".txt") || has_suffix(path, ".collapsed"))
        return FMT_FOLDED;
    if (has_suffix(path, ".json"))
        return FMT_SPEEDSCOPE;
    return FMT_NONE;
}

static out_format parse_format(const char *s)
{
    if (strcmp(s, "svg") == 0)
        return FMT_SVG;
    if (strcmp(s, "folded") == 0)
        return FMT_FOLDED;
    if (strcmp(s, "speedscope") == 0 || strcmp(s, "json") == 0)
        return FMT_SPEEDSCOPE;
    return FMT_NONE;
}

typedef struct out_job {
    const profile *p;
    const render_opts *ro;
    out_format fmt;
    const char *name; /* speedscope profile name */
} out_job;

static int write_job(const out_job *j, FILE *f, flame_err *err)
{
    switch (j->fmt) {
    case FMT_SVG:
        return render_svg(j->p, j->ro, f, err);
    case FMT_FOLDED:
        return diff_write_folded(j->p, f, err);
    case FMT_SPEEDSCOPE:
        return export_speedscope(j->p, j->name, f, err);
    case FMT_NONE:
        break;
    }
    return flame_fail(err, FLAME_EXIT_ERROR, "no output format");
}

static int write_job_cb(void *ctx, FILE *out, flame_err *err)
{
    return write_job(ctx, out, err);
}

/* Readers never see half a graph; a failure leaves an older file untouched. */
static int write_atomic(const char *path, const out_job *j, flame_err *err)
{
    if (atomic_write_file(path, write_job_cb, (void *)j, err) < 0)
        return flame_wrap(err, "%s", path);
    return 0;
}

/* "-o -": standard output (no temporary file, no mirror). */
static int write_out(const char *path, const out_job *j, flame_err *err)
{
    if (strcmp(path, "-") != 0)
        return write_atomic(path, j, err);
    int rc = write_job(j, stdout, err);
    if (rc == 0 && (fflush(stdout) != 0 || ferror(stdout)))
        rc = flame_fail_errno(err, FLAME_EXIT_ERROR, errno ? errno : EIO, "writing stdout");
    return rc;
}

/* "dir/diff.svg" -> "dir/diff.mirror.svg"; no extension -> "NAME.mirror". Caller frees. */
static char *mirror_path(const char *path)
{
    const char *slash = strrchr(path, '/');
    const char *dot = strrchr(slash ? slash + 1 : path, '.');
    char *s = NULL;
    if (dot && dot != (slash ? slash + 1 : path)) {
        if (asprintf(&s, "%.*s.mirror%s", (int)(dot - path), path, dot) < 0)
            return NULL;
    } else if (asprintf(&s, "%s.mirror", path) < 0) {
        return NULL;
    }
    return s;
}

typedef struct mirror_job {
    const char *path;
    out_job job;
    flame_err err;
    int rc;
} mirror_job;

static void *mirror_thread(void *ud)
{
    mirror_job *m = ud;
    m->rc = write_atomic(m->path, &m->job, &m->err);
    return NULL;
}

/* ---- inputs -------------------------------------------------------------------------------- */

typedef struct input {
    const char *arg;
    bool container;
    profile *p;
    flame_err err;
    int rc;
} input;

static void *load_thread(void *ud)
{
    input *in = ud;
    in->rc = profile_load_path(in->p, in->arg, &in->err);
    return NULL;
}

/* Resolve each argument (file, "-", or container), load the files (two at a time in parallel:
 * loading is the bulk of a big diff and there is nothing shared between two profiles), then
 * profile all the containers in ONE call so they are sampled over the same window. */
static int load_inputs(input *in, size_t n, const flame_profiler *prof, double duration,
                       flame_err *err)
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
        } else if (prof && prof->is_container && prof->is_container(prof->ctx, in[i].arg) > 0) {
            in[i].container = true;
            ncont++;
        } else if (prof) {
            return flame_fail(err, FLAME_EXIT_ERROR, "no such file or running container: %s",
                              in[i].arg);
        } else {
            return flame_fail(err, FLAME_EXIT_ERROR, "no such file: %s", in[i].arg);
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (in[i].container)
            continue;
        in[i].p = profile_new();
        if (!in[i].p)
            return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
        in[i].err = (flame_err)FLAME_ERR_INIT;
    }
    /* files: pairs in parallel (2 cores is the machine we size for) */
    for (size_t i = 0; i < n; i++) {
        if (in[i].container)
            continue;
        size_t j = i + 1;
        while (j < n && in[j].container)
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
    if (prof->profile(prof->ctx, names, ncont, duration, out, err) < 0) {
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

static void free_inputs(input *in, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        profile_free(in[i].p);
        in[i].p = NULL;
    }
}

static int check_plain(const input *in, flame_err *err)
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

/* ---- shared render options ---------------------------------------------------------------------
 */

typedef struct common_opts {
    const char *output, *title, *colors;
    out_format fmt;
    double duration;
    double minwidth;
    bool minwidth_set, minwidth_pct;
    int width;
} common_opts;

/* Options both verbs take; 1 = handled, 0 = not ours, <0 = exit code (negated). */
static int common_opt(const char *verb, int c, common_opts *co)
{
    double v;
    switch (c) {
    case 'o':
        co->output = optarg;
        return 1;
    case OPT_FORMAT:
        co->fmt = parse_format(optarg);
        if (co->fmt == FMT_NONE)
            return -cli_usage_error(verb, "--format: '%s' is not svg, folded or speedscope",
                                    optarg);
        return 1;
    case 'd':
        if (!cli_parse_num(optarg, 0.1, 86400, &v))
            return -cli_usage_error(verb, "--duration: '%s' is not seconds (0.1..86400)", optarg);
        co->duration = v;
        return 1;
    case OPT_TITLE:
        co->title = optarg;
        return 1;
    case OPT_COLORS:
        if (!render_palette_valid(optarg))
            return -cli_usage_error(verb, "--colors: unknown palette '%s'", optarg);
        co->colors = optarg;
        return 1;
    case OPT_WIDTH:
        if (!cli_parse_num(optarg, 40, 1000000, &v) || v != floor(v))
            return -cli_usage_error(verb, "--width: '%s' is not a width in pixels (40..1000000)",
                                    optarg);
        co->width = (int)v;
        return 1;
    case OPT_MINWIDTH: {
        size_t l = strlen(optarg);
        char buf[64];
        bool pct = l > 0 && optarg[l - 1] == '%';
        snprintf(buf, sizeof buf, "%.*s", (int)(pct ? l - 1 : l), optarg);
        if (l >= sizeof buf || !cli_parse_num(buf, 0, pct ? 100 : 1e9, &v))
            return -cli_usage_error(
                verb, "--minwidth: '%s' is not pixels (0.1) or a percentage (0.5%%)", optarg);
        co->minwidth = v;
        co->minwidth_pct = pct;
        co->minwidth_set = true;
        return 1;
    }
    default:
        return 0;
    }
}

static void apply_render_opts(const common_opts *co, render_opts *ro)
{
    render_opts_default(ro);
    if (co->title)
        ro->title = co->title;
    if (co->colors)
        ro->colors = co->colors;
    if (co->width)
        ro->width = co->width;
    if (co->minwidth_set) {
        ro->minwidth = co->minwidth;
        ro->minwidth_pct = co->minwidth_pct;
    }
}

static int bad_option(const char *verb, int argc, char **argv)
{
    (void)argc;
    if (optopt && optopt < 256)
        return cli_usage_error(verb, "unknown or incomplete option '-%c'", optopt);
    return cli_usage_error(verb, "unknown or incomplete option '%s'", argv[optind - 1]);
}

/* The smallest count of a profile decides what it counts: sample counts always include small
 * numbers (1, 2, ...), sums of periods (ns of CPU, events) never go below one period. */
enum unit { UNIT_UNKNOWN, UNIT_SAMPLES, UNIT_PERIODS };
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

/* Where the time went (DOCKER_FLAME_TIMINGS=1, as for profiling): one line on stderr. */
static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void print_timings(const char *verb, const char *combine, const double *t)
{
    if (!getenv("DOCKER_FLAME_TIMINGS"))
        return;
    fprintf(stderr,
            "docker flame %s: timings (ms): load %.0f, %s %.0f, summary %.0f, write %.0f, "
            "total %.0f\n",
            verb, (t[1] - t[0]) * 1000, combine, (t[2] - t[1]) * 1000, (t[3] - t[2]) * 1000,
            (t[4] - t[3]) * 1000, (t[4] - t[0]) * 1000);
}

/* 1234567 -> "1,234,567" */
static const char *grouped(double v, char *buf, size_t n)
{
    char tmp[64];
    int l = snprintf(tmp, sizeof tmp, "%.0f", v);
    size_t o = 0;
    for (int i = 0; i < l && o + 2 < n; i++) {
        if (i > 0 && tmp[i - 1] != '-' && (l - i) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = tmp[i];
    }
    buf[o] = '\0';
    return buf;
}

/* ---- diff ---------------------------------------------------------------------------------------
 */

enum { NAME_COLS_MAX = 70 };

/* Frame names come from the profiled container: never send control bytes to a terminal. Long
 * names keep their end (the method name) and lose their start. */
static void print_name(FILE *out, const char *s, int width)
{
    size_t n = strlen(s);
    int shown = 0;
    if (n > (size_t)width) {
        fputs("...", out);
        s += n - (size_t)(width - 3);
        while ((*s & 0xc0) == 0x80) /* do not start inside a UTF-8 sequence */
            s++;
        shown = 3;
    }
    for (; *s; s++, shown++)
        putc((unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s, out);
    for (; shown < width; shown++)
        putc(' ', out);
}

static void print_mover_table(FILE *out, const char *head, const diff_mover *m, size_t n, int w)
{
    fprintf(out, "  %s\n", head);
    if (n == 0) {
        fputs("    (none)\n", out);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        fputs("    ", out);
        print_name(out, m[i].name, w);
        fprintf(out, "  %7.2f%%  %7.2f%%  %+8.2f\n", m[i].before_pct, m[i].after_pct,
                m[i].delta_pts);
    }
}

/* The movers summary as aligned text. */
static int print_movers(diff *d, const diff_movers_opts *o, size_t n, FILE *out, flame_err *err)
{
    _cleanup_free_ diff_mover *g = calloc(n ? n : 1, sizeof *g);
    _cleanup_free_ diff_mover *s = calloc(n ? n : 1, sizeof *s);
    size_t ng, ns;
    if (!g || !s)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    if (diff_movers(d, o, n, g, &ng, s, &ns, err) < 0)
        return -1;
    int w = 24;
    for (size_t i = 0; i < ng + ns; i++) {
        size_t l = strlen(i < ng ? g[i].name : s[i - ng].name);
        if (l > (size_t)w)
            w = l > NAME_COLS_MAX ? NAME_COLS_MAX : (int)l;
    }
    fprintf(out, "%s share of %s (%% of each profile's samples):\n",
            o->inclusive ? "Inclusive (total)" : "Self",
            o->all_frames ? "all frames" : "Java methods");
    fprintf(out, "    %-*s  %8s  %8s  %8s\n", w, "", "before", "after", "pts");
    print_mover_table(out, "grew most:", g, ng, w);
    print_mover_table(out, "shrank most:", s, ns, w);
    if (fflush(out) != 0 || ferror(out))
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno ? errno : EIO, "write summary");
    return 0;
}

int flame_cmd_diff(int argc, char **argv, const flame_profiler *prof)
{
    const char *verb = "diff";
    common_opts co = {.duration = 30};
    diff_opts dopt = {.normalize = DIFF_NORM_AUTO};
    diff_movers_opts mopt = {0};
    bool single = false, ignore_units = false;
    double top = 10;
    optind = 0; /* one verb among several in a process (and tests): restart getopt */
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "o:nsd:h", diff_opts_long, NULL)) != -1) {
        int r = common_opt(verb, c, &co);
        if (r < 0)
            return -r;
        if (r > 0)
            continue;
        switch (c) {
        case 'n':
            dopt.normalize = DIFF_NORM_ON;
            break;
        case OPT_NO_NORMALIZE:
            dopt.normalize = DIFF_NORM_OFF;
            break;
        case 's':
            dopt.strip_hex = true;
            break;
        case OPT_SINGLE:
            single = true;
            break;
        case OPT_TOP:
            if (!cli_parse_num(optarg, 0, 100000, &top) || top != floor(top))
                return cli_usage_error(verb, "--top: '%s' is not a number of methods", optarg);
            break;
        case OPT_INCLUSIVE:
            mopt.inclusive = true;
            break;
        case OPT_ALL_FRAMES:
            mopt.all_frames = true;
            break;
        case OPT_IGNORE_UNITS:
            ignore_units = true;
            break;
        case 'h':
            fputs(diff_usage, stdout);
            return FLAME_EXIT_OK;
        default:
            return bad_option(verb, argc, argv);
        }
    }
    if (argc - optind != 2)
        return cli_usage_error(verb, "expected two profiles, BEFORE and AFTER (got %d)",
                               argc - optind);
    const char *output = co.output ? co.output : "diff.svg";
    out_format fmt = co.fmt != FMT_NONE ? co.fmt : format_of_path(output);
    if (fmt == FMT_NONE)
        fmt = FMT_SVG;
    if (fmt == FMT_SPEEDSCOPE)
        return cli_usage_error(verb, "speedscope cannot show a differential; use -o FILE.svg or "
                                     "FILE.folded");

    flame_err err = FLAME_ERR_INIT;
    double t[5] = {now_s()};
    input in[2] = {{.arg = argv[optind]}, {.arg = argv[optind + 1]}};
    int rc = load_inputs(in, 2, prof, co.duration, &err);
    t[1] = now_s();
    if (rc == 0)
        rc = check_plain(&in[0], &err);
    if (rc == 0)
        rc = check_plain(&in[1], &err);
    if (rc == 0 && !ignore_units) {
        enum unit ua = guess_unit(in[0].p), ub = guess_unit(in[1].p);
        if (ua != UNIT_UNKNOWN && ub != UNIT_UNKNOWN && ua != ub)
            rc = flame_fail(&err, FLAME_EXIT_ERROR,
                            "%s counts %s but %s counts %s (smallest counts %.0f and %.0f): fold "
                            "both the same way, or pass --ignore-units",
                            in[0].arg, ua == UNIT_SAMPLES ? "samples" : "periods", in[1].arg,
                            ub == UNIT_SAMPLES ? "samples" : "periods",
                            diff_smallest_count(in[0].p), diff_smallest_count(in[1].p));
    }
    if (rc < 0) {
        free_inputs(in, 2);
        return say_error(verb, &err);
    }
    diff *d = NULL;
    rc = diff_new(in[0].p, in[1].p, &dopt, &d, &err);
    in[0].p = in[1].p = NULL; /* consumed */
    if (rc < 0)
        return say_error(verb, &err);
    t[2] = now_s();
    if (diff_normalized(d)) {
        char b1[64], b2[64];
        fprintf(stderr,
                "docker flame diff: note: totals differ (%s %s, %s %s): %s scaled to %s's total "
                "(counts truncated, as difffolded.pl -n); --no-normalize compares raw counts\n",
                in[0].arg, grouped(diff_total_before(d), b1, sizeof b1), in[1].arg,
                grouped(diff_total_after(d), b2, sizeof b2), in[0].arg, in[1].arg);
    }
    if (top > 0) {
        /* with -o - the profile owns stdout: the summary goes to stderr */
        FILE *sout = strcmp(output, "-") == 0 ? stderr : stdout;
        char b1[64], b2[64];
        fprintf(sout, "%s -> %s (totals %s -> %s)\n", in[0].arg, in[1].arg,
                grouped(diff_total_before(d), b1, sizeof b1),
                grouped(diff_total_after(d), b2, sizeof b2));
        if (print_movers(d, &mopt, (size_t)top, sout, &err) < 0) {
            diff_free(d);
            return say_error(verb, &err);
        }
    }

    t[3] = now_s();
    render_opts ro;
    apply_render_opts(&co, &ro);
    _cleanup_free_ char *title = NULL, *sub = NULL, *sub_m = NULL, *mpath = NULL;
    if (!co.title && asprintf(&title, "Flame diff: %s -> %s", in[0].arg, in[1].arg) < 0)
        title = NULL;
    if (asprintf(&sub, "widths: %s; red = grew, blue = shrank (self change)", in[1].arg) < 0)
        sub = NULL;
    if (asprintf(&sub_m, "widths: %s (mirror: shows what vanished); red = grew, blue = shrank",
                 in[0].arg) < 0)
        sub_m = NULL;
    if (title)
        ro.title = title;
    ro.subtitle = sub;
    out_job job = {diff_view(d, false), &ro, fmt, "diff"};
    bool mirror = !single && fmt == FMT_SVG && strcmp(output, "-") != 0;
    render_opts rm = ro;
    rm.negate = true; /* "after before" swapped back: red still means grew */
    rm.subtitle = sub_m;
    mirror_job mj = {.path = mirror ? (mpath = mirror_path(output)) : NULL,
                     .job = {mirror ? diff_view(d, true) : NULL, &rm, fmt, "diff"},
                     .err = FLAME_ERR_INIT};
    if (mirror && (!mpath || !mj.job.p)) {
        rc = flame_fail(&err, FLAME_EXIT_ERROR, "out of memory");
    } else {
        /* the two graphs are independent: render and write them on two threads */
        pthread_t th;
        bool threaded = mirror && pthread_create(&th, NULL, mirror_thread, &mj) == 0;
        rc = write_out(output, &job, &err);
        if (threaded)
            pthread_join(th, NULL);
        else if (mirror)
            mirror_thread(&mj);
        if (rc == 0 && mirror && mj.rc < 0) {
            err = mj.err;
            rc = -1;
        }
    }
    diff_free(d);
    if (rc < 0)
        return say_error(verb, &err);
    t[4] = now_s();
    print_timings(verb, "union", t);
    if (mirror)
        fprintf(stderr, "docker flame diff: wrote %s (widths: %s) and %s (widths: %s)\n", output,
                in[1].arg, mpath, in[0].arg);
    else
        fprintf(stderr, "docker flame diff: wrote %s\n", output);
    return FLAME_EXIT_OK;
}

/* ---- merge
 * --------------------------------------------------------------------------------------- */

int flame_cmd_merge(int argc, char **argv, const flame_profiler *prof)
{
    const char *verb = "merge";
    common_opts co = {.duration = 30};
    bool normalize = false;
    optind = 0;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "o:d:h", merge_opts_long, NULL)) != -1) {
        int r = common_opt(verb, c, &co);
        if (r < 0)
            return -r;
        if (r > 0)
            continue;
        switch (c) {
        case OPT_NORMALIZE_LONG:
            normalize = true;
            break;
        case 'h':
            fputs(merge_usage, stdout);
            return FLAME_EXIT_OK;
        default:
            return bad_option(verb, argc, argv);
        }
    }
    size_t n = (size_t)(argc - optind);
    if (n < 1)
        return cli_usage_error(verb, "no profiles to merge");
    if (!co.output)
        return cli_usage_error(verb, "-o OUT is required (all.svg, all.folded or all.json)");
    out_format fmt = co.fmt != FMT_NONE ? co.fmt : format_of_path(co.output);
    if (fmt == FMT_NONE)
        return cli_usage_error(verb,
                               "cannot tell the format of '%s' from its extension; use "
                               "--format svg|folded|speedscope",
                               co.output);
    _cleanup_free_ input *in = calloc(n, sizeof *in);
    _cleanup_free_ profile **ps = calloc(n, sizeof *ps);
    if (!in || !ps) {
        fputs("docker flame merge: out of memory\n", stderr);
        return FLAME_EXIT_ERROR;
    }
    for (size_t i = 0; i < n; i++)
        in[i].arg = argv[optind + (int)i];
    flame_err err = FLAME_ERR_INIT;
    double t[5] = {now_s()};
    int rc = load_inputs(in, n, prof, co.duration, &err);
    t[1] = now_s();
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = check_plain(&in[i], &err);
    if (rc < 0) {
        free_inputs(in, n);
        return say_error(verb, &err);
    }
    for (size_t i = 0; i < n; i++) {
        ps[i] = in[i].p;
        in[i].p = NULL;
    }
    profile *sum = NULL;
    if (diff_merge(ps, n, normalize, &sum, &err) < 0)
        return say_error(verb, &err);
    t[2] = t[3] = now_s();
    render_opts ro;
    apply_render_opts(&co, &ro);
    /* a merged SVG is meant to be read back (diff it later): always carry the data, however
     * big (the render default leaves out more than RENDER_EMBED_LIMIT bytes) */
    ro.embed_limit = 0;
    _cleanup_free_ char *title = NULL;
    if (!co.title && asprintf(&title, "Merged profile (%zu inputs%s)", n,
                              normalize ? ", each weighted the same" : "") >= 0)
        ro.title = title;
    out_job job = {sum, &ro, fmt, "merged"};
    rc = write_out(co.output, &job, &err);
    profile_free(sum);
    if (rc < 0)
        return say_error(verb, &err);
    t[4] = now_s();
    print_timings(verb, "sum", t);
    fprintf(stderr, "docker flame merge: wrote %s (%zu inputs)\n", co.output, n);
    return FLAME_EXIT_OK;
}

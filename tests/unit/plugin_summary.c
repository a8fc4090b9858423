/* plugin/out/jsonw.c and plugin/summary.c: the JSON writer's escaping (every byte a container can
 * put into a name), nesting, numbers; the profile and top summaries built from hand-made
 * sessions full of hostile names, read back with jansson and checked against
 * docs/summary.schema.json by tests/schema_check.py. */
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plugin/out/jsonw.h"
#include "plugin/summary.h"
#include "tests/unit/tap.h"

/* What fn writes, parsed by jansson (NULL when it is not JSON: the text is printed). */
static json_t *written(void (*fn)(jsonw *w, const void *arg), const void *arg, char **text)
{
    size_t len;
    char *buf = NULL;
    FILE *f = open_memstream(&buf, &len);
    jsonw w;
    jsonw_init(&w, f);
    fn(&w, arg);
    fclose(f);
    json_error_t je;
    json_t *j = json_loadb(buf, len, JSON_ALLOW_NUL, &je);
    if (!j)
        printf("# not JSON (%s): %s\n", je.text, buf);
    if (text)
        *text = buf;
    else
        free(buf);
    return j;
}

/* every byte 1..255, then NUL and more: as strn() gets a name with its length */
static char hostile[300];
static size_t hostile_len;

static void w_strings(jsonw *w, const void *arg)
{
    (void)arg;
    jsonw_object(w, NULL);
    jsonw_strn(w, "bytes", hostile, hostile_len);
    jsonw_str(w, "markup", "</script><!-- \"q\" \\ 'a' & \xe2\x80\xa8");
    jsonw_str(w, "ke\"y\n", "v");
    jsonw_str(w, "null", NULL);
    jsonw_strn(w, "overlong", "\xc0\xaf\xed\xa0\x80", 5);
    jsonw_end(w);
}

static void w_nesting(jsonw *w, const void *arg)
{
    (void)arg;
    jsonw_object(w, NULL);
    jsonw_array(w, "empty_array");
    jsonw_end(w);
    jsonw_object(w, "empty_object");
    jsonw_end(w);
    jsonw_array(w, "mixed");
    jsonw_int(w, NULL, INT64_MIN);
    jsonw_uint(w, NULL, 12345);
    jsonw_num(w, NULL, 0.777);
    jsonw_num(w, NULL, NAN);
    jsonw_num(w, NULL, -INFINITY);
    jsonw_bool(w, NULL, true);
    jsonw_null(w, NULL);
    jsonw_object(w, NULL);
    jsonw_array(w, "deep");
    jsonw_array(w, NULL);
    jsonw_end(w);
    jsonw_end(w);
    jsonw_end(w);
    jsonw_end(w);
    jsonw_end(w);
}

static void w_too_deep(jsonw *w, const void *arg)
{
    (void)arg;
    for (int i = 0; i < JSONW_MAX_DEPTH + 3; i++)
        jsonw_array(w, NULL);
    for (int i = 0; i < JSONW_MAX_DEPTH + 3; i++)
        jsonw_end(w);
}

static void test_writer(void)
{
    for (int c = 1; c < 256; c++)
        hostile[hostile_len++] = (char)c;
    hostile[hostile_len++] = 0;
    memcpy(hostile + hostile_len, "after-nul", 9);
    hostile_len += 9;

    json_t *j = written(w_strings, NULL, NULL);
    ok(j != NULL, "every byte value, markup, a quoted key: valid JSON");
    const char *s = json_string_value(json_object_get(j, "bytes"));
    size_t n = json_string_length(json_object_get(j, "bytes"));
    /* 1..127 come back as they were; 128..255 (invalid UTF-8 alone) as U+FFFD each */
    int same = s && n > 128 && !memcmp(s, hostile, 127);
    size_t fffd = 0;
    for (size_t i = 127; s && i + 2 < n; i++)
        if (!memcmp(s + i, "\xef\xbf\xbd", 3))
            fffd++, i += 2;
    ok(same && fffd == 128, "ASCII and controls exact, 128 invalid bytes -> 128 U+FFFD (%zu)",
       fffd);
    ok(s && n >= 10 && !memcmp(s + n - 10, "\0after-nul", 10), "a NUL inside a name survives");
    is_str(json_string_value(json_object_get(j, "markup")),
           "</script><!-- \"q\" \\ 'a' & \xe2\x80\xa8", "markup and U+2028 exact");
    ok(json_string_value(json_object_get(j, "ke\"y\n")) != NULL, "keys are escaped too");
    ok(json_is_null(json_object_get(j, "null")), "NULL string: null");
    is_str(json_string_value(json_object_get(j, "overlong")),
           "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd",
           "overlong '/' and a surrogate: U+FFFD per byte, never the character");
    json_decref(j);

    char *text = NULL;
    j = written(w_nesting, NULL, &text);
    ok(j != NULL, "nesting, empty containers, numbers: valid JSON");
    json_t *mixed = json_object_get(j, "mixed");
    ok(json_array_size(json_object_get(j, "empty_array")) == 0 &&
           json_object_size(json_object_get(j, "empty_object")) == 0,
       "empty array and object");
    ok(json_integer_value(json_array_get(mixed, 0)) == INT64_MIN, "int64 min");
    ok(json_integer_value(json_array_get(mixed, 1)) == 12345, "uint64");
    ok(strstr(text, "0.777,") != NULL, "0.777 stays 0.777 (15 digits)");
    ok(json_is_null(json_array_get(mixed, 3)) && json_is_null(json_array_get(mixed, 4)),
       "NaN and -inf: null");
    ok(json_is_true(json_array_get(mixed, 5)) && json_is_null(json_array_get(mixed, 6)),
       "true, null");
    ok(strstr(text, "\n  \"empty_array\": [],") != NULL, "two-space indentation, compact empties");
    free(text);
    json_decref(j);

    j = written(w_too_deep, NULL, &text);
    int depth = 0;
    for (json_t *a = j; json_is_array(a) && json_array_size(a) == 1; a = json_array_get(a, 0))
        depth++;
    ok(j != NULL && depth == JSONW_MAX_DEPTH - 1,
       "deeper than JSONW_MAX_DEPTH: left out, still valid JSON (%d levels)", depth);
    free(text);
    json_decref(j);
    text = NULL;
    FILE *f = open_memstream(&text, &(size_t){0});
    jsonw w;
    jsonw_init(&w, f);
    jsonw_uint(&w, NULL, UINT64_MAX);
    fclose(f);
    is_str(text, "18446744073709551615", "uint64 max exactly");
    free(text);
}

/* ---- the summaries ---- */

static profile *hostile_profile(void)
{
    profile *p = profile_new();
    const char *lines[] = {
        "worker-0;Work.run_[j];Work.step_[j] 70\n",
        "worker-0;Work.run_[j];</script>\"\\\x01\xff_[j] 20\n",
        "worker-0;Work.run_[j];Inl.x_[i] 9\n",
        "worker-0;vfs_read_[k] 1\n",
    };
    flame_err err = FLAME_ERR_INIT;
    for (size_t i = 0; i < sizeof lines / sizeof *lines; i++)
        profile_add_line(p, lines[i], strlen(lines[i]) - 1, &err);
    return p;
}

static void fill_session(run_target *s)
{
    memset(s, 0, sizeof *s);
    proto_init(&s->pr);
    s->arg = "we\"b\x01";
    snprintf(s->name, sizeof s->name, "web\xff<x>");
    snprintf(s->image, sizeof s->image, "img:\"1\"");
    s->target_id = "0123abcd";
    s->pr.prof = hostile_profile();
    s->pr.jvms = calloc(2, sizeof *s->pr.jvms);
    s->pr.njvms = 2;
    s->pr.jvms[0] = (ct_jvm){.pid = 1234,
                             .nspid = 1,
                             .attach = CT_ATTACH_AGENT,
                             .inject = CT_INJECTED_MOUNT,
                             .preserve_fp = true,
                             .attach_ms = 25};
    snprintf(s->pr.jvms[0].java_version, sizeof s->pr.jvms[0].java_version, "17\x1b[31m\xfe");
    s->pr.jvms[1] = (ct_jvm){.pid = 99, .nspid = 7, .attach = CT_ATTACH_NONE};
    snprintf(s->pr.jvms[1].reason, sizeof s->pr.jvms[1].reason, "attach refused: \"</x>\"\n");
    s->pr.jvms[1].refused = CT_MODE_BIT(CT_MODE_ALLOC) | CT_MODE_BIT(CT_MODE_LOCK);
    snprintf(s->pr.jvms[1].refused_why, sizeof s->pr.jvms[1].refused_why, "no agent \"x\"");
    s->pr.warnings[0] = strdup("perf: \xff\"lost\"\t\x7f");
    s->pr.nwarn = 1;
    s->pr.have_summary = true;
    s->pr.summary.jit_leaf_samples = 99;
    s->pr.summary.jit_leaf_named = 98;
    s->pr.summary.named_share = 98.0 / 99;
    snprintf(s->pr.summary.sampling, sizeof s->pr.summary.sampling, "cpu");
    snprintf(s->pr.summary.filter, sizeof s->pr.summary.filter, "bpf");
    s->pr.summary.timings_ms[CT_PH_TOTAL] = 5000;
    s->pr.summary.walks = 97;
    s->pr.summary.walk_tail = 3;
    s->pr.summary.walk_status[0] = 95; /* root */
    s->pr.summary.walk_status[1] = 2;  /* copy_end */
}

static char tmpdir[256];

/* The file's JSON; also checked against the schema when python3 is there. */
static json_t *load_checked(const char *path, const char *what)
{
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    ok(j != NULL, "%s summary is JSON%s%s", what, j ? "" : ": ", j ? "" : je.text);
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "command -v python3 >/dev/null && python3 tests/schema_check.py "
             "docs/summary.schema.json '%s'",
             path);
    ok(system(cmd) == 0, "%s summary is valid against docs/summary.schema.json", what);
    return j;
}

static void test_profile_summary(void)
{
    static run_target s;
    fill_session(&s);
    flame_opts o;
    opts_init(&o);
    run_result r = {.t = &s, .n = 1};
    r.tm = (run_times){.t0 = 100,
                       .ping = 100.01,
                       .inspect = 100.02,
                       .image = 100.03,
                       .create = 100.1,
                       .start = 100.3,
                       .streams_done = 106,
                       .removed = 106.1};
    s.t_first_p = 101.3;
    s.first_p_elapsed_ms = 1000;
    s.pr.prog.elapsed_ms = 5000;
    s.t_first_f = 105.5;
    char *paths[CT_MODE_COUNT][FMT_COUNT] = {{"out/web.svg", NULL, NULL, "out/w\"eb.pb.gz"}};
    paths[CT_MODE_ALLOC][FMT_FOLDED] = "out/web.alloc.folded";
    paths[CT_MODE_LOCK][FMT_SVG] = "out/web.lock.svg";
    sum_target t = {.s = &s, .paths = paths};
    sum_profile sp = {.o = &o, .r = &r, .started = 1700000000, .t_written = 106.2, .t = &t, .n = 1};
    char path[512];
    snprintf(path, sizeof path, "%s/profile.json", tmpdir);
    flame_err err = FLAME_ERR_INIT;
    ok(summary_write_profile(path, &sp, &err) == 0, "profile summary written %s", err.msg);
    json_t *j = load_checked(path, "profile");
    json_t *c = json_array_get(json_object_get(j, "containers"), 0);
    is_int(json_integer_value(json_object_get(j, "version")), 1, "version 1");
    is_str(json_string_value(json_object_get(j, "started")), "2023-11-14T22:13:20Z", "started");
    is_str(json_string_value(json_object_get(c, "name")), "web\xef\xbf\xbd<x>",
           "container name: invalid byte as U+FFFD, markup as is");
    is_str(json_string_value(json_object_get(c, "container")), "we\"b\x01", "quote and control");
    json_t *m = json_array_get(json_object_get(c, "top_methods"), 1);
    is_str(json_string_value(json_object_get(m, "name")), "</script>\"\\\x01\xef\xbf\xbd",
           "a hostile method name, its _[j] dropped");
    ok(json_real_value(json_object_get(m, "self_share")) == 0.2, "its share 20/100");
    m = json_array_get(json_object_get(c, "top_methods"), 0);
    is_str(json_string_value(json_object_get(m, "name")), "Work.step", "top method");
    is_int(json_array_size(json_object_get(c, "top_methods")), 3,
           "Java methods only (vfs_read_[k] is not one), inlined by name");
    json_t *jv = json_array_get(json_object_get(c, "jvms"), 0);
    is_str(json_string_value(json_object_get(jv, "java_version")), "17\x1b[31m\xef\xbf\xbd",
           "java version from the container: escaped, not cleaned");
    is_str(json_string_value(json_object_get(jv, "names_via")), "agent", "names via agent");
    is_int(json_integer_value(json_object_get(jv, "pid")), 1, "pid in the container");
    jv = json_array_get(json_object_get(c, "jvms"), 1);
    is_str(json_string_value(json_object_get(jv, "note")), "attach refused: \"</x>\"\n",
           "the JVM's note");
    ok(json_real_value(json_object_get(json_object_get(c, "jit"), "named_share")) > 0.98,
       "JIT named share");
    json_t *wk = json_object_get(c, "walk");
    ok(json_integer_value(json_object_get(wk, "walks")) == 97 &&
           json_integer_value(json_object_get(wk, "root")) == 95 &&
           json_integer_value(json_object_get(wk, "cut")) == 2 &&
           json_integer_value(json_object_get(wk, "tail")) == 3 &&
           json_integer_value(json_object_get(json_object_get(wk, "status"), "copy_end")) == 2 &&
           json_object_size(json_object_get(wk, "status")) == CT_WALK_NSTATUS,
       "walk: walks, root, cut, tail and every status");
    jv = json_array_get(json_object_get(c, "jvms"), 1);
    ok(json_array_size(json_object_get(jv, "refused")) == 2 &&
           !strcmp(json_string_value(json_array_get(json_object_get(jv, "refused"), 0)), "alloc") &&
           !strcmp(json_string_value(json_object_get(jv, "refused_why")), "no agent \"x\""),
       "a JVM's refused modes and why");
    ok(!json_object_get(json_array_get(json_object_get(c, "jvms"), 0), "refused"),
       "a JVM that refused nothing: no refused key");
    json_t *files = json_object_get(c, "files");
    ok(json_array_size(files) == 4 &&
           !strcmp(json_string_value(json_object_get(json_array_get(files, 1), "format")), "pprof"),
       "files: svg and pprof of cpu, the others not written, then alloc's and lock's");
    ok(!strcmp(json_string_value(json_object_get(json_array_get(files, 0), "mode")), "cpu") &&
           !strcmp(json_string_value(json_object_get(json_array_get(files, 2), "mode")), "alloc") &&
           !strcmp(json_string_value(json_object_get(json_array_get(files, 2), "path")),
                   "out/web.alloc.folded") &&
           !strcmp(json_string_value(json_object_get(json_array_get(files, 3), "mode")), "lock"),
       "files: every mode's, each with its mode");
    json_t *tm = json_object_get(j, "timings_ms");
    ok(json_number_value(json_object_get(tm, "recording")) == 5000 &&
           json_number_value(json_object_get(tm, "total")) == 6200,
       "timings: recording 5000 ms, total 6200 ms");
    json_decref(j);

    /* a failed container and a failed run */
    t = (sum_target){.s = &s, .error = "no JVM in container \"web\"\x01", .exit_code = 4};
    sp = (sum_profile){.o = &o,
                       .started = 1700000000,
                       .exit_code = 4,
                       .t = &t,
                       .n = 1,
                       .error = "engine unreachable"};
    ok(summary_write_profile(path, &sp, &err) == 0, "failed-run summary written");
    j = load_checked(path, "failed profile");
    c = json_array_get(json_object_get(j, "containers"), 0);
    ok(json_is_false(json_object_get(c, "ok")) &&
           json_integer_value(json_object_get(c, "exit_code")) == 4 &&
           json_array_size(json_object_get(c, "files")) == 0,
       "failed container: ok false, its exit code, no files");
    ok(json_object_size(json_object_get(j, "timings_ms")) == 0, "no timings when it never ran");
    json_decref(j);
    proto_clear(&s.pr);
}

static void test_top_summary(void)
{
    static run_target s;
    fill_session(&s);
    sum_top st = {.container = "web\x01\xff",
                  .pr = &s.pr,
                  .p = s.pr.prof,
                  .windows = 12,
                  .record = "rec.pb.gz",
                  .started = 1700000000,
                  .seconds = 12.3456,
                  .frequency = 99};
    char path[512];
    snprintf(path, sizeof path, "%s/top.json", tmpdir);
    flame_err err = FLAME_ERR_INIT;
    ok(summary_write_top(path, &st, &err) == 0, "top summary written");
    json_t *j = load_checked(path, "top");
    is_str(json_string_value(json_object_get(j, "kind")), "top", "kind top");
    is_str(json_string_value(
               json_object_get(json_array_get(json_object_get(j, "files"), 0), "format")),
           "pprof", "--record .pb.gz is pprof");
    ok(json_number_value(json_object_get(json_object_get(j, "timings_ms"), "total")) == 12346,
       "total ms rounded");
    is_str(json_string_value(json_object_get(j, "mode")), "cpu", "top: mode cpu by default");
    is_str(json_string_value(json_object_get(j, "unit")), "samples", "top cpu: unit samples");
    json_decref(j);
    /* top --mode alloc: its counts are bytes, and the summary says so (and its file's mode) */
    st.mode = CT_MODE_ALLOC;
    ok(summary_write_top(path, &st, &err) == 0, "top --mode alloc summary written");
    j = load_checked(path, "top");
    is_str(json_string_value(json_object_get(j, "mode")), "alloc", "top alloc: mode alloc");
    is_str(json_string_value(json_object_get(j, "unit")), "bytes", "top alloc: unit bytes");
    is_str(
        json_string_value(json_object_get(json_array_get(json_object_get(j, "files"), 0), "mode")),
        "alloc", "top alloc: --record's file has mode alloc");
    json_decref(j);
    st.mode = CT_MODE_LOCK;
    ok(summary_write_top(path, &st, &err) == 0, "top --mode lock summary written");
    j = load_checked(path, "top");
    is_str(json_string_value(json_object_get(j, "unit")), "ns", "top lock: unit ns");
    json_decref(j);
    snprintf(path, sizeof path, "%s/nodir/top.json", tmpdir);
    ok(summary_write_top(path, &st, &err) < 0 && strstr(err.msg, "--summary-json") &&
           strstr(err.msg, "nodir"),
       "an unwritable FILE: an error naming the option and the file: %s", err.msg);
    proto_clear(&s.pr);
}

int main(void)
{
    const char *t = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/flame-summary-XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(tmpdir)) {
        printf("Bail out! mkdtemp\n");
        return 1;
    }
    test_writer();
    test_profile_summary();
    test_top_summary();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
        printf("# could not remove %s\n", tmpdir);
    return tap_done();
}

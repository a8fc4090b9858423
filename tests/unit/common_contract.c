/* common/contract.c, both sides: every option of the sidecar's command line goes through
 * ct_argv_build (the plugin) and ct_argv_parse (the sidecar) unchanged, and every message of the
 * result stream through the contract's writers (the sidecar) and plugin/run/proto.c (the plugin).
 */
#include <stdlib.h>
#include <string.h>

#include "common/contract.h"
#include "plugin/run/proto.h"
#include "tests/unit/tap.h"

static int roundtrip(const ct_args *in, ct_args *out, flame_err *err)
{
    const char *argv[CT_ARGV_MAX];
    char buf[CT_ARGV_BUF];
    int argc = ct_argv_build(in, argv, CT_ARGV_MAX, buf, sizeof buf);
    if (argc < 0)
        return -2;
    return ct_argv_parse(argc, (char **)argv, out, err);
}

/* Is an argument "--name" or "--name=..." in argv[0..n)? */
static bool sent_opt(const char *const *argv, int n, const char *name)
{
    size_t l = strlen(name);
    for (int i = 0; i < n; i++)
        if (!strncmp(argv[i], "--", 2) && !strncmp(argv[i] + 2, name, l) &&
            (argv[i][2 + l] == 0 || argv[i][2 + l] == '='))
            return true;
    return false;
}

/* Each entry of the shared table of recording options, alone, for every recording verb: a value
 * that is not the default goes over and comes back the same; the default is not sent. Table-
 * driven, so that a new entry is tested without a line here. */
static void test_record_specs(void)
{
    size_t n = 0;
    while (n <= CT_RECORD_NSPECS && ct_record_specs[n].lng)
        n++;
    ok(n == CT_RECORD_NSPECS && !ct_record_specs[n].lng,
       "ct_record_specs: %d entries, then the empty one", CT_RECORD_NSPECS);
    const enum ct_verb verbs[] = {CT_RECORD, CT_TOP, CT_HOST};
    for (const arg_spec *s = ct_record_specs; s->lng; s++) {
        for (size_t v = 0; v < sizeof verbs / sizeof *verbs; v++) {
            ct_args a, b;
            ct_args_default(&a, verbs[v]);
            const char *argv[CT_ARGV_MAX];
            char buf[CT_ARGV_BUF];
            int argc = ct_argv_build(&a, argv, CT_ARGV_MAX, buf, sizeof buf);
            ok(argc > 0 && !sent_opt(argv, argc, s->lng), "--%s: its default is not sent (%s)",
               s->lng, ct_verb_name(verbs[v]));
            char *f = (char *)&a + s->off;
            size_t size = 0;
            switch (s->kind) {
            case ARG_FLAG:
                *(bool *)f = !*(bool *)f;
                size = sizeof(bool);
                break;
            case ARG_INT:
                *(int64_t *)f = (int64_t)s->hi;
                size = sizeof(int64_t);
                break;
            case ARG_NUM:
                *(double *)f = s->hi;
                size = sizeof(double);
                break;
            case ARG_DURATION:
                *(uint64_t *)f = (uint64_t)s->hi;
                size = sizeof(uint64_t);
                break;
            case ARG_CHOICE: {
                int last = 0;
                while (s->choices[last + 1])
                    last++;
                if (s->flags & ARG_LIST) { /* a set: the first and the last choice */
                    *(unsigned *)f = 1u | 1u << last;
                    size = sizeof(unsigned);
                    break;
                }
                *(int *)f = *(int *)f == last ? 0 : last;
                size = sizeof(int);
                break;
            }
            case ARG_STR:
                *(const char **)f = "x";
                break;
            }
            flame_err err = FLAME_ERR_INIT;
            argc = ct_argv_build(&a, argv, CT_ARGV_MAX, buf, sizeof buf);
            bool back = argc > 0 && sent_opt(argv, argc, s->lng) &&
                        ct_argv_parse(argc, (char **)argv, &b, &err) == 0;
            const char *g = (const char *)&b + s->off;
            back = back && (size ? !memcmp(f, g, size)
                                 : *(const char **)g && !strcmp(*(const char **)g, "x"));
            ok(back, "--%s: another value round-trips (%s)%s%s", s->lng, ct_verb_name(verbs[v]),
               err.msg[0] ? ": " : "", err.msg);
        }
    }
}

static bool same_args(const ct_args *a, const ct_args *b)
{
    if (a->verb != b->verb || a->pid != b->pid)
        return false;
    if (a->verb == CT_RESTORE)
        return true; /* restore carries nothing else */
    return (a->verb != CT_RECORD || a->duration_ms == b->duration_ms) &&
           (a->verb != CT_TOP || a->interval_ms == b->interval_ms) &&
           a->frequency == b->frequency && a->attach_timeout_ms == b->attach_timeout_ms &&
           a->no_inline == b->no_inline && a->signatures == b->signatures &&
           a->kernel == b->kernel && a->last_window == b->last_window && a->inject == b->inject &&
           a->sampling == b->sampling;
}

/* --mode: the set travels as one list; unknown names and the verbs' checks are one line. */
static void test_modes(void)
{
    flame_err err = FLAME_ERR_INIT;
    ct_args a, b;
    ct_args_default(&a, CT_RECORD);
    ok(ct_modes_of(&a) == CT_MODE_BIT(CT_MODE_CPU), "no --mode: cpu");
    a.modes = CT_MODE_BIT(CT_MODE_ALLOC) | CT_MODE_BIT(CT_MODE_LOCK);
    const char *argv[CT_ARGV_MAX];
    char buf[CT_ARGV_BUF];
    int argc = ct_argv_build(&a, argv, CT_ARGV_MAX, buf, sizeof buf);
    bool found = false;
    for (int i = 0; i < argc; i++)
        found |= !strcmp(argv[i], "--mode=alloc,lock");
    ok(found, "alloc and lock go over as --mode=alloc,lock");
    ok(ct_argv_parse(argc, (char **)argv, &b, &err) == 0 && b.modes == a.modes,
       "... and come back as the same set");
    char *bad[] = {"/flame-sidecar", "record", "--mode=cpu,heap", NULL};
    ok(ct_argv_parse(3, bad, &b, &err) < 0 && err.code == FLAME_EXIT_USAGE &&
           strstr(err.msg, "unknown value \"heap\"") && !strchr(err.msg, '\n'),
       "an unknown mode is one usage line: %s", err.msg);
    err = (flame_err)FLAME_ERR_INIT;
    a.modes = CT_MODE_BIT(CT_MODE_CPU) | CT_MODE_BIT(CT_MODE_WALL);
    ok(ct_modes_check(&a, CT_MODE_BIT(CT_MODE_CPU) | CT_MODE_BIT(CT_MODE_ALLOC), "docker flame top",
                      &err) < 0 &&
           err.code == FLAME_EXIT_USAGE && strstr(err.msg, "--mode wall: not supported by") &&
           strstr(err.msg, "cpu, alloc"),
       "a mode the verb does not support: %s", err.msg);
    a.modes = 0;
    ok(ct_modes_check(&a, CT_MODE_BIT(CT_MODE_CPU), "docker flame top", &err) == 0,
       "the default passes every verb's check");
    ok(ct_mode_parse("lock", 4) == CT_MODE_LOCK && ct_mode_parse("loc", 3) < 0 &&
           !strcmp(ct_mode(CT_MODE_ALLOC)->type1, "alloc_space") &&
           !strcmp(ct_mode(CT_MODE_LOCK)->unit1, "nanoseconds"),
       "mode names and pprof types");
    ok(ct_tag_valid('M'), "M is a tag");
}

int main(void)
{
    flame_err err = FLAME_ERR_INIT;
    ct_args a, b;
    test_modes();

    /* ---- the command line: every option, every verb ---- */
    for (int v = 0; v < CT_VERB_COUNT; v++) {
        ct_args_default(&a, (enum ct_verb)v);
        ok(roundtrip(&a, &b, &err) == 0 && same_args(&a, &b), "%s defaults round-trip",
           ct_verb_name((enum ct_verb)v));
    }
    const uint64_t durations[] = {0, 1, 500, 90000, 25ull * 3600 * 1000, CT_DURATION_MAX_MS};
    for (size_t i = 0; i < sizeof durations / sizeof *durations; i++) {
        ct_args_default(&a, CT_RECORD);
        a.duration_ms = durations[i];
        ok(roundtrip(&a, &b, &err) == 0 && b.duration_ms == durations[i],
           "record --duration %llu ms round-trips", (unsigned long long)durations[i]);
    }
    ct_args_default(&a, CT_RECORD);
    a.duration_ms = CT_DURATION_MAX_MS + 1;
    ok(roundtrip(&a, &b, &err) < 0 && err.code == FLAME_EXIT_USAGE,
       "a duration over the contract's limit is refused by the sidecar too");
    ct_args_default(&a, CT_RECORD);
    a.frequency = 4999;
    a.pid = 4194304;
    a.no_inline = true;
    a.signatures = true;
    a.kernel = true;
    a.last_window = true;
    a.attach_timeout_ms = 2500;
    for (int inj = 0; inj < CT_INJECT_COUNT; inj++) {
        a.inject = (enum ct_inject)inj;
        ok(roundtrip(&a, &b, &err) == 0 && same_args(&a, &b), "every option, --inject %s",
           ct_inject_name(a.inject));
    }
    for (int m = 0; m < CT_SAMPLING_COUNT; m++) {
        const char *argv[CT_ARGV_MAX];
        char abuf[CT_ARGV_BUF];
        a.sampling = m;
        int n = ct_argv_build(&a, argv, CT_ARGV_MAX, abuf, sizeof abuf);
        bool sent = false;
        for (int i = 0; i < n; i++)
            sent |= !strncmp(argv[i], "--sampling=", 11);
        ok(roundtrip(&a, &b, &err) == 0 && same_args(&a, &b) && sent == (m != CT_SAMPLING_AUTO),
           "--sampling %s round-trips (sent only when not auto: older sidecars run the default)",
           ct_sampling_name((enum ct_sampling)m));
    }
    test_record_specs();
    ct_args_default(&a, CT_TOP);
    a.interval_ms = CT_INTERVAL_MIN_MS;
    ok(roundtrip(&a, &b, &err) == 0 && b.interval_ms == CT_INTERVAL_MIN_MS, "top --interval");
    ct_args_default(&a, CT_RESTORE);
    a.pid = 12;
    ok(roundtrip(&a, &b, &err) == 0 && b.verb == CT_RESTORE && b.pid == 12, "restore --pid");
    /* the target's identity: record, top and restore carry it, host does not */
    static const char id[] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    for (int v = 0; v < CT_VERB_COUNT; v++) {
        ct_args_default(&a, (enum ct_verb)v);
        a.target = id;
        ok(roundtrip(&a, &b, &err) == 0 &&
               (v == CT_HOST ? b.target == NULL : b.target && !strcmp(b.target, id)),
           "%s --target round-trips (host: not sent)", ct_verb_name((enum ct_verb)v));
    }
    ct_args_default(&a, CT_HOST);
    a.attach_ids = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef:4194304,"
                   "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210:1";
    ok(roundtrip(&a, &b, &err) == 0 && b.attach_ids && !strcmp(b.attach_ids, a.attach_ids),
       "host --attach ID:PID,ID:PID round-trips");
    {
        char *bad[][4] = {
            {"/flame-sidecar", "record", "--duration=1w", NULL},
            {"/flame-sidecar", "record", "--frequency=0", NULL},
            {"/flame-sidecar", "explode", NULL, NULL},
            {"/flame-sidecar", "record", "web", NULL},
            {"/flame-sidecar", "record", "--inject=sideways", NULL},
            {"/flame-sidecar", "record", "--sampling=process", NULL},
            {"/flame-sidecar", "record", "--target=web", NULL},
            {"/flame-sidecar", "record",
             "--target=0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef", NULL},
            {"/flame-sidecar", "host",
             "--attach=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", NULL},
            {"/flame-sidecar", "host",
             "--attach=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef:"
             "12345678",
             NULL},
            {"/flame-sidecar", "host",
             "--attach=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef:1x", NULL},
            {"/flame-sidecar", "host", "--attach=../x:1", NULL}};
        for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
            int n = 0;
            while (n < 4 && bad[i][n])
                n++;
            err = (flame_err)FLAME_ERR_INIT;
            ok(ct_argv_parse(n, bad[i], &b, &err) < 0 && err.code == FLAME_EXIT_USAGE &&
                   !strchr(err.msg, '\n'),
               "refused in one line: %s %s (%s)", bad[i][1], bad[i][2] ? bad[i][2] : "", err.msg);
        }
    }

    /* ---- error codes: names, exit codes, and back ---- */
    for (int e = 0; e < CT_ERR_COUNT; e++) {
        const char *name = ct_error_name((enum ct_error)e);
        char line[256];
        ct_format_error(line, sizeof line, (enum ct_error)e, "create /tmp/perf.data: nope");
        enum ct_error back;
        const char *text;
        size_t tl;
        ct_error_split(line, strlen(line), &back, &text, &tl);
        ok(back == (enum ct_error)e && tl == strlen("create /tmp/perf.data: nope") &&
               !strncmp(text, "create /tmp/perf.data: nope", tl),
           "E %s round-trips, whatever its text starts with", name);
        ok(ct_error_exit((enum ct_error)e) > 0, "E %s has an exit code", name);
    }
    is_int(ct_error_exit(CT_ERR_NO_JVM), FLAME_EXIT_NO_JVM, "no_jvm -> 4");
    is_int(ct_error_exit(CT_ERR_ATTACH), FLAME_EXIT_ATTACH, "attach -> 5");
    is_int(ct_error_exit(CT_ERR_PERF_DENIED), FLAME_EXIT_PERF, "perf_denied -> 6");
    is_int(ct_error_exit(CT_ERR_ABORTED), FLAME_EXIT_INTERRUPTED, "aborted -> 130");
    ok(ct_error_parse("create", 6) == CT_ERR_INTERNAL, "an unknown code reads as internal");

    /* ---- payloads: written by the contract, read by the plugin ---- */
    char buf[8192];
    ct_jvm j = {.pid = 4242,
                .nspid = 1,
                .uid = 10001,
                .gid = 10001,
                .preserve_fp = true,
                .attach = CT_ATTACH_PERFMAP,
                .inject = CT_INJECTED_COPY,
                .attach_ms = 87};
    snprintf(j.cmdline, sizeof j.cmdline, "java \"-Dx=\\\\\" \x1b[31m Main\x01");
    snprintf(j.java_version, sizeof j.java_version, "17.0.15");
    snprintf(j.reason, sizeof j.reason, "agent load failed: \"quoted\"\nnext");
    ct_jvm j2;
    ok(ct_format_jvm(buf, sizeof buf, &j) > 0 && proto_read_jvm(buf, strlen(buf), &j2, &err) == 0,
       "J written and read");
    ok(j2.pid == j.pid && j2.nspid == j.nspid && j2.uid == j.uid && j2.gid == j.gid &&
           j2.preserve_fp && j2.attach == CT_ATTACH_PERFMAP && j2.inject == CT_INJECTED_COPY &&
           j2.attach_ms == 87,
       "J numbers and enums round-trip");
    is_str(j2.cmdline, j.cmdline, "J cmdline with quotes, backslashes, escapes round-trips");
    is_str(j2.reason, j.reason, "J reason round-trips");
    j.reason[0] = 0;
    ct_format_jvm(buf, sizeof buf, &j);
    ok(strstr(buf, "\"reason\":null") && proto_read_jvm(buf, strlen(buf), &j2, &err) == 0 &&
           j2.reason[0] == 0,
       "J without a reason: null");
    ok(!strstr(buf, "refused") && j2.refused == 0, "J: nothing refused, no refused key");
    j.refused = CT_MODE_BIT(CT_MODE_ALLOC) | CT_MODE_BIT(CT_MODE_LOCK);
    snprintf(j.refused_why, sizeof j.refused_why, "sampler \"held\"");
    ct_format_jvm(buf, sizeof buf, &j);
    ok(strstr(buf, "\"refused\":\"alloc,lock\"") &&
           proto_read_jvm(buf, strlen(buf), &j2, &err) == 0 && j2.refused == j.refused &&
           !strcmp(j2.refused_why, j.refused_why),
       "J refused modes and why round-trip");
    const char *cpu_too = "{\"pid\":1,\"refused\":\"cpu,alloc,heap\",\"refused_why\":\"x\"}";
    ok(proto_read_jvm(cpu_too, strlen(cpu_too), &j2, &err) == 0 &&
           j2.refused == CT_MODE_BIT(CT_MODE_ALLOC),
       "J refused: cpu and unknown names are not read as refused modes");
    char names[8];
    ct_modes_name(CT_MODE_BIT(CT_MODE_ALLOC) | CT_MODE_BIT(CT_MODE_LOCK), names, sizeof names);
    is_str(names, "alloc", "ct_modes_name: cut at a whole name");
    j.refused = 0;
    ok(ct_format_jvm(buf, 40, &j) < 0 && buf[0] == 0, "J too long for its buffer: nothing");

    ct_progress p = {.elapsed_ms = 1500, .duration_ms = 90000, .samples = 1ull << 40, .jvms = 3},
                p2;
    ok(ct_format_progress(buf, sizeof buf, &p) > 0 &&
           proto_read_progress(buf, strlen(buf), &p2, &err) == 0 && !memcmp(&p, &p2, sizeof p),
       "P round-trips");

    ct_summary s = {.samples = 981,
                    .folded_samples = 980,
                    .lost = 1,
                    .jit_leaf_samples = 977,
                    .jit_leaf_named = 970,
                    .named_share = 0.9928,
                    .map_lines = 1136,
                    .map_bytes = 68120,
                    .jvms = 2},
               s2;
    for (int ph = 0; ph < CT_PH_COUNT; ph++)
        s.timings_ms[ph] = (uint64_t)ph * 1000 + 7;
    snprintf(s.caps[CT_CAPS_SETUP], sizeof s.caps[0], "00000000002c00c0");
    snprintf(s.caps[CT_CAPS_OPEN], sizeof s.caps[0], "0000000000280000");
    snprintf(s.caps[CT_CAPS_RECORD], sizeof s.caps[0], "0000000000000000");
    snprintf(s.caps[CT_CAPS_PROCESS], sizeof s.caps[0], "0000000000000000");
    snprintf(s.sampling, sizeof s.sampling, "cpu");
    snprintf(s.filter, sizeof s.filter, "bpf");
    ok(ct_format_summary(buf, sizeof buf, &s) > 0 &&
           proto_read_summary(buf, strlen(buf), &s2, &err) == 0,
       "S written and read");
    ok(s2.samples == s.samples && s2.folded_samples == s.folded_samples && s2.lost == s.lost &&
           s2.jit_leaf_samples == s.jit_leaf_samples && s2.jit_leaf_named == s.jit_leaf_named &&
           s2.map_lines == s.map_lines && s2.map_bytes == s.map_bytes && s2.jvms == s.jvms &&
           s2.named_share > 0.9927 && s2.named_share < 0.9929,
       "S counts round-trip");
    ok(!memcmp(s.timings_ms, s2.timings_ms, sizeof s.timings_ms), "S timings round-trip");
    ok(!memcmp(s.caps, s2.caps, sizeof s.caps), "S caps round-trip");
    ok(!strcmp(s2.sampling, "cpu") && !strcmp(s2.filter, "bpf"),
       "S sampling and filter round-trip");
    ok(s2.walks == 0 && !strstr(buf, "\"walk\""), "S without walks: no walk object");
    s.walks = 970, s.walk_tail = 12;
    for (int k = 0; k < CT_WALK_NSTATUS; k++)
        s.walk_status[k] = k == 0 ? 950 : (uint64_t)k;
    ok(ct_format_summary(buf, sizeof buf, &s) > 0 &&
           proto_read_summary(buf, strlen(buf), &s2, &err) == 0 && s2.walks == 970 &&
           s2.walk_tail == 12 && !memcmp(s.walk_status, s2.walk_status, sizeof s.walk_status) &&
           ct_walk_cut(&s2) == 1 + 11,
       "S walk counts round-trip (every status by name; cut = copy_end + max_depth)");
    is_str(ct_walk_status_name(4), "break_compiled", "walk status names");
    is_str(ct_walk_status_name(CT_WALK_NSTATUS), "?", "past the last status");

    ct_window w = {3, 3000, 1000, 99, 98, 1, 0, 90, 89, 12, 123456789}, w2;
    ok(ct_format_window(buf, sizeof buf, &w) > 0 &&
           proto_read_window(buf, strlen(buf), &w2, &err) == 0 && !memcmp(&w, &w2, sizeof w),
       "T round-trips");

    /* ---- lines ---- */
    char line[64];
    ok(ct_line_format(line, sizeof line, CT_TAG_WARNING, "two\nlines\r") > 0 &&
           !strchr(line, '\n') && !strchr(line, '\r') && !strcmp(line, "W two?lines?"),
       "a payload never starts a second line (%s)", line);
    ok(ct_line_format(line, sizeof line, CT_TAG_DONE, NULL) == 1 && !strcmp(line, "D"), "D");
    enum ct_tag tag;
    const char *pl;
    size_t pn;
    ok(ct_line_split("F a;b 3", 7, &tag, &pl, &pn, &err) == 0 && tag == CT_TAG_FOLDED && pn == 5,
       "split F");
    ok(ct_line_split("Q x", 3, &tag, &pl, &pn, &err) < 0, "unknown tag refused");
    ok(ct_line_split("Fx", 2, &tag, &pl, &pn, &err) < 0, "tag without a space refused");

    /* ---- a whole stream through the plugin's parser ---- */
    proto pr;
    proto_init(&pr);
    char v[8];
    snprintf(v, sizeof v, "V %d", CT_VERSION);
    const char *stream[] = {v, NULL, NULL, "W careful", "F java;Main.main 5", NULL, "D"};
    char jl[8200], pl2[8200], sl[8200];
    ct_format_jvm(buf, sizeof buf, &j);
    snprintf(jl, sizeof jl, "J %s", buf);
    ct_format_progress(buf, sizeof buf, &p);
    snprintf(pl2, sizeof pl2, "P %s", buf);
    ct_format_summary(buf, sizeof buf, &s);
    snprintf(sl, sizeof sl, "S %s", buf);
    stream[1] = jl;
    stream[2] = pl2;
    stream[5] = sl;
    int bad = 0;
    for (size_t i = 0; i < sizeof stream / sizeof *stream; i++)
        bad += proto_line(&pr, stream[i], strlen(stream[i]), &err) < 0;
    ok(!bad && pr.done && pr.njvms == 1 && pr.progress && pr.have_summary && pr.nwarn == 1 &&
           pr.f_lines == 1 && pr.prog.samples == s.samples,
       "V J P W F S D: every message understood");
    proto_clear(&pr);
    proto_init(&pr);
    ok(proto_line(&pr, "V 1", 3, &err) < 0 && strstr(err.msg, "version"),
       "a sidecar of another protocol version is refused, naming the versions");
    proto_clear(&pr);
    return tap_done();
}

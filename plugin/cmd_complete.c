/* Shell completion, the verb (plugin/complete.h): plans from the words, adds what the engine and
 * the profile store hold, prints. A Tab must answer at once and print nothing but the protocol:
 * every engine request is capped (CMPL_ENGINE_MS), and every failure (no engine, no store)
 * leaves only the static candidates, never a message. */
#include <curl/curl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "plugin/complete.h"
#include "plugin/engine/engine.h"
#include "plugin/run/spec.h"
#include "plugin/stored.h"
#include "store/store.h"

/* The engine's answers, all of them: a local engine answers in milliseconds. */
#define CMPL_ENGINE_MS 1500
/* JVMs are found with GET /containers/{id}/top (ps on the engine's host, nothing is run in the
 * container): one request each, so only while there are few containers and time left. */
#define CMPL_TOP_MAX 16
#define CMPL_TOP_BUDGET_MS 1000

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Does a process of the container run `java`? */
static bool runs_java(engine *e, const char *id)
{
    json_t *top = NULL;
    flame_err err = FLAME_ERR_INIT;
    /* ps_args "-o pid,comm": the engine needs the PID column to keep the container's processes */
    if (engine_json(e, "GET", NULL, &top, NULL, &err, "/containers/%s/top?ps_args=-o%%20pid,comm",
                    id) < 0)
        return false;
    bool java = false;
    size_t i;
    json_t *row;
    json_array_foreach(json_object_get(top, "Processes"), i, row)
    {
        const char *comm = json_string_value(json_array_get(row, 1));
        java = java || (comm && !strcmp(comm, "java"));
    }
    json_decref(top);
    return java;
}

/* Running containers (not our sidecars), those running a JVM first. */
static void add_running(cmpl_plan *p)
{
    ep_globals g;
    ep_endpoint ep = {0};
    engine *e = NULL;
    json_t *list = NULL;
    flame_err err = FLAME_ERR_INIT;
    ep_globals_init(&g);
    int rc = ep_resolve(&g, &ep, &err);
    if (rc == 0 && (rc = engine_new(&ep, false, &e, &err)) == 0) {
        engine_limit_time(e, CMPL_ENGINE_MS);
        rc = engine_ping(e, &err);
    }
    ep_endpoint_clear(&ep);
    if (rc == 0)
        rc = engine_json(e, "GET", NULL, &list, NULL, &err, "/containers/json");
    size_t n = json_array_size(list);
    bool *jvm = rc == 0 && n ? calloc(n, sizeof *jvm) : NULL;
    const char **names = jvm ? calloc(n, sizeof *names) : NULL;
    const char **images = names ? calloc(n, sizeof *images) : NULL;
    if (!images)
        goto out;
    int64_t t0 = mono_ms();
    size_t i, matching = 0;
    json_t *c;
    json_array_foreach(list, i, c)
    {
        const char *name = json_string_value(json_array_get(json_object_get(c, "Names"), 0));
        json_t *labels = json_object_get(c, "Labels");
        if (!name || json_object_get(labels, SPEC_LABEL_SIDECAR))
            continue;
        name += name[0] == '/'; /* the API's "/web" is the CLI's "web" */
        if (strncmp(name, p->prefix, strlen(p->prefix)) || !cmpl_docker_name(name))
            continue;
        names[i] = name;
        images[i] = json_string_value(json_object_get(c, "Image"));
        matching++;
    }
    json_array_foreach(list, i, c)
    {
        const char *id = json_string_value(json_object_get(c, "Id"));
        if (names[i] && id && matching <= CMPL_TOP_MAX && mono_ms() - t0 < CMPL_TOP_BUDGET_MS)
            jvm[i] = runs_java(e, id);
    }
    char desc[320];
    for (int pass = 0; pass < 2; pass++)
        for (i = 0; i < n; i++)
            if (names[i] && jvm[i] == !pass) {
                snprintf(desc, sizeof desc, "%s%.250s", jvm[i] ? "JVM, " : "",
                         images[i] ? images[i] : "");
                cmpl_add(p, p->prefix, names[i], desc);
            }
out:
    free(jvm);
    free(names);
    free(images);
    json_decref(list);
    engine_free(e);
}

/* What the store holds, when it is a SQLite file that exists: opening a missing one would
 * create it, and a ClickHouse server is a network round trip a Tab should not wait for. */
static int open_existing_store(const cmpl_plan *p, store **s)
{
    const char *env = getenv("DOCKER_FLAME_STORE");
    const char *url = p->store_url ? p->store_url : env && *env ? env : NULL;
    _cleanup_free_ char *file = store_file_of(url);
    flame_err err = FLAME_ERR_INIT;
    if (!file || access(file, R_OK) < 0)
        return -1;
    return store_open_read(file, s, &err);
}

/* "2026-11-24T14:03:00Z": one shell word that when_parse reads back. */
static void utc_text(int64_t ms, char *buf, size_t cap)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* The stored ranges of one name ("web" or "web:7") spanning first..last. */
static void add_ranges(cmpl_plan *p, const char *name, int64_t first, int64_t last,
                       const char *desc)
{
    static const char *const ago[][2] = {{"-15m", "the last 15 minutes"}, {"-1h", "the last hour"}};
    char cand[300], a[32], b[32];
    for (size_t k = 0; k < 2; k++) {
        snprintf(cand, sizeof cand, "%.250s@%s", name, ago[k][0]);
        cmpl_add(p, p->prefix, cand, ago[k][1]);
    }
    /* all of it: whole seconds, the end rounded up so the last window is in */
    utc_text(first, a, sizeof a);
    utc_text(last + 999, b, sizeof b);
    snprintf(cand, sizeof cand, "%.200s@%s..%s", name, a, b);
    cmpl_add(p, p->prefix, cand, desc);
}

static void add_stored(cmpl_plan *p)
{
    store *s = NULL;
    store_listing l = {0};
    flame_err err = FLAME_ERR_INIT;
    if (open_existing_store(p, &s) < 0 || store_list(s, NULL, &l, &err) < 0)
        goto out;
    char name[300], desc[160], span[96];
    for (size_t i = 0; i < l.n; i++) {
        const store_entry *en = &l.e[i];
        /* a label a store holds is anyone's text (a shared or received store file): only a
         * name Docker could have given is offered, and the ranges made from it */
        if (!cmpl_docker_name(en->container_name))
            continue;
        /* one name may be stored by several hosts or ids, and be several JVMs: its span is
         * theirs together; each JVM of a name of several is offered as NAME:PID too */
        bool seen = false, several = false;
        int64_t first = en->first_ms, last = en->last_ms;
        for (size_t k = 0; k < l.n; k++) {
            if (strcmp(l.e[k].container_name, en->container_name))
                continue;
            seen = seen || k < i;
            several = several || l.e[k].jvm_pid != en->jvm_pid;
            first = l.e[k].first_ms < first ? l.e[k].first_ms : first;
            last = l.e[k].last_ms > last ? l.e[k].last_ms : last;
        }
        char jvm[300] = "";
        if (several && en->jvm_pid) {
            snprintf(jvm, sizeof jvm, "%.250s:%lld", en->container_name, (long long)en->jvm_pid);
            stored_range_text(en->first_ms, en->last_ms, span, sizeof span);
            snprintf(desc, sizeof desc, "its JVM %lld, stored %s", (long long)en->jvm_pid, span);
            if (p->sources & CMPL_SRC_STORED)
                cmpl_add(p, p->prefix, jvm, desc);
            if (p->sources & CMPL_SRC_STORED_AT) {
                snprintf(name, sizeof name, "%.290s@", jvm);
                cmpl_add(p, p->prefix, name, desc);
            }
            if ((p->sources & CMPL_SRC_STORED_RANGE) && !strcmp(jvm, p->range_name))
                add_ranges(p, jvm, en->first_ms, en->last_ms, desc);
        }
        if (seen)
            continue;
        stored_range_text(first, last, span, sizeof span);
        snprintf(desc, sizeof desc, "stored %s", span);
        if (p->sources & CMPL_SRC_STORED)
            cmpl_add(p, p->prefix, en->container_name, desc);
        if (p->sources & CMPL_SRC_STORED_AT) {
            snprintf(name, sizeof name, "%.250s@", en->container_name);
            cmpl_add(p, p->prefix, name, desc);
        }
        if ((p->sources & CMPL_SRC_STORED_RANGE) && !strcmp(en->container_name, p->range_name))
            add_ranges(p, p->range_name, first, last, desc);
    }
out:
    store_listing_free(&l);
    store_close(s);
}

int flame_cmd_complete(int argc, char **argv)
{
    bool nodesc = !strcmp(argv[0], "__completeNoDesc");
    char **words = argv + 1;
    int n = argc - 1;
    /* Docker CLI 23+ names the plugin first ("__complete flame WORDS..."); Debian's bash script
     * for CLI 20.10 passes the words after it only. */
    if (n >= 2 && !strcmp(words[0], "flame"))
        words++, n--;
    static cmpl_plan p; /* large (the candidates), zero */
    cmpl_plan_words(n, words, &p);
    if (p.sources & CMPL_SRC_RUNNING && curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK) {
        add_running(&p);
        curl_global_cleanup();
    }
    if (p.sources & (CMPL_SRC_STORED | CMPL_SRC_STORED_AT | CMPL_SRC_STORED_RANGE))
        add_stored(&p);
    if (p.files_if_empty && !p.n)
        p.directive = 0;
    /* only "NAME@" left: a range follows, no space after it */
    bool all_at = p.n > 0;
    for (size_t i = 0; i < p.n; i++)
        all_at = all_at && p.items[i].name[strlen(p.items[i].name) - 1] == '@';
    if (all_at)
        p.directive |= CMPL_NOSPACE;
    cmpl_print(&p, nodesc, stdout);
    cmpl_plan_free(&p);
    return 0;
}

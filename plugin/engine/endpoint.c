/* Docker endpoint resolution: global flags, DOCKER_* variables, the context store
 * ($DOCKER_CONFIG/contexts/meta/<sha256(name)>/meta.json) and TLS material. */
#include "plugin/engine/endpoint.h"

#include <jansson.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"

#define DEFAULT_HOST "unix:///var/run/docker.sock"

void ep_globals_init(ep_globals *g)
{
    memset(g, 0, sizeof *g);
    g->tls = g->tlsverify = -1;
}

/* jansson >= 2.9 provides json_auto_t (json_decref on scope exit). */

/* Does `arg` name the flag (short "-H" or long "--host")? Sets *val for "--host=x" / "-Hx". */
static bool flag_is(const char *arg, const char *shrt, const char *lng, const char **inline_val)
{
    *inline_val = NULL;
    size_t n = strlen(lng);
    if (strncmp(arg, lng, n) == 0 && (arg[n] == '\0' || arg[n] == '=')) {
        if (arg[n] == '=')
            *inline_val = arg + n + 1;
        return true;
    }
    if (shrt) {
        size_t s = strlen(shrt);
        if (strncmp(arg, shrt, s) == 0) {
            if (arg[s] == '\0')
                return true;
            if (arg[s] == '=') {
                *inline_val = arg + s + 1;
                return true;
            }
            *inline_val = arg + s; /* -Hunix:///x */
            return true;
        }
    }
    return false;
}

static int parse_bool(const char *v, const char *flag, int *out, flame_err *err)
{
    if (!v || !strcmp(v, "true") || !strcmp(v, "1"))
        *out = 1;
    else if (!strcmp(v, "false") || !strcmp(v, "0"))
        *out = 0;
    else
        return flame_fail(err, FLAME_EXIT_USAGE, "invalid value \"%s\" for %s: want true or false",
                          v, flag);
    return 0;
}

int ep_parse_globals(int argc, char **argv, ep_globals *g, int *next, flame_err *err)
{
    static const struct {
        const char *shrt, *lng;
        size_t off; /* offset of the const char * field; SIZE_MAX for booleans */
    } with_value[] = {
        {"-H", "--host", offsetof(ep_globals, host)},
        {"-c", "--context", offsetof(ep_globals, context)},
        {NULL, "--config", offsetof(ep_globals, config_dir)},
        {NULL, "--tlscacert", offsetof(ep_globals, tlscacert)},
        {NULL, "--tlscert", offsetof(ep_globals, tlscert)},
        {NULL, "--tlskey", offsetof(ep_globals, tlskey)},
        {"-l", "--log-level", offsetof(ep_globals, log_level)},
    };
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i], *v;
        if (a[0] != '-' || !strcmp(a, "-"))
            break;
        if (!strcmp(a, "--")) {
            i++;
            break;
        }
        bool done = false;
        for (size_t k = 0; k < sizeof with_value / sizeof *with_value && !done; k++) {
            /* "--tls" must not swallow "--tlscacert": the long form matches only exactly. */
            if (!flag_is(a, with_value[k].shrt, with_value[k].lng, &v))
                continue;
            if (!v) {
                if (i + 1 >= argc)
                    return flame_fail(err, FLAME_EXIT_USAGE, "flag needs an argument: %s", a);
                v = argv[++i];
            }
            *(const char **)((char *)g + with_value[k].off) = v;
            done = true;
        }
        if (done)
            continue;
        if (flag_is(a, NULL, "--tlsverify", &v)) {
            if (parse_bool(v, "--tlsverify", &g->tlsverify, err) < 0)
                return -1;
        } else if (flag_is(a, NULL, "--tls", &v)) {
            if (parse_bool(v, "--tls", &g->tls, err) < 0)
                return -1;
        } else if (!strcmp(a, "-D") || !strcmp(a, "--debug") || !strcmp(a, "--debug=true")) {
            g->debug = true;
        } else if (!strcmp(a, "--debug=false")) {
            g->debug = false;
        } else {
            return flame_fail(err, FLAME_EXIT_USAGE, "unknown global flag: %s", a);
        }
    }
    *next = i;
    return 0;
}

void ep_context_dir_name(const char *name, char out[65])
{
    unsigned char md[SHA256_DIGEST_LENGTH];
    SHA256((const unsigned char *)name, strlen(name), md);
    for (int i = 0; i < SHA256_DIGEST_LENGTH; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
}

static const char *env_nonempty(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

static char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xasprintf(const char *fmt, ...)
{
    va_list ap;
    char *s = NULL;
    va_start(ap, fmt);
    if (vasprintf(&s, fmt, ap) < 0)
        s = NULL;
    va_end(ap);
    return s;
}

/* docker's ParseHost: no scheme means tcp; tcp without port gets 2375 (2376 with TLS). */
static char *normalise_host(const char *h, bool tls)
{
    if (!strstr(h, "://"))
        return xasprintf("tcp://%s%s", h, strchr(h, ':') ? "" : (tls ? ":2376" : ":2375"));
    if (!strncmp(h, "tcp://", 6)) {
        const char *hp = h + 6;
        const char *colon = strrchr(hp, ':'), *bracket = strrchr(hp, ']');
        if (!colon || (bracket && colon < bracket))
            return xasprintf("%s%s", h, tls ? ":2376" : ":2375");
    }
    return strdup(h);
}

static char *file_if_exists(const char *dir, const char *name)
{
    char *p = xasprintf("%s/%s", dir, name);
    if (p && access(p, R_OK) != 0) {
        free(p);
        return NULL;
    }
    return p;
}

static int read_current_context(const char *config_dir, char **out, flame_err *err)
{
    _cleanup_free_ char *path = xasprintf("%s/config.json", config_dir);
    *out = NULL;
    if (!path)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    if (access(path, F_OK) != 0)
        return 0;
    json_error_t je;
    json_auto_t *cfg = json_load_file(path, 0, &je);
    if (!cfg)
        return flame_fail(err, FLAME_EXIT_ERROR, "%s: line %d: %s: fix or remove the file", path,
                          je.line, je.text);
    const char *cur = json_string_value(json_object_get(cfg, "currentContext"));
    if (cur && *cur)
        *out = strdup(cur);
    return 0;
}

static int resolve_context(const char *name, ep_endpoint *ep, flame_err *err)
{
    char hex[65];
    ep_context_dir_name(name, hex);
    _cleanup_free_ char *meta = xasprintf("%s/contexts/meta/%s/meta.json", ep->config_dir, hex);
    if (!meta)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    if (access(meta, F_OK) != 0)
        return flame_fail(err, FLAME_EXIT_ENGINE,
                          "context \"%s\" does not exist (see `docker context ls`)", name);
    json_error_t je;
    json_auto_t *m = json_load_file(meta, 0, &je);
    if (!m)
        return flame_fail(err, FLAME_EXIT_ENGINE, "context \"%s\": %s: %s", name, meta, je.text);
    json_t *dock = json_object_get(json_object_get(m, "Endpoints"), "docker");
    const char *host = json_string_value(json_object_get(dock, "Host"));
    if (!host || !*host)
        return flame_fail(err, FLAME_EXIT_ENGINE, "context \"%s\" has no docker endpoint", name);
    ep->tls_verify = !json_is_true(json_object_get(dock, "SkipTLSVerify"));
    _cleanup_free_ char *tlsdir = xasprintf("%s/contexts/tls/%s/docker", ep->config_dir, hex);
    if (!tlsdir)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    ep->ca = file_if_exists(tlsdir, "ca.pem");
    ep->cert = file_if_exists(tlsdir, "cert.pem");
    ep->key = file_if_exists(tlsdir, "key.pem");
    ep->tls = ep->ca || ep->cert || ep->key;
    if (!ep->tls)
        ep->tls_verify = false;
    ep->host = normalise_host(host, ep->tls);
    return 0;
}

int ep_resolve(const ep_globals *g, ep_endpoint *ep, flame_err *err)
{
    memset(ep, 0, sizeof *ep);
    if (g->config_dir)
        ep->config_dir = strdup(g->config_dir);
    else if (env_nonempty("DOCKER_CONFIG"))
        ep->config_dir = strdup(getenv("DOCKER_CONFIG"));
    else
        ep->config_dir = xasprintf("%s/.docker", env_nonempty("HOME") ? getenv("HOME") : "/root");
    if (!ep->config_dir)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");

    if (g->context && g->host)
        return flame_fail(err, FLAME_EXIT_USAGE,
                          "conflicting options: either specify --host or --context, not both");
    /* The docker CLI's order (cli/command/cli.go resolveContextName). */
    if (g->context)
        ep->context = strdup(g->context);
    else if (g->host || env_nonempty("DOCKER_HOST"))
        ep->context = strdup("default");
    else if (env_nonempty("DOCKER_CONTEXT"))
        ep->context = strdup(getenv("DOCKER_CONTEXT"));
    else if (read_current_context(ep->config_dir, &ep->context, err) < 0)
        return -1;
    if (!ep->context)
        ep->context = strdup("default");
    if (!ep->context)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");

    if (strcmp(ep->context, "default") != 0)
        return resolve_context(ep->context, ep, err);

    const char *host = g->host ? g->host : env_nonempty("DOCKER_HOST");
    ep->tls_verify =
        g->tlsverify >= 0 ? g->tlsverify == 1 : env_nonempty("DOCKER_TLS_VERIFY") != NULL;
    ep->tls = g->tls == 1 || ep->tls_verify;
    if (ep->tls) {
        const char *dir =
            env_nonempty("DOCKER_CERT_PATH") ? getenv("DOCKER_CERT_PATH") : ep->config_dir;
        ep->ca = g->tlscacert ? strdup(g->tlscacert) : file_if_exists(dir, "ca.pem");
        ep->cert = g->tlscert ? strdup(g->tlscert) : file_if_exists(dir, "cert.pem");
        ep->key = g->tlskey ? strdup(g->tlskey) : file_if_exists(dir, "key.pem");
    }
    ep->host = normalise_host(host ? host : DEFAULT_HOST, ep->tls);
    if (!ep->host)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    return 0;
}

void ep_endpoint_clear(ep_endpoint *ep)
{
    free(ep->context);
    free(ep->host);
    free(ep->config_dir);
    free(ep->ca);
    free(ep->cert);
    free(ep->key);
    memset(ep, 0, sizeof *ep);
}

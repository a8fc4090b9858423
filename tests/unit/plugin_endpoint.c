/* plugin/engine/endpoint.c: Docker's global flags and endpoint resolution against temp config dirs.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plugin/engine/endpoint.h"
#include "tests/unit/tap.h"

static char dir[] = "/tmp/plugin-ep-XXXXXX";

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

static void mkcontext(const char *name, const char *host, bool tls)
{
    char hex[65], p[512];
    ep_context_dir_name(name, hex);
    snprintf(p, sizeof p, "mkdir -p %s/contexts/meta/%s", dir, hex);
    if (system(p) != 0)
        abort();
    snprintf(p, sizeof p, "%s/contexts/meta/%s/meta.json", dir, hex);
    char j[512];
    snprintf(j, sizeof j,
             "{\"Name\":\"%s\",\"Metadata\":{},\"Endpoints\":{\"docker\":{\"Host\":\"%s\","
             "\"SkipTLSVerify\":false}}}",
             name, host);
    write_file(p, j);
    if (tls) {
        snprintf(p, sizeof p,
                 "mkdir -p %s/contexts/tls/%s/docker && touch %s/contexts/tls/%s/docker/ca.pem",
                 dir, hex, dir, hex);
        if (system(p) != 0)
            abort();
    }
}

static int resolve(char **argv, int argc, ep_endpoint *ep, flame_err *err)
{
    ep_globals g;
    ep_globals_init(&g);
    int next;
    if (ep_parse_globals(argc, argv, &g, &next, err) < 0)
        return -1;
    return ep_resolve(&g, ep, err);
}

int main(void)
{
    if (!mkdtemp(dir))
        return 1;
    unsetenv("DOCKER_HOST");
    unsetenv("DOCKER_CONTEXT");
    unsetenv("DOCKER_TLS_VERIFY");
    unsetenv("DOCKER_CERT_PATH");
    setenv("DOCKER_CONFIG", dir, 1);
    flame_err err = FLAME_ERR_INIT;
    ep_endpoint ep;

    /* sha256("default") is the well-known context store key */
    char hex[65];
    ep_context_dir_name("default", hex);
    is_str(hex, "37a8eec1ce19687d132fe29051dca629d164e2c4958ba141d5f4133a33f0688f",
           "context dir name is sha256(name)");

    /* flag parsing */
    {
        char *argv[] = {"docker-flame", "-H", "unix:///a.sock",
                        "--tlsverify",  "-D", "--log-level=warn",
                        "flame",        "web"};
        ep_globals g;
        ep_globals_init(&g);
        int next = 0;
        ok(ep_parse_globals(8, argv, &g, &next, &err) == 0, "globals parse");
        is_str(g.host, "unix:///a.sock", "-H value");
        is_int(g.tlsverify, 1, "--tlsverify");
        ok(g.debug, "-D");
        is_str(g.log_level, "warn", "--log-level=");
        is_int(next, 6, "stops at the plugin name");
    }
    {
        char *argv[] = {"docker-flame", "--host=tcp://h:1", "--context", "x", "--config",
                        "/c",           "--tls=false",      "flame"};
        ep_globals g;
        ep_globals_init(&g);
        int next = 0;
        ok(ep_parse_globals(8, argv, &g, &next, &err) == 0, "long forms parse");
        is_str(g.host, "tcp://h:1", "--host=");
        is_str(g.context, "x", "--context");
        is_str(g.config_dir, "/c", "--config");
        is_int(g.tls, 0, "--tls=false");
    }
    {
        char *argv[] = {"docker-flame", "-H"};
        ep_globals g;
        ep_globals_init(&g);
        int next;
        ok(ep_parse_globals(2, argv, &g, &next, &err) < 0 && err.code == FLAME_EXIT_USAGE,
           "-H without value is a usage error");
    }

    /* default endpoint */
    {
        char *argv[] = {"p", "flame"};
        ok(resolve(argv, 2, &ep, &err) == 0, "default resolves");
        is_str(ep.context, "default", "default context");
        is_str(ep.host, "unix:///var/run/docker.sock", "default socket");
        ok(!ep.tls, "no TLS by default");
        ep_endpoint_clear(&ep);
    }
    /* DOCKER_HOST, scheme-less host gets tcp:// and a port */
    {
        setenv("DOCKER_HOST", "10.0.0.1", 1);
        char *argv[] = {"p", "flame"};
        ok(resolve(argv, 2, &ep, &err) == 0, "DOCKER_HOST resolves");
        is_str(ep.host, "tcp://10.0.0.1:2375", "bare host -> tcp://host:2375");
        ep_endpoint_clear(&ep);
        setenv("DOCKER_TLS_VERIFY", "1", 1);
        ok(resolve(argv, 2, &ep, &err) == 0, "DOCKER_TLS_VERIFY resolves");
        ok(ep.tls && ep.tls_verify, "DOCKER_TLS_VERIFY turns on verified TLS");
        is_str(ep.host, "tcp://10.0.0.1:2376", "TLS default port 2376");
        ep_endpoint_clear(&ep);
        unsetenv("DOCKER_TLS_VERIFY");
    }
    /* -H beats DOCKER_HOST */
    {
        char *argv[] = {"p", "-H", "unix:///x.sock", "flame"};
        ok(resolve(argv, 4, &ep, &err) == 0 && !strcmp(ep.host, "unix:///x.sock"),
           "-H beats DOCKER_HOST");
        ep_endpoint_clear(&ep);
        unsetenv("DOCKER_HOST");
    }
    /* named contexts */
    mkcontext("second", "unix:///tmp/second.sock", false);
    mkcontext("secure", "tcp://example:2376", true);
    {
        char *argv[] = {"p", "--context", "second", "flame"};
        ok(resolve(argv, 4, &ep, &err) == 0, "--context resolves");
        is_str(ep.host, "unix:///tmp/second.sock", "context host from meta.json");
        is_str(ep.context, "second", "context name kept");
        ep_endpoint_clear(&ep);
    }
    {
        char *argv[] = {"p", "-c", "secure", "flame"};
        ok(resolve(argv, 4, &ep, &err) == 0, "TLS context resolves");
        ok(ep.tls && ep.tls_verify && ep.ca && strstr(ep.ca, "/docker/ca.pem"),
           "TLS material from contexts/tls/<hash>/docker");
        ep_endpoint_clear(&ep);
    }
    {
        setenv("DOCKER_CONTEXT", "second", 1);
        char *argv[] = {"p", "flame"};
        ok(resolve(argv, 2, &ep, &err) == 0 && !strcmp(ep.host, "unix:///tmp/second.sock"),
           "DOCKER_CONTEXT");
        ep_endpoint_clear(&ep);
        setenv("DOCKER_HOST", "unix:///h.sock", 1);
        ok(resolve(argv, 2, &ep, &err) == 0 && !strcmp(ep.host, "unix:///h.sock"),
           "DOCKER_HOST beats DOCKER_CONTEXT");
        ep_endpoint_clear(&ep);
        unsetenv("DOCKER_HOST");
        unsetenv("DOCKER_CONTEXT");
    }
    {
        char p[512];
        snprintf(p, sizeof p, "%s/config.json", dir);
        write_file(p, "{\"auths\":{},\"currentContext\":\"second\"}");
        char *argv[] = {"p", "flame"};
        ok(resolve(argv, 2, &ep, &err) == 0 && !strcmp(ep.context, "second"),
           "currentContext from config.json");
        ep_endpoint_clear(&ep);
        write_file(p, "{not json");
        ok(resolve(argv, 2, &ep, &err) < 0 && strstr(err.msg, "config.json"),
           "broken config.json is one clear error naming the file");
        ep_endpoint_clear(&ep);
        unlink(p);
    }
    {
        char *argv[] = {"p", "--context", "nope", "flame"};
        ok(resolve(argv, 4, &ep, &err) < 0 && strstr(err.msg, "\"nope\" does not exist") &&
               err.code == FLAME_EXIT_ENGINE,
           "unknown context: clear error, exit 125");
        ep_endpoint_clear(&ep);
    }
    {
        char *argv[] = {"p", "--context", "second", "-H", "unix:///a", "flame"};
        ok(resolve(argv, 6, &ep, &err) < 0 && strstr(err.msg, "conflicting") &&
               err.code == FLAME_EXIT_USAGE,
           "--context with -H conflicts (like docker)");
        ep_endpoint_clear(&ep);
    }
    {
        char *argv[] = {"p", "--config", "/nonexistent-cfg", "flame"};
        ok(resolve(argv, 4, &ep, &err) == 0 && !strcmp(ep.config_dir, "/nonexistent-cfg"),
           "--config overrides DOCKER_CONFIG");
        ep_endpoint_clear(&ep);
    }
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        return 1;
    return tap_done();
}

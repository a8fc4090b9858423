/* libFuzzer harness: the docker CLI's context files -> endpoint resolution
 * (plugin/engine/endpoint.h). Input: one options byte, then config.json, a NUL, meta.json of the
 * context "fuzz", a NUL, and Docker global flags (one per line) for ep_parse_globals. The files are
 * written into a private config dir each run (ep_resolve reads files, not buffers). */
#include "fuzz/fuzz.h"

#include <sys/stat.h>
#include <unistd.h>

#include "plugin/engine/endpoint.h"

static char dir[64], config[128], meta[320], tls[320];

#define NDIRS 7
static char dirs[NDIRS][256]; /* created, parents first */

static void teardown(void)
{
    unlink(config);
    unlink(meta);
    unlink(tls);
    for (int i = NDIRS - 1; i >= 0; i--)
        if (dirs[i][0])
            rmdir(dirs[i]);
}

static void setup(void)
{
    if (dir[0])
        return;
    /* The environment must not pick the endpoint for us. */
    unsetenv("DOCKER_HOST");
    unsetenv("DOCKER_CONTEXT");
    unsetenv("DOCKER_TLS_VERIFY");
    unsetenv("DOCKER_CERT_PATH");
    /* tmpfs when there is one: files are rewritten every run */
    snprintf(dir, sizeof dir, "%s/docker-flame-fuzz-XXXXXX",
             access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
    FUZZ_ASSERT(mkdtemp(dir));
    atexit(teardown);
    char hex[65];
    ep_context_dir_name("fuzz", hex);
    snprintf(dirs[0], sizeof dirs[0], "%s", dir);
    snprintf(config, sizeof config, "%s/config.json", dir);
    char p[200];
    snprintf(p, sizeof p, "%s/contexts", dir);
    mkdir(p, 0700);
    snprintf(dirs[1], sizeof dirs[1], "%s", p);
    snprintf(p, sizeof p, "%s/contexts/meta", dir);
    mkdir(p, 0700);
    snprintf(dirs[2], sizeof dirs[2], "%s", p);
    snprintf(p, sizeof p, "%s/contexts/meta/%s", dir, hex);
    mkdir(p, 0700);
    snprintf(dirs[3], sizeof dirs[3], "%s", p);
    snprintf(meta, sizeof meta, "%s/meta.json", p);
    snprintf(p, sizeof p, "%s/contexts/tls", dir);
    mkdir(p, 0700);
    snprintf(dirs[4], sizeof dirs[4], "%s", p);
    snprintf(p, sizeof p, "%s/contexts/tls/%s", dir, hex);
    mkdir(p, 0700);
    snprintf(dirs[5], sizeof dirs[5], "%s", p);
    snprintf(p, sizeof p, "%s/contexts/tls/%s/docker", dir, hex);
    mkdir(p, 0700);
    snprintf(dirs[6], sizeof dirs[6], "%s", p);
    snprintf(tls, sizeof tls, "%s/ca.pem", p);
}

static void put(const char *path, const uint8_t *data, size_t n)
{
    FILE *f = fopen(path, "we");
    FUZZ_ASSERT(f);
    if (n)
        FUZZ_ASSERT(fwrite(data, 1, n, f) == n);
    FUZZ_ASSERT(fclose(f) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    setup();
    uint8_t bits = data[0];
    data++, size--;
    const uint8_t *z1 = memchr(data, '\0', size);
    size_t n1 = z1 ? (size_t)(z1 - data) : size;
    const uint8_t *m = z1 ? z1 + 1 : data + size;
    size_t mlen = (size_t)(data + size - m);
    const uint8_t *z2 = memchr(m, '\0', mlen);
    size_t n2 = z2 ? (size_t)(z2 - m) : mlen;
    put(config, data, n1);
    put(meta, m, n2);
    if (bits & 2)
        put(tls, (const uint8_t *)"x", 1);
    else
        unlink(tls);

    ep_globals g;
    ep_globals_init(&g);
    char *args = NULL, *argv[34] = {"docker"};
    int argc = 1;
    if (z2) {
        size_t an = mlen - n2 - 1;
        args = fuzz_cstr(z2 + 1, an);
        for (char *s = args; argc < 33;) {
            argv[argc++] = s;
            char *nl = strchr(s, '\n');
            if (!nl)
                break;
            *nl = '\0';
            s = nl + 1;
        }
    }
    argv[argc] = NULL;
    flame_err err = FLAME_ERR_INIT;
    int next = 0;
    if (ep_parse_globals(argc, argv, &g, &next, &err) < 0)
        ep_globals_init(&g);
    else
        FUZZ_ASSERT(next >= 1 && next <= argc);
    g.config_dir = dir;
    if (bits & 1) {
        g.host = NULL;
        g.context = "fuzz";
    }
    ep_endpoint ep;
    if (ep_resolve(&g, &ep, &err) == 0) {
        FUZZ_ASSERT(ep.host && ep.context);
        FUZZ_ASSERT(strstr(ep.host, "://"));
    }
    ep_endpoint_clear(&ep);
    free(args);
    return 0;
}

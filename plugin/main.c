/* docker-flame: the Docker CLI plugin's entry point. Answers the CLI plugin protocol (metadata;
 * Docker's global flags before "flame"), sets up what every verb shares (signals, the CLI's
 * plugin socket, libcurl) and dispatches to the verb. The verbs live in plugin/cmd_*.c. */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "common/err.h"
#include "plugin/cli.h"
#include "plugin/cmd.h"
#include "plugin/complete.h"
#include "plugin/engine/endpoint.h"
#include "plugin/run/signals.h"
#include "plugin/usage.h"
#include "plugin/verbs.h"

#define URL "https://github.com/docker-flame/docker-flame"

static int print_metadata(void)
{
    /* The CLI calls this for `docker help`, `docker info` ...: answer without the engine. */
    printf("{\"SchemaVersion\":\"0.1.0\",\"Vendor\":\"docker-flame\",\"Version\":\"%s\","
           "\"ShortDescription\":\"Profile the JVMs in a container as a flame graph\","
           "\"URL\":\"%s\"}\n",
           FLAME_VERSION, URL);
    return 0;
}

/* `serve` again, its heap in 2 MB pages where the kernel gives them on request (transparent
 * huge pages "madvise", Debian's default): glibc's malloc asks for them when the tunable is set,
 * which can only be done before the process starts. A page fault costs ~15 us on the VMs this
 * runs on (64 MB touched: 250 ms in 4 KiB pages, 16-50 ms in 2 MB ones), and the first graph of a
 * day builds ~100 MB of tables in the server's threads: the tree's build 223 -> 60-100 ms with
 * the tunable, the same build without (docs/SERVE.md "Huge pages"). Nothing changes when the
 * user set the tunable (either way), when the kernel has no huge pages, or when the exec fails:
 * serve then runs as it is. */
static void serve_with_huge_pages(char **argv)
{
    const char *t = getenv("GLIBC_TUNABLES");
    /* setuid, setgid, file capabilities: glibc drops the tunable there, each run would exec */
    if ((t && strstr(t, "glibc.malloc.hugetlb")) || getauxval(AT_SECURE))
        return;
    char *v = NULL;
    if (asprintf(&v, "%s%sglibc.malloc.hugetlb=1", t ? t : "", t && *t ? ":" : "") < 0)
        return;
    char *old = t ? strdup(t) : NULL;
    if ((!t || old) && setenv("GLIBC_TUNABLES", v, 1) == 0) {
        execv("/proc/self/exe", argv);
        if (old)
            setenv("GLIBC_TUNABLES", old, 1);
        else
            unsetenv("GLIBC_TUNABLES");
    }
    free(old);
    free(v);
}

int main(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "docker-cli-plugin-metadata"))
        return print_metadata();
    /* Shell completion: Docker CLIs from 23 on run `docker-flame __complete flame WORDS...` for
     * Tab after `docker flame`, and Debian's bash script for CLI 20.10 runs
     * `docker-flame __completeNoDesc WORDS...` (plugin/complete.c, docs/COMPLETION.md). */
    if (argc >= 2 && (!strcmp(argv[1], "__complete") || !strcmp(argv[1], "__completeNoDesc")))
        return flame_cmd_complete(argc - 1, argv + 1);
    flame_err err = FLAME_ERR_INIT;
    ep_globals g;
    ep_globals_init(&g);
    int i;
    if (ep_parse_globals(argc, argv, &g, &i, &err) < 0)
        return cli_fail("", &err);
    /* `docker help flame` runs us as `docker-flame help flame`. */
    if (i < argc && !strcmp(argv[i], "help")) {
        flame_usage(stdout, flame_verbs, flame_nverbs);
        return 0;
    }
    if (i < argc && !strcmp(argv[i], "flame"))
        i++;
    int ac = argc - i;
    char **av = argv + i;
    if (ac == 0) {
        flame_usage(stderr, flame_verbs, flame_nverbs);
        return FLAME_EXIT_USAGE;
    }
    if (!strcmp(av[0], "serve"))
        serve_with_huge_pages(argv);
    if (sig_install(&err) < 0)
        return cli_fail("", &err);
    sig_plugin_socket_connect();
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        flame_fail(&err, FLAME_EXIT_ERROR, "cannot initialise libcurl");
        return cli_fail("", &err);
    }
    const flame_verb *v = flame_verb_find(av[0]);
    int rc = v ? v->run(&g, ac, av)
               /* the profile verb takes everything after "flame" */
               : flame_profile_verb.run(&g, ac + 1, av - 1);
    curl_global_cleanup();
    return rc;
}

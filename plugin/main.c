/* docker-flame: the Docker CLI plugin's entry point. Answers the CLI plugin protocol (metadata;
 * Docker's global flags before "flame"), sets up what every verb shares (signals, the CLI's
 * plugin socket, libcurl) and dispatches to the verb. The verbs live in plugin/cmd_*.c. */
#include <curl/curl.h>
#include <stdio.h>
#include <string.h>

#include "common/err.h"
#include "plugin/cli.h"
#include "plugin/cmd.h"
#include "plugin/endpoint.h"
#include "plugin/signals.h"

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

static int run_diff(const ep_globals *g, int argc, char **argv)
{
    return flame_cmd_with_profiler(g, flame_cmd_diff, argc, argv);
}
static int run_merge(const ep_globals *g, int argc, char **argv)
{
    return flame_cmd_with_profiler(g, flame_cmd_merge, argc, argv);
}
static int run_fold(const ep_globals *g, int argc, char **argv)
{
    (void)g;
    return flame_cmd_fold(argc, argv);
}
static int run_render(const ep_globals *g, int argc, char **argv)
{
    (void)g;
    return flame_cmd_render(argc, argv);
}

/* The verbs after "flame"; anything else is the profile verb's (options or containers). */
static const struct verb {
    const char *name;
    int (*run)(const ep_globals *g, int argc, char **argv);
} verbs[] = {
    {"fold", run_fold},           {"render", run_render},   {"diff", run_diff},
    {"merge", run_merge},         {"gc", flame_cmd_gc},     {"top", flame_cmd_top},
    {"show", flame_cmd_show},     {"ls", flame_cmd_ls},     {"prune", flame_cmd_prune},
    {"record", flame_cmd_record}, {"host", flame_cmd_host},
};

int main(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "docker-cli-plugin-metadata"))
        return print_metadata();
    flame_err err = FLAME_ERR_INIT;
    ep_globals g;
    ep_globals_init(&g);
    int i;
    if (ep_parse_globals(argc, argv, &g, &i, &err) < 0)
        return cli_fail("", &err);
    /* `docker help flame` runs us as `docker-flame help flame`. */
    if (i < argc && !strcmp(argv[i], "help")) {
        flame_usage(stdout);
        return 0;
    }
    if (i < argc && !strcmp(argv[i], "flame"))
        i++;
    int ac = argc - i;
    char **av = argv + i;
    if (ac == 0) {
        flame_usage(stderr);
        return FLAME_EXIT_USAGE;
    }
    if (sess_signals_install(&err) < 0)
        return cli_fail("", &err);
    sess_plugin_socket_connect();
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        flame_fail(&err, FLAME_EXIT_ERROR, "cannot initialise libcurl");
        return cli_fail("", &err);
    }
    int rc = -1;
    for (size_t v = 0; v < sizeof verbs / sizeof *verbs && rc < 0; v++)
        if (!strcmp(av[0], verbs[v].name))
            rc = verbs[v].run(&g, ac, av);
    if (rc < 0) /* the profile verb takes everything after "flame" */
        rc = flame_cmd_profile(&g, ac + 1, av - 1);
    curl_global_cleanup();
    return rc;
}

/* `docker flame serve`: the profile store in a browser. A small HTTP server on this machine
 * (127.0.0.1 by default) serves a page that draws the stored timeline and flame graphs, and an
 * API that computes them (plugin/web/); it reads the store and nothing else: no engine, no
 * Docker socket, nothing written. docs/SERVE.md. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "common/args.h"
#include "plugin/cli.h"
#include "plugin/cmd.h"
#include "plugin/inputs.h"
#include "plugin/out/output.h"
#include "plugin/run/signals.h"
#include "plugin/stored.h"
#include "plugin/web/web_api.h"
#include "plugin/web/web_cache.h"
#include "plugin/web/web_host.h"
#include "plugin/web/web_server.h"
#include "store/when.h"

static const char usage_head[] =
    "Usage:  docker flame serve [OPTIONS] [CONTAINER...] [--since TIME] [--until TIME]\n"
    "\n"
    "Look at the profile store in a browser: a timeline of every recorded container to drag a\n"
    "range on, its flame graph (zoom, search, a function table, callers and callees), a diff\n"
    "of two ranges or containers, the host's containers over time, and the exports `show`\n"
    "writes. Prints the URL to open (with a token: keep it to yourself) and serves until\n"
    "Ctrl-C. Read-only: the page records, stops and deletes nothing. CONTAINER, --since and\n"
    "--until choose the view the URL opens on (TIME as for `show`).\n"
    "\n"
    "Options:\n";

static const char usage_tail[] =
    "\n"
    "Examples:\n"
    "  docker flame serve\n"
    "  docker flame serve web --since 2h\n"
    "  docker flame serve web --mode wall     # opens on the wall-clock windows\n"
    "  docker flame serve --store clickhouse://ch:8123/flame --listen 127.0.0.1:8080\n"
    "  ssh -L 8080:127.0.0.1:8080 server   # then, on the server: docker flame serve --listen "
    "8080\n"
    "\n"
    "It listens on 127.0.0.1 only, unless --listen says otherwise; any other address is\n"
    "reachable by others and needs the token (plain HTTP: prefer an ssh tunnel).\n"
    "\n"
    "Exit status: 0 stopped by Ctrl-C, 1 error (cannot listen), 2 bad command line, 7 the\n"
    "store cannot be used.\n";

typedef struct serve_args {
    const char *store, *host, *listen, *allow, *since, *until;
    bool no_token, help;
    int mode; /* -1: not given (cpu) */
    args_operands in;
} serve_args;

#define F(field, T) ARG_FIELD(serve_args, field, T)
// clang-format off
static const arg_spec specs[] = {
    {.lng = "listen", .kind = ARG_STR, .off = F(listen, const char *), .meta = "ADDR:PORT",
     .help = "where to listen (default 127.0.0.1 on a free port; PORT alone:\n127.0.0.1:PORT)"},
    {.lng = "allow-host", .kind = ARG_STR, .off = F(allow, const char *), .meta = "NAMES",
     .help = "more names the browser may use for this server (comma-separated,\nNAME or "
     "NAME:PORT: a proxy, a tunnel's local port)"},
    {.lng = "no-token", .kind = ARG_FLAG, .off = F(no_token, bool),
     .help = "no token in the URL (only with a 127.0.0.1 or ::1 --listen)"},
    {.lng = "since", .kind = ARG_STR, .off = F(since, const char *), .meta = "TIME",
     .help = "the view opens on this range (default: the last hour)"},
    {.lng = "until", .kind = ARG_STR, .off = F(until, const char *), .meta = "TIME",
     .help = "end of that range (default: now)"},
    INPUTS_MODE_SPEC(F(mode, int), "the profile type the view opens on: cpu (default), wall,\n"
                     "offcpu, alloc or lock (the page offers the others stored)"),
    STORED_HOST_SPEC(F(host, const char *)),
    STORED_STORE_SPEC(F(store, const char *)),
    CLI_HELP_SPEC(F(help, bool)),
};
const args_verb cmd_serve_grammar = CLI_VERB("docker flame serve", specs, F(in, args_operands));
// clang-format on
#undef F

/* An export is the file `show` writes for the same range (plugin/stored.c). */
static int serve_export(void *ctx, const web_export *x, FILE *f, char **filename, flame_err *err)
{
    (void)ctx;
    graph_opts g = {.colors = x->palette};
    stored_job j;
    stored_job_init(&j, x->p, x->format, x->containers, (int)x->ncontainers, x->q, x->info, &g);
    if (out_write_to(f, &j.job, err) < 0)
        return -1;
    /* named as show names it: the type before the extension when it is not cpu */
    char ext[48];
    snprintf(ext, sizeof ext, "%s%s%s", x->q->type ? "." : "", x->q->type ? x->q->type : "",
             out_fmt_ext(x->format));
    *filename = stored_file_name("flame", x->containers, (int)x->ncontainers, x->q->since_ms, ext);
    return *filename ? 0 : flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
}

/* 32 random bytes as hex. */
static int make_token(char out[65], flame_err *err)
{
    unsigned char raw[32];
    if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "getrandom");
    for (size_t i = 0; i < sizeof raw; i++)
        snprintf(out + 2 * i, 3, "%02x", raw[i]);
    return 0;
}

/* The URL's query part for the view asked on the command line (&c=web&since=...), escaped. */
static void put_param(FILE *f, const char *key, const char *v)
{
    fprintf(f, "&%s=", key);
    for (const unsigned char *p = (const unsigned char *)v; *p; p++)
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            strchr("-._~:", *p))
            fputc(*p, f);
        else
            fprintf(f, "%%%02X", *p);
}

/* Split --allow-host's comma list in place. */
static size_t split_allow(char *s, const char **out, size_t cap)
{
    size_t n = 0;
    for (char *tok = strtok(s, ","); tok && n < cap; tok = strtok(NULL, ","))
        if (*tok)
            out[n++] = tok;
    return n;
}

int flame_cmd_serve(const ep_globals *g, int argc, char **argv)
{
    (void)g; /* the store, not the engine */
    const char *vname = "serve";
    serve_args a = {.mode = -1};
    flame_err err = FLAME_ERR_INIT;
    int done =
        cli_parse(vname, &cmd_serve_grammar, argc, argv, &a, &a.help, usage_head, usage_tail);
    if (done >= 0)
        return done;
    if (stored_hide_password(&a.store, &err) < 0)
        return cli_fail(vname, &err);
    char addr[64];
    int port = 0;
    if (web_host_parse_listen(a.listen ? a.listen : "127.0.0.1:0", addr, sizeof addr, &port, &err) <
        0)
        return cli_fail(vname, &err);
    bool loopback = web_host_is_loopback(addr);
    if (a.no_token && !loopback)
        return cli_usage_error(vname,
                               "--no-token only with a loopback --listen (127.0.0.1, "
                               "::1): anyone who reaches %s could read the store",
                               addr);
    /* the view: checked now, so a typo is an error here, not a page that says 400 */
    int64_t since, until;
    if ((a.since || a.until) &&
        stored_range(a.since, a.until, stored_now_ms(), 3600 * 1000, &since, &until, &err) < 0)
        return cli_usage_error(vname, "%s", err.msg);
    char *allow_buf = a.allow ? strdup(a.allow) : NULL;
    const char *allow[32];
    size_t nallow = allow_buf ? split_allow(allow_buf, allow, 32) : 0;

    char token[65] = "";
    web_cache *cache = NULL;
    web_server *srv = NULL;
    int rc = a.no_token ? 0 : make_token(token, &err);
    const char *env = getenv("DOCKER_FLAME_STORE");
    web_cache_opts co = {.store_url = a.store ? a.store : env && *env ? env : NULL};
    if (rc == 0)
        rc = web_cache_new(&co, &cache, &err);
    web_api api = {.cache = cache, .export_fn = serve_export};
    web_server_opts so = {.addr = addr,
                          .port = port,
                          .token = a.no_token ? NULL : token,
                          .allow = allow,
                          .nallow = nallow,
                          .api = &api,
                          .now_ms = stored_now_ms};
    if (rc == 0)
        rc = web_server_start(&so, &srv, &err);
    if (rc == 0) {
        bool v6 = strchr(addr, ':') != NULL;
        bool any = !strcmp(addr, "0.0.0.0") || !strcmp(addr, "::");
        char *url = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&url, &len);
        if (f) {
            fprintf(f, "http://%s%s%s:%d/?", v6 && !any ? "[" : "", any ? "127.0.0.1" : addr,
                    v6 && !any ? "]" : "", web_server_port(srv));
            if (!a.no_token)
                fprintf(f, "token=%s", token);
            for (int i = 0; i < a.in.n; i++)
                put_param(f, "c", a.in.v[i]);
            if (a.host)
                put_param(f, "host", a.host);
            if (a.since)
                put_param(f, "since", a.since);
            if (a.until)
                put_param(f, "until", a.until);
            if (a.mode > CT_MODE_CPU)
                put_param(f, "type", ct_mode_names[a.mode]);
            fclose(f);
        }
        if (!loopback)
            fprintf(stderr,
                    "docker flame serve: warning: listening on %s, not only on this machine: "
                    "anyone with the URL below can read the store, and plain HTTP shows it to "
                    "the network (an ssh tunnel to a 127.0.0.1 server does not)\n",
                    addr);
        /* the URL alone on stdout, for scripts; people read stderr's line */
        printf("%s\n", url ? url : "");
        fflush(stdout);
        fprintf(stderr, "docker flame serve: serving %s at the URL above (Ctrl-C stops it)\n",
                web_cache_store_name(cache));
        free(url);
        /* nothing to do until asked to stop: a signal, or the docker CLI closing its socket */
        while (!sig_interrupted()) {
            struct pollfd pf[2] = {{.fd = sig_wake_fd(), .events = POLLIN},
                                   {.fd = sig_plugin_sock_fd(), .events = POLLIN}};
            if (poll(pf, pf[1].fd >= 0 ? 2 : 1, -1) < 0 && errno != EINTR)
                break;
            sig_event_count(); /* notices a closed plugin socket */
            if (pf[0].revents)
                sig_drain_wake();
        }
        fprintf(stderr, "docker flame serve: stopped\n");
    }
    web_server_stop(srv);
    web_cache_free(cache);
    free(allow_buf);
    return rc < 0 ? cli_fail(vname, &err) : FLAME_EXIT_OK;
}

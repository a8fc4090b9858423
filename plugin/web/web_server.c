/* serve's HTTP server (plugin/web/web_server.h). libmicrohttpd parses HTTP; this file decides
 * who gets an answer and adds the headers every answer carries. The checks, in order: method,
 * Host, token, then the route. */
#include "plugin/web/web_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "plugin/web/web_assets.h"
#include "plugin/web/web_host.h"
#include "plugin/web/web_query.h"

struct web_server {
    web_server_opts o;
    char addr[INET6_ADDRSTRLEN + 2]; /* as a Host header names it: [::1] for IPv6 */
    char cookie[40];                 /* the token's cookie name: one per port (cookies are not) */
    int port;
    int fd;
    struct MHD_Daemon *d;
};

/* Every answer carries these: the page runs only its own script and style, fetches only from
 * here, is never framed, sends no Referer (the first URL has the token in it), and is not
 * cached (it shows a store that changes). */
static const char *const security_headers[][2] = {
    {"Content-Security-Policy",
     "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
     "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"},
    {"X-Content-Type-Options", "nosniff"},
    {"Referrer-Policy", "no-referrer"},
    {"Cross-Origin-Opener-Policy", "same-origin"},
    {"Cross-Origin-Resource-Policy", "same-origin"},
    {"X-Frame-Options", "DENY"},
    {"Cache-Control", "no-store"},
};

/* ---- answers ------------------------------------------------------------------------------ */

static enum MHD_Result send_resp(struct MHD_Connection *c, int status, const char *type, char *body,
                                 size_t len, bool owned, const char *const (*extra)[2],
                                 size_t nextra)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(
        len, body ? body : (char *)"",
        owned && body ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
    if (!r) {
        if (owned)
            free(body);
        return MHD_NO;
    }
    for (size_t i = 0; i < sizeof security_headers / sizeof *security_headers; i++)
        MHD_add_response_header(r, security_headers[i][0], security_headers[i][1]);
    if (type)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    for (size_t i = 0; i < nextra; i++)
        MHD_add_response_header(r, extra[i][0], extra[i][1]);
    enum MHD_Result ok = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    return ok;
}

static enum MHD_Result send_text(struct MHD_Connection *c, int status, const char *text)
{
    return send_resp(c, status, "text/plain; charset=utf-8", (char *)text, strlen(text), false,
                     NULL, 0);
}

/* ---- the token ---------------------------------------------------------------------------- */

static bool same_secret(const char *got, const char *want)
{
    if (!got)
        return false;
    size_t n = strlen(want), g = strlen(got);
    unsigned char d = (unsigned char)(g != n);
    /* every byte of want is looked at whatever got is: no early exit to time */
    for (size_t i = 0; i < n; i++)
        d |= (unsigned char)(want[i] ^ (i < g ? got[i] : 0));
    return d == 0;
}

static bool authorised(web_server *s, struct MHD_Connection *c)
{
    if (!s->o.token)
        return true;
    if (same_secret(MHD_lookup_connection_value(c, MHD_COOKIE_KIND, s->cookie), s->o.token))
        return true;
    const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    return auth && !strncmp(auth, "Bearer ", 7) && same_secret(auth + 7, s->o.token);
}

typedef struct rebuild {
    FILE *f;
    int n;
} rebuild;

static void put_escaped(FILE *f, const char *v)
{
    for (const unsigned char *p = (const unsigned char *)v; *p; p++)
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            strchr("-._~", *p))
            fputc(*p, f);
        else
            fprintf(f, "%%%02X", *p);
}

static enum MHD_Result add_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                               const char *value)
{
    (void)kind;
    rebuild *b = cls;
    if (!strcmp(key, "token"))
        return MHD_YES;
    fputc(b->n++ ? '&' : '?', b->f);
    put_escaped(b->f, key);
    if (value) {
        fputc('=', b->f);
        put_escaped(b->f, value);
    }
    return MHD_YES;
}

/* ?token=...: right, the cookie is set and the browser sent to the same URL without it (out of
 * the address bar and history); wrong, 401. */
static enum MHD_Result take_token(web_server *s, struct MHD_Connection *c, const char *url,
                                  const char *token)
{
    if (!s->o.token || !same_secret(token, s->o.token))
        return send_text(c, 401,
                         "docker flame serve: wrong token. Open the URL docker flame serve "
                         "printed.\n");
    char *loc = NULL, *cookie = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&loc, &n);
    if (!f)
        return MHD_NO;
    fputs(url, f);
    rebuild b = {f, 0};
    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, add_arg, &b);
    if (fclose(f) != 0 ||
        asprintf(&cookie, "%s=%s; HttpOnly; SameSite=Strict; Path=/", s->cookie, s->o.token) < 0) {
        free(loc);
        return MHD_NO;
    }
    const char *const extra[][2] = {{"Location", loc}, {"Set-Cookie", cookie}};
    enum MHD_Result rc =
        send_resp(c, 303, "text/plain; charset=utf-8", (char *)"", 0, false, extra, 2);
    free(loc);
    free(cookie);
    return rc;
}

/* ---- the API ------------------------------------------------------------------------------ */

typedef struct args {
    web_query *q;
    int64_t now;
    flame_err *err;
    int rc;
    int n;
} args;

static enum MHD_Result set_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                               const char *value)
{
    (void)kind;
    args *a = cls;
    if (a->rc < 0)
        return MHD_NO;
    if (++a->n > WEB_MAX_PAIRS) {
        a->rc = flame_fail(a->err, FLAME_EXIT_USAGE, "too many parameters");
        return MHD_NO;
    }
    a->rc = web_query_set(a->q, key, value ? value : "", a->now, a->err);
    return a->rc < 0 ? MHD_NO : MHD_YES;
}

static enum MHD_Result api(web_server *s, struct MHD_Connection *c, const char *endpoint)
{
    web_query q;
    flame_err err = FLAME_ERR_INIT;
    int64_t now = s->o.now_ms();
    web_query_init(&q);
    args a = {.q = &q, .now = now, .err = &err};
    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, set_arg, &a);
    web_resp r;
    if (a.rc < 0 || web_query_finish(&q, now, &err) < 0)
        web_api_error(&r, 400, err.msg);
    else
        web_api_handle(s->o.api, endpoint, &q, now, &r);
    char disp[200];
    const char *extra[2][2];
    size_t nextra = 0;
    if (r.filename) {
        snprintf(disp, sizeof disp, "attachment; filename=\"%s\"", r.filename);
        extra[nextra][0] = "Content-Disposition";
        extra[nextra++][1] = disp;
    }
    if (r.timing[0]) {
        extra[nextra][0] = "Server-Timing";
        extra[nextra++][1] = r.timing;
    }
    free(r.filename); /* out_safe_name's characters only: nothing to quote */
    return send_resp(c, r.status, r.type, r.body, r.len, true, (const char *const(*)[2])extra,
                     nextra);
}

/* ---- the handler -------------------------------------------------------------------------- */

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload_data,
                              size_t *upload_size, void **con_cls)
{
    (void)version, (void)upload_data, (void)upload_size, (void)con_cls;
    web_server *s = cls;
    if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
        const char *const extra[][2] = {{"Allow", "GET, HEAD"}};
        static const char msg[] = "docker flame serve is read-only: GET and HEAD only.\n";
        return send_resp(c, 405, "text/plain; charset=utf-8", (char *)msg, sizeof msg - 1, false,
                         extra, 1);
    }
    const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host");
    if (!web_host_ok(host, s->port, s->addr, s->o.allow, s->o.nallow))
        return send_text(c, 403,
                         "docker flame serve: this Host is not one the server answers to "
                         "(--allow-host adds one).\n");
    const char *token = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "token");
    if (token)
        return take_token(s, c, url, token);
    if (!authorised(s, c))
        return send_text(c, 401,
                         "docker flame serve: open the URL docker flame serve printed (it "
                         "carries the token).\n");
    if (strlen(url) > 256)
        return send_text(c, 414, "URL too long.\n");
    if (!strncmp(url, "/api/v1/", 8))
        return api(s, c, url + 8);
    const web_asset *as = web_assets_find(url);
    if (!as)
        return send_text(c, 404, "Not found.\n");
    return send_resp(c, 200, as->type, (char *)as->data, as->len, false, NULL, 0);
}

/* ---- start, stop -------------------------------------------------------------------------- */

static int listen_on(web_server *s, flame_err *err)
{
    struct sockaddr_storage ss = {0};
    socklen_t len;
    bool v6 = strchr(s->o.addr, ':') != NULL;
    if (v6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
        a->sin6_family = AF_INET6;
        a->sin6_port = htons((uint16_t)s->o.port);
        inet_pton(AF_INET6, s->o.addr, &a->sin6_addr);
        len = sizeof *a;
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)&ss;
        a->sin_family = AF_INET;
        a->sin_port = htons((uint16_t)s->o.port);
        inet_pton(AF_INET, s->o.addr, &a->sin_addr);
        len = sizeof *a;
    }
    s->fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    if (s->fd < 0)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "socket");
    setsockopt(s->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (v6)
        setsockopt(s->fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    if (bind(s->fd, (struct sockaddr *)&ss, len) < 0 || listen(s->fd, 32) < 0)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "cannot listen on %s%s%s:%d",
                                v6 ? "[" : "", s->o.addr, v6 ? "]" : "", s->o.port);
    len = sizeof ss;
    if (getsockname(s->fd, (struct sockaddr *)&ss, &len) < 0)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "getsockname");
    s->port =
        ntohs(v6 ? ((struct sockaddr_in6 *)&ss)->sin6_port : ((struct sockaddr_in *)&ss)->sin_port);
    return 0;
}

int web_server_start(const web_server_opts *o, web_server **out, flame_err *err)
{
    web_server *s = calloc(1, sizeof *s);
    if (!s)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    s->o = *o;
    s->fd = -1;
    if (!s->o.max_conns)
        s->o.max_conns = 8;
    bool v6 = strchr(o->addr, ':') != NULL;
    bool any = !strcmp(o->addr, "0.0.0.0") || !strcmp(o->addr, "::");
    /* the Host names a browser uses for this server besides the loopback ones */
    if (!any)
        snprintf(s->addr, sizeof s->addr, v6 ? "[%s]" : "%s", o->addr);
    if (listen_on(s, err) < 0) {
        web_server_stop(s);
        return -1;
    }
    snprintf(s->cookie, sizeof s->cookie, "docker_flame_%d", s->port);
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                     MHD_USE_POLL | (v6 ? MHD_USE_IPv6 : 0);
    s->d = MHD_start_daemon(flags, 0, NULL, NULL, handle, s, MHD_OPTION_LISTEN_SOCKET, s->fd,
                            MHD_OPTION_CONNECTION_LIMIT, (unsigned)s->o.max_conns,
                            MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)s->o.max_conns,
                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)60,
                            /* bounds the request line and headers: a longer URL is a 414 */
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)32768, MHD_OPTION_END);
    if (!s->d) {
        web_server_stop(s);
        return flame_fail(err, FLAME_EXIT_ERROR, "cannot start the HTTP server");
    }
    s->fd = -1; /* the daemon's now */
    *out = s;
    return 0;
}

int web_server_port(const web_server *s)
{
    return s->port;
}

void web_server_stop(web_server *s)
{
    if (!s)
        return;
    if (s->d)
        MHD_stop_daemon(s->d);
    if (s->fd >= 0)
        close(s->fd);
    free(s);
}

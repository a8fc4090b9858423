/* libcurl transport for the Engine API. One easy handle per request (requests run from several
 * threads: the attach streams run while the main thread sends kill/wait/remove). */
#include "plugin/engine/engine.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>

#include "common/cleanup.h"
#include "common/clock.h"

/* The newest API we speak, and the oldest we accept (PidMode container:<id>, Tmpfs, CapAdd). */
#define API_MAX_MINOR 43
#define API_MIN_MINOR 25
#define MAX_BODY (64u << 20)

enum transport { T_UNIX, T_TCP, T_DIAL };

struct engine {
    ep_endpoint ep; /* deep copy */
    enum transport t;
    char *sock_path;  /* T_UNIX */
    char *base_url;   /* "http://localhost" / "https://h:p" */
    char version[16]; /* "1.41" */
    bool debug;
    long limit_ms; /* engine_limit_time: cap on every request's connect and transfer, 0 = none */
    pthread_mutex_t lock; /* guards dial_pids */
    pid_t *dial_pids;
    size_t n_dial;
    int dial_listen; /* T_DIAL: private listening socket, -1 when none */
    char *dial_dir;
    pthread_t dial_thread;
    bool dial_thread_started;
};

static int dial_setup(engine *e, flame_err *err);

static char *dupnull(const char *s)
{
    return s ? strdup(s) : NULL;
}

int engine_new(const ep_endpoint *ep, bool debug, engine **out, flame_err *err)
{
    engine *e = calloc(1, sizeof *e);
    if (!e)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    pthread_mutex_init(&e->lock, NULL);
    e->dial_listen = -1;
    e->debug = debug;
    e->ep.context = dupnull(ep->context);
    e->ep.host = dupnull(ep->host);
    e->ep.config_dir = dupnull(ep->config_dir);
    e->ep.ca = dupnull(ep->ca);
    e->ep.cert = dupnull(ep->cert);
    e->ep.key = dupnull(ep->key);
    e->ep.tls = ep->tls;
    e->ep.tls_verify = ep->tls_verify;
    const char *h = ep->host;
    int rc = 0;
    const char *force = getenv("DOCKER_FLAME_DIAL_STDIO");
    if (force && *force && strcmp(force, "0") != 0) {
        /* Tests: reach any endpoint the way ssh:// ones go, through `docker system dial-stdio`. */
        e->t = T_DIAL;
        e->base_url = strdup("http://127.0.0.1");
    } else if (!strncmp(h, "unix://", 7)) {
        e->t = T_UNIX;
        e->sock_path = strdup(h + 7);
        e->base_url = strdup("http://localhost");
        if (!e->sock_path[0])
            rc = flame_fail(err, FLAME_EXIT_USAGE, "invalid host %s: no socket path", h);
    } else if (!strncmp(h, "tcp://", 6)) {
        e->t = T_TCP;
        const char *hp = h + 6;
        size_t n = strcspn(hp, "/");
        if (asprintf(&e->base_url, "%s://%.*s", ep->tls ? "https" : "http", (int)n, hp) < 0)
            e->base_url = NULL;
    } else {
        /* ssh://, npipe://, fd://...: let the docker CLI carry the bytes (dial-stdio). */
        e->t = T_DIAL;
        e->base_url = strdup("http://127.0.0.1"); /* never resolved: opensocket answers */
    }
    strcpy(e->version, "1.41");
    if (rc == 0 && !e->base_url)
        rc = flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    if (rc == 0 && e->t == T_DIAL)
        rc = dial_setup(e, err);
    if (rc < 0) {
        engine_free(e);
        return rc;
    }
    *out = e;
    return 0;
}

void engine_free(engine *e)
{
    if (!e)
        return;
    if (e->dial_listen >= 0) {
        /* shutdown() wakes the accept() in the dial thread; then it can be joined. */
        shutdown(e->dial_listen, SHUT_RDWR);
        if (e->dial_thread_started)
            pthread_join(e->dial_thread, NULL);
        close(e->dial_listen);
    }
    if (e->dial_dir) {
        unlink(e->sock_path);
        rmdir(e->dial_dir);
        free(e->dial_dir);
    }
    /* The dial-stdio helpers exit when curl closes their socket; reap them, bounded. */
    for (size_t i = 0; i < e->n_dial; i++) {
        int st;
        for (int k = 0; k < 50 && waitpid(e->dial_pids[i], &st, WNOHANG) == 0; k++) {
            if (k == 20)
                kill(e->dial_pids[i], SIGTERM);
            sleep_ms(20);
        }
        if (waitpid(e->dial_pids[i], &st, WNOHANG) == 0) {
            kill(e->dial_pids[i], SIGKILL);
            waitpid(e->dial_pids[i], &st, 0);
        }
    }
    free(e->dial_pids);
    ep_endpoint_clear(&e->ep);
    free(e->sock_path);
    free(e->base_url);
    pthread_mutex_destroy(&e->lock);
    free(e);
}

const char *engine_api_version(const engine *e)
{
    return e->version;
}
const char *engine_host(const engine *e)
{
    return e->ep.host;
}

char *engine_escape(const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = strlen(s);
    char *o = malloc(3 * n + 1), *p = o;
    if (!o)
        return NULL;
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
            strchr("-._~", *c)) {
            *p++ = (char)*c;
        } else {
            *p++ = '%';
            *p++ = hex[*c >> 4];
            *p++ = hex[*c & 15];
        }
    }
    *p = 0;
    return o;
}

/* ---- dial-stdio ----
 * curl connects to a private unix socket (0700 temp dir); each accepted connection becomes the
 * stdin/stdout of one `docker system dial-stdio`, which carries the bytes to the engine the way
 * the docker CLI reaches it (ssh://, ...). A socketpair handed to curl through OPENSOCKETFUNCTION
 * would be simpler, but libcurl 7.88 (Debian 12) calls connect() even when SOCKOPTFUNCTION says
 * CURL_SOCKOPT_ALREADY_CONNECTED (curl/curl#10626, fixed in 8.0). */

static void dial_spawn(engine *e, int fd)
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    /* dup2 clears FD_CLOEXEC on the child's 0 and 1; stderr stays ours for its diagnostics. */
    posix_spawn_file_actions_adddup2(&fa, fd, 0);
    posix_spawn_file_actions_adddup2(&fa, fd, 1);
    char *argv[10];
    int n = 0;
    argv[n++] = "docker";
    argv[n++] = "--config";
    argv[n++] = e->ep.config_dir;
    if (strcmp(e->ep.context, "default") != 0) {
        argv[n++] = "--context";
        argv[n++] = e->ep.context;
    } else {
        argv[n++] = "--host";
        argv[n++] = e->ep.host;
    }
    argv[n++] = "system";
    argv[n++] = "dial-stdio";
    argv[n] = NULL;
    pid_t pid;
    extern char **environ;
    int rc = posix_spawnp(&pid, "docker", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fd);
    if (rc != 0)
        return;
    pthread_mutex_lock(&e->lock);
    pid_t *np = realloc(e->dial_pids, (e->n_dial + 1) * sizeof *np);
    if (np) {
        e->dial_pids = np;
        e->dial_pids[e->n_dial++] = pid;
    }
    pthread_mutex_unlock(&e->lock);
}

static void *dial_accept_main(void *ud)
{
    engine *e = ud;
    for (;;) {
        int fd = accept4(e->dial_listen, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            return NULL; /* shut down by engine_free */
        }
        dial_spawn(e, fd);
    }
}

static int dial_setup(engine *e, flame_err *err)
{
    char tmpl[] = "/tmp/docker-flame-dial-XXXXXX";
    /* mkdtemp makes the directory 0700: nobody else can connect to our socket. */
    if (!mkdtemp(tmpl))
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "mkdtemp");
    e->dial_dir = strdup(tmpl);
    if (asprintf(&e->sock_path, "%s/engine.sock", tmpl) < 0) {
        e->sock_path = NULL;
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    }
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", e->sock_path);
    e->dial_listen = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (e->dial_listen < 0 || bind(e->dial_listen, (struct sockaddr *)&sa, sizeof sa) < 0 ||
        listen(e->dial_listen, 16) < 0)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "dial-stdio socket");
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int rc = pthread_create(&e->dial_thread, NULL, dial_accept_main, e);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, rc, "thread");
    e->dial_thread_started = true;
    return 0;
}

/* ---- requests ---- */

typedef struct xfer {
    const engine_req *rq;
    char *buf; /* buffered body (on_data == NULL), or the error body */
    size_t len, cap;
    bool opened;
    long status;
    CURL *h;
    flame_err cb_err;
    bool cb_failed;
} xfer;

static void xfer_status(xfer *x)
{
    if (!x->opened) {
        curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &x->status);
        x->opened = true;
        if (x->rq->on_open && x->status < 400)
            x->rq->on_open(x->rq->ctx, x->status);
    }
}

static size_t on_header(char *b, size_t sz, size_t n, void *ud)
{
    xfer *x = ud;
    /* The blank line ends the headers: the status is final now (no 100-continue confusion). */
    if (sz * n <= 2 && (b[0] == '\r' || b[0] == '\n')) {
        long st = 0;
        curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &st);
        if (st >= 200)
            xfer_status(x);
    }
    return sz * n;
}

static size_t on_body(char *b, size_t sz, size_t n, void *ud)
{
    xfer *x = ud;
    size_t len = sz * n;
    xfer_status(x);
    if (x->rq->on_data && x->status < 400) {
        if (x->rq->on_data(x->rq->ctx, b, len, &x->cb_err) < 0) {
            x->cb_failed = true;
            return 0; /* CURLE_WRITE_ERROR */
        }
        return len;
    }
    if (x->len + len > MAX_BODY)
        return 0;
    if (x->len + len + 1 > x->cap) {
        size_t nc = (x->len + len + 1) * 2;
        char *nb = realloc(x->buf, nc);
        if (!nb)
            return 0;
        x->buf = nb;
        x->cap = nc;
    }
    memcpy(x->buf + x->len, b, len);
    x->len += len;
    x->buf[x->len] = 0;
    return len;
}

static int on_progress(void *ud, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
    (void)a, (void)b, (void)c, (void)d;
    xfer *x = ud;
    return x->rq->cancel && *x->rq->cancel ? 1 : 0;
}

static size_t on_read(char *b, size_t sz, size_t n, void *ud)
{
    return fread(b, 1, sz * n, (FILE *)ud);
}

static int connect_error(engine *e, CURLcode cc, long oserr, flame_err *err)
{
    const char *h = e->ep.host;
    if (oserr == EACCES || oserr == EPERM)
        return flame_fail(err, FLAME_EXIT_ENGINE,
                          "permission denied while trying to connect to the Docker daemon at %s: "
                          "run with sudo or add your user to the docker group",
                          h);
    if (cc == CURLE_COULDNT_CONNECT || cc == CURLE_COULDNT_RESOLVE_HOST ||
        cc == CURLE_OPERATION_TIMEDOUT || cc == CURLE_GOT_NOTHING || cc == CURLE_RECV_ERROR ||
        cc == CURLE_SEND_ERROR)
        return flame_fail(err, FLAME_EXIT_ENGINE,
                          "cannot connect to the Docker daemon at %s (context \"%s\"): is the "
                          "daemon running? (%s)",
                          h, e->ep.context, oserr ? strerror((int)oserr) : curl_easy_strerror(cc));
    if (cc == CURLE_SSL_CONNECT_ERROR || cc == CURLE_PEER_FAILED_VERIFICATION ||
        cc == CURLE_SSL_CERTPROBLEM || cc == CURLE_SSL_CACERT_BADFILE)
        return flame_fail(err, FLAME_EXIT_ENGINE,
                          "TLS handshake with the Docker daemon at %s failed (%s): check "
                          "--tlscacert/--tlscert/--tlskey or DOCKER_CERT_PATH",
                          h, curl_easy_strerror(cc));
    return flame_fail(err, FLAME_EXIT_ENGINE, "talking to the Docker daemon at %s: %s", h,
                      curl_easy_strerror(cc));
}

static void set_transport(engine *e, CURL *h)
{
    switch (e->t) {
    case T_UNIX:
        curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, e->sock_path);
        break;
    case T_TCP:
        if (e->ep.tls) {
            if (e->ep.ca)
                curl_easy_setopt(h, CURLOPT_CAINFO, e->ep.ca);
            if (e->ep.cert)
                curl_easy_setopt(h, CURLOPT_SSLCERT, e->ep.cert);
            if (e->ep.key)
                curl_easy_setopt(h, CURLOPT_SSLKEY, e->ep.key);
            curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, e->ep.tls_verify ? 1L : 0L);
            curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, e->ep.tls_verify ? 2L : 0L);
        }
        break;
    case T_DIAL:
        curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, e->sock_path);
        break;
    }
}

static int do_request(engine *e, const engine_req *rq, bool versioned, long *status, json_t **resp,
                      struct curl_slist **extra_headers_out, char **api_version_out, flame_err *err)
{
    (void)extra_headers_out;
    CURL *h = curl_easy_init();
    if (!h)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    xfer x = {.rq = rq, .h = h};
    _cleanup_free_ char *url = NULL, *body = NULL;
    struct curl_slist *hdrs = NULL;
    int rc = 0;
    if (asprintf(&url, "%s%s%s%s", e->base_url, versioned ? "/v" : "", versioned ? e->version : "",
                 rq->path) < 0) {
        url = NULL;
        rc = flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
        goto out;
    }
    set_transport(e, h);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, rq->method);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    if (getenv("DOCKER_FLAME_CURL_VERBOSE"))
        curl_easy_setopt(h, CURLOPT_VERBOSE, 1L);
    long connect_ms = 10000L, timeout_ms = rq->timeout_ms;
    if (e->limit_ms) {
        connect_ms = connect_ms < e->limit_ms ? connect_ms : e->limit_ms;
        timeout_ms = timeout_ms && timeout_ms < e->limit_ms ? timeout_ms : e->limit_ms;
    }
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, connect_ms);
    if (timeout_ms)
        curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, &x);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &x);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, &x);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "docker-flame/" FLAME_VERSION);
    hdrs = curl_slist_append(hdrs, "Expect:"); /* no 100-continue round trip */
    if (rq->body) {
        body = json_dumps(rq->body, JSON_COMPACT);
        if (!body) {
            rc = flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
            goto out;
        }
        hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    } else if (rq->upload) {
        char ct[128];
        snprintf(ct, sizeof ct, "Content-Type: %s",
                 rq->content_type ? rq->content_type : "application/octet-stream");
        hdrs = curl_slist_append(hdrs, ct);
        hdrs = curl_slist_append(hdrs, "Transfer-Encoding: chunked");
        curl_easy_setopt(h, CURLOPT_POST, 1L);
        curl_easy_setopt(h, CURLOPT_READFUNCTION, on_read);
        curl_easy_setopt(h, CURLOPT_READDATA, rq->upload);
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, rq->method);
    } else if (!strcmp(rq->method, "POST")) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, "");
    }
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    if (e->debug)
        fprintf(stderr, "docker-flame: debug: %s %s\n", rq->method, url);

    CURLcode cc = curl_easy_perform(h);
    if (!x.opened)
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &x.status);
    if (status)
        *status = x.status;
    if (x.cb_failed) {
        if (err)
            *err = x.cb_err;
        rc = -1;
        goto out;
    }
    if (cc == CURLE_ABORTED_BY_CALLBACK) {
        rc = flame_fail(err, FLAME_EXIT_INTERRUPTED, "interrupted");
        goto out;
    }
    if (cc != CURLE_OK &&
        !(x.status > 0 && (cc == CURLE_PARTIAL_FILE || cc == CURLE_RECV_ERROR) && rq->on_data)) {
        long oserr = 0;
        curl_easy_getinfo(h, CURLINFO_OS_ERRNO, &oserr);
        if (x.status == 0 || cc == CURLE_OPERATION_TIMEDOUT) {
            rc = connect_error(e, cc, oserr, err);
            goto out;
        }
        if (cc != CURLE_WRITE_ERROR) {
            rc = flame_fail(err, FLAME_EXIT_ENGINE, "reading the engine's answer: %s",
                            curl_easy_strerror(cc));
            goto out;
        }
    }
    if (api_version_out) {
        struct curl_header *hv;
        if (curl_easy_header(h, "Api-Version", 0, CURLH_HEADER, -1, &hv) == CURLHE_OK)
            *api_version_out = strdup(hv->value);
    }
    if (x.status >= 400) {
        json_t *j = x.buf ? json_loads(x.buf, 0, NULL) : NULL;
        const char *m = json_string_value(json_object_get(j, "message"));
        char text[512];
        snprintf(text, sizeof text, "%s", m ? m : (x.buf ? x.buf : "no message"));
        text[strcspn(text, "\r\n")] = 0;
        rc = flame_fail(err, FLAME_EXIT_ENGINE, "%s (HTTP %ld)", text, x.status);
        json_decref(j);
        goto out;
    }
    if (resp) {
        *resp = NULL;
        if (!rq->on_data && x.len)
            *resp = json_loads(x.buf, JSON_DECODE_ANY, NULL);
    }
out:
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(h);
    free(x.buf);
    return rc;
}

int engine_do(engine *e, const engine_req *rq, long *status, json_t **resp, flame_err *err)
{
    return do_request(e, rq, true, status, resp, NULL, NULL, err);
}

int engine_open(const ep_globals *g, engine **e, flame_err *err)
{
    ep_endpoint ep;
    int rc = ep_resolve(g, &ep, err);
    if (rc == 0)
        rc = engine_new(&ep, g->debug, e, err);
    ep_endpoint_clear(&ep);
    if (rc == 0 && (rc = engine_ping(*e, err)) < 0) {
        engine_free(*e);
        *e = NULL;
    }
    return rc;
}

void engine_limit_time(engine *e, long ms)
{
    e->limit_ms = ms;
}

int engine_ping(engine *e, flame_err *err)
{
    engine_req rq = {.method = "GET", .path = "/_ping", .timeout_ms = 15000};
    _cleanup_free_ char *ver = NULL;
    long st = 0;
    if (do_request(e, &rq, false, &st, NULL, NULL, &ver, err) < 0)
        return -1;
    int maj = 0, min = 0;
    if (!ver || sscanf(ver, "%d.%d", &maj, &min) != 2) {
        /* Engines before 1.25 do not send Api-Version; docker falls back to 1.24 and so would
         * we, but nothing we need exists there. */
        return flame_fail(err, FLAME_EXIT_ENGINE,
                          "the Docker daemon at %s did not report an API version: engine too old "
                          "(need API >= 1.%d)",
                          e->ep.host, API_MIN_MINOR);
    }
    if (maj != 1 || min < API_MIN_MINOR)
        return flame_fail(err, FLAME_EXIT_ENGINE,
                          "the Docker daemon at %s speaks API %d.%d; docker-flame needs >= 1.%d",
                          e->ep.host, maj, min, API_MIN_MINOR);
    snprintf(e->version, sizeof e->version, "1.%d", min < API_MAX_MINOR ? min : API_MAX_MINOR);
    return 0;
}

int engine_json(engine *e, const char *method, json_t *body, json_t **resp, long *status,
                flame_err *err, const char *pathfmt, ...)
{
    char path[2048];
    va_list ap;
    va_start(ap, pathfmt);
    vsnprintf(path, sizeof path, pathfmt, ap);
    va_end(ap);
    engine_req rq = {.method = method, .path = path, .body = body, .timeout_ms = 60000};
    long st = 0;
    int rc = engine_do(e, &rq, &st, resp, err);
    if (status)
        *status = st;
    return rc;
}

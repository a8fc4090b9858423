/* libFuzzer harness: answers of a Docker engine -> the plugin's Engine API client
 * (plugin/engine/engine.h): version negotiation (engine_ping, the Api-Version header), buffered
 * JSON answers and error messages (engine_json), and a streamed body (the attach stream) through
 * demux and the protocol parser. A fake engine on a private unix socket (a thread of this
 * process) sends the input as its HTTP answer to every request.
 * Input: one options byte, the Api-Version value up to '\n', then the body. */
#include "fuzz/fuzz.h"

#include <curl/curl.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "plugin/engine/demux.h"
#include "plugin/engine/engine.h"
#include "plugin/run/proto.h"

static char sock_path[108];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char *answer;
static size_t answer_len;

static void *serve(void *arg)
{
    int ls = (int)(intptr_t)arg;
    for (;;) {
        int c = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0)
            continue;
        /* Bounded: a request that never ends must not hang the harness. */
        struct timeval tv = {2, 0};
        setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        char req[16384];
        size_t n = 0;
        while (n < sizeof req - 1) {
            ssize_t r = read(c, req + n, sizeof req - 1 - n);
            if (r <= 0)
                break;
            n += (size_t)r;
            req[n] = '\0';
            if (strstr(req, "\r\n\r\n"))
                break;
        }
        pthread_mutex_lock(&lock);
        for (size_t off = 0; off < answer_len;) {
            ssize_t w = send(c, answer + off, answer_len - off, MSG_NOSIGNAL);
            if (w <= 0)
                break;
            off += (size_t)w;
        }
        pthread_mutex_unlock(&lock);
        shutdown(c, SHUT_WR);
        /* let the client read everything before the close */
        while (read(c, req, sizeof req) > 0)
            ;
        close(c);
    }
    return NULL;
}

static void cleanup(void)
{
    unlink(sock_path);
}

static void setup(void)
{
    if (sock_path[0])
        return;
    curl_global_init(CURL_GLOBAL_ALL);
    snprintf(sock_path, sizeof sock_path, "%s/docker-flame-fuzz-engine-%d.sock",
             access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp", (int)getpid());
    unlink(sock_path);
    int ls = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    FUZZ_ASSERT(ls >= 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", sock_path);
    FUZZ_ASSERT(bind(ls, (struct sockaddr *)&sa, sizeof sa) == 0);
    FUZZ_ASSERT(listen(ls, 16) == 0);
    atexit(cleanup);
    pthread_t t;
    FUZZ_ASSERT(pthread_create(&t, NULL, serve, (void *)(intptr_t)ls) == 0);
    pthread_detach(t);
}

typedef struct stream_ctx {
    demux d;
    proto pr;
    bool failed;
} stream_ctx;

static int on_line(void *ud, int stream, const char *line, size_t len, flame_err *err)
{
    stream_ctx *s = ud;
    if (stream == 1 && !s->failed && proto_line(&s->pr, line, len, err) < 0)
        s->failed = true;
    return 0;
}

static int on_data(void *ud, const char *buf, size_t len, flame_err *err)
{
    stream_ctx *s = ud;
    return demux_feed(&s->d, buf, len, err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 65536)
        return 0;
    setup();
    static const int statuses[] = {200, 404, 500, 409};
    uint8_t bits = data[0];
    data++, size--;
    const uint8_t *nl = memchr(data, '\n', size);
    size_t vl = nl ? (size_t)(nl - data) : 0;
    const uint8_t *body = nl ? nl + 1 : data;
    size_t body_len = (size_t)(data + size - body);
    char version[64];
    snprintf(version, sizeof version, "%.*s", (int)(vl < 63 ? vl : 63), (const char *)data);
    version[strcspn(version, "\r\n")] = '\0';

    pthread_mutex_lock(&lock);
    free(answer);
    answer = NULL;
    answer_len = 0;
    FILE *m = open_memstream(&answer, &answer_len);
    FUZZ_ASSERT(m);
    fprintf(m, "HTTP/1.1 %d Fuzz\r\n", statuses[bits & 3]);
    fprintf(m, "Content-Type: %s\r\n",
            (bits & 8) ? "application/vnd.docker.raw-stream" : "application/json");
    if (bits & 4)
        fprintf(m, "Api-Version: %s\r\n", version);
    if (!(bits & 16))
        fprintf(m, "Content-Length: %zu\r\n", body_len);
    fprintf(m, "Connection: close\r\n\r\n");
    if (body_len)
        fwrite(body, 1, body_len, m);
    fclose(m);
    pthread_mutex_unlock(&lock);

    char host[160];
    snprintf(host, sizeof host, "unix://%s", sock_path);
    ep_endpoint ep = {.context = "default", .host = host};
    engine *e = NULL;
    flame_err err = FLAME_ERR_INIT;
    FUZZ_ASSERT(engine_new(&ep, false, &e, &err) == 0);
    if (bits & 32) {
        if (engine_ping(e, &err) == 0) {
            const char *v = engine_api_version(e);
            FUZZ_ASSERT(v && !strncmp(v, "1.", 2) && strlen(v) < 16);
        }
    }
    if (bits & 8) {
        stream_ctx s = {.failed = false};
        proto_init(&s.pr);
        demux_init(&s.d, DEMUX_MAX_LINE, on_line, &s);
        engine_req rq = {.method = "POST",
                         .path = "/containers/x/attach?stream=1&stdout=1",
                         .on_data = on_data,
                         .ctx = &s,
                         .timeout_ms = 5000};
        long st = 0;
        if (engine_do(e, &rq, &st, NULL, &err) == 0)
            (void)demux_finish(&s.d, &err);
        demux_free(&s.d);
        proto_clear(&s.pr);
    } else {
        json_t *resp = NULL;
        long st = 0;
        int rc = engine_json(e, "GET", NULL, &resp, &st, &err, "/containers/%s/json", "x");
        if (rc < 0) {
            FUZZ_ASSERT(err.msg[0]);
            FUZZ_ASSERT(!strchr(err.msg, '\n') && !strchr(err.msg, '\r'));
        }
        json_decref(resp);
    }
    engine_free(e);
    return 0;
}

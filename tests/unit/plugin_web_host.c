/* plugin/web/web_host.c: which Host headers the server answers (DNS rebinding:
 * a page of another site that resolves its name to 127.0.0.1 sends its own name), --listen's
 * forms, which addresses are loopback. The HTTP behaviour is tested with curl
 * (tests/e2e/serve-security.t). */
#include <string.h>

#include "plugin/web/web_host.h"
#include "tests/unit/tap.h"

static void test_host(void)
{
    const char *none[] = {NULL};
    struct {
        const char *h;
        int want;
    } cases[] = {
        {"127.0.0.1:8080", 1},
        {"localhost:8080", 1},
        {"LOCALHOST:8080", 1},
        {"[::1]:8080", 1},
        {"127.0.0.1:8081", 0}, /* another port: another server */
        {"127.0.0.1", 0},      /* no port means 80 */
        {"evil.example:8080", 0},
        {"evil.example", 0},
        {"localhost.evil.example:8080", 0},
        {"127.0.0.1.nip.io:8080", 0},
        {"localhost.:8080", 0},
        {"", 0},
        {":8080", 0},
        {"127.0.0.1:", 0},
        {"127.0.0.1:80a", 0},
        {"[::1]", 0},
        {"[::1:8080", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        is_int(web_host_ok(cases[i].h, 8080, "", none, 0), cases[i].want, "Host: %s", cases[i].h);
    ok(!web_host_ok(NULL, 8080, "", none, 0), "no Host");
    ok(web_host_ok("10.0.0.5:8080", 8080, "10.0.0.5", none, 0),
       "the address listened on, with its port");
    ok(!web_host_ok("10.0.0.6:8080", 8080, "10.0.0.5", none, 0), "not another one");
    const char *allow[] = {"flame.internal", "localhost:9000", "[fd00::1]:443"};
    ok(web_host_ok("flame.internal:8080", 8080, "", allow, 3), "an allowed name, any port");
    ok(web_host_ok("FLAME.internal", 8080, "", allow, 3), "any case, no port");
    ok(web_host_ok("localhost:9000", 8080, "", allow, 3),
       "an allowed name:port (an ssh tunnel's local port)");
    ok(!web_host_ok("localhost:9001", 8080, "", allow, 3), "not at another port");
    ok(web_host_ok("[fd00::1]:443", 8080, "", allow, 3), "an allowed [v6]:port");
    ok(!web_host_ok("flame.internal.evil:8080", 8080, "", allow, 3), "no suffix games");
}

static void test_listen(void)
{
    char addr[64];
    int port;
    flame_err err = FLAME_ERR_INIT;
    ok(web_host_parse_listen("127.0.0.1:8080", addr, sizeof addr, &port, &err) == 0 &&
           !strcmp(addr, "127.0.0.1") && port == 8080,
       "ADDR:PORT");
    ok(web_host_parse_listen("8080", addr, sizeof addr, &port, &err) == 0 &&
           !strcmp(addr, "127.0.0.1") && port == 8080,
       "PORT alone: loopback");
    ok(web_host_parse_listen(":0", addr, sizeof addr, &port, &err) == 0 &&
           !strcmp(addr, "127.0.0.1") && port == 0,
       ":PORT");
    ok(web_host_parse_listen("[::1]:7", addr, sizeof addr, &port, &err) == 0 &&
           !strcmp(addr, "::1") && port == 7,
       "[v6]:PORT");
    ok(web_host_parse_listen("::1", addr, sizeof addr, &port, &err) == 0 && !strcmp(addr, "::1") &&
           port == 0,
       "a bare v6 address");
    ok(web_host_parse_listen("localhost:5", addr, sizeof addr, &port, &err) == 0 &&
           !strcmp(addr, "127.0.0.1"),
       "localhost is 127.0.0.1");
    ok(web_host_parse_listen("0.0.0.0:8080", addr, sizeof addr, &port, &err) == 0 &&
           !strcmp(addr, "0.0.0.0"),
       "every interface, when asked");
    const char *bad[] = {"example.com:80", "127.0.0.1:65536", "127.0.0.1:x", "[::1",
                         "[::1]x",         "1.2.3:80",        "127.0.0.1:"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        ok(web_host_parse_listen(bad[i], addr, sizeof addr, &port, &err) < 0 &&
               err.code == FLAME_EXIT_USAGE,
           "refused: %s (%s)", bad[i], err.msg);
}

static void test_loopback(void)
{
    ok(web_host_is_loopback("127.0.0.1"), "127.0.0.1");
    ok(web_host_is_loopback("127.1.2.3"), "127/8");
    ok(web_host_is_loopback("::1"), "::1");
    ok(!web_host_is_loopback("0.0.0.0"), "0.0.0.0 is every interface");
    ok(!web_host_is_loopback("::"), ":: too");
    ok(!web_host_is_loopback("10.0.0.1"), "a LAN address");
    ok(!web_host_is_loopback("localhost"), "names are not addresses");
}

int main(void)
{
    test_host();
    test_listen();
    test_loopback();
    return tap_done();
}

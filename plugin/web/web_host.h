/* Where serve listens and which Host headers it answers (DNS rebinding: a page of another site
 * whose name resolves to 127.0.0.1 still sends its own name). Pure: the server, the tests and
 * the fuzz target use it. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"

/* --listen ADDR:PORT, [ADDR6]:PORT, ADDR (port 0) or :PORT / PORT (127.0.0.1); localhost is
 * 127.0.0.1. addr: cap bytes. 0, or -1 with a usage error. */
int web_host_parse_listen(const char *s, char *addr, size_t cap, int *port, flame_err *err);
/* 127.0.0.0/8 and ::1: reachable from this machine only. */
bool web_host_is_loopback(const char *addr);
/* Is Host header h one a server on port answers to: a loopback name (127.0.0.1, localhost,
 * [::1]) or the address it listens on (listen_addr, as a Host names it: [v6]), with its port;
 * or one of allow ("name": any port, "name:port"). Names compare without case. */
bool web_host_ok(const char *h, int port, const char *listen_addr, const char *const *allow,
                 size_t nallow);

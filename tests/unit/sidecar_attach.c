/* sidecar/attach.c: the attach request and the parsing of answers (JDK 9-20, 21+, garbage,
 * escape bytes). */
#include <stdlib.h>
#include <string.h>

#include "sidecar/sidecar.h"
#include "tests/unit/tap.h"

static void test_attach(void)
{
    char buf[64], msg[256];
    int st;
    ssize_t n = sc_attach_request(buf, sizeof(buf), "load", "/a.so", "true", "start");
    is_int(n, 2 + 5 + 6 + 5 + 6, "request length");
    ok(n > 0 && memcmp(buf, "1\0load\0/a.so\0true\0start\0", (size_t)n) == 0, "request bytes");
    n = sc_attach_request(buf, sizeof(buf), "jcmd", "Compiler.perfmap", NULL, NULL);
    ok(n > 0 && memcmp(buf, "1\0jcmd\0Compiler.perfmap\0\0\0", (size_t)n) == 0,
       "jcmd: exactly three args");
    ok(sc_attach_request(buf, 8, "load", "/long/path.so", "true", "x") < 0,
       "too long for the buffer");

#define R(s, load) sc_attach_parse_reply(s, sizeof(s) - 1, load, &st, msg, sizeof(msg))
    is_int(R("0\n", true), 0, "load ok (no text)");
    is_int(R("0\n0\n", true), 0, "JDK 9-20: agent returned 0");
    is_int(R("0\n-1\n", true), 1, "JDK 9-20: agent returned -1");
    is_int(R("-1\n", true), 1, "JVM refused");
    is_int(st, -1, "status -1");
    is_int(R("0\nreturn code: 0\n", true), 0, "JDK 21: return code 0");
    is_int(R("0\nAgent failed\nreturn code: 3\n", true), 1, "JDK 21: return code 3 = failure");
    is_str(msg, "Agent failed return code: 3", "message is printable, one line");
    is_int(st, 3, "load: status = the agent's return code (JDK 21+)");
    is_int(R("0\n4\n", true), 1, "JDK 9-20: agent returned 4 (the allocation sampler is busy)");
    is_int(st, CT_AGENT_RC_BUSY, "load: status = the agent's return code (JDK 9-20)");
    is_int(R("garbage\n", true), -1, "garbage status line");
    is_int(R("12x\n", false), -1, "trailing junk on the status line");
    is_int(R("", true), -1, "empty answer");
    is_int(R("0\nAAAAAAAAAAAA", true), -1, "load: status 0 then junk is not a loaded agent");
    is_int(R("0\n\xff\xfe<script>\n", true), -1, "load: status 0 then binary junk");
    is_int(R("0\nPerfmap written\n", false), 0, "jcmd ok");
    is_int(R("0\n\x1b[31mred\x07\n", false), 0, "escape bytes...");
    is_str(msg, "?[31mred?", "...are neutralised");
#undef R
}

int main(void)
{
    test_attach();
    return tap_done();
}

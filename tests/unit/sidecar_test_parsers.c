/* Pure parsers of the sidecar: /proc status and maps, JVM flags, JDK release files, attach
 * answers, the perf map sanitizer and the perf pipe-stream counter. Hostile inputs included. */
#include <stdlib.h>
#include <string.h>

#include "sidecar/sidecar.h"
#include "tests/unit/tap.h"

static void test_status(void)
{
    static const char st[] =
        "Name:\tjava\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t4242\nNgid:\t0\n"
        "Pid:\t4242\nPPid:\t4200\nTracerPid:\t0\nUid:\t10001\t10002\t10001\t10001\n"
        "Gid:\t20001\t20002\t20001\t20001\nNStgid:\t4242\t7\nNSpid:\t4242\t7\n";
    sc_status s;
    flame_err err = FLAME_ERR_INIT;
    is_int(sc_parse_status(st, sizeof(st) - 1, &s, &err), 0, "status parses");
    is_int(s.pid, 4242, "Tgid");
    is_int(s.ppid, 4200, "PPid");
    is_int(s.nspid, 7, "innermost NStgid");
    is_int(s.uid, 10002, "effective uid");
    is_int(s.gid, 20002, "effective gid");
    is_str(s.name, "java", "name");
    static const char hostile[] =
        "Name:\tx\"\\\x01y\nTgid:\t9\nPPid:\t1\nUid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\n";
    is_int(sc_parse_status(hostile, sizeof(hostile) - 1, &s, &err), 0, "hostile name parses");
    is_str(s.name, "x???y", "quotes/backslash/control bytes in comm replaced");
    is_int(s.nspid, 9, "no NStgid line: nspid = pid");
    static const char nouid[] = "Name:\tx\nTgid:\t9\nPPid:\t1\n";
    ok(sc_parse_status(nouid, sizeof(nouid) - 1, &s, &err) < 0, "missing Uid is an error");
    static const char huge[] = "Tgid:\t99999999999999999999\nPPid:\t1\nUid:\t0\t0\nGid:\t0\t0\n";
    ok(sc_parse_status(huge, sizeof(huge) - 1, &s, &err) < 0, "absurd pid rejected");
    ok(sc_parse_status("", 0, &s, &err) < 0, "empty status rejected");
}

static void test_maps(void)
{
    char path[64];
    static const char m[] = "7f0000000000-7f0000001000 r-xp 00000000 08:01 123 /usr/lib/libc.so.6\n"
                            "7f0000002000-7f0000003000 r-xp 00000000 08:01 124 "
                            "/opt/java/openjdk/lib/server/libjvm.so\n";
    ok(sc_maps_find_libjvm(m, sizeof(m) - 1, path, sizeof(path)), "libjvm.so found");
    is_str(path, "/opt/java/openjdk/lib/server/libjvm.so", "its path");
    static const char named[] =
        "7f0000000000-7f0000001000 r-xp 00000000 08:01 123 /usr/bin/java\n"
        "7f0000000000-7f0000001000 r-xp 00000000 08:01 123 /tmp/libjvm.so.bak\n";
    ok(!sc_maps_find_libjvm(named, sizeof(named) - 1, path, sizeof(path)),
       "a process named java is not a JVM");
    static const char partial[] = "7f0000002000-7f0000003000 r-xp 00000000 08:01 124 /x/libjvm.so";
    ok(!sc_maps_find_libjvm(partial, sizeof(partial) - 1, path, sizeof(path)),
       "partial line ignored");
    char small[8];
    ok(sc_maps_find_libjvm(m, sizeof(m) - 1, small, sizeof(small)), "found with a tiny buffer");
    is_int(strlen(small), 7, "path truncated to the buffer");
}

static void test_flags(void)
{
    static const char argv1[] = "java\0-XX:+PreserveFramePointer\0-cp\0/app\0Main";
    is_int(sc_flag_preserve_fp(argv1, sizeof(argv1), '\0', -1), 1, "flag on");
    static const char argv2[] = "java\0-XX:+PreserveFramePointer\0-XX:-PreserveFramePointer\0Main";
    is_int(sc_flag_preserve_fp(argv2, sizeof(argv2), '\0', -1), 0, "later -XX:- wins");
    static const char argv3[] = "java\0Main\0-XX:+PreserveFramePointerX";
    is_int(sc_flag_preserve_fp(argv3, sizeof(argv3), '\0', -1), -1,
           "not mentioned (no prefix match)");
    static const char env[] = "-Xmx1g -XX:+PreserveFramePointer";
    is_int(sc_flag_preserve_fp(env, sizeof(env) - 1, ' ', 0), 1, "space-separated options");
}

static void test_main_class(void)
{
    char c[64];
    sc_main_class(
        "/opt/java/bin/java -XX:+PreserveFramePointer -cp /app FlameFixture --slow countPrimes", c,
        sizeof(c));
    is_str(c, "FlameFixture", "main class after -cp value, program args ignored");
    sc_main_class("java -Xmx1g -jar /srv/app/server.jar --port 1", c, sizeof(c));
    is_str(c, "server.jar", "jar basename");
    sc_main_class("java", c, sizeof(c));
    is_str(c, "", "no main class");
    sc_main_class("java -cp", c, sizeof(c));
    is_str(c, "", "dangling -cp");
}

static void test_release(void)
{
    char v[32];
    static const char r17[] =
        "IMPLEMENTOR=\"Eclipse\"\nJAVA_VERSION=\"17.0.15\"\nOS_NAME=\"Linux\"\n";
    is_int(sc_parse_release(r17, sizeof(r17) - 1, v, sizeof(v)), 17, "JDK 17");
    is_str(v, "17.0.15", "version text");
    static const char r8[] = "JAVA_VERSION=\"1.8.0_392\"\n";
    is_int(sc_parse_release(r8, sizeof(r8) - 1, v, sizeof(v)), 8, "JDK 8 (1.8)");
    static const char bad[] = "JAVA_VERSION=\"\x01$(rm)\"\n";
    is_int(sc_parse_release(bad, sizeof(bad) - 1, v, sizeof(v)), -1, "garbage version rejected");
    is_int(sc_parse_release("X=1\n", 4, v, sizeof(v)), -1, "no JAVA_VERSION");
}

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

static char *sanitize(const char *in, sc_map_stats *st)
{
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    flame_err err = FLAME_ERR_INIT;
    int r = sc_map_sanitize(in, strlen(in), f, st, &err);
    fclose(f);
    if (r < 0) {
        free(out);
        return NULL;
    }
    return out;
}

static void test_map(void)
{
    sc_map_stats st;
    char *o = sanitize("0x1000 0x100 A.a\n2000 10 B.b\n", &st);
    is_str(o, "1000 100 A.a\n2000 10 B.b\n", "valid lines kept, 0x optional");
    is_int(st.lines_out, 2, "two lines");
    free(o);
    o = sanitize("zz 10 bad\n1000 0 zero\n1000 10\n1000  10 x\nffffffffffffffff 10 wrap\n"
                 "1000 80000000 huge\n12345678901234567 1 long\n3000 10 ok\n",
                 &st);
    is_str(o, "3000 10 ok\n", "malformed, zero, overflowing and oversized entries dropped");
    is_int(st.dropped, 7, "seven dropped");
    free(o);
    o = sanitize("1000 10 a\x01"
                 "b\x1b[0m\r\n",
                 &st);
    is_str(o, "1000 10 a?b?[0m?\n", "control bytes in names replaced");
    free(o);
    o = sanitize("1000 100 old\n1000 100 new\n", &st);
    is_str(o, "1000 100 new\n", "same range: the later entry wins");
    free(o);
    o = sanitize("1000 100 old\n1080 100 new\n", &st);
    is_str(o, "1000 80 old\n1080 100 new\n", "later overlapping entry truncates the earlier");
    free(o);
    o = sanitize("1080 100 old\n1000 100 new\n", &st);
    is_str(o, "1000 100 new\n1100 80 old\n", "earlier entry cut where the later one ends");
    free(o);
    o = sanitize("1000 1000 new_big\n", &st);
    free(o);
    o = sanitize("1100 10 old_inner\n1000 1000 new_big\n", &st);
    is_str(o, "1000 1000 new_big\n", "later big entry swallows an older one inside");
    free(o);
    char *longl = malloc(SC_MAP_LINE_MAX + 64);
    memset(longl, 'x', SC_MAP_LINE_MAX + 32);
    memcpy(longl, "1000 10 ", 8);
    strcpy(longl + SC_MAP_LINE_MAX + 32, "\n2000 10 y\n");
    o = sanitize(longl, &st);
    is_str(o, "2000 10 y\n", "over-long line dropped");
    free(o);
    free(longl);
    o = sanitize("", &st);
    is_str(o, "", "empty map");
    free(o);
}

static void put_rec(unsigned char *b, size_t *o, unsigned type, unsigned size, unsigned long long v)
{
    memset(b + *o, 0, size);
    b[*o] = (unsigned char)type;
    b[*o + 6] = (unsigned char)(size & 0xff);
    b[*o + 7] = (unsigned char)(size >> 8);
    if (size >= 24)
        memcpy(b + *o + 16, &v, 8); /* LOST: id at 8, lost at 16 */
    if (type == 13)
        memcpy(b + *o + 8, &v, 8);
    *o += size;
}

static void test_stream(void)
{
    unsigned char b[4096];
    size_t o = 0;
    memcpy(b, "PERFILE2", 8);
    unsigned long long hs = 16;
    memcpy(b + 8, &hs, 8);
    o = 16;
    put_rec(b, &o, 64, 40, 0); /* HEADER_ATTR */
    put_rec(b, &o, 9, 120, 0); /* SAMPLE */
    put_rec(b, &o, 9, 8, 0);   /* tiny SAMPLE */
    put_rec(b, &o, 2, 24, 5);  /* LOST 5 */
    put_rec(b, &o, 13, 16, 7); /* LOST_SAMPLES 7 */
    put_rec(b, &o, 9, 300, 0); /* SAMPLE */
    sc_perfstream ps = {0};
    sc_perfstream_feed(&ps, b, o);
    is_int(ps.samples, 3, "three samples in one chunk");
    is_int(ps.lost, 12, "lost counters summed");
    sc_perfstream p1 = {0};
    for (size_t i = 0; i < o; i++) /* byte by byte: chunk boundaries anywhere */
        sc_perfstream_feed(&p1, b + i, 1);
    is_int(p1.samples, 3, "byte-by-byte: same samples");
    is_int(p1.lost, 12, "byte-by-byte: same lost");
    sc_perfstream p2 = {0};
    sc_perfstream_feed(&p2, (const unsigned char *)"NOTPERF!xxxxxxxx", 16);
    ok(p2.bad, "wrong magic flagged");
    sc_perfstream p3 = {0};
    unsigned char z[24] = "PERFILE2";
    z[8] = 16;
    sc_perfstream_feed(&p3, z, sizeof(z)); /* record with size 0 */
    ok(p3.bad, "record size < 8 flagged (no endless loop)");
}

int main(void)
{
    test_status();
    test_maps();
    test_flags();
    test_main_class();
    test_release();
    test_attach();
    test_map();
    test_stream();
    return tap_done();
}

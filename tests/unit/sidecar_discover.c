/* sidecar/discover.c: the pure parsers of /proc status and maps, JVM flags, JDK release files,
 * the main class. Hostile inputs included. */
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

int main(void)
{
    test_status();
    test_maps();
    test_flags();
    test_main_class();
    test_release();
    return tap_done();
}

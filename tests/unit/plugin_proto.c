/* plugin/run/proto.c: the sidecar's result stream, read defensively. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/run/proto.h"
#include "tests/unit/tap.h"

int main(void)
{
    flame_err err = FLAME_ERR_INIT;
    /* ---- proto ---- */
    proto p;
    proto_init(&p);
#define LINE(s) proto_line(&p, s, strlen(s), &err)
    ok(LINE("J {}") < 0 && strstr(err.msg, "version"), "data before V is an error");
    ok(LINE("V 1") < 0 && strstr(err.msg, "version 1"), "other versions rejected");
    ok(LINE("V 2") == 0, "V 2");
    ok(LINE("J {\"pid\":5,\"nspid\":1}") == 0 && p.njvms == 1 && p.jvms[0].nspid == 1, "J");
    ok(LINE("J {\"pid\":5,\"nspid\":1,\"refused\":\"alloc\",\"refused_why\":\"x\"}") == 0 &&
           p.njvms == 1 && p.jvms[0].refused == CT_MODE_BIT(CT_MODE_ALLOC),
       "a second J line of the same pid updates it (a mode refused after recording)");
    ok(LINE("J {\"pid\":6,\"nspid\":2}") == 0 && p.njvms == 2 && p.jvms[0].refused &&
           !p.jvms[1].refused,
       "a J line of another pid is another JVM");
    p.njvms = 1;
    ok(LINE("J [1]") < 0, "J must be an object");
    ok(LINE("P {\"elapsed_ms\":1500,\"duration_ms\":10000,\"samples\":120,\"jvms\":1}") == 0 &&
           p.prog.elapsed_ms == 1500 && p.prog.samples == 120 && p.prog.jvms == 1 && p.progress,
       "P updates progress");
    ok(LINE("P {\"elapsed_ms\":1,\"jvms\":NaN}") < 0 && strstr(err.msg, "not a JSON object"),
       "P with NaN is not JSON: a protocol error");
    ok(LINE("P {\"elapsed_ms\":1e300,\"duration_ms\":-5,\"samples\":-1e300}") == 0 &&
           p.prog.elapsed_ms == 1ULL << 53 && p.prog.duration_ms == 0 && p.prog.samples == 0,
       "P: 1e300 and negatives clamped");
    LINE("P {\"elapsed_ms\":1500,\"duration_ms\":10000,\"samples\":120,\"jvms\":1}");
    ok(LINE("W no \x1b[31mPreserveFramePointer") == 0 && p.nwarn == 1, "W kept");
    char clean[64];
    proto_sanitize(p.warnings[0], clean, sizeof clean);
    ok(!strchr(clean, 0x1b), "terminal escapes removed before printing");
    ok(LINE("F a;b;c 10") == 0 && LINE("F a;b 5") == 0 && p.f_lines == 2, "F lines");
    ok(LINE("F a;b;c notanumber") < 0, "bad F line is an error");
    /* M: another mode's stacks, value and first count paired stack for stack */
    ok(LINE("M alloc 3 main;A.f;byte[]_[a] 1572864") == 0 &&
           LINE("M alloc 1 main;B.g;java.lang.String_[a] 524288") == 0 &&
           LINE("M alloc 2 main;A.f;byte[]_[a] 1048576") == 0 && p.mprof[CT_MODE_ALLOC] &&
           profile_total(proto_profile(&p, CT_MODE_ALLOC)) == 3145728 &&
           profile_total(p.mprof0[CT_MODE_ALLOC]) == 6 &&
           profile_stacks(p.mprof0[CT_MODE_ALLOC]) == 2 && !p.mprof[CT_MODE_LOCK] &&
           proto_profile(&p, CT_MODE_CPU) == p.prof,
       "M lines: per mode, both columns, same stacks summed");
    ok(LINE("M cpu 1 a;b 5") < 0 && strstr(err.msg, "no mode"), "M cpu is refused (F lines)");
    ok(LINE("M heap 1 a;b 5") < 0 && strstr(err.msg, "no mode"), "M of an unknown mode");
    ok(LINE("M lock x a;b 5") < 0 && strstr(err.msg, "no count"), "M without its count");
    ok(LINE("M lock 1 a;b five") < 0, "M with a bad value");
    ok(LINE("S {\"samples\":15,\"named_share\":0.9}") == 0 && p.have_summary &&
           p.prog.samples == 15 && p.summary.named_share == 0.9,
       "S");
    ok(LINE("X what") < 0 && strstr(err.msg, "unknown tag"), "unknown tag");
    ok(LINE("D") == 0 && p.done, "D");
    ok(LINE("W late") < 0, "nothing after D");
    proto_clear(&p);
    proto_init(&p);
    LINE("V 2");
    ok(LINE("E no_jvm found: 1 /init --pause") == 0 && p.failed && p.err == CT_ERR_NO_JVM &&
           !strcmp(p.err_text, "found: 1 /init --pause"),
       "E code and text");
    for (int i = 0; i < 100; i++)
        LINE("W w");
    ok(p.nwarn == PROTO_MAX_WARNINGS && p.dropped_warn == 100 - PROTO_MAX_WARNINGS,
       "warnings bounded");
    ok(proto_line(&p, "W a\0b", 5, &err) < 0, "NUL byte rejected");
    proto_clear(&p);
    return tap_done();
}

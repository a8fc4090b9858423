/* plugin/run/spec.c: the sidecar's create request (hardened HostConfig, labels, the contract's
 * command line). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/run/spec.h"
#include "tests/unit/tap.h"

static bool has_str(json_t *arr, const char *s)
{
    size_t i;
    json_t *v;
    json_array_foreach(arr, i,
                       v) if (json_is_string(v) && !strcmp(json_string_value(v), s)) return true;
    return false;
}

int main(void)
{
    flame_err err = FLAME_ERR_INIT;
    /* ---- spec ---- */
    spec_args a = {
        .target_id = "abc123", .owner_pid = 42, .created = 1700000000, .test_owner = "t1"};
    ct_args_default(&a.cmd, CT_RECORD);
    a.cmd.duration_ms = 10000;
    a.cmd.frequency = 49;
    a.cmd.pid = 7;
    a.cmd.no_inline = true;
    json_t *s = spec_sidecar(&a, &err);
    ok(s != NULL, "spec builds");
    json_t *hc = json_object_get(s, "HostConfig");
    is_str(json_string_value(json_object_get(s, "Image")), "docker-flame-sidecar:" FLAME_VERSION,
           "image");
    is_str(json_string_value(json_object_get(hc, "PidMode")), "container:abc123",
           "PidMode joins the target");
    is_str(json_string_value(json_object_get(hc, "NetworkMode")), "none", "no network");
    ok(json_is_true(json_object_get(hc, "ReadonlyRootfs")), "read-only rootfs");
    ok(json_object_get(hc, "Privileged") == NULL ||
           json_is_false(json_object_get(hc, "Privileged")),
       "never Privileged");
    ok(json_array_size(json_object_get(hc, "SecurityOpt")) == 1 &&
           has_str(json_object_get(hc, "SecurityOpt"), "no-new-privileges:true"),
       "SecurityOpt: exactly no-new-privileges (engine's default seccomp profile)");
    ok(json_object_get(s, "Env") == NULL, "no test env without DOCKER_FLAME_SIDECAR_TEST_STOP");
    ok(has_str(json_object_get(hc, "CapDrop"), "ALL"), "CapDrop ALL");
    ok(has_str(json_object_get(hc, "CapAdd"), "SYS_ADMIN") &&
           has_str(json_object_get(hc, "CapAdd"), "SYS_PTRACE") &&
           json_array_size(json_object_get(hc, "CapAdd")) == 5 &&
           has_str(json_object_get(hc, "CapAdd"), "SYS_CHROOT"),
       "explicit minimal CapAdd");
    ok(json_is_false(json_object_get(hc, "AutoRemove")), "AutoRemove false");
    ok(json_is_string(json_object_get(json_object_get(hc, "Tmpfs"), "/tmp")), "private /tmp tmpfs");
    ok(json_is_true(json_object_get(s, "AttachStdout")) && json_is_false(json_object_get(s, "Tty")),
       "attached, no tty (multiplexed stream)");
    json_t *cmd = json_object_get(s, "Cmd");
    is_str(json_string_value(json_array_get(cmd, 0)), "/flame-sidecar", "command");
    is_str(json_string_value(json_array_get(cmd, 1)), "record", "record verb");
    ok(has_str(cmd, "--duration=10000ms") && has_str(cmd, "--frequency=49") &&
           has_str(cmd, "--pid=7") && has_str(cmd, "--no-inline") && !has_str(cmd, "--signatures"),
       "options passed on, durations in whole milliseconds");
    json_t *lab = json_object_get(s, "Labels");
    is_str(json_string_value(json_object_get(lab, "com.docker-flame.sidecar")), "1",
           "sidecar label");
    is_str(json_string_value(json_object_get(lab, "com.docker-flame.target")), "abc123",
           "target label");
    is_str(json_string_value(json_object_get(lab, "com.docker-flame.owner-pid")), "42",
           "owner label");
    is_str(json_string_value(json_object_get(lab, "docker-flame-test.owner")), "t1",
           "test owner label");
    json_decref(s);
    a.cmd.duration_ms = 500;
    a.test_owner = NULL;
    s = spec_sidecar(&a, &err);
    ok(has_str(json_object_get(s, "Cmd"), "--duration=500ms"),
       "a sub-second duration goes over as whole milliseconds");
    ok(!json_object_get(json_object_get(s, "Labels"), "docker-flame-test"),
       "no test labels outside tests");
    json_decref(s);
    a.caps = "SYS_PTRACE,ALL, SYS_CHROOT";
    s = spec_sidecar(&a, &err);
    json_t *ca = json_object_get(json_object_get(s, "HostConfig"), "CapAdd");
    ok(json_array_size(ca) == 2 && has_str(ca, "SYS_CHROOT") && !has_str(ca, "ALL"),
       "cap override: list taken, ALL refused");
    json_decref(s);
    a.caps = NULL;
    ct_args_default(&a.cmd, CT_RESTORE);
    a.cmd.pid = 7;
    a.cmd.target = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    a.test_stop = "setup,process";
    s = spec_sidecar(&a, &err);
    json_t *rc = json_object_get(s, "Cmd");
    ok(json_array_size(rc) == 4 && !strcmp(json_string_value(json_array_get(rc, 1)), "restore") &&
           has_str(rc, "--pid=7") &&
           has_str(rc, "--target=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"),
       "restore: Cmd is /flame-sidecar restore --target=ID [--pid=N], nothing else");
    ok(json_is_true(json_object_get(json_object_get(s, "HostConfig"), "ReadonlyRootfs")) &&
           has_str(json_object_get(json_object_get(s, "HostConfig"), "SecurityOpt"),
                   "no-new-privileges:true"),
       "restore: same hardened HostConfig");
    ok(has_str(json_object_get(s, "Env"), "FLAME_SIDECAR_TEST_STOP=setup,process"),
       "test hook passed as the sidecar's env");
    json_decref(s);

    /* --kernel: CAP_SYSLOG added, and only then (kallsyms addresses, setup phase only) */
    spec_args k = {.target_id = "abc123", .owner_pid = 1};
    ct_args_default(&k.cmd, CT_RECORD);
    json_t *ds = spec_sidecar(&k, &err);
    ok(!has_str(json_object_get(json_object_get(ds, "HostConfig"), "CapAdd"), "SYSLOG") &&
           !has_str(json_object_get(ds, "Cmd"), "--kernel"),
       "no SYSLOG and no --kernel by default");
    json_decref(ds);
    k.cmd.kernel = true;
    json_t *ks = spec_sidecar(&k, &err);
    json_t *kca = json_object_get(json_object_get(ks, "HostConfig"), "CapAdd");
    ok(json_array_size(kca) == 6 && has_str(kca, "SYSLOG") && has_str(kca, "SYS_CHROOT"),
       "--kernel: the five caps + SYSLOG");
    ok(has_str(json_object_get(ks, "Cmd"), "--kernel"), "--kernel: passed to the sidecar");
    json_decref(ks);

    /* limits (docs/SIDECAR.md "Limits"): memory with the tmpfs at half of it, no swap, tasks,
     * one CPU; /tmp 0711 and noexec */
    spec_args l = {.target_id = "abc123", .owner_pid = 1};
    ct_args_default(&l.cmd, CT_RECORD);
    json_t *ls = spec_sidecar(&l, &err);
    json_t *lh = json_object_get(ls, "HostConfig");
    is_int(json_integer_value(json_object_get(lh, "Memory")), 1ll << 30, "Memory 1 GiB");
    is_int(json_integer_value(json_object_get(lh, "MemorySwap")), 1ll << 30, "no swap");
    is_int(json_integer_value(json_object_get(lh, "PidsLimit")), 64, "PidsLimit 64");
    is_int(json_integer_value(json_object_get(lh, "NanoCpus")), 1000000000, "one CPU");
    is_str(json_string_value(json_object_get(json_object_get(lh, "Tmpfs"), "/tmp")),
           "rw,nosuid,nodev,noexec,size=512m,mode=0711", "/tmp: half of the memory, 0711, noexec");
    json_decref(ls);
    l.memory = 3ll << 30;
    l.test_tmpfs = 100ll << 20;
    ls = spec_sidecar(&l, &err);
    lh = json_object_get(ls, "HostConfig");
    ok(json_integer_value(json_object_get(lh, "Memory")) == 3ll << 30 &&
           !strcmp(json_string_value(json_object_get(json_object_get(lh, "Tmpfs"), "/tmp")),
                   "rw,nosuid,nodev,noexec,size=100m,mode=0711"),
       "a memory limit of the user's, a test tmpfs");
    json_decref(ls);

    long long b;
    static const struct {
        const char *in;
        long long want; /* -1: refused */
    } sizes[] = {{"2g", 2ll << 30},
                 {"2G", 2ll << 30},
                 {"512m", 512ll << 20},
                 {"512MB", 512ll << 20},
                 {"16m", 16ll << 20},
                 {"1024g", 1ll << 40},
                 {"33554432", 32ll << 20},
                 {"15m", -1},
                 {"1025g", -1},
                 {"lots", -1},
                 {"", -1},
                 {"-1g", -1},
                 {"2gg", -1},
                 {"2t", -1},
                 {"99999999999999999999", -1},
                 {"9223372036854775807k", -1}};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        flame_err e = FLAME_ERR_INIT;
        b = 0;
        int r = spec_memory_parse(sizes[i].in, &b, &e);
        if (sizes[i].want < 0)
            ok(r < 0 && e.code == FLAME_EXIT_USAGE && strstr(e.msg, "DOCKER_FLAME_SIDECAR_MEMORY"),
               "memory size '%s' refused (%s)", sizes[i].in, e.msg);
        else
            ok(r == 0 && b == sizes[i].want, "memory size '%s' = %lld", sizes[i].in, b);
    }

    return tap_done();
}

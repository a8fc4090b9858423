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
    a.test_stop = "setup,process";
    s = spec_sidecar(&a, &err);
    json_t *rc = json_object_get(s, "Cmd");
    ok(json_array_size(rc) == 3 && !strcmp(json_string_value(json_array_get(rc, 1)), "restore") &&
           has_str(rc, "--pid=7"),
       "restore: Cmd is /flame-sidecar restore [--pid=N], nothing else");
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

    return tap_done();
}

/* Sidecar container spec: minimal explicit capabilities, never Privileged, no network,
 * read-only rootfs with a private /tmp, labels for `docker flame gc`. */
#include "plugin/run/spec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

const char *spec_image(void)
{
    const char *e = getenv("DOCKER_FLAME_SIDECAR_IMAGE");
    return e && *e ? e : SPEC_IMAGE;
}

/* CapDrop ALL + this list (docs/PROTOCOL.md; the sidecar owner documents the minimum in
 * docs/SIDECAR.md). SYS_ADMIN: perf_event_open under paranoid=2, setns/open_tree/move_mount
 * into the target's mount namespace. SYS_PTRACE: perf -p on another user's process, reading
 * /proc/<pid>/root of the target. SETUID/SETGID: attach as the JVM's own uid/gid (HotSpot
 * accepts only its own euid/egid). SYS_CHROOT: the sidecar (d7b051c) enters the target's root
 * for the agent copy / attach steps; without it injection and attach fail with EPERM (measured:
 * 0% Java names vs 100%). */
static const char *const sidecar_caps[] = {"SYS_ADMIN", "SYS_PTRACE", "SETUID", "SETGID",
                                           "SYS_CHROOT"};

int spec_memory_parse(const char *text, long long *bytes, flame_err *err)
{
    char *end = NULL;
    long long v = -1;
    int shift = 0;
    if (text && *text >= '0' && *text <= '9') {
        errno = 0;
        v = strtoll(text, &end, 10);
        if (errno)
            v = -1;
    }
    if (v >= 0 && *end) {
        switch (*end++) {
        case 'k':
        case 'K':
            shift = 10;
            break;
        case 'm':
        case 'M':
            shift = 20;
            break;
        case 'g':
        case 'G':
            shift = 30;
            break;
        default:
            v = -1;
        }
        if (*end == 'b' || *end == 'B')
            end++;
        if (*end)
            v = -1;
    }
    if (v < 0 || v > (SPEC_MEMORY_MAX >> shift) || (v << shift) < SPEC_MEMORY_MIN)
        return flame_fail(err, FLAME_EXIT_USAGE,
                          "DOCKER_FLAME_SIDECAR_MEMORY=%.40s: not a memory size from 16m to "
                          "1024g (e.g. 2g)",
                          text ? text : "");
    *bytes = v << shift;
    return 0;
}

json_t *spec_sidecar(const spec_args *a, flame_err *err)
{
    char owner[24], created[24], pidmode[128];
    snprintf(owner, sizeof owner, "%ld", a->owner_pid);
    snprintf(created, sizeof created, "%lld", a->created);
    if (a->host)
        snprintf(pidmode, sizeof pidmode, "host");
    else
        snprintf(pidmode, sizeof pidmode, "container:%s", a->target_id);

    /* The sidecar's command line, built by the contract's one function (the sidecar parses it
     * with the other one). */
    const char *argv[CT_ARGV_MAX];
    char argbuf[CT_ARGV_BUF];
    int argc = ct_argv_build(&a->cmd, argv, CT_ARGV_MAX, argbuf, sizeof argbuf);
    if (argc < 0) {
        flame_fail(err, FLAME_EXIT_ERROR, "internal: the sidecar command line does not fit");
        return NULL;
    }
    json_t *cmd = json_array();
    for (int i = 0; cmd && i < argc; i++)
        json_array_append_new(cmd, json_string(argv[i]));

    json_t *caps = json_array();
    if (a->caps && *a->caps) {
        /* Development override: the sidecar's owner tunes its minimum without a rebuild. */
        char buf[512];
        snprintf(buf, sizeof buf, "%s", a->caps);
        char *save = NULL;
        for (char *t = strtok_r(buf, ", ", &save); t; t = strtok_r(NULL, ", ", &save))
            if (strcmp(t, "ALL") != 0) /* never everything: that is Privileged by another name */
                json_array_append_new(caps, json_string(t));
    } else {
        for (size_t i = 0; i < sizeof sidecar_caps / sizeof *sidecar_caps; i++)
            json_array_append_new(caps, json_string(sidecar_caps[i]));
        /* --kernel only: CAP_SYSLOG lets the sidecar read real addresses from /proc/kallsyms
         * (hidden without it at perf_event_paranoid > 1 or kptr_restrict 1) to name kernel
         * frames. The sidecar clears it right after that one read (docs/HARDENING.md); without
         * --kernel it never holds it. */
        if (a->cmd.kernel)
            json_array_append_new(caps, json_string("SYSLOG"));
    }

    json_t *labels = json_pack("{ssssssss}", SPEC_LABEL_SIDECAR, "1", SPEC_LABEL_TARGET,
                               a->target_id, SPEC_LABEL_OWNER, owner, SPEC_LABEL_CREATED, created);
    if (labels && a->run_id && *a->run_id)
        json_object_set_new(labels, SPEC_LABEL_RUN, json_string(a->run_id));
    if (labels && a->test_owner && *a->test_owner) {
        json_object_set_new(labels, "docker-flame-test", json_string("1"));
        json_object_set_new(labels, "docker-flame-test.owner", json_string(a->test_owner));
    }

    /* SecurityOpt: no-new-privileges (docs/HARDENING.md "Privileges"): nothing the sidecar
     * execs (perf) can gain privilege through setuid bits or file capabilities; setuid(2)
     * drops and the recorder's ambient CAP_SYS_PTRACE are unaffected (verified: the profile is
     * identical with and without it). Seccomp: the engine's default profile, deliberately not
     * overridden: with CAP_SYS_ADMIN it already allows exactly the extra calls the job needs. */
    /* Limits (docs/SIDECAR.md "Limits"): the target decides much of what the sidecar reads, so
     * what it can cost the host is bounded here too, whatever the code's own bounds. The tmpfs
     * counts in the memory limit: half of it, so a full /tmp still leaves the processes room.
     * 0711: nobody else creates anything in it (docs/HARDENING.md "Who can reach the
     * sidecar"); nothing in it is ever executed. */
    long long mem = a->memory > 0 ? a->memory : SPEC_MEMORY_DEFAULT;
    char tmpfs[96];
    snprintf(tmpfs, sizeof tmpfs, "rw,nosuid,nodev,noexec,size=%lldm,mode=0711",
             a->test_tmpfs > 0 ? a->test_tmpfs >> 20 : mem >> 21);
    json_t *host = json_pack(
        "{s:s, s:s, s:b, s:b, s:{s:s}, s:[s], s:o, s:[s], s:b, s:{s:s}, s:I, s:I, s:I, s:I}",
        "PidMode", pidmode, "NetworkMode", "none", "ReadonlyRootfs", 1, "Privileged", 0, "Tmpfs",
        "/tmp", tmpfs, "CapDrop", "ALL", "CapAdd", caps, "SecurityOpt", "no-new-privileges:true",
        "AutoRemove", 0,
        /* The profile travels over the attach stream; a json-file copy of it would only cost
         * disk and time on the engine. */
        "LogConfig", "Type", "none", "Memory", (json_int_t)mem, "MemorySwap", (json_int_t)mem,
        "PidsLimit", (json_int_t)SPEC_PIDS_LIMIT, "NanoCpus", (json_int_t)SPEC_NANO_CPUS);
    /* host: the host's cgroup namespace too, so that /proc/<pid>/cgroup shows whole paths (a
     * private one, the default with cgroup v2, shows other containers as "/../docker-<id>.scope"
     * relative to ours). API 1.41. Engine 20.10 on cgroup v1 ignores it (always the host's). */
    if (host && a->host)
        json_object_set_new(host, "CgroupnsMode", json_string("host"));
    json_t *env = json_array();
    if (a->test_stop && *a->test_stop && strlen(a->test_stop) < 64) {
        char ev[96];
        snprintf(ev, sizeof ev, "FLAME_SIDECAR_TEST_STOP=%s", a->test_stop);
        json_array_append_new(env, json_string(ev));
    }
    if (a->test_no_perfmon)
        json_array_append_new(env, json_string("FLAME_SIDECAR_TEST_NO_PERFMON=1"));
    json_t *spec = host && cmd && labels
                       ? json_pack("{s:s, s:o, s:b, s:b, s:b, s:b, s:b, s:o, s:o}", "Image",
                                   a->image ? a->image : SPEC_IMAGE, "Cmd", cmd, "AttachStdin", 0,
                                   "AttachStdout", 1, "AttachStderr", 1, "Tty", 0, "OpenStdin", 0,
                                   "Labels", labels, "HostConfig", host)
                       : NULL;
    if (spec && json_array_size(env))
        json_object_set(spec, "Env", env);
    json_decref(env);
    if (!spec) {
        if (!host)
            json_decref(caps);
        flame_fail(err, FLAME_EXIT_ERROR, "out of memory building the sidecar spec");
    }
    return spec;
}

const char *spec_run_id(void)
{
    static char id[17];
    static pid_t owner;
    /* Per process: a recorder forked from the command gets an id of its own. */
    if (owner != getpid()) {
        unsigned char raw[8] = {0};
        if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw) {
            /* No entropy yet (early boot): pid and time still tell processes apart here. */
            unsigned long long v =
                ((unsigned long long)getpid() << 32) ^ (unsigned long long)time(NULL);
            memcpy(raw, &v, sizeof raw);
        }
        for (size_t i = 0; i < sizeof raw; i++)
            snprintf(id + 2 * i, 3, "%02x", raw[i]);
        owner = getpid();
    }
    return id;
}

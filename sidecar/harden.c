/* Dropping privilege once the privileged work is done (see docs/SIDECAR.md "Privilege per
 * phase"): capabilities with libcap, then NO_NEW_PRIVS, then a libseccomp deny-list, all BEFORE
 * anything that came from the target (its perf map, perf script's text) is parsed. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <seccomp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "sidecar/sidecar.h"

void sc_cap_eff(pid_t pid, char *out, size_t cap)
{
    char buf[SC_STATUS_MAX], path[64];
    snprintf(out, cap, "unknown");
    if (pid)
        snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    else
        snprintf(path, sizeof path, "/proc/self/status");
    ssize_t n = sc_read_bounded(AT_FDCWD, path, buf, sizeof(buf));
    if (n <= 0)
        return;
    char *p = strstr(buf, "\nCapEff:");
    if (!p)
        return;
    p += 8;
    while (*p == '\t' || *p == ' ')
        p++;
    size_t l = strcspn(p, "\n");
    snprintf(out, cap, "%.*s", (int)l, p);
}

/* Syscalls nothing after the setup needs, and which an exploited parser would want: new mounts
 * and namespaces, tracing and peeking into other processes, kernel attack surface (bpf, modules,
 * keys, kexec, userfaultfd), and perf_event_open (recording is over). EPERM, not kill: perf
 * script probes setns() and copes with a refusal. */
static const int denied[] = {
    SCMP_SYS(mount),
    SCMP_SYS(umount2),
    SCMP_SYS(pivot_root),
    SCMP_SYS(chroot),
    SCMP_SYS(setns),
    SCMP_SYS(unshare),
    SCMP_SYS(open_tree),
    SCMP_SYS(move_mount),
    SCMP_SYS(fsopen),
    SCMP_SYS(fsconfig),
    SCMP_SYS(fsmount),
    SCMP_SYS(fspick),
    SCMP_SYS(mount_setattr),
    SCMP_SYS(ptrace),
    SCMP_SYS(process_vm_readv),
    SCMP_SYS(process_vm_writev),
    SCMP_SYS(pidfd_getfd),
    SCMP_SYS(kcmp),
    SCMP_SYS(bpf),
    SCMP_SYS(perf_event_open),
    SCMP_SYS(userfaultfd),
    SCMP_SYS(kexec_load),
    SCMP_SYS(kexec_file_load),
    SCMP_SYS(init_module),
    SCMP_SYS(finit_module),
    SCMP_SYS(delete_module),
    SCMP_SYS(keyctl),
    SCMP_SYS(add_key),
    SCMP_SYS(request_key),
    SCMP_SYS(name_to_handle_at),
    SCMP_SYS(open_by_handle_at),
    SCMP_SYS(iopl),
    SCMP_SYS(ioperm),
    SCMP_SYS(swapon),
    SCMP_SYS(swapoff),
    SCMP_SYS(reboot),
    SCMP_SYS(setuid),
    SCMP_SYS(setgid),
    SCMP_SYS(setreuid),
    SCMP_SYS(setregid),
    SCMP_SYS(setresuid),
    SCMP_SYS(setresgid),
    SCMP_SYS(setgroups),
    SCMP_SYS(capset),
};

bool sc_test_hook(const char *phase)
{
    const char *v = getenv("FLAME_SIDECAR_TEST_STOP");
    if (!v)
        return false;
    size_t n = strlen(phase);
    for (const char *p = v; (p = strstr(p, phase)) != NULL; p += n)
        if ((p == v || p[-1] == ',') && (p[n] == '\0' || p[n] == ','))
            return true;
    return false;
}

void sc_test_stop(const char *phase)
{
    if (sc_test_hook(phase))
        raise(SIGSTOP);
}

/* ---- the run's own uid ---- */

/* Chosen from here, where systemd's conventions (docs/UIDS-GIDS) put no users, containers'
 * ranges or dynamic users, and below 2^31 (tools that read ids as signed). */
#define RUN_UID_LO 0x71000000u /* 1895825408 */
#define RUN_UID_HI 0x7f000000u /* 2130706432, excluded */
#define MAP_EXTENTS 16

static uid_t run_uid = (uid_t)-1;

uid_t sc_run_uid(void)
{
    return run_uid;
}

/* The extents [lo, hi) of an id map of our user namespace ("inside outside count" lines). */
static int read_map(const char *path, uint64_t *lo, uint64_t *hi)
{
    char buf[2048];
    ssize_t len = sc_read_bounded(AT_FDCWD, path, buf, sizeof buf);
    int n = 0;
    for (char *p = buf; len > 0 && p && *p && n < MAP_EXTENTS;) {
        unsigned long long in, out, count;
        if (sscanf(p, "%llu %llu %llu", &in, &out, &count) == 3 && count > 0)
            lo[n] = in, hi[n] = in + count, n++;
        p = strchr(p, '\n');
        p = p ? p + 1 : NULL;
    }
    return n;
}

static bool in_map(int n, const uint64_t *lo, const uint64_t *hi, uint64_t id)
{
    for (int i = 0; i < n; i++)
        if (id >= lo[i] && id < hi[i])
            return true;
    return false;
}

/* Does a process we can see use id as one of its uids or gids? */
static bool id_in_use(uint32_t id)
{
    DIR *d = opendir("/proc");
    if (!d)
        return true; /* cannot tell: take another */
    bool used = false;
    struct dirent *e;
    char path[300], buf[SC_STATUS_MAX];
    for (unsigned k = 0; !used && k < (1u << 22) && (e = readdir(d)); k++) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof path, "%s/status", e->d_name);
        if (sc_read_bounded(dirfd(d), path, buf, sizeof buf) <= 0)
            continue; /* gone meanwhile */
        for (const char *key = "\nUid:"; key; key = key[1] == 'U' ? "\nGid:" : NULL) {
            const char *p = strstr(buf, key);
            unsigned long long v[4];
            if (p && sscanf(p + 5, "%llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3]) == 4)
                for (int i = 0; i < 4; i++)
                    used |= v[i] == id;
        }
    }
    closedir(d);
    return used;
}

int sc_pick_run_uid(flame_err *err)
{
    uint64_t ulo[MAP_EXTENTS], uhi[MAP_EXTENTS], glo[MAP_EXTENTS], ghi[MAP_EXTENTS];
    int nu = read_map("/proc/self/uid_map", ulo, uhi);
    int ng = read_map("/proc/self/gid_map", glo, ghi);
    uint64_t lo = RUN_UID_LO, hi = RUN_UID_HI;
    if (!in_map(nu, ulo, uhi, lo) || !in_map(nu, ulo, uhi, hi - 1) || !in_map(ng, glo, ghi, lo) ||
        !in_map(ng, glo, ghi, hi - 1)) {
        /* A user namespace that maps only some ids (an engine with userns-remap): the upper
         * half of what it maps. */
        if (!nu || !ng)
            return flame_fail(err, FLAME_EXIT_ERROR, "cannot read our user namespace's id maps");
        lo = ulo[0] > glo[0] ? ulo[0] : glo[0];
        hi = uhi[0] < ghi[0] ? uhi[0] : ghi[0];
        if (hi <= lo + 2048)
            return flame_fail(err, FLAME_EXIT_ERROR, "our user namespace maps too few ids");
        lo += (hi - lo) / 2;
    }
    for (int tries = 0; tries < 16; tries++) {
        uint32_t r;
        if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r)
            r = (uint32_t)getpid() * 2654435761u ^ (uint32_t)tries;
        uint64_t id = lo + r % (hi - lo);
        if (id == SC_NOBODY || id == 65535 || id == (uint32_t)-1 || !in_map(nu, ulo, uhi, id) ||
            !in_map(ng, glo, ghi, id) || id_in_use((uint32_t)id))
            continue;
        run_uid = (uid_t)id;
        return 0;
    }
    return flame_fail(err, FLAME_EXIT_ERROR, "found no unused uid for the sidecar");
}

int sc_become_run_user(void)
{
    if (run_uid == (uid_t)-1) {
        errno = EINVAL;
        return -1;
    }
    if (setgroups(0, NULL) < 0 || setresgid(run_uid, run_uid, run_uid) < 0 ||
        setresuid(run_uid, run_uid, run_uid) < 0)
        return -1;
    return 0;
}

int sc_harden(flame_err *err)
{
    /* 1. Capabilities. Leave uid 0 for the run's uid: the kernel then clears permitted/
     * effective/ambient (no PR_SET_KEEPCAPS) and makes us non-dumpable, and a later exec (perf
     * script) cannot regain any because it is no longer root. Groups and gid first, while
     * CAP_SETGID is still held. */
    if (sc_become_run_user() < 0)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "drop to uid %u", (unsigned)run_uid);
    return sc_seal(err);
}

int sc_seal(flame_err *err)
{
    /* Belt and braces with libcap: an explicitly empty set, and no ambient capabilities. The
     * bounding set cannot be shrunk without CAP_SETPCAP (deliberately not granted); it no
     * longer matters for a non-root process under NO_NEW_PRIVS with no file capabilities. */
    _cleanup_cap_ cap_t none = cap_init();
    if (!none || cap_set_proc(none) < 0)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "cap_set_proc(empty)");
    cap_reset_ambient();
    for (cap_value_t c = 0; c <= CAP_LAST_CAP; c++)
        cap_drop_bound(c); /* EPERM without CAP_SETPCAP: expected, see above */
    /* 2. No exec may ever gain privileges again (setuid binaries, file caps). */
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "PR_SET_NO_NEW_PRIVS");
    /* 3. The seccomp deny-list, inherited by perf script. */
    _cleanup_seccomp_ scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (!ctx)
        return flame_fail(err, FLAME_EXIT_ERROR, "seccomp_init failed");
    for (size_t i = 0; i < sizeof(denied) / sizeof(denied[0]); i++) {
        if (denied[i] < 0)
            continue; /* unknown to this libseccomp: nothing to deny */
        int r = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), denied[i], 0);
        if (r < 0)
            return flame_fail_errno(err, FLAME_EXIT_ERROR, -r, "seccomp rule %d", denied[i]);
    }
    int r = seccomp_load(ctx);
    if (r < 0)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, -r, "seccomp_load");
    return 0;
}

/* Dropping privilege once the privileged work is done (see docs/SIDECAR.md "Privilege per
 * phase"): capabilities with libcap, then NO_NEW_PRIVS, then a libseccomp deny-list, all BEFORE
 * anything that came from the target (its perf map, perf script's text) is parsed. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <seccomp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/prctl.h>
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

void sc_test_stop(const char *phase)
{
    const char *v = getenv("FLAME_SIDECAR_TEST_STOP");
    if (!v)
        return;
    size_t n = strlen(phase);
    for (const char *p = v; (p = strstr(p, phase)) != NULL; p += n)
        if ((p == v || p[-1] == ',') && (p[n] == '\0' || p[n] == ','))
            raise(SIGSTOP);
}

int sc_harden(flame_err *err)
{
    /* 1. Capabilities. Leave uid 0 for nobody: the kernel then clears permitted/effective/
     * ambient (no PR_SET_KEEPCAPS), and a later exec (perf script) cannot regain any because it
     * is no longer root. Groups and gid first, while CAP_SETGID is still held. */
    if (setgroups(0, NULL) < 0 || setresgid(SC_NOBODY, SC_NOBODY, SC_NOBODY) < 0 ||
        setresuid(SC_NOBODY, SC_NOBODY, SC_NOBODY) < 0)
        return flame_fail_errno(err, FLAME_EXIT_ERROR, errno, "drop to uid %d", SC_NOBODY);
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

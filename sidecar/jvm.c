/* What docker-flame does to each JVM in the target, and how it is undone: make the agent
 * visible (inject.c), load it through the attach listener (attach.c) or fall back to HotSpot's
 * own Compiler.perfmap; after recording, stop the agent, fetch the complete map and copy the
 * JVM's mapped libraries for perf's symbols (symfs.c), and undo everything; and `restore`, the undo
 * a SIGKILLed sidecar missed. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "sidecar/session.h"

void sc_open_ns(sc_session *s, int k)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int)s->jvms[k].st.pid);
    s->ns_fd[k] = open(path, O_RDONLY | O_CLOEXEC);
    if (s->ns_fd[k] < 0) {
        snprintf(s->jvms[k].reason, sizeof(s->jvms[k].reason),
                 "cannot open its mount namespace: %s", strerror(errno));
    } else if (s->jvms[k].pidfd >= 0 && !sc_pidfd_alive(s->jvms[k].pidfd)) {
        /* it exited since discovery: the pid (and so that namespace) may be another's now */
        close(s->ns_fd[k]);
        s->ns_fd[k] = -1;
        snprintf(s->jvms[k].reason, sizeof(s->jvms[k].reason), "it exited");
    }
}

void sc_announce_jvm(sc_session *s, int k)
{
    sc_jvm *j = &s->jvms[k];
    /* the root frame names the JVM: pid + main class (or jar) from its command line */
    char cls[64];
    sc_main_class(j->cmdline, cls, sizeof(cls));
    snprintf(j->root_frame, sizeof(j->root_frame), "java-%d%s%s", (int)j->st.pid, cls[0] ? " " : "",
             cls);
    sc_out_jvm(j);
}

unsigned sc_agent_modes(const sc_session *s)
{
    /* a profile (record verb) or the windows of `docker flame record` (top verb, a flush per
     * window: top.c) */
    return s->o.verb == CT_RECORD || s->o.verb == CT_TOP ? ct_modes_of(&s->o) & SC_AGENT_MODES : 0;
}

/* `load <agent> true start,...` with the alloc and lock options of `modes` (CT_MODE_BIT()s).
 * sc_attach_command()'s return; 1 with CT_AGENT_RC_BUSY as the agent's code only when alloc was
 * asked for and another agent holds the allocation sampler, else 1 for any refusal. */
static int load_agent(sc_session *s, sc_jvm *j, int ns, unsigned modes, char *msg, size_t cap,
                      flame_err *err)
{
    /* tag: the map's own name (sidecar.h, map_tag), the hex of the agent's directory */
    snprintf(j->map_tag, sizeof(j->map_tag), "%.16s", j->inject_dir + strlen(".docker-flame-"));
    char aopts[256];
    int ao = snprintf(aopts, sizeof(aopts), "start,inline=%d,sig=%d,dir=/tmp,tag=%s",
                      !s->o.no_inline ? 1 : 0, s->o.signatures ? 1 : 0, j->map_tag);
    /* alloc and lock are the agent's (docs/MODES.md): one sample every ~512 KiB allocated (at
     * most ~CT_ALLOC_RATE a second, the interval raised), or every --alloc-interval bytes;
     * every ~10 us waited; as deep as --max-stack allows */
    if ((modes & CT_MODE_BIT(CT_MODE_ALLOC)) && s->o.alloc_interval > 0)
        ao += snprintf(aopts + ao, sizeof(aopts) - (size_t)ao, ",alloc=%lld",
                       (long long)s->o.alloc_interval);
    else if (modes & CT_MODE_BIT(CT_MODE_ALLOC))
        ao += snprintf(aopts + ao, sizeof(aopts) - (size_t)ao, ",alloc=%d,rate=%d",
                       CT_ALLOC_INTERVAL, CT_ALLOC_RATE);
    if (modes & CT_MODE_BIT(CT_MODE_LOCK))
        ao += snprintf(aopts + ao, sizeof(aopts) - (size_t)ao, ",lock=%d", CT_LOCK_INTERVAL_NS);
    if (modes && s->o.max_stack > 0)
        snprintf(aopts + ao, sizeof(aopts) - (size_t)ao, ",depth=%d",
                 (int)(s->o.max_stack < 2048 ? s->o.max_stack : 2048));
    int status = 0;
    int r = sc_attach_command(j, ns, (int)s->o.attach_timeout_ms, "load", j->agent_path, "true",
                              aopts, msg, cap, &status, err);
    if (r > 0 && !(status == CT_AGENT_RC_BUSY && (modes & CT_MODE_BIT(CT_MODE_ALLOC))))
        return 2; /* any other refusal */
    return r;
}

void sc_prepare_jvm(sc_session *s, int k)
{
    sc_jvm *j = &s->jvms[k];
    int ns = s->ns_fd[k];
    flame_err err = FLAME_ERR_INIT;
    char msg[1024];
    /* Without PreserveFramePointer the recorder walks the stacks itself (recorder/walk.h):
     * a warning comes after the recording, only if that could not be done (process.c). */
    if (j->attach_disabled) {
        snprintf(
            j->reason, sizeof(j->reason),
            "the JVM was started with -XX:+DisableAttachMechanism: no agent; Java frames are "
            "named from its own metadata (VMStructs) when sampled per CPU, without signatures");
        sc_warn("pid %d: %s", (int)j->st.pid, j->reason);
        return;
    }
    int64_t t = mono_ms();
    bool have_agent = access(SC_AGENT_DIR "/" SC_AGENT_NAME, R_OK) == 0;
    if (!have_agent) {
        snprintf(j->reason, sizeof(j->reason), "the sidecar image has no agent (%s/%s)",
                 SC_AGENT_DIR, SC_AGENT_NAME);
    } else {
        int r = -1;
        if (s->o.inject != CT_INJECT_COPY) {
            r = sc_inject(j, ns, CT_INJECTED_MOUNT, &err);
            if (r < 0 && s->o.inject == CT_INJECT_AUTO)
                sc_warn("pid %d: mount injection failed (%s); copying the agent instead",
                        (int)j->st.pid, err.msg);
        }
        if (r < 0 && s->o.inject != CT_INJECT_MOUNT) {
            err = (flame_err)FLAME_ERR_INIT;
            r = sc_inject(j, ns, CT_INJECTED_COPY, &err);
        }
        if (r < 0)
            snprintf(j->reason, sizeof(j->reason), "agent not injected: %.400s", err.msg);
    }
    s->t[CT_PH_INJECT] += mono_ms() - t;
    if (*s->stop)
        return;
    t = mono_ms();
    if (j->inject != CT_INJECTED_NONE) {
        unsigned want = sc_agent_modes(s);
        int r = load_agent(s, j, ns, want, msg, sizeof(msg), &err);
        if (r == 1) {
            /* another agent holds the allocation sampler: the rest without alloc, which is
             * reported refused (the plugin exits FLAME_EXIT_PERF, docs/MODES.md) */
            j->refused |= CT_MODE_BIT(CT_MODE_ALLOC);
            snprintf(j->refused_why, sizeof(j->refused_why),
                     "the JVM's allocation sampler is held by another agent (JVMTI "
                     "can_generate_sampled_object_alloc_events is one agent's at a time): stop "
                     "that profiler first");
            err = (flame_err)FLAME_ERR_INIT;
            r = load_agent(s, j, ns, want & ~CT_MODE_BIT(CT_MODE_ALLOC), msg, sizeof(msg), &err);
        }
        if (r == 0) {
            j->attach = CT_ATTACH_AGENT;
            j->agent_started = true;
        } else {
            j->map_tag[0] = '\0'; /* no agent map: Compiler.perfmap's name from here on */
            snprintf(j->reason, sizeof(j->reason), "agent load failed: %.400s",
                     r < 0    ? err.msg
                     : msg[0] ? msg
                              : "(no message)");
        }
    }
    j->attach_ms = mono_ms() - t;
    bool planted = j->attach == CT_ATTACH_NONE && j->java_major >= 16 &&
                   !strstr(j->reason, "no attach socket") && sc_map_name_free(j, ns) < 0;
    if (planted) /* HotSpot's fopen() would follow it (or block on a FIFO): no fallback */
        snprintf(j->reason + strlen(j->reason), sizeof(j->reason) - strlen(j->reason),
                 "; /tmp/perf-%d.map in the target is a symlink, FIFO or foreign file planted "
                 "there: refused, no Compiler.perfmap",
                 (int)j->st.nspid);
    if (j->attach == CT_ATTACH_NONE && j->java_major >= 16 && !planted &&
        !strstr(j->reason, "no attach socket")) {
        /* Fallback: HotSpot's own perf map dump at the end of the recording (a snapshot: code
         * JITed and freed during the recording is missing, and no inlined frames). */
        j->attach = CT_ATTACH_PERFMAP;
        sc_warn("pid %d: %s; using Compiler.perfmap instead: the map is a snapshot taken after "
                "recording, without inlined frames",
                (int)j->st.pid, j->reason);
    } else if (j->attach == CT_ATTACH_NONE) {
        sc_warn("pid %d: %s: Java frames will have no names", (int)j->st.pid, j->reason);
    }
    /* alloc and lock are recorded by our agent only: without it they are refused here */
    unsigned agent_modes = sc_agent_modes(s);
    if (agent_modes && j->attach != CT_ATTACH_AGENT) {
        j->refused |= agent_modes;
        snprintf(j->refused_why, sizeof(j->refused_why),
                 "our agent does not run in this JVM (%.400s)",
                 j->reason[0] ? j->reason : "not loaded");
    }
    s->t[CT_PH_ATTACH] += j->attach_ms;
}

/* mkdir -p of the directories of path (in our own work directory). */
static int mkdirs_for(const char *path)
{
    char buf[600];
    snprintf(buf, sizeof(buf), "%s", path);
    for (char *p = buf + 1; (p = strchr(p, '/')); p++) {
        *p = 0;
        if (mkdir(buf, 0755) < 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return 0;
}

/* After recording: make the map complete, bring it over, undo everything in the target. */
void sc_finish_jvm(sc_session *s, int k, bool fetch)
{
    sc_jvm *j = &s->jvms[k];
    int ns = s->ns_fd[k];
    flame_err err = FLAME_ERR_INIT;
    char msg[1024];
    if (j->agent_started) {
        /* `stop`: the agent stops listening and closes its map, which is then complete. */
        int r = sc_attach_command(j, ns, (int)s->o.attach_timeout_ms, "load", j->agent_path, "true",
                                  "stop", msg, sizeof(msg), NULL, &err);
        if (r != 0)
            sc_warn("pid %d: stopping the agent failed: %s", (int)j->st.pid, r < 0 ? err.msg : msg);
        j->agent_started = false;
    }
    if (j->attach == CT_ATTACH_PERFMAP && fetch && sc_map_name_free(j, ns) < 0) {
        /* HotSpot opens the map with fopen(): it would write through a planted symlink and
         * its attach listener would block forever on a planted FIFO. */
        sc_warn("pid %d: /tmp/perf-%d.map in the target is not a regular file of the JVM user (a "
                "symlink, FIFO or foreign file planted there): refused, no Compiler.perfmap; Java "
                "frames will have no names",
                (int)j->st.pid, (int)j->st.nspid);
        j->attach = CT_ATTACH_NONE;
    }
    if (j->attach == CT_ATTACH_PERFMAP && fetch) {
        err = (flame_err)FLAME_ERR_INIT;
        int r = sc_attach_command(j, ns, (int)s->o.attach_timeout_ms, "jcmd", "Compiler.perfmap",
                                  NULL, NULL, msg, sizeof(msg), NULL, &err);
        if (r != 0) {
            sc_warn("pid %d: Compiler.perfmap failed: %s", (int)j->st.pid, r < 0 ? err.msg : msg);
            j->attach = CT_ATTACH_NONE;
        }
    }
    if (fetch && j->attach != CT_ATTACH_NONE) {
        char path[64];
        snprintf(path, sizeof(path), "raw-%d.map", (int)j->st.pid);
        s->raw_fd[k] = sc_work_create(path, O_RDWR, 0600);
        err = (flame_err)FLAME_ERR_INIT;
        if (s->raw_fd[k] < 0)
            sc_warn("create %s: %s", path, strerror(errno));
        else if (sc_fetch_map(j, ns, s->raw_fd[k], &err) < 0)
            sc_warn("%s", err.msg);
    }
    if (fetch && j->map_tag[0] && j->attach == CT_ATTACH_AGENT && s->o.verb == CT_RECORD &&
        (ct_modes_of(&s->o) & SC_AGENT_MODES)) {
        char path[64];
        snprintf(path, sizeof(path), "raw-%d.modes", (int)j->st.pid);
        s->modes_fd[k] = sc_work_create(path, O_RDWR, 0600);
        err = (flame_err)FLAME_ERR_INIT;
        if (s->modes_fd[k] < 0) {
            sc_warn("create %s: %s", path, strerror(errno));
        } else if (sc_fetch_modes(j, ns, s->modes_fd[k], &err) < 0) {
            /* the target planted a link, FIFO, foreign or huge file where the agent's samples
             * go: those modes are refused, said again in a J line of the same pid */
            close(s->modes_fd[k]);
            s->modes_fd[k] = -1;
            j->refused |= ct_modes_of(&s->o) & SC_AGENT_MODES;
            snprintf(j->refused_why, sizeof(j->refused_why), "%.500s", err.msg);
            sc_out_jvm(j);
        }
    }
    /* The target's libraries for perf's symbols (symfs.c): perf script runs without the
     * privilege to enter the target's mount namespace, so it reads copies below --symfs. Each
     * is the mapped inode itself, copied through /proc/<pid>/map_files. Best effort: without a
     * copy a library's frames stay "[libc.so.6]". */
    if (fetch) {
        sc_symfs_stats st;
        int r = sc_symfs_copy(&s->symfs, j, ns, s->o.verb == CT_HOST, &st);
        if (r < 0)
            sc_warn("pid %d: cannot read its maps (%s): native frames stay unnamed", (int)j->st.pid,
                    strerror(-r));
    }
    /* libjvm.so by its path, as the JVM's user, when map_files could not give it (older
     * behaviour, kept as the fallback: the same path, so the same file unless replaced). */
    if (fetch && j->libjvm[0] == '/' && s->o.verb != CT_HOST) { /* host: by inode only */
        char path[600];
        snprintf(path, sizeof(path), "%s%s", SC_SYMFS, j->libjvm);
        int fd = access(path, F_OK) != 0 && mkdirs_for(path) == 0
                     ? open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644)
                     : -1;
        err = (flame_err)FLAME_ERR_INIT;
        if (fd >= 0 && sc_fetch_file(j, ns, j->libjvm, fd, &err) < 0) {
            sc_warn("%s (libjvm frames stay unnamed)", err.msg);
            unlink(path);
        }
        if (fd >= 0)
            close(fd);
    }
    /* The map in the target is removed either way (fetch removes it; on abort remove here). */
    sc_remove_map(j, ns);
    if (sc_agent_modes(s))
        sc_remove_modes(j, ns); /* one more child in the target: only when the agent wrote it */
    err = (flame_err)FLAME_ERR_INIT;
    if (sc_inject_undo(j, ns, &err) < 0)
        sc_warn("%s", err.msg);
}

/* `restore` (docs/HARDENING.md "Faults"): a sidecar killed by SIGKILL (docker kill, OOM, an
 * engine dying without live-restore) could not undo its work: the agent mount
 * /tmp/.docker-flame-<hex> stays in the target's mount namespace and the agent keeps writing
 * /tmp/perf-<nspid>.map. Only mounts the KERNEL says are ours are touched: the JVM's mountinfo
 * (the target cannot forge it) must show root SC_AGENT_DIR at /tmp/.docker-flame-<16 hex>.
 * Then, as in finish_jvm: `load <that path> true stop` (the same path = the loaded agent),
 * remove the map (only a regular file of the JVM's uid), unmount + rmdir. */
static bool stale_mount_name(const char *mp, char *name, size_t cap)
{
    static const char pre[] = "/tmp/.docker-flame-";
    if (strncmp(mp, pre, sizeof(pre) - 1) != 0 || strlen(mp) != sizeof(pre) - 1 + 16)
        return false;
    for (const char *h = mp + sizeof(pre) - 1; *h; h++)
        if (!((*h >= '0' && *h <= '9') || (*h >= 'a' && *h <= 'f')))
            return false;
    size_t l = strlen(mp + 5); /* ".docker-flame-<16 hex>" */
    if (l >= cap)
        return false;
    memcpy(name, mp + 5, l + 1);
    return true;
}

int sc_restore_jvm(sc_session *s, int k)
{
    sc_jvm *j = &s->jvms[k];
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/mountinfo", (int)j->st.pid);
    _cleanup_free_ char *buf = malloc(1 << 20);
    if (!buf)
        return -1;
    ssize_t n = sc_read_bounded(AT_FDCWD, path, buf, 1 << 20);
    if (n < 0) {
        sc_warn("pid %d: cannot read its mountinfo: %s", (int)j->st.pid, strerror((int)-n));
        return -1;
    }
    int found = 0;
    char *save = NULL;
    for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        /* id parent major:minor root mountpoint ... */
        char root[256], mp[256], name[64];
        if (sscanf(line, "%*s %*s %*s %255s %255s", root, mp) != 2 ||
            strcmp(root, SC_AGENT_DIR) != 0 || !stale_mount_name(mp, name, sizeof(name)))
            continue;
        found++;
        flame_err err = FLAME_ERR_INIT;
        char msg[1024];
        snprintf(j->inject_dir, sizeof(j->inject_dir), "%s", name);
        snprintf(j->agent_path, sizeof(j->agent_path), "/tmp/%s/%s", name, SC_AGENT_NAME);
        snprintf(j->map_tag, sizeof(j->map_tag), "%.16s", name + strlen(".docker-flame-"));
        int r = sc_attach_command(j, s->ns_fd[k], (int)s->o.attach_timeout_ms, "load",
                                  j->agent_path, "true", "stop", msg, sizeof(msg), NULL, &err);
        if (r != 0)
            sc_warn("pid %d: stopping the stale agent failed: %s", (int)j->st.pid,
                    r < 0 ? err.msg : msg);
        sc_remove_map(j, s->ns_fd[k]);
        sc_remove_modes(j, s->ns_fd[k]); /* a stop of an alloc/lock profile writes it */
        j->inject = CT_INJECTED_MOUNT;
        err = (flame_err)FLAME_ERR_INIT;
        if (sc_inject_undo(j, s->ns_fd[k], &err) < 0)
            sc_warn("%s", err.msg);
        else
            sc_warn("pid %d: removed %s, left by a sidecar that was killed", (int)j->st.pid,
                    j->agent_path);
    }
    return found;
}

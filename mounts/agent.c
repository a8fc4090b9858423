/* JVMTI glue of the perf-map agent: Agent_OnAttach/Agent_OnLoad parse the options, open
 * <dir>/perf-<pid>.map and switch the CompiledMethodLoad and DynamicCodeGenerated events on (and
 * replay what was compiled before), or switch them off and close the file. The library may be
 * loaded many times into one JVM (one `load` per profile): every call re-arms the same state.
 * Rule above all: never exit, abort or crash the JVM. Every failure is reported and leaves the
 * agent quiet. */
#include <errno.h>
#include <fcntl.h>
#include <jvmti.h>
#include <jvmticmlr.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/clock.h"
#include "mounts/agent.h"
#include "mounts/modes.h"

/* g_ctl serialises start/stop (the attach listener runs one command at a time, but OnLoad,
 * OnAttach and OnUnload are separate entry points). It is never taken by event callbacks. */
static pthread_mutex_t g_ctl = PTHREAD_MUTEX_INITIALIZER;
static JavaVM *g_vm;      /* set once, under g_ctl */
static jvmtiEnv *g_jvmti; /* one environment per loaded copy of the library, kept for re-arming */

/* g_lock guards the session: callbacks on compiler threads read it, start/stop change it. It is
 * held only around write(2) and these fields, never across a JVMTI call: the JVM may post
 * DynamicCodeGenerated while holding its own locks, so waiting on the JVM here could deadlock. */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_fd = -1;
static unsigned g_gen; /* bumped by every start/stop; a callback writes only into its session */
static struct agent_opts g_opts;
static char g_path[sizeof g_opts.dir + sizeof g_opts.tag + 32];
static unsigned long g_lines, g_bytes, g_methods, g_stubs;
static double g_method_ms; /* time spent in CompiledMethodLoad callbacks */

/* One line on the JVM's stderr, written with a single write(2) so it is not torn by the JVM's
 * own output. */
__attribute__((format(printf, 1, 2))) static void agent_say(const char *fmt, ...)
{
    char line[1200];
    int n = snprintf(line, sizeof line, "docker-flame agent: ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    agent_sanitize(line);
    size_t len = strlen(line);
    line[len++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, len);
    (void)w; /* nothing sensible to do if stderr is gone */
}

/* ---- Writing the map ------------------------------------------------------------------- */

/* Lines of one event are collected here and written with as few write(2) calls as possible,
 * each holding only whole lines: a reader (the live `top` view) never sees half a line as long
 * as it ignores an unterminated tail. */
struct outbuf {
    unsigned gen;
    size_t len;
    unsigned long lines, methods, stubs; /* added to the session's counters when written */
    double ms;
    char p[16384];
};

/* Snapshot the session for one event. Returns 0 when the agent is quiet (nothing to do). */
static int out_begin(struct outbuf *o, struct agent_opts *opts)
{
    pthread_mutex_lock(&g_lock);
    int active = g_fd >= 0;
    o->gen = g_gen;
    o->len = 0;
    o->lines = o->methods = o->stubs = 0;
    o->ms = 0;
    if (active && opts)
        *opts = g_opts;
    pthread_mutex_unlock(&g_lock);
    return active;
}

/* Caller holds g_lock. A failed write disables the agent until the next start. */
/* The locked helpers below never print: stderr may be a pipe that blocks (a stalled log
 * driver), and compiler threads must not queue behind g_lock for it. They leave a note that
 * out_flush prints after unlocking. */
struct note {
    char msg[sizeof g_path + 128];
};

static void out_write_locked(const char *buf, size_t len, struct note *note)
{
    size_t done = 0;
    while (done < len) {
        ssize_t w = write(g_fd, buf + done, len - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int e = w < 0 ? errno : ENOSPC;
            /* A short write (full file system) left part of a line at the end: cut the file
             * back to the last whole line, so readers never see a torn line. */
            const char *nl = done ? memrchr(buf, '\n', done) : NULL;
            size_t torn = done - (nl ? (size_t)(nl - buf) + 1 : 0);
            off_t size = torn ? lseek(g_fd, 0, SEEK_END) : -1;
            if (size >= (off_t)torn && ftruncate(g_fd, size - (off_t)torn) == 0)
                g_bytes -= torn;
            snprintf(note->msg, sizeof note->msg,
                     "writing %s failed: %s; agent disabled until the next start", g_path,
                     strerror(e));
            close(g_fd);
            g_fd = -1;
            return;
        }
        done += (size_t)w;
        g_bytes += (size_t)w;
    }
}

/* Caller holds g_lock. The sidecar deletes the map once it has copied it after `stop`. A map
 * that is gone while we still write means that `stop` never came (the profiler died, or a
 * second copy of this library took over): go quiet instead of filling an unlinked file on the
 * target's /tmp forever. Raw fstat: see agent_start. */
static int out_still_wanted_locked(struct note *note)
{
    struct stat st;
    if (syscall(SYS_fstat, g_fd, &st) < 0 || st.st_nlink > 0)
        return 1;
    snprintf(note->msg, sizeof note->msg, "info: %s was deleted; agent quiet until the next start",
             g_path);
    close(g_fd);
    g_fd = -1;
    return 0;
}

static void out_flush(struct outbuf *o)
{
    struct note note = {{0}};
    pthread_mutex_lock(&g_lock);
    if (g_fd >= 0 && g_gen == o->gen && out_still_wanted_locked(&note)) {
        if (o->len > 0)
            out_write_locked(o->p, o->len, &note);
        g_lines += o->lines;
        g_methods += o->methods;
        g_stubs += o->stubs;
        g_method_ms += o->ms;
    }
    pthread_mutex_unlock(&g_lock);
    if (note.msg[0])
        agent_say("%s", note.msg);
    o->len = 0;
    o->lines = o->methods = o->stubs = 0;
    o->ms = 0;
}

static void out_line(struct outbuf *o, uint64_t start, uint64_t size, const char *name)
{
    if (size == 0)
        return;
    if (sizeof o->p - o->len < AGENT_LINE_MAX)
        out_flush(o);
    int n = snprintf(o->p + o->len, sizeof o->p - o->len, "%llx %llx %s\n",
                     (unsigned long long)start, (unsigned long long)size, name);
    if (n < 0 || (size_t)n >= sizeof o->p - o->len)
        return; /* cannot happen: names are capped at AGENT_NAME_MAX */
    o->len += (size_t)n;
    o->lines++;
}

/* ---- DynamicCodeGenerated: interpreter, stubs, adapters ---------------------------------- */

static void JNICALL on_dynamic_code(jvmtiEnv *jvmti, const char *name, const void *address,
                                    jint length)
{
    (void)jvmti;
    struct outbuf o;
    if (!out_begin(&o, NULL) || length <= 0 || !address)
        return;
    char nm[AGENT_FRAME_MAX];
    snprintf(nm, sizeof nm, "%s", name && *name ? name : "[stub]");
    agent_sanitize(nm);
    out_line(&o, (uint64_t)(uintptr_t)address, (uint64_t)length, nm);
    o.stubs = 1;
    out_flush(&o);
}

/* ---- CompiledMethodLoad: Java names, with inlined frames --------------------------------- */

/* Names of the methods of one event, resolved once each: an nmethod has thousands of pcs but
 * few distinct methods. Not kept across events, because HotSpot reuses the jmethodID slots of
 * unloaded classes, so a global cache could hand out a stale name. */
struct name_cache {
    jvmtiEnv *jvmti;
    JNIEnv *jni;
    int sig;
    size_t mask;
    jmethodID *keys;
    char **vals;
};

static void resolve_frame(struct name_cache *c, jmethodID m, char *out, size_t cap)
{
    jvmtiEnv *j = c->jvmti;
    char *mname = NULL, *msig = NULL, *csig = NULL;
    jclass cls = NULL;
    if ((*j)->GetMethodName(j, m, &mname, c->sig ? &msig : NULL, NULL) != JVMTI_ERROR_NONE)
        mname = msig = NULL;
    if ((*j)->GetMethodDeclaringClass(j, m, &cls) != JVMTI_ERROR_NONE)
        cls = NULL;
    if (cls && (*j)->GetClassSignature(j, cls, &csig, NULL) != JVMTI_ERROR_NONE)
        csig = NULL;
    agent_frame_name(out, cap, csig, mname, msig);
    if (mname)
        (*j)->Deallocate(j, (unsigned char *)mname);
    if (msig)
        (*j)->Deallocate(j, (unsigned char *)msig);
    if (csig)
        (*j)->Deallocate(j, (unsigned char *)csig);
    /* The event's local frame is freed when the callback returns; deleting early keeps a huge
     * nmethod with many inlined classes from piling up references. */
    if (cls && c->jni)
        (*c->jni)->DeleteLocalRef(c->jni, cls);
}

/* The name of m, from the cache when possible. `tmp` is used when the cache cannot hold it. */
static const char *frame_name(struct name_cache *c, jmethodID m, char *tmp, size_t cap)
{
    if (c->keys) {
        size_t h = ((uintptr_t)m >> 3) * 0x9E3779B97F4A7C15ull;
        for (size_t i = 0; i <= c->mask; i++) {
            size_t k = (h + i) & c->mask;
            if (c->keys[k] == m)
                return c->vals[k];
            if (c->keys[k] == NULL) {
                resolve_frame(c, m, tmp, cap);
                char *dup = strdup(tmp);
                if (dup) {
                    c->keys[k] = m;
                    c->vals[k] = dup;
                }
                return tmp;
            }
        }
    }
    resolve_frame(c, m, tmp, cap);
    return tmp;
}

static int cache_init(struct name_cache *c, size_t expect)
{
    size_t cap = 16;
    while (cap < 2 * expect && cap < (1u << 16))
        cap <<= 1;
    c->mask = cap - 1;
    c->keys = calloc(cap, sizeof *c->keys);
    c->vals = calloc(cap, sizeof *c->vals);
    if (!c->keys || !c->vals) {
        free(c->keys);
        free(c->vals);
        c->keys = NULL;
        c->vals = NULL;
        return -1;
    }
    return 0;
}

static void cache_free(struct name_cache *c)
{
    if (c->vals)
        for (size_t i = 0; i <= c->mask; i++)
            free(c->vals[i]);
    free(c->keys);
    free(c->vals);
}

/* Context of the range split: the pc records of one nmethod and its own method. */
struct chain_ctx {
    const PCStackInfo *pcinfo;
    jmethodID method;
};

/* HotSpot fills PCStackInfo.methods innermost first: methods[0] is the method whose code is at
 * pc, methods[numstackframes-1] the compiled (outermost) one. Checked by tests/e2e/agent-*.t
 * (the map must show countPrimes->isPrime, never isPrime->countPrimes). */
static int chain_len(const struct chain_ctx *x, int idx)
{
    return idx < 0 ? 1 : x->pcinfo[idx].numstackframes;
}
static jmethodID chain_at(const struct chain_ctx *x, int idx, int outer_k)
{
    if (idx < 0)
        return x->method;
    const PCStackInfo *p = &x->pcinfo[idx];
    return p->methods[p->numstackframes - 1 - outer_k];
}

static int chain_same(int a, int b, void *ctx)
{
    const struct chain_ctx *x = ctx;
    int n = chain_len(x, a);
    if (n != chain_len(x, b))
        return 0;
    for (int k = 0; k < n; k++)
        if (chain_at(x, a, k) != chain_at(x, b, k))
            return 0;
    return 1;
}

/* "outer->...->inner", cut at a frame boundary when it would exceed AGENT_NAME_MAX: the
 * innermost frames are dropped, so samples land on a real caller rather than on a torn name. */
static void chain_name(struct name_cache *c, const struct chain_ctx *x, int idx, char *out,
                       size_t cap)
{
    char tmp[AGENT_FRAME_MAX];
    size_t len = 0;
    out[0] = '\0';
    int n = chain_len(x, idx);
    for (int k = 0; k < n; k++) {
        const char *f = frame_name(c, chain_at(x, idx, k), tmp, sizeof tmp);
        size_t fl = strlen(f), sep = k ? 2 : 0;
        if (len + sep + fl + 1 > cap)
            break;
        if (sep)
            memcpy(out + len, "->", 2);
        memcpy(out + len + sep, f, fl + 1);
        len += sep + fl;
    }
}

static const jvmtiCompiledMethodLoadInlineRecord *find_inline_record(const void *compile_info)
{
    for (const jvmtiCompiledMethodLoadRecordHeader *h = compile_info; h; h = h->next)
        if (h->kind == JVMTI_CMLR_INLINE_INFO)
            return (const jvmtiCompiledMethodLoadInlineRecord *)h;
    return NULL;
}

static void JNICALL on_compiled_method(jvmtiEnv *jvmti, jmethodID method, jint code_size,
                                       const void *code_addr, jint map_length,
                                       const jvmtiAddrLocationMap *map, const void *compile_info)
{
    (void)map_length;
    (void)map;
    struct agent_opts opts;
    struct outbuf o;
    if (!out_begin(&o, &opts) || code_size <= 0 || !code_addr)
        return;
    uint64_t start = (uint64_t)(uintptr_t)code_addr, size = (uint64_t)code_size;
    double t0 = 1e3 * mono_s(); /* vDSO clock: cheap next to the JVMTI lookups below */

    struct name_cache c = {.jvmti = jvmti, .sig = opts.sig};
    if (!g_vm || (*g_vm)->GetEnv(g_vm, (void **)&c.jni, JNI_VERSION_1_6) != JNI_OK)
        c.jni = NULL;
    struct chain_ctx x = {NULL, method};
    char name[AGENT_NAME_MAX];

    const jvmtiCompiledMethodLoadInlineRecord *rec =
        opts.inline_on ? find_inline_record(compile_info) : NULL;
    _cleanup_free_ struct agent_pc *pcs = NULL;
    _cleanup_free_ struct agent_seg *segs = NULL;
    size_t npcs = 0, nseg = 0, frames = 1;
    if (rec && rec->numpcs > 0 && rec->pcinfo) {
        npcs = (size_t)rec->numpcs;
        pcs = malloc(npcs * sizeof *pcs);
        segs = malloc((npcs + 1) * sizeof *segs);
    }
    if (pcs && segs) {
        x.pcinfo = rec->pcinfo;
        for (size_t i = 0; i < npcs; i++) {
            const PCStackInfo *p = &rec->pcinfo[i];
            /* A record without frames, or whose outermost frame is not this method, cannot be
             * named as an inlined chain: it falls back to the method alone (idx -1). */
            int ok =
                p->numstackframes > 0 && p->methods && p->methods[p->numstackframes - 1] == method;
            pcs[i] = (struct agent_pc){(uint64_t)(uintptr_t)p->pc, ok ? (int)i : -1};
            if (ok)
                frames += (size_t)p->numstackframes;
        }
        nseg = agent_split_code(start, size, pcs, npcs, segs, chain_same, &x);
    }
    /* Out of memory for the cache only costs speed; for the split, the method gets one line. */
    cache_init(&c, frames < 4096 ? frames : 4096);
    if (nseg == 0) {
        chain_name(&c, &x, -1, name, sizeof name);
        out_line(&o, start, size, name);
    }
    for (size_t i = 0; i < nseg; i++) {
        chain_name(&c, &x, segs[i].idx, name, sizeof name);
        out_line(&o, segs[i].start, segs[i].end - segs[i].start, name);
    }
    cache_free(&c);
    o.methods = 1;
    o.ms = 1e3 * mono_s() - t0;
    out_flush(&o);
}

/* ---- Start / stop ---------------------------------------------------------------------- */

static int agent_env(JavaVM *vm, struct agent_err *err)
{
    if (g_jvmti)
        return 0; /* loaded before: keep the environment, its capability and callbacks */
    jvmtiEnv *env = NULL;
    /* 1.2 is understood by every JDK we support (11+); asking for the header's newest version
     * would fail on older JVMs. */
    jint rc = (*vm)->GetEnv(vm, (void **)&env, JVMTI_VERSION_1_2);
    if (rc != JNI_OK || !env)
        return agent_fail(err, AGENT_RC_JVMTI, "GetEnv(JVMTI 1.2) failed: %d", (int)rc);
    g_jvmti = env;
    g_vm = vm;
    jvmtiCapabilities caps;
    memset(&caps, 0, sizeof caps);
    caps.can_generate_compiled_method_load_events = 1;
    jvmtiError e = (*env)->AddCapabilities(env, &caps);
    if (e != JVMTI_ERROR_NONE)
        goto fail;
    jvmtiEventCallbacks cb;
    memset(&cb, 0, sizeof cb);
    cb.CompiledMethodLoad = on_compiled_method;
    cb.DynamicCodeGenerated = on_dynamic_code;
    cb.SampledObjectAlloc = agent_on_alloc; /* called only while a profile asks (modes.c) */
    cb.MonitorContendedEnter = agent_on_contended_enter;
    cb.MonitorContendedEntered = agent_on_contended_entered;
    e = (*env)->SetEventCallbacks(env, &cb, (jint)sizeof cb);
    if (e != JVMTI_ERROR_NONE)
        goto fail;
    return 0;
fail:
    agent_jvmti_fail(g_jvmti, e, err, "JVMTI setup");
    (*env)->DisposeEnvironment(env);
    g_jvmti = NULL;
    return -1;
}

static int set_events(jvmtiEventMode mode, struct agent_err *err)
{
    static const jvmtiEvent ev[] = {JVMTI_EVENT_COMPILED_METHOD_LOAD,
                                    JVMTI_EVENT_DYNAMIC_CODE_GENERATED};
    int rc = 0;
    for (size_t i = 0; i < sizeof ev / sizeof ev[0]; i++) {
        jvmtiError e = (*g_jvmti)->SetEventNotificationMode(g_jvmti, mode, ev[i], NULL);
        if (e != JVMTI_ERROR_NONE && rc == 0)
            rc = agent_jvmti_fail(g_jvmti, e, err,
                                  mode == JVMTI_ENABLE ? "enable events" : "disable events");
    }
    return rc;
}

/* Switch the events off and close the file; the agent is quiet afterwards. Events already
 * running on compiler threads see g_fd < 0 (or a newer g_gen) and drop their lines. */
static JNIEnv *jni_env(void)
{
    JNIEnv *jni = NULL;
    if (!g_vm || (*g_vm)->GetEnv(g_vm, (void **)&jni, JNI_VERSION_1_6) != JNI_OK)
        return NULL;
    return jni;
}

static int agent_stop(struct agent_err *err)
{
    int rc = g_jvmti ? set_events(JVMTI_DISABLE, err) : 0;
    /* alloc/lock: the events off, the capabilities back, the samples written beside the map
     * (only when the session had a file: a start's own reset drops them) */
    if (g_jvmti) {
        struct agent_err merr = {0, {0}};
        pthread_mutex_lock(&g_lock);
        struct agent_opts o = g_opts;
        int have = g_fd >= 0;
        pthread_mutex_unlock(&g_lock);
        if (agent_modes_stop(g_jvmti, jni_env(), have ? &o : NULL, &merr) < 0 && rc == 0) {
            *err = merr;
            rc = -1;
        }
    }
    pthread_mutex_lock(&g_lock);
    int fd = g_fd;
    g_fd = -1;
    g_gen++;
    pthread_mutex_unlock(&g_lock);
    if (fd >= 0 && close(fd) < 0 && rc == 0)
        rc = agent_fail_errno(err, AGENT_RC_FILE, errno, "close %s", g_path);
    return rc;
}

static int agent_start(JavaVM *vm, const struct agent_opts *o, struct agent_err *err)
{
    /* A start while started (a previous profile never sent stop) re-opens and replays: the
     * sidecar deleted the old file, so appending to it would lose everything. */
    struct agent_err ignored;
    agent_stop(&ignored);

    char path[sizeof g_path];
    if (o->tag[0])
        snprintf(path, sizeof path, "%s/perf-%d.%s.map", o->dir, (int)getpid(), o->tag);
    else
        snprintf(path, sizeof path, "%s/perf-%d.map", o->dir, (int)getpid());
    /* Created by the JVM's own user, which is what perf expects. O_NOFOLLOW: a symlink planted
     * at the map path must not make us truncate what it points to. O_NONBLOCK: a FIFO there
     * would otherwise block the attach listener forever (it fails with ENXIO instead, and is
     * rejected as not a regular file below). O_APPEND: whole-line writes from concurrent
     * compiler threads, or from a second copy of this library, never interleave in a line. */
    int fd = open(
        path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC | O_APPEND | O_NONBLOCK, 0644);
    if (fd < 0)
        return agent_fail_errno(err, AGENT_RC_FILE, errno, "cannot create %s", path);
    /* fstat() through the raw syscall: glibc's fstat symbol is versioned GLIBC_2.33, and this
     * library must load into JVMs on much older libcs (x86_64 and aarch64 share this layout). */
    struct stat st;
    if (syscall(SYS_fstat, fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return agent_fail(err, AGENT_RC_FILE, "%s is not a regular file", path);
    }
    /* The environment only after the file: a start that cannot write leaves no JVMTI state. */
    if (agent_env(vm, err) < 0) {
        close(fd);
        unlink(path);
        return -1;
    }

    pthread_mutex_lock(&g_lock);
    g_fd = fd;
    g_gen++;
    g_opts = *o;
    memcpy(g_path, path, sizeof g_path);
    g_lines = g_bytes = g_methods = g_stubs = 0;
    g_method_ms = 0;
    pthread_mutex_unlock(&g_lock);

    /* Enable before replaying, so nothing compiled in between is missed (a method compiled
     * meanwhile may appear twice, with identical lines). */
    double t0 = 1e3 * mono_s();
    jvmtiPhase phase = JVMTI_PHASE_DEAD;
    if (set_events(JVMTI_ENABLE, err) < 0 ||
        (*g_jvmti)->GetPhase(g_jvmti, &phase) != JVMTI_ERROR_NONE)
        goto fail;
    /* GenerateEvents exists only in the live phase; at -agentpath load time nothing has been
     * compiled yet, and every stub will be announced as it is generated. */
    if (phase == JVMTI_PHASE_LIVE) {
        jvmtiError e = (*g_jvmti)->GenerateEvents(g_jvmti, JVMTI_EVENT_DYNAMIC_CODE_GENERATED);
        if (e == JVMTI_ERROR_NONE)
            e = (*g_jvmti)->GenerateEvents(g_jvmti, JVMTI_EVENT_COMPILED_METHOD_LOAD);
        if (e != JVMTI_ERROR_NONE) {
            agent_jvmti_fail(g_jvmti, e, err, "GenerateEvents");
            goto fail;
        }
    }
    if (agent_modes_start(g_jvmti, o, err) < 0)
        goto fail;
    /* A write that failed during the replay (full or read-only file system) already closed the
     * session: the map is incomplete, so this start failed. */
    pthread_mutex_lock(&g_lock);
    int written = g_fd >= 0;
    pthread_mutex_unlock(&g_lock);
    if (!written) {
        agent_fail(err, AGENT_RC_FILE, "writing %s failed during the replay", path);
        goto fail;
    }
    if (o->verbose) {
        pthread_mutex_lock(&g_lock);
        unsigned long methods = g_methods, stubs = g_stubs, lines = g_lines, bytes = g_bytes;
        pthread_mutex_unlock(&g_lock);
        agent_say("info: started %s: replayed %lu methods, %lu stubs, %lu lines, %lu bytes in "
                  "%.1f ms",
                  path, methods, stubs, lines, bytes, 1e3 * mono_s() - t0);
    }
    return 0;
fail:
    agent_stop(&ignored);
    unlink(path); /* leave the target as it was */
    return -1;
}

static int agent_run(JavaVM *vm, const char *options, struct agent_err *err)
{
    struct agent_opts o;
    if (agent_parse_opts(options, &o, err) < 0) {
        err->code = AGENT_RC_OPTIONS;
        return -1;
    }
    if (o.flush) {
        /* the running profile's file (its dir and tag), never one named by this command */
        pthread_mutex_lock(&g_lock);
        struct agent_opts cur = g_opts;
        int have = g_fd >= 0;
        pthread_mutex_unlock(&g_lock);
        if (!have || !g_jvmti)
            return agent_fail(err, AGENT_RC_OPTIONS, "flush: no profile runs");
        return agent_modes_flush(g_jvmti, jni_env(), &cur, err);
    }
    if (!o.stop)
        return agent_start(vm, &o, err);
    int verbose = g_opts.verbose;
    pthread_mutex_lock(&g_lock);
    unsigned long lines = g_lines, bytes = g_bytes, methods = g_methods, stubs = g_stubs;
    double ms = g_method_ms;
    pthread_mutex_unlock(&g_lock);
    if (agent_stop(err) < 0)
        return -1;
    if (verbose || o.verbose)
        agent_say("info: stopped %s: %lu methods, %lu stubs, %lu lines, %lu bytes, %.1f us per "
                  "method",
                  g_path, methods, stubs, lines, bytes, methods ? ms * 1e3 / (double)methods : 0.0);
    return 0;
}

static jint agent_entry(JavaVM *vm, const char *options)
{
    struct agent_err err = {0, {0}};
    pthread_mutex_lock(&g_ctl);
    int rc = agent_run(vm, options, &err);
    pthread_mutex_unlock(&g_ctl);
    if (rc == 0)
        return JNI_OK;
    agent_say("%s", err.msg);
    return err.code > 0 ? err.code : AGENT_RC_JVMTI;
}

/* `load <path> true <options>` over the attach socket (or jcmd JVMTI.agent_load). */
JNIEXPORT jint JNICALL Agent_OnAttach(JavaVM *vm, char *options, void *reserved)
{
    (void)reserved;
    return agent_entry(vm, options);
}

/* -agentpath:<path>=<options>, for tests. A failure here would stop the JVM from starting, so
 * it is reported and the JVM starts anyway, without the agent. */
JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *reserved)
{
    (void)reserved;
    agent_entry(vm, options);
    return JNI_OK;
}

JNIEXPORT void JNICALL Agent_OnUnload(JavaVM *vm)
{
    (void)vm;
    pthread_mutex_lock(&g_lock);
    if (g_fd >= 0)
        close(g_fd);
    g_fd = -1;
    g_gen++;
    pthread_mutex_unlock(&g_lock);
}

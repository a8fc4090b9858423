/* Allocation and lock profiles in the agent (docs/MODES.md): JVMTI SampledObjectAlloc and
 * MonitorContendedEnter/Entered, while a profile runs and only then. Samples are summed per
 * (kind, thread, stack, class) in a bounded table; `stop` switches the events off, gives the
 * capabilities back, waits for callbacks still running, names the frames and writes the table
 * as lines for the sidecar, which checks them again (it trusts nothing from the target).
 * Rules: never crash or stall the JVM; nothing of ours runs in its threads after stop; bounded
 * memory whatever the program does. */
#include <errno.h>
#include <fcntl.h>
#include <jvmti.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "mounts/agent.h"
#include "mounts/modes.h"

#define TABLE_MAX 16384 /* distinct stacks kept; beyond, samples are counted as dropped */
#define CLASS_MAX 256

struct entry {
    uint64_t hash;
    char kind; /* 'A' alloc, 'L' lock */
    char thread[16];
    char cls[CLASS_MAX];
    int n;
    uint64_t count0, value; /* objects or contentions; bytes or ns */
    jmethodID frames[];     /* leaf first, as GetStackTrace gives them */
};

/* g_mlock guards the table; callbacks hold it only to find or add an entry. g_on says whether
 * callbacks may record (they check it after counting themselves in g_inflight, so stop can wait
 * for those that passed the check). */
static pthread_mutex_t g_mlock = PTHREAD_MUTEX_INITIALIZER;
static struct entry **g_tab; /* TABLE_MAX * 2 slots, open addressing */
static size_t g_used;
static unsigned long long g_dropped, g_samples;
static int g_on, g_inflight;
static long long g_alloc, g_lock_ns;
/* The rate cap (agent_alloc_shift): g_alloc_cur = g_alloc << g_shift is the interval in force,
 * g_alloc_n the samples of the slot that began at g_slot_t0; only the callback that wins the
 * slot's compare-and-swap changes the interval, so g_shift has one writer at a time. */
static long long g_rate, g_alloc_cur, g_slot_t0;
static unsigned long long g_alloc_n;
static int g_shift;
static int g_depth;
static unsigned long long g_lock_acc; /* ns waited, summed over every contention */
static long long g_t0;                /* ns (monotonic) when recording started */
static jvmtiCapabilities g_caps;      /* what start added (and stop gives back) */

int agent_jvmti_fail(jvmtiEnv *j, jvmtiError e, struct agent_err *err, const char *what)
{
    char *name = NULL;
    if (!j || (*j)->GetErrorName(j, e, &name) != JVMTI_ERROR_NONE)
        name = NULL;
    agent_fail(err, AGENT_RC_JVMTI, "%s failed: JVMTI error %d%s%s", what, (int)e, name ? " " : "",
               name ? name : "");
    if (name)
        (*j)->Deallocate(j, (unsigned char *)name);
    return -1;
}

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static uint64_t mix(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

/* Add one sample (caller counted itself in g_inflight and saw g_on). */
static void add(char kind, const char *thread, const char *cls, const jvmtiFrameInfo *fr, int n,
                uint64_t count0, uint64_t value)
{
    uint64_t h = mix(0xcbf29ce484222325ull, &kind, 1);
    h = mix(h, thread, strlen(thread));
    h = mix(h, cls, strlen(cls));
    for (int i = 0; i < n; i++)
        h = mix(h, &fr[i].method, sizeof fr[i].method);
    pthread_mutex_lock(&g_mlock);
    if (!g_tab || !__atomic_load_n(&g_on, __ATOMIC_ACQUIRE))
        goto out;
    g_samples++;
    size_t cap = 2 * TABLE_MAX, k = (size_t)h & (cap - 1);
    for (size_t probe = 0; probe < cap; probe++, k = (k + 1) & (cap - 1)) {
        struct entry *e = g_tab[k];
        if (!e) {
            if (g_used >= TABLE_MAX)
                break;
            e = malloc(sizeof *e + (size_t)n * sizeof(jmethodID));
            if (!e)
                break;
            e->hash = h;
            e->kind = kind;
            snprintf(e->thread, sizeof e->thread, "%s", thread);
            snprintf(e->cls, sizeof e->cls, "%s", cls);
            e->n = n;
            e->count0 = e->value = 0;
            for (int i = 0; i < n; i++)
                e->frames[i] = fr[i].method;
            g_tab[k] = e;
            g_used++;
        } else if (e->hash != h || e->kind != kind || e->n != n || strcmp(e->thread, thread) ||
                   strcmp(e->cls, cls)) {
            continue;
        } else {
            int same = 1;
            for (int i = 0; i < n && same; i++)
                same = e->frames[i] == fr[i].method;
            if (!same)
                continue;
        }
        e->count0 += count0;
        e->value += value;
        goto out;
    }
    g_dropped++;
out:
    pthread_mutex_unlock(&g_mlock);
}

/* The current thread's name as the kernel shows it (HotSpot sets the native name from the Java
 * one, cut at 15 bytes), so that alloc and lock stacks start where CPU stacks do. */
static void thread_name(jvmtiEnv *jvmti, JNIEnv *jni, char *out, size_t cap)
{
    jvmtiThreadInfo ti;
    memset(&ti, 0, sizeof ti);
    snprintf(out, cap, "[unknown]");
    if ((*jvmti)->GetThreadInfo(jvmti, NULL, &ti) != JVMTI_ERROR_NONE)
        return;
    if (ti.name) {
        snprintf(out, cap < 16 ? cap : 16, "%s", ti.name);
        for (char *p = out; *p; p++)
            if (*p == ';' || (unsigned char)*p < 0x20 || *p == 0x7f)
                *p = '_';
        (*jvmti)->Deallocate(jvmti, (unsigned char *)ti.name);
    }
    if (jni && ti.thread_group)
        (*jni)->DeleteLocalRef(jni, ti.thread_group);
    if (jni && ti.context_class_loader)
        (*jni)->DeleteLocalRef(jni, ti.context_class_loader);
}

static void class_of(jvmtiEnv *jvmti, jclass k, char *out, size_t cap)
{
    char *sig = NULL;
    if (!k || (*jvmti)->GetClassSignature(jvmti, k, &sig, NULL) != JVMTI_ERROR_NONE)
        sig = NULL;
    agent_class_name(out, cap, sig);
    if (sig)
        (*jvmti)->Deallocate(jvmti, (unsigned char *)sig);
}

/* One sample of the current thread: its stack, its name, the class. */
static void sample(jvmtiEnv *jvmti, JNIEnv *jni, char kind, jclass k, uint64_t count0,
                   uint64_t value)
{
    int depth = g_depth > 0 && g_depth <= AGENT_DEPTH_MAX ? g_depth : AGENT_DEPTH;
    jvmtiFrameInfo *fr = malloc((size_t)depth * sizeof *fr);
    if (!fr)
        return;
    jint n = 0;
    if ((*jvmti)->GetStackTrace(jvmti, NULL, 0, depth, fr, &n) != JVMTI_ERROR_NONE)
        n = 0;
    char thread[16], cls[CLASS_MAX];
    thread_name(jvmti, jni, thread, sizeof thread);
    class_of(jvmti, k, cls, sizeof cls);
    add(kind, thread, cls, fr, n, count0, value);
    free(fr);
}

static int enter(void)
{
    __atomic_add_fetch(&g_inflight, 1, __ATOMIC_ACQ_REL);
    if (__atomic_load_n(&g_on, __ATOMIC_ACQUIRE))
        return 1;
    __atomic_sub_fetch(&g_inflight, 1, __ATOMIC_ACQ_REL);
    return 0;
}

static void leave(void)
{
    __atomic_sub_fetch(&g_inflight, 1, __ATOMIC_ACQ_REL);
}

/* After each alloc sample: count it; the first callback past the end of a slot re-steers the
 * interval for the next one (agent_alloc_shift). */
static void alloc_rate_cap(jvmtiEnv *jvmti)
{
    __atomic_add_fetch(&g_alloc_n, 1, __ATOMIC_RELAXED);
    long long now = now_ns(), t0 = __atomic_load_n(&g_slot_t0, __ATOMIC_ACQUIRE);
    if (now - t0 < AGENT_ALLOC_SLOT_NS ||
        !__atomic_compare_exchange_n(&g_slot_t0, &t0, now, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
        return;
    unsigned long long n = __atomic_exchange_n(&g_alloc_n, 0, __ATOMIC_RELAXED);
    int shift = __atomic_load_n(&g_shift, __ATOMIC_RELAXED);
    int k = agent_alloc_shift(n, (uint64_t)(now - t0), (uint64_t)g_rate, (uint64_t)g_alloc, shift);
    if (k == shift)
        return;
    /* JVMTI allows it in the live phase, from any thread; the JVM reads it at each thread's
     * next sample */
    if ((*jvmti)->SetHeapSamplingInterval(jvmti, (jint)(g_alloc << k)) == JVMTI_ERROR_NONE) {
        __atomic_store_n(&g_shift, k, __ATOMIC_RELAXED);
        __atomic_store_n(&g_alloc_cur, g_alloc << k, __ATOMIC_RELAXED);
    }
}

void JNICALL agent_on_alloc(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jobject object,
                            jclass klass, jlong size)
{
    (void)thread;
    (void)object;
    if (!enter())
        return;
    /* A sample stands for size / p bytes, p the chance that an object of its size is sampled
     * (agent_alloc_weight): ~interval for small objects, the object itself for huge ones. The
     * interval is the one in force now: a thread's next sample point was drawn at its previous
     * sample, so after a change one sample per thread is weighed with the new interval instead
     * of the old (changes come at most every AGENT_ALLOC_SLOT_NS, by powers of 2). */
    uint64_t bytes, objs;
    long long interval = __atomic_load_n(&g_alloc_cur, __ATOMIC_RELAXED);
    agent_alloc_weight(size > 0 ? (uint64_t)size : 1, (uint64_t)interval, &bytes, &objs);
    sample(jvmti, jni, 'A', klass, objs, bytes);
    if (g_rate)
        alloc_rate_cap(jvmti);
    leave();
}

void JNICALL agent_on_contended_enter(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jobject object)
{
    (void)jni;
    (void)thread;
    (void)object;
    /* The thread's enter time in our environment's thread-local slot (JVMTI's, not __thread:
     * that would make the library need the dynamic loader's __tls_get_addr) */
    long long t = __atomic_load_n(&g_on, __ATOMIC_ACQUIRE) ? now_ns() : 0;
    (*jvmti)->SetThreadLocalStorage(jvmti, NULL, (const void *)(intptr_t)t);
}

void JNICALL agent_on_contended_entered(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread,
                                        jobject object)
{
    (void)thread;
    void *slot = NULL;
    if ((*jvmti)->GetThreadLocalStorage(jvmti, NULL, &slot) != JVMTI_ERROR_NONE)
        slot = NULL;
    long long t = (long long)(intptr_t)slot;
    if (t)
        (*jvmti)->SetThreadLocalStorage(jvmti, NULL, NULL);
    if (!t || !enter())
        return;
    long long d = now_ns() - t;
    if (d <= 0 || t < g_t0) { /* a wait begun before this profile */
        leave();
        return;
    }
    /* Sampled by time waited: one sample each time the sum of waits crosses a multiple of the
     * interval, weighing max(d, interval), so that short waits count for what they sum to. */
    uint64_t iv = (uint64_t)g_lock_ns, ud = (uint64_t)d;
    uint64_t before = __atomic_fetch_add(&g_lock_acc, ud, __ATOMIC_RELAXED);
    if ((before + ud) / iv != before / iv) {
        uint64_t w = ud > iv ? ud : iv;
        jclass k = jni && object ? (*jni)->GetObjectClass(jni, object) : NULL;
        sample(jvmti, jni, 'L', k, (w + ud / 2) / ud, w);
        if (k)
            (*jni)->DeleteLocalRef(jni, k);
    }
    leave();
}

static void set_mode_events(jvmtiEnv *j, jvmtiEventMode m, int alloc, int lock)
{
    if (alloc)
        (*j)->SetEventNotificationMode(j, m, JVMTI_EVENT_SAMPLED_OBJECT_ALLOC, NULL);
    if (lock) {
        (*j)->SetEventNotificationMode(j, m, JVMTI_EVENT_MONITOR_CONTENDED_ENTER, NULL);
        (*j)->SetEventNotificationMode(j, m, JVMTI_EVENT_MONITOR_CONTENDED_ENTERED, NULL);
    }
}

int agent_modes_start(jvmtiEnv *j, const struct agent_opts *o, struct agent_err *err)
{
    if (!o->alloc && !o->lock)
        return 0;
    struct agent_err ignored;
    agent_modes_stop(j, NULL, NULL, &ignored); /* a start while started: the old table goes */
    jvmtiCapabilities c;
    memset(&c, 0, sizeof c);
    c.can_generate_sampled_object_alloc_events = o->alloc ? 1 : 0;
    c.can_generate_monitor_events = o->lock ? 1 : 0;
    jvmtiError e = (*j)->AddCapabilities(j, &c);
    if (e == JVMTI_ERROR_NOT_AVAILABLE && o->alloc)
        return agent_fail(err, AGENT_RC_BUSY,
                          "alloc: the JVM's allocation sampler is held by another agent "
                          "(JVMTI can_generate_sampled_object_alloc_events is one agent's at a "
                          "time); stop that profiler first");
    if (e != JVMTI_ERROR_NONE)
        return agent_jvmti_fail(j, e, err, "AddCapabilities(alloc/lock)");
    g_caps = c;
    if (o->alloc && (e = (*j)->SetHeapSamplingInterval(j, (jint)o->alloc)) != JVMTI_ERROR_NONE) {
        agent_jvmti_fail(j, e, err, "SetHeapSamplingInterval");
        goto fail;
    }
    struct entry **tab = calloc(2 * TABLE_MAX, sizeof *tab);
    if (!tab) {
        agent_fail(err, AGENT_RC_JVMTI, "out of memory");
        goto fail;
    }
    pthread_mutex_lock(&g_mlock);
    g_tab = tab;
    g_used = 0;
    g_dropped = g_samples = 0;
    g_alloc = o->alloc;
    g_alloc_cur = o->alloc;
    g_rate = o->rate;
    g_shift = 0;
    g_alloc_n = 0;
    g_slot_t0 = now_ns();
    g_lock_ns = o->lock;
    g_depth = o->depth;
    g_lock_acc = 0;
    g_t0 = now_ns();
    pthread_mutex_unlock(&g_mlock);
    __atomic_store_n(&g_on, 1, __ATOMIC_RELEASE);
    set_mode_events(j, JVMTI_ENABLE, o->alloc != 0, o->lock != 0);
    return 0;
fail:
    (*j)->RelinquishCapabilities(j, &c);
    memset(&g_caps, 0, sizeof g_caps);
    return -1;
}

/* ---- stop: names and the file ---- */

struct wbuf {
    int fd, failed;
    size_t len;
    char p[65536];
};

static void wflush(struct wbuf *b)
{
    for (size_t done = 0; done < b->len && !b->failed;) {
        ssize_t w = write(b->fd, b->p + done, b->len - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            b->failed = w < 0 ? errno : ENOSPC;
        else
            done += (size_t)w;
    }
    b->len = 0;
}

static void wput(struct wbuf *b, const char *s, size_t n)
{
    while (n && !b->failed) {
        if (b->len == sizeof b->p)
            wflush(b);
        size_t k = sizeof b->p - b->len < n ? sizeof b->p - b->len : n;
        memcpy(b->p + b->len, s, k);
        b->len += k;
        s += k;
        n -= k;
    }
}

static void method_name(jvmtiEnv *j, JNIEnv *jni, jmethodID m, int sig, char *out, size_t cap)
{
    char *mname = NULL, *msig = NULL, *csig = NULL;
    jclass cls = NULL;
    if ((*j)->GetMethodName(j, m, &mname, sig ? &msig : NULL, NULL) != JVMTI_ERROR_NONE)
        mname = msig = NULL;
    if ((*j)->GetMethodDeclaringClass(j, m, &cls) != JVMTI_ERROR_NONE)
        cls = NULL;
    if (cls && (*j)->GetClassSignature(j, cls, &csig, NULL) != JVMTI_ERROR_NONE)
        csig = NULL;
    if (!mname)
        snprintf(out, cap, "[unknown method]");
    else
        agent_frame_name(out, cap, csig, mname, msig);
    for (char *p = out; *p; p++)
        if (*p == ';')
            *p = '_';
    if (mname)
        (*j)->Deallocate(j, (unsigned char *)mname);
    if (msig)
        (*j)->Deallocate(j, (unsigned char *)msig);
    if (csig)
        (*j)->Deallocate(j, (unsigned char *)csig);
    if (cls && jni)
        (*jni)->DeleteLocalRef(jni, cls);
}

/* Names of the methods seen, resolved once each during one stop. */
#define NAMES_CAP 65536
struct names {
    jmethodID key[NAMES_CAP];
    char *val[NAMES_CAP];
};

static const char *cached_name(struct names *c, jvmtiEnv *j, JNIEnv *jni, jmethodID m, int sig,
                               char *tmp, size_t cap)
{
    size_t k = (size_t)(((uintptr_t)m >> 3) * 0x9E3779B97F4A7C15ull) & (NAMES_CAP - 1);
    for (size_t i = 0; c && i < 64; i++, k = (k + 1) & (NAMES_CAP - 1)) {
        if (c->key[k] == m && c->val[k])
            return c->val[k];
        if (!c->key[k]) {
            method_name(j, jni, m, sig, tmp, cap);
            c->val[k] = strdup(tmp);
            c->key[k] = c->val[k] ? m : NULL;
            return tmp;
        }
    }
    method_name(j, jni, m, sig, tmp, cap);
    return tmp;
}

/* One line per entry: "A <objects> <bytes> thread;frame;...;class_[a]" (L: contentions, ns,
 * class_[l]), root first. */
static void write_table(jvmtiEnv *j, JNIEnv *jni, int sig, struct entry **tab, struct wbuf *b)
{
    char name[AGENT_FRAME_MAX], head[96];
    struct names *c = calloc(1, sizeof *c); /* NULL: resolved each time, slower */
    for (size_t k = 0; k < 2 * TABLE_MAX && !b->failed; k++) {
        struct entry *e = tab[k];
        if (!e)
            continue;
        int n = snprintf(head, sizeof head, "%c %llu %llu ", e->kind, (unsigned long long)e->count0,
                         (unsigned long long)e->value);
        wput(b, head, (size_t)n);
        wput(b, e->thread, strlen(e->thread));
        for (int i = e->n - 1; i >= 0; i--) {
            const char *nm = cached_name(c, j, jni, e->frames[i], sig, name, sizeof name);
            wput(b, ";", 1);
            wput(b, nm, strlen(nm));
        }
        wput(b, ";", 1);
        wput(b, e->cls, strlen(e->cls));
        wput(b, e->kind == 'A' ? "_[a]\n" : "_[l]\n", 5);
    }
    if (c) {
        for (size_t k = 0; k < NAMES_CAP; k++)
            free(c->val[k]);
        free(c);
    }
}

static void free_table(struct entry **tab)
{
    for (size_t k = 0; k < 2 * TABLE_MAX; k++)
        free(tab[k]);
    free(tab);
}

/* <o->dir>/perf-<pid>.<o->tag>.modes, anew, with the table's lines. Under the agent's control
 * lock (one stop or flush at a time). */
static int write_file(jvmtiEnv *j, JNIEnv *jni, const struct agent_opts *o, struct entry **tab,
                      unsigned long long samples, unsigned long long dropped, struct agent_err *err)
{
    int rc = 0;
    char path[sizeof o->dir + sizeof o->tag + 48];
    if (o->tag[0])
        snprintf(path, sizeof path, "%s/perf-%d.%s.modes", o->dir, (int)getpid(), o->tag);
    else
        snprintf(path, sizeof path, "%s/perf-%d.modes", o->dir, (int)getpid());
    /* as the map: the JVM's user, no symlink followed, no FIFO waited on, 0600 */
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0600);
    struct stat st;
    if (fd < 0) {
        rc = agent_fail_errno(err, AGENT_RC_FILE, errno, "cannot create %s", path);
    } else if (syscall(SYS_fstat, fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        rc = agent_fail(err, AGENT_RC_FILE, "%s is not a regular file", path);
    } else {
        static struct wbuf b; /* under the agent's control lock: one stop at a time */
        b.fd = fd;
        b.failed = 0;
        b.len = 0;
        char head[96];
        int n = snprintf(head, sizeof head, "# samples %llu dropped %llu\n", samples, dropped);
        wput(&b, head, (size_t)n);
        write_table(j, jni, o->sig, tab, &b);
        wflush(&b);
        if (b.failed) {
            rc = agent_fail_errno(err, AGENT_RC_FILE, b.failed, "writing %s", path);
            if (ftruncate(fd, 0) < 0) { /* nothing more to do */
            }
        }
    }
    if (fd >= 0)
        close(fd);
    return rc;
}

int agent_modes_stop(jvmtiEnv *j, JNIEnv *jni, const struct agent_opts *o, struct agent_err *err)
{
    if (!g_caps.can_generate_sampled_object_alloc_events && !g_caps.can_generate_monitor_events)
        return 0;
    __atomic_store_n(&g_on, 0, __ATOMIC_RELEASE);
    set_mode_events(j, JVMTI_DISABLE, g_caps.can_generate_sampled_object_alloc_events,
                    g_caps.can_generate_monitor_events);
    /* Give the solo capability back at once: the next profiler (ours or another) may take it. */
    (*j)->RelinquishCapabilities(j, &g_caps);
    memset(&g_caps, 0, sizeof g_caps);
    /* Callbacks that passed the check finish within a stack walk; wait at most 2 s, then keep
     * (leak) the table rather than free memory a late callback could still touch. */
    int drained = 0;
    for (int i = 0; i < 2000 && !(drained = __atomic_load_n(&g_inflight, __ATOMIC_ACQUIRE) == 0);
         i++) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    pthread_mutex_lock(&g_mlock);
    struct entry **tab = g_tab;
    unsigned long long dropped = g_dropped, samples = g_samples;
    g_tab = NULL;
    pthread_mutex_unlock(&g_mlock);
    int rc = tab && o ? write_file(j, jni, o, tab, samples, dropped, err) : 0;
    if (tab && drained)
        free_table(tab);
    return rc;
}

int agent_modes_flush(jvmtiEnv *j, JNIEnv *jni, const struct agent_opts *o, struct agent_err *err)
{
    if (!g_caps.can_generate_sampled_object_alloc_events && !g_caps.can_generate_monitor_events)
        return agent_fail(err, AGENT_RC_OPTIONS, "flush: no alloc or lock profile runs");
    struct entry **fresh = calloc(2 * TABLE_MAX, sizeof *fresh);
    if (!fresh)
        return agent_fail(err, AGENT_RC_JVMTI, "flush: out of memory");
    /* The events stay on: callbacks reach the table only under g_mlock, through g_tab, so once
     * the empty one is in place the old one is ours alone and is named, written and freed
     * while the program goes on (no wait for callbacks, unlike stop). */
    pthread_mutex_lock(&g_mlock);
    struct entry **tab = g_tab;
    unsigned long long dropped = g_dropped, samples = g_samples;
    if (tab) {
        g_tab = fresh;
        g_used = 0;
        g_dropped = g_samples = 0;
        fresh = NULL;
    }
    pthread_mutex_unlock(&g_mlock);
    free(fresh);
    if (!tab)
        return agent_fail(err, AGENT_RC_OPTIONS, "flush: no alloc or lock profile runs");
    int rc = write_file(j, jni, o, tab, samples, dropped, err);
    free_table(tab);
    return rc;
}

/* java.util.concurrent lock waits, told from the other off-CPU stacks (docs/MODES.md
 * "java.util.concurrent locks"). Pure: folded text in, folded text out.
 *
 * A thread that waits for a ReentrantLock (a read/write lock, a Semaphore, a StampedLock) leaves
 * the CPU in LockSupport.park called by the synchronizer's acquire. A thread parked for any other
 * reason (a Condition's await, a queue's take, an idle pool, a Future, a latch) parks through the
 * same LockSupport.park, so the rule is about the caller: the frame that called park must be an
 * acquire of AbstractQueuedSynchronizer (AbstractQueuedLongSynchronizer) or of StampedLock, with
 * no Condition's await below it, and the synchronizer entered must be a lock (below). Every name
 * is the target's: matching is on whole class and method names, nothing is copied but frames
 * that were in the input, and the one frame made here (the leaf) is a class name of the input
 * with "_[l]" appended. */
#include <stdbool.h>
#include <string.h>

#include "sidecar/sidecar.h"

#define LOCKS "java.util.concurrent.locks."
#define JUC "java.util.concurrent."

typedef struct jframe {
    const char *p; /* the frame as it is in the stack */
    size_t n;
    bool java;       /* looks like "pkg.Class.method" */
    const char *cls; /* "pkg.Class", within p */
    size_t ncls;
    const char *m; /* "method", within p */
    size_t nm;
} jframe;

static bool has_prefix(const char *s, size_t n, const char *pre)
{
    size_t k = strlen(pre);
    return n >= k && !memcmp(s, pre, k);
}

static bool is(const char *s, size_t n, const char *word)
{
    return n == strlen(word) && !memcmp(s, word, n);
}

/* f's Java name: a return type (--signatures keeps "long a.B.m(int)"), the parameters and a mark
 * (_[int], _[i], _[j]) taken off; not Java when there is no class or method left, or when it
 * has what no Java name has (C++'s "::", a "[lib]" or "[unknown]" frame, a space left). */
static void parse_frame(jframe *f)
{
    const char *p = f->p;
    size_t n = f->n;
    f->java = false;
    const char *paren = memchr(p, '(', n);
    if (paren)
        n = (size_t)(paren - p);
    else if (n >= 4 && p[n - 1] == ']') {
        /* a mark: "_[" and at most 3 lowercase letters before the ']' */
        size_t k = n - 1;
        while (k > 0 && n - 1 - k < 4 && p[k - 1] >= 'a' && p[k - 1] <= 'z')
            k--;
        if (k >= 2 && k < n - 1 && p[k - 1] == '[' && p[k - 2] == '_')
            n = k - 2;
    }
    for (size_t i = n; i > 0; i--)
        if (p[i - 1] == ' ') { /* "<type> <name>": the name */
            p += i;
            n -= i;
            break;
        }
    if (n == 0 || p[0] == '[' || memchr(p, ':', n) || memchr(p, ' ', n))
        return;
    size_t dot = n;
    while (dot > 0 && p[dot - 1] != '.')
        dot--;
    if (dot < 2 || dot >= n) /* "x." ".m" "m": no class or no method */
        return;
    f->java = true;
    f->cls = p;
    f->ncls = dot - 1;
    f->m = p + dot;
    f->nm = n - dot;
}

/* LockSupport.park, parkNanos, parkUntil; Unsafe.park where LockSupport's frame was inlined
 * away. */
static bool is_park(const jframe *f)
{
    if (!f->java)
        return false;
    if (is(f->cls, f->ncls, LOCKS "LockSupport"))
        return has_prefix(f->m, f->nm, "park");
    return (is(f->cls, f->ncls, "jdk.internal.misc.Unsafe") ||
            is(f->cls, f->ncls, "sun.misc.Unsafe")) &&
           is(f->m, f->nm, "park");
}

static bool is_aqs(const jframe *f)
{
    return f->java && (is(f->cls, f->ncls, LOCKS "AbstractQueuedSynchronizer") ||
                       is(f->cls, f->ncls, LOCKS "AbstractQueuedLongSynchronizer"));
}

/* The synchronizer's acquire that parks: AQS's acquire* (JDK 14+ parks in acquire itself;
 * older JDKs in acquireQueued, doAcquire*, parkAndCheckInterrupt), StampedLock's. */
static bool is_acquire(const jframe *f)
{
    if (is_aqs(f))
        return has_prefix(f->m, f->nm, "acquire") || has_prefix(f->m, f->nm, "doAcquire") ||
               is(f->m, f->nm, "parkAndCheckInterrupt");
    return f->java && is(f->cls, f->ncls, LOCKS "StampedLock") &&
           (is(f->m, f->nm, "acquireRead") || is(f->m, f->nm, "acquireWrite"));
}

/* A Condition's await (AQS's, AQLS's ConditionObject): a wait for a signal, not for a lock;
 * its re-acquire after the signal goes with it. */
static bool is_condition(const jframe *f)
{
    return f->java &&
           (has_prefix(f->cls, f->ncls, LOCKS "AbstractQueuedSynchronizer$Condition") ||
            has_prefix(f->cls, f->ncls, LOCKS "AbstractQueuedLongSynchronizer$Condition"));
}

/* The frames of a lock's way in: java.util.concurrent.locks (ReentrantLock.lock, its Sync, the
 * read/write locks, StampedLock, AQS) and Semaphore. */
static bool in_lock(const jframe *f)
{
    return f->java && (has_prefix(f->cls, f->ncls, LOCKS) || is(f->cls, f->ncls, JUC "Semaphore") ||
                       has_prefix(f->cls, f->ncls, JUC "Semaphore$"));
}

static bool next_frame(const char *s, size_t len, size_t *at, jframe *f)
{
    if (*at > len)
        return false;
    const char *p = s + *at, *e = memchr(p, ';', len - *at);
    f->p = p;
    f->n = e ? (size_t)(e - p) : len - *at;
    *at += f->n + 1;
    parse_frame(f);
    return true;
}

static bool ends_with(const char *s, size_t n, const char *w)
{
    size_t k = strlen(w);
    return n >= k && !memcmp(s + n - k, w, k) && (n == k || s[n - k - 1] == ';');
}

long sc_juc_lock(const char *stack, size_t len, int nroot, char *out, size_t cap)
{
    /* wall: a stack on CPU or waiting for one is no wait for a lock */
    if (ends_with(stack, len, "[running]") || ends_with(stack, len, "[runnable]"))
        return 0;
    if (nroot < 1)
        return 0;
    size_t at = 0, root_end = 0, java_start = 0;
    jframe f, prev = {0}, entry = {0}, before_entry = {0};
    bool seen_java = false, in_run = false, found = false;
    int i = 0;
    for (; next_frame(stack, len, &at, &f); i++) {
        if (i < nroot) { /* the thread (and the JVM): names, never frames */
            root_end = at - 1;
            continue;
        }
        if (!seen_java) {
            if (!f.java)
                continue; /* the native frames of the thread's start: not the monitors' shape */
            seen_java = true;
            java_start = (size_t)(f.p - stack);
        }
        if (is_park(&f)) {
            found = true;
            break;
        }
        if (is_condition(&f))
            return 0;
        if (in_lock(&f)) {
            if (!in_run) {
                entry = f;
                before_entry = prev;
            }
            in_run = true;
        } else
            in_run = false;
        prev = f;
    }
    if (!found || i <= nroot || !is_acquire(&prev) || !in_run)
        return 0;
    /* The lock's class: that of the first frame of its way in (ReentrantLock.lock ->
     * ReentrantLock; its Sync when lock() was inlined away). AQS entered straight from a
     * synchronizer of java.util.concurrent is no lock (CountDownLatch.await, a pool worker's
     * own mutex); from elsewhere it is a lock of the application's, named AQS. */
    const char *cls = entry.cls;
    size_t ncls = entry.ncls;
    if (is_aqs(&entry) && before_entry.java && has_prefix(before_entry.cls, before_entry.ncls, JUC))
        return 0;
    static const char *const impl[] = {"$NonfairSync", "$FairSync", "$Sync"};
    for (size_t k = 0; k < sizeof impl / sizeof *impl; k++) {
        size_t m = strlen(impl[k]);
        if (ncls > m && !memcmp(cls + ncls - m, impl[k], m)) {
            ncls -= m;
            break;
        }
    }
    size_t head = root_end, body = (size_t)(prev.p + prev.n - stack) - java_start;
    size_t need = head + 1 + body + 1 + ncls + 4;
    if (need > cap)
        return -1;
    char *o = out;
    memcpy(o, stack, head);
    o += head;
    *o++ = ';';
    memcpy(o, stack + java_start, body);
    o += body;
    *o++ = ';';
    memcpy(o, cls, ncls);
    o += ncls;
    memcpy(o, "_[l]", 4);
    o += 4;
    return (long)(o - out);
}

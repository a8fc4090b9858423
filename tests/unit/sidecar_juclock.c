/* sidecar/juclock.c: which off-CPU stacks are waits for a java.util.concurrent lock, and the lock
 * stack each becomes (docs/MODES.md "java.util.concurrent locks"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sidecar/sidecar.h"
#include "tests/unit/tap.h"

#define L "java.util.concurrent.locks."
#define AQS L "AbstractQueuedSynchronizer"
/* the native start of a HotSpot thread and the park's native end, as the walker names them */
#define START                                                                                      \
    "__clone3;start_thread;thread_native_entry;Thread::call_run;JavaCalls::call_helper;call_stub;"
#define PARK                                                                                       \
    L "LockSupport.park;jdk.internal.misc.Unsafe.park;Unsafe_Park;Parker::park;__pthread_cond_"    \
      "wait;__futex_abstimed_wait_common"

static char out[1 << 16];

/* the lock stack of s ("" when none, "<too small>" when it does not fit) */
static const char *juc(const char *s, int nroot)
{
    long n = sc_juc_lock(s, strlen(s), nroot, out, sizeof out - 1);
    if (n < 0)
        return "<too small>";
    out[n] = 0;
    return out;
}

static void want(const char *s, int nroot, const char *expect, const char *what)
{
    is_str(juc(s, nroot), expect, "%s", what);
}

int main(void)
{
    /* ---- waits for a lock: kept ---- */
    want("lock-1;" START "java.lang.Thread.run;JucFixture.loop;JucFixture.jucContend;" L
         "ReentrantLock.lock;" L "ReentrantLock$Sync.lock;" AQS ".acquire;" AQS ".acquire;" PARK,
         1,
         "lock-1;java.lang.Thread.run;JucFixture.loop;JucFixture.jucContend;" L
         "ReentrantLock.lock;" L "ReentrantLock$Sync.lock;" AQS ".acquire;" AQS ".acquire;" L
         "ReentrantLock_[l]",
         "ReentrantLock.lock: the thread, its Java frames to the acquire, the lock's class leaf");
    want("java-7 Main;w;" START "java.lang.Thread.run;A.b;" L "ReentrantLock.lock;" AQS
         ".acquire;" PARK,
         2,
         "java-7 Main;w;java.lang.Thread.run;A.b;" L "ReentrantLock.lock;" AQS ".acquire;" L
         "ReentrantLock_[l]",
         "several JVMs: the JVM's root and the thread kept");
    want("c;java.lang.Thread.run;java.util.concurrent.LinkedBlockingQueue.take;" L
         "ReentrantLock.lockInterruptibly;" L "ReentrantLock$Sync.lockInterruptibly;" AQS
         ".acquireInterruptibly;" AQS ".acquire;" PARK,
         1,
         "c;java.lang.Thread.run;java.util.concurrent.LinkedBlockingQueue.take;" L
         "ReentrantLock.lockInterruptibly;" L "ReentrantLock$Sync.lockInterruptibly;" AQS
         ".acquireInterruptibly;" AQS ".acquire;" L "ReentrantLock_[l]",
         "a queue's take waiting for the queue's own lock (consumers contending) is a lock wait");
    want("s;X.run;java.util.concurrent.Semaphore.acquire;" AQS ".acquireSharedInterruptibly;" AQS
         ".acquire;" PARK,
         1,
         "s;X.run;java.util.concurrent.Semaphore.acquire;" AQS ".acquireSharedInterruptibly;" AQS
         ".acquire;java.util.concurrent.Semaphore_[l]",
         "Semaphore.acquire");
    want("w;X.run;" L "ReentrantReadWriteLock$WriteLock.lock;" AQS ".acquire;" AQS ".acquire;" PARK,
         1,
         "w;X.run;" L "ReentrantReadWriteLock$WriteLock.lock;" AQS ".acquire;" AQS ".acquire;" L
         "ReentrantReadWriteLock$WriteLock_[l]",
         "a write lock: its class");
    want("w;X.run;" L "StampedLock.writeLock;" L "StampedLock.acquireWrite;" PARK, 1,
         "w;X.run;" L "StampedLock.writeLock;" L "StampedLock.acquireWrite;" L "StampedLock_[l]",
         "StampedLock");
    want("w;X.run_[j];X.f_[int];" L "ReentrantLock$NonfairSync.lock_[i];" AQS ".acquire_[j];" L
         "LockSupport.park_[i];jdk.internal.misc.Unsafe.park;Parker::park",
         1,
         "w;X.run_[j];X.f_[int];" L "ReentrantLock$NonfairSync.lock_[i];" AQS ".acquire_[j];" L
         "ReentrantLock_[l]",
         "marks (_[j], _[int], _[i]) read through; ReentrantLock.lock inlined away: its Sync named "
         "as the lock");
    want("w;X.f;" L "ReentrantLock.lock;" AQS ".acquire;jdk.internal.misc.Unsafe.park;Parker::park",
         1, "w;X.f;" L "ReentrantLock.lock;" AQS ".acquire;" L "ReentrantLock_[l]",
         "LockSupport.park inlined away: Unsafe.park under the acquire");
    want("w;app.Mutex.lock;" AQS ".acquire;" PARK, 1,
         "w;app.Mutex.lock;" AQS ".acquire;" AQS "_[l]",
         "an application's own AQS lock: named AQS");
    want("w;" START "X.f;" L "ReentrantLock.lock;" AQS ".acquire;" PARK ";[sleeping]", 1,
         "w;X.f;" L "ReentrantLock.lock;" AQS ".acquire;" L "ReentrantLock_[l]",
         "wall: a [sleeping] stack is kept");
    want("w;void X.f(int);void " L "ReentrantLock.lock();void " AQS ".acquire(int);void " L
         "LockSupport.park(java.lang.Object);Parker::park",
         1,
         "w;void X.f(int);void " L "ReentrantLock.lock();void " AQS ".acquire(int);" L
         "ReentrantLock_[l]",
         "--signatures: return types and parameters read through");

    /* ---- waits that are no lock: dropped ---- */
    want("pool-1-thread-1;" START
         "java.lang.Thread.run;java.util.concurrent.ThreadPoolExecutor$Worker.run;"
         "java.util.concurrent.ThreadPoolExecutor.runWorker;java.util.concurrent."
         "ThreadPoolExecutor.getTask;"
         "java.util.concurrent.LinkedBlockingQueue.take;" AQS "$ConditionObject.await;" PARK,
         1, "", "an idle pool thread (getTask, the queue's Condition) is no lock wait");
    want("w;X.f;" AQS "$ConditionObject.await;" AQS ".acquire;" PARK, 1, "",
         "a Condition's re-acquire after its signal goes with the await");
    want("w;X.f;" L "AbstractQueuedLongSynchronizer$ConditionObject.awaitNanos;" PARK, 1, "",
         "a long Condition's await");
    want("pool;java.util.concurrent.ThreadPoolExecutor.getTask;java.util.concurrent."
         "SynchronousQueue.poll;"
         "java.util.concurrent.SynchronousQueue$TransferStack.awaitFulfill;" PARK,
         1, "", "a cached pool's idle thread (SynchronousQueue)");
    want("fj;java.util.concurrent.ForkJoinPool.awaitWork;" PARK, 1, "",
         "an idle ForkJoinPool worker");
    want(
        "f;X.f;java.util.concurrent.FutureTask.get;java.util.concurrent.FutureTask.awaitDone;" PARK,
        1, "", "Future.get");
    want("l;X.f;java.util.concurrent.CountDownLatch.await;" AQS ".acquireSharedInterruptibly;" AQS
         ".acquire;" PARK,
         1, "", "CountDownLatch.await (a latch is no lock)");
    want("p;java.util.concurrent.ThreadPoolExecutor.runWorker;java.util.concurrent."
         "ThreadPoolExecutor$Worker.lock;" AQS ".acquire;" PARK,
         1, "", "a pool worker's own mutex: a synchronizer of java.util.concurrent, no lock");
    want("s;" START "X.f;java.lang.Thread.sleep;JVM_Sleep;__futex_abstimed_wait_common", 1, "",
         "Thread.sleep");
    want("s;X.f;java.lang.Object.wait;ObjectMonitor::wait;__futex_abstimed_wait_common", 1, "",
         "Object.wait");
    want("s;X.f;java.net.SocketInputStream.read;__libc_recv", 1, "", "a socket read");
    want("s;X.f;" PARK, 1, "", "LockSupport.park called by the application itself");
    want("w;X.f;" L "ReentrantLock.lock;" AQS ".acquire;" PARK ";[running]", 1, "",
         "wall: [running] (spinning in park) is no wait");
    want("w;X.f;" L "ReentrantLock.lock;" AQS ".acquire;" PARK ";[runnable]", 1, "",
         "wall: [runnable] waits for a CPU, not a lock");

    /* ---- hostile names ---- */
    want(L "LockSupport.park;" AQS ".acquire;X.f", 1, "",
         "a thread named like park: a name, no frame");
    want(AQS ".acquire;" L "LockSupport.park", 1, "", "a thread named like the acquire, then park");
    want("w;" AQS "::acquire;" L "LockSupport::park", 1, "",
         "C++-shaped names are not Java frames");
    want("w;X.f;[" AQS ".acquire];" PARK, 1, "", "a bracketed frame is not Java");
    want("w;X.f;" AQS ".;" PARK, 1, "", "no method");
    want("w;X.f;.acquire;" PARK, 1, "", "no class");
    want("w;X.f;" AQS ".acquire;;" PARK, 1, "", "an empty frame between acquire and park");
    want("w", 1, "", "a name alone");
    want("", 1, "", "nothing");
    want(";;;;", 1, "", "empty frames");
    want("w;" L "ReentrantLock.lock;" AQS ".acquire;" PARK, 5, "", "fewer frames than names");
    want("w;X.f;" L "ReentrantLock.lock;" AQS ".acquire;" PARK, 0, "", "no name: refused");
    want("w;X.f;" L "ReentrantLock.lock;" AQS ".acquireX;" PARK, 1,
         "w;X.f;" L "ReentrantLock.lock;" AQS ".acquireX;" L "ReentrantLock_[l]",
         "acquire is a prefix (JDKs name their acquires acquire*)");
    want("w;X.f;" L "ReentrantLock.lock;" AQS "X.acquire;" PARK, 1, "",
         "a class named like AQS with more letters is not AQS");
    want("w;X.f;" L "ReentrantLock.lock;x " AQS ".acquire y;" PARK, 1, "",
         "a space after the name");
    want("w\x1b[2J;X.f;" L "ReentrantLock.lock;" AQS ".acquire;" PARK, 1,
         "w\x1b[2J;X.f;" L "ReentrantLock.lock;" AQS ".acquire;" L "ReentrantLock_[l]",
         "control bytes are copied as they came (the M line turns them into '?')");
    ok(sc_juc_lock("w;X.f;" L "ReentrantLock.lock;" AQS ".acquire;" PARK,
                   strlen("w;X.f;" L "ReentrantLock.lock;" AQS ".acquire;" PARK), 1, out, 20) == -1,
       "an output that does not fit: -1, nothing written beyond cap");
    /* a long class name */
    size_t big = 200000;
    char *s = malloc(big + 512);
    strcpy(s, "w;X.f;");
    size_t n = strlen(s);
    memcpy(s + n, L, strlen(L));
    n += strlen(L);
    memset(s + n, 'Q', big);
    n += big;
    strcpy(s + n, ".lock;" AQS ".acquire;" PARK);
    char *o = malloc(2 * strlen(s) + 8);
    long r = sc_juc_lock(s, strlen(s), 1, o, 2 * strlen(s) + 8);
    ok(r > 0 && (size_t)r <= 2 * strlen(s) + 8 && !memcmp(o + r - 4, "_[l]", 4),
       "a 200000-byte class name: fits in 2 * len + 8");
    /* random stacks of these frames: no crash (ASan), every answer within its bound */
    static const char *const pool[] = {"w",
                                       "X.f",
                                       L "ReentrantLock.lock",
                                       AQS ".acquire",
                                       L "LockSupport.park",
                                       "",
                                       ";",
                                       ".",
                                       "a.",
                                       ".b",
                                       "_[",
                                       "]",
                                       "x_[int]",
                                       AQS "$ConditionObject.await",
                                       "java.util.concurrent.X.y",
                                       "void a.B.c(int)",
                                       " ",
                                       "(",
                                       "jdk.internal.misc.Unsafe.park",
                                       "[running]",
                                       "::",
                                       "java.util.concurrent.Semaphore$NonfairSync.a",
                                       L "StampedLock.acquireRead"};
    unsigned seed = 1;
    int bad = 0;
    for (int t = 0; t < 20000; t++) {
        size_t m = 0;
        int k = (int)((seed = seed * 1103515245 + 12345) >> 16) % 12;
        for (int j = 0; j < k; j++) {
            const char *p =
                pool[((seed = seed * 1103515245 + 12345) >> 16) % (sizeof pool / sizeof *pool)];
            if (j)
                s[m++] = ';';
            memcpy(s + m, p, strlen(p));
            m += strlen(p);
        }
        int nroot = (int)((seed = seed * 1103515245 + 12345) >> 16) % 3;
        long q = sc_juc_lock(s, m, nroot, o, 2 * m + 8);
        if (q < 0 || (size_t)q > 2 * m + 8 || (q > 0 && memcmp(o + q - 4, "_[l]", 4)))
            bad++;
    }
    ok(bad == 0,
       "20000 random stacks: each answer within 2 * len + 8, a kept one ends in _[l] (%d bad)",
       bad);
    free(s);
    free(o);
    return tap_done();
}

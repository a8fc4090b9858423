/* sidecar/recorder/percpu.c, its pure parts: the BPF filter's instructions, /proc/<pid>/maps lines,
 * and the record filter (what of a ring is kept: the target's samples and side-band; never pid 0,
 * ours, or our children, also when a child's sample is read before its FORK). */
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sidecar/recorder/percpu.h"
#include "sidecar/sidecar.h"
#include "tests/unit/tap.h"

static void test_filter(void)
{
    struct bpf_insn p[32];
    pid_t ex[2] = {7, 9};
    int n = sc_percpu_build_filter(p, 32, 0x4, 0xeffffffcull, ex, 2);
    is_int(n, 16, "filter: 16 instructions with two exclusions");
    is_int(p[0].code, BPF_LD | BPF_DW | BPF_IMM, "dev loaded as a 64-bit immediate");
    is_int(p[0].imm, 4, "dev low half");
    is_int((uint32_t)p[2].imm, 0xeffffffcu, "ino low half");
    is_int(p[7].code, BPF_JMP | BPF_CALL, "helper call");
    is_int(p[7].imm, BPF_FUNC_get_ns_current_pid_tgid, "bpf_get_ns_current_pid_tgid");
    /* every conditional jump lands on "r0 = 0; exit" */
    int drop = n - 2;
    is_int(8 + 1 + p[8].off, drop, "helper failure (another namespace) -> drop");
    is_int(10 + 1 + p[10].off, drop, "first excluded tgid -> drop");
    is_int(11 + 1 + p[11].off, drop, "second excluded tgid -> drop");
    is_int(p[12].imm, 1, "otherwise keep (r0 = 1)");
    is_int(p[drop].imm, 0, "drop returns 0");
    is_int(p[n - 1].code, BPF_JMP | BPF_EXIT, "ends with exit");
    is_int(sc_percpu_build_filter(p, 10, 1, 1, ex, 2), -1, "too small a buffer refused");
    is_int(sc_percpu_build_filter(p, 32, 1, 1, ex, 99), -1, "too many exclusions refused");
}

static int parse(const char *l, sc_maps_entry *e, char *path, size_t cap)
{
    return sc_percpu_parse_maps_line(l, strlen(l), e, path, cap);
}

static void test_maps(void)
{
    sc_maps_entry e;
    char path[64];
    is_int(parse("7f12a000-7f12b000 r-xp 00001000 fd:01 1234   /opt/java/lib/server/libjvm.so", &e,
                 path, sizeof path),
           1, "executable file mapping");
    is_str(path, "/opt/java/lib/server/libjvm.so", "its path");
    ok(e.start == 0x7f12a000 && e.end == 0x7f12b000 && e.pgoff == 0x1000, "addresses");
    ok(e.maj == 0xfd && e.min == 1 && e.ino == 1234, "device and inode");
    ok(e.prot == 5 && e.flags == 2, "PROT_READ|PROT_EXEC, MAP_PRIVATE");
    is_int(parse("7f00-8f00 rwxp 00000000 00:00 0 ", &e, path, sizeof path), 1,
           "anonymous executable (JIT code cache)");
    is_str(path, "", "anonymous: empty name (written as //anon)");
    is_int(parse("1000-2000 rw-p 00000000 00:00 0 [heap]", &e, path, sizeof path), 0,
           "not executable: skipped");
    is_int(parse("garbage", &e, path, sizeof path), -1, "garbage refused");
    is_int(parse("2000-1000 r-xp 0 00:00 0", &e, path, sizeof path), -1, "end < start refused");
    char longl[300];
    snprintf(longl, sizeof longl, "1000-2000 r-xp 00000000 08:01 5 /%0250d", 0);
    is_int(parse(longl, &e, path, 16), 1, "long path accepted");
    is_int((long long)strlen(path), 15, "and cut to the buffer");
    is_int(parse("1000-2000 r-xp 00000000 08:01 5 /a b (deleted)", &e, path, sizeof path), 1,
           "spaces in a path");
    is_str(path, "/a b (deleted)", "kept whole");
}

/* A ring record: header + u32 fields at 8, 12, 16, 20 (pid/ppid/tid/ptid or ip + pid/tid). */
static size_t rec(unsigned char *b, uint32_t type, uint16_t size, uint32_t f8, uint32_t f12,
                  uint32_t f16, uint32_t f20)
{
    memset(b, 0, size);
    memcpy(b, &type, 4);
    memcpy(b + 6, &size, 2);
    uint32_t f[4] = {f8, f12, f16, f20};
    for (int i = 0; i < 4 && 8 + 4 * (size_t)i + 4 <= size; i++)
        memcpy(b + 8 + 4 * i, &f[i], 4);
    return size;
}

static void test_records(void)
{
    static sc_percpu_filter f;
    pid_t ex[2] = {40, 41}; /* the sidecar and the recorder */
    sc_percpu_filter_init(&f, ex, 2);
    unsigned char b[128];
    /* SAMPLE body: u64 ip, then u32 pid, tid */
    rec(b, PERF_RECORD_SAMPLE, 64, 0, 0, 1, 1);
    ok(sc_percpu_filter_record(&f, b, 64), "target sample (pid 1) kept");
    rec(b, PERF_RECORD_SAMPLE, 64, 0, 0, 0, 0);
    ok(!sc_percpu_filter_record(&f, b, 64), "pid 0 (outside the namespace) dropped");
    rec(b, PERF_RECORD_SAMPLE, 64, 0, 0, 40, 40);
    ok(!sc_percpu_filter_record(&f, b, 64), "the sidecar's own sample dropped");
    rec(b, PERF_RECORD_MMAP2, 120, 0, 0, 0, 0);
    ok(!sc_percpu_filter_record(&f, b, 120), "mmap of an outside process dropped");
    rec(b, PERF_RECORD_COMM, 40, 0, 0, 0, 0);
    ok(!sc_percpu_filter_record(&f, b, 40), "comm of an outside process dropped");
    rec(b, PERF_RECORD_MMAP2, 120, 1, 1, 0, 0);
    ok(sc_percpu_filter_record(&f, b, 120), "mmap of the target kept");
    /* the child's sample is read (another CPU's ring) before its FORK: the first pass saw it */
    rec(b, PERF_RECORD_FORK, 40, 50, 40, 50, 40);
    sc_percpu_filter_note_fork(&f, b, 40);
    unsigned char s[64];
    rec(s, PERF_RECORD_SAMPLE, 64, 0, 0, 50, 50);
    ok(!sc_percpu_filter_record(&f, s, 64), "sample of our child, read before its FORK: dropped");
    ok(!sc_percpu_filter_record(&f, b, 40), "our child's FORK dropped");
    rec(b, PERF_RECORD_FORK, 40, 60, 50, 60, 50);
    ok(!sc_percpu_filter_record(&f, b, 40), "grandchild's FORK dropped");
    rec(s, PERF_RECORD_SAMPLE, 64, 0, 0, 60, 60);
    ok(!sc_percpu_filter_record(&f, s, 64), "grandchild's sample dropped");
    rec(b, PERF_RECORD_FORK, 40, 70, 1, 70, 1);
    ok(sc_percpu_filter_record(&f, b, 40), "the target's own FORK kept");
    rec(s, PERF_RECORD_SAMPLE, 64, 0, 0, 70, 70);
    ok(sc_percpu_filter_record(&f, s, 64), "the target's child's sample kept");
    /* our child exits; the target may reuse its pid */
    rec(b, PERF_RECORD_EXIT, 40, 50, 40, 50, 40);
    ok(!sc_percpu_filter_record(&f, b, 40), "our child's EXIT dropped");
    rec(s, PERF_RECORD_SAMPLE, 64, 0, 0, 50, 50);
    ok(sc_percpu_filter_record(&f, s, 64), "pid 50 reused by the target: kept");
    rec(b, PERF_RECORD_EXIT, 40, 40, 1, 40, 1);
    sc_percpu_filter_record(&f, b, 40);
    rec(s, PERF_RECORD_SAMPLE, 64, 0, 0, 40, 40);
    ok(!sc_percpu_filter_record(&f, s, 64), "an excluded tgid stays excluded after an EXIT");
    rec(b, PERF_RECORD_SAMPLE, 12, 0, 0, 0, 0);
    ok(!sc_percpu_filter_record(&f, b, 12), "truncated sample: dropped");
    is_int((long long)f.st.bad, 1, "and counted as bad");
    rec(b, 5 /* THROTTLE */, 48, 0, 0, 0, 0);
    ok(!sc_percpu_filter_record(&f, b, 48), "throttle records dropped");
    uint64_t lost = 7;
    rec(b, PERF_RECORD_LOST, 24, 0, 0, 0, 0);
    memcpy(b + 16, &lost, 8);
    ok(sc_percpu_filter_record(&f, b, 24), "LOST kept (names no process)");
    is_int((long long)f.st.lost, 7, "lost counted");
    is_int((long long)f.st.samples, 3, "three samples kept");
    is_int((long long)f.st.samples_dropped, 5, "five samples dropped");
    /* a full table of followed children stays bounded */
    sc_percpu_filter_init(&f, ex, 2);
    for (uint32_t i = 0; i < SC_PERCPU_MAX_TRACKED + 10; i++) {
        rec(b, PERF_RECORD_FORK, 40, 1000 + i, 40, 1000 + i, 40);
        sc_percpu_filter_note_fork(&f, b, 40);
    }
    is_int(f.n_tracked, SC_PERCPU_MAX_TRACKED, "followed children bounded");
}

/* The target's processes among the others of its namespace: pids below 100 and from 500 on are
 * the target's, the rest another's (another sidecar, a debug container, an nsenter); 666 is
 * gone. */
static int classify_calls;
static uint32_t other_until_exec; /* a docker exec's process before runc moved it */
static int fake_classify(void *ctx, uint32_t pid)
{
    (void)ctx;
    classify_calls++;
    if (pid == other_until_exec)
        return 0;
    return pid == 666 ? -1 : pid < 100 || pid >= 500 ? 1 : 0;
}

static size_t timed(unsigned char *b, uint32_t type, uint16_t size, uint32_t f8, uint32_t f12,
                    uint32_t f16, uint32_t f20, uint64_t time)
{
    rec(b, type, size, f8, f12, f16, f20);
    memcpy(b + 24, &time, 8); /* SAMPLE: ip, pid/tid, time; FORK: pid, ppid, tid, ptid, time */
    return size;
}

static void test_target_only(void)
{
    static sc_percpu_filter f;
    pid_t ex[1] = {40};
    sc_percpu_filter_init(&f, ex, 1);
    sc_percpu_filter_set_target(&f, fake_classify, NULL);
    unsigned char b[128];
    timed(b, PERF_RECORD_SAMPLE, 64, 0, 0, 5, 5, 100);
    ok(sc_percpu_filter_record(&f, b, 64), "the target's sample kept");
    timed(b, PERF_RECORD_SAMPLE, 64, 0, 0, 200, 201, 100);
    ok(!sc_percpu_filter_record(&f, b, 64), "another process of the namespace: dropped");
    is_int((long long)f.st.others, 1, "... counted as another's");
    rec(b, PERF_RECORD_COMM, 40, 200, 201, 0, 0);
    ok(!sc_percpu_filter_record(&f, b, 40), "its COMM dropped (its name stays out)");
    rec(b, PERF_RECORD_MMAP2, 120, 200, 200, 0, 0);
    ok(!sc_percpu_filter_record(&f, b, 120), "its MMAP2 dropped");
    is_int(classify_calls, 2, "each process classified once");
    timed(b, PERF_RECORD_SAMPLE, 64, 0, 0, 200, 202, 110);
    sc_percpu_filter_record(&f, b, 64);
    is_int(classify_calls, 2, "... and remembered");

    /* a child of the target's process is the target's, without reading its cgroup */
    timed(b, PERF_RECORD_FORK, 40, 300, 5, 300, 5, 120);
    sc_percpu_filter_note_fork(&f, b, 40);
    ok(sc_percpu_filter_record(&f, b, 40), "the target's FORK kept");
    timed(b, PERF_RECORD_SAMPLE, 64, 0, 0, 300, 300, 130);
    ok(sc_percpu_filter_record(&f, b, 64), "its child's sample kept");
    timed(b, PERF_RECORD_FORK, 40, 301, 200, 301, 200, 120);
    sc_percpu_filter_note_fork(&f, b, 40);
    timed(b, PERF_RECORD_SAMPLE, 64, 0, 0, 301, 301, 130);
    ok(!sc_percpu_filter_record(&f, b, 64), "another's child's sample dropped");
    is_int(classify_calls, 2, "children inherit: no cgroup read");

    /* entered from outside the namespace (parent 0): docker exec, nsenter, a sidecar */
    timed(b, PERF_RECORD_FORK, 40, 7, 0, 7, 0, 140);
    sc_percpu_filter_note_fork(&f, b, 40);
    timed(b, PERF_RECORD_SAMPLE, 64, 0, 0, 7, 7, 150);
    ok(sc_percpu_filter_record(&f, b, 64), "a docker exec into the target: kept (its cgroup)");
    timed(b, PERF_RECORD_FORK, 40, 400, 0, 400, 0, 140);
    sc_percpu_filter_note_fork(&f, b, 40);
    timed(b, PERF_RECORD_SAMPLE, 64, 0, 0, 400, 400, 150);
    ok(!sc_percpu_filter_record(&f, b, 64), "an nsenter -p from the host: dropped (its cgroup)");
    timed(b, PERF_RECORD_SAMPLE, 64, 0, 0, 666, 666, 150);
    ok(!sc_percpu_filter_record(&f, b, 64), "a process gone before it was classified: dropped");
    /* docker exec: runc's process forks into the namespace (parent 0), is seen before runc put
     * it into the container's cgroup (another's, then), and execs the command once it is */
    other_until_exec = 500;
    timed(b, PERF_RECORD_FORK, 40, 500, 0, 500, 0, 160);
    sc_percpu_filter_note_fork(&f, b, 40);
    timed(b, PERF_RECORD_SAMPLE, 64, 0, 0, 500, 500, 161);
    ok(!sc_percpu_filter_record(&f, b, 64), "docker exec before its cgroup: another's");
    other_until_exec = 0;
    rec(b, PERF_RECORD_COMM, 40, 500, 500, 0, 0);
    uint16_t exec_misc = PERF_RECORD_MISC_COMM_EXEC;
    memcpy(b + 4, &exec_misc, 2);
    unsigned char smp[64];
    timed(smp, PERF_RECORD_SAMPLE, 64, 0, 0, 500, 500, 170);
    sc_percpu_filter_note_fork(&f, b, 40); /* the first pass sees the exec ... */
    ok(sc_percpu_filter_record(&f, smp, 64), "... its command's sample (another ring): kept");
    ok(sc_percpu_filter_record(&f, b, 40), "... and its exec COMM kept");
    rec(b, PERF_RECORD_COMM, 40, 200, 200, 0, 0);
    memcpy(b + 4, &exec_misc, 2);
    sc_percpu_filter_note_fork(&f, b, 40);
    ok(!sc_percpu_filter_record(&f, b, 40), "another's exec is judged again, and stays another's");

    /* pid 200 (another's) exits and the target's process 5 gets its pid: a sample of the old
     * process read after the new one's FORK (another CPU's ring) keeps the old verdict */
    timed(b, PERF_RECORD_FORK, 40, 200, 5, 200, 5, 1000);
    sc_percpu_filter_note_fork(&f, b, 40);
    ok(sc_percpu_filter_record(&f, b, 40), "FORK of the pid's new process (the target's) kept");
    timed(b, PERF_RECORD_SAMPLE, 64, 0, 0, 200, 201, 900);
    ok(!sc_percpu_filter_record(&f, b, 64),
       "an older sample of that pid: the old process's, dropped");
    timed(b, PERF_RECORD_SAMPLE, 64, 0, 0, 200, 200, 1100);
    ok(sc_percpu_filter_record(&f, b, 64), "a newer one: the target's, kept");
    timed(b, PERF_RECORD_FORK, 40, 200, 5, 200, 5, 1000);
    sc_percpu_filter_note_fork(&f, b, 40); /* the filtering pass sees the same record again */
    timed(b, PERF_RECORD_SAMPLE, 64, 0, 0, 200, 201, 900);
    ok(!sc_percpu_filter_record(&f, b, 64), "one FORK seen twice does not lose the old verdict");

    /* the kernel lost records (a FORK among them, maybe): every verdict is asked again */
    uint64_t lost = 3;
    rec(b, PERF_RECORD_LOST, 24, 0, 0, 0, 0);
    memcpy(b + 16, &lost, 8);
    sc_percpu_filter_record(&f, b, 24);
    int before = classify_calls;
    timed(b, PERF_RECORD_SAMPLE, 64, 0, 0, 5, 5, 2000);
    ok(sc_percpu_filter_record(&f, b, 64) && classify_calls == before + 1,
       "after LOST records: classified again");

    /* bounded: a target forking all the time fills the table, which starts over */
    for (uint32_t i = 0; i < 3 * SC_PERCPU_VERDICTS; i++) {
        timed(b, PERF_RECORD_FORK, 40, 1000 + i, 5, 1000 + i, 5, 3000 + i);
        sc_percpu_filter_note_fork(&f, b, 40);
    }
    ok(f.n_verdict < SC_PERCPU_VERDICTS, "verdicts bounded (%zu)", f.n_verdict);
    timed(b, PERF_RECORD_SAMPLE, 64, 0, 0, 1000 + 3 * SC_PERCPU_VERDICTS - 1, 1, 9999999);
    ok(sc_percpu_filter_record(&f, b, 64),
       "a child whose parent a restart forgot: classified, kept");
    timed(b, PERF_RECORD_SAMPLE, 64, 0, 0, 200, 200, 9999999);
    ok(!sc_percpu_filter_record(&f, b, 64), "another's: classified, dropped");

    /* host: no classifier, every task of the namespace is wanted */
    sc_percpu_filter_init(&f, NULL, 0);
    timed(b, PERF_RECORD_SAMPLE, 64, 0, 0, 200, 200, 1);
    ok(sc_percpu_filter_record(&f, b, 64), "without a classifier every task is kept (host)");
}

/* An MMAP2 record as the kernel writes it: body, file name NUL-padded to 8, sample_id trailer. */
static size_t mmap2(unsigned char *b, uint16_t misc, uint32_t maj, uint32_t min, uint64_t ino,
                    const char *name)
{
    size_t nl = strlen(name), pad = (nl + 1 + 7) & ~(size_t)7, size = 72 + pad + 24;
    memset(b, 0, size);
    uint32_t type = PERF_RECORD_MMAP2, pid = 9;
    uint16_t sz = (uint16_t)size;
    memcpy(b, &type, 4);
    memcpy(b + 4, &misc, 2);
    memcpy(b + 6, &sz, 2);
    memcpy(b + 8, &pid, 4);
    memcpy(b + 40, &maj, 4);
    memcpy(b + 44, &min, 4);
    memcpy(b + 48, &ino, 8);
    memcpy(b + 72, name, nl);
    uint64_t t = 77;
    memcpy(b + size - 16, &t, 8); /* the trailer's time */
    return size;
}

static void test_mmap2_names(void)
{
    static unsigned char b[65536], out[65536];
    char p[SC_INODE_PREFIX_MAX];
    is_int(sc_inode_prefix(p, sizeof p, 254, 0, 333607), 23, "inode prefix length");
    is_str(p, "/.by-inode/254.0.333607", "inode prefix");
    is_int(sc_inode_prefix(p, sizeof p, 4294967295u, 4294967295u, UINT64_MAX),
           (int)strlen("/.by-inode/4294967295.4294967295.18446744073709551615"),
           "the longest fits");
    size_t n = mmap2(b, PERF_RECORD_MISC_USER, 254, 0, 333607, "/usr/lib/libz.so.1");
    size_t m = sc_percpu_inode_name(b, n, out);
    ok(m > n && m % 8 == 0, "a file's MMAP2 renamed (%zu -> %zu bytes)", n, m);
    is_str((const char *)out + 72, "/.by-inode/254.0.333607/usr/lib/libz.so.1", "... by its inode");
    uint16_t sz;
    memcpy(&sz, out + 6, 2);
    is_int(sz, (int)m, "... header size updated");
    ok(!memcmp(out + m - 24, b + n - 24, 24), "... the sample_id trailer kept");
    ok(!memcmp(out, b, 6) && !memcmp(out + 8, b + 8, 64), "... the rest of the body kept");
    const char *keep[] = {"//anon", "[vdso]", "/"};
    for (size_t i = 0; i < sizeof keep / sizeof *keep; i++) {
        n = mmap2(b, PERF_RECORD_MISC_USER, 0, 5, 12, keep[i]);
        is_int((int)sc_percpu_inode_name(b, n, out), 0, "%s: not renamed", keep[i]);
    }
    n = mmap2(b, PERF_RECORD_MISC_USER, 0, 5, 0, "/memfd:x (deleted)");
    is_int((int)sc_percpu_inode_name(b, n, out), 0, "no inode: not renamed");
    n = mmap2(b, PERF_RECORD_MISC_USER | PERF_RECORD_MISC_MMAP_BUILD_ID, 20, 0, 1, "/lib/a.so");
    is_int((int)sc_percpu_inode_name(b, n, out), 0, "a build-id instead of an inode: kept");
    n = mmap2(b, PERF_RECORD_MISC_USER, 8, 1, 2, "/lib/a.so");
    memset(b + 72, 'x', n - 72 - 24); /* no NUL before the trailer */
    is_int((int)sc_percpu_inode_name(b, n, out), 0, "an unterminated name: kept");
    is_int((int)sc_percpu_inode_name(b, 40, out), 0, "truncated: kept");

    /* the kernel's stale build-id flag over an inode body (seen: perf script crashed) */
    n = mmap2(b, PERF_RECORD_MISC_USER | PERF_RECORD_MISC_MMAP_BUILD_ID, 254, 0, 9, "/lib/a.so");
    sc_percpu_fix_mmap2(b, n, false);
    uint16_t misc;
    memcpy(&misc, b + 4, 2);
    is_int(misc, PERF_RECORD_MISC_USER, "no build-id asked for: the flag is cleared");
    n = mmap2(b, PERF_RECORD_MISC_USER | PERF_RECORD_MISC_MMAP_BUILD_ID, 254, 0, 9, "/lib/a.so");
    sc_percpu_fix_mmap2(b, n, true);
    memcpy(&misc, b + 4, 2);
    is_int(misc, PERF_RECORD_MISC_USER, "asked for, but a size of 254: cleared");
    n = mmap2(b, PERF_RECORD_MISC_USER | PERF_RECORD_MISC_MMAP_BUILD_ID, 20, 0, 9, "/lib/a.so");
    sc_percpu_fix_mmap2(b, n, true);
    memcpy(&misc, b + 4, 2);
    is_int(misc, PERF_RECORD_MISC_USER | PERF_RECORD_MISC_MMAP_BUILD_ID,
           "a real build-id (size 20) keeps it");
}

/* One CPU sampled for `secs` s by the recorder's scheme (percpu.h, varied period), the tick grid
 * restarted at every change (as PERF_EVENT_IOC_PERIOD does), changes every 50-70 ms; or with the
 * fixed period of today's kernel event when vary is false. A thread on that CPU runs the first
 * `share` of every round of exactly 1e9/99 ns (in step with the 99-Hz ticks). Returns the ticks;
 * *hits: the ticks that found the thread running. */
static uint64_t simulate(bool vary, double share, double secs, uint64_t seed, uint64_t *hits,
                         uint64_t *pmin, uint64_t *pmax)
{
    const uint64_t t = 1000000000u / 99;
    const double round = 1e9 / 99.0, end = secs * 1e9;
    uint64_t rng = seed, lcg = seed * 2862933555777941757ull + 3037000493ull, ticks = 0,
             changes = 0;
    *hits = 0;
    *pmin = UINT64_MAX;
    *pmax = 0;
    double r = 1234567.0, p = (double)t; /* the enable, at some phase of the thread's round */
    while (r < end) {
        lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
        double next = r + 50e6 + (double)(lcg >> 40) / (double)(1u << 24) * 20e6; /* a late pass */
        for (double k = r + p; k < next && k < end; k += p) {
            ticks++;
            double ph = k - round * (double)(uint64_t)(k / round);
            if (ph < share * round)
                (*hits)++;
        }
        changes++;
        if (vary) {
            uint64_t np =
                sc_percpu_jitter_period(t, (uint64_t)((next - 1234567.0) / (double)changes), &rng);
            *pmin = np < *pmin ? np : *pmin;
            *pmax = np > *pmax ? np : *pmax;
            p = (double)np;
        }
        r = vary ? next : r + p * (double)(uint64_t)((next - r) / p); /* fixed: the grid goes on */
    }
    return ticks;
}

static void test_jitter(void)
{
    uint64_t hits, pmin, pmax;
    const double secs = 300;
    /* today's fixed period: the thread is seen at one phase, 0 or 100 % instead of 50 % */
    uint64_t n = simulate(false, 0.5, secs, 7, &hits, &pmin, &pmax);
    ok(hits == 0 || hits == n, "fixed period: lockstep (%llu of %llu ticks on the thread)",
       (unsigned long long)hits, (unsigned long long)n);
    for (uint64_t seed = 1; seed <= 3; seed++) {
        n = simulate(true, 0.5, secs, seed, &hits, &pmin, &pmax);
        double want = secs * 99, got = (double)hits / (double)n;
        /* ~30,000 ticks; sd of the count ~0.3 %, of the share ~0.3 points (10 s: 3 points) */
        ok(fabs((double)n / want - 1) < 0.015, "varied: %llu ticks for %.0f expected (seed %llu)",
           (unsigned long long)n, want, (unsigned long long)seed);
        ok(fabs(got - 0.5) < 0.02, "varied: the lockstep thread at %.3f of the ticks, 0.5 true",
           got);
        ok(pmin >= 1000000000u / 99 * 45 / 100 && pmax <= 1000000000u / 99 * 17 / 10,
           "periods drawn in [0.45 T, 1.7 T]: %llu-%llu ns", (unsigned long long)pmin,
           (unsigned long long)pmax);
        n = simulate(true, 0.2, secs, seed + 10, &hits, &pmin, &pmax);
        got = (double)hits / (double)n;
        ok(fabs(got - 0.2) < 0.02, "varied: a 20 %% thread at %.3f", got);
    }
    uint64_t rng = 5;
    is_int(sc_percpu_jitter_period(100000, 0, &rng) > 0, 1, "no mean segment yet: a period still");
}

int main(void)
{
    test_mmap2_names();
    test_jitter();
    test_filter();
    test_maps();
    test_records();
    test_target_only();
    return tap_done();
}

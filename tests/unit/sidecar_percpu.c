/* sidecar/recorder/percpu.c, its pure parts: the BPF filter's instructions, /proc/<pid>/maps lines,
 * and the record filter (what of a ring is kept: the target's samples and side-band; never pid 0,
 * ours, or our children, also when a child's sample is read before its FORK). */
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>

#include "sidecar/recorder/percpu.h"
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

int main(void)
{
    test_filter();
    test_maps();
    test_records();
    return tap_done();
}

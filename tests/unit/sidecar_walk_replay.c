/* The stack walker (sidecar/recorder/walk.h) on recorded samples of real JVMs
 * (tests/data/walk/, made by build/tests/walk-capture; tests/walk/README.md): the JVM's memory as
 * the walk read it is served back through the interposed pread, anything else fails as unmapped
 * memory would. Per fixture:
 *   - every worker-thread sample walks to the thread's root (status root) -- the measure,
 *     >= 99 %, and no replay read misses the recorded memory;
 *   - JVMs started with -XX:+PreserveFramePointer: the walk agrees with the kernel's
 *     frame-pointer chain sample by sample, frame by frame, over the part of the stack where
 *     frame pointers are kept (Java code, libjvm; libc has none);
 *   - the recorder's own rewrite (sidecar/interp.c) turns the same samples into callchains whose
 *     interpreted frames carry names.
 * WALK_DUMP=1 prints every walk; WALK_CUT=BYTES judges the javac fixtures' walks within a copy of
 * that size instead of the recorder's. */
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <fcntl.h>

#include "sidecar/recorder/hotspot.h"
#include "sidecar/recorder/interp.h"
#include "sidecar/recorder/walk.h"
#include "tests/unit/tap.h"
#include "tests/walk/fixture.h"

#define DIR "tests/data/walk/"

typedef struct sample {
    uint32_t tid;
    sc_walk_regs r;
    const unsigned char *stack;
    uint64_t len;
    const uint64_t *chain; /* the kernel's user chain */
    int n_chain;
} sample;

static uint64_t g64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static int parse(const wf_sample *s, sample *o, uint64_t *chain_buf)
{
    const unsigned char *r = s->rec;
    size_t size = s->len, fixed = 56;
    if (size < fixed)
        return -1;
    o->tid = (uint32_t)(g64(r + 16) >> 32);
    uint64_t nr = g64(r + fixed - 8);
    if (nr > (size - fixed) / 8)
        return -1;
    size_t u = 0;
    while (u < nr && g64(r + fixed + 8 * u) != (uint64_t)PERF_CONTEXT_USER)
        u++;
    o->n_chain = 0;
    for (size_t i = u + 1; i < nr && o->n_chain < 512; i++)
        chain_buf[o->n_chain++] = g64(r + fixed + 8 * i);
    o->chain = chain_buf;
    size_t p = fixed + 8 * nr;
    if (size - p < 8 + 48 + 8 || !g64(r + p))
        return -1;
    p += 8;
    o->r = (sc_walk_regs){g64(r + p),      g64(r + p + 8),  g64(r + p + 16),
                          g64(r + p + 24), g64(r + p + 32), g64(r + p + 40)};
    p += 48;
    uint64_t ss = g64(r + p);
    p += 8;
    if (ss > size - p || size - p - ss < 8)
        return -1;
    o->stack = r + p;
    o->len = g64(r + p + ss) < ss ? g64(r + p + ss) : ss;
    return 0;
}

static const wf_map *map_of(const wf_fixture *f, uint64_t pc)
{
    for (uint32_t i = 0; i < f->n_maps; i++)
        if (pc >= f->maps[i].start && pc < f->maps[i].end)
            return &f->maps[i];
    return NULL;
}

static void describe(const wf_fixture *f, sc_walker *w, sc_hs *hs, uint64_t pc, char *out,
                     size_t cap)
{
    sc_ch *ch = (sc_ch *)sc_walker_codeheap(w);
    const wf_map *m = map_of(f, pc);
    if (sc_ch_contains(ch, pc)) {
        const sc_blob *b = sc_ch_find(ch, pc);
        const char *name = NULL;
        bool perm;
        if (b && b->method)
            sc_hs_method(hs, b->method, &name, &perm);
        snprintf(out, cap, "%s%s%s", b ? b->name : "?", name ? " " : "", name ? name : "");
    } else if (m) {
        const char *base = strrchr(m->path, '/');
        snprintf(out, cap, "%s+%#llx", base ? base + 1 : m->path,
                 (unsigned long long)(pc - m->start + m->pgoff));
    } else {
        snprintf(out, cap, "?");
    }
}

/* The fixtures' threads that run Java code (FlameFixture's and Deep's). */
static bool java_thread(const char *comm)
{
    return !strncmp(comm, "worker-", 7) || !strcmp(comm, "native") || !strcmp(comm, "syscalls") ||
           !strcmp(comm, "churn") || !strncmp(comm, "compiler-", 9);
}

typedef struct expect {
    const char *file;
    bool fp;         /* started with -XX:+PreserveFramePointer */
    double min_root; /* share of worker samples that must reach the root */
    bool inlined;    /* FlameFixture, JIT: isPrime is inlined into countPrimes */
    bool deep;       /* Deep: >= 300 Java frames */
    double min_cut;  /* recorded with a larger copy: share at the root within the recorder's
                        copy (SC_INTERP_STACK bytes) alone, no tail reads; 0: not judged */
} expect;

static void replay(const expect *x)
{
    char path[256];
    snprintf(path, sizeof path, DIR "%s", x->file);
    wf_fixture f;
    if (wf_read(path, &f) < 0) {
        ok(0, "%s: read the fixture", x->file);
        return;
    }
    int mem = open("/dev/null", O_RDONLY | O_CLOEXEC);
    wf_replay(mem, &f);
    uint64_t jvm_base = 0;
    for (uint32_t i = 0; i < f.n_maps; i++) {
        size_t l = strlen(f.maps[i].path);
        if (l >= 10 && !strcmp(f.maps[i].path + l - 10, "/libjvm.so") && !jvm_base)
            jvm_base = f.maps[i].start - f.maps[i].pgoff;
    }
    char why[SC_HS_WHY_MAX] = "";
    sc_hs *hs = sc_hs_open(mem, jvm_base, why);
    ok(hs != NULL, "%s: VMStructs read from the recorded memory (%s)", x->file, why);
    sc_walker *w = hs ? sc_walker_new(hs, why) : NULL;
    ok(w != NULL, "%s: walker (%s)", x->file, why);
    if (!w) {
        sc_hs_free(hs);
        close(mem);
        wf_free(&f);
        return;
    }
    for (uint32_t i = 0; i < f.n_maps; i++)
        sc_walker_note_map(w, f.maps[i].start, f.maps[i].end, f.maps[i].pgoff, f.maps[i].path);
    sc_walker_set_tail(w, true); /* as the recorder walks */
    bool dump = getenv("WALK_DUMP") != NULL;
    static sc_walk_frame fr[SC_WALK_MAX_FRAMES];
    uint64_t chain[512];
    int workers = 0, rooted = 0, compared = 0, agree = 0, bad = 0, java = 0, skipped = 0;
    int k_rooted = 0, compiled = 0, named = 0, inline_seen = 0, deep = 0;
    int cut_rooted = 0, cut_status[SC_WALK_NSTATUS] = {0}, wstatus[SC_WALK_NSTATUS] = {0};
    uint64_t shown_misses = 0; /* reads of what the recorder never reads: names for printing */
    for (uint32_t i = 0; i < f.n_samples; i++) {
        sample s;
        if (parse(&f.samples[i], &s, chain) < 0) {
            bad++;
            continue;
        }
        /* the recorder's passes as they were: code blobs are checked again at each */
        if (i == 0 || f.samples[i].pass != f.samples[i - 1].pass)
            sc_walker_pass(w);
        wf_at(i);
        enum sc_walk_status st;
        int n = sc_walker_walk(w, &s.r, s.stack, s.len, fr, SC_WALK_MAX_FRAMES, &st);
        bool worker = java_thread(wf_comm(&f, s.tid));
        if (x->min_cut > 0 && worker) {
            /* the same sample as the recorder copies it: does its copy hold the whole stack? */
            enum sc_walk_status cst;
            sc_walker_set_tail(w, false);
            uint64_t cutl =
                getenv("WALK_CUT") ? strtoull(getenv("WALK_CUT"), 0, 0) : SC_INTERP_STACK;
            sc_walker_walk(w, &s.r, s.stack, s.len < cutl ? s.len : cutl, fr, SC_WALK_MAX_FRAMES,
                           &cst);
            sc_walker_set_tail(w, true);
            cut_status[cst]++;
            cut_rooted += cst == SC_WALK_ROOT;
        }
        /* compiled frames named from their nmethod's Method* and scopes, as the recorder does */
        int java_depth = 0;
        for (int k = 0; k < n; k++) {
            if (fr[k].kind == SC_WF_INTERP)
                java_depth++;
            if (fr[k].kind != SC_WF_COMPILED)
                continue;
            uint64_t m[SC_WALK_MAX_INLINE];
            int mk = sc_walker_inlined(w, &fr[k], m, SC_WALK_MAX_INLINE, NULL);
            java_depth += mk ? mk : 1;
            compiled++;
            char names[2048] = "";
            size_t cl = 0;
            for (int q = mk - 1; q >= 0; q--) {
                const char *name;
                bool perm;
                if (sc_hs_method(hs, m[q], &name, &perm) != SC_HS_OK)
                    break;
                cl += (size_t)snprintf(names + cl, sizeof names - cl, "%s%s", cl ? "->" : "", name);
                if (cl >= sizeof names)
                    break;
            }
            named += cl > 0;
            if (strstr(names, "FlameFixture.countPrimes->FlameFixture.isPrime"))
                inline_seen++;
        }
        if (worker && java_depth >= 300)
            deep++;
        workers += worker;
        rooted += worker && st == SC_WALK_ROOT;
        if (worker)
            wstatus[st]++;
        /* the old way, the kernel's frame-pointer chain: did it get to the Java entry (the
         * call stub) too? */
        bool k_entry = false;
        for (int k = 0; k < n && !k_entry; k++)
            for (int c = 0; fr[k].kind == SC_WF_ENTRY && c < s.n_chain && !k_entry; c++)
                k_entry = s.chain[c] == fr[k].pc;
        k_rooted += worker && k_entry;
        for (int k = 0; k < n; k++)
            if (fr[k].kind == SC_WF_INTERP || fr[k].kind == SC_WF_COMPILED) {
                java++;
                break;
            }
        bool same = true;
        if (x->fp) {
            int c = sc_walker_fp_check(w, fr, n, s.chain, s.n_chain);
            compared += c >= 0;
            agree += c > 0;
            skipped += c == 2;
            same = c != 0;
        }
        if (dump || (!same && getenv("WALK_DISAGREE"))) {
            printf("# sample %u tid %u (%s): %s, %d frames%s\n", i, s.tid, wf_comm(&f, s.tid),
                   sc_walk_status_name(st), n, same ? "" : " DISAGREES with the fp chain");
            uint64_t before = wf_replay_misses();
            printf("#   ip %#llx sp %#llx bp %#llx ax %#llx bx %#llx r13 %#llx copy %llu\n",
                   (unsigned long long)s.r.ip, (unsigned long long)s.r.sp,
                   (unsigned long long)s.r.bp, (unsigned long long)s.r.ax,
                   (unsigned long long)s.r.bx, (unsigned long long)s.r.r13,
                   (unsigned long long)s.len);
            const sc_blob *tb = sc_ch_find((sc_ch *)sc_walker_codeheap(w), s.r.ip);
            if (tb)
                printf("#   top blob %s start %#llx code %#llx-%#llx complete +%lld frame %d "
                       "verified +%lld\n",
                       tb->name, (unsigned long long)tb->start, (unsigned long long)tb->code_begin,
                       (unsigned long long)tb->code_end,
                       (long long)(tb->frame_complete - tb->code_begin), tb->frame_size,
                       (long long)(tb->verified_entry - tb->code_begin));
            for (int k = 0; k < n || k < s.n_chain; k++) {
                char a[160] = "", b[160] = "";
                if (k < n)
                    describe(&f, w, hs, fr[k].pc, a, sizeof a);
                if (k < s.n_chain)
                    describe(&f, w, hs, s.chain[k], b, sizeof b);
                printf("#   %2d %c %-48.48s %6llx %6llx | %s\n", k,
                       k < n ? "NICSE"[fr[k].kind] : ' ', a,
                       k < n ? (unsigned long long)((fr[k].fp - s.r.sp) & 0xffffff) : 0ull,
                       k < n ? (unsigned long long)((fr[k].sp - s.r.sp) & 0xffffff) : 0ull,
                       k < s.n_chain && (k >= n || s.chain[k] != fr[k].pc) ? b : "");
            }
            shown_misses += wf_replay_misses() - before;
        }
    }
    sc_walk_stats ws;
    sc_walker_get_stats(w, &ws);
    printf("# %s: %u samples, %d of %d Java-thread samples at the root (the kernel's fp chain "
           "reached the call stub in %d),"
           " java %d;",
           x->file, f.n_samples, rooted, workers, k_rooted, java);
    for (int k = 0; k < SC_WALK_NSTATUS; k++)
        if (ws.status[k])
            printf(" %s=%llu", sc_walk_status_name(k), (unsigned long long)ws.status[k]);
    printf("; %.1f us/walk\n", ws.walks ? (double)ws.ns / 1000.0 / (double)ws.walks : 0.0);
    is_int(bad, 0, "%s: every recorded sample parses", x->file);
    ok(workers >= 100, "%s: %d Java-thread samples", x->file, workers);
    ok(rooted >= x->min_root * workers,
       "%s: %d of %d Java-thread samples walked to the root (>= %.0f %%)", x->file, rooted, workers,
       100 * x->min_root);
    is_int((long long)(wf_replay_misses() - shown_misses), 0,
           "%s: every read was of recorded memory", x->file);
    ok(named >= compiled * 95 / 100,
       "%s: %d of %d compiled frames named from their nmethod's Method* and scopes", x->file, named,
       compiled);
    if (x->inlined)
        ok(inline_seen > 0, "%s: isPrime inlined into countPrimes, from the scopes (%d)", x->file,
           inline_seen);
    if (x->deep)
        ok(deep >= workers * 9 / 10, "%s: %d of %d samples >= 300 Java frames deep", x->file, deep,
           workers);
    if (x->min_cut > 0) {
        /* each way a walk can be lost, on its own: at most 0.5 % of the samples */
        for (int k = 0; k < SC_WALK_NSTATUS; k++)
            if (k != SC_WALK_ROOT)
                ok(wstatus[k] * 200 <= workers,
                   "%s: %d of %d walks lost with status %s (<= 0.5 %%)", x->file, wstatus[k],
                   workers, sc_walk_status_name(k));
        char kinds[512] = "";
        size_t kl = 0;
        for (int k = 0; k < SC_WALK_NSTATUS && kl < sizeof kinds; k++)
            if (cut_status[k] && k != SC_WALK_ROOT)
                kl += (size_t)snprintf(kinds + kl, sizeof kinds - kl, " %s=%d",
                                       sc_walk_status_name(k), cut_status[k]);
        ok(cut_rooted >= x->min_cut * workers,
           "%s: %d of %d walked to the root within the recorder's %d-byte stack copy (>= %.0f "
           "%%; the others:%s)",
           x->file, cut_rooted, workers, SC_INTERP_STACK, 100 * x->min_cut, kinds);
    }
    if (x->fp) {
        ok(compared >= workers * 3 / 4, "%s: %d samples compared with the fp chain", x->file,
           compared);
        ok(agree >= compared * 995 / 1000,
           "%s: %d of %d agree with the fp chain frame by frame (%d where it skipped the caller "
           "of a frame whose rbp was not its own)",
           x->file, agree, compared, skipped);
    }
    sc_walker_free(w);
    sc_hs_free(hs);
    close(mem);
    wf_free(&f);
}

/* ---- the unloading rule through the recorder's rewrite, its caches warm ---- */

typedef struct counted {
    int app, boot; /* frames named after FlameFixture's methods; after java.* ones */
    int raw;       /* frames left at their address in the code cache, outside the interpreter */
    int unnamed;   /* frames named "[unknown]" */
} counted;

/* Is addr in an anonymous executable mapping of f (the code cache: the agent's map names it)
 * but not in hs's interpreter (the map names that "Interpreter", rightly)? */
static const sc_hs *replay_hs;
static bool in_anon(const wf_fixture *f, uint64_t addr)
{
    if (replay_hs && sc_hs_in_interpreter(replay_hs, addr))
        return false;
    for (uint32_t i = 0; i < f->n_maps; i++)
        if (addr >= f->maps[i].start && addr < f->maps[i].end)
            return f->maps[i].path[0] != '/';
    return false;
}

/* The names written so far to names_fd ("addr 10 name" lines), looked up by address. */
static const char *name_at(int fd, uint64_t addr)
{
    static char buf[1 << 20];
    static ssize_t n;
    static int at_fd = -1;
    if (fd != at_fd || addr == 0) {
        n = pread(fd, buf, sizeof buf - 1, 0);
        buf[n > 0 ? n : 0] = '\0';
        at_fd = fd;
        if (addr == 0)
            return NULL;
    }
    char key[32];
    int kl = snprintf(key, sizeof key, "%llx 10 ", (unsigned long long)addr);
    for (const char *p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (!strncmp(p, key, (size_t)kl))
            return p + kl;
    return NULL;
}

/* Rewrite samples [a, b) (no pump pass between them) and count the named frames. */
static counted rewrite_range(sc_interp *in, const wf_fixture *f, int names, uint32_t a, uint32_t b)
{
    static unsigned char out[65536];
    counted c = {0, 0, 0, 0};
    for (uint32_t i = a; i < b; i++) {
        wf_at(i);
        size_t n = sc_interp_rewrite(in, f->samples[i].rec, f->samples[i].len, out);
        if (n < 56)
            continue;
        name_at(names, 0); /* the names written for this sample too */
        uint64_t nr = g64(out + 48);
        for (uint64_t k = 0; k < nr && 56 + 8 * k + 8 <= n; k++) {
            uint64_t v = g64(out + 56 + 8 * k);
            c.raw += v < SC_INTERP_BASE && in_anon(f, v);
            if (v < SC_INTERP_BASE || v >= (uint64_t)PERF_CONTEXT_MAX)
                continue;
            const char *nm = name_at(names, v);
            c.app += nm && !strncmp(nm, "FlameFixture", 12);
            c.boot += nm && !strncmp(nm, "java.", 5);
            c.unnamed += nm && !strncmp(nm, "[unknown]\n", 10);
        }
    }
    return c;
}

/* A recorder over fixture file's recorded memory, its maps noted (not yet started): the
 * replayed JVM's VMStructs in *hs (also replay_hs), NULL when the fixture cannot be read. */
typedef struct replayed {
    wf_fixture f;
    int mem, names;
    sc_hs *hs;
    pid_t pid;
} replayed;

static sc_interp *replay_open(const char *file, replayed *r)
{
    char path[256];
    snprintf(path, sizeof path, DIR "%s", file);
    if (wf_read(path, &r->f) < 0) {
        ok(0, "%s: read the fixture", file);
        return NULL;
    }
    r->mem = open("/dev/null", O_RDONLY | O_CLOEXEC);
    r->names = memfd_create("names", MFD_CLOEXEC);
    wf_replay(r->mem, &r->f);
    wf_at(0);
    uint64_t jvm_base = 0;
    for (uint32_t i = 0; i < r->f.n_maps; i++) {
        size_t l = strlen(r->f.maps[i].path);
        if (l >= 10 && !strcmp(r->f.maps[i].path + l - 10, "/libjvm.so") && !jvm_base)
            jvm_base = r->f.maps[i].start - r->f.maps[i].pgoff;
    }
    char why[SC_HS_WHY_MAX] = "";
    r->hs = sc_hs_open(r->mem, jvm_base, why);
    replay_hs = r->hs;
    r->pid = (pid_t)r->f.pid;
    sc_interp *in = sc_interp_new(&r->pid, &r->mem, &r->names, 1);
    for (uint32_t i = 0; i < r->f.n_maps; i++)
        sc_interp_note_map(in, r->pid, r->f.maps[i].start, r->f.maps[i].end, r->f.maps[i].pgoff,
                           r->f.maps[i].path);
    return in;
}

static void replay_close(sc_interp *in, replayed *r)
{
    sc_interp_free(in);
    replay_hs = NULL;
    sc_hs_free(r->hs);
    close(r->names);
    close(r->mem);
    wf_free(&r->f);
}

static void unload_rule(const char *file)
{
    replayed r;
    sc_interp *in = replay_open(file, &r);
    if (!in)
        return;
    uint64_t counter = r.hs ? sc_hs_unloads_addr(r.hs) : 0;
    ok(counter && sc_interp_start(in) == 1 && !sc_interp_walk_why(in, r.pid),
       "%s: the recorder walks it; the unloaded-classes count at %#llx", file,
       (unsigned long long)counter);
    /* the recording's first pass (the pump right after the start): its samples were taken before
     * any count was read, so no name of an unloadable class, and each is counted (no_floor) */
    uint32_t e = 0;
    while (e < r.f.n_samples && r.f.samples[e].pass == r.f.samples[0].pass)
        e++;
    wf_at(0);
    sc_interp_pass(in);
    counted first = rewrite_range(in, &r.f, r.names, 0, e);
    sc_interp_stats sf;
    sc_interp_get_stats(in, &sf);
    ok(e > 0 && first.app == 0 && first.boot > 0 && sf.no_floor == sf.samples && sf.samples == e,
       "%s: the first pass: %d FlameFixture names, %d java.*; no_floor %llu of %llu samples", file,
       first.app, first.boot, (unsigned long long)sf.no_floor, (unsigned long long)sf.samples);
    /* each recorded pass on its own, the count polled twice before it (a floor): the caches
     * warm, and the pass with the most FlameFixture names (walked twice: nmethods first read in
     * a pass are named two passes later, sc_ch_settled) */
    uint32_t best_a = 0, best_b = 0;
    counted best = {0, 0, 0, 0};
    for (uint32_t a = 0; a < r.f.n_samples;) {
        uint32_t b = a;
        while (b < r.f.n_samples && r.f.samples[b].pass == r.f.samples[a].pass)
            b++;
        wf_at(a);
        sc_interp_pass(in);
        sc_interp_pass(in);
        rewrite_range(in, &r.f, r.names, a, b);
        sc_interp_pass(in);
        sc_interp_pass(in);
        counted c = rewrite_range(in, &r.f, r.names, a, b);
        if (c.app > best.app)
            best = c, best_a = a, best_b = b;
        a = b;
    }
    /* the same pass again, warm: the same names */
    wf_at(best_a);
    sc_interp_pass(in);
    sc_interp_pass(in);
    counted warm = rewrite_range(in, &r.f, r.names, best_a, best_b);
    sc_interp_stats st0, st1;
    sc_interp_get_stats(in, &st0);
    /* a class unloaded right after the floor was polled: no FlameFixture name (those given
     * from the caches are taken back after the sample), java.* ones as before */
    wf_at(best_a);
    sc_interp_pass(in);
    sc_interp_pass(in);
    wf_poke(counter, 1000);
    counted moved = rewrite_range(in, &r.f, r.names, best_a, best_b);
    wf_poke(0, 0);
    sc_interp_get_stats(in, &st1);
    /* two passes later, with the count still: the names are back */
    wf_at(best_a);
    sc_interp_pass(in);
    sc_interp_pass(in);
    counted after = rewrite_range(in, &r.f, r.names, best_a, best_b);
    ok(warm.app > 0 && warm.app == best.app && warm.boot == best.boot && warm.boot > 0,
       "%s: samples %u-%u named alike twice (%d FlameFixture, %d java.* frames)", file, best_a,
       best_b, warm.app, warm.boot);
    ok(moved.app == 0 && moved.boot == warm.boot && st1.unload_window > st0.unload_window,
       "%s: the count moved after the floor: %d FlameFixture names (taken back: %llu), %d java.*",
       file, moved.app, (unsigned long long)(st1.unload_window - st0.unload_window), moved.boot);
    /* the compiled frames refused so are unnamed, never left to the agent's map (which names an
     * address after the newest method compiled there, another class's once classes unload) */
    ok(moved.raw == warm.raw && moved.unnamed > warm.unnamed,
       "%s: refused compiled frames unnamed, not left at their address (%d at an address, %d "
       "before; %d unnamed)",
       file, moved.raw, warm.raw, moved.unnamed);
    ok(after.app == warm.app && after.boot == warm.boot,
       "%s: two passes later the names are back (%d, %d)", file, after.app, after.boot);
    ok(st1.no_floor == sf.no_floor, "%s: no sample after the first pass counted as no_floor (%llu)",
       file, (unsigned long long)(st1.no_floor - sf.no_floor));
    replay_close(in, &r);
}

/* ---- code read too recently to have run at the sample ---- */

/* The code cache reuses the space of freed nmethods: a sample taken in one, walked after the
 * space went to another method of the same shape (churned classes), would be named after that
 * one. An nmethod first read in the current pass or the previous one names no frame
 * (sc_ch_settled) once classes were unloaded during the recording: those frames are unnamed
 * ([unknown]) and counted (new_code), and named two passes later; what the first two passes
 * read is believed (nothing earlier vouches for it). Without an unloading: named at once. */
static void new_code_rule(const char *file, bool churn)
{
    replayed r;
    sc_interp *in = replay_open(file, &r);
    if (!in)
        return;
    uint64_t counter = r.hs ? sc_hs_unloads_addr(r.hs) : 0;
    ok(r.hs && counter && sc_interp_start(in) == 1 && !sc_interp_walk_why(in, r.pid),
       "%s: the recorder walks it", file);
    /* the first recorded pass, in the recorder's first two passes: believed */
    uint32_t a = 0, b = 0;
    while (b < r.f.n_samples && r.f.samples[b].pass == r.f.samples[0].pass)
        b++;
    sc_interp_stats st0, st1, st2;
    wf_at(0);
    sc_interp_pass(in);
    if (churn) /* classes unloaded after the first poll: the rule is asked from now on */
        wf_poke(counter, 1000);
    sc_interp_pass(in);
    sc_interp_pass(in); /* the unloading rule's floor */
    counted first = rewrite_range(in, &r.f, r.names, a, b);
    sc_interp_get_stats(in, &st0);
    ok(first.app + first.boot > 0 && st0.new_code == 0,
       "%s: the first pass's nmethods name their frames (%d Java r.names, new_code %llu)", file,
       first.app + first.boot, (unsigned long long)st0.new_code);
    /* the next recorded pass that meets nmethods never read before, walked as the pass after
     * its floor, then again two passes later (each recorded pass alone: its memory and its
     * unloaded-classes count are one moment's) */
    counted fresh = {0, 0, 0, 0}, later = {0, 0, 0, 0};
    uint64_t fresh_new = 0, later_new = 0;
    for (a = b; a < r.f.n_samples && !fresh_new; a = b) {
        while (b < r.f.n_samples && r.f.samples[b].pass == r.f.samples[a].pass)
            b++;
        wf_at(a);
        sc_interp_pass(in);
        sc_interp_pass(in);
        sc_interp_get_stats(in, &st0);
        fresh = rewrite_range(in, &r.f, r.names, a, b);
        sc_interp_get_stats(in, &st1);
        wf_at(a);
        sc_interp_pass(in);
        sc_interp_pass(in);
        later = rewrite_range(in, &r.f, r.names, a, b);
        sc_interp_get_stats(in, &st2);
        fresh_new = st1.new_code - st0.new_code;
        later_new = st2.new_code - st1.new_code;
    }
    if (!churn) {
        /* no class unloaded: nothing frees code by the hundred, first samples keep their names */
        ok(st2.new_code == 0 && st2.compiled > st0.compiled,
           "%s, no class unloaded: nmethods first read in a pass name their frames (new_code "
           "%llu of %llu compiled frames)",
           file, (unsigned long long)st2.new_code,
           (unsigned long long)(st2.compiled - st0.compiled));
        goto out;
    }
    ok(fresh_new > 0 && fresh.unnamed > later.unnamed && fresh.raw == later.raw,
       "%s: nmethods first read in this pass name no frame: %llu unnamed (%d [unknown], %d two "
       "passes later), none left at its address for the map (%d at an address, %d later)",
       file, (unsigned long long)fresh_new, fresh.unnamed, later.unnamed, fresh.raw, later.raw);
    ok(later_new == 0 && later.app + later.boot > fresh.app + fresh.boot,
       "%s: two passes later they are named (%d Java r.names, %d before)", file,
       later.app + later.boot, fresh.app + fresh.boot);
out:
    wf_poke(0, 0);
    replay_close(in, &r);
}

/* ---- a code heap that grew: a blob at its old committed end ---- */

/* HotSpot commits a code heap's memory as code grows (CodeHeap::expand_by): a blob allocated
 * at the old committed end reaches past the bound the recorder read before. The heap's
 * VirtualSpace {_low, _high} is made to read lower (through the blob's code) while the walker
 * reads its bounds, then as recorded: the blob is found in the next pass. */
static void heap_grew(const char *file)
{
    char path[256];
    snprintf(path, sizeof path, DIR "%s", file);
    wf_fixture f;
    if (wf_read(path, &f) < 0) {
        ok(0, "%s: read the fixture", file);
        return;
    }
    int mem = open("/dev/null", O_RDONLY | O_CLOEXEC);
    wf_replay(mem, &f);
    uint64_t jvm_base = 0;
    for (uint32_t i = 0; i < f.n_maps; i++) {
        size_t l = strlen(f.maps[i].path);
        if (l >= 10 && !strcmp(f.maps[i].path + l - 10, "/libjvm.so") && !jvm_base)
            jvm_base = f.maps[i].start - f.maps[i].pgoff;
    }
    char why[SC_HS_WHY_MAX] = "";
    wf_at(0);
    sc_hs *hs = sc_hs_open(mem, jvm_base, why);
    sc_walker *w = hs ? sc_walker_new(hs, why) : NULL;
    /* a compiled blob the first sample's walk meets, and its heap */
    const sc_blob *b = NULL;
    sc_ch_heap hp[8];
    int nh = w ? sc_ch_heaps(sc_walker_codeheap(w), hp, 8) : 0;
    sample s;
    uint64_t chain[512];
    static sc_walk_frame fr[SC_WALK_MAX_FRAMES];
    for (uint32_t i = 0; w && i < f.n_samples && !b; i++) {
        if (parse(&f.samples[i], &s, chain) < 0)
            continue;
        wf_at(i);
        enum sc_walk_status st;
        int n = sc_walker_walk(w, &s.r, s.stack, s.len, fr, SC_WALK_MAX_FRAMES, &st);
        for (int k = 0; k < n && !b; k++)
            if (fr[k].kind == SC_WF_COMPILED)
                b = sc_ch_find((sc_ch *)sc_walker_codeheap(w), fr[k].pc);
    }
    uint64_t start = b ? b->start : 0, code = b ? b->code_begin : 0, at = 0;
    int heap = -1;
    for (int i = 0; i < nh && b; i++)
        if (start >= hp[i].lo && start < hp[i].hi)
            heap = i;
    /* where the heap's {_low, _high} words are in the recorded memory */
    for (uint32_t r = 0; heap >= 0 && r < f.n_ranges && !at; r++)
        for (uint32_t o = 0; o + 16 <= f.ranges[r].len && !at; o += 8)
            if (g64(f.ranges[r].data + o) == hp[heap].lo &&
                g64(f.ranges[r].data + o + 8) == hp[heap].hi)
                at = f.ranges[r].addr + o + 8;
    ok(at != 0, "%s: a compiled blob at %#llx, its heap's committed end recorded at %#llx", file,
       (unsigned long long)start, (unsigned long long)at);
    if (w)
        sc_walker_free(w);
    w = NULL;
    if (at) {
        wf_at(0);
        wf_poke(at, -(int64_t)(hp[heap].hi - code)); /* the end as it was before that blob */
        w = sc_walker_new(hs, why);
        wf_poke(0, 0);
    }
    if (w) {
        sc_ch_heap lowered[8];
        int nl = sc_ch_heaps(sc_walker_codeheap(w), lowered, 8);
        sc_walker_pass(w);
        const sc_blob *g = sc_ch_find((sc_ch *)sc_walker_codeheap(w), start);
        ok(nl > heap && lowered[heap].hi == code && g && g->start == start && g->code_begin == code,
           "%s: the blob at the heap's old end is found once the heap grew (%#llx)", file,
           g ? (unsigned long long)g->start : 0ull);
        sc_walker_free(w);
    }
    sc_hs_free(hs);
    close(mem);
    wf_free(&f);
}

int main(void)
{
    static const expect fixtures[] = {
        {"jdk17-fp.walk.gz", true, 0.99, true, false, 0},
        {"jdk17-nofp.walk.gz", false, 0.99, true, false, 0},
        {"jdk25-fp.walk.gz", true, 0.99, true, false, 0},
        {"jdk25-nofp.walk.gz", false, 0.99, true, false, 0},
        {"jdk17-xint.walk.gz", false, 0.99, false, false, 0},
        {"jdk17-deep.walk.gz", false, 0.99, false, true, 0},
        {"jdk25-deep.walk.gz", false, 0.99, false, true, 0},
        /* javac in a loop (tests/fixtures/java/CompilerLoop.java), recorded with 64 KiB copies */
        {"jdk17-javac.walk.gz", false, 0.99, false, false, 0.97},
        {"jdk25-javac.walk.gz", false, 0.99, false, false, 0.97},
    };
    for (size_t i = 0; i < sizeof fixtures / sizeof fixtures[0]; i++)
        replay(&fixtures[i]);
    unload_rule("jdk17-nofp.walk.gz");
    unload_rule("jdk25-nofp.walk.gz");
    new_code_rule("jdk17-nofp.walk.gz", true);
    new_code_rule("jdk25-nofp.walk.gz", true);
    new_code_rule("jdk17-javac.walk.gz", false);
    heap_grew("jdk17-javac.walk.gz");
    heap_grew("jdk25-javac.walk.gz");
    return tap_done();
}

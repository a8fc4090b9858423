/* Interpreted frames named in the recorder: see interp.h. Facts used:
 *   x86-64 template interpreter frame (HotSpot frame_x86.hpp, the same on JDK 11-25), in words
 *   from its rbp: +1 return address, 0 caller's rbp, -3 Method*, -8 bcp (0 in native methods),
 *   -9 the last fixed slot (so the frame is complete once sp <= fp - 72).
 *   The kernel's user callchain (perf_callchain_user, x86): ips[0] = regs->ip, then from
 *   fp = regs->bp: ips[k] = [fp + 8], fp = [fp]. So for k >= 1 the frame owning ips[k] has
 *   fp_k = [fp_{k-1}], and the leaf's is bp itself.
 *   Sample body with REGS_USER and STACK_USER after CALLCHAIN: u64 abi; u64 regs[popcount(mask)]
 *   (if abi != 0, in bit order); u64 size; u8 data[size]; u64 dyn_size (if size != 0). */
#include "sidecar/recorder/interp.h"

#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sidecar/recorder/hotspot.h"
#include "sidecar/recorder/walk.h"

#define SLOT_METHOD 24
#define SLOT_BCP 64
#define FRAME_FIXED 72
#define MAX_NAME 1100
#define MAX_EXEC_MAPS 1024 /* executable mappings kept until the walker exists */

typedef struct name_ent {
    uint64_t hash;
    uint32_t id; /* 0: empty */
} name_ent;

typedef struct exec_map {
    uint64_t start, end, pgoff;
    char *path;
} exec_map;

/* A compiled frame's name (name_compiled): for the walker's inlining answer token, given while
 * the method names were of generation gen. */
typedef struct ncache {
    uint64_t token, gen, addr;
    bool transient; /* a method of a class that can be unloaded is in it */
} ncache;
#define NC_CACHE 4096

typedef struct jvm {
    pid_t pid;
    int mem_fd, names_fd;
    uint64_t jvm_base;
    sc_hs *hs;
    sc_walker *walker;            /* NULL: the kernel's frame-pointer chain, as before */
    char walk_why[SC_HS_WHY_MAX]; /* why there is no walker */
    exec_map *maps;               /* noted before the walker exists */
    int n_maps;
    bool name_blobs; /* no perf map: stubs named after their blob */
    name_ent *names; /* open addressing on the name's hash; ids from 1 */
    size_t mask;
    uint32_t next_id;
    size_t text_bytes;       /* of the names below */
    char **text;             /* id -> name, to confirm hash hits */
    ncache *nc;              /* compiled frames' names (name_compiled), NC_CACHE entries */
    char why[SC_HS_WHY_MAX]; /* why its frames cannot be named, "" when they can */
} jvm;

struct sc_interp {
    jvm j[SC_INTERP_MAX_JVMS];
    int n;
    jvm *cur; /* the sample's JVM, while walking */
    sc_walk_frame frames[SC_WALK_MAX_FRAMES];
    int64_t floor;       /* unloaded-classes count polled at the previous pass's start */
    int64_t pass_seen;   /* ... and at this pass's start */
    int64_t unloads;     /* ... and before the current sample's frames were named */
    int64_t first_seen;  /* the first count polled (-1: none yet) */
    bool churn;          /* classes were unloaded since: freed code space gets reused */
    bool transient;      /* the last name given was of a class that can be unloaded */
    bool unload_refused; /* a name was refused by the unloading rule since this was cleared */
    int n_transient;     /* the current sample's frames named so, by index */
    int transient_at[SC_WALK_MAX_FRAMES];
    uint64_t orig[SC_WALK_MAX_FRAMES]; /* a frame-pointer chain before its frames were named */
    sc_interp_stats st;
};

static uint64_t get64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

sc_interp *sc_interp_new(const pid_t *pid, const int *mem_fd, const int *names_fd, int n)
{
    sc_interp *in = calloc(1, sizeof *in);
    if (!in)
        return NULL;
    for (int k = 0; k < n && in->n < SC_INTERP_MAX_JVMS; k++)
        in->j[in->n++] = (jvm){.pid = pid[k], .mem_fd = mem_fd[k], .names_fd = names_fd[k]};
    return in;
}

void sc_interp_free(sc_interp *in)
{
    if (!in)
        return;
    for (int k = 0; k < in->n; k++) {
        jvm *j = &in->j[k];
        sc_walker_free(j->walker);
        for (int i = 0; i < j->n_maps; i++)
            free(j->maps[i].path);
        free(j->maps);
        sc_hs_free(j->hs);
        for (uint32_t i = 1; j->text && i < j->next_id; i++)
            free(j->text[i]);
        free(j->text);
        free(j->names);
        free(j->nc);
        if (j->mem_fd >= 0)
            close(j->mem_fd);
        if (j->names_fd >= 0)
            close(j->names_fd);
    }
    free(in);
}

static jvm *find_jvm(sc_interp *in, pid_t pid)
{
    for (int k = 0; k < in->n; k++)
        if (in->j[k].pid == pid)
            return &in->j[k];
    return NULL;
}

void sc_interp_note_map(sc_interp *in, pid_t pid, uint64_t start, uint64_t end, uint64_t pgoff,
                        const char *path)
{
    jvm *j = in ? find_jvm(in, pid) : NULL;
    if (!j)
        return;
    size_t n = strlen(path);
    /* the executable mapping: libjvm is linked with vaddr == file offset (checked by sc_hs_open
     * through the ELF header it then expects at the base) */
    if (!j->jvm_base && start >= pgoff && n >= 10 && strcmp(path + n - 10, "/libjvm.so") == 0)
        j->jvm_base = start - pgoff;
    if (j->walker) { /* a mapping made during the recording (its MMAP2 record) */
        sc_walker_note_map(j->walker, start, end, pgoff, path);
        return;
    }
    if (!path[0] || j->n_maps >= MAX_EXEC_MAPS)
        return;
    if (!j->maps && !(j->maps = calloc(MAX_EXEC_MAPS, sizeof *j->maps)))
        return;
    char *p = strdup(path);
    if (p)
        j->maps[j->n_maps++] = (exec_map){.start = start, .end = end, .pgoff = pgoff, .path = p};
}

void sc_interp_name_blobs(sc_interp *in, pid_t pid)
{
    jvm *j = in ? find_jvm(in, pid) : NULL;
    if (j)
        j->name_blobs = true;
}

void sc_interp_note_mmap2(sc_interp *in, const unsigned char *r, size_t size)
{
    /* header 8; pid, tid 8; addr, len, pgoff 24; maj/min/ino/ino_gen or build id 24; prot,
     * flags 8; filename (NUL-terminated, padded to 8); sample_id trailer */
    if (!in || size < 8 + 64 + 2)
        return;
    uint32_t pid, prot;
    memcpy(&pid, r + 8, 4);
    memcpy(&prot, r + 8 + 56, 4);
    if (!(prot & 4) || !find_jvm(in, (pid_t)pid)) /* PROT_EXEC */
        return;
    const char *name = (const char *)r + 8 + 64;
    size_t max = size - (8 + 64);
    if (!memchr(name, '\0', max))
        return;
    uint64_t addr = get64(r + 16), len = get64(r + 24), pgoff = get64(r + 32);
    if (len == 0 || addr + len < addr)
        return;
    sc_interp_note_map(in, (pid_t)pid, addr, addr + len, pgoff, name);
}

int sc_interp_start(sc_interp *in)
{
    int ok = 0;
    for (int k = 0; k < in->n; k++) {
        jvm *j = &in->j[k];
        char *w = j->why;
        w[0] = '\0';
        if (j->mem_fd < 0)
            snprintf(w, SC_HS_WHY_MAX, "its memory could not be opened (%s)", strerror(-j->mem_fd));
        else if (!j->jvm_base)
            snprintf(w, SC_HS_WHY_MAX, "no executable libjvm.so mapping");
        else if ((j->hs = sc_hs_open(j->mem_fd, j->jvm_base, w)) != NULL) {
            j->mask = 4095;
            j->names = calloc(j->mask + 1, sizeof *j->names);
            j->text = calloc(j->mask + 1, sizeof *j->text);
            j->next_id = 1;
            if (!j->names || !j->text) {
                sc_hs_free(j->hs);
                j->hs = NULL;
                snprintf(w, SC_HS_WHY_MAX, "out of memory");
            }
        }
        if (j->hs && getenv("FLAME_SIDECAR_NO_WALK") == NULL) {
            /* The walk (recorder/walk.h): whole stacks without PreserveFramePointer. */
            j->walker = sc_walker_new(j->hs, j->walk_why);
            /* deep stacks: their older frames are read above the 16 KiB copy */
            if (j->walker)
                sc_walker_set_tail(j->walker, true);
            for (int i = 0; j->walker && i < j->n_maps; i++)
                sc_walker_note_map(j->walker, j->maps[i].start, j->maps[i].end, j->maps[i].pgoff,
                                   j->maps[i].path);
        } else if (j->hs) {
            snprintf(j->walk_why, SC_HS_WHY_MAX, "turned off (FLAME_SIDECAR_NO_WALK)");
        }
        ok += j->hs != NULL;
    }
    /* No poll before the first pump pass: the events were enabled before the tables could be
     * read, so for the samples already in the rings no count from before them exists. The
     * caller pumps once right away; those few milliseconds of samples keep only boot-loader
     * names. */
    in->floor = in->pass_seen = in->unloads = in->first_seen = -1;
    return ok;
}

const char *sc_interp_why(const sc_interp *in, pid_t pid)
{
    for (int k = 0; in && k < in->n; k++)
        if (in->j[k].pid == pid)
            return in->j[k].hs ? NULL : in->j[k].why;
    return "not recorded by the per-CPU recorder";
}

void sc_interp_pass(sc_interp *in)
{
    /* One counter value per pass: a sample drained in this pass was taken after the previous
     * pass read the rings' heads, so after the poll that preceded it (floor). A name is kept
     * only if no class was unloaded between that poll and its resolution. Several JVMs: the sum
     * (any unload anywhere counts; conservative). */
    int64_t sum = 0;
    bool any = false;
    for (int k = 0; k < in->n; k++)
        if (in->j[k].hs)
            sc_hs_pass(in->j[k].hs);
    for (int k = 0; k < in->n; k++)
        if (in->j[k].hs) {
            int64_t v = sc_hs_poll_unloads(in->j[k].hs);
            if (v < 0) {
                any = false;
                sum = -1;
                break;
            }
            sum += v;
            any = true;
        }
    in->floor = in->pass_seen;
    in->pass_seen = any ? sum : -1;
    if (in->first_seen < 0)
        in->first_seen = in->pass_seen;
    else if (in->pass_seen >= 0 && in->pass_seen != in->first_seen)
        in->churn = true;        /* moved: sc_walker_settled's rule from now on */
    in->unloads = in->pass_seen; /* the count as last read (unloads_check) */
    for (int k = 0; k < in->n; k++)
        if (in->j[k].walker)
            sc_walker_pass(in->j[k].walker);
}

const char *sc_interp_walk_why(const sc_interp *in, pid_t pid)
{
    for (int k = 0; in && k < in->n; k++)
        if (in->j[k].pid == pid)
            return in->j[k].walker ? NULL : in->j[k].hs ? in->j[k].walk_why : in->j[k].why;
    return "not recorded by the per-CPU recorder";
}

uint64_t sc_interp_copy_used(const sc_interp *in, pid_t pid)
{
    for (int k = 0; in && k < in->n; k++)
        if (in->j[k].pid == pid && in->j[k].walker)
            return sc_walker_extent(in->j[k].walker);
    return 0;
}

void sc_interp_walk_stats(const sc_interp *in, pid_t pid, sc_walk_stats *st)
{
    *st = (sc_walk_stats){0};
    for (int k = 0; in && k < in->n; k++) {
        if (pid && in->j[k].pid != pid)
            continue;
        sc_walk_stats one;
        sc_walker_get_stats(in->j[k].walker, &one);
        st->walks += one.walks, st->frames += one.frames, st->java_frames += one.java_frames;
        for (int i = 0; i < SC_WALK_NSTATUS; i++)
            st->status[i] += one.status[i];
        st->prologue += one.prologue, st->epilogue += one.epilogue, st->deopt += one.deopt;
        st->ra_shifted += one.ra_shifted, st->entry_recovered += one.entry_recovered;
        st->tail_reads += one.tail_reads, st->tail_walks += one.tail_walks;
        st->fp_fallback += one.fp_fallback, st->ns += one.ns;
    }
}

/* ---- the walk (pure) ---- */

static bool in_copy(uint64_t addr, uint64_t sp, uint64_t len, uint64_t need)
{
    return addr >= sp && addr - sp <= len && len - (addr - sp) >= need;
}

void sc_interp_walk(uint64_t *ips, int n, uint64_t bp, uint64_t sp, const unsigned char *stack,
                    uint64_t len, const sc_interp_walk_cb *cb, sc_interp_stats *st)
{
    uint64_t fp = bp; /* the frame pointer of the frame owning ips[k] */
    for (int k = 0; k < n; k++) {
        if (k > 0) {
            /* fp_{k-1} must hold {fp_k, ips[k]} in the copy, exactly as the kernel read them;
             * otherwise the copy and the chain disagree (the stack changed, or it ends here). */
            if (!in_copy(fp, sp, len, 16) || get64(stack + (fp - sp) + 8) != ips[k]) {
                for (int r = k; r < n; r++)
                    if (cb->in_interp(cb->ctx, ips[r])) {
                        st->frames++, st->unknown++;
                        if (in_copy(fp, sp, len, 16))
                            st->broken_chain++;
                        else
                            st->beyond_copy++;
                    }
                return;
            }
            fp = get64(stack + (fp - sp));
        }
        if (!cb->in_interp(cb->ctx, ips[k]))
            continue;
        st->frames++;
        if (fp < FRAME_FIXED || !in_copy(fp - FRAME_FIXED, sp, len, FRAME_FIXED)) {
            /* leaf: rbp may still be the caller's, or the frame is half pushed */
            if (k == 0 && fp >= FRAME_FIXED && fp - FRAME_FIXED < sp)
                st->partial++;
            else
                st->beyond_copy++;
            st->unknown++;
            continue;
        }
        uint64_t method = get64(stack + (fp - SLOT_METHOD - sp));
        uint64_t bcp = get64(stack + (fp - SLOT_BCP - sp));
        uint64_t a = cb->name(cb->ctx, k, method, bcp);
        if (a) {
            ips[k] = a;
            st->named++;
        } else {
            st->unknown++;
        }
    }
}

/* ---- names ---- */

static uint64_t hash_name(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h | 1;
}

/* The synthetic address of name (the whole map symbol) in j, writing its map line on first use;
 * 0 when full. */
static uint64_t intern(sc_interp *in, jvm *j, const char *name)
{
    uint64_t h = hash_name(name);
    size_t i = (size_t)h & j->mask;
    for (; j->names[i].id; i = (i + 1) & j->mask)
        if (j->names[i].hash == h && strcmp(j->text[j->names[i].id], name) == 0)
            return SC_INTERP_BASE + 16 * (uint64_t)j->names[i].id;
    size_t len = strlen(name) + 1;
    if (j->next_id >= SC_INTERP_MAX_NAMES || j->text_bytes + len > SC_INTERP_NAME_BYTES ||
        j->names_fd < 0) {
        in->st.names_full++;
        return 0;
    }
    if ((size_t)j->next_id * 2 > j->mask) { /* grow: ids are dense, rebuild from the texts */
        size_t nm = j->mask * 2 + 1;
        name_ent *nt = calloc(nm + 1, sizeof *nt);
        char **tx = realloc(j->text, (nm + 1) * sizeof *tx);
        if (!nt || !tx) {
            free(nt);
            if (tx)
                j->text = tx;
            return 0;
        }
        j->text = tx;
        for (uint32_t id = 1; id < j->next_id; id++) {
            uint64_t hh = hash_name(tx[id]);
            size_t p = (size_t)hh & nm;
            while (nt[p].id)
                p = (p + 1) & nm;
            nt[p] = (name_ent){.hash = hh, .id = id};
        }
        free(j->names);
        j->names = nt;
        j->mask = nm;
        for (i = (size_t)h & j->mask; j->names[i].id; i = (i + 1) & j->mask)
            ;
    }
    uint32_t id = j->next_id;
    uint64_t addr = SC_INTERP_BASE + 16 * (uint64_t)id;
    char line[MAX_NAME + 64];
    int m = snprintf(line, sizeof line, "%llx 10 %s\n", (unsigned long long)addr, name);
    if (m <= 0 || (size_t)m >= sizeof line || !(j->text[id] = strdup(name)))
        return 0;
    /* A short write leaves a partial line the map sanitizer drops: that name stays unknown. */
    if (write(j->names_fd, line, (size_t)m) != m) {
        free(j->text[id]);
        j->text[id] = NULL;
        return 0;
    }
    j->names[i] = (name_ent){.hash = h, .id = id};
    j->next_id++;
    j->text_bytes += len;
    in->st.names++;
    return addr;
}

static bool cb_in_interp(void *ctx, uint64_t pc)
{
    sc_interp *in = ctx;
    return sc_hs_in_interpreter(in->cur->hs, pc);
}

/* The classes unloaded in every JVM (java.cls.unloadedClasses; -1 when unknown). full: polled
 * (a change, or a collector's pause that ended, drops the cached answers that may be stale),
 * else only read. */
static int64_t unloads_now(sc_interp *in, bool full)
{
    int64_t sum = 0;
    for (int i = 0; i < in->n; i++)
        if (in->j[i].hs) {
            int64_t v = full ? sc_hs_poll_unloads(in->j[i].hs) : sc_hs_peek_unloads(in->j[i].hs);
            if (v < 0)
                return -1;
            sum += v;
        }
    return sum;
}

/* After a sample's frames were named: names of unloadable classes are given only while the count
 * is still the floor (polled before the sample was taken), and they stand if it still is now
 * (the count grows before a class's metadata is freed, so the Method* read held that method).
 * Otherwise those frames get their addresses back (orig[k]: what chain[k] held before it was
 * named) and the caches are polled. One read per sample that named such a frame. */
static void unloads_check(sc_interp *in, uint64_t *chain, const uint64_t *orig)
{
    if (in->n_transient) {
        int64_t now = unloads_now(in, false);
        if (now != in->unloads) {
            in->unloads = unloads_now(in, true);
            for (int i = 0; i < in->n_transient; i++)
                chain[in->transient_at[i]] = orig[in->transient_at[i]];
            in->st.unload_window += (uint64_t)in->n_transient;
        }
    }
    in->n_transient = 0;
}

/* Note that frame k was just named from a class that can be unloaded (unloads_check). */
static void note_transient(sc_interp *in, int k)
{
    if (in->transient && in->n_transient < SC_WALK_MAX_FRAMES)
        in->transient_at[in->n_transient++] = k;
    in->transient = false;
}

/* The name of a Java method of the current JVM, or NULL: checked (the holder lists it; with a bcp
 * its bytecodes hold it) and, unless its class is the boot loader's, no class unloaded (or
 * collector's pause ended) since before the sample: the Method* could otherwise be freed memory
 * reused by another method (hotspot.h). unsure: no bcp to check. */
static const char *method_name(sc_interp *in, uint64_t method, uint64_t bcp, bool unsure)
{
    const char *name;
    bool permanent;
    enum sc_hs_status s = unsure ? sc_hs_method(in->cur->hs, method, &name, &permanent)
                                 : sc_hs_frame(in->cur->hs, method, bcp, &name, &permanent);
    if (s != SC_HS_OK) {
        in->st.refused++;
        return NULL;
    }
    if (!permanent) {
        /* the count as last read: it only grows, so once past the floor a name is refused at
         * once; else it is read again after the sample's frames (unloads_check) */
        if (in->unloads < 0 || in->floor < 0 || in->unloads != in->floor) {
            /* what was just read may be the freed metadata of the unloaded class: not kept */
            sc_hs_forget(in->cur->hs, method);
            in->st.unload_window++;
            in->unload_refused = true;
            return NULL;
        }
        in->transient = true;
    }
    return name;
}

/* The synthetic address naming an interpreted frame of the current JVM, 0 when it stays
 * unnamed. */
static uint64_t name_frame(sc_interp *in, uint64_t method, uint64_t bcp, bool unsure)
{
    const char *name = method_name(in, method, bcp, unsure);
    char sym[MAX_NAME + 8];
    if (!name || snprintf(sym, sizeof sym, "%s_[int]", name) >= (int)sizeof sym)
        return 0;
    return intern(in, in->cur, sym);
}

/* What a compiled frame whose name the unloading rule refused carries instead of its pc: the
 * agent's map would name that pc after the newest method compiled there, which may be another
 * class's now that classes are being unloaded (folded as an unnamed JIT frame). Its pc when
 * even that cannot be written. */
static uint64_t unnamed_compiled(sc_interp *in, const sc_walk_frame *f)
{
    uint64_t a = intern(in, in->cur, "[unknown]");
    return a ? a : f->pc;
}

/* A compiled frame named per sample from its nmethod's Method* and the inlined methods at its pc
 * (outermost first, "->" between them, as the agent's map writes inline chains); unnamed when
 * the unloading rule refused its own method (unnamed_compiled); 0 when its own method cannot be
 * named otherwise. Inlined methods that cannot be named end the chain there. */
static uint64_t name_compiled(sc_interp *in, const sc_walk_frame *f)
{
    uint64_t m[SC_WALK_MAX_INLINE], token;
    jvm *j = in->cur;
    /* the nmethod at pc now may be code compiled into space freed after the sample, its name
     * another method's (the map's newest name there as well): no name, whatever its class.
     * Asked once classes have been unloaded during the recording: then nmethods are freed by
     * the hundred and their space reused at once (the churnjit fixture); a JVM that unloads
     * nothing keeps the names of its nmethods' first samples (the rule would take the first
     * sample of every nmethod read after the first two passes: ~2 % of a short profile's). */
    if (in->churn && !sc_walker_settled(j->walker, f)) {
        in->st.new_code++;
        return unnamed_compiled(in, f);
    }
    int k = sc_walker_inlined(j->walker, f, m, SC_WALK_MAX_INLINE, &token);
    /* The name given for this very answer (pc, nmethod, scopes: the token) under the same
     * generation of method names is the name again; one of a class that can be unloaded only
     * while names of such classes are given at all (method_name's rule, unloads_check after). */
    uint64_t gen = sc_hs_generation(j->hs);
    if (!j->nc)
        j->nc = calloc(NC_CACHE, sizeof *j->nc);
    ncache *c =
        j->nc && token ? &j->nc[(size_t)((token * 0x9E3779B97F4A7C15ull) >> 40) % NC_CACHE] : NULL;
    if (c && c->token == token && c->gen == gen &&
        (!c->transient || (in->unloads >= 0 && in->floor >= 0 && in->unloads == in->floor))) {
        in->transient = c->transient;
        in->st.nc_hits++;
        return c->addr;
    }
    char chain[MAX_NAME];
    size_t len = 0;
    bool whole = true, transient = false;
    in->unload_refused = false;
    for (int i = k - 1; i >= 0; i--) {
        const char *name = method_name(in, m[i], 0, true);
        transient |= in->transient;
        size_t nl = name ? strlen(name) : 0;
        if (!name || len + nl + 3 > sizeof chain) {
            whole = false;
            break;
        }
        if (len) {
            memcpy(chain + len, "->", 2);
            len += 2;
        }
        memcpy(chain + len, name, nl);
        len += nl;
    }
    in->transient = transient;
    if (!len)
        return in->unload_refused ? unnamed_compiled(in, f) : 0;
    chain[len] = '\0';
    uint64_t a = intern(in, j, chain);
    /* kept only when every method was named under this generation (a refusal forgets one) */
    if (c && whole && a && sc_hs_generation(j->hs) == gen)
        *c = (ncache){.token = token, .gen = gen, .addr = a, .transient = transient};
    return a;
}

static uint64_t cb_name(void *ctx, int k, uint64_t method, uint64_t bcp)
{
    sc_interp *in = ctx;
    uint64_t a = name_frame(in, method, bcp, false);
    note_transient(in, k);
    return a;
}

/* The synthetic address naming the code blob holding pc (a JVM without a perf map), 0 if none:
 * "call_stub" for the entry frame (as the agent names it), else the blob's name with blanks as
 * '_' and no parentheses ("StubRoutines (1)" -> "StubRoutines_1": folding cuts a name at " ("). */
static uint64_t name_blob(sc_interp *in, const sc_walk_frame *f)
{
    char name[SC_CH_NAME_MAX], out[SC_CH_NAME_MAX];
    if (f->kind == SC_WF_ENTRY)
        return intern(in, in->cur, "call_stub");
    if (!sc_walker_blob_name(in->cur->walker, f->pc, name, sizeof name))
        return 0;
    size_t n = 0;
    for (size_t i = 0; name[i] && n + 1 < sizeof out; i++)
        if (name[i] == ' ')
            out[n++] = '_';
        else if (name[i] != '(' && name[i] != ')')
            out[n++] = name[i];
    out[n] = '\0';
    sc_hs_clean_name(out, n, false);
    return n ? intern(in, in->cur, out) : 0;
}

/* The user chain of one sample from the walker (recorder/walk.h), into uc (capacity cap), its
 * frames named: interpreted and compiled from VMStructs, stubs after their blob for a JVM
 * without a map. kchain[0..kn): the kernel's user chain of the sample, checked against the walk
 * (sc_walker_fp_check). Returns the number of entries. */
static int walk_chain(sc_interp *in, jvm *j, const uint64_t *kchain, int kn, const sc_walk_regs *rg,
                      const unsigned char *stack, uint64_t dyn, uint64_t *uc, int cap)
{
    if (cap > SC_WALK_MAX_FRAMES)
        cap = SC_WALK_MAX_FRAMES;
    enum sc_walk_status ws;
    int n = cap > 0 ? sc_walker_walk(j->walker, rg, stack, dyn, in->frames, cap, &ws) : 0;
    int fc = sc_walker_fp_check(j->walker, in->frames, n, kchain, kn);
    in->st.fp_compared += fc >= 0;
    in->st.fp_same += fc > 0;
    uint64_t before = in->st.frames;
    for (int i = 0; i < n; i++) {
        const sc_walk_frame *f = &in->frames[i];
        uint64_t a = f->pc;
        if (f->kind == SC_WF_INTERP) {
            in->st.frames++;
            uint64_t named =
                f->method ? name_frame(in, f->method, f->bcp, f->flags & SC_WF_BCP_UNSURE) : 0;
            if (named) {
                a = named;
                in->st.named++;
            } else {
                in->st.unknown++;
                if (j->name_blobs && (named = name_blob(in, f)) != 0)
                    a = named; /* "Interpreter", as a map would have it */
            }
        } else if (j->name_blobs && (f->kind == SC_WF_STUB || f->kind == SC_WF_ENTRY)) {
            uint64_t named = name_blob(in, f);
            if (named)
                a = named;
        } else if (f->kind == SC_WF_COMPILED) {
            /* named here, per sample, rather than by the agent's map: a code address reused
             * after its method was unloaded keeps the name of what ran when it was sampled */
            uint64_t named = name_compiled(in, f);
            in->st.compiled++;
            if (named) {
                a = named;
                in->st.compiled_named++;
            }
        }
        note_transient(in, i);
        uc[i] = a;
    }
    if (in->st.frames != before)
        in->st.with_interp++;
    /* the frames' own addresses for those whose names an unloading may have spoilt */
    for (int i = 0; i < in->n_transient; i++) {
        const sc_walk_frame *f = &in->frames[in->transient_at[i]];
        in->orig[in->transient_at[i]] = f->kind == SC_WF_COMPILED ? unnamed_compiled(in, f) : f->pc;
    }
    unloads_check(in, uc, in->orig);
    return n;
}

/* The frame-pointer chain through the stack copy, as the kernel walks it (ip, then [fp + 8] up
 * the rbp links while they stay in the copy and move up): for a JVM the walker cannot describe
 * whose samples carry no user chain of the kernel's (perf's dwarf mode, per thread). */
static int fp_chain(const sc_walk_regs *rg, const unsigned char *stack, uint64_t dyn, uint64_t *uc,
                    int cap)
{
    int n = 0;
    if (cap > 0 && rg->ip)
        uc[n++] = rg->ip;
    for (uint64_t fp = rg->bp, last = rg->sp; n < cap && fp >= last && fp - rg->sp < dyn &&
                                              dyn - (fp - rg->sp) >= 16 && (fp & 7) == 0;) {
        uint64_t next = get64(stack + (fp - rg->sp)), ra = get64(stack + (fp - rg->sp) + 8);
        if (!ra)
            break;
        uc[n++] = ra;
        last = fp + 16;
        if (next <= fp)
            break;
        fp = next;
    }
    return n;
}

/* Where a sample's fields are, for the sample_type it was recorded with. */
typedef struct layout {
    size_t pid, chain, chain_end, regs, stack, tail; /* offsets; 0: not present */
    uint64_t abi, dyn, ssize;
} layout;

static int locate(const unsigned char *r, size_t size, uint64_t stype, uint64_t rmask, layout *l)
{
    *l = (layout){0};
    size_t p = 8;
    /* the kernel's order of the fields (perf_event.h, PERF_RECORD_SAMPLE) */
    static const uint64_t before_chain[] = {
        PERF_SAMPLE_IDENTIFIER, PERF_SAMPLE_IP,   PERF_SAMPLE_TID,
        PERF_SAMPLE_TIME,       PERF_SAMPLE_ADDR, PERF_SAMPLE_ID,
        PERF_SAMPLE_STREAM_ID,  PERF_SAMPLE_CPU,  PERF_SAMPLE_PERIOD};
    if (stype & (PERF_SAMPLE_READ | PERF_SAMPLE_BRANCH_STACK) || !(stype & PERF_SAMPLE_CALLCHAIN) ||
        !(stype & PERF_SAMPLE_TID))
        return -1; /* never asked for by us or by perf's per-thread recorder */
    for (size_t i = 0; i < sizeof before_chain / sizeof before_chain[0]; i++)
        if (stype & before_chain[i]) {
            if (before_chain[i] == PERF_SAMPLE_TID)
                l->pid = p;
            p += 8;
        }
    if (size < p + 8)
        return -1;
    uint64_t nr = get64(r + p);
    if (nr > (size - p - 8) / 8)
        return -1;
    l->chain = p;
    p = l->chain_end = p + 8 + 8 * (size_t)nr;
    if (stype & PERF_SAMPLE_RAW) {
        if (size - p < 4)
            return -1;
        uint32_t rs;
        memcpy(&rs, r + p, 4);
        if (rs > size - p - 4)
            return -1;
        p += 4 + rs;
    }
    l->regs = p;
    if (stype & PERF_SAMPLE_REGS_USER) {
        if (size - p < 8)
            return -1;
        l->abi = get64(r + p);
        p += 8;
        if (l->abi) {
            size_t nregs = (size_t)__builtin_popcountll(rmask);
            if (size - p < 8 * nregs)
                return -1;
            p += 8 * nregs;
        }
    }
    l->stack = p;
    if (stype & PERF_SAMPLE_STACK_USER) {
        if (size - p < 8)
            return -1;
        l->ssize = get64(r + p);
        p += 8;
        if (l->ssize) {
            if (l->ssize > size - p || size - p - l->ssize < 8)
                return -1;
            l->dyn = get64(r + p + l->ssize);
            if (l->dyn > l->ssize)
                l->dyn = l->ssize;
            p += (size_t)l->ssize + 8;
        }
    }
    l->tail = p;
    return 0;
}

/* Register b of a REGS_USER block recorded with mask rmask, 0 when not recorded. */
static uint64_t reg_at(const unsigned char *regs, uint64_t rmask, int b)
{
    if (!(rmask >> b & 1))
        return 0;
    return get64(regs + 8 * (size_t)__builtin_popcountll(rmask & ((1ull << b) - 1)));
}

size_t sc_interp_rewrite_as(sc_interp *in, const unsigned char *r, size_t size, uint64_t stype,
                            uint64_t rmask, unsigned char *out)
{
    layout l;
    if (size < 8 || size > 65535 || locate(r, size, stype, rmask, &l) < 0)
        return 0;
    sc_walk_regs rg = {0};
    if (l.abi)
        rg = (sc_walk_regs){.ax = reg_at(r + l.regs + 8, rmask, 0),
                            .bx = reg_at(r + l.regs + 8, rmask, 1),
                            .bp = reg_at(r + l.regs + 8, rmask, 6),
                            .sp = reg_at(r + l.regs + 8, rmask, 7),
                            .ip = reg_at(r + l.regs + 8, rmask, 8),
                            .r13 = reg_at(r + l.regs + 8, rmask, 21)};
    const unsigned char *stack = r + l.stack + 8;
    uint64_t nr = get64(r + l.chain);
    in->st.samples++;
    /* no count from before the sample (method_name refuses every unloadable class's name): the
     * first pass of a recording, or a JVM without the counter */
    if (in->floor < 0)
        in->st.no_floor++;
    in->st.bytes_in += size;
    /* The record without REGS_USER and STACK_USER (perf script sees the attribute without
     * them: percpu.c writes it so, and threadwalk.c rewrites perf's): the fields before the
     * chain, the chain (rewritten below), RAW, the fields after the stack. */
    size_t tail = size - l.tail;
    memcpy(out, r, l.chain_end);
    size_t mid = l.regs - l.chain_end; /* RAW */
    uint64_t uc[SC_WALK_MAX_FRAMES];
    int un = -1; /* the new user chain, when there is one */
    jvm *j = find_jvm(in, (pid_t)(uint32_t)get64(r + l.pid));
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    /* the user part of the chain: after PERF_CONTEXT_USER (the kernel part is excluded) */
    size_t u = 0;
    while (u < nr && get64(r + l.chain + 8 + 8 * u) != (uint64_t)PERF_CONTEXT_USER)
        u++;
    if (j && j->hs && l.abi && l.dyn) {
        in->cur = j;
        /* in->unloads: the count as last read (at the pass, or after an earlier sample); the
         * sample's names are checked against it after (unloads_check) */
        in->n_transient = 0;
        in->transient = false;
        /* the record's size is a u16: the chain must fit in it */
        int cap = (int)((65535 - l.chain - 16 - mid - tail) / 8 - u - 1);
        uint64_t kc[128];
        int kn = 0;
        for (size_t i = u + 1; i < nr && kn < 128; i++)
            kc[kn++] = get64(r + l.chain + 8 + 8 * i);
        if (j->walker) {
            un = walk_chain(in, j, kc, kn, &rg, stack, l.dyn, uc, cap);
        } else {
            /* the frame pointers, as before: the kernel's chain, or through the copy */
            un = u < nr ? kn : fp_chain(&rg, stack, l.dyn, uc, cap < 512 ? cap : 512);
            if (u < nr)
                memcpy(uc, kc, 8 * (size_t)kn);
            uint64_t before = in->st.frames;
            /* un <= 512: fp_chain's cap, or kn <= 128 */
            memcpy(in->orig, uc, 8 * (size_t)un);
            sc_interp_walk_cb cb = {.in_interp = cb_in_interp, .name = cb_name, .ctx = in};
            sc_interp_walk(uc, un, rg.bp, rg.sp, stack, l.dyn, &cb, &in->st);
            unloads_check(in, uc, in->orig);
            if (in->st.frames != before)
                in->st.with_interp++;
        }
    }
    size_t o = l.chain_end;
    if (un >= 0) {
        /* the kernel part, the marker, the new user chain */
        uint64_t nnr = (uint64_t)u + 1 + (uint64_t)un, mark = (uint64_t)PERF_CONTEXT_USER;
        memcpy(out + l.chain, &nnr, 8);
        o = l.chain + 8 + 8 * u;
        memcpy(out + o, &mark, 8);
        memcpy(out + o + 8, uc, 8 * (size_t)un);
        o += 8 + 8 * (size_t)un;
    }
    memcpy(out + o, r + l.chain_end, mid);
    o += mid;
    memcpy(out + o, r + l.tail, tail);
    o += tail;
    uint16_t ns = (uint16_t)o;
    memcpy(out + 6, &ns, 2);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (un >= 0)
        in->st.walk_ns +=
            (uint64_t)((t1.tv_sec - t0.tv_sec) * 1000000000ll + (t1.tv_nsec - t0.tv_nsec));
    in->st.bytes_out += o;
    return o;
}

size_t sc_interp_rewrite(sc_interp *in, const unsigned char *r, size_t size, unsigned char *out)
{
    /* the per-CPU recorder's sample type (percpu.c) */
    return sc_interp_rewrite_as(in, r, size,
                                PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
                                    PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN |
                                    PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER,
                                SC_INTERP_REGS_MASK, out);
}

void sc_interp_get_stats(const sc_interp *in, sc_interp_stats *st)
{
    *st = in ? in->st : (sc_interp_stats){0};
    for (int k = 0; in && k < in->n; k++)
        if (in->j[k].hs) {
            sc_hs_stats h;
            sc_hs_get_stats(in->j[k].hs, &h);
            st->throttled += h.throttled;
        }
}

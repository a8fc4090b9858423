/* The stack walker: see walk.h. HotSpot facts used (x86-64; frame_x86.hpp, frame_x86.inline.hpp,
 * templateInterpreterGenerator_x86.cpp, c2_MacroAssembler_x86.cpp, c1_MacroAssembler_x86.cpp,
 * sharedRuntime_x86_64.cpp):
 *   interpreter frame, in words from fp: +1 return address, 0 caller's fp, -1 sender sp, -3
 *   Method*, -8 bcp, -9 the last fixed slot: complete once sp <= fp - 72. Its method entry runs
 *   with rbx = Method* and r13 = sender sp, pops the return address into rax, pushes it back,
 *   then enter() and the fixed slots; once built, r13 is the bcp (a metaspace address), except
 *   in native methods, where it stays the sender sp (above fp).
 *   compiled frame: the prologue is [stack bang: mov [rsp-N],eax] push rbp [mov rbp,rsp]
 *   sub rsp,F-16 (or sub rsp,F-8 then mov [rsp+F-16],rbp); the epilogue add rsp,F-16; pop rbp;
 *   [vzeroupper] then a return poll (JDK 17+: cmp rsp,[r15+N]; ja stub; JDK 11: mov r10,[r15+N];
 *   test eax,[r10]; older: test eax,[rip+N]) and ret. The caller's rbp is saved at
 *   sender sp - 16 whether or not PreserveFramePointer made rbp a frame pointer.
 *   c2i adapter: pops the return address, sets r13 = rsp (the compiled caller's sp), extends the
 *   stack and stores the return address at [rsp]: an interpreted callee's sender sp is the
 *   compiled caller's unextended sp. */
#include "sidecar/recorder/walk.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/contract.h"

#define INTERP_FIXED 72  /* bytes below fp a complete interpreter frame has */
#define SLOT_SENDER_SP 8 /* fp - 8 */
#define SLOT_METHOD 24   /* fp - 24 */
#define SLOT_BCP 64      /* fp - 64 */
#define RA_SEARCH 6      /* more slots looked at for a compiled frame's return address */
#define CODE_PEEK 64     /* bytes of a prologue or epilogue looked at */
#define RA_CACHE 8192

typedef struct inl { /* pc -> inlined methods, for the blob it was read from */
    uint64_t pc, start;
    int32_t compile_id;
    uint8_t n;
    uint64_t serial; /* this answer's token (sc_walker_inlined) */
    uint64_t m[SC_WALK_MAX_INLINE];
} inl;
#define INL_CACHE 4096

typedef struct racache {
    uint64_t pc;
    bool call; /* the instruction before pc is a call */
} racache;

struct sc_walker {
    sc_hs *hs;
    sc_wread rd;
    sc_ch *ch;
    sc_eh *eh;
    bool tail;
    uint64_t extent;         /* bytes of the copy the last walk read */
    uint64_t jvm_lo, jvm_hi; /* libjvm's executable mapping (frame pointers kept) */
    racache ra[RA_CACHE];
    inl *inl;
    uint64_t inl_serial; /* tokens given so far */
    sc_walk_stats st;
};

#define TAIL_PAGES 8       /* pages above the copy cached per walk */
#define TAIL_MAX_PAGES 256 /* pages above the copy read per walk at most (1 MiB) */

/* One walk's view of the stack. */
typedef struct walk {
    sc_walker *w;
    const unsigned char *stack;
    uint64_t lo, len; /* the copy covers [lo, lo + len) */
    bool beyond;      /* a read past the copy failed */
    int tail_pages;   /* pages read above the copy */
    uint64_t page_addr[TAIL_PAGES];
    unsigned char page[TAIL_PAGES][4096];
} walk;

_Static_assert(SC_WALK_NSTATUS == CT_WALK_NSTATUS, "the contract names every walk status");

const char *sc_walk_status_name(int status)
{
    return ct_walk_status_name(status);
}

sc_walker *sc_walker_new(sc_hs *hs, char why[SC_HS_WHY_MAX])
{
    sc_walker *w = calloc(1, sizeof *w);
    if (!w) {
        snprintf(why, SC_HS_WHY_MAX, "out of memory");
        return NULL;
    }
    w->hs = hs;
    w->rd.fd = sc_hs_fd(hs);
    w->ch = sc_ch_open(hs, &w->rd, why);
    w->eh = w->ch ? sc_eh_new(&w->rd) : NULL;
    w->inl = calloc(INL_CACHE, sizeof *w->inl);
    if (!w->ch || !w->eh || !w->inl) {
        if (w->ch)
            snprintf(why, SC_HS_WHY_MAX, "out of memory");
        sc_walker_free(w);
        return NULL;
    }
    return w;
}

void sc_walker_free(sc_walker *w)
{
    if (!w)
        return;
    sc_ch_free(w->ch);
    sc_eh_free(w->eh);
    free(w->inl);
    free(w);
}

void sc_walker_note_map(sc_walker *w, uint64_t start, uint64_t end, uint64_t pgoff,
                        const char *path)
{
    if (!w)
        return;
    sc_eh_note_map(w->eh, start, end, pgoff, path);
    size_t n = strlen(path);
    if (n >= 10 && !strcmp(path + n - 10, "/libjvm.so") && !w->jvm_lo) {
        w->jvm_lo = start;
        w->jvm_hi = end;
    }
}

void sc_walker_set_tail(sc_walker *w, bool on)
{
    w->tail = on;
}

void sc_walker_pass(sc_walker *w)
{
    sc_ch_pass(w->ch);
}

void sc_walker_get_stats(const sc_walker *w, sc_walk_stats *st)
{
    *st = w ? w->st : (sc_walk_stats){0};
}

int sc_walker_inlined(sc_walker *w, const sc_walk_frame *f, uint64_t *methods, int cap,
                      uint64_t *token)
{
    if (token)
        *token = 0;
    if (f->kind != SC_WF_COMPILED || cap <= 0)
        return 0;
    const sc_blob *b = sc_ch_find(w->ch, f->pc);
    if (!b || b->kind != SC_BLOB_NMETHOD)
        return 0;
    inl *e = &w->inl[(size_t)((f->pc * 0x9E3779B97F4A7C15ull) >> 52) % INL_CACHE];
    if (e->pc != f->pc || e->start != b->start || e->compile_id != b->compile_id) {
        *e = (inl){
            .pc = f->pc, .start = b->start, .compile_id = b->compile_id, .serial = ++w->inl_serial};
        int n = sc_ch_scopes(w->ch, b, f->pc, e->m, SC_WALK_MAX_INLINE);
        /* the outermost scope is the nmethod's own method: anything else is not believed */
        if (n <= 0 || e->m[n - 1] != b->method) {
            e->m[0] = b->method;
            n = b->method ? 1 : 0;
        }
        e->n = (uint8_t)n;
    }
    if (token)
        *token = e->serial;
    int n = e->n < cap ? e->n : cap;
    /* keep the outermost ones when cut */
    memcpy(methods, e->m + (e->n - n), 8 * (size_t)n);
    return n;
}

bool sc_walker_settled(sc_walker *w, const sc_walk_frame *f)
{
    if (f->kind != SC_WF_COMPILED)
        return true;
    const sc_blob *b = sc_ch_find(w->ch, f->pc);
    return b && sc_ch_settled(w->ch, b);
}

bool sc_walker_blob_name(sc_walker *w, uint64_t pc, char *out, size_t cap)
{
    const sc_blob *b = sc_ch_contains(w->ch, pc) ? sc_ch_find(w->ch, pc) : NULL;
    if (!b || cap == 0 || !b->name[0])
        return false;
    snprintf(out, cap, "%s", b->name);
    return true;
}

uint64_t sc_walker_extent(const sc_walker *w)
{
    return w->extent;
}

const sc_ch *sc_walker_codeheap(const sc_walker *w)
{
    return w->ch;
}

const sc_eh *sc_walker_ehframe(const sc_walker *w)
{
    return w->eh;
}

/* ---- reading ---- */

/* A word of the stack at addr: from the copy, or (tail reads) from the target's memory above
 * it. Never below the interrupted sp: nothing of any frame lies there. */
static int sw(walk *k, uint64_t addr, uint64_t *v)
{
    if (addr >= k->lo && addr - k->lo < k->len && k->len - (addr - k->lo) >= 8) {
        memcpy(v, k->stack + (addr - k->lo), 8);
        if (addr - k->lo + 8 > k->w->extent)
            k->w->extent = addr - k->lo + 8;
        return 0;
    }
    if (addr < k->lo || addr > SC_WR_USER_TOP - 8)
        return -1;
    /* above the copy: the target's memory now, a page at a time (the older frames of a deep
     * stack change rarely; every frame read so must still pass the walk's checks) */
    uint64_t pa = addr & ~4095ull;
    if (k->w->tail && (addr & 4095) <= 4096 - 8) {
        size_t slot = (size_t)(pa >> 12) % TAIL_PAGES;
        if (k->page_addr[slot] != pa) {
            if (k->tail_pages >= TAIL_MAX_PAGES ||
                sc_wr_read(&k->w->rd, pa, k->page[slot], 4096) < 0) {
                k->beyond = true;
                return -1;
            }
            k->page_addr[slot] = pa;
            k->tail_pages++;
            k->w->st.tail_reads++;
        }
        memcpy(v, k->page[slot] + (addr & 4095), 8);
        return 0;
    }
    k->beyond = true;
    return -1;
}

static bool is_code(sc_walker *w, uint64_t pc)
{
    return sc_ch_contains(w->ch, pc) || sc_eh_mapped(w->eh, pc);
}

/* Does a call instruction end right before pc? Its forms on x86-64: e8 rel32; ff /2 with any
 * ModRM (call reg, call [reg+disp], call [rip+disp32]), with or without a REX prefix. */
static bool after_call(sc_walker *w, uint64_t pc)
{
    racache *c = &w->ra[(size_t)((pc * 0x9E3779B97F4A7C15ull) >> 51) % RA_CACHE];
    if (c->pc == pc && pc)
        return c->call;
    unsigned char b[8];
    bool call = false;
    if (pc >= 4096 + 8 && sc_wr_read(&w->rd, pc - 8, b, 8) == 0) {
        if (b[3] == 0xe8)
            call = true;
        for (int len = 2; len <= 7 && !call; len++) {
            const unsigned char *p = b + 8 - len;
            if (p[0] != 0xff || ((p[1] >> 3) & 7) != 2)
                continue;
            unsigned mod = p[1] >> 6, rm = p[1] & 7;
            int need = 2;
            if (mod != 3 && rm == 4) {
                if (len < 3)
                    continue;
                need++; /* SIB; without a base (mod 0, base 5) a disp32 follows */
                if (mod == 0 && (p[2] & 7) == 5)
                    need += 4;
            }
            if (mod == 1)
                need += 1;
            else if (mod == 2 || (mod == 0 && rm == 5))
                need += 4;
            call = need == len;
        }
    }
    c->pc = pc;
    c->call = call;
    return call;
}

/* Could pc be a return address? Code after a call instruction -- or in the interpreter, which
 * pushes its invokes' return addresses (Interpreter::invoke_return_entry_table) and jumps. */
static bool is_ra(sc_walker *w, uint64_t pc)
{
    if (sc_hs_in_interpreter(w->hs, pc))
        return true;
    return is_code(w, pc) && after_call(w, pc);
}

/* ---- compiled frames: prologue and epilogue ---- */

enum how { POP1, POP2, BODY, BODY_FP_LIVE, NONE };

/* The length of a multi-byte nop at p (0 if it is none): 90, 66 90, 0f 1f /0 with any ModRM,
 * possibly behind 66 prefixes. */
static int nop_len(const unsigned char *p, int avail)
{
    int i = 0;
    while (i < avail && i < 4 && p[i] == 0x66)
        i++;
    if (i < avail && p[i] == 0x90)
        return i + 1;
    if (avail - i < 3 || p[i] != 0x0f || p[i + 1] != 0x1f)
        return 0;
    unsigned mod = p[i + 2] >> 6, rm = p[i + 2] & 7;
    int n = i + 3;
    if (mod != 3 && rm == 4)
        n++;
    if (mod == 1)
        n += 1;
    else if (mod == 2)
        n += 4;
    return n <= avail ? n : 0;
}

/* Where is the frame of a compiled method whose pc lies before frame_complete? Decided by
 * decoding the prologue from the verified entry up to pc. */
static enum how prologue(sc_walker *w, const sc_blob *b, uint64_t pc)
{
    w->st.prologue++;
    if (pc <= b->verified_entry)
        return POP1; /* the inline-cache check before it pushes nothing */
    uint64_t from = b->verified_entry;
    if (pc - from > CODE_PEEK)
        from = pc - CODE_PEEK; /* unusual: a long prologue; judge what precedes pc */
    unsigned char c[CODE_PEEK];
    int n = (int)(pc - from);
    bool pushed = false, subbed = false, known = from == b->verified_entry;
    if (sc_wr_read(&w->rd, from, c, (size_t)n) < 0)
        return NONE;
    for (int i = 0; i < n && known;) {
        const unsigned char *p = c + i;
        int left = n - i, l = 0;
        if (p[0] == 0x55) {
            pushed = true, l = 1;
        } else if (left >= 3 && p[0] == 0x48 &&
                   ((p[1] == 0x89 && p[2] == 0xe5) || (p[1] == 0x8b && p[2] == 0xec))) {
            l = 3; /* mov rbp, rsp */
        } else if (left >= 4 && p[0] == 0x48 && p[1] == 0x83 && p[2] == 0xec) {
            subbed = true, l = 4;
        } else if (left >= 7 && p[0] == 0x48 && p[1] == 0x81 && p[2] == 0xec) {
            subbed = true, l = 7;
        } else if (left >= 7 && p[0] == 0x89 && p[1] == 0x84 && p[2] == 0x24) {
            l = 7; /* stack bang mov [rsp+disp32], eax */
        } else if (left >= 4 && p[0] == 0x89 && p[1] == 0x44 && p[2] == 0x24) {
            l = 4;
        } else if (left >= 5 && p[0] == 0x48 && p[1] == 0x89 && p[2] == 0x6c && p[3] == 0x24) {
            pushed = true, l = 5; /* mov [rsp+disp8], rbp: saved without a push */
        } else if (left >= 8 && p[0] == 0x48 && p[1] == 0x89 && p[2] == 0xac && p[3] == 0x24) {
            pushed = true, l = 8;
        } else {
            l = nop_len(p, left);
        }
        if (l == 0 || l > left) {
            known = false;
            break;
        }
        i += l;
    }
    if (subbed)
        return pushed ? BODY : BODY_FP_LIVE;
    if (known)
        return pushed ? POP2 : POP1;
    /* instructions we do not know before pc and no sub seen: judge by distance (the push comes
     * right before the frame is complete) */
    return pc + 4 >= b->frame_complete ? POP2 : POP1;
}

/* The top frame's pc in an epilogue? Decodes forward from pc; if only epilogue instructions
 * lead to a ret, the frame is (partly) popped. */
static enum how epilogue(sc_walker *w, uint64_t pc, uint64_t end)
{
    unsigned char c[32];
    size_t n = end - pc < sizeof c ? (size_t)(end - pc) : sizeof c;
    if (n == 0 || sc_wr_read(&w->rd, pc, c, n) < 0)
        return BODY;
    bool fp_on_stack = false;
    for (size_t i = 0; i < n;) {
        const unsigned char *p = c + i;
        size_t left = n - i, l = 0;
        if (p[0] == 0xc3) {
            w->st.epilogue++;
            return fp_on_stack ? POP2 : POP1;
        }
        if (p[0] == 0x5d) {
            if (fp_on_stack)
                return BODY;
            fp_on_stack = true, l = 1;
        } else if (left >= 3 && p[0] == 0xc5 && p[1] == 0xf8 && p[2] == 0x77) {
            l = 3; /* vzeroupper */
        } else if (left >= 4 && p[0] == 0x49 && p[1] == 0x3b && p[2] == 0x67) {
            l = 4; /* cmp rsp, [r15+disp8] */
        } else if (left >= 7 && p[0] == 0x49 && p[1] == 0x3b && p[2] == 0xa7) {
            l = 7;
        } else if (left >= 6 && p[0] == 0x0f && p[1] == 0x87) {
            l = 6; /* ja rel32 */
        } else if (left >= 2 && p[0] == 0x77) {
            l = 2;
        } else if (left >= 4 && p[0] == 0x4d && p[1] == 0x8b && p[2] == 0x57) {
            l = 4; /* mov r10, [r15+disp8] */
        } else if (left >= 7 && p[0] == 0x4d && p[1] == 0x8b && p[2] == 0x97) {
            l = 7;
        } else if (left >= 3 && p[0] == 0x41 && p[1] == 0x85 && p[2] == 0x02) {
            l = 3; /* test eax, [r10] */
        } else if (left >= 6 && p[0] == 0x85 && p[1] == 0x05) {
            l = 6; /* test eax, [rip+disp32] */
        } else {
            return BODY;
        }
        i += l;
    }
    return BODY;
}

/* ---- one step per kind: each fills the caller's pc/sp/fp, or returns a status ---- */

typedef struct step {
    uint64_t pc, sp, fp;
} step;

#define OK (-1)

static int pop_ra(walk *k, uint64_t sp, uint64_t fp, step *n)
{
    if (sw(k, sp, &n->pc) < 0)
        return k->beyond ? SC_WALK_COPY_END : SC_WALK_LOOP;
    n->sp = sp + 8;
    n->fp = fp;
    return OK;
}

static int pop_fp_ra(walk *k, uint64_t sp, step *n)
{
    if (sw(k, sp, &n->fp) < 0 || sw(k, sp + 8, &n->pc) < 0)
        return k->beyond ? SC_WALK_COPY_END : SC_WALK_LOOP;
    n->sp = sp + 16;
    return OK;
}

/* Unwind a frame of `size` bytes at sp: return address at sp + size - 8, the caller's rbp below
 * it (fp_live: not saved yet, still in rbp). A return address that is not code: a few more
 * slots are tried (generated code sometimes keeps more on the stack than its frame size says). */
static int body(walk *k, uint64_t sp, uint64_t fp, int32_t size, bool fp_live, int fail, step *n)
{
    if (size < 16)
        return fail;
    uint64_t e = sp + (uint64_t)size;
    for (int s = 0; s <= RA_SEARCH; s++, e += 8) {
        uint64_t ra;
        if (sw(k, e - 8, &ra) < 0)
            return k->beyond ? SC_WALK_COPY_END : fail;
        if (!is_code(k->w, ra))
            continue;
        if (!fp_live && sw(k, e - 16, &n->fp) < 0)
            return k->beyond ? SC_WALK_COPY_END : fail;
        if (fp_live)
            n->fp = fp;
        n->pc = ra;
        n->sp = e;
        if (s)
            k->w->st.ra_shifted++;
        return OK;
    }
    return fail;
}

static int step_compiled(walk *k, const sc_blob *b, sc_walk_frame *f, uint64_t sp, uint64_t fp,
                         bool top, step *n)
{
    sc_walker *w = k->w;
    uint64_t pc = f->pc;
    f->kind = SC_WF_COMPILED;
    f->method = b->method;
    if (!top && b->orig_pc_offset >= 0 && (pc == b->deopt || pc == b->deopt_mh)) {
        /* a deoptimized frame: its return address was patched to the handler, the original pc
         * kept in the frame (frame::get_original_pc) */
        uint64_t o;
        if (sw(k, sp + (uint64_t)b->orig_pc_offset, &o) == 0 && o >= b->code_begin &&
            o < b->code_end) {
            f->pc = o;
            f->flags |= SC_WF_DEOPT;
            w->st.deopt++;
        }
    }
    enum how h = BODY;
    if (pc < b->frame_complete)
        h = prologue(w, b, pc);
    else if (top)
        h = epilogue(w, pc, b->code_end);
    switch (h) {
    case POP1:
        return pop_ra(k, sp, fp, n);
    case POP2:
        return pop_fp_ra(k, sp, n);
    case BODY:
    case BODY_FP_LIVE:
        return body(k, sp, fp, b->frame_size, h == BODY_FP_LIVE, SC_WALK_BREAK_COMPILED, n);
    case NONE:
        break;
    }
    return SC_WALK_BREAK_COMPILED;
}

static bool interp_plausible(uint64_t sp, uint64_t fp)
{
    return (fp & 7) == 0 && fp >= sp + INTERP_FIXED && fp - sp < SC_WALK_MAX_SPAN;
}

/* The sender sp of an interpreted frame at fp (its caller's unextended sp). */
static int sender_sp(walk *k, uint64_t fp, uint64_t *v)
{
    if (sw(k, fp - SLOT_SENDER_SP, v) < 0)
        return -1;
    return *v >= fp + 16 && *v - fp < SC_WALK_MAX_SPAN && (*v & 7) == 0 ? 0 : -1;
}

static bool method_ok(sc_walker *w, uint64_t m)
{
    const char *name;
    bool perm;
    return sc_wr_ptr_ok(m) && sc_hs_method(w->hs, m, &name, &perm) == SC_HS_OK;
}

/* The top interpreted frame, not (yet) complete: its method entry is building it. */
static int interp_entry(walk *k, sc_walk_frame *f, const sc_walk_regs *r, uint64_t sp, uint64_t fp,
                        step *n)
{
    sc_walker *w = k->w;
    /* named by rbx, the Method* throughout the entry, when it is one */
    f->method = 0;
    f->flags &= (uint8_t)~SC_WF_BCP_UNSURE;
    if (method_ok(w, r->bx)) {
        f->method = r->bx;
        f->flags |= SC_WF_BCP_UNSURE;
    }
    if ((fp & 7) == 0 && fp >= sp && fp < sp + INTERP_FIXED) {
        /* enter() done: rbp is this frame's own fp; the sender sp pushed right below it, or
         * still in r13 */
        if (sw(k, fp + 8, &n->pc) < 0 || sw(k, fp, &n->fp) < 0)
            return SC_WALK_INTERP_ENTRY;
        if (fp - SLOT_SENDER_SP < sp || sender_sp(k, fp, &n->sp) < 0) {
            if (r->r13 < fp + 16 || r->r13 - fp >= SC_WALK_MAX_SPAN || (r->r13 & 7))
                return SC_WALK_INTERP_ENTRY;
            n->sp = r->r13;
        }
        w->st.entry_recovered++;
        return is_code(w, n->pc) ? OK : SC_WALK_INTERP_ENTRY;
    }
    /* rbp is the caller's, r13 the sender sp (the caller's sp at the call): the return address
     * is at [sp] below it (before it is popped into rax, or once pushed back), or in rax */
    if (r->r13 < sp || r->r13 - sp >= SC_WALK_MAX_SPAN || (r->r13 & 7))
        return SC_WALK_INTERP_ENTRY;
    uint64_t ra;
    if (r->r13 > sp && sw(k, sp, &ra) == 0 && is_ra(w, ra))
        n->pc = ra;
    else if (is_ra(w, r->ax))
        n->pc = r->ax;
    else
        return SC_WALK_INTERP_ENTRY;
    n->sp = r->r13;
    n->fp = fp;
    w->st.entry_recovered++;
    return OK;
}

static int step_interp(walk *k, sc_walk_frame *f, const sc_walk_regs *r, uint64_t sp, uint64_t fp,
                       bool top, step *n)
{
    f->kind = SC_WF_INTERP;
    /* In the method entry, before the frame is built, rbp is still the caller's and r13 the
     * sender sp: a stack address below that frame. Once built, r13 is the bcp. */
    bool entering = top && r->r13 >= sp && r->r13 < fp && (r->r13 & 7) == 0;
    if (entering) {
        int rc = interp_entry(k, f, r, sp, fp, n);
        if (rc == OK || !interp_plausible(sp, fp))
            return rc;
        /* r13 looked like a sender sp, but no return address was found for it: the frame at
         * rbp may well be this method's own */
    }
    if (interp_plausible(sp, fp)) {
        f->flags &= (uint8_t)~SC_WF_BCP_UNSURE;
        if (sw(k, fp - SLOT_METHOD, &f->method) < 0 || sw(k, fp - SLOT_BCP, &f->bcp) < 0 ||
            sw(k, fp + 8, &n->pc) < 0 || sw(k, fp, &n->fp) < 0)
            return k->beyond ? SC_WALK_COPY_END : SC_WALK_BREAK_INTERP;
        if (sender_sp(k, fp, &n->sp) < 0)
            return k->beyond ? SC_WALK_COPY_END : SC_WALK_BREAK_INTERP;
        return OK;
    }
    if (!top)
        return SC_WALK_BREAK_INTERP;
    return interp_entry(k, f, r, sp, fp, n);
}

static int step_stub(walk *k, const sc_blob *b, sc_walk_frame *f, const sc_walk_regs *r,
                     uint64_t sp, uint64_t fp, bool top, step *n)
{
    sc_walker *w = k->w;
    uint64_t pc = f->pc, ra, sfp;
    f->kind = SC_WF_STUB;
    if (pc == sc_ch_call_stub_ra(w->ch)) {
        /* the call stub: an rbp frame (saved registers, the call's arguments) into libjvm */
        f->kind = SC_WF_ENTRY;
        if ((fp & 7) || fp < sp || fp - sp >= SC_WALK_MAX_SPAN)
            return SC_WALK_BREAK_STUB;
        if (sw(k, fp + 8, &n->pc) < 0 || sw(k, fp, &n->fp) < 0)
            return k->beyond ? SC_WALK_COPY_END : SC_WALK_BREAK_STUB;
        n->sp = fp + 16;
        return OK;
    }
    if (b->frameless || (top && pc == b->code_begin))
        return pop_ra(k, sp, fp, n); /* nothing pushed yet at a stub's first instruction */
    if (b->deopt_blob && b->frame_size >= 16 && (fp & 7) == 0 && fp >= sp &&
        fp < sp + (uint64_t)b->frame_size && sw(k, fp + 8, &ra) == 0 && is_ra(w, ra)) {
        /* unpacking a deoptimized frame: the blob popped the compiled frame, pushed the
         * interpreter frames replacing it and an rbp frame of its own above them, which its
         * frame size no longer describes */
        if (sw(k, fp, &sfp) < 0)
            return k->beyond ? SC_WALK_COPY_END : SC_WALK_BREAK_STUB;
        n->pc = ra;
        n->fp = sfp;
        n->sp = fp + 16;
        return OK;
    }
    if (b->frame_size >= 16 && pc >= b->frame_complete)
        return body(k, sp, fp, b->frame_size, false, SC_WALK_BREAK_STUB, n);
    /* No frame size: either no frame at all (the return address at [sp]) or an rbp frame
     * (enter()); believe the one whose return address follows a call instruction. A return
     * address into such a stub means it called out, with its frame built: rbp first there. */
    bool fp_frame = (fp & 7) == 0 && fp >= sp && fp - sp < SC_WALK_MAX_SPAN &&
                    sw(k, fp + 8, &ra) == 0 && is_ra(w, ra);
    uint64_t ra0;
    bool leaf = sw(k, sp, &ra0) == 0 && is_ra(w, ra0);
    if (fp_frame && (!top || !leaf)) {
        if (sw(k, fp, &sfp) < 0)
            return k->beyond ? SC_WALK_COPY_END : SC_WALK_BREAK_STUB;
        n->pc = ra;
        n->fp = sfp;
        n->sp = fp + 16;
        return OK;
    }
    if (leaf) {
        n->pc = ra0;
        n->sp = sp + 8;
        n->fp = fp;
        return OK;
    }
    if (top && is_ra(w, r->ax) && r->r13 >= sp && r->r13 - sp < SC_WALK_MAX_SPAN &&
        (r->r13 & 7) == 0) {
        /* an adapter between popping the return address into rax and storing it back */
        n->pc = r->ax;
        n->sp = r->r13;
        n->fp = fp;
        return OK;
    }
    /* A frameless stub with a few words above its return address: registers it saved (C1's
     * slow_subtype_check pushes four), or the 8-byte pad call_VM_leaf puts below a call into
     * the VM when sp was not 16-aligned (C1's unwind_exception, entered by a jump with the
     * return address at [sp]). The first slot holding code right after a call instruction. */
    for (int s = 1; s <= RA_SEARCH; s++) {
        uint64_t v;
        if (sw(k, sp + 8 * (uint64_t)s, &v) < 0)
            break;
        if (is_code(w, v) && after_call(w, v)) {
            n->pc = v;
            n->sp = sp + 8 * (uint64_t)s + 8;
            n->fp = fp;
            w->st.ra_shifted++;
            return OK;
        }
    }
    return k->beyond ? SC_WALK_COPY_END : SC_WALK_BREAK_STUB;
}

static int step_native(walk *k, uint64_t pc, uint64_t sp, uint64_t fp, bool top, step *n)
{
    sc_walker *w = k->w;
    sc_eh_row row;
    enum sc_eh_result res = sc_eh_find(w->eh, top ? pc : pc - 1, &row);
    if (res == SC_EH_NOT_MAPPED)
        return SC_WALK_UNKNOWN_PC;
    if (res == SC_EH_FOUND && row.ra == SC_EH_UNDEF)
        return SC_WALK_ROOT;
    if (res == SC_EH_FOUND && row.cfa != SC_EH_CFA_BAD && row.ra == SC_EH_AT_CFA &&
        row.fp != SC_EH_BAD) {
        uint64_t cfa = row.cfa == SC_EH_CFA_FP ? fp : sp;
        if (row.cfa == SC_EH_CFA_PLT && (pc & 15) >= 11)
            cfa += 8;
        cfa += (uint64_t)(int64_t)row.cfa_off;
        if (sw(k, cfa + (uint64_t)(int64_t)row.ra_off, &n->pc) < 0)
            return k->beyond ? SC_WALK_COPY_END : SC_WALK_LOOP;
        n->fp = fp;
        /* a slot below sp was popped already (epilogues often keep the rule): rbp holds it */
        uint64_t fp_at = cfa + (uint64_t)(int64_t)row.fp_off;
        if (row.fp == SC_EH_AT_CFA && fp_at >= sp && sw(k, fp_at, &n->fp) < 0)
            return k->beyond ? SC_WALK_COPY_END : SC_WALK_LOOP;
        n->sp = cfa;
        return OK;
    }
    /* no usable row: the frame pointer, if it leads to code (libjvm keeps frame pointers) */
    uint64_t ra;
    if ((fp & 7) == 0 && fp >= sp && fp - sp < SC_WALK_MAX_SPAN && sw(k, fp + 8, &ra) == 0 &&
        is_code(w, ra) && sw(k, fp, &n->fp) == 0) {
        n->pc = ra;
        n->sp = fp + 16;
        w->st.fp_fallback++;
        return OK;
    }
    return k->beyond ? SC_WALK_COPY_END : SC_WALK_NO_UNWIND;
}

int sc_walker_walk(sc_walker *w, const sc_walk_regs *r, const unsigned char *stack, uint64_t len,
                   sc_walk_frame *frames, int cap, enum sc_walk_status *status)
{
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    static walk k; /* 32 KiB of page cache: not on the stack (the recorder is one thread) */
    k.w = w, k.stack = stack, k.lo = r->sp, k.len = len, k.beyond = false, k.tail_pages = 0;
    memset(k.page_addr, 0, sizeof k.page_addr);
    w->extent = 0;
    uint64_t pc = r->ip, sp = r->sp, fp = r->bp;
    if (cap > SC_WALK_MAX_FRAMES)
        cap = SC_WALK_MAX_FRAMES;
    int n = 0, st = SC_WALK_MAX_DEPTH;
    for (bool top = true; n < cap; top = false) {
        if (pc < 4096 || pc >= SC_WR_USER_TOP) {
            st = SC_WALK_UNKNOWN_PC;
            break;
        }
        sc_walk_frame *f = &frames[n++];
        *f = (sc_walk_frame){
            .pc = pc, .sp = sp, .fp = fp, .kind = SC_WF_NATIVE, .flags = top ? SC_WF_TOP : 0};
        step nx = {0};
        int rc;
        if (sc_ch_contains(w->ch, pc)) {
            const sc_blob *b = sc_ch_find(w->ch, pc);
            if (!b) {
                f->kind = SC_WF_STUB;
                rc = SC_WALK_UNKNOWN_BLOB;
            } else if (b->kind == SC_BLOB_INTERP) {
                rc = step_interp(&k, f, r, sp, fp, top, &nx);
            } else if (b->kind == SC_BLOB_NMETHOD) {
                rc = step_compiled(&k, b, f, sp, fp, top, &nx);
            } else if (b->kind == SC_BLOB_VTHREAD) {
                f->kind = SC_WF_STUB;
                rc = SC_WALK_VTHREAD;
            } else {
                rc = step_stub(&k, b, f, r, sp, fp, top, &nx);
            }
        } else {
            rc = step_native(&k, pc, sp, fp, top, &nx);
        }
        if (f->kind == SC_WF_INTERP || f->kind == SC_WF_COMPILED)
            w->st.java_frames++;
        if (rc != OK) {
            st = rc;
            break;
        }
        /* the stack only grows down: a caller's frame lies above, and not absurdly far (the
         * top frame may have none left: a method entry that popped its return address) */
        if (nx.sp < sp || (nx.sp == sp && !top) || nx.sp - sp > SC_WALK_MAX_SPAN || (nx.sp & 7)) {
            st = SC_WALK_LOOP;
            break;
        }
        pc = nx.pc, sp = nx.sp, fp = nx.fp;
    }
    *status = (enum sc_walk_status)st;
    w->st.walks++;
    w->st.tail_walks += k.tail_pages > 0;
    w->st.frames += (uint64_t)n;
    w->st.status[st]++;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    w->st.ns += (uint64_t)((t1.tv_sec - t0.tv_sec) * 1000000000ll + (t1.tv_nsec - t0.tv_nsec));
    return n;
}

static bool fp_kept(const sc_walker *w, uint64_t pc)
{
    return sc_ch_contains(w->ch, pc) || (pc >= w->jvm_lo && pc < w->jvm_hi);
}

/* Can chain[i..m) be matched to fr[j..n)? Frames match by pc; after a frame whose rbp is not
 * its own base, the kernel may have skipped one. *budget bounds the backtracking. */
static int fp_match(const sc_walk_frame *fr, int n, const uint64_t *chain, int m, int i, int j,
                    int *budget)
{
    for (; i < m; i++, j++) {
        if (j >= n)
            return 0; /* the walk ended first (copy end): agree so far */
        if (--*budget < 0)
            return -1;
        bool here = chain[i] == fr[j].pc || (fr[j].flags & SC_WF_DEOPT);
        bool skip = i > 0 && j + 1 < n && fr[j - 1].fp + 16 != fr[j].sp &&
                    (chain[i] == fr[j + 1].pc || (fr[j + 1].flags & SC_WF_DEOPT));
        if (here && skip) { /* equal return addresses (the interpreter's): try both */
            int r = fp_match(fr, n, chain, m, i + 1, j + 2, budget);
            if (r >= 0)
                return r + 1;
        } else if (skip) {
            int r = fp_match(fr, n, chain, m, i + 1, j + 2, budget);
            return r < 0 ? -1 : r + 1;
        }
        if (!here)
            return -1;
    }
    return 0;
}

int sc_walker_fp_check(const sc_walker *w, const sc_walk_frame *fr, int n, const uint64_t *chain,
                       int n_chain)
{
    /* the part of the kernel's chain that frame pointers make right: Java code and libjvm, up to
     * the first frame elsewhere (libc keeps no frame pointer) */
    int m = 0;
    while (m < n_chain && fp_kept(w, chain[m]))
        m++;
    if (m < 2 || n == 0)
        return -1; /* the leaf alone is the sampled ip: nothing to compare */
    /* The kernel reads [rbp + 8] from each frame's rbp. A frame whose rbp is not its own frame
     * base (rbp + 16 != its caller's sp: a leaf before its push rbp, a stub that keeps no frame
     * pointer) hands the kernel an rbp from further up: the kernel skips its caller. */
    int budget = 4096;
    int skipped = fp_match(fr, n, chain, m, 0, 0, &budget);
    return skipped < 0 ? 0 : skipped ? 2 : 1;
}

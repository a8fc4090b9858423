/* store/dict.c: stacks in, the same texts out; frames and shared prefixes stored once; chunks
 * carry the dictionary to another reader with the same numbering, one after the other, and
 * rewritten whole; a failed put is taken back; damaged or out-of-order chunks are refused
 * without a byte read past their end (ASan watches), and leave the dictionary as it was. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/dict.h"
#include "tests/unit/tap.h"

static uint64_t rng = 88172645463325252ull;
static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static uint32_t add(dict *d, const char *text)
{
    uint32_t id = 0;
    if (dict_add_stack(d, text, strlen(text), &id) < 0)
        printf("# add %s: %s\n", text, strerror(errno));
    return id;
}

/* the text of stack id, in a static buffer ("" when none) */
static const char *text_of(const dict *d, uint32_t id)
{
    static char *buf;
    static size_t cap;
    size_t len;
    if (dict_stack_text(d, id, &buf, &cap, &len) != 1)
        return "";
    return buf;
}

/* apply chunk from an exact-size copy (ASan sees any overread) */
static int apply_exact(dict *d, const uint8_t *c, size_t len)
{
    uint8_t *x = malloc(len ? len : 1);
    memcpy(x, c, len);
    int r = dict_apply(d, len ? x : NULL, len);
    free(x);
    return r;
}

/* Deep Java-like stacks: a thread, a recursion of depth 3..40 over a few visitor frames, a leaf. */
static void deep_stack(char *buf, size_t cap, uint64_t r)
{
    static const char *const rec[] = {"com.sun.tools.javac.comp.Attr.visitBinary",
                                      "com.sun.tools.javac.tree.JCTree$JCBinary.accept",
                                      "com.sun.tools.javac.comp.Attr.attribTree",
                                      "com.sun.tools.javac.comp.Attr.attribExpr",
                                      "com.sun.tools.javac.comp.Attr.visitApply"};
    size_t o = (size_t)snprintf(buf, cap, "compiler-0;java.lang.Thread.run;CompilerLoop.loop");
    int depth = 3 + (int)(r % 38);
    for (int i = 0; i < depth && o < cap - 100; i++)
        o += (size_t)snprintf(buf + o, cap - o, ";%s", rec[(r >> (i % 60)) % 5]);
    snprintf(buf + o, cap - o, ";leaf%llu", (unsigned long long)((r >> 20) % 50));
}

static void test_basics(void)
{
    dict d;
    dict_init(&d);
    uint32_t a = add(&d, "main;work;a"), b = add(&d, "main;work;b"), c = add(&d, "main;work");
    ok(a == 1 && b == 2 && c == 3, "stacks numbered in order of first sight");
    is_int(add(&d, "main;work;a"), 1, "a known stack keeps its id");
    ok(d.nframes == 4 && d.nnodes == 4, "frames and prefixes stored once (%u frames, %u nodes)",
       d.nframes, d.nnodes);
    is_str(text_of(&d, a), "main;work;a", "text back");
    is_str(text_of(&d, c), "main;work", "a stack that is another's prefix");
    uint32_t odd = add(&d, "a;;b;");
    is_str(text_of(&d, odd), "a;;b;", "empty frames come back as they were");
    const char bytes[] = "x\x01<svg>;\xff\xfe;'\"\\";
    is_str(text_of(&d, add(&d, bytes)), bytes, "any bytes but ';' make a frame");
    uint32_t id = 7;
    errno = 0;
    ok(dict_add_stack(&d, "", 0, &id) < 0 && errno == EINVAL, "an empty stack is refused");
    is_str(text_of(&d, 999), "", "no such stack: no text");
    dict_free(&d);
}

static void test_chunks(void)
{
    dict w, r;
    dict_init(&w);
    dict_init(&r);
    char buf[8192];
    uint32_t ids[3000];
    size_t total = 0, text_bytes = 0;
    int same = 1;
    /* ten puts, each a chunk the reader applies in turn */
    for (int put = 0; put < 10; put++) {
        for (int i = 0; i < 300; i++) {
            deep_stack(buf, sizeof buf, next_rand());
            ids[put * 300 + i] = add(&w, buf);
            text_bytes += strlen(buf);
        }
        uint8_t *c;
        size_t len;
        ok(dict_encode(&w, &c, &len) == 0, "put %d: a chunk of %zu bytes", put, len);
        total += len;
        dict_mark(&w);
        same &= apply_exact(&r, c, len) == 0;
        free(c);
    }
    ok(same, "the reader applies every chunk in turn");
    ok(r.nstacks == w.nstacks && r.nnodes == w.nnodes && r.nframes == w.nframes,
       "same counts: %u stacks, %u nodes, %u frames", r.nstacks, r.nnodes, r.nframes);
    for (int i = 0; same && i < 3000; i++)
        same = !strcmp(text_of(&w, ids[i]), text_of(&r, ids[i])) && ids[i] >= 1;
    ok(same, "and the same texts under the same ids");
    ok(total * 10 < text_bytes, "chunks are far smaller than the texts (%zu vs %zu bytes)", total,
       text_bytes);
    ok(!dict_dirty(&w), "nothing new after the mark");

    /* the reader goes on adding (a writer that read what others stored) */
    uint32_t n0 = r.nstacks;
    deep_stack(buf, sizeof buf, 12345);
    uint32_t mine = add(&r, buf);
    ok(mine <= n0 + 1, "a writer that applied chunks finds or adds stacks after them");

    dict_free(&w);
    dict_free(&r);
}

/* A reader that names one run after another decodes the next run's dictionary into the last
 * one's arrays (dict_empty): the same stacks as a new dictionary, in the memory it already had */
static void test_empty(void)
{
    dict w[2], r;
    uint8_t *c[2];
    size_t len[2];
    uint32_t ids[2][400];
    char buf[8192];
    dict_init(&r);
    for (int k = 0; k < 2; k++) {
        dict_init(&w[k]);
        for (int i = 0; i < 400; i++) {
            deep_stack(buf, sizeof buf, next_rand());
            ids[k][i] = add(&w[k], buf);
        }
        if (dict_encode(&w[k], &c[k], &len[k]) < 0)
            abort();
    }
    add(&r, "a;writer;first"); /* its lookups built: dropped by dict_empty */
    dict_empty(&r);
    ok(apply_exact(&r, c[0], len[0]) == 0, "a chunk applied to an emptied writer");
    const uint32_t *parent = r.parent;
    const char *names = r.names;
    size_t names_cap = r.names_cap;
    dict_empty(&r);
    ok(r.nstacks == 0 && r.nnodes == 0 && r.nframes == 0 && r.names_len == 0 &&
           r.parent == parent && r.names == names && r.names_cap == names_cap,
       "emptied: no stacks, the arrays kept");
    ok(apply_exact(&r, c[1], len[1]) == 0, "the next run's chunk applied in them");
    bool same = r.nstacks == w[1].nstacks && r.nnodes == w[1].nnodes;
    for (int i = 0; same && i < 400; i++) { /* text_of's buffer is one: the first text copied */
        snprintf(buf, sizeof buf, "%s", text_of(&w[1], ids[1][i]));
        same = !strcmp(buf, text_of(&r, ids[1][i]));
    }
    ok(same, "the next run's stacks, none of the first's (%u stacks)", r.nstacks);
    strcpy(buf, text_of(&w[1], ids[1][7]));
    ok(add(&r, buf) == ids[1][7], "found again by a writer's add (its lookups rebuilt)");
    for (int k = 0; k < 2; k++) {
        free(c[k]);
        dict_free(&w[k]);
    }
    dict_free(&r);
}

typedef struct sink {
    dict *d;
    int chunks, refused;
} sink;

static int to_reader(void *ctx, const uint8_t *c, size_t len)
{
    sink *s = ctx;
    s->chunks++;
    if (apply_exact(s->d, c, len) != 0)
        s->refused++;
    return 0;
}

static void test_encode_all(void)
{
    dict w, x;
    dict_init(&w);
    dict_init(&x);
    char buf[8192];
    for (int i = 0; i < 2000; i++) {
        deep_stack(buf, sizeof buf, next_rand());
        add(&w, buf);
    }
    add(&w, "compiler-0"); /* a stack that is a prefix of all the others, added late */
    sink s = {&x, 0, 0};
    is_int(dict_encode_all(&w, 4096, to_reader, &s), 0, "the whole dictionary rewritten");
    ok(s.chunks > 3 && s.refused == 0, "in %d chunks, each applied in turn", s.chunks);
    int same = x.nstacks == w.nstacks;
    for (uint32_t i = 1; same && i <= w.nstacks; i++)
        same = !strcmp(text_of(&w, i), text_of(&x, i));
    ok(same, "every stack the same under the same id");
    dict_free(&x);
    dict_init(&x);
    s = (sink){&x, 0, 0};
    dict_encode_all(&w, (size_t)1 << 30, to_reader, &s);
    ok(s.chunks == 1 && s.refused == 0 && x.nstacks == w.nstacks, "or in one chunk");
    dict_free(&x);
    dict_free(&w);
}

static void test_rollback(void)
{
    dict d;
    dict_init(&d);
    add(&d, "a;b;c");
    dict_mark(&d);
    add(&d, "a;b;d");
    add(&d, "x;y");
    ok(dict_dirty(&d), "new stacks since the mark");
    dict_rollback(&d);
    ok(!dict_dirty(&d) && d.nstacks == 1 && d.nnodes == 3 && d.nframes == 3,
       "taken back: %u stacks, %u nodes, %u frames", d.nstacks, d.nnodes, d.nframes);
    is_int(add(&d, "x;y"), 2, "the next add numbers from the mark again");
    is_str(text_of(&d, 2), "x;y", "with the right text");
    is_int(add(&d, "a;b;c"), 1, "and finds what was there before");
    dict_free(&d);
}

static void test_damage(void)
{
    dict w, r;
    dict_init(&w);
    dict_init(&r);
    char buf[8192];
    for (int i = 0; i < 200; i++) {
        deep_stack(buf, sizeof buf, next_rand());
        add(&w, buf);
    }
    uint8_t *c;
    size_t len;
    dict_encode(&w, &c, &len);
    /* every truncation, and random byte flips: refused or applied, never read past */
    int refusals = 0;
    for (size_t n = 0; n < len; n++) {
        if (apply_exact(&r, c, n) == 0) {
            dict_free(&r);
            dict_init(&r);
        } else {
            refusals++;
        }
    }
    is_int(refusals, (long long)len, "every truncated chunk is refused (%zu)", len);
    ok(r.nstacks == 0 && r.nnodes == 0 && r.nframes == 0, "and leaves the reader empty");
    int flips_ok = 1;
    for (int k = 0; k < 2000; k++) {
        uint8_t *x = malloc(len);
        memcpy(x, c, len);
        x[next_rand() % len] ^= (uint8_t)(1 + next_rand() % 255);
        int rc = apply_exact(&r, x, len);
        if (rc == 0) { /* a flip the format cannot see (a name's byte): still a whole dictionary */
            for (uint32_t i = 1; i <= r.nstacks; i++)
                text_of(&r, i);
            dict_free(&r);
            dict_init(&r);
        } else {
            flips_ok &= r.nstacks == 0 && r.nnodes == 0 && r.nframes == 0;
        }
        free(x);
    }
    ok(flips_ok, "random damage: refused whole, or read whole");
    is_int(apply_exact(&r, c, len), 0, "the chunk itself applies");
    ok(apply_exact(&r, c, len) == -1 && r.nstacks == w.nstacks,
       "twice: refused (not the next one)");
    /* a stack with no text (a gap): a plain chunk of one stack whose leaf is 0 */
    dict g;
    dict_init(&g);
    const uint8_t gap[] = {0, 1, 0, 1, 0, 1, 1, 0};
    is_int(apply_exact(&g, gap, sizeof gap), 0, "a chunk with a gap in the stack ids");
    ok(g.nstacks == 1 && !*text_of(&g, 1), "that stack has no text");
    /* a parent after its child, a frame not there yet: refused */
    const uint8_t bad_parent[] = {0, 1, 1, 1, 1, 1, 0, 1, 'a', 2, 1};
    const uint8_t bad_frame[] = {0, 1, 1, 1, 1, 1, 0, 1, 'a', 1, 2};
    dict_free(&g);
    dict_init(&g);
    ok(apply_exact(&g, bad_parent, sizeof bad_parent) == -1,
       "a node whose parent is not before it");
    ok(apply_exact(&g, bad_frame, sizeof bad_frame) == -1, "a node naming a frame not there");
    const uint8_t fine[] = {0, 1, 1, 1, 1, 1, 0, 1, 'a', 1, 1};
    is_int(apply_exact(&g, fine, sizeof fine), 0, "the same chunk, right");
    /* a huge count in the header cannot make it allocate or inflate beyond the bound */
    const uint8_t huge[] = {1, 1, 0xff, 0xff, 0xff, 0x07, 1,    0,
                            1, 0, 0xff, 0xff, 0xff, 0xff, 0x0f, 0};
    dict e;
    dict_init(&e);
    ok(apply_exact(&e, huge, sizeof huge) == -1, "a header promising 2^27 frames is refused");
    dict_free(&e);
    dict_free(&g);
    free(c);
    dict_free(&w);
    dict_free(&r);
}

int main(void)
{
    test_basics();
    test_chunks();
    test_empty();
    test_encode_all();
    test_rollback();
    test_damage();
    return tap_done();
}

/* The store's dictionary of stacks (store/dict.h): frames once, stacks as paths of a tree of
 * (parent, frame) nodes, and the chunks that carry it into a store and back.
 *
 * A chunk: a format byte (0 plain, 1 deflated), then six varints: the first frame id and the
 * number of frames it adds, the same for nodes and for stacks; then the body (deflated: varint of
 * its length, then the raw deflate stream): each new frame's name as varint(length) and bytes;
 * each new node's id minus its parent's id; each new node's frame id; each new stack's last node
 * as the zigzag'd difference from the previous stack's (the first from the chunk's first node
 * minus 1). Apart, each stream is numbers of one kind: a deep recursion repeats the same
 * (gap, frame) runs, which deflate stores in a few bits (measured on javac's stacks: 0.34 byte a
 * node, docs/STORE.md). */
#include "store/dict.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "flame/hash.h"
#include "store/varint.h"

enum { CHUNK_PLAIN = 0, CHUNK_DEFLATE = 1 };
/* The largest body a chunk may inflate to (its counts bound it more tightly). */
#define CHUNK_RAW_MAX ((uint64_t)1 << 30)
/* A frame name is part of a stored stack: never longer than the store's longest stack. */
#define FRAME_MAX (256u << 10)

void dict_init(dict *d)
{
    *d = (dict){.seed = hash_random_seed()};
}

void dict_free(dict *d)
{
    free(d->names);
    free(d->name_off);
    free(d->name_len);
    free(d->parent);
    free(d->frame);
    free(d->leaf);
    free(d->fmap);
    free(d->nmap);
    free(d->smap);
    dict_init(d);
}

void dict_empty(dict *d)
{
    /* a writer's lookups index what is gone: dropped (a reader has none) */
    free(d->fmap);
    free(d->nmap);
    free(d->smap);
    d->fmap = d->nmap = d->smap = NULL;
    d->fmask = d->nmask = d->smask = 0;
    d->names_len = 0;
    d->nframes = d->nnodes = d->nstacks = 0;
    d->mark_frames = d->mark_nodes = d->mark_stacks = 0;
}

void dict_reset(dict *d)
{
    dict_free(d);
}

/* ---- growth ---- */

/* The arrays a and (when not NULL) b, of *cap elements, grown together to hold need. */
static int grow(void **a, size_t sa, void **b, size_t sb, uint32_t *cap, uint32_t need)
{
    if (need <= *cap)
        return 0;
    uint32_t nc = *cap ? *cap : 256;
    while (nc < need)
        nc = nc > UINT32_MAX / 2 ? UINT32_MAX : nc * 2;
    void *na = realloc(*a, (size_t)nc * sa);
    if (!na)
        return -1;
    *a = na;
    if (b) {
        void *nb = realloc(*b, (size_t)nc * sb);
        if (!nb)
            return -1; /* a is larger than *cap says: harmless */
        *b = nb;
    }
    *cap = nc;
    return 0;
}

/* Room for `frames` more frames (with `bytes` more of names), nodes and stacks; index 0 of each
 * array is the unused/root slot, so n items take n + 1. */
static int reserve(dict *d, uint32_t frames, size_t bytes, uint32_t nodes, uint32_t stacks)
{
    if (frames > DICT_MAX_FRAMES - d->nframes || nodes > DICT_MAX_NODES - d->nnodes ||
        stacks > DICT_MAX_STACKS - d->nstacks || bytes > DICT_MAX_NAMES - d->names_len) {
        errno = E2BIG;
        return -1;
    }
    if (grow((void **)&d->name_off, sizeof *d->name_off, (void **)&d->name_len, sizeof *d->name_len,
             &d->frames_cap, d->nframes + frames + 1) < 0 ||
        grow((void **)&d->parent, sizeof *d->parent, (void **)&d->frame, sizeof *d->frame,
             &d->nodes_cap, d->nnodes + nodes + 1) < 0 ||
        grow((void **)&d->leaf, sizeof *d->leaf, NULL, 0, &d->stacks_cap, d->nstacks + stacks + 1) <
            0)
        goto oom;
    if (d->names_len + bytes > d->names_cap) {
        size_t nc = d->names_cap ? d->names_cap : 4096;
        while (nc < d->names_len + bytes)
            nc *= 2;
        char *nn = realloc(d->names, nc);
        if (!nn)
            goto oom;
        d->names = nn;
        d->names_cap = nc;
    }
    d->parent[0] = d->frame[0] = d->leaf[0] = 0; /* the root; no stack 0 */
    d->name_off[0] = d->name_len[0] = 0;
    return 0;
oom:
    errno = ENOMEM;
    return -1;
}

/* ---- lookups (a writer's) ---- */

static uint64_t node_hash(const dict *d, uint32_t parent, uint32_t frame)
{
    return hash_mix64(((uint64_t)parent << 32 | frame) ^ d->seed);
}

static uint64_t leaf_hash(const dict *d, uint32_t leaf)
{
    return hash_mix64(((uint64_t)leaf | (uint64_t)1 << 63) ^ d->seed);
}

static uint64_t name_hash(const dict *d, const char *s, size_t n)
{
    return hash_bytes(s, n, d->seed);
}

static bool name_is(const dict *d, uint32_t id, const char *s, size_t n)
{
    return d->name_len[id] == n && (n == 0 || !memcmp(d->names + d->name_off[id], s, n));
}

/* The slot of key in t (the value there is the match, 0 = not there). */
static size_t find_frame(const dict *d, const char *s, size_t n, uint64_t h)
{
    size_t j = h & d->fmask;
    while (d->fmap[j] && !name_is(d, d->fmap[j], s, n))
        j = (j + 1) & d->fmask;
    return j;
}

static size_t find_node(const dict *d, uint32_t parent, uint32_t frame)
{
    size_t j = node_hash(d, parent, frame) & d->nmask;
    while (d->nmap[j] && !(d->parent[d->nmap[j]] == parent && d->frame[d->nmap[j]] == frame))
        j = (j + 1) & d->nmask;
    return j;
}

static size_t find_stack(const dict *d, uint32_t leaf)
{
    size_t j = leaf_hash(d, leaf) & d->smask;
    while (d->smap[j] && d->leaf[d->smap[j]] != leaf)
        j = (j + 1) & d->smask;
    return j;
}

/* Index item id of a kind (first one of equal keys wins: a duplicate in a store is harmless). */
static void index_frame(dict *d, uint32_t id)
{
    const char *s = d->names + d->name_off[id];
    size_t j = find_frame(d, s, d->name_len[id], name_hash(d, s, d->name_len[id]));
    if (!d->fmap[j])
        d->fmap[j] = id;
}

static void index_node(dict *d, uint32_t id)
{
    size_t j = find_node(d, d->parent[id], d->frame[id]);
    if (!d->nmap[j])
        d->nmap[j] = id;
}

static void index_stack(dict *d, uint32_t id)
{
    if (!d->leaf[id]) /* a gap: nothing to find it by */
        return;
    size_t j = find_stack(d, d->leaf[id]);
    if (!d->smap[j])
        d->smap[j] = id;
}

/* A table for `want` entries (at most half full), filled with items 1..have. 0 or -1. */
static int rebuild(uint32_t **t, size_t *mask, size_t want, uint32_t have, dict *d,
                   void (*add)(dict *, uint32_t))
{
    size_t cap = 1024;
    while (cap < want * 2 + 2)
        cap *= 2;
    uint32_t *nt = calloc(cap, sizeof *nt);
    if (!nt)
        return -1;
    free(*t);
    *t = nt;
    *mask = cap - 1;
    for (uint32_t i = 1; i <= have; i++)
        add(d, i);
    return 0;
}

static void maps_drop(dict *d)
{
    free(d->fmap);
    free(d->nmap);
    free(d->smap);
    d->fmap = d->nmap = d->smap = NULL;
}

static int maps_build(dict *d)
{
    if (rebuild(&d->fmap, &d->fmask, d->nframes, d->nframes, d, index_frame) < 0 ||
        rebuild(&d->nmap, &d->nmask, d->nnodes, d->nnodes, d, index_node) < 0 ||
        rebuild(&d->smap, &d->smask, d->nstacks, d->nstacks, d, index_stack) < 0) {
        maps_drop(d);
        errno = ENOMEM;
        return -1;
    }
    return 0;
}

/* Room in the tables for `more` more of each kind (they double when half full). */
static int maps_room(dict *d, uint32_t frames, uint32_t nodes, uint32_t stacks)
{
    size_t f = (size_t)d->nframes + frames, n = (size_t)d->nnodes + nodes,
           s = (size_t)d->nstacks + stacks;
    if ((f * 2 > d->fmask && rebuild(&d->fmap, &d->fmask, f, d->nframes, d, index_frame) < 0) ||
        (n * 2 > d->nmask && rebuild(&d->nmap, &d->nmask, n, d->nnodes, d, index_node) < 0) ||
        (s * 2 > d->smask && rebuild(&d->smap, &d->smask, s, d->nstacks, d, index_stack) < 0)) {
        maps_drop(d);
        errno = ENOMEM;
        return -1;
    }
    return 0;
}

static int frame_id(dict *d, const char *s, size_t n, uint32_t *id)
{
    if (n > FRAME_MAX) {
        errno = E2BIG;
        return -1;
    }
    size_t j = find_frame(d, s, n, name_hash(d, s, n));
    if (d->fmap[j]) {
        *id = d->fmap[j];
        return 0;
    }
    if (maps_room(d, 1, 0, 0) < 0 || reserve(d, 1, n, 0, 0) < 0)
        return -1;
    j = find_frame(d, s, n, name_hash(d, s, n)); /* the table may have grown */
    uint32_t f = ++d->nframes;
    d->name_off[f] = d->names_len;
    d->name_len[f] = (uint32_t)n;
    if (n)
        memcpy(d->names + d->names_len, s, n);
    d->names_len += n;
    d->fmap[j] = f;
    *id = f;
    return 0;
}

static int node_id(dict *d, uint32_t parent, uint32_t frame, uint32_t *id)
{
    size_t j = find_node(d, parent, frame);
    if (d->nmap[j]) {
        *id = d->nmap[j];
        return 0;
    }
    if (maps_room(d, 0, 1, 0) < 0 || reserve(d, 0, 0, 1, 0) < 0)
        return -1;
    j = find_node(d, parent, frame);
    uint32_t k = ++d->nnodes;
    d->parent[k] = parent;
    d->frame[k] = frame;
    d->nmap[j] = k;
    *id = k;
    return 0;
}

int dict_add_stack(dict *d, const char *text, size_t len, uint32_t *id)
{
    if (!len) {
        errno = EINVAL;
        return -1;
    }
    if (reserve(d, 0, 0, 0, 0) < 0 || (!d->fmap && maps_build(d) < 0))
        return -1;
    uint32_t node = 0;
    for (size_t i = 0; i <= len;) {
        const char *semi = memchr(text + i, ';', len - i);
        size_t n = semi ? (size_t)(semi - (text + i)) : len - i;
        uint32_t f;
        if (frame_id(d, text + i, n, &f) < 0 || node_id(d, node, f, &node) < 0)
            return -1;
        i += n + 1;
        if (!semi)
            break;
    }
    size_t j = find_stack(d, node);
    if (d->smap[j]) {
        *id = d->smap[j];
        return 0;
    }
    if (maps_room(d, 0, 0, 1) < 0 || reserve(d, 0, 0, 0, 1) < 0)
        return -1;
    j = find_stack(d, node);
    uint32_t s = ++d->nstacks;
    d->leaf[s] = node;
    d->smap[j] = s;
    *id = s;
    return 0;
}

int dict_add_gap(dict *d, uint32_t *id)
{
    if (reserve(d, 0, 0, 0, 1) < 0)
        return -1;
    d->leaf[++d->nstacks] = 0;
    *id = d->nstacks;
    return 0;
}

int dict_stack_text(const dict *d, uint32_t id, char **buf, size_t *cap, size_t *len)
{
    if (id == 0 || id > d->nstacks || d->leaf[id] == 0)
        return 0;
    size_t n = 0;
    for (uint32_t k = d->leaf[id]; k; k = d->parent[k])
        n += d->name_len[d->frame[k]] + 1;
    n--; /* no ';' before the first frame */
    if (n + 1 > *cap) {
        char *nb = realloc(*buf, n + 1);
        if (!nb)
            return -1;
        *buf = nb;
        *cap = n + 1;
    }
    size_t o = n;
    for (uint32_t k = d->leaf[id]; k; k = d->parent[k]) {
        uint32_t f = d->frame[k], fl = d->name_len[f];
        o -= fl;
        if (fl)
            memcpy(*buf + o, d->names + d->name_off[f], fl);
        if (o)
            (*buf)[--o] = ';';
    }
    (*buf)[n] = 0;
    *len = n;
    return 1;
}

/* ---- marks ---- */

void dict_mark(dict *d)
{
    d->mark_frames = d->nframes;
    d->mark_nodes = d->nnodes;
    d->mark_stacks = d->nstacks;
}

bool dict_dirty(const dict *d)
{
    return d->nframes != d->mark_frames || d->nnodes != d->mark_nodes ||
           d->nstacks != d->mark_stacks;
}

/* Back to counts (frames, nodes, stacks); the lookups are rebuilt (or dropped when that fails:
 * the next add builds them). */
static void truncate_to(dict *d, uint32_t frames, uint32_t nodes, uint32_t stacks)
{
    if (frames == d->nframes && nodes == d->nnodes && stacks == d->nstacks)
        return;
    d->names_len = frames ? d->name_off[frames] + d->name_len[frames] : 0;
    d->nframes = frames;
    d->nnodes = nodes;
    d->nstacks = stacks;
    if (d->fmap)
        maps_build(d); /* when that fails, the next add builds them */
}

void dict_rollback(dict *d)
{
    truncate_to(d, d->mark_frames, d->mark_nodes, d->mark_stacks);
}

/* ---- chunks ---- */

static uint64_t zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static int64_t unzigzag(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* The raw body of frames (f0, f1], nodes (n0, n1], stacks (s0, s1]: the most bytes it takes. */
static size_t body_bound(const dict *d, uint32_t f0, uint32_t f1, uint32_t n0, uint32_t n1,
                         uint32_t s0, uint32_t s1)
{
    size_t names = f1 > f0 ? d->name_off[f1] + d->name_len[f1] - d->name_off[f0 + 1] : 0;
    return names + (size_t)(f1 - f0) * 5 + (size_t)(n1 - n0) * 10 + (size_t)(s1 - s0) * 10;
}

/* Raw deflate of in into out (cap bytes): the length, or 0 when it does not fit or fails. */
static size_t deflate_into(const uint8_t *in, size_t len, uint8_t *out, size_t cap)
{
    z_stream z = {0};
    if (deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, -15, 9, Z_DEFAULT_STRATEGY) != Z_OK)
        return 0;
    z.next_in = (Bytef *)in;
    z.avail_in = (uInt)len;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    int rc = deflate(&z, Z_FINISH);
    size_t n = rc == Z_STREAM_END ? cap - z.avail_out : 0;
    deflateEnd(&z);
    return n;
}

static int encode_range(const dict *d, uint32_t f0, uint32_t f1, uint32_t n0, uint32_t n1,
                        uint32_t s0, uint32_t s1, uint8_t **out, size_t *len)
{
    size_t bound = body_bound(d, f0, f1, n0, n1, s0, s1);
    uint8_t *body = malloc(bound + 1), *o = body;
    uint8_t *blob = malloc(1 + 7 * 10 + bound + 1);
    if (!body || !blob) {
        free(body);
        free(blob);
        errno = ENOMEM;
        return -1;
    }
    for (uint32_t f = f0 + 1; f <= f1; f++) {
        o = varint_put(o, d->name_len[f]);
        if (d->name_len[f])
            memcpy(o, d->names + d->name_off[f], d->name_len[f]);
        o += d->name_len[f];
    }
    for (uint32_t k = n0 + 1; k <= n1; k++)
        o = varint_put(o, k - d->parent[k]);
    for (uint32_t k = n0 + 1; k <= n1; k++)
        o = varint_put(o, d->frame[k]);
    int64_t prev = (int64_t)n0;
    for (uint32_t s = s0 + 1; s <= s1; s++) {
        o = varint_put(o, zigzag((int64_t)d->leaf[s] - prev));
        prev = d->leaf[s];
    }
    size_t blen = (size_t)(o - body);
    uint8_t *h = blob + 1;
    uint64_t head[] = {f0 + 1, f1 - f0, n0 + 1, n1 - n0, s0 + 1, s1 - s0};
    for (int i = 0; i < 6; i++)
        h = varint_put(h, head[i]);
    size_t hl = (size_t)(h - blob);
    /* deflated: the body's length, then the stream; kept only when smaller */
    uint8_t *hd = varint_put(h, blen);
    size_t z = blen >= 32 ? deflate_into(body, blen, hd, blen - (size_t)(hd - h)) : 0;
    if (z) {
        blob[0] = CHUNK_DEFLATE;
        *len = (size_t)(hd - blob) + z;
    } else {
        blob[0] = CHUNK_PLAIN;
        memcpy(h, body, blen);
        *len = hl + blen;
    }
    free(body);
    *out = blob;
    return 0;
}

int dict_encode(const dict *d, uint8_t **out, size_t *len)
{
    return encode_range(d, d->mark_frames, d->nframes, d->mark_nodes, d->nnodes, d->mark_stacks,
                        d->nstacks, out, len);
}

int dict_encode_all(const dict *d, size_t max_raw,
                    int (*fn)(void *ctx, const uint8_t *chunk, size_t len), void *ctx)
{
    uint32_t f0 = 0, n0 = 0, s0 = 0;
    while (f0 < d->nframes || n0 < d->nnodes || s0 < d->nstacks) {
        /* nodes up to a size, the frames they name, the stacks that end in them: a chunk
         * names only what it or an earlier one holds */
        uint32_t n1 = n0, f1 = f0, s1 = s0;
        size_t raw = 0;
        while (n1 < d->nnodes && raw < max_raw) {
            n1++;
            if (d->frame[n1] > f1) {
                for (uint32_t f = f1 + 1; f <= d->frame[n1]; f++)
                    raw += d->name_len[f] + 1;
                f1 = d->frame[n1];
            }
            raw += 3;
            while (s1 < d->nstacks && d->leaf[s1 + 1] <= n1)
                s1++, raw += 2;
        }
        if (n1 == d->nnodes) { /* the last: whatever is left */
            f1 = d->nframes;
            s1 = d->nstacks;
        }
        uint8_t *c;
        size_t len;
        if (encode_range(d, f0, f1, n0, n1, s0, s1, &c, &len) < 0)
            return -1;
        int rc = fn(ctx, c, len);
        free(c);
        if (rc)
            return rc;
        f0 = f1, n0 = n1, s0 = s1;
    }
    return 0;
}

int dict_chunk_span(const uint8_t *chunk, size_t len, dict_span *out)
{
    const uint8_t *p = chunk, *end = chunk + len;
    uint64_t v[6];
    if (!chunk || len < 7 || *p++ > CHUNK_DEFLATE)
        return -1;
    for (int i = 0; i < 6; i++)
        if (varint_get(&p, end, &v[i]) < 0 || v[i] > UINT32_MAX)
            return -1;
    *out = (dict_span){(uint32_t)v[0], (uint32_t)v[1], (uint32_t)v[2],
                       (uint32_t)v[3], (uint32_t)v[4], (uint32_t)v[5]};
    return 0;
}

/* Inflate exactly want bytes from in[0..len) into a new buffer, all of the input used. */
static int inflate_body(const uint8_t *in, size_t len, size_t want, uint8_t **out)
{
    uint8_t *raw = malloc(want ? want : 1);
    if (!raw)
        return -2;
    z_stream z = {0};
    if (inflateInit2(&z, -15) != Z_OK) {
        free(raw);
        return -2;
    }
    z.next_in = (Bytef *)in;
    z.avail_in = (uInt)len;
    z.next_out = raw;
    z.avail_out = (uInt)want;
    int rc = inflate(&z, Z_FINISH);
    bool whole = rc == Z_STREAM_END && z.avail_out == 0 && z.avail_in == 0;
    inflateEnd(&z);
    if (!whole) {
        free(raw);
        return -1;
    }
    *out = raw;
    return 0;
}

/* The body's items into d (room reserved): 0, or -1 damaged (the caller truncates). */
static int apply_body(dict *d, const uint8_t *p, const uint8_t *end, const dict_span *s)
{
    uint64_t v;
    for (uint32_t i = 0; i < s->nframes; i++) {
        if (varint_get(&p, end, &v) < 0 || v > FRAME_MAX || v > (uint64_t)(end - p) ||
            v > DICT_MAX_NAMES - d->names_len)
            return -1;
        uint32_t f = ++d->nframes;
        d->name_off[f] = d->names_len;
        d->name_len[f] = (uint32_t)v;
        if (v)
            memcpy(d->names + d->names_len, p, v);
        d->names_len += v;
        p += v;
    }
    uint32_t first = d->nnodes + 1;
    for (uint32_t i = 0; i < s->nnodes; i++) {
        uint32_t k = first + i;
        if (varint_get(&p, end, &v) < 0 || v == 0 || v > k)
            return -1;
        d->parent[k] = k - (uint32_t)v;
    }
    for (uint32_t i = 0; i < s->nnodes; i++) {
        if (varint_get(&p, end, &v) < 0 || v == 0 || v > d->nframes)
            return -1;
        d->frame[first + i] = (uint32_t)v;
    }
    d->nnodes += s->nnodes;
    int64_t prev = (int64_t)first - 1;
    for (uint32_t i = 0; i < s->nstacks; i++) {
        if (varint_get(&p, end, &v) < 0)
            return -1;
        int64_t leaf = prev + unzigzag(v);
        if (leaf < 0 || leaf > (int64_t)d->nnodes)
            return -1;
        d->leaf[++d->nstacks] = (uint32_t)leaf;
        prev = leaf;
    }
    return p == end ? 0 : -1;
}

int dict_apply(dict *d, const uint8_t *chunk, size_t len)
{
    dict_span s;
    const uint8_t *p = chunk, *end = chunk + len;
    if (dict_chunk_span(chunk, len, &s) < 0 || s.first_frame != d->nframes + 1 ||
        s.first_node != d->nnodes + 1 || s.first_stack != d->nstacks + 1)
        return -1;
    bool deflated = *p++ == CHUNK_DEFLATE;
    uint64_t v;
    for (int i = 0; i < 6; i++)
        varint_get(&p, end, &v); /* read above */
    /* what the counts allow the body to be: no inflating (or allocating) beyond that */
    uint64_t lo = (uint64_t)s.nframes + 2 * (uint64_t)s.nnodes + s.nstacks;
    uint64_t hi =
        (uint64_t)s.nframes * (5 + FRAME_MAX) + 10 * (uint64_t)s.nnodes + 10 * (uint64_t)s.nstacks;
    uint8_t *raw = NULL;
    if (deflated) {
        uint64_t blen;
        if (varint_get(&p, end, &blen) < 0 || blen < lo || blen > hi || blen > CHUNK_RAW_MAX)
            return -1;
        int rc = inflate_body(p, (size_t)(end - p), (size_t)blen, &raw);
        if (rc < 0)
            return rc;
        p = raw;
        end = raw + blen;
    } else if ((uint64_t)(end - p) < lo || (uint64_t)(end - p) > hi) {
        return -1;
    }
    uint32_t f = d->nframes, n = d->nnodes, st = d->nstacks;
    int rc = reserve(d, s.nframes, (size_t)(end - p), s.nnodes, s.nstacks) < 0 ? -2 : 0;
    if (rc == 0 && apply_body(d, p, end, &s) < 0)
        rc = -1;
    free(raw);
    if (rc < 0) { /* nothing was indexed yet */
        d->names_len = f ? d->name_off[f] + d->name_len[f] : 0;
        d->nframes = f, d->nnodes = n, d->nstacks = st;
        return rc;
    }
    /* a writer's: what others stored is found by its next adds (the tables are sized for the
     * new counts, then the new items indexed; a failure drops them: the next add rebuilds) */
    if (d->fmap) {
        uint32_t nf = d->nframes, nn = d->nnodes, ns = d->nstacks;
        d->nframes = f, d->nnodes = n, d->nstacks = st;
        if (maps_room(d, nf - f, nn - n, ns - st) == 0) {
            d->nframes = nf, d->nnodes = nn, d->nstacks = ns;
            for (uint32_t i = f + 1; i <= nf; i++)
                index_frame(d, i);
            for (uint32_t i = n + 1; i <= nn; i++)
                index_node(d, i);
            for (uint32_t i = st + 1; i <= ns; i++)
                index_stack(d, i);
        } else {
            d->nframes = nf, d->nnodes = nn, d->nstacks = ns;
        }
    }
    dict_mark(d);
    return 0;
}

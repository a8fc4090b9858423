/* The profile table: interned frame names and a hash table of distinct stacks (runs of name
 * ids) with their summed counts. Text goes in through profile_load.c, out through
 * profile_view.c; the folder, diff and merge add stacks here by ids. */
#include "flame/profile.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "flame/alloc.h"
#include "flame/profile_impl.h"

profile *profile_new(void)
{
    profile *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->seed = hash_random_seed();
    p->name_tab_mask = 1023;
    p->stack_tab_mask = 1023;
    p->name_tab = calloc(1024, sizeof *p->name_tab);
    p->stack_tab = calloc(1024, sizeof *p->stack_tab);
    if (!p->name_tab || !p->stack_tab) {
        profile_free(p);
        return NULL;
    }
    return p;
}

void profile_free(profile *p)
{
    if (!p)
        return;
    if (p->shares) { /* prof_counts_copy(): only the stacks are its own */
        free(p->stacks);
        free(p);
        return;
    }
    free(p->text);
    free(p->names);
    free(p->name_tab);
    free(p->ids);
    free(p->stacks);
    free(p->stack_tab);
    free(p->seq);
    free(p->scratch);
    free(p->prev);
    free(p->prev_ends);
    free(p);
}

profile *prof_counts_copy(const profile *p)
{
    profile *q = malloc(sizeof *q);
    if (!q)
        return NULL;
    *q = *p;
    q->stacks = malloc((p->nstacks ? p->nstacks : 1) * sizeof *q->stacks);
    if (!q->stacks) {
        free(q);
        return NULL;
    }
    memcpy(q->stacks, p->stacks, p->nstacks * sizeof *q->stacks);
    q->stacks_cap = p->nstacks;
    q->shares = true;
    /* what would be written when adding is not shared: adding is not allowed */
    q->keep_order = false;
    q->seq = NULL;
    q->nseq = q->seq_cap = 0;
    q->scratch = NULL;
    q->prev = NULL;
    q->prev_ends = NULL;
    q->scratch_cap = q->prev_cap = q->prev_ends_cap = q->prev_n = q->prev_len = 0;
    return q;
}

void profile_keep_order(profile *p, bool keep)
{
    p->keep_order = keep;
}

bool profile_is_diff(const profile *p)
{
    return p->columns == 2;
}

double profile_total(const profile *p)
{
    return p->total;
}

double profile_total_before(const profile *p)
{
    return p->total_before;
}

size_t profile_stacks(const profile *p)
{
    return p->nstacks;
}

/* ---- names ---------------------------------------------------------------------------------- */

static int name_rehash(profile *p, uint32_t newmask)
{
    uint32_t *t = alloc_zalloc(((size_t)newmask + 1) * sizeof *t);
    if (!t)
        return -1;
    for (uint32_t i = 0; i < p->nnames; i++)
        hash_slot_put(t, newmask, p->names[i].hash, i + 1);
    free(p->name_tab);
    p->name_tab = t;
    p->name_tab_mask = newmask;
    return 0;
}

uint32_t prof_name_find(const profile *p, const char *s, size_t n)
{
    uint32_t e = p->name_tab[prof_name_slot(p, s, n, hash_bytes(s, n, p->seed))];
    return e ? e - 1 : UINT32_MAX;
}

/* Out of line: nearly every lookup finds its name. */
__attribute__((noinline)) uint32_t prof_add_name(profile *p, const char *s, size_t n, uint64_t h,
                                                 size_t j)
{
    if (n > UINT32_MAX - 2 || p->nnames >= UINT32_MAX / 4)
        return UINT32_MAX;
    if (!GROW(p->text, p->text_cap, p->text_len + n + 1) ||
        !GROW(p->names, p->names_cap, (size_t)p->nnames + 1))
        return UINT32_MAX;
    if (n)
        memcpy(p->text + p->text_len, s, n);
    p->text[p->text_len + n] = '\0';
    uint32_t id = p->nnames++;
    p->names[id] = (prof_name){.off = p->text_len, .len = (uint32_t)n, .hash = h};
    p->text_len += n + 1;
    p->name_tab[j] = id + 1;
    /* keep the load factor under 1/2 so probes stay short */
    if ((size_t)p->nnames * 2 > p->name_tab_mask && name_rehash(p, p->name_tab_mask * 2 + 1) < 0)
        return UINT32_MAX;
    return id;
}

uint32_t prof_name_intern(profile *p, const char *s, size_t n)
{
    return prof_intern_hashed(p, s, n, hash_bytes(s, n, p->seed));
}

/* ---- stacks ---------------------------------------------------------------------------------- */

uint64_t prof_ids_hash(const profile *p, const uint32_t *ids, size_t n)
{
    return hash_bytes((const char *)ids, n * sizeof *ids, p->seed);
}

static int stack_rehash(profile *p)
{
    uint32_t newmask = p->stack_tab_mask * 2 + 1;
    uint64_t *t = alloc_zalloc(((size_t)newmask + 1) * sizeof *t);
    if (!t)
        return -1;
    for (uint32_t i = 0; i < p->nstacks; i++) {
        uint64_t h = p->stacks[i].hash;
        size_t j = h & newmask;
        while (t[j])
            j = (j + 1) & newmask;
        t[j] = (h >> 32 << 32) | (i + 1);
    }
    free(p->stack_tab);
    p->stack_tab = t;
    p->stack_tab_mask = newmask;
    return 0;
}

/* The slot of the stack ids[0..n) (hash h) in the stack table: its entry, or the empty slot
 * where it would go. The table keeps the high half of each hash next to the index, so probing
 * past other stacks touches no stack memory. */
static size_t stack_slot(const profile *p, const uint32_t *ids, size_t n, uint64_t h)
{
    uint64_t tag = h >> 32 << 32;
    size_t j = h & p->stack_tab_mask;
    for (uint64_t e; (e = p->stack_tab[j]); j = (j + 1) & p->stack_tab_mask) {
        if ((e >> 32 << 32) != tag)
            continue;
        const prof_stack *st = &p->stacks[(uint32_t)e - 1];
        if (st->hash == h && st->depth == n &&
            hash_same_bytes((const char *)(p->ids + st->off), (const char *)ids, n * sizeof *ids))
            break;
    }
    return j;
}

uint32_t prof_stack_find(const profile *p, const uint32_t *ids, size_t n, uint64_t hash)
{
    uint64_t e = p->stack_tab[stack_slot(p, ids, n, hash)];
    return e ? (uint32_t)e - 1 : UINT32_MAX;
}

void prof_stack_find_many(const profile *p, size_t count, const uint32_t *const *ids,
                          const uint32_t *n, const uint64_t *hash, uint32_t *out)
{
    /* group prefetching: each stage's loads are issued for the whole batch before the next
     * stage needs them, so the batch waits for memory about once per stage, not once per stack
     * and stage (table slot -> stack record -> its frame ids are three dependent misses) */
    uint32_t cand[PROF_FIND_BATCH];
    for (size_t i = 0; i < count; i++)
        __builtin_prefetch(&p->stack_tab[hash[i] & p->stack_tab_mask]);
    for (size_t i = 0; i < count; i++) {
        uint64_t e = n[i] ? p->stack_tab[hash[i] & p->stack_tab_mask] : 0;
        cand[i] = e && (e >> 32) == (hash[i] >> 32) ? (uint32_t)e - 1 : UINT32_MAX;
        if (cand[i] != UINT32_MAX)
            __builtin_prefetch(&p->stacks[cand[i]]);
    }
    for (size_t i = 0; i < count; i++)
        if (cand[i] != UINT32_MAX) {
            const uint32_t *f = p->ids + p->stacks[cand[i]].off;
            __builtin_prefetch(f);
            __builtin_prefetch(f + n[i] - 1);
        }
    for (size_t i = 0; i < count; i++)
        out[i] = n[i] ? prof_stack_find(p, ids[i], n[i], hash[i]) : UINT32_MAX;
}

int prof_stage_ids(profile *p, const uint32_t *ids, size_t n, double count, double before,
                   prof_staged *s)
{
    if (n > UINT32_MAX - 1 || !GROW(p->ids, p->ids_cap, p->ids_len + n))
        return -ENOMEM;
    uint32_t *tail = p->ids + p->ids_len;
    memcpy(tail, ids, n * sizeof *ids);
    *s = (prof_staged){.on = true,
                       .n = (uint32_t)n,
                       .h = prof_ids_hash(p, tail, n),
                       .count = count,
                       .before = before};
    __builtin_prefetch(&p->stack_tab[s->h & p->stack_tab_mask]);
    return 0;
}

/* Count the staged stack: add it to an equal stack, or make it a new one (its ids are in place
 * already). */
int prof_commit_ids(profile *p, prof_staged *s)
{
    if (!s->on)
        return 0;
    s->on = false;
    uint32_t n = s->n;
    uint64_t h = s->h;
    size_t j = stack_slot(p, p->ids + p->ids_len, n, h);
    uint32_t idx = p->stack_tab[j] ? (uint32_t)p->stack_tab[j] - 1 : UINT32_MAX;
    if (idx == UINT32_MAX) {
        if (p->nstacks >= UINT32_MAX / 4 || !GROW(p->stacks, p->stacks_cap, (size_t)p->nstacks + 1))
            return -ENOMEM;
        idx = p->nstacks++;
        p->stacks[idx] = (prof_stack){.off = p->ids_len, .depth = n, .hash = h};
        p->ids_len += n;
        p->stack_tab[j] = (h >> 32 << 32) | (idx + 1);
        if ((size_t)p->nstacks * 2 > p->stack_tab_mask && stack_rehash(p) < 0)
            return -ENOMEM;
    }
    s->idx = idx;
    p->stacks[idx].count += s->count;
    p->stacks[idx].before += s->before;
    p->total += s->count;
    p->total_before += s->before;
    if (p->keep_order) {
        if (!GROW(p->seq, p->seq_cap, p->nseq + 1))
            return -ENOMEM;
        p->seq[p->nseq++] = (prof_seq){.stack = idx, .count = s->count, .before = s->before};
    }
    return 0;
}

int prof_stack_add_deep(profile *p, const uint32_t *ids, size_t n, double count, double before)
{
    if (n == 0)
        return -EINVAL;
    prof_staged s;
    if (prof_stage_ids(p, ids, n, count, before, &s) < 0)
        return -ENOMEM;
    return prof_commit_ids(p, &s);
}

int prof_stack_add(profile *p, const uint32_t *ids, size_t n, double count, double before)
{
    if (n > PROFILE_MAX_DEPTH)
        return -EINVAL;
    return prof_stack_add_deep(p, ids, n, count, before);
}

/* ---- unused names ----------------------------------------------------------------------- */

int prof_drop_unused_names(profile *p)
{
    _cleanup_free_ uint32_t *map = malloc((p->nnames ? p->nnames : 1) * sizeof *map);
    if (!map)
        return -1;
    memset(map, 0xff, p->nnames * sizeof *map); /* UINT32_MAX: unused */
    for (size_t i = 0; i < p->ids_len; i++)
        map[p->ids[i]] = 0;
    uint32_t kept = 0;
    for (uint32_t id = 0; id < p->nnames; id++)
        if (map[id] == 0)
            map[id] = kept++;
    if (kept == p->nnames)
        return 0;
    /* the stack table is keyed by ids: a fresh one, built before anything is changed */
    uint64_t *stab = alloc_zalloc(((size_t)p->stack_tab_mask + 1) * sizeof *stab);
    if (!stab)
        return -1;
    /* names and their bytes move down in place: each kept name lands at or before where it was */
    size_t text = 0;
    for (uint32_t id = 0; id < p->nnames; id++) {
        if (map[id] == UINT32_MAX)
            continue;
        prof_name nm = p->names[id];
        memmove(p->text + text, p->text + nm.off, (size_t)nm.len + 1);
        nm.off = text;
        text += (size_t)nm.len + 1;
        p->names[map[id]] = nm;
    }
    p->text_len = text;
    p->nnames = kept;
    for (size_t i = 0; i < p->ids_len; i++)
        p->ids[i] = map[p->ids[i]];
    free(p->stack_tab);
    p->stack_tab = stab;
    for (uint32_t k = 0; k < p->nstacks; k++) {
        prof_stack *st = &p->stacks[k];
        st->hash = prof_ids_hash(p, p->ids + st->off, st->depth);
        size_t j = st->hash & p->stack_tab_mask;
        while (stab[j])
            j = (j + 1) & p->stack_tab_mask;
        stab[j] = (st->hash >> 32 << 32) | (k + 1);
    }
    p->prev_n = 0; /* scratch held ids of the old numbering */
    /* the name table is rebuilt in place: same size, fewer names, nothing to allocate */
    memset(p->name_tab, 0, ((size_t)p->name_tab_mask + 1) * sizeof *p->name_tab);
    for (uint32_t i = 0; i < p->nnames; i++)
        hash_slot_put(p->name_tab, p->name_tab_mask, p->names[i].hash, i + 1);
    return 0;
}

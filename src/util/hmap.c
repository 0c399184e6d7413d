/* SPDX-License-Identifier: BSD-3-Clause */
/* hmap: a hash table of object pointers with open addressing (see hmap.h). */
#include "hmap.h"

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define HMAP_STEP 128 /* old slots moved per insert or removal during a rebuild, at least */
#define REMOVED 1u    /* the tag of a removed slot (it has no object) */

static inline void *obj_of(const struct hslot *s)
{
    return (void *)(uintptr_t)((uint64_t)s->hi << 32 | s->lo);
}

static inline int is_empty(const struct hslot *s)
{
    return s->tag == 0 && s->lo == 0 && s->hi == 0;
}

static inline void set_slot(struct hslot *s, const void *obj, uint32_t tag)
{
    uint64_t v = (uint64_t)(uintptr_t)obj;
    s->tag = tag;
    s->lo = (uint32_t)v;
    s->hi = (uint32_t)(v >> 32);
}

void hmap_init(struct hmap *m)
{
    m->slots = m->old = NULL;
    m->cap = m->count = m->used = 0;
    m->oldcap = m->moved = 0;
}

/* place puts obj into the first free (empty or removed) slot of m->slots from tag's home. */
static void place(struct hmap *m, const void *obj, uint32_t tag)
{
    size_t mask = m->cap - 1;
    size_t i = (size_t)tag & mask;
    while (obj_of(&m->slots[i]) != NULL)
        i = (i + 1) & mask;
    if (is_empty(&m->slots[i]))
        m->used++; /* a removed slot is counted already */
    set_slot(&m->slots[i], obj, tag);
}

/* step moves up to k more old slots into m->slots; frees the old array once all are moved. */
static void step(struct hmap *m, size_t k)
{
    if (m->old == NULL)
        return;
    for (; k > 0 && m->moved < m->oldcap; k--) {
        struct hslot *s = &m->old[m->moved++];
        if (obj_of(s) != NULL)
            place(m, obj_of(s), s->tag);
    }
    if (m->moved == m->oldcap) {
        free(m->old);
        m->old = NULL;
        m->oldcap = m->moved = 0;
    }
}

void hmap_settle(const struct hmap *cm)
{
    step((struct hmap *)(uintptr_t)cm, (size_t)-1);
}

/* rebuild gives the inserts a new array, at most half full with the objects stored and at least
 * 1/16 of the current one (so a rebuild after many removals shrinks the table by steps);
 * HMAP_STEP old slots moved per operation then finish the move before the new array takes
 * cap / 8 inserts, so it never gets near full. Returns 0, or -1 when out of memory (the table
 * is unchanged). */
static int rebuild(struct hmap *m)
{
    size_t nc = 16;
    while (nc < 2 * (m->count + 1) || nc < m->cap / 16)
        nc *= 2;
    if (nc - 1 > (size_t)UINT32_MAX)
        return -1; /* a 32-bit tag places objects in at most 2^32 slots */
    struct hslot *fresh = calloc(nc, sizeof *fresh);
    if (fresh == NULL)
        return -1;
    struct hslot *cur = m->slots;
    size_t curcap = m->cap;
    if (m->old != NULL) {
        /* a rebuild still in progress (not expected at that pace): move everything now */
        m->slots = fresh;
        m->cap = nc;
        m->used = 0;
        for (size_t i = m->moved; i < m->oldcap; i++)
            if (obj_of(&m->old[i]) != NULL)
                place(m, obj_of(&m->old[i]), m->old[i].tag);
        for (size_t i = 0; i < curcap; i++)
            if (obj_of(&cur[i]) != NULL)
                place(m, obj_of(&cur[i]), cur[i].tag);
        free(m->old);
        free(cur);
        m->old = NULL;
        m->oldcap = m->moved = 0;
        return 0;
    }
    m->old = cur;
    m->oldcap = curcap;
    m->moved = 0;
    m->slots = fresh;
    m->cap = nc;
    m->used = 0;
    if (m->count == 0)
        step(m, (size_t)-1); /* nothing to move: free the old array at once */
    return 0;
}

int hmap_insert(struct hmap *m, void *obj, uint64_t h)
{
    step(m, HMAP_STEP);
    if ((m->used + 1) * 4 > m->cap * 3 && rebuild(m) != 0 && m->used + 2 > m->cap)
        return -1; /* out of memory, and no room left (one slot always stays empty) */
    place(m, obj, (uint32_t)h);
    m->count++;
    return 0;
}

/* probe_start points p at the probe sequence of p->tag in tab: in the old array, the sequence
 * skips the moved slots [0, moved), which hold nothing any more, and ends after the others. */
static void probe_start(struct hmap_probe *p, const struct hslot *tab)
{
    const struct hmap *m = p->m;
    p->tab = tab;
    if (tab == m->old) {
        p->mask = m->oldcap - 1;
        p->i = (size_t)p->tag & p->mask;
        if (p->i < m->moved)
            p->i = m->moved;
        p->left = m->oldcap - m->moved;
    } else {
        p->mask = m->cap - 1;
        p->i = (size_t)p->tag & p->mask;
        p->left = m->cap;
    }
}

/* scan returns the next slot of p's sequence that holds an object of p's tag, or NULL at its
 * end (an empty slot, or every slot looked at). */
static const struct hslot *scan(struct hmap_probe *p)
{
    size_t skip = p->tab == p->m->old ? p->m->moved : 0;
    while (p->left > 0) {
        const struct hslot *s = &p->tab[p->i];
        if (is_empty(s))
            break;
        p->left--;
        p->i = (p->i + 1) & p->mask;
        if (p->i == 0)
            p->i = skip;
        if (s->tag == p->tag && obj_of(s) != NULL)
            return s;
    }
    p->left = 0;
    return NULL;
}

void *hmap_next(struct hmap_probe *p)
{
    while (p->tab != NULL) {
        const struct hslot *s = scan(p);
        if (s != NULL)
            return obj_of(s);
        if (p->tab == p->m->old && p->m->cap > 0)
            probe_start(p, p->m->slots); /* the old array first, then the new one */
        else
            p->tab = NULL;
    }
    return NULL;
}

void *hmap_first(const struct hmap *m, uint64_t h, struct hmap_probe *p)
{
    p->m = m;
    p->tag = (uint32_t)h;
    p->tab = NULL;
    if (m->old != NULL)
        probe_start(p, m->old);
    else if (m->cap > 0)
        probe_start(p, m->slots);
    return hmap_next(p);
}

/* find_slot returns the slot holding obj, which must be stored in m under hash h. */
static struct hslot *find_slot(struct hmap *m, const void *obj, uint64_t h)
{
    struct hmap_probe p;
    p.m = m;
    p.tag = (uint32_t)h;
    const struct hslot *s = NULL;
    if (m->old != NULL) {
        probe_start(&p, m->old);
        while ((s = scan(&p)) != NULL && obj_of(s) != obj)
            ;
    }
    if (s == NULL) {
        probe_start(&p, m->slots);
        while ((s = scan(&p)) != NULL && obj_of(s) != obj)
            ;
    }
    assert(s != NULL);
    return (struct hslot *)(uintptr_t)s; /* s is in m's arrays, which m owns */
}

void hmap_remove(struct hmap *m, const void *obj, uint64_t h)
{
    set_slot(find_slot(m, obj, h), NULL, REMOVED);
    m->count--;
    step(m, HMAP_STEP);
}

void hmap_replace(struct hmap *m, const void *obj, void *by, uint64_t h)
{
    assert(by != NULL);
    set_slot(find_slot(m, obj, h), by, (uint32_t)h);
}

void hmap_iter_init(struct hmap_iter *it, const struct hmap *m)
{
    hmap_settle(m);
    it->m = m;
    it->i = 0;
}

void *hmap_iter_next(struct hmap_iter *it)
{
    while (it->i < it->m->cap) {
        void *o = obj_of(&it->m->slots[it->i++]);
        if (o != NULL)
            return o;
    }
    return NULL;
}

void hmap_free(struct hmap *m)
{
    free(m->old);
    free(m->slots);
    hmap_init(m);
}

/* load64 / load32 read unaligned little words (in the host's order: hashes never leave the
 * process). */
static inline uint64_t load64(const unsigned char *b)
{
    uint64_t w;
    memcpy(&w, b, sizeof w);
    return w;
}

static inline uint64_t load32(const unsigned char *b)
{
    uint32_t w;
    memcpy(&w, b, sizeof w);
    return w;
}

uint64_t hmap_hash_bytes(const void *p, size_t n, uint64_t seed)
{
    /* eight bytes a step, each folded in by a multiply and a shift; the 1 to 7 left over read as
     * two overlapping words (or three bytes), the length mixed in, the whole finished by
     * hmap_mix64: about 4 instructions a word where FNV-1a took 4 a byte */
    const unsigned char *b = p;
    uint64_t h = seed ^ ((uint64_t)n * 0x9e3779b97f4a7c15ull);
    for (; n >= 8; b += 8, n -= 8) {
        h = (h ^ load64(b)) * 0xbf58476d1ce4e5b9ull;
        h ^= h >> 31;
    }
    if (n >= 4)
        h ^= (load32(b) | load32(b + n - 4) << 32) * 0x94d049bb133111ebull;
    else if (n > 0)
        h ^= ((uint64_t)b[0] | (uint64_t)b[n / 2] << 8 | (uint64_t)b[n - 1] << 16) *
             0x94d049bb133111ebull;
    return hmap_mix64(h);
}

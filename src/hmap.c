/* SPDX-License-Identifier: BSD-3-Clause */
/* hmap: an intrusive chained hash table. */
#include "hmap.h"

#include <stdint.h>
#include <stdlib.h>

void hmap_init(struct hmap *m, hmap_hash_fn fn, const void *ctx)
{
    m->buckets = NULL;
    m->nbuckets = m->count = 0;
    m->hash = fn;
    m->ctx = ctx;
    m->old = NULL;
    m->oldn = m->moved = 0;
}

#define HMAP_STEP 64 /* old buckets moved per insert or removal while the table grows */

/* move_chain moves old bucket i's nodes into the new array. */
static void move_chain(struct hmap *m, size_t i)
{
    struct hnode *n = m->old[i];
    m->old[i] = NULL;
    while (n != NULL) {
        struct hnode *next = n->next;
        size_t j = m->hash(n, m->ctx) & (m->nbuckets - 1);
        n->next = m->buckets[j];
        m->buckets[j] = n;
        n = next;
    }
}

/* step moves up to k more old buckets; frees the old array once it is empty. */
static void step(struct hmap *m, size_t k)
{
    if (m->old == NULL)
        return;
    for (; k > 0 && m->moved < m->oldn; k--)
        move_chain(m, m->moved++);
    if (m->moved == m->oldn) {
        free(m->old);
        m->old = NULL;
        m->oldn = m->moved = 0;
    }
}

/* unmoved moves the old chain that holds hash h, if it is still there. */
static void unmoved(struct hmap *m, uint64_t h)
{
    if (m->old != NULL) {
        size_t i = h & (m->oldn - 1);
        if (i >= m->moved && m->old[i] != NULL)
            move_chain(m, i);
    }
}

struct hnode *hmap_chain(const struct hmap *cm, uint64_t h)
{
    struct hmap *m = (struct hmap *)(uintptr_t)cm;
    if (m->nbuckets == 0)
        return NULL;
    unmoved(m, h);
    return m->buckets[h & (m->nbuckets - 1)];
}

void hmap_settle(const struct hmap *cm)
{
    struct hmap *m = (struct hmap *)(uintptr_t)cm;
    step(m, (size_t)-1);
}

void hmap_iter_init(struct hmap_iter *it, const struct hmap *m)
{
    hmap_settle(m);
    it->m = m;
    it->bucket = 0;
    it->next = NULL;
}

struct hnode *hmap_iter_next(struct hmap_iter *it)
{
    while (it->next == NULL) {
        if (it->bucket >= it->m->nbuckets)
            return NULL;
        it->next = it->m->buckets[it->bucket++];
    }
    struct hnode *n = it->next;
    it->next = n->next;
    return n;
}

/* grow doubles the bucket array; the old chains move over later (step). Returns 0 or -1. */
static int grow(struct hmap *m)
{
    hmap_settle(m); /* a growth still in progress (only if many inserts came at once) */
    size_t nb = m->nbuckets ? m->nbuckets * 2 : 16;
    struct hnode **b = calloc(nb, sizeof *b);
    if (b == NULL)
        return -1;
    m->old = m->buckets;
    m->oldn = m->nbuckets;
    m->moved = 0;
    m->buckets = b;
    m->nbuckets = nb;
    step(m, 0); /* frees an empty old array at once */
    return 0;
}

int hmap_insert(struct hmap *m, struct hnode *n, uint64_t h)
{
    step(m, HMAP_STEP);
    /* a failed grow only makes chains longer, unless there is no table at all */
    if (m->count >= m->nbuckets && grow(m) != 0 && m->nbuckets == 0)
        return -1;
    unmoved(m, h); /* keep a key's nodes in one chain, in insertion order */
    size_t j = h & (m->nbuckets - 1);
    n->next = m->buckets[j];
    m->buckets[j] = n;
    m->count++;
    return 0;
}

void hmap_remove(struct hmap *m, struct hnode *n, uint64_t h)
{
    unmoved(m, h);
    struct hnode **pp = &m->buckets[h & (m->nbuckets - 1)];
    while (*pp != n)
        pp = &(*pp)->next;
    *pp = n->next;
    n->next = NULL;
    m->count--;
    step(m, HMAP_STEP);
}

void hmap_free(struct hmap *m)
{
    free(m->old);
    m->old = NULL;
    m->oldn = m->moved = 0;
    free(m->buckets);
    m->buckets = NULL;
    m->nbuckets = m->count = 0;
}

uint64_t hmap_hash_bytes(const void *p, size_t n, uint64_t seed)
{
    const unsigned char *b = p;
    uint64_t h = 0xcbf29ce484222325ull ^ seed;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    return hmap_mix64(h);
}

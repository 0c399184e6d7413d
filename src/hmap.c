/* hmap: an intrusive chained hash table. */
#include "hmap.h"

#include <stdlib.h>

void hmap_init(struct hmap *m, hmap_hash_fn fn, const void *ctx)
{
    m->buckets = NULL;
    m->nbuckets = m->count = 0;
    m->hash = fn;
    m->ctx = ctx;
}

/* grow doubles the bucket array and relinks every node. Returns 0 or -1. */
static int grow(struct hmap *m)
{
    size_t nb = m->nbuckets ? m->nbuckets * 2 : 16;
    struct hnode **b = calloc(nb, sizeof *b);
    if (b == NULL)
        return -1;
    for (size_t i = 0; i < m->nbuckets; i++) {
        struct hnode *n = m->buckets[i];
        while (n != NULL) {
            struct hnode *next = n->next;
            size_t j = m->hash(n, m->ctx) & (nb - 1);
            n->next = b[j];
            b[j] = n;
            n = next;
        }
    }
    free(m->buckets);
    m->buckets = b;
    m->nbuckets = nb;
    return 0;
}

int hmap_insert(struct hmap *m, struct hnode *n, uint64_t h)
{
    /* a failed grow only makes chains longer, unless there is no table at all */
    if (m->count >= m->nbuckets && grow(m) != 0 && m->nbuckets == 0)
        return -1;
    size_t j = h & (m->nbuckets - 1);
    n->next = m->buckets[j];
    m->buckets[j] = n;
    m->count++;
    return 0;
}

void hmap_remove(struct hmap *m, struct hnode *n, uint64_t h)
{
    struct hnode **pp = &m->buckets[h & (m->nbuckets - 1)];
    while (*pp != n)
        pp = &(*pp)->next;
    *pp = n->next;
    n->next = NULL;
    m->count--;
}

void hmap_free(struct hmap *m)
{
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

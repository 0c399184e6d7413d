/* SPDX-License-Identifier: BSD-3-Clause */
/* hmap: an intrusive chained hash table. Objects embed a struct hnode (one pointer); the caller
 * hashes keys and compares them while walking a chain, so one table type serves every key. The
 * table rehashes nodes through a callback when it grows, so nodes need not store their hash.
 * Pure, no I/O. */
#ifndef SPUR_HMAP_H
#define SPUR_HMAP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* struct hnode is embedded in each object stored in a table. */
struct hnode {
    struct hnode *next; /* next node in the same bucket */
};

/* hmap_hash_fn recomputes the hash of a stored node (ctx is the table's context). */
typedef uint64_t (*hmap_hash_fn)(const struct hnode *n, const void *ctx);

/* struct hmap is the table. It grows incrementally: when it doubles, the old bucket array is
 * kept and its chains are moved a few at a time by later operations (and a chain at once when a
 * lookup or removal needs it), so no single operation rehashes the whole table. */
struct hmap {
    struct hnode **buckets; /* nbuckets chain heads */
    size_t nbuckets;        /* a power of two, or 0 before the first insert */
    size_t count;           /* nodes stored */
    hmap_hash_fn hash;      /* rehashes a node when the table grows */
    const void *ctx;        /* passed to hash */
    struct hnode **old;     /* the bucket array before the last growth, while being emptied */
    size_t oldn;            /* buckets in old */
    size_t moved;           /* old buckets [0, moved) are empty */
};

/* hmap_init prepares an empty table whose nodes are rehashed with fn(node, ctx). */
void hmap_init(struct hmap *m, hmap_hash_fn fn, const void *ctx);

/* hmap_insert adds n whose key hashes to h (duplicates allowed). Grows the table when
 * count > nbuckets. Returns 0, or -1 when out of memory (n is then not inserted). */
int hmap_insert(struct hmap *m, struct hnode *n, uint64_t h);

/* hmap_remove unlinks n, which must be in m under hash h. */
void hmap_remove(struct hmap *m, struct hnode *n, uint64_t h);

/* hmap_chain returns the first node of the bucket for hash h (NULL if none); walk with ->next
 * and compare keys (a chain may hold nodes of other hashes). While the table grows, it first moves
 * the old chain for h into the new array (the table is logically unchanged, hence const). */
struct hnode *hmap_chain(const struct hmap *m, uint64_t h);

/* hmap_settle finishes a growth in progress, so every node is in buckets[0..nbuckets): call it
 * before walking the buckets directly. O(table) once; for teardown and checks. */
void hmap_settle(const struct hmap *m);

/* struct hmap_iter walks every node of a table once, in bucket order (see hmap_iter_next). */
struct hmap_iter {
    const struct hmap *m; /* the table */
    size_t bucket;        /* the bucket after the current one */
    struct hnode *next;   /* the node to return next, read before the current one is returned */
};

/* hmap_iter_init starts a walk over m. It settles a growth in progress first (hmap_settle), so
 * starting a walk is O(table) at worst; for teardown, checks and listings that copy out. */
void hmap_iter_init(struct hmap_iter *it, const struct hmap *m);

/* hmap_iter_next returns the next node, or NULL when every node has been returned. The node
 * returned may be removed (and freed) before the next call; inserting during a walk is not
 * allowed (it may grow the table). */
struct hnode *hmap_iter_next(struct hmap_iter *it);

/* hmap_free frees the bucket array (not the nodes). */
void hmap_free(struct hmap *m);

/* hmap_hash_bytes hashes n bytes (64-bit FNV-1a mixed with a seed). */
uint64_t hmap_hash_bytes(const void *p, size_t n, uint64_t seed);

/* hmap_mix64 scrambles an integer key into a well-distributed hash. */
static inline uint64_t hmap_mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

#ifdef __cplusplus
}
#endif
#endif

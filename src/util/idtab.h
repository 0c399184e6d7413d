/* SPDX-License-Identifier: BSD-3-Clause */
/* idtab: a table of object pointers by 64-bit id (the jobs by handle number), in id order. Ids
 * are grouped in leaves of IDTAB_LEAF consecutive ids; a leaf holds a bitmap of the ids it has
 * and their pointers: a slot per id when more than a quarter of them are there (full: dense ids,
 * no move), else packed in id order (no slot for an absent id). The leaves are found by a hash
 * table (hmap) and linked in id order. A lookup, an insert and a removal are O(1) expected
 * (one probe, then an index, or a population count and a move of at most IDTAB_LEAF / 2
 * pointers in a packed leaf); the next id after
 * a given one is O(1) too (a bit scan, or the next leaf: a leaf with no id is freed unless a
 * cursor is parked on it). Memory: dense ids (a server's own, which count up) cost a pointer each
 * plus their leaf's 40-byte header shared by IDTAB_LEAF ids and its hash slot; an isolated id
 * (a restored job's, far from the others) costs a leaf of its own: 56 bytes and a hash slot (16
 * to 32), under 90 bytes. A leaf's
 * array shrinks when it is a quarter full, so removals never leave more than 4 slots per id.
 * Pure, libc only (uses slab and hmap). */
#ifndef SPUR_IDTAB_H
#define SPUR_IDTAB_H

#include <stddef.h>
#include <stdint.h>

#include "hmap.h"

#ifdef __cplusplus
extern "C" {
#endif

#define IDTAB_LEAF_BITS 6                   /* log2 of the ids a leaf spans */
#define IDTAB_LEAF (1u << IDTAB_LEAF_BITS)  /* ids a leaf spans */

/* struct idtab_leaf holds the ids [key * IDTAB_LEAF, (key + 1) * IDTAB_LEAF) that are stored. */
struct idtab_leaf {
    uint64_t key;              /* the ids' common high bits: id >> IDTAB_LEAF_BITS */
    uint64_t bits;             /* bit i: id key * IDTAB_LEAF + i is stored */
    struct idtab_leaf *prev;   /* the leaf of the next lower key, or NULL */
    struct idtab_leaf *next;   /* the leaf of the next higher key, or NULL */
    uint32_t pins;             /* cursors parked here (an empty leaf stays while pinned) */
    uint32_t cap;              /* pointers allocated in slot: IDTAB_LEAF (full) or fewer */
    void *slot[];              /* full: slot i is id i's; packed: the stored pointers in id
                                  order, popcount(bits) of them */
};

/* struct idtab is the table. */
struct idtab {
    struct hmap leaves;        /* struct idtab_leaf by hmap_mix64(key) */
    struct idtab_leaf *head;   /* the leaf of the lowest key, or NULL */
    struct idtab_leaf *tail;   /* the leaf of the highest key, or NULL */
    struct idtab_leaf *hint;   /* the leaf last created, where the next new leaf likely goes */
    size_t count;              /* pointers stored */
};

/* struct idtab_cursor is a place in a walk in id order that survives inserts and removals
 * (idtab_next): the last id returned, whose leaf it pins. */
struct idtab_cursor {
    uint64_t id;               /* the last id returned */
    int started;               /* an id was returned (its leaf is pinned) */
};

/* struct idtab_iter walks the table in id order with no insert or removal meanwhile. */
struct idtab_iter {
    const struct idtab_leaf *leaf; /* the leaf being walked, or NULL at the end */
    uint64_t rest;             /* its ids not yet returned */
    uint32_t k;                /* the slot of the next one */
};

/* idtab_init prepares an empty table. */
void idtab_init(struct idtab *t);

/* idtab_free frees the leaves (not the objects). Every cursor must have been ended. */
void idtab_free(struct idtab *t);

/* idtab_get returns the pointer stored under id, or NULL. O(1) expected. */
void *idtab_get(const struct idtab *t, uint64_t id);

/* idtab_put stores p (not NULL) under id. Returns 0, or -1 when id is taken or out of memory
 * (nothing changed). O(1) expected; a leaf created for a key below the last one created walks the
 * leaves from there to its place (restored ids come in ascending order: a step or none). */
int idtab_put(struct idtab *t, uint64_t id, void *p);

/* idtab_del removes what is stored under id (which must be stored). O(1) expected. */
void idtab_del(struct idtab *t, uint64_t id);

/* idtab_first returns the pointer of the lowest id, or NULL when the table is empty. */
void *idtab_first(const struct idtab *t);

/* idtab_next returns the pointer of the lowest id above the cursor's (the lowest of all for a
 * new cursor, zeroed), moves the cursor there and sets *id; NULL at the end (the cursor is then
 * ended). O(1) plus the empty leaves other cursors pin. */
void *idtab_next(struct idtab *t, struct idtab_cursor *c, uint64_t *id);

/* idtab_cursor_end releases the cursor's leaf (idempotent); the cursor starts over after it. */
void idtab_cursor_end(struct idtab *t, struct idtab_cursor *c);

/* idtab_iter_init starts a walk; idtab_iter_next returns the next pointer in id order and sets
 * *id (id may be NULL), or NULL at the end. No insert or removal between the calls. */
void idtab_iter_init(struct idtab_iter *it, const struct idtab *t);
void *idtab_iter_next(struct idtab_iter *it, uint64_t *id);

/* idtab_bytes is the memory the table holds (its leaves and their hash table), for tests. */
size_t idtab_bytes(const struct idtab *t);

/* idtab_check verifies the table's structure: leaves in ascending key order and linked both
 * ways, each found by its key, none empty unless pinned, the counts right. Returns 0, or -1 with
 * a message in err. O(leaves). */
int idtab_check(const struct idtab *t, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif

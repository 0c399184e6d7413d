/* SPDX-License-Identifier: BSD-3-Clause */
/* hmap: a hash table of object pointers with open addressing (linear probing). Each slot keeps
 * 32 bits of the object's hash beside its pointer, so a lookup compares hashes inside the slot
 * array and touches an object only when they match: a lookup that finds nothing (a new
 * unique ID, a new job) costs one or two cache lines of the array, whatever the objects are, and
 * growing the table never touches an object nor recomputes a hash. The caller hashes keys and
 * compares them on the candidates a lookup yields, so one table type serves every key; an object
 * may be stored in several tables. Pure, no I/O. */
#ifndef SPUR_HMAP_H
#define SPUR_HMAP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* struct hslot is one slot, 12 bytes: the low 32 bits of the object's hash (which also place it:
 * its home slot is tag & (cap - 1)) and the object pointer in two halves, so that slots pack
 * without padding. Empty: no object, tag 0; removed: no object, tag 1 (a probe goes past it). */
struct hslot {
    uint32_t tag;
    uint32_t lo, hi; /* the object pointer */
};

/* struct hmap is the table, kept at most 3/4 full counting removed slots. It is rebuilt
 * incrementally: when an insert finds it too full, a new array (sized for twice the objects)
 * takes the inserts, and the old array's slots are moved over a few at a time by later inserts
 * and removals, so no single operation moves the whole table. Removed slots are cleared by the
 * next rebuild; a rebuild after many removals makes the table smaller. */
struct hmap {
    struct hslot *slots; /* cap slots, cap a power of two (0 before the first insert) */
    size_t cap;
    size_t count;        /* objects stored, in slots and old together */
    size_t used;         /* slots of `slots` in use or removed (the load that triggers a rebuild) */
    struct hslot *old;   /* the array before the rebuild in progress, or NULL */
    size_t oldcap;       /* slots in old */
    size_t moved;        /* old slots [0, moved) have been moved: probes in old skip them */
};

/* struct hmap_probe walks the objects stored under one hash (see hmap_first). */
struct hmap_probe {
    const struct hmap *m;
    uint32_t tag;            /* the low 32 bits of the hash looked for */
    const struct hslot *tab; /* the array being probed: old first, then slots */
    size_t mask;
    size_t i;                /* the next slot to look at */
    size_t left;             /* slots of tab that may still be looked at */
};

/* hmap_init prepares an empty table. */
void hmap_init(struct hmap *m);

/* hmap_insert stores obj (not NULL) under hash h (duplicates allowed). Returns 0, or -1 when out
 * of memory (obj is then not stored). */
int hmap_insert(struct hmap *m, void *obj, uint64_t h);

/* hmap_remove removes obj, which must be stored in m under hash h. */
void hmap_remove(struct hmap *m, const void *obj, uint64_t h);

/* hmap_replace puts by (not NULL) in the slot of obj, which must be stored in m under hash h, so
 * that by is stored under h in its place: O(1) expected, never allocates, never fails. */
void hmap_replace(struct hmap *m, const void *obj, void *by, uint64_t h);

/* hmap_first returns the first object stored under hash h (its low 32 bits), or NULL; hmap_next
 * the following ones, then NULL. Compare keys on each: different keys may share a hash. The order among
 * objects of one hash is unspecified. No insert or removal between the calls. */
void *hmap_first(const struct hmap *m, uint64_t h, struct hmap_probe *p);
void *hmap_next(struct hmap_probe *p);

/* hmap_settle finishes a rebuild in progress, so every object is in slots[0..cap). O(table);
 * for teardown, checks and walks (the table is logically unchanged, hence const). */
void hmap_settle(const struct hmap *m);

/* struct hmap_iter walks every object of a table once (see hmap_iter_next). */
struct hmap_iter {
    const struct hmap *m;
    size_t i; /* the next slot */
};

/* hmap_iter_init starts a walk over m. It settles a rebuild in progress first (hmap_settle), so
 * starting a walk is O(table) at worst; for teardown, checks and listings that copy out. */
void hmap_iter_init(struct hmap_iter *it, const struct hmap *m);

/* hmap_iter_next returns the next object, or NULL when every object has been returned. The
 * object returned may be removed (and freed) before the next call; inserting during a walk is
 * not allowed (it may rebuild the table). */
void *hmap_iter_next(struct hmap_iter *it);

/* hmap_free frees the slot arrays (not the objects). */
void hmap_free(struct hmap *m);

/* hmap_hash_bytes hashes n bytes with a seed (a word at a time, finished by hmap_mix64). */
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

/* SPDX-License-Identifier: BSD-3-Clause */
/* idtab: object pointers by id, in id order (see idtab.h). */
#include "idtab.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "slab.h"

#define LEAF_MASK ((uint64_t)IDTAB_LEAF - 1)

/* The leaf bitmap is one 64-bit word. */
_Static_assert(IDTAB_LEAF == 64, "a leaf's bitmap is one uint64_t");

/* popcount counts the bits set in v (inline: without -mpopcnt the builtin is a library call). */
static inline uint32_t popcount(uint64_t v)
{
#ifdef __POPCNT__
    return (uint32_t)__builtin_popcountll(v);
#else
    v = v - ((v >> 1) & UINT64_C(0x5555555555555555));
    v = (v & UINT64_C(0x3333333333333333)) + ((v >> 2) & UINT64_C(0x3333333333333333));
    v = (v + (v >> 4)) & UINT64_C(0x0f0f0f0f0f0f0f0f);
    return (uint32_t)((v * UINT64_C(0x0101010101010101)) >> 56);
#endif
}

/* A leaf is full (cap IDTAB_LEAF: slot i holds id i, no move on insert or removal, the layout
 * of dense ids) or packed (fewer slots: the stored ids in order, slot k the k-th). */
static inline int full(const struct idtab_leaf *l) { return l->cap == IDTAB_LEAF; }

/* slot_of is the slot of id i of leaf l, which is stored or about to be. */
static inline uint32_t slot_of(const struct idtab_leaf *l, uint32_t i)
{
    return full(l) ? i : popcount(l->bits & ((UINT64_C(1) << i) - 1));
}

/* leaf_bytes is the size of a leaf with cap slots. */
static size_t leaf_bytes(uint32_t cap)
{
    return sizeof(struct idtab_leaf) + (size_t)cap * sizeof(void *);
}

void idtab_init(struct idtab *t)
{
    memset(t, 0, sizeof *t);
    hmap_init(&t->leaves);
}

void idtab_free(struct idtab *t)
{
    struct idtab_leaf *l = t->head;
    while (l != NULL) {
        struct idtab_leaf *next = l->next;
        slab_free(l);
        l = next;
    }
    hmap_free(&t->leaves);
    idtab_init(t);
}

/* find returns the leaf of key, or NULL. The ends first: new ids go to the tail and a queue
 * drains from the head. */
static struct idtab_leaf *find(const struct idtab *t, uint64_t key)
{
    if (t->tail != NULL && t->tail->key == key)
        return t->tail;
    if (t->head != NULL && t->head->key == key)
        return t->head;
    struct hmap_probe pr;
    for (struct idtab_leaf *l = hmap_first(&t->leaves, hmap_mix64(key), &pr); l != NULL;
         l = hmap_next(&pr)) {
        if (l->key == key)
            return l;
    }
    return NULL;
}

void *idtab_get(const struct idtab *t, uint64_t id)
{
    const struct idtab_leaf *l = find(t, id >> IDTAB_LEAF_BITS);
    uint32_t i = (uint32_t)(id & LEAF_MASK);
    if (l == NULL || !(l->bits >> i & 1))
        return NULL;
    return l->slot[slot_of(l, i)];
}

/* resize moves leaf l to an allocation of cap slots (at least its ids; IDTAB_LEAF: full, else
 * packed); returns the new leaf, or NULL when out of memory (l unchanged). */
static struct idtab_leaf *resize(struct idtab *t, struct idtab_leaf *l, uint32_t cap)
{
    struct idtab_leaf *n = slab_alloc(leaf_bytes(cap));
    if (n == NULL)
        return NULL;
    memcpy(n, l, sizeof *l);
    n->cap = cap;
    uint32_t k = 0;
    for (uint64_t m = l->bits; m != 0; m &= m - 1, k++) { /* each id, from one layout to the other */
        uint32_t i = (uint32_t)__builtin_ctzll(m);
        n->slot[full(n) ? i : k] = l->slot[full(l) ? i : k];
    }
    if (n->prev != NULL)
        n->prev->next = n;
    else
        t->head = n;
    if (n->next != NULL)
        n->next->prev = n;
    else
        t->tail = n;
    if (t->hint == l)
        t->hint = n;
    hmap_replace(&t->leaves, l, n, hmap_mix64(l->key));
    slab_free(l);
    return n;
}

/* leaf_new creates the empty leaf of key with cap slots, linked at its place; NULL when out of
 * memory. */
static struct idtab_leaf *leaf_new(struct idtab *t, uint64_t key, uint32_t cap)
{
    struct idtab_leaf *l = slab_alloc(leaf_bytes(cap));
    if (l == NULL)
        return NULL;
    memset(l, 0, sizeof *l);
    l->key = key;
    l->cap = cap;
    if (hmap_insert(&t->leaves, l, hmap_mix64(key)) != 0) {
        slab_free(l);
        return NULL;
    }
    /* a: the leaf it goes after (NULL: first), searched from the last leaf created */
    struct idtab_leaf *a = t->hint != NULL ? t->hint : t->tail;
    if (a != NULL && key > t->tail->key) {
        a = t->tail;
    } else if (a != NULL && a->key > key) {
        while (a != NULL && a->key > key)
            a = a->prev;
    } else if (a != NULL) {
        while (a->next != NULL && a->next->key < key)
            a = a->next;
    }
    l->prev = a;
    l->next = a != NULL ? a->next : t->head;
    if (l->next != NULL)
        l->next->prev = l;
    else
        t->tail = l;
    if (a != NULL)
        a->next = l;
    else
        t->head = l;
    t->hint = l;
    return l;
}

/* leaf_free unlinks and frees l, which holds no id and no pin. */
static void leaf_free(struct idtab *t, struct idtab_leaf *l)
{
    assert(l->bits == 0 && l->pins == 0);
    if (t->hint == l)
        t->hint = l->prev != NULL ? l->prev : l->next;
    if (l->prev != NULL)
        l->prev->next = l->next;
    else
        t->head = l->next;
    if (l->next != NULL)
        l->next->prev = l->prev;
    else
        t->tail = l->prev;
    hmap_remove(&t->leaves, l, hmap_mix64(l->key));
    slab_free(l);
}

int idtab_put(struct idtab *t, uint64_t id, void *p)
{
    uint64_t key = id >> IDTAB_LEAF_BITS;
    uint32_t i = (uint32_t)(id & LEAF_MASK);
    struct idtab_leaf *l = find(t, key);
    int fresh = l == NULL;
    if (fresh) {
        /* the leaf after the last one fills up as ids count up: its full size at once */
        int dense = t->tail != NULL && key == t->tail->key + 1;
        if ((l = leaf_new(t, key, dense ? IDTAB_LEAF : 2)) == NULL)
            return -1;
    } else if (l->bits >> i & 1) {
        return -1;
    }
    if (!full(l)) {
        uint32_t n = popcount(l->bits);
        if (n == l->cap) {
            /* packed up to half the ids, then full */
            uint32_t cap = l->cap * 2 <= IDTAB_LEAF / 2 ? l->cap * 2 : IDTAB_LEAF;
            struct idtab_leaf *g = resize(t, l, cap);
            if (g == NULL)
                return -1; /* (a fresh leaf has room: never left empty here) */
            l = g;
        }
    }
    if (full(l)) {
        l->slot[i] = p;
    } else {
        uint32_t n = popcount(l->bits), r = slot_of(l, i);
        memmove(&l->slot[r + 1], &l->slot[r], (n - r) * sizeof l->slot[0]);
        l->slot[r] = p;
    }
    l->bits |= UINT64_C(1) << i;
    t->count++;
    return 0;
}

void idtab_del(struct idtab *t, uint64_t id)
{
    struct idtab_leaf *l = find(t, id >> IDTAB_LEAF_BITS);
    uint32_t i = (uint32_t)(id & LEAF_MASK);
    assert(l != NULL && (l->bits >> i & 1));
    if (l == NULL || !(l->bits >> i & 1))
        return;
    if (!full(l)) {
        uint32_t n = popcount(l->bits), r = slot_of(l, i);
        memmove(&l->slot[r], &l->slot[r + 1], (n - r - 1) * sizeof l->slot[0]);
    }
    l->bits &= ~(UINT64_C(1) << i);
    t->count--;
    if (l->bits == 0) {
        if (l->pins == 0)
            leaf_free(t, l);
        return;
    }
    uint32_t n = popcount(l->bits);
    if (n <= l->cap / 4) /* a full leaf a quarter used becomes packed: 16 slots */
        resize(t, l, full(l) ? IDTAB_LEAF / 4 : l->cap / 2); /* (out of memory: it stays) */
}

void *idtab_first(const struct idtab *t)
{
    for (const struct idtab_leaf *l = t->head; l != NULL; l = l->next)
        if (l->bits != 0)
            return l->slot[slot_of(l, (uint32_t)__builtin_ctzll(l->bits))];
    return NULL;
}

/* unpin releases a pin on l, freeing it if it is empty and unpinned now. */
static void unpin(struct idtab *t, struct idtab_leaf *l)
{
    assert(l->pins > 0);
    if (--l->pins == 0 && l->bits == 0)
        leaf_free(t, l);
}

void *idtab_next(struct idtab *t, struct idtab_cursor *c, uint64_t *id)
{
    struct idtab_leaf *at = c->started ? find(t, c->id >> IDTAB_LEAF_BITS) : NULL;
    assert(!c->started || at != NULL); /* pinned */
    struct idtab_leaf *l = at != NULL ? at : t->head;
    uint32_t from = at != NULL ? (uint32_t)(c->id & LEAF_MASK) + 1 : 0;
    for (; l != NULL; l = l->next, from = 0) {
        uint64_t m = from >= IDTAB_LEAF ? 0 : l->bits & (~UINT64_C(0) << from);
        if (m == 0)
            continue; /* (an empty leaf is pinned by a cursor: few) */
        uint32_t b = (uint32_t)__builtin_ctzll(m);
        if (l != at) {
            l->pins++;
            if (at != NULL)
                unpin(t, at);
        }
        c->id = l->key << IDTAB_LEAF_BITS | b;
        c->started = 1;
        *id = c->id;
        return l->slot[slot_of(l, b)];
    }
    idtab_cursor_end(t, c);
    return NULL;
}

void idtab_cursor_end(struct idtab *t, struct idtab_cursor *c)
{
    if (!c->started)
        return;
    struct idtab_leaf *l = find(t, c->id >> IDTAB_LEAF_BITS);
    assert(l != NULL);
    c->started = 0;
    if (l != NULL)
        unpin(t, l);
}

void idtab_iter_init(struct idtab_iter *it, const struct idtab *t)
{
    it->leaf = t->head;
    it->rest = t->head != NULL ? t->head->bits : 0;
    it->k = 0;
}

void *idtab_iter_next(struct idtab_iter *it, uint64_t *id)
{
    while (it->leaf != NULL && it->rest == 0) {
        it->leaf = it->leaf->next;
        it->rest = it->leaf != NULL ? it->leaf->bits : 0;
        it->k = 0;
    }
    if (it->leaf == NULL)
        return NULL;
    uint32_t b = (uint32_t)__builtin_ctzll(it->rest);
    it->rest &= it->rest - 1;
    if (id != NULL)
        *id = it->leaf->key << IDTAB_LEAF_BITS | b;
    uint32_t k = it->k++;
    return it->leaf->slot[full(it->leaf) ? b : k];
}

size_t idtab_bytes(const struct idtab *t)
{
    size_t n = (t->leaves.cap + t->leaves.oldcap) * sizeof(struct hslot);
    for (const struct idtab_leaf *l = t->head; l != NULL; l = l->next)
        n += leaf_bytes(l->cap);
    return n;
}

/* fail writes a message to err and returns -1. */
static int fail(char *err, size_t errlen, const char *msg, uint64_t key)
{
    snprintf(err, errlen, "idtab: %s (leaf %llu)", msg, (unsigned long long)key);
    return -1;
}

int idtab_check(const struct idtab *t, char *err, size_t errlen)
{
    size_t ids = 0, leaves = 0;
    int hint_seen = t->hint == NULL;
    const struct idtab_leaf *prev = NULL;
    for (const struct idtab_leaf *l = t->head; l != NULL; prev = l, l = l->next) {
        leaves++;
        hint_seen |= l == t->hint;
        if (l->prev != prev)
            return fail(err, errlen, "broken back link", l->key);
        if (prev != NULL && prev->key >= l->key)
            return fail(err, errlen, "leaves out of order", l->key);
        if (find(t, l->key) != l)
            return fail(err, errlen, "leaf not found by its key", l->key);
        if (l->bits == 0 && l->pins == 0)
            return fail(err, errlen, "empty leaf kept without a cursor", l->key);
        if (popcount(l->bits) > l->cap || l->cap > IDTAB_LEAF)
            return fail(err, errlen, "more ids than slots", l->key);
        for (uint64_t m = l->bits; m != 0; m &= m - 1)
            if (l->slot[slot_of(l, (uint32_t)__builtin_ctzll(m))] == NULL)
                return fail(err, errlen, "a stored pointer is NULL", l->key);
        ids += popcount(l->bits);
    }
    if (prev != t->tail)
        return fail(err, errlen, "tail is not the last leaf", prev != NULL ? prev->key : 0);
    if (!hint_seen)
        return fail(err, errlen, "hint is not a leaf", t->hint->key);
    if (leaves != t->leaves.count)
        return fail(err, errlen, "leaves listed and hashed differ", leaves);
    if (ids != t->count)
        return fail(err, errlen, "count differs from the ids stored", ids);
    return 0;
}

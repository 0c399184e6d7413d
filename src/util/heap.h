/* SPDX-License-Identifier: BSD-3-Clause */
/* heap: a binary min-heap of deadlines. An object with a deadline keeps only a 32-bit position
 * field, which the heap updates as entries move, so removal is O(log n). Pure. */
#ifndef SPUR_HEAP_H
#define SPUR_HEAP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HEAP_NONE UINT32_MAX /* position of an object that is not in the heap */

/* struct heap_slot is one entry: the deadline and the owner's position field. */
struct heap_slot {
    double at;        /* deadline, seconds */
    uint32_t *pos;    /* the owner's position field, kept equal to this slot's index */
};

/* struct heap holds the entries, earliest first. Zero-initialised is empty. */
struct heap {
    struct heap_slot *a; /* the array */
    uint32_t n;          /* entries in use */
    uint32_t cap;        /* allocated slots */
};

/* heap_push adds the object whose position field is pos, due at. Returns 0, or -1 when out of
 * memory (*pos is then HEAP_NONE). */
int heap_push(struct heap *h, uint32_t *pos, double at);

/* heap_remove removes the object whose position field is pos, if it is in the heap. */
void heap_remove(struct heap *h, uint32_t *pos);

/* heap_top returns the earliest entry's position field (NULL if empty) and its deadline in *at. */
static inline uint32_t *heap_top(const struct heap *h, double *at)
{
    if (h->n == 0)
        return NULL;
    *at = h->a[0].at;
    return h->a[0].pos;
}

/* heap_free frees the array. */
void heap_free(struct heap *h);

#ifdef __cplusplus
}
#endif
#endif

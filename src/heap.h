/* heap: a binary min-heap of deadlines. Each entry records its own position so it can be removed
 * or changed in O(log n). Pure. */
#ifndef SPUR_HEAP_H
#define SPUR_HEAP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HEAP_NONE UINT32_MAX /* heap_index of an entry that is not in a heap */

/* struct heap_entry is embedded in each object with a deadline. */
struct heap_entry {
    double at;       /* the deadline, seconds */
    uint32_t index;  /* position in the heap, HEAP_NONE when absent */
};

/* struct heap holds pointers to entries, earliest first. Zero-initialised is empty. */
struct heap {
    struct heap_entry **a; /* the array */
    uint32_t n;            /* entries in use */
    uint32_t cap;          /* allocated slots */
};

/* heap_push adds e with deadline at. Returns 0, or -1 when out of memory. */
int heap_push(struct heap *h, struct heap_entry *e, double at);

/* heap_remove removes e if it is in h. */
void heap_remove(struct heap *h, struct heap_entry *e);

/* heap_top returns the earliest entry, or NULL. */
static inline struct heap_entry *heap_top(const struct heap *h) { return h->n ? h->a[0] : NULL; }

/* heap_free frees the array. */
void heap_free(struct heap *h);

#ifdef __cplusplus
}
#endif
#endif

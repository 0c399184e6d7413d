/* SPDX-License-Identifier: BSD-3-Clause */
/* slab: an allocator of small blocks (queued jobs with their data) without malloc's per-block
 * header and 16-byte rounding. Blocks are sized in steps of SLAB_STEP bytes, one class per size,
 * and carved from SLAB_PAGE-byte pages aligned to their size, so a block's page, and with it its
 * class, is found from its address alone: a block costs its size rounded up to SLAB_STEP, plus
 * its page's share of a small header. A page whose blocks are all freed gives its memory back to
 * the system (and is reused by any class) unless it is its class's last page with room. One allocator per process (the server is one
 * thread): not thread-safe. Pure, libc only. */
#ifndef SPUR_SLAB_H
#define SPUR_SLAB_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SLAB_STEP 8         /* block sizes are multiples of this (and blocks aligned to it) */
#define SLAB_MAX 1024       /* the largest block served; larger requests are the caller's */
#define SLAB_PAGE 65536     /* bytes in a page, which is aligned to this */

/* slab_alloc returns an uninitialised block of at least n bytes (1 <= n <= SLAB_MAX), aligned to
 * SLAB_STEP, or NULL when out of memory. O(1). */
void *slab_alloc(size_t n);

/* slab_free returns block p (from slab_alloc; NULL is ignored). O(1). */
void slab_free(void *p);

/* slab_pages is the number of pages in use by a class, for tests and gauges. */
size_t slab_pages(void);

#ifdef __cplusplus
}
#endif
#endif

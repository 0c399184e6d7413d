/* SPDX-License-Identifier: BSD-3-Clause */
/* slab: small blocks in size classes, carved from aligned pages. */
#include "slab.h"

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#if defined(__SANITIZE_ADDRESS__)
#define SLAB_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SLAB_ASAN 1
#endif
#endif
#ifdef SLAB_ASAN
#include <sanitizer/asan_interface.h>
/* under AddressSanitizer a free block (and a page's unused tail) is poisoned, so that a use
 * after free or an overflow into a neighbour is reported as with malloc */
#define POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n) ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#define CLASSES (SLAB_MAX / SLAB_STEP)

/* struct page heads each page; its blocks follow. */
struct page {
    struct page *prev, *next; /* its class's list of pages with room (rooms[]), if listed */
    void *free;               /* freed blocks, each holding the address of the next */
    uint32_t size;            /* the size of its blocks */
    uint32_t used;            /* blocks handed out and not freed */
    uint32_t bump;            /* offset of the first never-used block */
    uint32_t listed;          /* whether it is in its class's list */
};

/* FIRST is the offset of a page's first block. */
#define FIRST ((sizeof(struct page) + SLAB_STEP - 1) / SLAB_STEP * SLAB_STEP)

/* Pages come from chunks of SLAB_CHUNK bytes, never freed: a page that empties gives its memory
 * back to the system (MADV_DONTNEED) and waits on the spare list for any class. One malloc per
 * chunk, not per page: an aligned allocation that big is mmapped by malloc, and its own header
 * then costs one system page per chunk instead of per page. */
#define SLAB_CHUNK (32 * SLAB_PAGE)

static struct page *rooms[CLASSES]; /* per class: the pages with room, the newest first */
static size_t npages;               /* pages in use by a class */
static char *carve, *carve_end;     /* the pages of the newest chunk not handed out yet */
static struct page *spare;          /* emptied pages (linked through .next) */
static char **chunks;               /* every chunk allocated: they are kept for the process's
                                       life, and listed so that they stay reachable (a leak
                                       checker sees only pointers into them otherwise) */
static size_t nchunks, chunks_cap;  /* chunks listed; room in the list */

/* page_of returns the page holding block p. */
static struct page *page_of(const void *p)
{
    return (struct page *)((uintptr_t)p & ~(uintptr_t)(SLAB_PAGE - 1));
}

/* room_add lists pg in its class's pages with room; room_del unlists it. */
static void room_add(struct page *pg)
{
    struct page **head = &rooms[pg->size / SLAB_STEP - 1];
    pg->prev = NULL;
    pg->next = *head;
    if (*head != NULL)
        (*head)->prev = pg;
    *head = pg;
    pg->listed = 1;
}

static void room_del(struct page *pg)
{
    struct page **head = &rooms[pg->size / SLAB_STEP - 1];
    if (pg->prev != NULL)
        pg->prev->next = pg->next;
    else
        *head = pg->next;
    if (pg->next != NULL)
        pg->next->prev = pg->prev;
    pg->prev = pg->next = NULL;
    pg->listed = 0;
}

/* page_new allocates a page of blocks of size bytes and lists it; NULL when out of memory. */
static struct page *page_new(uint32_t size)
{
    struct page *pg = spare;
    if (pg != NULL) {
        UNPOISON(pg, sizeof *pg);
        spare = pg->next;
    } else {
        if (carve == carve_end) {
            if (nchunks == chunks_cap) {
                size_t cap = chunks_cap ? 2 * chunks_cap : 16;
                char **n = realloc(chunks, cap * sizeof *n);
                if (n == NULL)
                    return NULL;
                chunks = n;
                chunks_cap = cap;
            }
            carve = aligned_alloc(SLAB_PAGE, SLAB_CHUNK);
            if (carve == NULL)
                return NULL;
            chunks[nchunks++] = carve;
            carve_end = carve + SLAB_CHUNK;
        }
        pg = (struct page *)(void *)carve;
        carve += SLAB_PAGE;
    }
    pg->free = NULL;
    pg->size = size;
    pg->used = 0;
    pg->bump = (uint32_t)FIRST;
    POISON((char *)pg + FIRST, SLAB_PAGE - FIRST);
    room_add(pg);
    npages++;
    return pg;
}

/* full reports whether pg has no block left to hand out. */
static int full(const struct page *pg)
{
    return pg->free == NULL && pg->bump + pg->size > SLAB_PAGE;
}

void *slab_alloc(size_t n)
{
    assert(n >= 1 && n <= SLAB_MAX);
    uint32_t size = (uint32_t)((n + SLAB_STEP - 1) / SLAB_STEP * SLAB_STEP);
    struct page *pg = rooms[size / SLAB_STEP - 1];
    if (pg == NULL && (pg = page_new(size)) == NULL)
        return NULL;
    char *p;
    if (pg->free != NULL) {
        p = pg->free;
        UNPOISON(p, sizeof(void *));
        memcpy(&pg->free, p, sizeof(void *));
    } else {
        p = (char *)pg + pg->bump;
        pg->bump += size;
    }
    pg->used++;
    if (full(pg))
        room_del(pg);
    UNPOISON(p, n);
    return p;
}

void slab_free(void *p)
{
    if (p == NULL)
        return;
    struct page *pg = page_of(p);
    assert(pg->used > 0);
    UNPOISON(p, sizeof(void *));
    memcpy(p, &pg->free, sizeof(void *));
    POISON(p, pg->size);
    pg->free = p;
    pg->used--;
    if (!pg->listed)
        room_add(pg);
    /* an empty page goes, unless it is the last of its class with room */
    if (pg->used == 0 && (pg->prev != NULL || pg->next != NULL)) {
        room_del(pg);
        POISON(pg, SLAB_PAGE);
        madvise(pg, SLAB_PAGE, MADV_DONTNEED);
        UNPOISON(pg, sizeof *pg);
        pg->next = spare;
        POISON(pg, sizeof *pg);
        spare = pg;
        npages--;
    }
}

size_t slab_pages(void) { return npages; }

/* SPDX-License-Identifier: BSD-3-Clause */
/* heap: a binary min-heap of deadlines. */
#include "heap.h"

#include <stdlib.h>

static void place(struct heap *h, uint32_t i, struct heap_slot s)
{
    h->a[i] = s;
    *s.pos = i;
}

static void sift_up(struct heap *h, uint32_t i)
{
    struct heap_slot s = h->a[i];
    while (i > 0) {
        uint32_t parent = (i - 1) / 2;
        if (h->a[parent].at <= s.at)
            break;
        place(h, i, h->a[parent]);
        i = parent;
    }
    place(h, i, s);
}

static void sift_down(struct heap *h, uint32_t i)
{
    struct heap_slot s = h->a[i];
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && h->a[c + 1].at < h->a[c].at)
            c++;
        if (s.at <= h->a[c].at)
            break;
        place(h, i, h->a[c]);
        i = c;
    }
    place(h, i, s);
}

int heap_push(struct heap *h, uint32_t *pos, double at)
{
    if (h->n == h->cap) {
        uint32_t ncap = h->cap ? h->cap * 2 : 64;
        struct heap_slot *na = realloc(h->a, sizeof *na * ncap);
        if (na == NULL) {
            *pos = HEAP_NONE;
            return -1;
        }
        h->a = na;
        h->cap = ncap;
    }
    uint32_t i = h->n++;
    place(h, i, (struct heap_slot){at, pos});
    sift_up(h, i);
    return 0;
}

void heap_remove(struct heap *h, uint32_t *pos)
{
    uint32_t i = *pos;
    if (i == HEAP_NONE || i >= h->n || h->a[i].pos != pos)
        return;
    *pos = HEAP_NONE;
    h->n--;
    if (i == h->n)
        return;
    place(h, i, h->a[h->n]);
    if (i > 0 && h->a[i].at < h->a[(i - 1) / 2].at)
        sift_up(h, i);
    else
        sift_down(h, i);
}

void heap_free(struct heap *h)
{
    free(h->a);
    h->a = NULL;
    h->n = h->cap = 0;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* buf: a growable byte buffer with a read position. */
#include "buf.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* reserve makes room for n more bytes; a growing buffer doubles, or with exact gets just enough. */
static int reserve(struct buf *b, size_t n, int exact)
{
    if (b->cap - b->end >= n)
        return 0;
    size_t used = b->end - b->start;
    if (b->start > 0 && b->cap - used >= n) {
        memmove(b->data, b->data + b->start, used);
        b->start = 0;
        b->end = used;
        return 0;
    }
    if (n > ((size_t)-1) / 2 - used)
        return -1;
    size_t want = used + n;
    size_t cap;
    if (exact) {
        cap = (want + 63) & ~(size_t)63;
    } else {
        cap = b->cap ? b->cap : 256;
        while (cap < want)
            cap *= 2;
    }
    char *p = malloc(cap);
    if (p == NULL)
        return -1;
    if (used > 0)
        memcpy(p, b->data + b->start, used);
    free(b->data);
    b->data = p;
    b->start = 0;
    b->end = used;
    b->cap = cap;
    return 0;
}

int buf_reserve(struct buf *b, size_t n)
{
    return reserve(b, n, 0);
}

int buf_reserve_exact(struct buf *b, size_t n)
{
    return reserve(b, n, 1);
}

int buf_append(struct buf *b, const void *p, size_t n)
{
    if (buf_reserve(b, n) != 0)
        return -1;
    if (n > 0)
        memcpy(b->data + b->end, p, n);
    b->end += n;
    return 0;
}

void buf_consume(struct buf *b, size_t n)
{
    b->start += n;
    if (b->start == b->end)
        b->start = b->end = 0;
}

void buf_free(struct buf *b)
{
    free(b->data);
    b->data = NULL;
    b->start = b->end = b->cap = 0;
}

void buf_shrink(struct buf *b)
{
    if (b->start == b->end)
        buf_free(b);
}

int array_grow(void **arr, size_t *cap, size_t need, size_t size, size_t first)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : first;
    while (n < need) {
        if (n > SIZE_MAX / 2)
            return -1;
        n *= 2;
    }
    if (n > SIZE_MAX / size)
        return -1;
    void *p = realloc(*arr, n * size);
    if (p == NULL)
        return -1;
    *arr = p;
    *cap = n;
    return 0;
}

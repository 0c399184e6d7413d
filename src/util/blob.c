/* SPDX-License-Identifier: BSD-3-Clause */
/* blob: a reference-counted byte string. */
#include "blob.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "slab.h"

struct blob *blob_new(size_t cap)
{
    if (cap > UINT32_MAX)
        return NULL;
    struct blob *b = malloc(sizeof *b + cap);
    if (b == NULL)
        return NULL;
    b->refs = 1;
    b->len = 0;
    b->cap = (uint32_t)cap;
    b->base = 0;
    return b;
}

struct blob *blob_from(const void *p, size_t n)
{
    struct blob *b = blob_new(n);
    if (b == NULL)
        return NULL;
    if (n > 0)
        memcpy(b->data, p, n);
    b->len = (uint32_t)n;
    return b;
}

void blob_unref(struct blob *b)
{
    if (b == NULL)
        return;
    assert(b->refs > 0);
    if (--b->refs != 0)
        return;
    if (b->base & BLOB_SLAB)
        slab_free((char *)b - (b->base & ~BLOB_SLAB));
    else
        free((char *)b - b->base);
}

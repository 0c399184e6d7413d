/* SPDX-License-Identifier: BSD-3-Clause */
/* blob: a reference-counted byte string. */
#include "blob.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "slab.h"

_Static_assert(sizeof(struct blob) == 8, "a blob header is 8 bytes");

struct blob *blob_new(size_t cap)
{
    if (cap > UINT32_MAX)
        return NULL;
    char *m = malloc(8 + sizeof(struct blob) + cap); /* the capacity word, then the header */
    if (m == NULL)
        return NULL;
    uint32_t c = (uint32_t)cap;
    memcpy(m, &c, sizeof c);
    struct blob *b = (struct blob *)(void *)(m + 8);
    blob_embed(b, 8, 0);
    b->own = 1;
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
    char *m = (char *)b - (size_t)b->base * 8;
    if (b->slab)
        slab_free(m);
    else
        free(m);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* blob: a reference-counted byte string, so a job payload is stored once and shared by every
 * write that sends it. Pure; single-threaded (no atomics). */
#ifndef SPUR_BLOB_H
#define SPUR_BLOB_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* struct blob is a header followed by its bytes. */
struct blob {
    uint32_t refs; /* owners; freed when it drops to 0 */
    uint32_t len;  /* bytes in use */
    uint32_t cap;  /* bytes allocated after the header */
    uint32_t base; /* offset of the header from the start of its allocation (0 unless embedded),
                      with BLOB_SLAB set when the allocation came from slab_alloc */
    char data[];   /* the bytes */
};

/* BLOB_SLAB in blob.base: the allocation is freed with slab_free (slab.h), not free. */
#define BLOB_SLAB 0x80000000u

/* blob_new allocates a blob with room for cap bytes, len 0 and one reference; NULL on failure. */
struct blob *blob_new(size_t cap);

/* blob_from copies n bytes into a new blob (len n, one reference); NULL on failure. */
struct blob *blob_from(const void *p, size_t n);

/* blob_embed initialises a blob header placed base bytes into a larger allocation; the whole
 * allocation is freed when the last reference goes (base | BLOB_SLAB: with slab_free). */
static inline void blob_embed(struct blob *b, uint32_t base, uint32_t cap)
{
    b->refs = 1;
    b->len = 0;
    b->cap = cap;
    b->base = base;
}

/* blob_ref adds a reference and returns b. */
static inline struct blob *blob_ref(struct blob *b)
{
    b->refs++;
    return b;
}

/* blob_unref drops a reference and frees b (its whole allocation) when none are left. NULL is
 * ignored. */
void blob_unref(struct blob *b);

#ifdef __cplusplus
}
#endif
#endif

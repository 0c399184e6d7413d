/* SPDX-License-Identifier: BSD-3-Clause */
/* blob: a reference-counted byte string, so a job payload is stored once and shared by every
 * write that sends it. Pure; single-threaded (no atomics). */
#ifndef SPUR_BLOB_H
#define SPUR_BLOB_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* struct blob is an 8-byte header followed by its bytes. A blob of its own (blob_new) has its
 * capacity in the 8 bytes before the header (blob_cap); a blob embedded in a larger allocation
 * (a job's) has none: nothing is appended to it. */
struct blob {
    uint32_t refs : 24; /* owners; freed when it drops to 0 (at most BLOB_REFS_MAX) */
    uint32_t base : 6;  /* the header's offset from the start of its allocation, in 8-byte
                           units (1 for a blob of its own: its capacity word) */
    uint32_t slab : 1;  /* the allocation came from slab_alloc (slab.h), not malloc */
    uint32_t own : 1;   /* a blob of its own (blob_new), with a capacity */
    uint32_t len;       /* bytes in use */
    char data[];        /* the bytes */
};

#define BLOB_REFS_MAX 0xffffffu /* owners a blob can have */
#define BLOB_BASE_MAX 504       /* the largest offset of an embedded header */

/* blob_new allocates a blob with room for cap bytes, len 0 and one reference; NULL on failure. */
struct blob *blob_new(size_t cap);

/* blob_from copies n bytes into a new blob (len n, one reference); NULL on failure. */
struct blob *blob_from(const void *p, size_t n);

/* blob_embed initialises a blob header placed base bytes (a multiple of 8, at most
 * BLOB_BASE_MAX) into a larger allocation, len 0, one reference; the whole allocation is freed
 * when the last reference goes (slab: with slab_free, else free). */
static inline void blob_embed(struct blob *b, size_t base, int slab)
{
    b->refs = 1;
    b->base = (uint32_t)(base / 8) & 0x3f;
    b->slab = slab != 0;
    b->own = 0;
    b->len = 0;
}

/* blob_cap is how many bytes fit after b's header: its capacity for a blob of its own, its
 * length for an embedded one (no room to append). */
static inline uint32_t blob_cap(const struct blob *b)
{
    return b->own ? *(const uint32_t *)(const void *)((const char *)b - 8) : b->len;
}

/* blob_ref adds a reference and returns b (b has fewer than BLOB_REFS_MAX: each is a write or
 * a record in memory). */
static inline struct blob *blob_ref(struct blob *b)
{
    assert(b->refs < BLOB_REFS_MAX);
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

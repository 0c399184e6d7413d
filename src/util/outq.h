/* SPDX-License-Identifier: BSD-3-Clause */
/* outq: a connection's output queue: segments of reference-counted blobs, written with writev.
 * Replies only append here; the server flushes once per loop iteration. Pure (no I/O). */
#ifndef SPUR_OUTQ_H
#define SPUR_OUTQ_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "blob.h"

#ifdef __cplusplus
extern "C" {
#endif

#define OUTQ_INLINE_SEGS 2     /* segments held without a separate allocation */
#define OUTQ_CHUNK 4096        /* size of the blobs that small replies are copied into */
#define OUTQ_SHARE_MIN 1024    /* shared ranges shorter than this are copied instead */

/* struct oseg is one range of a blob waiting to be written. */
struct oseg {
    struct blob *b; /* one reference held by the queue */
    uint32_t off;   /* first unwritten byte in b->data */
    uint32_t len;   /* unwritten bytes */
};

/* struct outq is a FIFO of segments. Zero-initialised is empty. */
struct outq {
    struct oseg *seg;                      /* ring storage: inl or a heap array */
    struct oseg inl[OUTQ_INLINE_SEGS];     /* inline storage for the common case */
    uint32_t head;                         /* index of the first segment */
    uint32_t count;                        /* segments in use */
    uint32_t cap;                          /* capacity of seg */
    size_t bytes;                          /* unwritten bytes in all segments */
    uint64_t popped;                       /* segments ever written and dropped: with it a
                                              slot ticket (outq_put_slot) finds its segment */
};

/* outq_put copies n bytes to the end of the queue. Returns 0, or -1 when out of memory. */
int outq_put(struct outq *q, const void *p, size_t n);

/* outq_put_ref queues bytes [off, off+len) of b, taking a reference instead of copying when the
 * range is large. Returns 0, or -1 when out of memory. */
int outq_put_ref(struct outq *q, struct blob *b, size_t off, size_t len);

/* outq_put_slot queues n bytes as a segment of their own that may later be replaced. *ticket
 * names the caller's previous slot (0 for none) and receives the new one. When that previous
 * slot is still queued and none of it was written, it is dropped first: overwritten in place
 * when it is the last segment and the new bytes fit, else emptied (its place stays, zero bytes
 * long, until the queue reaches it), so what follows it keeps its order. Returns 1 when an unsent slot was dropped, 0 when not, -1 when out of memory
 * (the queue then holds neither the old nor the new bytes of the slot). */
int outq_put_slot(struct outq *q, const void *p, size_t n, uint64_t *ticket);

/* outq_iov fills up to max iovecs with the queued bytes, oldest first. Returns the count. */
int outq_iov(const struct outq *q, struct iovec *iov, int max);

/* outq_consume drops n written bytes from the front (n <= bytes). */
void outq_consume(struct outq *q, size_t n);

/* outq_clear drops everything and frees all memory the queue holds. */
void outq_clear(struct outq *q);

/* outq_pending returns the unwritten byte count. */
static inline size_t outq_pending(const struct outq *q) { return q->bytes; }

#ifdef __cplusplus
}
#endif
#endif

/* SPDX-License-Identifier: BSD-3-Clause */
/* buf: a growable byte buffer with a read position, for connection input. Pure. */
#ifndef SPUR_BUF_H
#define SPUR_BUF_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* struct buf holds bytes data[start..end) in an allocation of cap bytes. Zero-initialised is empty. */
struct buf {
    char *data;   /* owned allocation, NULL when cap is 0 */
    size_t start; /* first unread byte */
    size_t end;   /* one past the last byte */
    size_t cap;   /* size of data */
};

/* buf_len returns the number of unread bytes. */
static inline size_t buf_len(const struct buf *b) { return b->end - b->start; }

/* buf_head returns a pointer to the first unread byte (borrowed, valid until the buffer changes). */
static inline char *buf_head(const struct buf *b) { return b->data + b->start; }

/* buf_reserve makes room for at least n more bytes after end, moving unread bytes to the front
 * or growing the allocation. Returns 0, or -1 when out of memory (the buffer is unchanged). */
int buf_reserve(struct buf *b, size_t n);

/* buf_reserve_exact is buf_reserve, but a buffer that must grow gets exactly the room asked
 * for (rounded up to 64 bytes), not a power of two: for a partial packet whose size is known. */
int buf_reserve_exact(struct buf *b, size_t n);

/* buf_tail returns where the next byte goes; buf_reserve first. */
static inline char *buf_tail(const struct buf *b) { return b->data + b->end; }

/* buf_commit marks n bytes written at buf_tail as part of the buffer. */
static inline void buf_commit(struct buf *b, size_t n) { b->end += n; }

/* buf_append copies n bytes to the end. Returns 0 or -1 when out of memory. */
int buf_append(struct buf *b, const void *p, size_t n);

/* buf_consume drops n unread bytes from the front (n <= buf_len). */
void buf_consume(struct buf *b, size_t n);

/* buf_free releases the allocation and leaves the buffer empty. */
void buf_free(struct buf *b);

/* buf_shrink frees the allocation when the buffer is empty, so an idle owner holds no memory. */
void buf_shrink(struct buf *b);

/* array_grow makes the array *arr (elements of size bytes, *cap allocated) hold at least need
 * elements: the capacity doubles from first. Returns 0, or -1 when out of memory or on overflow
 * (the array is unchanged). */
int array_grow(void **arr, size_t *cap, size_t need, size_t size, size_t first);

#ifdef __cplusplus
}
#endif
#endif

/* SPDX-License-Identifier: BSD-3-Clause */
/* outq: a connection's output queue of blob segments. */
#include "outq.h"

#include <stdlib.h>
#include <string.h>

static struct oseg *seg_at(const struct outq *q, uint32_t i)
{
    return &q->seg[(q->head + i) % q->cap];
}

/* push_seg appends a segment, growing the ring. Returns 0 or -1. */
static int push_seg(struct outq *q, struct blob *b, uint32_t off, uint32_t len)
{
    if (q->cap == 0) {
        q->seg = q->inl;
        q->cap = OUTQ_INLINE_SEGS;
        q->head = 0;
    }
    if (q->count == q->cap) {
        uint32_t ncap = q->cap * 2;
        struct oseg *ns = malloc(sizeof *ns * ncap);
        if (ns == NULL)
            return -1;
        for (uint32_t i = 0; i < q->count; i++)
            ns[i] = *seg_at(q, i);
        if (q->seg != q->inl)
            free(q->seg);
        q->seg = ns;
        q->cap = ncap;
        q->head = 0;
    }
    *seg_at(q, q->count) = (struct oseg){b, off, len};
    q->count++;
    q->bytes += len;
    return 0;
}

int outq_put(struct outq *q, const void *p, size_t n)
{
    if (n == 0)
        return 0;
    if (q->count > 0) {
        struct oseg *t = seg_at(q, q->count - 1);
        struct blob *b = t->b;
        /* append in place when the tail blob is ours alone and its free space follows the segment */
        if (b != NULL && b->refs == 1 && t->off + t->len == b->len && blob_cap(b) - b->len >= n) {
            memcpy(b->data + b->len, p, n);
            b->len += (uint32_t)n;
            t->len += (uint32_t)n;
            q->bytes += n;
            return 0;
        }
    }
    size_t cap = n > OUTQ_CHUNK ? n : OUTQ_CHUNK;
    struct blob *b = blob_new(cap);
    if (b == NULL)
        return -1;
    memcpy(b->data, p, n);
    b->len = (uint32_t)n;
    if (push_seg(q, b, 0, (uint32_t)n) != 0) {
        blob_unref(b);
        return -1;
    }
    return 0;
}

int outq_put_ref(struct outq *q, struct blob *b, size_t off, size_t len)
{
    if (len < OUTQ_SHARE_MIN)
        return outq_put(q, b->data + off, len);
    if (push_seg(q, blob_ref(b), (uint32_t)off, (uint32_t)len) != 0) {
        blob_unref(b);
        return -1;
    }
    return 0;
}

/* SLOT_MIN is the smallest blob a slot gets, so a slightly longer replacement fits in place. */
#define SLOT_MIN 64

int outq_put_slot(struct outq *q, const void *p, size_t n, uint64_t *ticket)
{
    struct oseg *old = NULL;
    if (*ticket > q->popped && *ticket - q->popped <= q->count) {
        old = seg_at(q, (uint32_t)(*ticket - q->popped - 1));
        if (old->off != 0 || old->b == NULL)
            old = NULL; /* partly written (or already emptied): it stays */
    }
    if (old != NULL && old == seg_at(q, q->count - 1) && old->b->refs == 1 && blob_cap(old->b) >= n) {
        /* the last segment, and the new bytes fit: overwrite it */
        memcpy(old->b->data, p, n);
        q->bytes = q->bytes - old->len + n;
        old->len = (uint32_t)n;
        return 1;
    }
    if (old != NULL) {
        /* not the last: empty it where it is, so what follows keeps its order */
        q->bytes -= old->len;
        blob_unref(old->b);
        old->b = NULL;
        old->len = 0;
    }
    *ticket = 0;
    struct blob *b = blob_new(n > SLOT_MIN ? n : SLOT_MIN);
    if (b == NULL)
        return -1;
    memcpy(b->data, p, n);
    b->len = blob_cap(b); /* looks full, so outq_put never appends behind a slot */
    if (push_seg(q, b, 0, (uint32_t)n) != 0) {
        blob_unref(b);
        return -1;
    }
    *ticket = q->popped + q->count;
    return old != NULL;
}

int outq_iov(const struct outq *q, struct iovec *iov, int max)
{
    int n = 0;
    for (uint32_t i = 0; i < q->count && n < max; i++) {
        const struct oseg *s = seg_at(q, i);
        if (s->len == 0)
            continue; /* an emptied slot */
        iov[n].iov_base = s->b->data + s->off;
        iov[n].iov_len = s->len;
        n++;
    }
    return n;
}

void outq_consume(struct outq *q, size_t n)
{
    q->bytes -= n;
    while (n > 0) {
        struct oseg *s = seg_at(q, 0);
        if (n < s->len) {
            s->off += (uint32_t)n;
            s->len -= (uint32_t)n;
            return;
        }
        n -= s->len;
        blob_unref(s->b);
        q->head = (q->head + 1) % q->cap;
        q->count--;
        q->popped++;
    }
    while (q->count > 0 && seg_at(q, 0)->len == 0) {
        /* emptied slots at the front have nothing left to write */
        blob_unref(seg_at(q, 0)->b);
        q->head = (q->head + 1) % q->cap;
        q->count--;
        q->popped++;
    }
    if (q->count == 0) {
        /* an idle connection keeps no heap memory for its queue */
        if (q->seg != q->inl)
            free(q->seg);
        q->seg = NULL;
        q->cap = 0;
        q->head = 0;
    }
}

void outq_clear(struct outq *q)
{
    q->popped += q->count; /* so an old slot ticket never names a new segment */
    for (uint32_t i = 0; i < q->count; i++)
        blob_unref(seg_at(q, i)->b);
    if (q->seg != q->inl)
        free(q->seg);
    q->seg = NULL;
    q->cap = q->count = q->head = 0;
    q->bytes = 0;
}

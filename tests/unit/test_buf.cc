/* SPDX-License-Identifier: BSD-3-Clause */
// Unit tests for the input buffer, reference-counted blobs and the output queue.
#include <gtest/gtest.h>

#include <string>

extern "C" {
#include "blob.h"
#include "buf.h"
#include "outq.h"
}

TEST(Buf, AppendConsumeCompact)
{
    buf b = {};
    ASSERT_EQ(buf_append(&b, "hello world", 11), 0);
    EXPECT_EQ(buf_len(&b), 11u);
    buf_consume(&b, 6);
    EXPECT_EQ(std::string(buf_head(&b), buf_len(&b)), "world");
    size_t cap = b.cap;
    ASSERT_EQ(buf_reserve(&b, cap - 5), 0) << "room made by moving unread bytes to the front";
    EXPECT_EQ(b.cap, cap);
    EXPECT_EQ(std::string(buf_head(&b), 5), "world");
    buf_consume(&b, 5);
    buf_shrink(&b);
    EXPECT_EQ(b.data, nullptr) << "an empty buffer keeps no memory";
    buf_free(&b);
}

TEST(Buf, GrowsForLargeData)
{
    buf b = {};
    std::string big(100000, 'x');
    ASSERT_EQ(buf_append(&b, big.data(), big.size()), 0);
    ASSERT_EQ(buf_append(&b, "y", 1), 0);
    EXPECT_EQ(buf_len(&b), 100001u);
    EXPECT_EQ(buf_head(&b)[100000], 'y');
    buf_free(&b);
}

TEST(Blob, RefCounting)
{
    blob *b = blob_from("abc", 3);
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(b->refs, 1u);
    blob_ref(b);
    EXPECT_EQ(b->refs, 2u);
    blob_unref(b);
    EXPECT_EQ(b->refs, 1u);
    blob_unref(b); // freed; ASan reports a leak or double free if this is wrong
    blob_unref(nullptr);
}

TEST(Blob, HeaderIsEightBytesAndAnOwnBlobKnowsItsCapacity)
{
    EXPECT_EQ(sizeof(struct blob), 8u);
    blob *b = blob_new(100);
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(blob_cap(b), 100u);
    EXPECT_EQ(b->len, 0u);
    EXPECT_EQ(b->refs, 1u);
    memset(b->data, 'x', 100); /* the whole capacity is usable (ASan checks) */
    blob_unref(b);
    /* an embedded header frees its whole allocation, and has no room to append */
    char *m = static_cast<char *>(malloc(40 + sizeof(struct blob) + 5));
    ASSERT_NE(m, nullptr);
    auto *e = reinterpret_cast<struct blob *>(m + 40);
    blob_embed(e, 40, 0);
    memcpy(e->data, "hello", 5);
    e->len = 5;
    EXPECT_EQ(blob_cap(e), 5u);
    blob_unref(e); /* (ASan: a wrong free or a leak) */
}

static std::string drain(outq *q)
{
    std::string out;
    iovec iov[64];
    int n = outq_iov(q, iov, 64);
    for (int i = 0; i < n; i++)
        out.append((char *)iov[i].iov_base, iov[i].iov_len);
    return out;
}

TEST(Outq, SmallPutsCoalesceIntoOneSegment)
{
    outq q = {};
    for (int i = 0; i < 100; i++)
        ASSERT_EQ(outq_put(&q, "ab", 2), 0);
    EXPECT_EQ(q.count, 1u);
    EXPECT_EQ(outq_pending(&q), 200u);
    outq_consume(&q, 150);
    std::string rest;
    for (int i = 0; i < 25; i++)
        rest += "ab";
    EXPECT_EQ(drain(&q), rest);
    outq_clear(&q);
}

TEST(Outq, LargeRangeIsSharedNotCopied)
{
    outq q = {};
    std::string payload(OUTQ_SHARE_MIN * 4, 'p');
    blob *b = blob_from(payload.data(), payload.size());
    ASSERT_EQ(outq_put(&q, "hdr", 3), 0);
    ASSERT_EQ(outq_put_ref(&q, b, 10, payload.size() - 10), 0);
    EXPECT_EQ(b->refs, 2u) << "the queue holds a reference";
    ASSERT_EQ(outq_put(&q, "tail", 4), 0);
    EXPECT_EQ(q.count, 3u) << "a new segment after a shared one, never writing into it";
    EXPECT_EQ(drain(&q), "hdr" + payload.substr(10) + "tail");
    outq_consume(&q, outq_pending(&q));
    EXPECT_EQ(b->refs, 1u);
    EXPECT_EQ(q.seg, nullptr) << "an empty queue frees its ring";
    blob_unref(b);
}

TEST(Outq, SmallRangeIsCopied)
{
    outq q = {};
    blob *b = blob_from("tiny", 4);
    ASSERT_EQ(outq_put_ref(&q, b, 0, 4), 0);
    EXPECT_EQ(b->refs, 1u);
    blob_unref(b);
    EXPECT_EQ(drain(&q), "tiny");
    outq_clear(&q);
}

TEST(Outq, ManySegmentsGrowTheRingAndPartialConsume)
{
    outq q = {};
    std::string payload(OUTQ_SHARE_MIN, 'z');
    blob *b = blob_from(payload.data(), payload.size());
    std::string want;
    for (int i = 0; i < 50; i++) {
        ASSERT_EQ(outq_put_ref(&q, b, 0, payload.size()), 0);
        ASSERT_EQ(outq_put(&q, "|", 1), 0);
        want += payload + "|";
    }
    EXPECT_EQ(q.count, 100u);
    outq_consume(&q, payload.size() / 2);
    want.erase(0, payload.size() / 2);
    std::string got;
    while (outq_pending(&q) > 0) {
        iovec iov[7];
        int n = outq_iov(&q, iov, 7);
        size_t k = 0;
        for (int i = 0; i < n; i++) {
            got.append((char *)iov[i].iov_base, iov[i].iov_len);
            k += iov[i].iov_len;
        }
        outq_consume(&q, k);
    }
    EXPECT_EQ(got, want);
    EXPECT_EQ(b->refs, 1u);
    blob_unref(b);
    outq_clear(&q);
}

TEST(ArrayGrow, DoublesFromFirstAndRefusesOverflow)
{
    int *a = nullptr;
    size_t cap = 0;
    ASSERT_EQ(array_grow((void **)&a, &cap, 1, sizeof *a, 8), 0);
    EXPECT_EQ(cap, 8u);
    a[7] = 7;
    ASSERT_EQ(array_grow((void **)&a, &cap, 8, sizeof *a, 8), 0);
    EXPECT_EQ(cap, 8u) << "room enough: unchanged";
    ASSERT_EQ(array_grow((void **)&a, &cap, 20, sizeof *a, 8), 0);
    EXPECT_EQ(cap, 32u);
    EXPECT_EQ(a[7], 7) << "kept across the move";
    int *before = a;
    EXPECT_EQ(array_grow((void **)&a, &cap, SIZE_MAX / 2, sizeof *a, 8), -1);
    EXPECT_EQ(a, before);
    EXPECT_EQ(cap, 32u) << "unchanged after a refusal";
    free(a);
}

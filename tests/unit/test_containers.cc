/* SPDX-License-Identifier: BSD-3-Clause */
// Unit tests for the intrusive hash table and the deadline heap.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

extern "C" {
#include "heap.h"
#include "hmap.h"
#include "list.h"
}

namespace {
struct Item {
    hnode node;
    uint64_t key;
};
uint64_t item_hash(const hnode *n, const void *) { return hmap_mix64(((const Item *)n)->key); }
Item *find(hmap *m, uint64_t key)
{
    for (hnode *n = hmap_chain(m, hmap_mix64(key)); n; n = n->next)
        if (((Item *)n)->key == key)
            return (Item *)n;
    return nullptr;
}
struct Timed {
    uint32_t pos;
};
} // namespace

// Growth is incremental: the insert that doubles the table does not rehash every node (that held
// the loop for tens of milliseconds at a million jobs); the old chains move a few per operation,
// and every node stays findable meanwhile.
TEST(Hmap, GrowthMovesChainsAFewAtATime)
{
    hmap m;
    hmap_init(&m, item_hash, nullptr);
    std::vector<Item> items(1 << 16);
    for (size_t i = 0; i < items.size(); i++) {
        items[i].key = i * 7919 + 1;
        ASSERT_EQ(hmap_insert(&m, &items[i].node, hmap_mix64(items[i].key)), 0);
    }
    ASSERT_EQ(m.nbuckets, (size_t)1 << 16);
    Item extra;
    extra.key = 3;
    ASSERT_EQ(hmap_insert(&m, &extra.node, hmap_mix64(extra.key)), 0); // doubles the table
    EXPECT_EQ(m.nbuckets, (size_t)1 << 17);
    ASSERT_NE(m.old, nullptr) << "the old chains are still to be moved";
    size_t left = 0;
    for (size_t i = m.moved; i < m.oldn; i++)
        left += m.old[i] != nullptr;
    EXPECT_GT(left, (size_t)30000) << "the growing insert moved only a few chains (about 41000 are not empty)";
    for (size_t i = 0; i < items.size(); i += 97)
        ASSERT_EQ(find(&m, items[i].key), &items[i]);
    EXPECT_EQ(find(&m, 3), &extra);
    hmap_remove(&m, &extra.node, hmap_mix64(extra.key));
    hmap_settle(&m);
    EXPECT_EQ(m.old, nullptr);
    size_t n = 0;
    for (size_t i = 0; i < m.nbuckets; i++)
        for (hnode *x = m.buckets[i]; x != nullptr; x = x->next)
            n++;
    EXPECT_EQ(n, items.size());
    hmap_free(&m);
}

TEST(Hmap, InsertFindRemoveAcrossGrowth)
{
    hmap m;
    hmap_init(&m, item_hash, nullptr);
    std::vector<Item> items(5000);
    for (size_t i = 0; i < items.size(); i++) {
        items[i].key = i * 7919;
        ASSERT_EQ(hmap_insert(&m, &items[i].node, hmap_mix64(items[i].key)), 0);
    }
    EXPECT_EQ(m.count, 5000u);
    EXPECT_GE(m.nbuckets, 4096u);
    for (size_t i = 0; i < items.size(); i++)
        ASSERT_EQ(find(&m, i * 7919), &items[i]);
    EXPECT_EQ(find(&m, 1), nullptr);
    for (size_t i = 0; i < items.size(); i += 2)
        hmap_remove(&m, &items[i].node, hmap_mix64(items[i].key));
    EXPECT_EQ(m.count, 2500u);
    for (size_t i = 0; i < items.size(); i++)
        EXPECT_EQ(find(&m, i * 7919) != nullptr, i % 2 == 1) << i;
    hmap_free(&m);
}

TEST(Hmap, EmptyTableLookupsAreSafe)
{
    hmap m;
    hmap_init(&m, item_hash, nullptr);
    EXPECT_EQ(hmap_chain(&m, 42), nullptr);
    hmap_free(&m);
}

TEST(Hmap, HashBytesDependsOnSeedAndContent)
{
    EXPECT_EQ(hmap_hash_bytes("abc", 3, 1), hmap_hash_bytes("abc", 3, 1));
    EXPECT_NE(hmap_hash_bytes("abc", 3, 1), hmap_hash_bytes("abd", 3, 1));
    EXPECT_NE(hmap_hash_bytes("abc", 3, 1), hmap_hash_bytes("abc", 3, 2));
}

TEST(Heap, PopsInDeadlineOrderWithRemovals)
{
    heap h = {};
    std::vector<Timed> t(1000);
    std::mt19937 rng(7);
    for (auto &x : t) {
        x.pos = HEAP_NONE;
        ASSERT_EQ(heap_push(&h, &x.pos, (double)(rng() % 100000)), 0);
    }
    for (size_t i = 0; i < t.size(); i += 3)
        heap_remove(&h, &t[i].pos);
    for (size_t i = 0; i < t.size(); i += 3)
        EXPECT_EQ(t[i].pos, HEAP_NONE);
    std::vector<double> got;
    double at;
    while (uint32_t *top = heap_top(&h, &at)) {
        EXPECT_EQ(h.a[*top].pos, top);
        got.push_back(at);
        heap_remove(&h, top);
    }
    EXPECT_EQ(got.size(), 1000u - 334u);
    EXPECT_TRUE(std::is_sorted(got.begin(), got.end()));
    heap_remove(&h, &t[1].pos); // removing an absent entry is a no-op
    heap_free(&h);
}

// The iterator returns every node once, also while a growth is still moving old chains, and the
// node just returned may be removed (as teardown does).
TEST(Hmap, IteratorVisitsEveryNodeOnceAndAllowsRemovingIt)
{
    hmap m;
    hmap_init(&m, item_hash, nullptr);
    std::vector<Item> items(1025); // the last insert doubles the table
    for (size_t i = 0; i < items.size(); i++) {
        items[i].key = i;
        ASSERT_EQ(hmap_insert(&m, &items[i].node, hmap_mix64(i)), 0);
    }
    ASSERT_NE(m.old, nullptr) << "the last growth should still be in progress";
    std::vector<int> seen(items.size());
    hmap_iter it;
    hmap_iter_init(&it, &m);
    size_t n = 0;
    for (hnode *h; (h = hmap_iter_next(&it)) != nullptr; n++) {
        Item *item = (Item *)h;
        seen[item->key]++;
        if (item->key % 2 == 0)
            hmap_remove(&m, h, hmap_mix64(item->key));
    }
    EXPECT_EQ(n, items.size());
    EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), (long)items.size());
    EXPECT_EQ(m.count, items.size() / 2);
    hmap_iter_init(&it, &m);
    n = 0;
    while (hmap_iter_next(&it) != nullptr)
        n++;
    EXPECT_EQ(n, items.size() / 2);
    hmap_free(&m);
    hmap empty;
    hmap_init(&empty, item_hash, nullptr);
    hmap_iter_init(&it, &empty);
    EXPECT_EQ(hmap_iter_next(&it), nullptr);
}

namespace {
struct Linked {
    int v;
    list_node link;
};
std::vector<int> values(list_node *head)
{
    std::vector<int> out;
    list_for_each(it, head) out.push_back(container_of(it, Linked, link)->v);
    return out;
}
} // namespace

TEST(List, PushDeleteRotateAndWalk)
{
    list_node head;
    list_node_init(&head);
    EXPECT_TRUE(list_empty(&head));
    EXPECT_EQ(list_first(&head), nullptr);
    EXPECT_EQ(list_last(&head), nullptr);
    Linked a{1, {}}, b{2, {}}, c{3, {}};
    list_node_init(&a.link);
    EXPECT_FALSE(list_linked(&a.link));
    list_push_back(&head, &a.link);
    list_push_back(&head, &b.link);
    list_push_front(&head, &c.link);
    EXPECT_TRUE(list_linked(&a.link));
    EXPECT_EQ(values(&head), (std::vector<int>{3, 1, 2}));
    EXPECT_EQ(list_first(&head), &c.link);
    EXPECT_EQ(list_last(&head), &b.link);
    EXPECT_EQ(list_next(&head, &a.link), &b.link);
    EXPECT_EQ(list_next(&head, &b.link), nullptr);
    list_rotate(&head);
    EXPECT_EQ(values(&head), (std::vector<int>{1, 2, 3}));
    list_del(&b.link);
    EXPECT_FALSE(list_linked(&b.link));
    list_del(&b.link); // harmless on an unlinked node
    EXPECT_EQ(values(&head), (std::vector<int>{1, 3}));
    list_for_each_safe(it, tmp, &head) list_del(it);
    EXPECT_TRUE(list_empty(&head));
    list_push_back(&head, &b.link);
    list_rotate(&head); // one node: unchanged
    EXPECT_EQ(values(&head), (std::vector<int>{2}));
}

TEST(List, SpliceBackMovesEveryNodeInOrder)
{
    list_node head, from;
    list_node_init(&head);
    list_node_init(&from);
    Linked a{1, {}}, b{2, {}}, c{3, {}};
    list_splice_back(&head, &from); // empty onto empty
    EXPECT_TRUE(list_empty(&head));
    list_push_back(&from, &a.link);
    list_splice_back(&head, &from); // onto an empty list
    EXPECT_EQ(values(&head), (std::vector<int>{1}));
    EXPECT_TRUE(list_empty(&from));
    list_push_back(&from, &b.link);
    list_push_back(&from, &c.link);
    list_splice_back(&head, &from);
    EXPECT_EQ(values(&head), (std::vector<int>{1, 2, 3}));
    EXPECT_TRUE(list_empty(&from));
    EXPECT_EQ(list_last(&head), &c.link);
    EXPECT_EQ(c.link.next, &head);
    list_splice_back(&from, &head); // the whole list back
    EXPECT_EQ(values(&from), (std::vector<int>{1, 2, 3}));
    EXPECT_TRUE(list_empty(&head));
}

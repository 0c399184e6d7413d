/* SPDX-License-Identifier: BSD-3-Clause */
// Unit tests for the hash table, the deadline heap, the lists and the slab allocator.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

extern "C" {
#include "blob.h"
#include "heap.h"
#include "hmap.h"
#include "idtab.h"
#include "list.h"
#include "meta_text.h"
#include "slab.h"
}

namespace {
struct Item {
    uint64_t key;
};
Item *find(const hmap *m, uint64_t key)
{
    hmap_probe p;
    for (void *o = hmap_first(m, hmap_mix64(key), &p); o; o = hmap_next(&p))
        if (((Item *)o)->key == key)
            return (Item *)o;
    return nullptr;
}
size_t walk(const hmap *m)
{
    hmap_iter it;
    hmap_iter_init(&it, m);
    size_t n = 0;
    while (hmap_iter_next(&it) != nullptr)
        n++;
    return n;
}
struct Timed {
    uint32_t pos;
};
} // namespace

// A rebuild is incremental: the insert that finds the table 3/4 full does not move every slot
// (that held the loop for tens of milliseconds at a million jobs); the old slots move a few per
// operation, and every object stays findable meanwhile.
TEST(Hmap, RebuildMovesSlotsAFewAtATime)
{
    hmap m;
    hmap_init(&m);
    std::vector<Item> items(1 << 16);
    size_t i = 0;
    for (; i < items.size() && (i < 1000 || m.old == nullptr); i++) {
        items[i].key = i * 7919 + 1;
        ASSERT_EQ(hmap_insert(&m, &items[i], hmap_mix64(items[i].key)), 0);
    }
    ASSERT_NE(m.old, nullptr) << "an insert started a rebuild";
    ASSERT_GT(i, (size_t)1000);
    EXPECT_EQ(m.cap, m.oldcap * 2);
    EXPECT_LT(m.moved, m.oldcap / 4) << "the insert that started it moved only a few slots";
    for (size_t k = 0; k < i; k++)
        ASSERT_EQ(find(&m, items[k].key), &items[k]) << k;
    EXPECT_EQ(find(&m, 0), nullptr);
    hmap_remove(&m, &items[5], hmap_mix64(items[5].key)); // from the old array or the new one
    EXPECT_EQ(find(&m, items[5].key), nullptr);
    hmap_settle(&m);
    EXPECT_EQ(m.old, nullptr);
    EXPECT_EQ(m.count, i - 1);
    EXPECT_EQ(walk(&m), i - 1);
    for (size_t k = 0; k < i; k++)
        ASSERT_EQ(find(&m, items[k].key), k == 5 ? nullptr : &items[k]) << k;
    hmap_free(&m);
}

// hmap_replace puts another object in an object's slot under the same hash, in the old array of
// a rebuild or in the new one, without changing the count (the unique index hands a departing
// head's slot to the next oldest job this way, with no allocation).
TEST(Hmap, ReplaceTakesTheSlotInPlace)
{
    hmap m;
    hmap_init(&m);
    std::vector<Item> items(1 << 16), subs(1 << 16);
    size_t i = 0;
    for (; i < items.size() && (i < 1000 || m.old == nullptr); i++) {
        items[i].key = i * 7919 + 1;
        ASSERT_EQ(hmap_insert(&m, &items[i], hmap_mix64(items[i].key)), 0);
    }
    ASSERT_NE(m.old, nullptr) << "a rebuild is in progress";
    size_t n = i, cap = m.cap;
    for (size_t k = 0; k < n; k += 3) {
        subs[k].key = items[k].key;
        hmap_replace(&m, &items[k], &subs[k], hmap_mix64(items[k].key));
    }
    EXPECT_EQ(m.count, n);
    EXPECT_EQ(m.cap, cap) << "nothing grew";
    for (size_t k = 0; k < n; k++)
        ASSERT_EQ(find(&m, items[k].key), k % 3 == 0 ? &subs[k] : &items[k]) << k;
    hmap_settle(&m);
    EXPECT_EQ(walk(&m), n);
    for (size_t k = 0; k < n; k++)
        ASSERT_EQ(find(&m, items[k].key), k % 3 == 0 ? &subs[k] : &items[k]) << k;
    hmap_free(&m);
}

TEST(Hmap, InsertFindRemoveAcrossGrowth)
{
    hmap m;
    hmap_init(&m);
    std::vector<Item> items(5000);
    for (size_t i = 0; i < items.size(); i++) {
        items[i].key = i * 7919;
        ASSERT_EQ(hmap_insert(&m, &items[i], hmap_mix64(items[i].key)), 0);
    }
    EXPECT_EQ(m.count, 5000u);
    EXPECT_GE(m.cap * 3, 5000u * 4) << "at most 3/4 full";
    for (size_t i = 0; i < items.size(); i++)
        ASSERT_EQ(find(&m, i * 7919), &items[i]);
    EXPECT_EQ(find(&m, 1), nullptr);
    for (size_t i = 0; i < items.size(); i += 2)
        hmap_remove(&m, &items[i], hmap_mix64(items[i].key));
    EXPECT_EQ(m.count, 2500u);
    for (size_t i = 0; i < items.size(); i++)
        EXPECT_EQ(find(&m, i * 7919) != nullptr, i % 2 == 1) << i;
    hmap_free(&m);
}

TEST(Hmap, EmptyTableLookupsAreSafe)
{
    hmap m;
    hmap_init(&m);
    hmap_probe p;
    EXPECT_EQ(hmap_first(&m, 42, &p), nullptr);
    EXPECT_EQ(hmap_next(&p), nullptr);
    EXPECT_EQ(walk(&m), 0u);
    hmap_free(&m);
}

// Objects of one hash (different keys, or duplicates) are all yielded, whichever array they are
// in, and a removal takes out exactly the object named.
TEST(Hmap, EqualHashesAreAllYielded)
{
    hmap m;
    hmap_init(&m);
    std::vector<Item> items(300);
    for (size_t i = 0; i < items.size(); i++) {
        items[i].key = i;
        ASSERT_EQ(hmap_insert(&m, &items[i], i % 3 == 0 ? 77 : hmap_mix64(i)), 0);
    }
    auto yielded = [&m]() {
        std::vector<uint64_t> keys;
        hmap_probe p;
        for (void *o = hmap_first(&m, 77, &p); o; o = hmap_next(&p))
            keys.push_back(((Item *)o)->key);
        std::sort(keys.begin(), keys.end());
        return keys;
    };
    std::vector<uint64_t> want;
    for (uint64_t i = 0; i < 300; i += 3)
        want.push_back(i);
    EXPECT_EQ(yielded(), want);
    hmap_remove(&m, &items[150], 77);
    want.erase(std::find(want.begin(), want.end(), 150u));
    EXPECT_EQ(yielded(), want);
    hmap_free(&m);
}

// Many random inserts and removals, with few distinct hashes so that probe sequences are long,
// wrap around the arrays and cross rebuilds in progress, checked against a model after each one.
TEST(Hmap, RandomOperationsMatchAModel)
{
    hmap m;
    hmap_init(&m);
    std::mt19937_64 rng(11);
    std::vector<Item> items(4000);
    std::vector<int> in(items.size());
    auto hash_of = [](uint64_t key) { return key % 5 == 0 ? (uint64_t)-1 - key % 7 : hmap_mix64(key); };
    size_t live = 0, rebuilds = 0, midway_removals = 0;
    for (int op = 0; op < 60000; op++) {
        size_t k = rng() % items.size();
        items[k].key = k;
        int grow_phase = (op / 15000) % 2 == 0; // fill, drain, fill, drain: shrinks too
        if (!in[k] && (grow_phase ? rng() % 4 != 0 : rng() % 4 == 0)) {
            const hslot *before = m.slots;
            ASSERT_EQ(hmap_insert(&m, &items[k], hash_of(k)), 0);
            rebuilds += m.slots != before;
            in[k] = 1;
            live++;
        } else if (in[k]) {
            midway_removals += m.old != nullptr;
            hmap_remove(&m, &items[k], hash_of(k));
            in[k] = 0;
            live--;
        }
        ASSERT_EQ(m.count, live);
        if (op % 97 == 0) {
            for (size_t j = 0; j < items.size(); j++) {
                bool found = false;
                hmap_probe p;
                for (void *o = hmap_first(&m, hash_of(j), &p); o; o = hmap_next(&p))
                    found |= o == &items[j];
                ASSERT_EQ(found, in[j] != 0) << "op " << op << " key " << j;
            }
        }
        ASSERT_LT(m.used, m.cap) << "a slot always stays empty";
    }
    EXPECT_GT(rebuilds, 8u);
    EXPECT_GT(midway_removals, 5u);
    EXPECT_EQ(walk(&m), live);
    hmap_free(&m);
}

// After many removals, a rebuild makes the table smaller, a sixteenth at a time at most.
TEST(Hmap, RebuildAfterRemovalsShrinks)
{
    hmap m;
    hmap_init(&m);
    std::vector<Item> items(100000);
    for (size_t i = 0; i < items.size(); i++) {
        items[i].key = i;
        ASSERT_EQ(hmap_insert(&m, &items[i], hmap_mix64(i)), 0);
    }
    hmap_settle(&m);
    size_t big = m.cap;
    for (size_t i = 0; i < items.size(); i++)
        hmap_remove(&m, &items[i], hmap_mix64(i));
    EXPECT_EQ(m.count, 0u);
    Item one;
    size_t smallest = big;
    for (size_t i = 0; i < 1000000 && smallest > 64; i++) { // removed slots fill the table
        one.key = i + 1000000;
        ASSERT_EQ(hmap_insert(&m, &one, hmap_mix64(one.key)), 0);
        hmap_remove(&m, &one, hmap_mix64(one.key));
        smallest = std::min(smallest, m.cap);
        ASSERT_GE(m.cap * 16, m.oldcap) << "one rebuild shrinks 16x at most";
    }
    EXPECT_LE(smallest, 64u) << "the emptied table shrank (from " << big << ")";
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

// The iterator returns every object once, also while a rebuild is still moving old slots, and the
// object just returned may be removed (as teardown does).
TEST(Hmap, IteratorVisitsEveryObjectOnceAndAllowsRemovingIt)
{
    hmap m;
    hmap_init(&m);
    std::vector<Item> items(2000);
    size_t n_in = 0;
    for (; n_in < items.size() && (n_in < 100 || m.old == nullptr); n_in++) {
        items[n_in].key = n_in;
        ASSERT_EQ(hmap_insert(&m, &items[n_in], hmap_mix64(n_in)), 0);
    }
    ASSERT_NE(m.old, nullptr) << "the last rebuild should still be in progress";
    std::vector<int> seen(n_in);
    hmap_iter it;
    hmap_iter_init(&it, &m);
    size_t n = 0;
    for (void *o; (o = hmap_iter_next(&it)) != nullptr; n++) {
        Item *item = (Item *)o;
        seen[item->key]++;
        if (item->key % 2 == 0)
            hmap_remove(&m, item, hmap_mix64(item->key));
    }
    EXPECT_EQ(n, n_in);
    EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), (long)n_in);
    EXPECT_EQ(m.count, n_in / 2); // the odd keys
    EXPECT_EQ(walk(&m), n_in / 2);
    hmap_free(&m);
    hmap empty;
    hmap_init(&empty);
    EXPECT_EQ(walk(&empty), 0u);
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

TEST(Slab, BlocksAreSizedInStepsAlignedAndDisjoint)
{
    size_t pages0 = slab_pages();
    std::vector<std::pair<unsigned char *, size_t>> live;
    for (size_t n = 1; n <= SLAB_MAX; n += 7) {
        auto *p = static_cast<unsigned char *>(slab_alloc(n));
        ASSERT_NE(p, nullptr);
        EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % SLAB_STEP, 0u);
        memset(p, static_cast<int>(n & 0xff), n); /* the whole block is usable (ASan checks) */
        live.emplace_back(p, n);
    }
    for (auto &b : live) /* no block overlaps another: each kept its own bytes */
        for (size_t i = 0; i < b.second; i++)
            ASSERT_EQ(b.first[i], static_cast<unsigned char>(b.second & 0xff));
    for (auto &b : live)
        slab_free(b.first);
    /* at most one page per class is kept once everything is freed */
    EXPECT_LE(slab_pages() - pages0, static_cast<size_t>(SLAB_MAX / SLAB_STEP));
    slab_free(nullptr);
}

TEST(Slab, EmptyPagesGoBackAndFreedBlocksAreReused)
{
    const size_t n = 200, per_page = SLAB_PAGE / n;
    size_t pages0 = slab_pages();
    std::vector<void *> v;
    for (size_t i = 0; i < 10 * per_page; i++) {
        v.push_back(slab_alloc(n));
        ASSERT_NE(v.back(), nullptr);
    }
    size_t grown = slab_pages() - pages0;
    EXPECT_GE(grown, 9u); /* (the page an earlier test left with room may take some) */
    EXPECT_LE(grown, 11u); /* a page holds all but a header's worth of blocks */
    /* a freed block is handed out again before any new page */
    void *again = v[5];
    slab_free(again);
    EXPECT_EQ(slab_alloc(n), again);
    /* freeing in a random order returns every page but at most one */
    std::mt19937 rng(7);
    std::shuffle(v.begin(), v.end(), rng);
    for (void *p : v)
        slab_free(p);
    EXPECT_LE(slab_pages() - pages0, 1u);
}

TEST(Slab, RandomOperationsKeepContents)
{
    std::mt19937 rng(11);
    std::vector<std::pair<unsigned char *, unsigned>> live;
    unsigned stamp = 0;
    for (int op = 0; op < 200000; op++) {
        if (live.empty() || rng() % 3 != 0) {
            size_t n = 2 + rng() % (SLAB_MAX - 1); /* two bytes to stamp */
            auto *p = static_cast<unsigned char *>(slab_alloc(n));
            ASSERT_NE(p, nullptr);
            stamp++;
            p[0] = static_cast<unsigned char>(stamp);
            p[n - 1] = static_cast<unsigned char>(stamp >> 8);
            live.emplace_back(p, static_cast<unsigned>(n) << 16 | (stamp & 0xffff));
        } else {
            size_t k = rng() % live.size();
            unsigned char *p = live[k].first;
            unsigned n = live[k].second >> 16, s = live[k].second & 0xffff;
            ASSERT_EQ(p[0], static_cast<unsigned char>(s));
            ASSERT_EQ(p[n - 1], static_cast<unsigned char>(s >> 8));
            slab_free(p);
            live[k] = live.back();
            live.pop_back();
        }
    }
    for (auto &b : live)
        slab_free(b.first);
}

TEST(Slab, BlobInASlabBlockIsFreedByItsLastReference)
{
    size_t base = 24, cap = 40;
    char *mem = static_cast<char *>(slab_alloc(base + sizeof(struct blob) + cap));
    ASSERT_NE(mem, nullptr);
    auto *b = reinterpret_cast<struct blob *>(mem + base);
    blob_embed(b, base, 1);
    EXPECT_EQ(blob_cap(b), 0u) << "nothing is appended to an embedded blob";
    memcpy(b->data, "payload", 7);
    b->len = 7;
    blob_ref(b);
    blob_unref(b);
    EXPECT_EQ(memcmp(b->data, "payload", 7), 0); /* still held */
    blob_unref(b); /* freed through slab_free (ASan reports a wrong free) */
}

/* obj is the pointer a test stores under id (any non-NULL value tied to the id). */
static void *obj(uint64_t id) { return reinterpret_cast<void *>(static_cast<uintptr_t>(id * 8 + 8)); }

/* idtab_ok asserts the table's own check passes. */
static void idtab_ok(const struct idtab *t)
{
    char err[160] = "";
    ASSERT_EQ(idtab_check(t, err, sizeof err), 0) << err;
}

/* walk returns every id of t in the order idtab_iter yields them. */
static std::vector<uint64_t> walk(const struct idtab *t)
{
    std::vector<uint64_t> ids;
    struct idtab_iter it;
    idtab_iter_init(&it, t);
    uint64_t id;
    for (void *p; (p = idtab_iter_next(&it, &id)) != nullptr;) {
        EXPECT_EQ(p, obj(id));
        ids.push_back(id);
    }
    return ids;
}

TEST(Idtab, InsertLookupRemoveAndRefuseATakenId)
{
    struct idtab t;
    idtab_init(&t);
    EXPECT_EQ(idtab_get(&t, 5), nullptr);
    EXPECT_EQ(idtab_first(&t), nullptr);
    const uint64_t base = (UINT64_C(1764288000) << 24) | 1; /* a server's first handle number */
    for (uint64_t i = 0; i < 1000; i++)
        ASSERT_EQ(idtab_put(&t, base + i, obj(base + i)), 0);
    EXPECT_EQ(idtab_put(&t, base + 10, obj(1)), -1) << "a taken id is refused";
    EXPECT_EQ(idtab_get(&t, base + 10), obj(base + 10));
    EXPECT_EQ(t.count, 1000u);
    idtab_ok(&t);
    for (uint64_t i = 0; i < 1000; i++)
        ASSERT_EQ(idtab_get(&t, base + i), obj(base + i));
    EXPECT_EQ(idtab_get(&t, base - 1), nullptr);
    EXPECT_EQ(idtab_get(&t, base + 1000), nullptr);
    EXPECT_EQ(idtab_first(&t), obj(base));
    for (uint64_t i = 0; i < 1000; i += 2)
        idtab_del(&t, base + i);
    idtab_ok(&t);
    for (uint64_t i = 0; i < 1000; i++)
        ASSERT_EQ(idtab_get(&t, base + i), i % 2 ? obj(base + i) : nullptr);
    EXPECT_EQ(idtab_first(&t), obj(base + 1));
    idtab_free(&t);
}

TEST(Idtab, WalksInIdOrderWhateverTheInsertOrder)
{
    struct idtab t;
    idtab_init(&t);
    std::mt19937_64 rng(3);
    std::vector<uint64_t> ids;
    for (int i = 0; i < 3000; i++) /* dense runs and sparse ids, across leaf boundaries */
        ids.push_back(i < 2000 ? 100000 + static_cast<uint64_t>(i) : rng() >> 8);
    std::vector<uint64_t> shuffled = ids;
    std::shuffle(shuffled.begin(), shuffled.end(), rng);
    for (uint64_t id : shuffled)
        ASSERT_EQ(idtab_put(&t, id, obj(id)), 0);
    idtab_ok(&t);
    std::sort(ids.begin(), ids.end());
    EXPECT_EQ(walk(&t), ids);
    idtab_free(&t);
}

TEST(Idtab, CursorSurvivesRemovalsAndSkipsEmptiedLeaves)
{
    struct idtab t;
    idtab_init(&t);
    for (uint64_t id = 1; id <= 640; id++) /* 11 leaves */
        ASSERT_EQ(idtab_put(&t, id, obj(id)), 0);
    struct idtab_cursor c = {};
    uint64_t id = 0;
    ASSERT_EQ(idtab_next(&t, &c, &id), obj(1));
    for (int i = 0; i < 99; i++)
        ASSERT_NE(idtab_next(&t, &c, &id), nullptr);
    ASSERT_EQ(id, 100u);
    /* the cursor's own id and its whole leaf go, and the next two leaves */
    for (uint64_t k = 64; k < 320; k++)
        idtab_del(&t, k);
    idtab_ok(&t); /* the cursor's empty leaf stays, pinned */
    EXPECT_EQ(idtab_next(&t, &c, &id), obj(320));
    EXPECT_EQ(id, 320u);
    idtab_ok(&t); /* and was freed when the cursor left it */
    /* ids added behind the cursor are not met, ahead of it are */
    ASSERT_EQ(idtab_put(&t, 100, obj(100)), 0);
    ASSERT_EQ(idtab_put(&t, 5000, obj(5000)), 0);
    uint64_t last = id, n = 0;
    while (idtab_next(&t, &c, &id) != nullptr) {
        ASSERT_GT(id, last);
        last = id;
        n++;
    }
    EXPECT_EQ(last, 5000u);
    EXPECT_EQ(n, 640u - 320u + 1u);
    EXPECT_FALSE(c.started) << "the end releases the cursor";
    idtab_ok(&t);
    idtab_free(&t);
}

TEST(Idtab, LeavesChangeLayoutAsTheyFillAndEmpty)
{
    struct idtab t;
    idtab_init(&t);
    std::mt19937 rng(5);
    std::vector<uint64_t> ids;
    for (uint64_t i = 0; i < 64; i++)
        ids.push_back(6400 + i); /* one leaf, filled in a random order: packed, then full */
    std::shuffle(ids.begin(), ids.end(), rng);
    std::vector<uint64_t> live;
    for (uint64_t id : ids) {
        ASSERT_EQ(idtab_put(&t, id, obj(id)), 0);
        live.push_back(id);
        std::sort(live.begin(), live.end());
        ASSERT_EQ(walk(&t), live);
        idtab_ok(&t);
    }
    EXPECT_EQ(t.head->cap, IDTAB_LEAF);
    std::shuffle(ids.begin(), ids.end(), rng);
    for (uint64_t id : ids) { /* and emptied: packed again, smaller and smaller */
        idtab_del(&t, id);
        live.erase(std::find(live.begin(), live.end(), id));
        ASSERT_EQ(walk(&t), live);
        for (uint64_t x : live)
            ASSERT_EQ(idtab_get(&t, x), obj(x));
        idtab_ok(&t);
        if (live.size() == 1) {
            EXPECT_EQ(t.head->cap, 2u);
        }
    }
    EXPECT_EQ(t.head, nullptr);
    idtab_free(&t);
}

TEST(Idtab, EndedCursorFreesAnEmptyLeaf)
{
    struct idtab t;
    idtab_init(&t);
    ASSERT_EQ(idtab_put(&t, 7, obj(7)), 0);
    ASSERT_EQ(idtab_put(&t, 70000, obj(70000)), 0);
    struct idtab_cursor c = {};
    uint64_t id;
    ASSERT_EQ(idtab_next(&t, &c, &id), obj(7));
    idtab_del(&t, 7);
    EXPECT_EQ(t.leaves.count, 2u) << "pinned";
    idtab_cursor_end(&t, &c);
    idtab_cursor_end(&t, &c); /* idempotent */
    EXPECT_EQ(t.leaves.count, 1u);
    idtab_ok(&t);
    idtab_del(&t, 70000);
    EXPECT_EQ(t.leaves.count, 0u);
    EXPECT_EQ(t.head, nullptr);
    idtab_free(&t);
}

TEST(Idtab, MemoryIsAPointerPerDenseIdAndBoundedForSparseOnes)
{
    struct idtab t;
    idtab_init(&t);
    const uint64_t n = 100000, base = UINT64_C(1) << 55;
    for (uint64_t i = 0; i < n; i++)
        ASSERT_EQ(idtab_put(&t, base + i, obj(i)), 0);
    EXPECT_LE(idtab_bytes(&t), n * 10) << "dense: 8 bytes a pointer plus shares of headers";
    /* removing all but every 64th: the leaves shrink */
    for (uint64_t i = 0; i < n; i++)
        if (i % 64 != 0)
            idtab_del(&t, base + i);
    idtab_ok(&t);
    EXPECT_LE(idtab_bytes(&t), t.count * 90) << "as for isolated ids";
    for (uint64_t i = 0; i < n; i += 64)
        idtab_del(&t, base + i);
    EXPECT_EQ(t.count, 0u);
    idtab_free(&t);
    /* isolated ids: a small leaf each (56 bytes) and its hash slot */
    idtab_init(&t);
    for (uint64_t i = 0; i < 1000; i++)
        ASSERT_EQ(idtab_put(&t, i << 20, obj(i)), 0);
    EXPECT_LE(idtab_bytes(&t), 1000u * 90);
    idtab_ok(&t);
    idtab_free(&t);
}

TEST(Idtab, RandomOperationsMatchAModel)
{
    struct idtab t;
    idtab_init(&t);
    std::mt19937_64 rng(17);
    std::vector<uint64_t> live;
    std::vector<struct idtab_cursor> cur(3);
    std::vector<uint64_t> at(3, 0);
    for (int step = 0; step < 200000; step++) {
        unsigned op = rng() % 10;
        if (op < 5) {
            uint64_t id = (rng() % 4 == 0) ? rng() % 100000 : 50000 + rng() % 5000;
            bool taken = std::find(live.begin(), live.end(), id) != live.end();
            ASSERT_EQ(idtab_put(&t, id, obj(id)), taken ? -1 : 0);
            if (!taken)
                live.push_back(id);
        } else if (op < 9 && !live.empty()) {
            size_t k = rng() % live.size();
            idtab_del(&t, live[k]);
            live[k] = live.back();
            live.pop_back();
        } else {
            size_t k = rng() % cur.size();
            uint64_t id;
            void *p = idtab_next(&t, &cur[k], &id);
            /* the lowest live id above the cursor's last one */
            uint64_t want = UINT64_MAX;
            for (uint64_t x : live)
                if ((at[k] == 0 || x > at[k]) && x < want)
                    want = x;
            if (want == UINT64_MAX) {
                ASSERT_EQ(p, nullptr);
                at[k] = 0;
            } else {
                ASSERT_EQ(p, obj(want));
                ASSERT_EQ(id, want);
                at[k] = want;
            }
        }
        if (step % 5000 == 0)
            idtab_ok(&t);
    }
    idtab_ok(&t);
    std::sort(live.begin(), live.end());
    EXPECT_EQ(walk(&t), live);
    for (auto &c : cur)
        idtab_cursor_end(&t, &c);
    for (uint64_t id : live)
        idtab_del(&t, id);
    EXPECT_EQ(t.head, nullptr);
    idtab_free(&t);
}

// meta_find finds a key of a stored job's meta object, spaces or tabs around its colon; a key
// that is only a prefix of another, or a value that looks like the key, is not it.
TEST(MetaText, FindsKeysAndReadsNumbers)
{
    std::string m = "{\"attempts_x\":9,\"attempts\" :\t3,\"s\":\"attempts\",\"at\":1.5e3}";
    const char *end = m.data() + m.size();
    const char *p = meta_find(m.data(), m.size(), "attempts");
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(meta_number(p, end), 3);
    p = meta_find(m.data(), m.size(), "at");
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(meta_number(p, end), 1500);
    EXPECT_EQ(meta_find(m.data(), m.size(), "missing"), nullptr);
    EXPECT_EQ(meta_find(m.data(), 5, "attempts_x"), nullptr) << "only within len";
    std::string nul("\"n\":\0\0", 6); // a NUL where the number should be reads as none
    p = meta_find(nul.data(), nul.size(), "n");
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(meta_number(p, nul.data() + nul.size()), 0);
}

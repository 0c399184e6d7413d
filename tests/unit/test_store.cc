/* SPDX-License-Identifier: BSD-3-Clause */
// Unit tests of the store manager (src/store/store.c) over the in-memory backend (src/store/store_mem.c), with
// a recording sink in place of the protocol side. No SQLite is linked (see tests/include.am).
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

extern "C" {
#include "config.h"
#include "engine.h"
#include "func.h"
#include "job.h"
#include "options.h"
#include "store.h"
#include "store_backend.h"
#include "store_mem.h"
#include "store_pg_rows.h"
#include "store_pg_text.h"
}

namespace {

struct Ack {
    void *owner;
    uint64_t id;
    std::string error; // "" when stored
    bool ok;
    bool durable; // the job was in the backend when the reply was released
};

struct Rig {
    config cfg;
    engine eng;
    std::string name;
    std::mutex mu;
    std::condition_variable cv;
    int notified = 0;
    std::vector<Ack> acks;
    std::map<void *, int> held;
    int replay_dones = 0;
    bool open = false;
    double timeout = 0; // --store-timeout for start, 0 = none

    explicit Rig(const std::string &n) : name(n)
    {
        options_defaults(&cfg);
        static const engine_ops ops = {
            [](engine *, peer *) {},
            [](engine *, peer *) {},
            [](engine *, int) {},
            [](engine *) { return 1000.0; },
            [](engine *, peer *) {},
        };
        EXPECT_EQ(engine_init(&eng, &cfg, &ops, this), 0);
    }

    ~Rig()
    {
        close();
        engine_destroy(&eng);
        config_free(&cfg);
    }

    static Rig *of(engine *e) { return static_cast<Rig *>(e->shell); }

    static void on_held(engine *e, void *owner) { of(e)->held[owner]++; }

    static void on_acked(engine *e, void *owner, uint64_t id, const char *error)
    {
        Rig *r = of(e);
        r->held[owner]--;
        r->acks.push_back({owner, id, error ? error : "", error == nullptr,
                           store_mem_has(r->name.c_str(), id) != 0});
    }

    static void on_replay_done(engine *e) { of(e)->replay_dones++; }

    static void on_notify(void *arg)
    {
        Rig *r = static_cast<Rig *>(arg);
        std::lock_guard<std::mutex> lk(r->mu);
        r->notified++;
        r->cv.notify_all();
    }

    int start(std::string *err = nullptr)
    {
        static const store_sink sink = {on_held, on_acked, on_replay_done};
        store_params p;
        memset(&p, 0, sizeof p);
        p.location = name.c_str();
        p.max_function = 512;
        p.timeout = timeout;
        char buf[256] = "";
        int rc = store_start(&eng, &store_mem_backend, &p, &sink, on_notify, this, buf, sizeof buf);
        if (err)
            *err = buf;
        open = rc == 0;
        return rc;
    }

    // pump waits (generously) for the committer to wake the loop, then runs the loop's side.
    void pump()
    {
        {
            std::unique_lock<std::mutex> lk(mu);
            bool woke = cv.wait_for(lk, std::chrono::seconds(60), [&] { return notified > 0; });
            ASSERT_TRUE(woke) << "the committer never woke the loop";
            notified = 0;
        }
        store_complete(&eng);
    }

    // replayed opens the store and runs the loop until every stored job is back.
    void replayed()
    {
        ASSERT_EQ(start(), 0);
        while (eng.replaying)
            pump();
    }

    store_state state()
    {
        store_state s;
        store_get_state(&eng, &s);
        return s;
    }

    // commit hands the current batch over and runs the loop until it is written (or failed).
    void commit()
    {
        store_flush(&eng);
        while (state().in_flight)
            pump();
    }

    job *submit(const char *fn, void *owner, const char *unique = "")
    {
        func *f = func_get(&eng, fn, strlen(fn), 1);
        EXPECT_NE(f, nullptr);
        job *j = job_new(&eng, f, PRIO_NORMAL, 1, unique, strlen(unique), "", 0, "data", 4);
        EXPECT_NE(j, nullptr);
        EXPECT_EQ(store_add(&eng, j, owner, 0), 0);
        EXPECT_EQ(j->state, JOB_PENDING);
        return j;
    }

    // done records that stored job j left the server and frees it.
    void done(job *j)
    {
        j->flags &= (uint8_t)~JOB_STORED;
        store_done(&eng, j);
        job_free(&eng, j);
    }

    int close()
    {
        int rc = open ? store_close(&eng) : 0;
        open = false;
        return rc;
    }

    void faults(const store_mem_faults &f) { store_mem_set_faults(name.c_str(), &f); }

    // expire waits (bounded) until the oldest held reply is due, then lets the store answer it.
    void expire()
    {
        auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        while (store_deadline(&eng) != 0) {
            ASSERT_GE(store_deadline(&eng), 0) << "no reply is held";
            ASSERT_LT(std::chrono::steady_clock::now(), until);
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        store_expire(&eng);
    }

    void check()
    {
        char err[256];
        EXPECT_EQ(engine_check(&eng, err, sizeof err), 0) << err;
    }
};

store_rec rec(uint64_t id, const char *fn, int64_t when = 0)
{
    store_rec r;
    memset(&r, 0, sizeof r);
    r.id = id;
    r.func = fn;
    r.func_len = strlen(fn);
    r.unique = r.reducer = "";
    r.data = "payload";
    r.data_len = 7;
    r.prio = 1;
    r.when = when;
    return r;
}

class StoreTest : public ::testing::Test {
  protected:
    void SetUp() override { store_mem_reset(); }
    void TearDown() override { store_mem_reset(); }
};

int A, B; // owners: only their addresses matter

TEST_F(StoreTest, GroupCommitHoldsRepliesUntilTheBatchIsDurable)
{
    Rig r("group");
    r.replayed();
    EXPECT_EQ(r.replay_dones, 1);
    job *j1 = r.submit("f", &A);
    job *j2 = r.submit("f", &B);
    job *j3 = r.submit("g", &A);
    uint64_t ids[3] = {j1->id, j2->id, j3->id};
    EXPECT_EQ(r.held[&A], 2);
    EXPECT_EQ(r.held[&B], 1);
    EXPECT_TRUE(r.acks.empty());
    EXPECT_EQ(store_mem_writes("group"), 0u);
    EXPECT_EQ(r.state().queued, 3u);
    r.commit();
    ASSERT_EQ(r.acks.size(), 3u);
    void *owners[3] = {&A, &B, &A};
    for (int i = 0; i < 3; i++) {
        EXPECT_EQ(r.acks[i].owner, owners[i]);
        EXPECT_EQ(r.acks[i].id, ids[i]);
        EXPECT_TRUE(r.acks[i].ok) << r.acks[i].error;
        EXPECT_TRUE(r.acks[i].durable) << "acknowledged before it was stored";
        job *j = job_find_id(&r.eng, ids[i]);
        ASSERT_NE(j, nullptr);
        EXPECT_EQ(j->state, JOB_READY);
    }
    EXPECT_EQ(store_mem_writes("group"), 1u) << "three submits, one batch";
    EXPECT_EQ(store_mem_count("group"), 3u);
    EXPECT_EQ(r.held[&A], 0);
    EXPECT_EQ(r.state().held, 0u);
    r.check();
}

TEST_F(StoreTest, AddAndDoneInOneBatchCancel)
{
    Rig r("cancel");
    r.replayed();
    job *j1 = r.submit("f", nullptr);
    job *j2 = r.submit("f", nullptr);
    uint64_t id1 = j1->id, id2 = j2->id;
    r.done(j1);
    EXPECT_EQ(r.state().queued, 1u) << "the add and the done of one job cancel out";
    r.commit();
    EXPECT_EQ(store_mem_writes("cancel"), 1u);
    EXPECT_FALSE(store_mem_has("cancel", id1));
    EXPECT_TRUE(store_mem_has("cancel", id2));
    // a batch that cancels out entirely writes nothing
    job *j3 = r.submit("f", nullptr);
    r.done(j3);
    EXPECT_EQ(r.state().queued, 0u);
    r.commit();
    EXPECT_EQ(store_mem_writes("cancel"), 1u);
    EXPECT_EQ(store_mem_count("cancel"), 1u);
    r.check();
}

TEST_F(StoreTest, CommitFailureAnswersTheOwnerAndRetriesDeletions)
{
    Rig r("fail");
    store_rec seed = rec(7, "f");
    ASSERT_EQ(store_mem_put("fail", &seed), 0);
    r.replayed();
    job *old = job_find_id(&r.eng, 7);
    ASSERT_NE(old, nullptr);
    store_mem_faults f = {};
    f.fail_writes = 1;
    store_mem_set_faults("fail", &f);
    r.done(old);
    job *j = r.submit("f", &A);
    uint64_t id = j->id;
    r.commit();
    ASSERT_EQ(r.acks.size(), 1u);
    EXPECT_FALSE(r.acks[0].ok);
    EXPECT_NE(r.acks[0].error.find("injected write failure"), std::string::npos) << r.acks[0].error;
    EXPECT_EQ(r.acks[0].id, id);
    EXPECT_EQ(job_find_id(&r.eng, id), nullptr) << "a job that was not stored is failed";
    EXPECT_EQ(r.held[&A], 0);
    store_state s = r.state();
    EXPECT_EQ(s.fails, 1u);
    EXPECT_DOUBLE_EQ(s.retry_gap, 0.01);
    EXPECT_EQ(s.queued, 1u) << "the failed deletion waits for a retry";
    EXPECT_TRUE(store_mem_has("fail", 7));
    // the committer wakes the loop when the retry is due; the deletion is then written
    while (store_mem_has("fail", 7))
        r.pump();
    while (r.state().in_flight)
        r.pump();
    s = r.state();
    EXPECT_EQ(s.fails, 0u);
    EXPECT_EQ(s.retry_gap, 0.0);
    EXPECT_EQ(store_mem_count("fail"), 0u);
    // and submits work again
    r.submit("f", &B);
    r.commit();
    ASSERT_EQ(r.acks.size(), 2u);
    EXPECT_TRUE(r.acks[1].ok);
    EXPECT_EQ(store_mem_count("fail"), 1u);
    r.check();
}

TEST_F(StoreTest, DiskFullBacksOffDeletionsButNotSubmits)
{
    Rig r("full");
    store_rec seed = rec(3, "f");
    ASSERT_EQ(store_mem_put("full", &seed), 0);
    r.replayed();
    job *old = job_find_id(&r.eng, 3);
    ASSERT_NE(old, nullptr);
    store_mem_faults f = {};
    f.full = 1;
    store_mem_set_faults("full", &f);
    double gap = 0.01;
    for (int i = 0; i < 12; i++) {
        r.submit("f", &A);
        r.commit(); // written at once although failing: a client waits
        ASSERT_EQ(r.acks.size(), (size_t)i + 1);
        EXPECT_FALSE(r.acks[i].ok);
        EXPECT_NE(r.acks[i].error.find("disk full"), std::string::npos);
        EXPECT_DOUBLE_EQ(r.state().retry_gap, gap) << "after failure " << i + 1;
        gap = gap * 2 > 5.0 ? 5.0 : gap * 2;
    }
    EXPECT_EQ(r.state().fails, 12u);
    EXPECT_EQ(store_mem_failed("full"), 12u);
    // a deletion alone waits for the retry time (now 5 s away) instead of spinning
    r.done(old);
    store_flush(&r.eng);
    store_state s = r.state();
    EXPECT_EQ(s.in_flight, 0);
    EXPECT_EQ(s.queued, 1u);
    EXPECT_EQ(store_mem_failed("full"), 12u);
    // space again: the next submit's batch carries the deletion too
    f.full = 0;
    store_mem_set_faults("full", &f);
    job *j = r.submit("f", &B);
    uint64_t id = j->id;
    r.commit();
    EXPECT_TRUE(r.acks.back().ok);
    EXPECT_EQ(r.acks.back().id, id);
    EXPECT_FALSE(store_mem_has("full", 3));
    EXPECT_TRUE(store_mem_has("full", id));
    EXPECT_EQ(r.state().fails, 0u);
    r.check();
}

TEST_F(StoreTest, ReplayRestoresInIdOrderAndStopsOnAReadError)
{
    for (uint64_t id : {9, 3, 5}) {
        store_rec x = rec(id, id == 5 ? "g" : "f");
        ASSERT_EQ(store_mem_put("replay", &x), 0);
    }
    {
        Rig r("replay");
        r.replayed();
        EXPECT_EQ(r.replay_dones, 1);
        for (uint64_t id : {3, 5, 9}) {
            job *j = job_find_id(&r.eng, id);
            ASSERT_NE(j, nullptr) << id;
            EXPECT_EQ(j->state, JOB_READY);
            EXPECT_TRUE(j->flags & JOB_STORED);
        }
        EXPECT_GT(r.eng.next_id, 9u) << "new jobs are numbered past every stored one";
        r.check();
    }
    store_mem_faults f = {};
    f.fail_replay = 2;
    store_mem_set_faults("replay", &f);
    Rig r("replay");
    r.replayed();
    EXPECT_EQ(r.replay_dones, 1) << "a failed replay still opens the queues";
    EXPECT_NE(job_find_id(&r.eng, 3), nullptr);
    EXPECT_NE(job_find_id(&r.eng, 5), nullptr);
    EXPECT_EQ(job_find_id(&r.eng, 9), nullptr) << "the replay goes in id order";
    r.check();
}

TEST_F(StoreTest, OwnerGoneBeforeTheAckIsNotAnswered)
{
    Rig r("gone");
    r.replayed();
    job *ja = r.submit("f", &A);
    job *jb = r.submit("f", &B);
    uint64_t ida = ja->id, idb = jb->id;
    store_flush(&r.eng); // A's batch is in flight when A goes
    store_owner_gone(&r.eng, &A);
    job *ja2 = r.submit("f", &A); // and one more in the next batch
    uint64_t ida2 = ja2->id;
    store_owner_gone(&r.eng, &A);
    while (r.state().in_flight || r.state().held)
        r.pump();
    ASSERT_EQ(r.acks.size(), 1u);
    EXPECT_EQ(r.acks[0].owner, &B);
    EXPECT_EQ(r.acks[0].id, idb);
    for (uint64_t id : {ida, ida2}) { // the jobs themselves are stored and run
        job *j = job_find_id(&r.eng, id);
        ASSERT_NE(j, nullptr);
        EXPECT_EQ(j->state, JOB_READY);
        EXPECT_TRUE(store_mem_has("gone", id));
    }
    r.check();
}

TEST_F(StoreTest, OpenFailuresAreReported)
{
    store_mem_faults f = {};
    f.fail_open = 1;
    store_mem_set_faults("bad", &f);
    {
        Rig r("bad");
        std::string err;
        EXPECT_EQ(r.start(&err), -1);
        EXPECT_NE(err.find("injected open failure"), std::string::npos) << err;
        EXPECT_EQ(r.eng.store_mgr, nullptr);
        EXPECT_EQ(r.eng.replaying, 0);
    }
    Rig one("shared"), two("shared");
    one.replayed();
    std::string err;
    EXPECT_EQ(two.start(&err), -1) << "one server per store";
    EXPECT_NE(err.find("in use"), std::string::npos) << err;
}

TEST_F(StoreTest, CloseWritesTheLastBatchAndReopenReplaysIt)
{
    uint64_t id;
    {
        Rig r("close");
        r.replayed();
        id = r.submit("f", &A)->id;
        job *gone = r.submit("f", nullptr);
        r.done(gone);
        // no flush: close writes what is queued; the held reply is dropped
    }
    EXPECT_TRUE(store_mem_has("close", id));
    EXPECT_EQ(store_mem_count("close"), 1u);
    Rig r("close");
    r.replayed();
    EXPECT_NE(job_find_id(&r.eng, id), nullptr);
    EXPECT_GT(r.eng.next_id, id + 1) << "the id of the cancelled job is not reused";
}

// ---------------------------------------------------------------- job meta and records

// What the extension hooks heard, in order.
std::vector<std::string> ext_log;

int ext_job_restored(engine *, job *j, const char *meta, size_t len, double when)
{
    std::string m(meta, len);
    ext_log.push_back("job " + std::to_string(j->id) + " " + m + " @" +
                      std::to_string((long long)when));
    return m == "keep"; // a "keep" job is the extension's: not made runnable
}

int ext_record_restored(engine *, const store_record *r, char *err, size_t errlen)
{
    std::string v((const char *)r->value, r->value_len);
    ext_log.push_back("rec " + std::to_string(r->kind) + " " + std::string(r->key, r->key_len) +
                      "=" + v);
    if (v == "bad") {
        snprintf(err, errlen, "refused");
        return -1;
    }
    return 0;
}

TEST_F(StoreTest, MetaAndRecordsComeBackBeforeAndWithTheJobs)
{
    uint64_t plain, kept, updated, gone;
    {
        Rig r("ext");
        r.replayed();
        func *f = func_get(&r.eng, "f", 1, 1);
        job *j1 = job_new(&r.eng, f, PRIO_NORMAL, 1, "", 0, "", 0, "d", 1);
        job *j2 = job_new(&r.eng, f, PRIO_NORMAL, 1, "", 0, "", 0, "d", 1);
        job *j3 = job_new(&r.eng, f, PRIO_NORMAL, 1, "", 0, "", 0, "d", 1);
        job *j4 = job_new(&r.eng, f, PRIO_NORMAL, 1, "", 0, "", 0, "d", 1);
        plain = j1->id, kept = j2->id, updated = j3->id, gone = j4->id;
        ASSERT_EQ(store_add(&r.eng, j1, nullptr, 0), 0);
        ASSERT_EQ(store_add_meta(&r.eng, j2, nullptr, 0, "keep", 4), 0);
        ASSERT_EQ(store_add_meta(&r.eng, j3, nullptr, 0, "v1", 2), 0);
        ASSERT_EQ(store_add_meta(&r.eng, j4, nullptr, 0, "v1", 2), 0);
        ASSERT_EQ(store_record_put(&r.eng, STORE_REC_SCHEDULE, "nightly", 7, "a", 1), 0);
        ASSERT_EQ(store_record_put(&r.eng, STORE_REC_RETRY, "f", 1, "bad", 3), 0);
        ASSERT_EQ(store_record_put(&r.eng, STORE_REC_RETRY, "g", 1, "x", 1), 0);
        r.commit();
        EXPECT_EQ(store_mem_count("ext"), 4u);
        EXPECT_EQ(store_mem_records("ext"), 3u);
        // a new version of a stored job replaces it; an update then a done of one batch deletes
        // the stored row (the older version) too
        ASSERT_EQ(store_update(&r.eng, j3, 2000, "v2", 2), 0);
        ASSERT_EQ(store_update(&r.eng, j4, 0, "v2", 2), 0);
        r.done(j4);
        ASSERT_EQ(store_record_put(&r.eng, STORE_REC_SCHEDULE, "nightly", 7, "b", 1), 0);
        ASSERT_EQ(store_record_del(&r.eng, STORE_REC_RETRY, "g", 1), 0);
        r.commit();
        EXPECT_FALSE(store_mem_has("ext", gone));
        EXPECT_EQ(store_mem_records("ext"), 2u);
        // bad lengths are refused, nothing queued
        EXPECT_EQ(store_record_put(&r.eng, STORE_REC_KINDS, "k", 1, "v", 1), -1);
        EXPECT_EQ(store_record_put(&r.eng, STORE_REC_RETRY, "", 0, "v", 1), -1);
    }
    ext_log.clear();
    Rig r("ext");
    r.eng.ext.job_restored = ext_job_restored;
    r.eng.ext.record_restored[STORE_REC_SCHEDULE] = ext_record_restored;
    r.eng.ext.record_restored[STORE_REC_RETRY] = ext_record_restored;
    r.replayed();
    std::vector<std::string> want = {"rec 1 nightly=b", "rec 2 f=bad",
                                     "job " + std::to_string(kept) + " keep @0",
                                     "job " + std::to_string(updated) + " v2 @2000"};
    EXPECT_EQ(ext_log, want);
    job *p = job_find_id(&r.eng, plain), *k = job_find_id(&r.eng, kept),
        *u = job_find_id(&r.eng, updated);
    ASSERT_NE(p, nullptr);
    ASSERT_NE(k, nullptr);
    ASSERT_NE(u, nullptr);
    EXPECT_EQ(job_find_id(&r.eng, gone), nullptr);
    EXPECT_EQ(p->state, JOB_READY);
    EXPECT_EQ(u->state, JOB_FUTURE) << "not taken: due at its updated time";
    EXPECT_EQ(k->state, JOB_LIMBO) << "taken by the extension";
    // the test owns the kept job now: free it the way its extension would
    k->flags &= (uint8_t)~JOB_STORED;
    job_free(&r.eng, k);
}

TEST_F(StoreTest, AFailedCommitKeepsUpdatesAndRecordsForTheNextOne)
{
    Rig r("ext-fail");
    r.replayed();
    job *j = r.submit("f", nullptr);
    r.commit();
    store_mem_faults f = {};
    f.fail_writes = 1;
    store_mem_set_faults("ext-fail", &f);
    ASSERT_EQ(store_update(&r.eng, j, 0, "old", 3), 0);
    ASSERT_EQ(store_record_put(&r.eng, STORE_REC_RETRY, "k", 1, "old", 3), 0);
    r.commit(); // fails
    EXPECT_EQ(store_mem_failed("ext-fail"), 1u);
    // newer versions queued after the failure win over the retried ones
    ASSERT_EQ(store_record_put(&r.eng, STORE_REC_RETRY, "k", 1, "new", 3), 0);
    ASSERT_EQ(store_update(&r.eng, j, 0, "new", 3), 0);
    r.commit();
    r.close();
    ext_log.clear();
    Rig r2("ext-fail");
    r2.eng.ext.job_restored = ext_job_restored;
    r2.eng.ext.record_restored[STORE_REC_RETRY] = ext_record_restored;
    r2.replayed();
    std::vector<std::string> want = {"rec 2 k=new", "job " + std::to_string(j->id) + " new @0"};
    EXPECT_EQ(ext_log, want);
}

TEST(StoreBatch, UpdatesRecordsAndCancellation)
{
    store_queue q = {};
    store_rec r = rec(5, "f");
    r.meta = "m1";
    r.meta_len = 2;
    ASSERT_EQ(store_queue_add(&q, &r), 0);
    r.meta = "m2";
    ASSERT_EQ(store_queue_update(&q, &r), 0); // replaces the add of this batch
    EXPECT_EQ(store_queue_pending(&q), 1u);
    ASSERT_EQ(store_queue_done(&q, 5), 0); // the row may be stored (an update): deleted too
    store_rec u = rec(6, "f");
    ASSERT_EQ(store_queue_update(&q, &u), 0);
    store_record rc = {STORE_REC_SCHEDULE, "a", 1, "v", 1};
    ASSERT_EQ(store_queue_record(&q, &rc), 0);
    rc.value = nullptr;
    ASSERT_EQ(store_queue_record(&q, &rc), 0);
    store_record bad = {STORE_REC_SCHEDULE, "a", 1, "v", (size_t)STORE_META_MAX + 1};
    EXPECT_EQ(store_queue_record(&q, &bad), -1);
    r.meta_len = STORE_META_MAX + 1;
    EXPECT_EQ(store_queue_add(&q, &r), -1);
    store_batch *b = store_queue_take(&q);
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(store_batch_ndones(b), 1u);
    EXPECT_EQ(store_batch_done_at(b, 0), 5u);
    EXPECT_EQ(store_batch_ops(b), 4u); // the update of 6, the done of 5, two records
    store_rec out;
    EXPECT_EQ(store_batch_add_at(b, 0, &out), -1);
    ASSERT_EQ(store_batch_add_at(b, 1, &out), 0);
    EXPECT_EQ(out.id, 6u);
    EXPECT_EQ(out.meta, nullptr);
    ASSERT_EQ(store_batch_nrecords(b), 2u);
    store_record x;
    store_batch_record_at(b, 1, &x);
    EXPECT_EQ(x.value, nullptr) << "the second is the deletion";
    // retried after a failure: records go before newer ones, the update only without a newer one
    store_record newer = {STORE_REC_SCHEDULE, "a", 1, "w", 1};
    ASSERT_EQ(store_queue_record(&q, &newer), 0);
    ASSERT_EQ(store_queue_retry_dones(&q, b), 0);
    store_batch *c = store_queue_take(&q);
    ASSERT_NE(c, nullptr);
    ASSERT_EQ(store_batch_nrecords(c), 3u);
    store_batch_record_at(c, 2, &x);
    ASSERT_NE(x.value, nullptr);
    EXPECT_EQ(std::string((const char *)x.value, x.value_len), "w");
    EXPECT_EQ(store_batch_ndones(c), 1u);
    ASSERT_EQ(store_batch_nadds(c), 1u);
    ASSERT_EQ(store_batch_add_at(c, 0, &out), 0);
    EXPECT_EQ(out.id, 6u);
    store_batch_free(b);
    store_batch_free(c);
    store_queue_clear(&q);
}

} // namespace

// ---------------------------------------------------------------- store_pg_text (pure helpers)

TEST(StorePgText, TableNamesAreOnlyPlainIdentifiers)
{
    EXPECT_TRUE(store_pg_valid_ident("queue"));
    EXPECT_TRUE(store_pg_valid_ident("_Gearman_queue2"));
    EXPECT_TRUE(store_pg_valid_ident(std::string(63, 'q').c_str()));
    EXPECT_FALSE(store_pg_valid_ident(std::string(64, 'q').c_str()));
    EXPECT_FALSE(store_pg_valid_ident(""));
    EXPECT_FALSE(store_pg_valid_ident(nullptr));
    EXPECT_FALSE(store_pg_valid_ident("1queue"));
    EXPECT_FALSE(store_pg_valid_ident("queue\"; DROP TABLE spur_jobs; --"));
    EXPECT_FALSE(store_pg_valid_ident("a b"));
    EXPECT_FALSE(store_pg_valid_ident("a-b"));
    EXPECT_FALSE(store_pg_valid_ident("caf\xc3\xa9"));
}

TEST(StorePgText, ServerIdsAreShortPlainNames)
{
    EXPECT_TRUE(store_pg_valid_server_id("a"));
    EXPECT_TRUE(store_pg_valid_server_id("host-1.example.com:4730"));
    EXPECT_TRUE(store_pg_valid_server_id("spurd@rack_2"));
    EXPECT_TRUE(store_pg_valid_server_id(std::string(63, 'x').c_str()));
    EXPECT_FALSE(store_pg_valid_server_id(std::string(64, 'x').c_str()));
    EXPECT_FALSE(store_pg_valid_server_id(""));
    EXPECT_FALSE(store_pg_valid_server_id(nullptr));
    EXPECT_FALSE(store_pg_valid_server_id("a b"));
    EXPECT_FALSE(store_pg_valid_server_id("a'; DROP TABLE spur_jobs; --"));
    EXPECT_FALSE(store_pg_valid_server_id("caf\xc3\xa9"));
}

static std::string redact(const char *conninfo, size_t len = 256)
{
    std::vector<char> out(len);
    return store_pg_redact(conninfo, out.data(), out.size());
}

TEST(StorePgText, PasswordsAreRedactedForLogs)
{
    EXPECT_EQ(redact("host=/tmp dbname=q user=spur"), "host=/tmp dbname=q user=spur");
    EXPECT_EQ(redact("host=/tmp password=s3cr3t dbname=q"), "host=/tmp password=*** dbname=q");
    EXPECT_EQ(redact("password = 'a b\\' c' host=h"), "password=*** host=h");
    EXPECT_EQ(redact(""), "");
    EXPECT_EQ(redact("postgresql://spur:s3cr3t@db.example:5432/q"),
              "postgresql://spur:***@db.example:5432/q");
    EXPECT_EQ(redact("postgres://db.example:5432/q?password=s3cr3t&sslmode=require"),
              "postgres://db.example:5432/q?password=***&sslmode=require");
    EXPECT_EQ(redact("postgresql://h/q?user=a&password=x"), "postgresql://h/q?user=a&password=***");
    EXPECT_EQ(redact("postgresql://spur@h/q"), "postgresql://spur@h/q");
    // a short buffer truncates, never overflows, and never shows the password
    for (size_t n = 1; n < 40; n++) {
        std::string r = redact("host=/tmp password=s3cr3t dbname=q", n);
        EXPECT_LT(r.size(), n);
        EXPECT_EQ(r.find("s3cr3t"), std::string::npos) << n;
        r = redact("postgresql://spur:s3cr3t@h/q?password=s3cr3t", n);
        EXPECT_LT(r.size(), n);
        EXPECT_EQ(r.find("s3c"), std::string::npos) << n;
    }
}

// A write that never returns (a hung database or NFS mount): each held reply is answered with an
// error once it has waited --store-timeout, whether its batch is with the committer or behind it;
// a late commit of the given-up batch is undone by the next one, so no refused job stays stored.
TEST_F(StoreTest, HeldRepliesAreRefusedWhileAWriteHangsAndALateCommitIsUndone)
{
    Rig r("hang");
    r.timeout = 0.2;
    r.replayed();
    store_mem_faults f = {};
    f.stall = 1;
    r.faults(f);
    job *j1 = r.submit("f", &A);
    uint64_t id1 = j1->id;
    store_flush(&r.eng); // with the committer, which hangs
    EXPECT_TRUE(r.state().in_flight);
    r.expire();
    ASSERT_EQ(r.acks.size(), 1u);
    EXPECT_FALSE(r.acks[0].ok);
    EXPECT_NE(r.acks[0].error.find("no answer from the store within"), std::string::npos)
        << r.acks[0].error;
    EXPECT_EQ(job_find_id(&r.eng, id1), nullptr) << "the refused job is gone";
    job *j2 = r.submit("f", &B); // behind the hung batch
    uint64_t id2 = j2->id;
    store_flush(&r.eng);
    r.expire();
    ASSERT_EQ(r.acks.size(), 2u);
    EXPECT_FALSE(r.acks[1].ok);
    EXPECT_EQ(job_find_id(&r.eng, id2), nullptr);
    r.check();
    f.stall = 0; // the write goes through after all: j1 is stored although refused
    r.faults(f);
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!store_mem_has(r.name.c_str(), id1)) // the loop's side has not run: it stays there
        ASSERT_LT(std::chrono::steady_clock::now(), until) << "the late write never landed";
    r.commit(); // the next batch deletes it; j2's add was cancelled before it was ever written
    EXPECT_FALSE(store_mem_has(r.name.c_str(), id1));
    EXPECT_FALSE(store_mem_has(r.name.c_str(), id2));
    EXPECT_EQ(store_mem_count(r.name.c_str()), 0u);
    EXPECT_EQ(r.acks.size(), 2u);
    r.check();
}

// A stop while a write hangs waits at most --store-timeout, then gives the committer up (it
// still holds the store) and says so; without a hang it writes the last batch as before.
TEST_F(StoreTest, StopIsBoundedWhileAWriteHangs)
{
    {
        Rig r("stop-ok");
        r.timeout = 0.2;
        r.replayed();
        job *j = r.submit("f", &A);
        r.commit();
        r.done(j); // a deletion only the final batch writes
        EXPECT_EQ(r.close(), 0);
        EXPECT_EQ(store_mem_count("stop-ok"), 0u);
        EXPECT_FALSE(store_stuck());
    }
    Rig r("stop-hang");
    r.timeout = 0.3;
    r.replayed();
    store_mem_faults f = {};
    f.stall = 1;
    r.faults(f);
    r.submit("f", &A);
    store_flush(&r.eng);
    // a close that waits for the write would fail, not hang: the stall ends after 20 s at most
    std::mutex mu;
    std::condition_variable cv;
    bool closed = false;
    std::thread unstall([&] {
        std::unique_lock<std::mutex> lk(mu);
        cv.wait_for(lk, std::chrono::seconds(20), [&] { return closed; });
        store_mem_faults g = {};
        store_mem_set_faults("stop-hang", &g);
    });
    auto t0 = std::chrono::steady_clock::now();
    int rc = r.close();
    double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    {
        std::lock_guard<std::mutex> lk(mu);
        closed = true;
    }
    cv.notify_all();
    EXPECT_EQ(rc, -1);
    EXPECT_LT(took, 10.0);
    EXPECT_TRUE(store_stuck());
    EXPECT_EQ(r.eng.store_mgr, nullptr);
    unstall.join(); // the abandoned committer finishes its write and exits without waking anyone
}

// ---------------------------------------------------------------- store_pg_rows (binary arrays)

namespace {

// PgArray is one binary array decoded as PostgreSQL's array_recv reads it.
struct PgArray {
    uint32_t ndim = 0, flags = 0, oid = 0, len = 0, lbound = 0;
    std::vector<bool> null;
    std::vector<std::string> elem;
};

uint32_t get32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

PgArray decode_array(const buf &b)
{
    PgArray a;
    const unsigned char *p = (const unsigned char *)buf_head(&b), *end = p + buf_len(&b);
    EXPECT_GE(buf_len(&b), 20u);
    a.ndim = get32(p);
    a.flags = get32(p + 4);
    a.oid = get32(p + 8);
    a.len = get32(p + 12);
    a.lbound = get32(p + 16);
    p += 20;
    for (uint32_t i = 0; i < a.len; i++) {
        EXPECT_LE(p + 4, end);
        uint32_t n = get32(p);
        p += 4;
        a.null.push_back(n == UINT32_MAX);
        if (n == UINT32_MAX) {
            a.elem.emplace_back();
            continue;
        }
        EXPECT_LE(p + n, end);
        a.elem.emplace_back((const char *)p, n);
        p += n;
    }
    EXPECT_EQ(p, end) << "bytes after the last element";
    return a;
}

int64_t be_int(const std::string &s)
{
    uint64_t v = 0;
    for (unsigned char c : s)
        v = v << 8 | c;
    return s.size() == 2 ? (int16_t)v : (int64_t)v;
}

// kept returns a copy of s that lives until the end of the test program (store_rec borrows).
const std::string &kept(const std::string &s)
{
    static std::deque<std::string> pool;
    pool.push_back(s);
    return pool.back();
}

store_rec pg_job(uint64_t id, const std::string &func, const std::string &uniq,
                 const std::string &data, const char *meta = nullptr, size_t meta_len = 0)
{
    store_rec r = {};
    r.id = id;
    r.func = kept(func).data();
    r.func_len = func.size();
    r.unique = kept(uniq).data();
    r.unique_len = uniq.size();
    const std::string &d = kept(data);
    r.data = d.data();
    r.data_len = d.size();
    r.prio = (int)(id % 3);
    r.when = id == 2 ? 1700000000 : 0;
    r.meta = meta;
    r.meta_len = meta_len;
    return r;
}

// fill_all encodes every chunk of b; returns the decoded columns of each chunk.
std::vector<std::vector<PgArray>> fill_all(const store_batch *b, size_t max_bytes,
                                           store_pg_take take = STORE_PG_TAKE_ALL)
{
    std::vector<std::vector<PgArray>> chunks;
    store_pg_rows r = {};
    size_t next = 0;
    for (int n; (n = store_pg_rows_fill(&r, b, &next, max_bytes, take)) > 0;) {
        std::vector<PgArray> cols;
        for (int k = 0; k < STORE_PG_NCOLS; k++)
            cols.push_back(decode_array(r.col[k]));
        size_t total = 0;
        for (int k = 0; k < STORE_PG_NCOLS; k++)
            total += buf_len(&r.col[k]);
        EXPECT_EQ(r.bytes, total) << "the size a chunk is bounded by is its real size";
        EXPECT_EQ((size_t)n, r.nrows);
        chunks.push_back(cols);
    }
    EXPECT_EQ(next, store_batch_nadds(b));
    store_pg_rows_free(&r);
    return chunks;
}

} // namespace

TEST(StorePgRows, ColumnsAreBinaryArraysThatKeepEveryByte)
{
    store_queue q = {};
    std::string nul("a\0b\0", 4), big(3000, '\xff'), meta("{\"r\":1}");
    store_rec a = pg_job(1, "f", "", nul);                       // NUL bytes, empty unique, no meta
    store_rec b = pg_job(2, std::string("g\0h", 3), "u", "", meta.data(), 0); // meta of length 0 is none
    store_rec c = pg_job(3, "f", "u3", big, meta.data(), meta.size());
    c.reducer = "red";
    c.reducer_len = 3;
    ASSERT_EQ(store_queue_add(&q, &a), 0);
    ASSERT_EQ(store_queue_add(&q, &b), 0);
    ASSERT_EQ(store_queue_add(&q, &c), 0);
    store_batch *batch = store_queue_take(&q);
    auto chunks = fill_all(batch, STORE_PG_CHUNK_BYTES);
    ASSERT_EQ(chunks.size(), 1u);
    auto &col = chunks[0];
    const uint32_t oids[STORE_PG_NCOLS] = {20, 21, 20, 17, 17, 17, 17, 17};
    for (int k = 0; k < STORE_PG_NCOLS; k++) {
        EXPECT_EQ(col[k].ndim, 1u);
        EXPECT_EQ(col[k].lbound, 1u);
        EXPECT_EQ(col[k].len, 3u);
        EXPECT_EQ(col[k].oid, oids[k]);
        EXPECT_EQ(col[k].flags, k == STORE_PG_COL_META ? 1u : 0u) << k;
    }
    EXPECT_EQ(be_int(col[STORE_PG_COL_ID].elem[2]), 3);
    EXPECT_EQ(col[STORE_PG_COL_ID].elem[0].size(), 8u);
    EXPECT_EQ(col[STORE_PG_COL_PRIO].elem[1].size(), 2u);
    EXPECT_EQ(be_int(col[STORE_PG_COL_PRIO].elem[1]), 2);
    EXPECT_EQ(be_int(col[STORE_PG_COL_RUN_AT].elem[1]), 1700000000);
    EXPECT_EQ(col[STORE_PG_COL_DATA].elem[0], nul);
    EXPECT_EQ(col[STORE_PG_COL_DATA].elem[1], "");
    EXPECT_FALSE(col[STORE_PG_COL_DATA].null[1]) << "an empty payload is empty, not NULL";
    EXPECT_EQ(col[STORE_PG_COL_DATA].elem[2], big);
    EXPECT_EQ(col[STORE_PG_COL_FUNC].elem[1], std::string("g\0h", 3));
    EXPECT_EQ(col[STORE_PG_COL_UNIQ].elem[0], "");
    EXPECT_FALSE(col[STORE_PG_COL_UNIQ].null[0]);
    EXPECT_EQ(col[STORE_PG_COL_REDUCER].elem[2], "red");
    EXPECT_TRUE(col[STORE_PG_COL_META].null[0]);
    EXPECT_TRUE(col[STORE_PG_COL_META].null[1]);
    EXPECT_FALSE(col[STORE_PG_COL_META].null[2]);
    EXPECT_EQ(col[STORE_PG_COL_META].elem[2], meta);
    store_batch_free(batch);
}

TEST(StorePgRows, ChunksSplitAtTheByteBoundAndHoldEveryJobOnce)
{
    store_queue q = {};
    std::string data(1000, 'd');
    for (uint64_t id = 1; id <= 100; id++) {
        store_rec r = pg_job(id, "f", "", data);
        ASSERT_EQ(store_queue_add(&q, &r), 0);
    }
    ASSERT_EQ(store_queue_done(&q, 50), 0); // cancelled in this batch: skipped
    store_batch *b = store_queue_take(&q);
    auto chunks = fill_all(b, 10000);
    ASSERT_GT(chunks.size(), 5u);
    std::vector<int64_t> ids;
    for (auto &c : chunks) {
        size_t bytes = 0;
        for (auto &col : c)
            for (auto &e : col.elem)
                bytes += e.size();
        EXPECT_LT(bytes, 10000u + 1100u) << "a chunk stops once it reaches the bound";
        for (auto &e : c[STORE_PG_COL_ID].elem)
            ids.push_back(be_int(e));
    }
    ASSERT_EQ(ids.size(), 99u);
    for (size_t i = 0; i < ids.size(); i++)
        EXPECT_EQ(ids[i], (int64_t)(i < 49 ? i + 1 : i + 2)) << "in order, each once";
    // a job larger than the bound is a chunk of its own: every chunk holds at least one job
    auto one = fill_all(b, 1);
    EXPECT_EQ(one.size(), 99u);
    store_batch_free(b);
    store_queue_clear(&q);
}

TEST(StorePgRows, NewJobsAndUpdatesAreTakenApartAndAnIdOnlyOnce)
{
    store_queue q = {};
    store_rec a = pg_job(1, "f", "", "first"), u = pg_job(2, "f", "", "old version");
    ASSERT_EQ(store_queue_add(&q, &a), 0);
    ASSERT_EQ(store_queue_update(&q, &u), 0);
    store_rec a2 = pg_job(1, "f", "", "second"), u2 = pg_job(2, "f", "", "new version");
    ASSERT_EQ(store_queue_update(&q, &a2), 0); // an update of a job added in this batch
    ASSERT_EQ(store_queue_update(&q, &u2), 0);
    store_rec n = pg_job(3, "f", "", "new");
    ASSERT_EQ(store_queue_add(&q, &n), 0);
    store_batch *b = store_queue_take(&q);
    // every id once, its last version: ON CONFLICT DO UPDATE may not touch a row twice
    auto all = fill_all(b, STORE_PG_CHUNK_BYTES);
    ASSERT_EQ(all.size(), 1u);
    ASSERT_EQ(all[0][STORE_PG_COL_ID].len, 3u);
    EXPECT_EQ(all[0][STORE_PG_COL_DATA].elem[0], "second");
    EXPECT_EQ(all[0][STORE_PG_COL_DATA].elem[1], "new version");
    // new jobs (plain inserts) and possibly stored ones (upserts) apart; an add that an update
    // replaced in the same batch is taken as an update (an upsert is right either way)
    auto fresh = fill_all(b, STORE_PG_CHUNK_BYTES, STORE_PG_TAKE_NEW);
    auto upd = fill_all(b, STORE_PG_CHUNK_BYTES, STORE_PG_TAKE_UPDATES);
    ASSERT_EQ(fresh.size(), 1u);
    ASSERT_EQ(upd.size(), 1u);
    ASSERT_EQ(fresh[0][STORE_PG_COL_ID].len, 1u);
    EXPECT_EQ(be_int(fresh[0][STORE_PG_COL_ID].elem[0]), 3);
    ASSERT_EQ(upd[0][STORE_PG_COL_ID].len, 2u);
    EXPECT_EQ(be_int(upd[0][STORE_PG_COL_ID].elem[0]), 1);
    EXPECT_EQ(be_int(upd[0][STORE_PG_COL_ID].elem[1]), 2);
    store_batch_free(b);
    // nothing live: no chunk at all
    ASSERT_EQ(store_queue_add(&q, &n), 0);
    ASSERT_EQ(store_queue_done(&q, 3), 0);
    ASSERT_EQ(store_queue_update(&q, &u), 0);
    b = store_queue_take(&q);
    ASSERT_NE(b, nullptr);
    EXPECT_TRUE(fill_all(b, STORE_PG_CHUNK_BYTES, STORE_PG_TAKE_NEW).empty());
    EXPECT_EQ(fill_all(b, STORE_PG_CHUNK_BYTES, STORE_PG_TAKE_UPDATES).size(), 1u);
    store_batch_free(b);
    store_queue_clear(&q);
}

/* SPDX-License-Identifier: BSD-3-Clause */
// Unit tests for the core (engine, job, func, worker) driven through a RECORDING sink: no peers,
// no wire bytes, no store. Clients and workers are opaque tags the core hands back to the sink.
// This program links only src/libspur.a, GoogleTest and pthread (no SQLite, libev or libsystemd):
// a core module that calls up into the protocol, the store or the shell fails to link here.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

extern "C" {
#include "config.h"
#include "engine.h"
#include "func.h"
#include "job.h"
#include "options.h"
#include "submit.h"
#include "worker.h"
}

using std::string;
using std::vector;

namespace {

constexpr uint32_t GRAB = 7;     // the GRAB kind the tests hold (any nonzero code)
constexpr double GRAB_WAIT = 5.0;

// Core is an engine with a recording sink and a fake clock.
struct Core {
    config cfg;
    engine eng;
    double clock = 1000.0;
    vector<string> log;                 // one line per sink call, in order
    std::map<const peer *, bool> closing;
    char tags[32];                      // the opaque clients and workers: &tags[i]
    struct Waiters {                    // a client's list of waiters (waiter.pnode)
        list_node head;
        Waiters() { list_node_init(&head); }
        Waiters(const Waiters &) = delete;
        Waiters &operator=(const Waiters &) = delete;
        bool empty() const { return list_empty(&head); }
    };
    std::map<int, Waiters> waiters;     // each client's list of waiters
    bool started = false;
    int tell_stopped = 0;               // what the sink's job_stopped answers (the worker opted in)

    Core() { options_defaults(&cfg); }

    void start()
    {
        static const engine_ops ops = {
            [](engine *, peer *) {},
            [](engine *, peer *) {},
            [](engine *, int) {},
            [](engine *e) { return static_cast<Core *>(e->shell)->clock; },
            [](engine *, peer *) {},
        };
        static const engine_sink sink = {
            [](engine *e, peer *w) { self(e)->note("wake " + self(e)->name(w)); },
            [](engine *e, peer *w, uint32_t grab, const job *j) {
                self(e)->note("assign " + self(e)->name(w) + " " + std::to_string(grab) + " " +
                              job_payload_str(j));
            },
            [](engine *e, peer *w) { self(e)->note("no_job " + self(e)->name(w)); },
            [](engine *e, const job *j) {
                string s = "failed " + job_payload_str(j);
                job_for_each_waiter(w, j)
                    s += " " + self(e)->name(w->client);
                self(e)->note(s);
            },
            [](const engine *e, const peer *p) {
                auto &c = static_cast<Core *>(e->shell)->closing;
                auto it = c.find(p);
                return it != c.end() && it->second ? 1 : 0;
            },
            [](engine *e, const job *j) { self(e)->note("stored_gone " + job_payload_str(j)); },
            [](engine *e, peer *w, const job *j) {
                self(e)->note("stopped " + self(e)->name(w) + " " + job_payload_str(j));
                return static_cast<Core *>(e->shell)->tell_stopped;
            },
        };
        ASSERT_EQ(engine_init(&eng, &cfg, &ops, this), 0);
        engine_set_sink(&eng, &sink);
        started = true;
    }

    ~Core()
    {
        if (started)
            engine_destroy(&eng);
        config_free(&cfg);
    }

    static Core *self(engine *e) { return static_cast<Core *>(e->shell); }
    static string job_payload_str(const job *j) { return string(job_payload(j), job_payload_len(j)); }

    void note(const string &s) { log.push_back(s); }
    peer *tag(int i) { return reinterpret_cast<peer *>(&tags[i]); }
    string name(const peer *p) const
    {
        int i = (int)(reinterpret_cast<const char *>(p) - tags);
        return (i >= 20 ? "C" : "W") + std::to_string(i >= 20 ? i - 20 : i);
    }
    // client i's opaque tag (clients are 20.., workers 0..)
    peer *client(int i) { return tag(20 + i); }

    // take returns the sink calls logged since the last take.
    vector<string> take()
    {
        vector<string> out;
        out.swap(log);
        return out;
    }

    void check()
    {
        char err[256];
        ASSERT_EQ(engine_check(&eng, err, sizeof err), 0) << err;
    }

    func *fn(const string &name) { return func_get(&eng, name.data(), name.size(), 1); }

    // submit_raw makes a job ready as a submit handler does, without draining the wake-ups.
    job *submit_raw(const string &f, const string &payload, int client = -1,
                    enum job_prio prio = PRIO_NORMAL, const string &unique = "")
    {
        func *fp = fn(f);
        job *j = job_new(&eng, fp, prio, client < 0, unique.data(), unique.size(), nullptr, 0,
                         payload.data(), payload.size());
        if (j == nullptr)
            return nullptr;
        if (client >= 0) {
            EXPECT_EQ(job_add_waiter(j, this->client(client), &waiters[client].head), 0);
        }
        func_push(&eng, j, 0);
        return j;
    }

    // submit is submit_raw followed by the drain the handler's caller does.
    job *submit(const string &f, const string &payload, int client = -1,
                enum job_prio prio = PRIO_NORMAL, const string &unique = "")
    {
        job *j = submit_raw(f, payload, client, prio, unique);
        engine_drain_ready(&eng);
        return j;
    }

    worker *new_worker(int i, std::initializer_list<const char *> fns, uint32_t timeout_ms = 0)
    {
        worker *w = worker_new(&eng, tag(i));
        for (const char *f : fns)
            EXPECT_NE(worker_add(&eng, w, fn(f), timeout_ms), nullptr);
        return w;
    }

    // grab answers a GRAB as cmd.c does, returning the payload of the assigned job or "NO_JOB"
    // / "HELD".
    string grab(worker *w, job **out = nullptr)
    {
        job *j = nullptr;
        enum worker_grab g = worker_grab(&eng, w, GRAB, &j);
        engine_drain_ready(&eng);
        if (out != nullptr)
            *out = j;
        if (g == WORKER_ASSIGNED)
            return job_payload_str(j);
        return g == WORKER_HELD ? "HELD" : "NO_JOB";
    }

    void gone(worker *w)
    {
        worker_gone(&eng, w);
        engine_drain_ready(&eng);
    }

    void client_gone(int i)
    {
        job_client_gone(&eng, &waiters[i].head);
        engine_drain_ready(&eng);
    }
};

using V = vector<string>;

TEST(Core, SubmitGrabComplete)
{
    Core c;
    c.start();
    worker *w = c.new_worker(0, {"f"});
    job *j = c.submit("f", "one", 0);
    ASSERT_NE(j, nullptr);
    EXPECT_EQ(c.eng.njobs, 1u);
    job *got;
    EXPECT_EQ(c.grab(w, &got), "one");
    EXPECT_EQ(got, j);
    EXPECT_EQ(j->state, JOB_RUNNING);
    EXPECT_EQ(job_worker(j), w);
    EXPECT_EQ(c.eng.nrunning, 1u);
    c.check();
    job_free(&c.eng, j); // WORK_COMPLETE
    EXPECT_EQ(c.eng.njobs, 0u);
    EXPECT_EQ(c.eng.nrunning, 0u);
    EXPECT_TRUE(c.waiters[0].empty()) << "the client's list of waiters was emptied";
    EXPECT_EQ(c.take(), V{}) << "nothing is told to anyone: the worker was awake";
    c.check();
    c.gone(w);
}

TEST(Core, AQueuedJobCarriesNoWorkerAndARunningOneHasItsRun)
{
    /* issue 33: a queued job's fixed part (its worker and run start are a running job's only) */
    EXPECT_LE(sizeof(struct job), 64u);
    EXPECT_EQ(sizeof(struct blob), 8u);
    Core c;
    c.start();
    worker *w = c.new_worker(0, {"f"});
    job *j = c.submit("f", "one", 0);
    ASSERT_NE(j, nullptr);
    EXPECT_EQ(job_worker(j), nullptr);
    double ready = job_since(j);
    job *got;
    EXPECT_EQ(c.grab(w, &got), "one");
    ASSERT_EQ(got, j);
    EXPECT_EQ(job_worker(j), w);
    EXPECT_GE(job_since(j), ready) << "the run's start";
    double started = job_since(j);
    job_detach(&c.eng, j); /* off the worker, as a re-queue does first */
    EXPECT_EQ(job_worker(j), nullptr);
    EXPECT_EQ(job_since(j), started) << "kept after the run";
    func_push(&c.eng, j, 0);
    engine_drain_ready(&c.eng);
    c.check();
    EXPECT_EQ(c.grab(w, &got), "one");
    job_free(&c.eng, j);
    c.check();
    c.gone(w);
}

TEST(Core, ARestoredJobTakesItsNumberUnlessALiveJobHasIt)
{
    Core c;
    c.start();
    job *j = c.submit("f", "one", 1);
    ASSERT_NE(j, nullptr);
    func *f = c.fn("f");
    /* an older number than any live job's: found by it, listed in number order */
    job *old = job_new_id(&c.eng, f, PRIO_NORMAL, 1, "", 0, "", 0, "x", 1, j->id - 1000);
    ASSERT_NE(old, nullptr);
    func_push(&c.eng, old, 0);
    EXPECT_EQ(job_find_id(&c.eng, j->id - 1000), old);
    EXPECT_EQ(idtab_first(&c.eng.jobs), old);
    /* a live job's number is refused: one job a handle */
    EXPECT_EQ(job_new_id(&c.eng, f, PRIO_NORMAL, 1, "", 0, "", 0, "y", 1, j->id), nullptr);
    EXPECT_EQ(job_find_id(&c.eng, j->id), j);
    engine_drain_ready(&c.eng);
    c.check();
}

TEST(Core, GrabWithNothingReadyIsNoJob)
{
    Core c;
    c.cfg.grab_wait = 0; // no held GRABs
    c.start();
    worker *w = c.new_worker(0, {"f"});
    EXPECT_EQ(c.grab(w), "NO_JOB");
    EXPECT_TRUE(list_empty(&c.eng.held));
    c.gone(w);
}

TEST(Core, HigherPriorityFirstFifoWithin)
{
    Core c;
    c.start();
    worker *w = c.new_worker(0, {"f"});
    c.submit("f", "low1", -1, PRIO_LOW);
    c.submit("f", "norm1", -1, PRIO_NORMAL);
    c.submit("f", "high1", -1, PRIO_HIGH);
    c.submit("f", "norm2", -1, PRIO_NORMAL);
    c.submit("f", "high2", -1, PRIO_HIGH);
    c.check();
    V order;
    job *j;
    for (int i = 0; i < 5; i++) {
        order.push_back(c.grab(w, &j));
        job_free(&c.eng, j);
    }
    EXPECT_EQ(order, (V{"high1", "high2", "norm1", "norm2", "low1"}));
    c.gone(w);
}

TEST(Core, RoundRobinAcrossFunctionsOfOnePriority)
{
    Core c;
    c.start();
    worker *w = c.new_worker(0, {"a", "b"});
    c.submit("a", "a1");
    c.submit("a", "a2");
    c.submit("b", "b1");
    c.submit("b", "b2");
    V order;
    job *j;
    for (int i = 0; i < 4; i++) {
        order.push_back(c.grab(w, &j));
        job_free(&c.eng, j);
    }
    ASSERT_EQ(order.size(), 4u);
    EXPECT_NE(order[0][0], order[1][0]) << "the next grab starts with the next function";
    EXPECT_EQ(order[0][0], order[2][0]);
    EXPECT_EQ(order[1][0], order[3][0]);
    EXPECT_EQ(order[0][1], '1');
    EXPECT_EQ(order[2][1], '2');
    c.gone(w);
}

TEST(Core, PushWakesASleeperOnlyAtTheDrain)
{
    Core c;
    c.start();
    worker *w = c.new_worker(0, {"f"});
    EXPECT_EQ(worker_sleep(&c.eng, w), 0);
    c.submit_raw("f", "x");
    EXPECT_EQ(c.take(), V{}) << "a push inside a handler tells nobody yet";
    engine_drain_ready(&c.eng);
    EXPECT_EQ(c.take(), V{"wake W0"});
    engine_drain_ready(&c.eng);
    EXPECT_EQ(c.take(), V{}) << "a drain does each wake-up once";
    c.check();
    c.gone(w);
}

TEST(Core, HeldGrabGetsThePushedJobAfterTheDrainNotInsideTheHandler)
{
    Core c;
    c.cfg.grab_wait = GRAB_WAIT;
    c.start();
    worker *w = c.new_worker(0, {"f"});
    EXPECT_EQ(c.grab(w), "HELD");
    EXPECT_EQ(worker_of_held(list_first(&c.eng.held)), w);
    job *j = c.submit_raw("f", "x", 0);
    EXPECT_EQ(c.take(), V{}) << "no assign from inside the handler that pushed";
    EXPECT_EQ(j->state, JOB_READY);
    char err[256];
    EXPECT_NE(engine_check(&c.eng, err, sizeof err), 0) << "a wake-up is pending";
    engine_drain_ready(&c.eng);
    EXPECT_EQ(c.take(), (V{"assign W0 7 x"})) << "the GRAB kind it was held with comes back";
    EXPECT_EQ(j->state, JOB_RUNNING);
    EXPECT_EQ(job_worker(j), w);
    EXPECT_TRUE(list_empty(&c.eng.held));
    c.check();
    c.gone(w);
}

TEST(Core, HeldGrabGetsNoJobAtItsDeadline)
{
    Core c;
    c.cfg.grab_wait = GRAB_WAIT;
    c.start();
    worker *w = c.new_worker(0, {"f"});
    EXPECT_EQ(c.grab(w), "HELD");
    EXPECT_DOUBLE_EQ(engine_next_timer(&c.eng), c.clock + GRAB_WAIT);
    engine_run_timers(&c.eng, c.clock + GRAB_WAIT / 2);
    EXPECT_EQ(c.take(), V{});
    engine_run_timers(&c.eng, c.clock + GRAB_WAIT);
    EXPECT_EQ(c.take(), V{"no_job W0"});
    EXPECT_TRUE(list_empty(&c.eng.held));
    EXPECT_LT(engine_next_timer(&c.eng), 0);
    c.check();
    c.gone(w);
}

TEST(Core, OldestHeldGrabServedFirst)
{
    Core c;
    c.cfg.grab_wait = GRAB_WAIT;
    c.start();
    worker *w0 = c.new_worker(0, {"f"});
    worker *w1 = c.new_worker(1, {"f"});
    EXPECT_EQ(c.grab(w1), "HELD");
    EXPECT_EQ(c.grab(w0), "HELD");
    c.submit("f", "x");
    EXPECT_EQ(c.take(), V{"assign W1 7 x"});
    c.check();
    c.gone(w0); // a held worker that goes is told nothing
    EXPECT_EQ(c.take(), V{});
    c.gone(w1);
}

TEST(Core, WorkerLossRequeuesAtTheHead)
{
    Core c;
    c.start();
    worker *w0 = c.new_worker(0, {"f"});
    c.submit("f", "first", 0);
    EXPECT_EQ(c.grab(w0), "first");
    c.submit("f", "second", 1);
    c.gone(w0);
    worker *w1 = c.new_worker(1, {"f"});
    job *j;
    EXPECT_EQ(c.grab(w1, &j), "first") << "a lost job goes back to the front";
    EXPECT_EQ(j->retries, 1u);
    EXPECT_EQ(c.take(), V{});
    c.check();
    c.gone(w1);
}

TEST(Core, WorkerLossWakesASleeperAfterTheDrain)
{
    Core c;
    c.start();
    worker *w0 = c.new_worker(0, {"f"});
    worker *w1 = c.new_worker(1, {"f"});
    c.submit("f", "x");
    EXPECT_EQ(c.grab(w0), "x");
    EXPECT_EQ(worker_sleep(&c.eng, w1), 0);
    worker_gone(&c.eng, w0);
    EXPECT_EQ(c.take(), V{});
    engine_drain_ready(&c.eng);
    EXPECT_EQ(c.take(), V{"wake W1"});
    c.check();
    c.gone(w1);
}

TEST(Core, RetriesExhaustedFailsTheJobToItsClients)
{
    Core c;
    c.cfg.job_retries = 1;
    c.start();
    worker *w = c.new_worker(0, {"f"});
    job *j = c.submit("f", "x", 3);
    ASSERT_EQ(job_add_waiter(j, c.client(4), &c.waiters[4].head), 0);
    EXPECT_EQ(c.grab(w), "x");
    c.gone(w);
    V got = c.take();
    ASSERT_EQ(got.size(), 1u);
    EXPECT_TRUE(got[0] == "failed x C4 C3" || got[0] == "failed x C3 C4") << got[0];
    EXPECT_EQ(c.eng.njobs, 0u);
    EXPECT_TRUE(c.waiters[3].empty());
    EXPECT_TRUE(c.waiters[4].empty());
    c.check();
}

TEST(Core, ForegroundJobWithNoClientLeftIsDroppedOnLoss)
{
    Core c;
    c.start();
    worker *w = c.new_worker(0, {"f"});
    c.submit("f", "x", 0);
    EXPECT_EQ(c.grab(w), "x");
    c.client_gone(0);
    EXPECT_EQ(c.eng.njobs, 1u) << "a running job stays with its worker";
    c.gone(w);
    EXPECT_EQ(c.eng.njobs, 0u) << "and is not re-queued for nobody";
    EXPECT_EQ(c.take(), V{});
    c.check();
}

TEST(Core, ClientGoneFreesQueuedForegroundJobsOnly)
{
    Core c;
    c.start();
    job *fg = c.submit("f", "fg", 0);
    job *bg = c.submit("f", "bg", -1, PRIO_NORMAL, "u");
    ASSERT_EQ(job_add_waiter(bg, c.client(0), &c.waiters[0].head), 0); // coalesced onto a bg job
    (void)fg;
    c.client_gone(0);
    EXPECT_EQ(c.eng.njobs, 1u);
    EXPECT_EQ(job_find_unique(&c.eng, c.fn("f"), "u", 1, "bg", 2), bg);
    EXPECT_FALSE(job_has_waiters(bg));
    c.check();
}

TEST(Core, CantDoRequeuesOnlyThatFunctionsJobs)
{
    Core c;
    c.start();
    worker *w = c.new_worker(0, {"a", "b"});
    job *ja = c.submit("a", "xa");
    job *jb = c.submit("b", "xb");
    job *j1, *j2;
    c.grab(w, &j1);
    c.grab(w, &j2);
    ASSERT_EQ(c.eng.nrunning, 2u);
    worker_cant_do(&c.eng, w, c.fn("a"));
    engine_drain_ready(&c.eng);
    EXPECT_EQ(ja->state, JOB_READY);
    EXPECT_EQ(jb->state, JOB_RUNNING);
    EXPECT_EQ(w->nabilities, 1u);
    c.check();
    worker_reset_abilities(&c.eng, w);
    engine_drain_ready(&c.eng);
    EXPECT_EQ(jb->state, JOB_READY);
    EXPECT_EQ(w->nabilities, 0u);
    c.check();
    c.gone(w);
}

TEST(Core, CancelQueuedJobFailsAndFreesIt)
{
    Core c;
    c.start();
    job *j = c.submit("f", "x", 2);
    job_cancel(&c.eng, j);
    EXPECT_EQ(c.take(), V{"failed x C2"});
    EXPECT_EQ(c.eng.njobs, 0u);
    EXPECT_TRUE(c.waiters[2].empty());
    c.check();
}

TEST(Core, CancelRunningJobLeavesItToTheWorkerUnretried)
{
    Core c;
    c.start();
    worker *w = c.new_worker(0, {"f"});
    job *j = c.submit("f", "x", 2);
    j->flags |= JOB_BACKGROUND | JOB_STORED; // as if a background submit had joined it
    EXPECT_EQ(c.grab(w), "x");
    job_cancel(&c.eng, j);
    EXPECT_EQ(c.take(), (V{"failed x C2", "stopped W0 x", "stored_gone x"}));
    EXPECT_EQ(c.eng.stats.cancelled_running, 1u);
    EXPECT_EQ(j->state, JOB_RUNNING);
    EXPECT_FALSE(job_has_waiters(j));
    EXPECT_EQ(j->flags & (JOB_BACKGROUND | JOB_STORED), 0);
    c.gone(w);
    EXPECT_EQ(c.eng.njobs, 0u) << "its worker's loss drops it";
    EXPECT_EQ(c.take(), V{}) << "and the store is not told twice";
    c.check();
}

TEST(Core, CancelRunningJobOfAToldWorkerFreesItAtOnce)
{
    Core c;
    c.tell_stopped = 1;
    c.start();
    worker *w = c.new_worker(0, {"f"});
    job *j = c.submit("f", "x", 2);
    j->flags |= JOB_STORED;
    EXPECT_EQ(c.grab(w), "x");
    job_cancel(&c.eng, j);
    EXPECT_EQ(c.take(), (V{"failed x C2", "stopped W0 x", "stored_gone x"}));
    EXPECT_EQ(c.eng.njobs, 0u) << "the worker was told: nothing more to wait for";
    EXPECT_EQ(c.eng.nrunning, 0u);
    EXPECT_EQ(c.eng.stats.cancelled_running, 1u);
    EXPECT_TRUE(c.waiters[2].empty());
    c.check();
    c.gone(w);
}

TEST(Core, FreeingAStoredJobTellsTheStore)
{
    Core c;
    c.start();
    job *j = c.submit("f", "x");
    j->flags |= JOB_STORED;
    job_free(&c.eng, j);
    EXPECT_EQ(c.take(), V{"stored_gone x"});
}

TEST(Core, CoalescingByUnique)
{
    Core c;
    c.start();
    func *f = c.fn("f");
    job *j = c.submit("f", "p1", 0, PRIO_NORMAL, "u1");
    EXPECT_EQ(job_find_unique(&c.eng, f, "u1", 2, "other", 5), j) << "the payload does not matter";
    func *g = c.fn("g");
    EXPECT_EQ(job_find_unique(&c.eng, g, "u1", 2, "p1", 2), nullptr) << "per function";
    func_release(&c.eng, g); // as a handler that made a function and did not use it
    EXPECT_EQ(job_find_unique_any(&c.eng, "u1", 2), j);
    job *d = c.submit("f", "same", 0, PRIO_NORMAL, "-");
    EXPECT_EQ(job_find_unique(&c.eng, f, "-", 1, "same", 4), d) << "'-' coalesces on payload";
    EXPECT_EQ(job_find_unique(&c.eng, f, "-", 1, "diff", 4), nullptr);
    c.submit("f", "e", 0);
    EXPECT_EQ(job_find_unique(&c.eng, f, "", 0, "e", 1), nullptr) << "an empty unique never";
    c.check();
}

TEST(Core, WakeOneSleeperPerReadyJobByDefault)
{
    Core c;
    c.start();
    worker *w[3];
    for (int i = 0; i < 3; i++) {
        w[i] = c.new_worker(i, {"f"});
        EXPECT_EQ(worker_sleep(&c.eng, w[i]), 0);
    }
    c.submit_raw("f", "a");
    c.submit_raw("f", "b");
    engine_drain_ready(&c.eng);
    EXPECT_EQ(c.take(), (V{"wake W0", "wake W1"}));
    c.submit("f", "c");
    EXPECT_EQ(c.take(), (V{"wake W2"}));
    for (auto *x : w)
        c.gone(x);
}

TEST(Core, WorkerWakeupNWakesNPerPushEvenWhenDeferred)
{
    Core c;
    c.cfg.worker_wakeup = 1;
    c.start();
    worker *w[3];
    for (int i = 0; i < 3; i++) {
        w[i] = c.new_worker(i, {"f"});
        EXPECT_EQ(worker_sleep(&c.eng, w[i]), 0);
    }
    c.submit_raw("f", "a");
    c.submit_raw("f", "b");
    engine_drain_ready(&c.eng);
    EXPECT_EQ(c.take(), (V{"wake W0", "wake W1"})) << "one per push, as before the deferral";
    for (auto *x : w)
        c.gone(x);
}

TEST(Core, ClosingWorkerIsNotWoken)
{
    Core c;
    c.start();
    worker *w0 = c.new_worker(0, {"f"});
    worker *w1 = c.new_worker(1, {"f"});
    EXPECT_EQ(worker_sleep(&c.eng, w0), 0);
    EXPECT_EQ(worker_sleep(&c.eng, w1), 0);
    c.closing[c.tag(0)] = true;
    c.submit("f", "x");
    EXPECT_EQ(c.take(), V{"wake W1"});
    c.gone(w0);
    c.gone(w1);
}

TEST(Core, CanDoTimeoutFailsOrRequeues)
{
    for (int requeue = 0; requeue < 2; requeue++) {
        Core c;
        c.cfg.can_do_timeout_requeue = requeue;
        c.cfg.job_retries = -1;
        c.start();
        worker *w = c.new_worker(0, {"f"}, 100);
        job *j = c.submit("f", "x", 1);
        EXPECT_EQ(c.grab(w), "x");
        EXPECT_DOUBLE_EQ(engine_next_timer(&c.eng), c.clock + 0.1);
        engine_run_timers(&c.eng, c.clock + 0.2);
        if (requeue) {
            EXPECT_EQ(c.take(), V{"stopped W0 x"}) << "the worker is told in both cases";
            EXPECT_EQ(j->state, JOB_READY);
            EXPECT_EQ(j->retries, 1u);
        } else {
            EXPECT_EQ(c.take(), (V{"stopped W0 x", "failed x C1"}));
            EXPECT_EQ(c.eng.njobs, 0u);
        }
        c.check();
        c.gone(w);
    }
}

// Issue 27 item 12: with --can-do-timeout=requeue, the worker that passed the timeout takes the
// job back with its late result, from the queue or from the worker it was handed to; in fail mode
// and for a worker that never held the job, nothing is taken.
TEST(Core, LateWorkerReclaimsAJobItPassedTheTimeoutOf)
{
    for (int requeue = 0; requeue < 2; requeue++) {
        Core c;
        c.cfg.can_do_timeout_requeue = requeue;
        c.cfg.job_retries = -1;
        c.start();
        worker *slow = c.new_worker(0, {"f"}, 100);
        worker *other = c.new_worker(1, {"f"});
        job *j = c.submit("f", "x", 1);
        EXPECT_EQ(c.grab(slow), "x");
        engine_run_timers(&c.eng, c.clock + 0.2);
        if (!requeue) { // failed and freed: nothing to take back
            EXPECT_EQ(c.eng.njobs, 0u);
            c.gone(slow);
            c.gone(other);
            continue;
        }
        ASSERT_EQ(j->state, JOB_READY);
        EXPECT_EQ(worker_reclaim(&c.eng, other, j), 0) << "other never passed its timeout";
        EXPECT_EQ(worker_reclaim(&c.eng, slow, j), 1) << "from the queue";
        EXPECT_EQ(j->state, JOB_RUNNING);
        EXPECT_EQ(job_worker(j), slow);
        c.check();
        // once more: it times out again, another worker takes it, the slow one takes it back
        engine_run_timers(&c.eng, c.clock + 1.0);
        ASSERT_EQ(j->state, JOB_READY);
        EXPECT_EQ(c.grab(other), "x");
        EXPECT_EQ(worker_reclaim(&c.eng, slow, j), 1) << "from the other worker";
        EXPECT_EQ(job_worker(j), slow);
        EXPECT_EQ(other->nrunning, 0u);
        EXPECT_EQ(worker_reclaim(&c.eng, slow, j), 0) << "it holds it: nothing to take";
        c.check();
        c.take();
        c.gone(slow);
        c.gone(other);
    }
}

TEST(Core, LateWorkerRemembersOnlyItsLastTimedOutJobs)
{
    Core c;
    c.cfg.can_do_timeout_requeue = 1;
    c.cfg.job_retries = -1;
    c.start();
    worker *w = c.new_worker(0, {"f"}, 100);
    vector<job *> jobs;
    for (int i = 0; i <= WORKER_LATE_JOBS; i++) {
        jobs.push_back(c.submit("f", std::to_string(i), 1));
        EXPECT_EQ(c.grab(w), std::to_string(i));
        c.clock += 0.001; // one deadline after another
    }
    engine_run_timers(&c.eng, c.clock + 1.0);
    EXPECT_EQ(worker_reclaim(&c.eng, w, jobs[0]), 0) << "the oldest was forgotten";
    for (int i = 1; i <= WORKER_LATE_JOBS; i++)
        EXPECT_EQ(worker_reclaim(&c.eng, w, jobs[i]), 1) << i;
    c.check();
    c.gone(w);
}

TEST(Core, FutureJobBecomesReadyAndWakesAtItsTime)
{
    Core c;
    c.start();
    worker *w = c.new_worker(0, {"f"});
    EXPECT_EQ(worker_sleep(&c.eng, w), 0);
    job *j = job_new(&c.eng, c.fn("f"), PRIO_NORMAL, 1, nullptr, 0, nullptr, 0, "x", 1);
    ASSERT_EQ(job_defer(&c.eng, j, c.clock + 60), 0);
    c.check();
    engine_run_timers(&c.eng, c.clock + 59);
    EXPECT_EQ(c.take(), V{});
    engine_run_timers(&c.eng, c.clock + 60);
    EXPECT_EQ(c.take(), V{"wake W0"}) << "engine_run_timers drains what it pushed";
    EXPECT_EQ(j->state, JOB_READY);
    c.check();
    c.gone(w);
}

TEST(Core, BeginShutdownReleasesHeldGrabsAndAssignsNothing)
{
    Core c;
    c.cfg.grab_wait = GRAB_WAIT;
    c.start();
    worker *w0 = c.new_worker(0, {"f"});
    worker *w1 = c.new_worker(1, {"f"});
    EXPECT_EQ(c.grab(w0), "HELD");
    EXPECT_EQ(worker_sleep(&c.eng, w1), 0);
    engine_begin_shutdown(&c.eng);
    EXPECT_EQ(c.take(), V{"no_job W0"});
    EXPECT_TRUE(list_empty(&c.eng.held));
    c.submit("f", "x");
    EXPECT_EQ(c.take(), V{}) << "nobody is woken";
    EXPECT_EQ(c.grab(w0), "NO_JOB") << "nothing new is assigned, nor held";
    EXPECT_EQ(worker_sleep(&c.eng, w1), 0);
    c.check();
    c.gone(w0);
    c.gone(w1);
}

TEST(Core, StatsSnapshot)
{
    Core c;
    c.cfg.grab_wait = GRAB_WAIT;
    c.start();
    worker *w0 = c.new_worker(0, {"f", "g"});
    worker *w1 = c.new_worker(1, {"h"});
    c.submit("f", "a", -1, PRIO_HIGH);
    c.submit("f", "b", -1, PRIO_LOW);
    c.submit("g", "c", -1, PRIO_LOW);
    EXPECT_EQ(c.grab(w0), "a");
    EXPECT_EQ(c.grab(w1), "HELD");
    engine_snapshot st;
    engine_stats_get(&c.eng, &st);
    EXPECT_EQ(st.jobs, 3u);
    EXPECT_EQ(st.running, 1u);
    EXPECT_EQ(st.queued[PRIO_HIGH], 0u);
    EXPECT_EQ(st.queued[PRIO_NORMAL], 0u);
    EXPECT_EQ(st.queued[PRIO_LOW], 2u);
    EXPECT_EQ(st.functions, 3u);
    EXPECT_EQ(st.workers, 2u);
    EXPECT_EQ(st.abilities, 3u);
    EXPECT_EQ(st.held, 1u);
    EXPECT_EQ(st.peers, 0u);
    c.gone(w0);
    c.gone(w1);
    engine_stats_get(&c.eng, &st);
    EXPECT_EQ(st.workers, 0u);
    EXPECT_EQ(st.held, 0u);
    EXPECT_EQ(st.running, 0u);
    EXPECT_EQ(st.queued[PRIO_LOW], 2u) << "background jobs stay queued";
}

TEST(Core, FunctionKeptAfterItsLastWorkerAndJobThenEvictedLeastRecentFirst)
{
    Core c;
    c.cfg.max_functions = 3;
    c.start();
    worker *w = c.new_worker(0, {"f"});
    EXPECT_EQ(worker_sleep(&c.eng, w), 0);
    job *j = c.submit_raw("f", "x");
    job_free(&c.eng, j); // freed before the drain: the pending wake-up must not outlive f
    c.gone(w);
    func *f = func_get(&c.eng, "f", 1, 0);
    ASSERT_NE(f, nullptr) << "kept, as gearmand keeps it, until dropped or evicted";
    engine_drain_ready(&c.eng);
    EXPECT_EQ(c.take(), V{});
    c.check();
    // g is made and released after f, h is in use: past the limit f goes first, then g
    func_release(&c.eng, c.fn("g"));
    job *hj = c.submit_raw("h", "y");
    EXPECT_FALSE(func_full(&c.eng));
    func *i = c.fn("i");
    ASSERT_NE(i, nullptr);
    EXPECT_EQ(func_get(&c.eng, "f", 1, 0), nullptr) << "the least recently released went";
    EXPECT_NE(func_get(&c.eng, "g", 1, 0), nullptr);
    EXPECT_EQ(c.eng.stats.functions_evicted, 1u);
    func_release(&c.eng, i);
    // g is taken again (a worker) and released: i is now the older of the two unused
    worker *w2 = c.new_worker(1, {"g"});
    c.gone(w2);
    func_release(&c.eng, c.fn("j"));
    EXPECT_EQ(func_get(&c.eng, "i", 1, 0), nullptr);
    EXPECT_NE(func_get(&c.eng, "g", 1, 0), nullptr);
    EXPECT_EQ(c.eng.stats.functions_evicted, 2u);
    // g and j unused, h in use: a limit keeps one, nothing else can go
    func_get(&c.eng, "g", 1, 0)->max_queue[0] = 5;
    func_release(&c.eng, c.fn("k")); // evicts j (g's entry is skipped: it has a limit now)
    EXPECT_EQ(func_get(&c.eng, "j", 1, 0), nullptr);
    EXPECT_EQ(c.eng.stats.functions_evicted, 3u);
    func *l = c.fn("l"); // k goes; l is held by its caller, g limited, h in use
    ASSERT_NE(l, nullptr);
    EXPECT_EQ(c.fn("m"), nullptr) << "nothing unused is left to evict";
    EXPECT_TRUE(func_full(&c.eng));
    EXPECT_EQ(c.eng.stats.functions_evicted, 4u);
    func_release(&c.eng, l);
    job_free(&c.eng, hj);
    c.check();
}

// same_unique_candidates counts what a lookup of the unique u (across functions) walks: the
// objects of the unique index stored under u's hash that have u. One per distinct unique, or a
// lookup costs O(jobs with that unique) (the index used to hold every function's job of u under
// u's hash: 2,000 functions sharing a unique made each submit walk 2,000 slots).
size_t same_unique_candidates(const engine *e, const string &u)
{
    size_t n = 0;
    hmap_probe pr;
    for (void *o = hmap_first(&e->jobs_by_unique, hmap_hash_bytes(u.data(), u.size(), e->seed),
                              &pr);
         o != nullptr; o = hmap_next(&pr)) {
        const job *j = static_cast<const job *>(o);
        n += string(job_unique(j), j->unique_len) == u;
    }
    return n;
}

TEST(Core, OneUniqueInManyFunctionsIsOneEntryPerLookup)
{
    Core c;
    c.start();
    const int n = 2000;
    vector<job *> js;
    for (int i = 0; i < n; i++)
        js.push_back(c.submit("f" + std::to_string(i), "x", -1, PRIO_NORMAL, "shared"));
    job *other = c.submit("f0", "x", -1, PRIO_NORMAL, "other");
    job *dash = c.submit("f0", "p", -1, PRIO_NORMAL, "-");
    c.check();
    EXPECT_EQ(c.eng.jobs_by_unique.count, (size_t)n + 2) << "one entry per job, no more";
    EXPECT_EQ(same_unique_candidates(&c.eng, "shared"), 1u);
    for (int i = 0; i < n; i++) {
        string f = "f" + std::to_string(i);
        ASSERT_EQ(job_find_unique(&c.eng, c.fn(f), "shared", 6, "y", 1), js[i]) << f;
    }
    EXPECT_EQ(job_find_unique_any(&c.eng, "shared", 6), js[0]) << "the oldest";
    EXPECT_EQ(job_find_unique_any(&c.eng, "other", 5), other);
    EXPECT_EQ(job_find_unique_any(&c.eng, "-", 1), nullptr) << "\"-\" is never looked up";
    EXPECT_EQ(job_find_unique(&c.eng, c.fn("f0"), "-", 1, "p", 1), dash);
    EXPECT_EQ(job_find_unique(&c.eng, c.fn("f1"), "-", 1, "p", 1), nullptr);
    EXPECT_EQ(job_find_unique(&c.eng, c.fn("f0"), "-", 1, "q", 1), nullptr);
    // removals from the middle, then the head each time: the next oldest answers, still one
    for (int i = 1; i < n; i += 2)
        job_free(&c.eng, js[i]);
    c.check();
    for (int i = 0; i < n; i += 2) {
        EXPECT_EQ(same_unique_candidates(&c.eng, "shared"), 1u);
        ASSERT_EQ(job_find_unique_any(&c.eng, "shared", 6), js[i]);
        job_free(&c.eng, js[i]);
    }
    c.check();
    EXPECT_EQ(job_find_unique_any(&c.eng, "shared", 6), nullptr);
    EXPECT_EQ(same_unique_candidates(&c.eng, "shared"), 0u);
    EXPECT_EQ(c.eng.jobs_by_unique.count, 2u);
}

TEST(Core, UniqueLookupsHoldAfterRemovalsInEveryOrder)
{
    // four jobs of one unique (three functions, and a second unique in one of them): every
    // order of removal keeps the oldest left as the answer and every job found by its function
    vector<int> order = {0, 1, 2, 3};
    do {
        Core c;
        c.start();
        vector<job *> js = {c.submit("a", "1", -1, PRIO_NORMAL, "u"),
                            c.submit("b", "2", -1, PRIO_NORMAL, "u"),
                            c.submit("a", "3", -1, PRIO_NORMAL, "v"),
                            c.submit("c", "4", -1, PRIO_NORMAL, "u")};
        const char *fns[] = {"a", "b", "a", "c"};
        const char *us[] = {"u", "u", "v", "u"};
        vector<bool> live(4, true);
        for (int k : order) {
            job_free(&c.eng, js[k]);
            live[k] = false;
            c.check();
            for (const char *u : {"u", "v"}) {
                job *oldest = nullptr;
                for (int i = 0; i < 4 && oldest == nullptr; i++)
                    if (live[i] && string(us[i]) == u)
                        oldest = js[i];
                ASSERT_EQ(job_find_unique_any(&c.eng, u, 1), oldest) << u;
                ASSERT_LE(same_unique_candidates(&c.eng, u), 1u);
            }
            for (int i = 0; i < 4; i++) {
                func *fp = func_get(&c.eng, fns[i], 1, 0); // (not created again)
                ASSERT_EQ(fp != nullptr ? job_find_unique(&c.eng, fp, us[i], 1, "", 0) : nullptr,
                          live[i] ? js[i] : nullptr);
            }
        }
        EXPECT_EQ(c.eng.jobs_by_unique.count, 0u);
    } while (std::next_permutation(order.begin(), order.end()));
}

// ------------------------------------------------------------ job_submit, one case per result

// Store is a fake durable store behind engine.durable: it records what the core submit asks.
struct Store {
    static int add_rc, ack_rc;
    static vector<string> calls;
    static int add(engine *, job *j, void *owner, double due, const char *meta, size_t ml)
    {
        calls.push_back("add " + Core::job_payload_str(j) + (owner ? " owner" : " none") +
                        " due=" + std::to_string((long)due) + " meta=" + string(meta ? meta : "", ml));
        return add_rc;
    }
    static int ack(engine *, job *j, void *owner)
    {
        calls.push_back("ack " + Core::job_payload_str(j) + (owner ? " owner" : " none"));
        return ack_rc;
    }
    static void attach(engine *e)
    {
        add_rc = ack_rc = 0;
        calls.clear();
        e->durable.add = add;
        e->durable.ack = ack;
    }
};
int Store::add_rc, Store::ack_rc;
vector<string> Store::calls;

// req builds a submit request of function f with payload data (kept alive by the caller).
submit_req req(const string &f, const string &data, const string &unique = "", int bg = 1)
{
    submit_req rq{};
    rq.func = f.data();
    rq.func_len = f.size();
    rq.unique = unique.data();
    rq.unique_len = unique.size();
    rq.data = data.data();
    rq.data_len = data.size();
    rq.prio = PRIO_NORMAL;
    rq.background = bg;
    return rq;
}

TEST(CoreSubmit, CreatedQueuesTheJobCountsItAndAssignsAtTheDrain)
{
    Core c;
    c.start();
    worker *w = c.new_worker(0, {"f"});
    EXPECT_EQ(c.grab(w), "HELD");
    string f = "f", d = "one";
    submit_req rq = req(f, d);
    submit_out out;
    ASSERT_EQ(job_submit(&c.eng, &rq, &out), SUBMIT_CREATED);
    ASSERT_NE(out.job, nullptr);
    EXPECT_EQ(out.job->state, JOB_READY);
    EXPECT_TRUE(out.job->flags & JOB_BACKGROUND);
    EXPECT_EQ(c.eng.stats.jobs[JOB_EV_SUBMITTED][PRIO_NORMAL], 1u);
    EXPECT_EQ(c.take(), V{}) << "the wake-up waits for the drain";
    engine_drain_ready(&c.eng);
    EXPECT_EQ(c.take(), V{"assign W0 7 one"});
    c.check();
    c.gone(w);
}

TEST(CoreSubmit, CreatedWithAFutureDueTimeIsDeferred)
{
    Core c;
    c.start();
    string f = "f", d = "later";
    submit_req rq = req(f, d);
    rq.due = c.clock + 60;
    submit_out out;
    ASSERT_EQ(job_submit(&c.eng, &rq, &out), SUBMIT_CREATED);
    EXPECT_EQ(out.job->state, JOB_FUTURE);
    c.check();
}

TEST(CoreSubmit, JoinedASameUniqueJobAndAForegroundOwnerWaitsOnIt)
{
    Core c;
    c.start();
    string f = "f", d1 = "first", d2 = "second", u = "U";
    submit_req a = req(f, d1, u, 0);
    a.client = c.client(0);
    a.client_jobs = &c.waiters[0].head;
    submit_out o1, o2;
    ASSERT_EQ(job_submit(&c.eng, &a, &o1), SUBMIT_CREATED);
    submit_req b = req(f, d2, u, 0);
    b.client = c.client(1);
    b.client_jobs = &c.waiters[1].head;
    ASSERT_EQ(job_submit(&c.eng, &b, &o2), SUBMIT_JOINED);
    EXPECT_EQ(o2.job, o1.job);
    EXPECT_EQ(job_nwaiters(o1.job), 2u);
    EXPECT_EQ(Core::job_payload_str(o1.job), "first") << "the new payload is ignored";
    EXPECT_EQ(c.eng.stats.jobs[JOB_EV_COALESCED][PRIO_NORMAL], 1u);
    EXPECT_EQ(c.eng.njobs, 1u);
    // a background submit of the same unique makes it background (no store: at once)
    submit_req bg = req(f, d2, u, 1);
    ASSERT_EQ(job_submit(&c.eng, &bg, &o2), SUBMIT_JOINED);
    EXPECT_TRUE(o1.job->flags & JOB_BACKGROUND);
    c.check();
}

TEST(CoreSubmit, JoinedADeadLetterJobBringsItBackThroughTheHook)
{
    Core c;
    c.start();
    static int revived;
    revived = 0;
    c.eng.ext.job_revive = [](engine *e, job *j) {
        revived++;
        j->func->parked--;
        j->state = JOB_LIMBO;
        func_push(e, j, 0);
    };
    string f = "f", d = "x", u = "U1";
    submit_req rq = req(f, d, u);
    submit_out o1, o2;
    ASSERT_EQ(job_submit(&c.eng, &rq, &o1), SUBMIT_CREATED);
    job_detach(&c.eng, o1.job); // failed into the dead-letter list, as jobx parks it
    o1.job->state = JOB_FAILED;
    o1.job->func->parked++;
    submit_req load = rq;
    load.flags = SUBMIT_JOIN_AS_IS; // a 'load' of a job that is there changes nothing
    ASSERT_EQ(job_submit(&c.eng, &load, &o2), SUBMIT_JOINED);
    EXPECT_EQ(revived, 0);
    EXPECT_EQ(o1.job->state, JOB_FAILED);
    ASSERT_EQ(job_submit(&c.eng, &rq, &o2), SUBMIT_JOINED);
    EXPECT_EQ(o2.job, o1.job);
    EXPECT_EQ(revived, 1);
    EXPECT_EQ(o1.job->state, JOB_READY);
    c.check();
}

TEST(CoreSubmit, HeldForTheOwnerUntilDurable)
{
    Core c;
    c.start();
    Store::attach(&c.eng);
    string f = "f", d = "x", u = "U";
    submit_req rq = req(f, d, u);
    rq.owner = c.client(0);
    rq.due = c.clock + 60;
    submit_out o1, o2;
    ASSERT_EQ(job_submit(&c.eng, &rq, &o1), SUBMIT_HELD);
    ASSERT_NE(o1.job, nullptr);
    EXPECT_EQ(o1.job->state, JOB_LIMBO) << "runnable once durable, by the store";
    EXPECT_EQ(Store::calls, V{"add x owner due=" + std::to_string((long)rq.due) + " meta="});
    // a join of a job not yet durable waits too (the store's ack) ...
    o1.job->state = JOB_PENDING;
    ASSERT_EQ(job_submit(&c.eng, &rq, &o2), SUBMIT_HELD);
    EXPECT_EQ(Store::calls.back(), "ack x owner");
    // ... but a submit without an owner holds nothing
    submit_req none = req(f, d, u);
    ASSERT_EQ(job_submit(&c.eng, &none, &o2), SUBMIT_JOINED);
    string d2 = "y";
    submit_req fresh = req(f, d2);
    ASSERT_EQ(job_submit(&c.eng, &fresh, &o2), SUBMIT_CREATED);
    EXPECT_EQ(Store::calls.back(), "add y none due=0 meta=");
    c.eng.durable = engine_durable{};
}

TEST(CoreSubmit, BadNameCreatesNoFunctionWhateverTheEntry)
{
    Core c;
    c.start();
    string f("a\0b", 3), d = "x";
    submit_req rq = req(f, d);
    submit_out out;
    EXPECT_EQ(job_submit(&c.eng, &rq, &out), SUBMIT_BAD_NAME);
    EXPECT_EQ(out.job, nullptr);
    EXPECT_EQ(c.eng.njobs, 0u);
    EXPECT_EQ(c.eng.funcs.count, 0u);
    // the check is in function creation itself, so no entry point can skip it
    EXPECT_EQ(func_get(&c.eng, f.data(), f.size(), 1), nullptr);
    EXPECT_EQ(c.eng.funcs.count, 0u);
    c.check();
}

TEST(CoreSubmit, QueueFullAtMaxqueue)
{
    Core c;
    c.start();
    c.fn("f")->max_queue[PRIO_NORMAL] = 1;
    string f = "f", d1 = "1", d2 = "2";
    submit_req a = req(f, d1), b = req(f, d2);
    submit_out out;
    ASSERT_EQ(job_submit(&c.eng, &a, &out), SUBMIT_CREATED);
    EXPECT_EQ(job_submit(&c.eng, &b, &out), SUBMIT_QUEUE_FULL);
    EXPECT_EQ(out.job, nullptr);
    EXPECT_EQ(c.eng.njobs, 1u);
    EXPECT_EQ(c.eng.stats.submit_refused[SUBMIT_QUEUE_FULL], 1u) << "refusals are counted";
    EXPECT_EQ(c.eng.stats.submit_refused[SUBMIT_CREATED], 0u) << "successes are not";
    b.flags = SUBMIT_NO_MAXQUEUE | SUBMIT_LIMBO; // a 'load' restores what was
    ASSERT_EQ(job_submit(&c.eng, &b, &out), SUBMIT_CREATED);
    EXPECT_EQ(out.job->state, JOB_LIMBO) << "left to the caller";
    job_free(&c.eng, out.job);
    c.check();
}

TEST(CoreSubmit, TooManyFunctionsWhenNoneCanBeEvicted)
{
    Core c;
    c.cfg.max_functions = 1;
    c.start();
    string a = "a", b = "b", d = "x";
    submit_req ra = req(a, d), rb = req(b, d);
    submit_out out;
    ASSERT_EQ(job_submit(&c.eng, &ra, &out), SUBMIT_CREATED);
    EXPECT_EQ(job_submit(&c.eng, &rb, &out), SUBMIT_TOO_MANY_FUNCTIONS);
    EXPECT_EQ(c.eng.njobs, 1u);
    c.check();
}

TEST(CoreSubmit, NoMemoryWhenTheJobCannotWaitLeavesNothing)
{
    Core c;
    c.start();
    string f = "f", d = "x";
    uint64_t after[1] = {1};
    submit_req rq = req(f, d);
    rq.after = after;
    rq.nafter = 1;
    submit_out out;
    // no feature owns waiting: the job cannot wait
    EXPECT_EQ(job_submit(&c.eng, &rq, &out), SUBMIT_NO_MEMORY);
    c.eng.ext.job_wait = [](engine *, job *, const uint64_t *, size_t) { return -1; };
    EXPECT_EQ(job_submit(&c.eng, &rq, &out), SUBMIT_NO_MEMORY);
    EXPECT_EQ(out.job, nullptr);
    EXPECT_EQ(c.eng.njobs, 0u);
    EXPECT_EQ(c.eng.stats.jobs[JOB_EV_SUBMITTED][PRIO_NORMAL], 0u);
    c.check();
}

TEST(CoreSubmit, StoreErrorFreesTheNewJob)
{
    Core c;
    c.start();
    Store::attach(&c.eng);
    Store::add_rc = -1;
    string f = "f", d = "x";
    submit_req rq = req(f, d);
    rq.owner = c.client(0);
    submit_out out;
    EXPECT_EQ(job_submit(&c.eng, &rq, &out), SUBMIT_STORE_ERROR);
    EXPECT_EQ(out.job, nullptr);
    EXPECT_EQ(c.eng.njobs, 0u);
    c.eng.durable = engine_durable{};
    c.check();
}

TEST(CoreSubmit, WaitRefusedByTheFeatureThatOwnsWaiting)
{
    Core c;
    c.start();
    c.eng.ext.wait_refused = [](const engine *, const uint64_t *, size_t) -> const char * {
        return "WAITING_FULL Too+many";
    };
    string f = "f", d = "x";
    uint64_t after[1] = {1};
    submit_req rq = req(f, d);
    rq.after = after;
    rq.nafter = 1;
    submit_out out;
    EXPECT_EQ(job_submit(&c.eng, &rq, &out), SUBMIT_WAIT_REFUSED);
    EXPECT_STREQ(out.why, "WAITING_FULL Too+many");
    EXPECT_EQ(c.eng.njobs, 0u);
    // allowed, the hook makes it wait: created, not queued
    c.eng.ext.wait_refused = nullptr;
    c.eng.ext.job_wait = [](engine *, job *j, const uint64_t *, size_t) {
        j->state = JOB_WAITING;
        j->func->parked++;
        return 0;
    };
    ASSERT_EQ(job_submit(&c.eng, &rq, &out), SUBMIT_CREATED);
    EXPECT_EQ(out.job->state, JOB_WAITING);
    out.job->func->parked--;
    out.job->state = JOB_LIMBO;
    job_free(&c.eng, out.job);
    c.check();
}

} // namespace

// Issue 29 (features plug in): a feature reaches the core only through engine_ext. The core
// offers a failed job to ext.job_failed (a feature that takes it keeps the job in a place of its
// own), calls ext.job_left when such a job leaves that place, ext.job_gone when a job is freed
// without completing, runs ext.check[] in engine_check and ext.destroy[] in engine_destroy.
// (Before, the core called jobx by name, and this program could not have linked without it.)
namespace {

int destroyed = 0; // teardowns engine_destroy ran through ext.destroy

void hook_attach(engine *e)
{
    e->ext.job_failed = [](engine *e, job *j, const char *err, size_t len) {
        string p = Core::job_payload_str(j);
        Core::self(e)->note("ext failed " + p + " " + string(err, len));
        if (p != "take")
            return 0;
        job_detach(e, j); // the feature's own place, as jobx's dead-letter list
        j->state = JOB_FAILED;
        j->func->parked++;
        return 1;
    };
    e->ext.job_left = [](engine *e, job *j, int state) {
        Core::self(e)->note("ext left " + Core::job_payload_str(j) + " " +
                            (state == JOB_FAILED ? "failed" : "other"));
        j->func->parked--;
    };
    e->ext.job_gone = [](engine *e, job *j) {
        Core::self(e)->note("ext gone " + Core::job_payload_str(j));
    };
    ASSERT_EQ(engine_ext_join(
                  e, [](const engine *e, char *err, size_t errlen) {
                      return static_cast<Core *>(e->shell)->log.empty()
                                 ? 0
                                 : engine_check_fail(err, errlen, "feature check: log not empty");
                  },
                  [](engine *) { destroyed++; }),
              0);
}

} // namespace

TEST(Core, FeatureHooksAreCalledWhereAJobFailsLeavesAndGoes)
{
    destroyed = 0;
    {
        Core c;
        c.cfg.job_retries = -1;
        c.start();
        hook_attach(&c.eng);
        worker *w = c.new_worker(0, {"f"}, 100);
        job *kept = c.submit("f", "take");
        kept->flags |= JOB_BACKGROUND;
        EXPECT_EQ(c.grab(w), "take");
        engine_run_timers(&c.eng, c.clock + 0.2); // past its CAN_DO_TIMEOUT
        EXPECT_EQ(c.take(), (V{"stopped W0 take", "ext failed take CAN_DO_TIMEOUT"}));
        EXPECT_EQ(kept->state, JOB_FAILED) << "the feature took it: not failed, not freed";
        EXPECT_EQ(c.eng.njobs, 1u);
        c.check();

        job *other = c.submit("f", "x", 1);
        EXPECT_EQ(c.grab(w), "x");
        engine_run_timers(&c.eng, c.clock + 0.4);
        EXPECT_EQ(c.take(),
                  (V{"stopped W0 x", "ext failed x CAN_DO_TIMEOUT", "failed x C1", "ext gone x"}))
            << "not taken: failed to its client and freed as without the feature";
        (void)other;

        job_free(&c.eng, kept);
        EXPECT_EQ(c.take(), (V{"ext left take failed", "ext gone take"}));
        EXPECT_EQ(c.eng.njobs, 0u);
        c.check();
        c.note("unexpected");
        char err[256];
        EXPECT_EQ(engine_check(&c.eng, err, sizeof err), -1) << "ext.check[] runs";
        EXPECT_STREQ(err, "feature check: log not empty");
        c.take();
        c.gone(w);
        EXPECT_EQ(destroyed, 0);
    }
    EXPECT_EQ(destroyed, 1) << "engine_destroy ran the feature's teardown";
}

// slot_check is a distinct check function per N (distinct code, so never folded into one).
int slot_calls[ENGINE_EXT_SLOTS + 1];
template <int N> int slot_check(const engine *, char *, size_t)
{
    slot_calls[N]++;
    return 0;
}

TEST(Core, FeatureSlotsAreJoinedOnceAndBounded)
{
    Core c;
    c.start();
    static_assert(ENGINE_EXT_SLOTS == 8, "one check per slot, and one more");
    static const engine_ext_check_fn checks[ENGINE_EXT_SLOTS + 1] = {
        slot_check<0>, slot_check<1>, slot_check<2>, slot_check<3>, slot_check<4>,
        slot_check<5>, slot_check<6>, slot_check<7>, slot_check<8>};
    EXPECT_EQ(engine_ext_join(&c.eng, checks[0], nullptr), 0);
    EXPECT_EQ(engine_ext_join(&c.eng, checks[0], nullptr), 0) << "joined again: the same slot";
    for (int i = 1; i < ENGINE_EXT_SLOTS; i++)
        EXPECT_EQ(engine_ext_join(&c.eng, checks[i], nullptr), 0);
    EXPECT_EQ(engine_ext_join(&c.eng, checks[ENGINE_EXT_SLOTS], nullptr), -1) << "all taken";
    engine_ext_leave(&c.eng, checks[1], nullptr);
    EXPECT_EQ(engine_ext_join(&c.eng, checks[ENGINE_EXT_SLOTS], nullptr), 0) << "a freed slot";
    int n = 0;
    for (int i = 0; i < ENGINE_EXT_SLOTS; i++)
        n += c.eng.ext.check[i] != nullptr;
    EXPECT_EQ(n, ENGINE_EXT_SLOTS);
    c.check();
    EXPECT_EQ(slot_calls[1], 0) << "a check that left is not run";
    int others = 0;
    for (int i = 0; i <= ENGINE_EXT_SLOTS; i++)
        others += i != 1 ? slot_calls[i] : 0;
    EXPECT_EQ(others, ENGINE_EXT_SLOTS);
}

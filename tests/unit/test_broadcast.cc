/* SPDX-License-Identifier: BSD-3-Clause */
// Unit tests for broadcast functions (ext/broadcast.c), driven through peers with the fake shell
// (no sockets); engine_check, with the feature's own check, runs after every packet and line.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fake_shell.h"

extern "C" {
#include "broadcast.h"
#include "func.h"
#include "job.h"
#include "store_batch.h"
#include "submit.h"
#include "worker.h"
}

using std::string;

namespace {

using fake::join;

// packets splits s into (command, body) pairs.
std::vector<std::pair<uint32_t, string>> packets(const string &s)
{
    std::vector<std::pair<uint32_t, string>> out;
    for (size_t i = 0; i + 12 <= s.size();) {
        uint32_t cmd = proto_get32(s.data() + i + 4), len = proto_get32(s.data() + i + 8);
        out.emplace_back(cmd, s.substr(i + 12, len));
        i += 12 + len;
    }
    return out;
}

} // namespace

class BroadcastTest : public ::testing::Test {
  protected:
    FakeShell f;
    peer *c = nullptr, *a = nullptr;
    void SetUp() override
    {
        f.cfg.job_handle_prefix = strdup("H:t");
        f.cfg.grab_wait = 0;
    }
    void start()
    {
        f.start();
        c = f.connect();
        a = f.connect();
    }
    void TearDown() override { check(); }
    void check()
    {
        char err[256];
        ASSERT_EQ(engine_check(&f.eng, err, sizeof err), 0) << err;
    }
    void send(peer *p, uint32_t cmd, const string &body)
    {
        ASSERT_EQ(FakeShell::feed(p, FakeShell::req(cmd, body)), 0);
        engine_drain_ready(&f.eng);
        check();
    }
    string admin(const string &line)
    {
        EXPECT_EQ(FakeShell::feed(a, line + "\n"), 0);
        check();
        return FakeShell::take(a);
    }
    peer *worker(const string &fn = "flush")
    {
        peer *w = f.connect();
        send(w, CMD_CAN_DO, fn);
        return w;
    }
    // submit sends a submit packet and returns the reply (command, body).
    std::pair<uint32_t, string> submit(uint32_t cmd, const string &fn, const string &data)
    {
        send(c, cmd, join({fn, "", data}));
        auto p = packets(FakeShell::take(c));
        EXPECT_EQ(p.size(), 1u);
        return p.empty() ? std::make_pair(0u, string()) : p[0];
    }
    // grab returns the JOB_ASSIGN body w gets, "" for NO_JOB.
    string grab(peer *w)
    {
        send(w, CMD_GRAB_JOB, "");
        auto p = packets(FakeShell::take(w));
        EXPECT_EQ(p.size(), 1u);
        if (p.empty() || p[0].first != CMD_JOB_ASSIGN)
            return "";
        return p[0].second;
    }
    static string handle_of(const string &assign) { return assign.substr(0, assign.find('\0')); }
    bcast *x() { return broadcast_of(&f.eng); }
};

TEST_F(BroadcastTest, EachWorkerGetsItsOwnCopyOnceWithItsOwnHandle)
{
    start();
    ASSERT_EQ(admin("broadcast flush on"), "OK\r\n");
    peer *w[3] = {worker(), worker(), worker()};
    auto r = submit(CMD_SUBMIT_JOB_BG, "flush", "payload");
    ASSERT_EQ(r.first, (uint32_t)CMD_JOB_CREATED);
    EXPECT_EQ(x()->pending, 3u);
    EXPECT_EQ(f.eng.njobs, 0u) << "waiting copies are not jobs";
    std::vector<string> handles;
    for (peer *p : w) {
        string got = grab(p);
        ASSERT_EQ(got.substr(got.find('\0')), string("\0flush\0payload", 14));
        handles.push_back(handle_of(got));
        EXPECT_EQ(grab(p), "") << "once";
    }
    EXPECT_NE(handles[0], handles[1]);
    EXPECT_NE(handles[1], handles[2]);
    EXPECT_NE(handles[0], r.second) << "the submit's handle names no job";
    EXPECT_EQ(job_find_handle(&f.eng, r.second.data(), r.second.size()), nullptr);
    EXPECT_EQ(f.eng.nrunning, 3u);
    for (size_t i = 0; i < 3; i++)
        send(w[i], CMD_WORK_COMPLETE, join({handles[i], ""}));
    EXPECT_EQ(f.eng.njobs, 0u);
    EXPECT_EQ(f.eng.stats.broadcast_jobs, 1u);
    EXPECT_EQ(f.eng.stats.broadcast_delivered, 3u);
    EXPECT_EQ(f.eng.stats.broadcast_lost, 0u);
}

TEST_F(BroadcastTest, SleepersAreWokenAndAHeldGrabIsAnsweredAtOnce)
{
    f.cfg.grab_wait = 5;
    start();
    ASSERT_EQ(admin("broadcast flush on"), "OK\r\n");
    peer *sleeper = worker(), *held = worker();
    send(sleeper, CMD_PRE_SLEEP, "");
    send(held, CMD_GRAB_JOB, ""); // held (--grab-wait)
    EXPECT_EQ(FakeShell::take(held), "");
    submit(CMD_SUBMIT_JOB_BG, "flush", "x");
    auto hp = packets(FakeShell::take(held));
    ASSERT_EQ(hp.size(), 1u);
    EXPECT_EQ(hp[0].first, (uint32_t)CMD_JOB_ASSIGN);
    auto sp = packets(FakeShell::take(sleeper));
    ASSERT_EQ(sp.size(), 1u);
    EXPECT_EQ(sp[0].first, (uint32_t)CMD_NOOP);
    EXPECT_NE(grab(sleeper), "");
    // a PRE_SLEEP with a copy waiting is answered with a NOOP at once
    submit(CMD_SUBMIT_JOB_BG, "flush", "y");
    send(sleeper, CMD_PRE_SLEEP, "");
    sp = packets(FakeShell::take(sleeper));
    ASSERT_EQ(sp.size(), 1u);
    EXPECT_EQ(sp[0].first, (uint32_t)CMD_NOOP);
}

TEST_F(BroadcastTest, ForegroundDeferredAndWaitingSubmitsAreRefused)
{
    start();
    ASSERT_EQ(admin("broadcast flush on"), "OK\r\n");
    peer *w = worker();
    auto r = submit(CMD_SUBMIT_JOB, "flush", "fg");
    EXPECT_EQ(r.first, (uint32_t)CMD_ERROR);
    EXPECT_EQ(r.second, string("BROADCAST_FUNCTION\0A broadcast function takes background jobs "
                               "only", 66));
    submit_req rq = {};
    rq.func = "flush";
    rq.func_len = 5;
    rq.unique = "";
    rq.data = "d";
    rq.data_len = 1;
    rq.prio = PRIO_NORMAL;
    rq.background = 1;
    rq.due = f.clock + 60;
    submit_out out;
    EXPECT_EQ(job_submit(&f.eng, &rq, &out), SUBMIT_BROADCAST_REFUSED);
    EXPECT_STREQ(out.why, "BROADCAST_FUNCTION A+broadcast+job+runs+at+once:+no+epoch+or+schedule");
    uint64_t after = 1;
    rq.due = 0;
    rq.after = &after;
    rq.nafter = 1;
    EXPECT_EQ(job_submit(&f.eng, &rq, &out), SUBMIT_BROADCAST_REFUSED);
    EXPECT_EQ(f.eng.stats.submit_refused[SUBMIT_BROADCAST_REFUSED], 3u);
    rq.nafter = 0;
    EXPECT_EQ(job_submit(&f.eng, &rq, &out), SUBMIT_BROADCAST);
    EXPECT_EQ(out.job, nullptr);
    EXPECT_NE(out.id, 0u);
    EXPECT_EQ(f.eng.stats.submit_refused[SUBMIT_BROADCAST], 0u) << "not a refusal";
    EXPECT_NE(grab(w), "");
    EXPECT_EQ(grab(w), "");
}

TEST_F(BroadcastTest, ALeavingWorkerLosesItsWaitingAndRunningCopies)
{
    start();
    ASSERT_EQ(admin("broadcast flush on"), "OK\r\n");
    peer *w1 = worker(), *w2 = worker(), *w3 = worker();
    submit(CMD_SUBMIT_JOB_BG, "flush", "a");
    submit(CMD_SUBMIT_JOB_BG, "flush", "b");
    EXPECT_NE(grab(w2), ""); // w2 runs its copy of a
    f.disconnect(w1);         // two copies waiting: lost
    check();
    f.disconnect(w2);         // one running, one waiting: lost, not re-queued
    check();
    EXPECT_EQ(f.eng.stats.broadcast_lost, 4u);
    EXPECT_EQ(x()->pending, 2u);
    EXPECT_EQ(f.eng.njobs, 0u);
    EXPECT_NE(grab(w3), "");
    EXPECT_NE(grab(w3), "");
    EXPECT_EQ(grab(w3), "") << "nothing of w1's or w2's came to w3";
    EXPECT_EQ(x()->pending, 0u);
}

TEST_F(BroadcastTest, CantDoAndResetAbilitiesDropOnlyTheirCopies)
{
    start();
    ASSERT_EQ(admin("broadcast flush on"), "OK\r\n");
    ASSERT_EQ(admin("broadcast other on"), "OK\r\n");
    peer *w = worker();
    send(w, CMD_CAN_DO, "other");
    submit(CMD_SUBMIT_JOB_BG, "flush", "1");
    submit(CMD_SUBMIT_JOB_BG, "other", "2");
    EXPECT_EQ(w->worker->ninbox, 2u);
    send(w, CMD_CANT_DO, "flush");
    EXPECT_EQ(f.eng.stats.broadcast_lost, 1u);
    string got = grab(w);
    EXPECT_EQ(got.substr(got.find('\0')), string("\0other\0" "2", 8));
    submit(CMD_SUBMIT_JOB_BG, "other", "3");
    send(w, CMD_RESET_ABILITIES, "");
    EXPECT_EQ(f.eng.stats.broadcast_lost, 3u) << "the running copy and the waiting one";
    EXPECT_EQ(f.eng.njobs, 0u);
}

TEST_F(BroadcastTest, BacklogBoundsTheCopiesWaitingForOneWorker)
{
    f.cfg.broadcast_backlog = 2;
    start();
    ASSERT_EQ(admin("broadcast flush on"), "OK\r\n");
    peer *w = worker();
    for (int i = 0; i < 5; i++)
        submit(CMD_SUBMIT_JOB_BG, "flush", std::to_string(i));
    EXPECT_EQ(w->worker->ninbox, 2u);
    EXPECT_EQ(f.eng.stats.broadcast_lost, 3u);
    EXPECT_EQ(f.eng.stats.broadcast_unheard, 0u);
}

TEST_F(BroadcastTest, NoWorkerDropsItAndOffMakesTheFunctionOrdinary)
{
    start();
    ASSERT_EQ(admin("broadcast flush on"), "OK\r\n");
    EXPECT_EQ(submit(CMD_SUBMIT_JOB_BG, "flush", "x").first, (uint32_t)CMD_JOB_CREATED);
    EXPECT_EQ(f.eng.stats.broadcast_unheard, 1u);
    peer *w1 = worker(), *w2 = worker();
    EXPECT_EQ(grab(w1), "") << "not kept for a later worker";
    submit(CMD_SUBMIT_JOB_BG, "flush", "y");
    ASSERT_EQ(admin("broadcast flush off"), "OK\r\n");
    EXPECT_EQ(admin("broadcast list"), "flush\toff\t2\t2\n.\n") << "kept while copies wait";
    EXPECT_NE(grab(w1), "");
    EXPECT_NE(grab(w2), "");
    EXPECT_EQ(admin("broadcast list"), ".\n");
    EXPECT_EQ(submit(CMD_SUBMIT_JOB, "flush", "fg").first, (uint32_t)CMD_JOB_CREATED)
        << "an ordinary function again";
}

TEST_F(BroadcastTest, TheSettingKeepsTheFunctionAndIsARecord)
{
    f.cfg.max_functions = 2;
    start();
    ASSERT_EQ(admin("broadcast flush on"), "OK\r\n");
    submit(CMD_SUBMIT_JOB_BG, "a", "a job keeps a");
    ASSERT_EQ(admin("broadcast b on"), "ERR TOO_MANY_FUNCTIONS Function+limit+reached+(--max-"
                                       "functions)\r\n");
    const func *fl = func_get(&f.eng, "flush", 5, 0);
    ASSERT_NE(fl, nullptr);
    EXPECT_TRUE(fl->broadcast);
    EXPECT_FALSE(func_unused(fl)) << "not evicted past --max-functions";
    std::vector<string> keys;
    f.eng.ext.record_each[STORE_REC_BROADCAST](
        &f.eng,
        [](void *ctx, const store_record *r) {
            static_cast<std::vector<string> *>(ctx)->emplace_back(r->key, r->key_len);
            EXPECT_EQ(string((const char *)r->value, r->value_len), "on");
        },
        &keys);
    EXPECT_EQ(keys, std::vector<string>{"flush"});
    ASSERT_EQ(admin("broadcast flush off"), "OK\r\n");
    store_record on = {STORE_REC_BROADCAST, "a", 1, "on", 2};
    char err[128] = "";
    EXPECT_EQ(f.eng.ext.record_restored[STORE_REC_BROADCAST](&f.eng, &on, err, sizeof err), 0);
    EXPECT_EQ(admin("broadcast list"), "a\ton\t0\t0\n.\n");
    store_record bad = {STORE_REC_BROADCAST, "a", 1, "yes", 3};
    EXPECT_EQ(f.eng.ext.record_restored[STORE_REC_BROADCAST](&f.eng, &bad, err, sizeof err), -1);
}

TEST_F(BroadcastTest, ConfigFunctionsAreOnAtStart)
{
    f.cfg.broadcast[0] = strdup("one");
    f.cfg.broadcast[1] = strdup("t%09b");
    f.cfg.nbroadcast = 2;
    start();
    EXPECT_NE(broadcast_find(&f.eng, "one", 3), nullptr);
    EXPECT_NE(broadcast_find(&f.eng, "t\tb", 3), nullptr);
    EXPECT_EQ(x()->nfuncs, 2u);
}

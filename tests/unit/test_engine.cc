/* SPDX-License-Identifier: BSD-3-Clause */
// Unit tests for the job engine, driven through peers with the fake shell (no sockets).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fake_shell.h"

extern "C" {
#include "func.h"
#include "job.h"
#include "worker.h"
}

using std::string;

namespace {

using fake::join;

struct Pkt {
    uint32_t cmd;
    std::vector<string> args; // body split on NUL
    string body;
};

// parse splits a reply stream into packets.
std::vector<Pkt> parse(const string &s)
{
    std::vector<Pkt> out;
    size_t off = 0;
    while (off + 12 <= s.size()) {
        EXPECT_EQ(s.substr(off, 4), string("\0RES", 4));
        Pkt p;
        p.cmd = proto_get32(s.data() + off + 4);
        uint32_t size = proto_get32(s.data() + off + 8);
        p.body = s.substr(off + 12, size);
        size_t start = 0;
        for (size_t i = 0; i <= p.body.size(); i++)
            if (i == p.body.size() || p.body[i] == '\0') {
                p.args.push_back(p.body.substr(start, i - start));
                start = i + 1;
            }
        out.push_back(p);
        off += 12 + size;
    }
    EXPECT_EQ(off, s.size());
    return out;
}

} // namespace

class EngineTest : public ::testing::Test {
  protected:
    FakeShell f;
    void SetUp() override
    {
        f.cfg.job_handle_prefix = strdup("H:t");
        f.cfg.grab_wait = 0; // gearmand's immediate NO_JOB; HeldGrabTest covers --grab-wait
        f.start();
    }
    void TearDown() override { check(); }

    void check()
    {
        char err[256];
        ASSERT_EQ(engine_check(&f.eng, err, sizeof err), 0) << err;
        ASSERT_EQ(session_check(&f.eng, err, sizeof err), 0) << err;
    }
    void send(peer *p, uint32_t cmd, const string &body)
    {
        ASSERT_EQ(FakeShell::feed(p, FakeShell::req(cmd, body)), 0);
        check();
    }
    std::vector<Pkt> recv(peer *p) { return parse(FakeShell::take(p)); }

    // submit sends a submit packet and returns the handle from JOB_CREATED.
    string submit(peer *c, uint32_t cmd, const string &fn, const string &uq, const string &data)
    {
        send(c, cmd, join({fn, uq, data}));
        auto r = recv(c);
        EXPECT_EQ(r.size(), 1u);
        if (r.empty())
            return "";
        EXPECT_EQ(r[0].cmd, (uint32_t)CMD_JOB_CREATED) << r[0].body;
        return r[0].body;
    }
    // grab asks for a job and returns the JOB_ASSIGN_UNIQ arguments (empty on NO_JOB).
    std::vector<string> grab(peer *w)
    {
        send(w, CMD_GRAB_JOB_UNIQ, "");
        auto r = recv(w);
        EXPECT_EQ(r.size(), 1u);
        if (r.empty() || r[0].cmd == CMD_NO_JOB)
            return {};
        EXPECT_EQ(r[0].cmd, (uint32_t)CMD_JOB_ASSIGN_UNIQ);
        return r[0].args;
    }
};

// A handle is the prefix, ':' and the job number in decimal, for every length of number
// (job_handle_id writes two digits at a time from the end after counting them).
TEST_F(EngineTest, HandleIsPrefixColonAndDecimalNumber)
{
    std::vector<uint64_t> ids = {0, 1, 9, 10, 11, 99, 100, 101, 12345, UINT64_MAX, UINT64_MAX - 1};
    for (uint64_t p = 1; p <= UINT64_MAX / 10; p *= 10) {
        ids.push_back(p * 10 - 1);
        ids.push_back(p * 10);
        ids.push_back(p * 10 + 1);
    }
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 1000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        ids.push_back(x >> (i % 64));
    }
    for (uint64_t id : ids) {
        char h[JOB_HANDLE_BUF], want[JOB_HANDLE_BUF];
        size_t n = job_handle_id(&f.eng, id, h);
        int wn = snprintf(want, sizeof want, "H:t:%llu", (unsigned long long)id);
        ASSERT_EQ(n, (size_t)wn) << id;
        ASSERT_STREQ(h, want) << id;
    }
}

TEST_F(EngineTest, SubmitGrabCompleteDeliversResult)
{
    peer *c = f.connect();
    peer *w = f.connect();
    send(w, CMD_CAN_DO, "rev");
    string h = submit(c, CMD_SUBMIT_JOB, "rev", "u1", "hello");
    EXPECT_EQ(h.rfind("H:t:", 0), 0u);
    auto a = grab(w);
    ASSERT_EQ(a.size(), 4u);
    EXPECT_EQ(a[0], h);
    EXPECT_EQ(a[1], "rev");
    EXPECT_EQ(a[2], "u1");
    EXPECT_EQ(a[3], "hello");
    send(w, CMD_WORK_COMPLETE, join({h, "olleh"}));
    auto r = recv(c);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].cmd, (uint32_t)CMD_WORK_COMPLETE);
    EXPECT_EQ(r[0].body, join({h, "olleh"}));
    EXPECT_EQ(f.eng.njobs, 0u);
    EXPECT_TRUE(grab(w).empty());
}

TEST_F(EngineTest, PriorityIsGlobalAcrossFunctions)
{
    peer *c = f.connect();
    peer *w = f.connect();
    send(w, CMD_CAN_DO, "a");
    send(w, CMD_CAN_DO, "b");
    submit(c, CMD_SUBMIT_JOB_LOW_BG, "b", "", "low-b");
    submit(c, CMD_SUBMIT_JOB_BG, "b", "", "norm-b");
    submit(c, CMD_SUBMIT_JOB_HIGH_BG, "a", "", "high-a");
    submit(c, CMD_SUBMIT_JOB_LOW_BG, "a", "", "low-a");
    std::vector<string> order;
    for (int i = 0; i < 4; i++) {
        auto a = grab(w);
        ASSERT_EQ(a.size(), 4u);
        order.push_back(a[3]);
        send(w, CMD_WORK_COMPLETE, join({a[0], ""}));
    }
    EXPECT_EQ(order, (std::vector<string>{"high-a", "norm-b", "low-b", "low-a"}));
}

TEST_F(EngineTest, RoundRobinAcrossFunctionsOfOnePriority)
{
    peer *c = f.connect();
    peer *w = f.connect();
    send(w, CMD_CAN_DO, "a");
    send(w, CMD_CAN_DO, "b");
    for (int i = 0; i < 3; i++)
        submit(c, CMD_SUBMIT_JOB_BG, "a", "", "a" + std::to_string(i));
    for (int i = 0; i < 3; i++)
        submit(c, CMD_SUBMIT_JOB_BG, "b", "", "b" + std::to_string(i));
    string order;
    for (int i = 0; i < 6; i++) {
        auto a = grab(w);
        ASSERT_EQ(a.size(), 4u);
        order += a[3] + " ";
    }
    EXPECT_EQ(order, "a0 b0 a1 b1 a2 b2 ");
}

TEST_F(EngineTest, RoundRobinOverQueuedJobsStartsWithTheLastCanDo)
{
    peer *c = f.connect();
    for (const char *fn : {"a", "b", "c"})
        for (int i = 0; i < 2; i++)
            submit(c, CMD_SUBMIT_JOB_BG, fn, "", fn + std::to_string(i));
    peer *w = f.connect();
    send(w, CMD_CAN_DO, "a");
    send(w, CMD_CAN_DO, "b");
    send(w, CMD_CAN_DO, "c");
    string order;
    for (int i = 0; i < 6; i++) {
        auto a = grab(w);
        ASSERT_EQ(a.size(), 4u);
        order += a[3] + " ";
    }
    EXPECT_EQ(order, "c0 b0 a0 c1 b1 a1 "); /* gearmand -R: the last CAN_DO first, backwards */
}

TEST_F(EngineTest, CoalescedClientsAllGetResults)
{
    peer *c1 = f.connect();
    peer *c2 = f.connect();
    peer *w = f.connect();
    string h1 = submit(c1, CMD_SUBMIT_JOB, "f", "same", "x");
    string h2 = submit(c2, CMD_SUBMIT_JOB, "f", "same", "other payload ignored");
    EXPECT_EQ(h1, h2);
    EXPECT_NE(submit(c2, CMD_SUBMIT_JOB, "g", "same", "x"), h1) << "unique is per function";
    send(w, CMD_CAN_DO, "f");
    auto a = grab(w);
    ASSERT_EQ(a.size(), 4u);
    EXPECT_EQ(a[3], "x");
    send(w, CMD_WORK_DATA, join({h1, "part"}));
    send(w, CMD_WORK_COMPLETE, join({h1, "done"}));
    for (peer *c : {c1, c2}) {
        auto r = recv(c);
        ASSERT_EQ(r.size(), 2u);
        EXPECT_EQ(r[0].cmd, (uint32_t)CMD_WORK_DATA);
        EXPECT_EQ(r[1].cmd, (uint32_t)CMD_WORK_COMPLETE);
    }
}

TEST_F(EngineTest, EmptyUniqueNeverCoalescesDashCoalescesOnPayload)
{
    peer *c = f.connect();
    EXPECT_NE(submit(c, CMD_SUBMIT_JOB_BG, "f", "", "x"), submit(c, CMD_SUBMIT_JOB_BG, "f", "", "x"));
    string d1 = submit(c, CMD_SUBMIT_JOB_BG, "f", "-", "same");
    EXPECT_EQ(submit(c, CMD_SUBMIT_JOB_BG, "f", "-", "same"), d1);
    EXPECT_NE(submit(c, CMD_SUBMIT_JOB_BG, "f", "-", "diff"), d1);
}

TEST_F(EngineTest, UniqueOf64BytesCoalescesAnd65IsRejected)
{
    peer *c = f.connect();
    string u64(64, 'u');
    EXPECT_EQ(submit(c, CMD_SUBMIT_JOB_BG, "f", u64, "1"), submit(c, CMD_SUBMIT_JOB_BG, "f", u64, "2"));
    send(c, CMD_SUBMIT_JOB_BG, join({"f", string(65, 'u'), "x"}));
    auto r = recv(c);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].cmd, (uint32_t)CMD_ERROR);
    EXPECT_EQ(r[0].body, join({"ARGUMENT_TOO_LARGE", "Unique value too large"}));
}

TEST_F(EngineTest, WorkerLossRequeuesToFrontAndClientGetsNewResult)
{
    peer *c = f.connect();
    peer *w1 = f.connect();
    peer *w2 = f.connect();
    send(w1, CMD_CAN_DO, "f");
    send(w2, CMD_CAN_DO, "f");
    string h = submit(c, CMD_SUBMIT_JOB, "f", "", "first");
    submit(c, CMD_SUBMIT_JOB, "f", "", "second");
    ASSERT_EQ(grab(w1)[3], "first");
    f.disconnect(w1);
    check();
    auto a = grab(w2);
    ASSERT_EQ(a.size(), 4u);
    EXPECT_EQ(a[3], "first") << "a re-queued job keeps its place";
    send(w2, CMD_WORK_COMPLETE, join({h, "ok"}));
    auto r = recv(c);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].body, join({h, "ok"}));
}

TEST_F(EngineTest, RetriesExhaustedFailsTheJob)
{
    f.cfg.job_retries = 2; /* handed out twice, failed on the second loss (as gearmand -j 2) */
    peer *c = f.connect();
    string h = submit(c, CMD_SUBMIT_JOB, "f", "", "x");
    for (int attempt = 0; attempt < 2; attempt++) {
        peer *w = f.connect();
        send(w, CMD_CAN_DO, "f");
        ASSERT_EQ(grab(w).size(), 4u) << attempt;
        f.disconnect(w);
        check();
    }
    auto r = recv(c);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].cmd, (uint32_t)CMD_WORK_FAIL);
    EXPECT_EQ(r[0].body, h);
    EXPECT_EQ(f.eng.njobs, 0u);
}

TEST_F(EngineTest, ZeroRetriesFailsOnFirstLoss)
{
    f.cfg.job_retries = 0;
    peer *c = f.connect();
    peer *w = f.connect();
    send(w, CMD_CAN_DO, "f");
    string h = submit(c, CMD_SUBMIT_JOB, "f", "", "x");
    ASSERT_EQ(grab(w).size(), 4u);
    send(w, CMD_RESET_ABILITIES, "");
    auto r = recv(c);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].cmd, (uint32_t)CMD_WORK_FAIL);
}

TEST_F(EngineTest, CanDoTimeoutFailsJobAndLateResultIsNotFound)
{
    peer *c = f.connect();
    peer *w = f.connect();
    send(w, CMD_CAN_DO_TIMEOUT, join({"f", "1500"}));
    string h = submit(c, CMD_SUBMIT_JOB, "f", "", "x");
    ASSERT_EQ(grab(w).size(), 4u);
    f.clock += 1.0;
    engine_run_timers(&f.eng, f.clock);
    EXPECT_TRUE(recv(c).empty()) << "not yet";
    f.clock += 1.0;
    engine_run_timers(&f.eng, f.clock);
    check();
    auto r = recv(c);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].cmd, (uint32_t)CMD_WORK_FAIL);
    send(w, CMD_WORK_COMPLETE, join({h, "late"}));
    auto e = recv(w);
    ASSERT_EQ(e.size(), 1u);
    EXPECT_EQ(e[0].body, join({"JOB_NOT_FOUND", "Job given in work result not found"}));
}

TEST_F(EngineTest, CompletedJobLeavesNoTimer)
{
    peer *c = f.connect();
    peer *w = f.connect();
    send(w, CMD_CAN_DO_TIMEOUT, join({"f", "100"}));
    string h = submit(c, CMD_SUBMIT_JOB, "f", "", "x");
    ASSERT_EQ(grab(w).size(), 4u);
    send(w, CMD_WORK_COMPLETE, join({h, "done"}));
    EXPECT_LT(engine_next_timer(&f.eng), 0) << "the timer died with its job";
    f.clock += 10;
    engine_run_timers(&f.eng, f.clock);
    EXPECT_EQ(recv(c).size(), 1u) << "only the WORK_COMPLETE";
}

TEST_F(EngineTest, EpochJobWaitsThenWakesSleepingWorker)
{
    peer *c = f.connect();
    peer *w = f.connect();
    send(w, CMD_CAN_DO, "f");
    string when = std::to_string((long long)f.clock + 5);
    send(c, CMD_SUBMIT_JOB_EPOCH, join({"f", "", when, "later"}));
    ASSERT_EQ(recv(c).size(), 1u);
    EXPECT_TRUE(grab(w).empty()) << "not due yet";
    send(w, CMD_PRE_SLEEP, "");
    EXPECT_TRUE(recv(w).empty()) << "no NOOP for a job that is not due";
    EXPECT_DOUBLE_EQ(engine_next_timer(&f.eng), f.clock + 5);
    f.clock += 5;
    engine_run_timers(&f.eng, f.clock);
    auto r = recv(w);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].cmd, (uint32_t)CMD_NOOP);
    EXPECT_EQ(grab(w)[3], "later");
}

TEST_F(EngineTest, SleepingWorkerGetsOneNoopUntilItGrabs)
{
    peer *c = f.connect();
    peer *w = f.connect();
    send(w, CMD_CAN_DO, "f");
    send(w, CMD_PRE_SLEEP, "");
    submit(c, CMD_SUBMIT_JOB_BG, "f", "", "1");
    submit(c, CMD_SUBMIT_JOB_BG, "f", "", "2");
    auto r = recv(w);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].cmd, (uint32_t)CMD_NOOP);
    send(w, CMD_PRE_SLEEP, "");
    r = recv(w);
    ASSERT_EQ(r.size(), 1u) << "PRE_SLEEP with work waiting answers NOOP at once";
}

TEST_F(EngineTest, WorkerWakeupLimitRotates)
{
    f.cfg.worker_wakeup = 1;
    peer *c = f.connect();
    peer *ws[3];
    for (auto &w : ws) {
        w = f.connect();
        send(w, CMD_CAN_DO, "f");
        send(w, CMD_PRE_SLEEP, "");
    }
    std::vector<int> woken;
    for (int i = 0; i < 3; i++) {
        submit(c, CMD_SUBMIT_JOB_BG, "f", "", "x");
        for (int k = 0; k < 3; k++)
            if (!recv(ws[k]).empty())
                woken.push_back(k);
    }
    EXPECT_EQ(woken, (std::vector<int>{0, 1, 2}));
}

TEST_F(EngineTest, ClientDisconnectDropsQueuedForegroundJob)
{
    peer *c = f.connect();
    peer *w = f.connect();
    submit(c, CMD_SUBMIT_JOB, "f", "", "x");
    submit(c, CMD_SUBMIT_JOB_BG, "f", "", "bg");
    f.disconnect(c);
    check();
    send(w, CMD_CAN_DO, "f");
    EXPECT_EQ(grab(w)[3], "bg");
    EXPECT_TRUE(grab(w).empty());
}

TEST_F(EngineTest, ForegroundJoinerOfBackgroundJobDoesNotCancelIt)
{
    peer *c1 = f.connect();
    peer *c2 = f.connect();
    peer *w = f.connect();
    string h = submit(c1, CMD_SUBMIT_JOB_BG, "f", "u", "x");
    EXPECT_EQ(submit(c2, CMD_SUBMIT_JOB, "f", "u", "x"), h);
    f.disconnect(c2);
    send(w, CMD_CAN_DO, "f");
    EXPECT_EQ(grab(w)[0], h);
}

TEST_F(EngineTest, OnlyTheOwnerMayReport)
{
    peer *c = f.connect();
    peer *w = f.connect();
    peer *other = f.connect();
    send(w, CMD_CAN_DO, "f");
    string h = submit(c, CMD_SUBMIT_JOB, "f", "", "x");
    ASSERT_EQ(grab(w).size(), 4u);
    send(other, CMD_WORK_DATA, join({h, "x"}));
    auto r = recv(other);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].body, join({"JOB_NOT_FOUND", "Job does not exist on server"}));
    send(other, CMD_WORK_EXCEPTION, join({h, "x"}));
    r = recv(other);
    EXPECT_EQ(r[0].body, join({"JOB_NOT_FOUND", "An exception was received for a job that does not exist"}));
    EXPECT_TRUE(recv(c).empty());
}

TEST_F(EngineTest, ExceptionForwardedOnlyToClientsWithTheOption)
{
    peer *c1 = f.connect();
    peer *c2 = f.connect();
    peer *w = f.connect();
    send(c1, CMD_OPTION_REQ, "Exceptions");
    auto o = recv(c1);
    ASSERT_EQ(o.size(), 1u);
    EXPECT_EQ(o[0].cmd, (uint32_t)CMD_OPTION_RES);
    EXPECT_EQ(o[0].body, "Exceptions");
    string h = submit(c1, CMD_SUBMIT_JOB, "f", "u", "x");
    submit(c2, CMD_SUBMIT_JOB, "f", "u", "x");
    send(w, CMD_CAN_DO, "f");
    grab(w);
    send(w, CMD_WORK_EXCEPTION, join({h, "boom"}));
    auto r1 = recv(c1), r2 = recv(c2);
    ASSERT_EQ(r1.size(), 1u);
    EXPECT_EQ(r1[0].cmd, (uint32_t)CMD_WORK_EXCEPTION);
    EXPECT_EQ(r1[0].body, join({h, "boom"}));
    ASSERT_EQ(r2.size(), 1u);
    EXPECT_EQ(r2[0].cmd, (uint32_t)CMD_WORK_FAIL);
    EXPECT_EQ(r2[0].body, h) << "exactly the handle, no stray NUL";
}

TEST_F(EngineTest, StatusTracksWorkStatus)
{
    peer *c = f.connect();
    peer *w = f.connect();
    send(w, CMD_CAN_DO, "f");
    string h = submit(c, CMD_SUBMIT_JOB, "f", "uq", "x");
    send(c, CMD_GET_STATUS, h);
    EXPECT_EQ(recv(c)[0].body, join({h, "1", "0", "0", "0"}));
    grab(w);
    send(w, CMD_WORK_STATUS, join({h, "3", "10"}));
    EXPECT_EQ(recv(c)[0].body, join({h, "3", "10"}));
    send(c, CMD_GET_STATUS, h);
    EXPECT_EQ(recv(c)[0].body, join({h, "1", "1", "3", "10"}));
    send(c, CMD_GET_STATUS_UNIQUE, "uq");
    EXPECT_EQ(recv(c)[0].body, join({"uq", "1", "1", "3", "10", "1"}));
    send(c, CMD_GET_STATUS, "H:t:999");
    EXPECT_EQ(recv(c)[0].body, join({"H:t:999", "0", "0", "0", "0"}));
}

TEST_F(EngineTest, MaxQueueRefusesWithQueueError)
{
    peer *c = f.connect();
    FakeShell::feed(c, "create function f\r\nmaxqueue f 1\r\n");
    EXPECT_EQ(FakeShell::take(c), "OK\r\nOK\r\n");
    submit(c, CMD_SUBMIT_JOB_BG, "f", "", "1");
    send(c, CMD_SUBMIT_JOB_BG, join({"f", "", "2"}));
    auto r = recv(c);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].body, join({"QUEUE_ERROR", "Job queue is full"}));
    submit(c, CMD_SUBMIT_JOB_BG, "g", "", "other function still fine");
}

TEST_F(EngineTest, GrabJobAllCarriesReducer)
{
    peer *c = f.connect();
    peer *w = f.connect();
    send(w, CMD_CAN_DO, "f");
    send(c, CMD_SUBMIT_REDUCE_JOB_BACKGROUND, join({"f", "u", "red", "agg", "data"}));
    string h = recv(c)[0].body;
    send(w, CMD_GRAB_JOB_ALL, "");
    auto r = recv(w);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].cmd, (uint32_t)CMD_JOB_ASSIGN_ALL);
    EXPECT_EQ(r[0].body, join({h, "f", "u", "red", "data"}));
}

TEST_F(EngineTest, LargePayloadSharedWithWorkerNotCopied)
{
    peer *c = f.connect();
    peer *w = f.connect();
    send(w, CMD_CAN_DO, "f");
    string big(100000, 'p');
    string h = submit(c, CMD_SUBMIT_JOB_BG, "f", "", big);
    send(w, CMD_GRAB_JOB, "");
    ASSERT_GE(w->out.count, 2u);
    bool shared = false;
    for (uint32_t i = 0; i < w->out.count; i++) {
        oseg *s = &w->out.seg[(w->out.head + i) % w->out.cap];
        if (s->len == big.size() && s->b->refs == 2)
            shared = true;
    }
    EXPECT_TRUE(shared) << "the payload blob is referenced by the queue and the job";
    // the job completes and is freed while its payload is still queued for the worker
    send(w, CMD_WORK_COMPLETE, join({h, "done"}));
    EXPECT_EQ(f.eng.njobs, 0u);
    auto r = recv(w);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].args.back(), big) << "the queued payload outlived its job intact";
}

// HeldGrabTest runs with --grab-wait (2 ms by default): a GRAB that finds no job is held.
class HeldGrabTest : public EngineTest {
  protected:
    void SetUp() override
    {
        f.cfg.job_handle_prefix = strdup("H:t");
        f.start(); // the default --grab-wait
    }
    // idle_worker registers fn and sends a GRAB that finds nothing, so it is held.
    peer *idle_worker(const char *fn, uint32_t grab_cmd = CMD_GRAB_JOB_UNIQ)
    {
        peer *w = f.connect();
        send(w, CMD_CAN_DO, fn);
        send(w, grab_cmd, "");
        EXPECT_TRUE(recv(w).empty()) << "the GRAB is held, not answered";
        return w;
    }
    // held_count walks the engine's list of held GRABs.
    size_t held_count()
    {
        size_t n = 0;
        list_for_each(it, &f.eng.held)
            n++;
        return n;
    }
};

TEST_F(HeldGrabTest, DefaultIsTwoMilliseconds)
{
    EXPECT_DOUBLE_EQ(f.cfg.grab_wait, 0.002);
}

TEST_F(HeldGrabTest, JobArrivingWhileHeldIsAssignedWithoutNoop)
{
    peer *c = f.connect();
    peer *w = idle_worker("f");
    EXPECT_EQ(held_count(), 1u);
    EXPECT_DOUBLE_EQ(engine_next_timer(&f.eng), f.clock + 0.002);
    string h = submit(c, CMD_SUBMIT_JOB, "f", "u1", "payload");
    auto r = recv(w);
    ASSERT_EQ(r.size(), 1u) << "no NOOP: the job answers the held GRAB";
    EXPECT_EQ(r[0].cmd, (uint32_t)CMD_JOB_ASSIGN_UNIQ);
    EXPECT_EQ(r[0].args, (std::vector<string>{h, "f", "u1", "payload"}));
    EXPECT_EQ(held_count(), 0u);
    EXPECT_LT(engine_next_timer(&f.eng), 0) << "the hold's deadline is gone";
    send(w, CMD_WORK_COMPLETE, join({h, "ok"}));
    r = recv(c);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].cmd, (uint32_t)CMD_WORK_COMPLETE);
}

TEST_F(HeldGrabTest, HeldGrabAnswersInTheFormItAskedFor)
{
    peer *c = f.connect();
    peer *w1 = idle_worker("f", CMD_GRAB_JOB);
    string h = submit(c, CMD_SUBMIT_JOB_BG, "f", "u", "d");
    auto r = recv(w1);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].cmd, (uint32_t)CMD_JOB_ASSIGN);
    EXPECT_EQ(r[0].args, (std::vector<string>{h, "f", "d"}));
    peer *w2 = idle_worker("g", CMD_GRAB_JOB_ALL);
    EXPECT_EQ(held_count(), 1u);
    send(c, CMD_SUBMIT_REDUCE_JOB_BACKGROUND, join({"g", "u2", "red", "agg", "d2"}));
    auto created = recv(c);
    ASSERT_EQ(created.size(), 1u);
    EXPECT_EQ(created[0].cmd, (uint32_t)CMD_JOB_CREATED);
    r = recv(w2);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].cmd, (uint32_t)CMD_JOB_ASSIGN_ALL);
    EXPECT_EQ(r[0].args, (std::vector<string>{created[0].body, "g", "u2", "red", "d2"}));
}

TEST_F(HeldGrabTest, DeadlineAnswersNoJob)
{
    peer *w = idle_worker("f");
    f.clock += 0.001;
    engine_run_timers(&f.eng, f.clock);
    EXPECT_TRUE(recv(w).empty()) << "not yet";
    f.clock += 0.001;
    engine_run_timers(&f.eng, f.clock);
    auto r = recv(w);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].cmd, (uint32_t)CMD_NO_JOB);
    EXPECT_EQ(held_count(), 0u);
    // the usual cycle follows: PRE_SLEEP, then a job brings a NOOP
    send(w, CMD_PRE_SLEEP, "");
    peer *c = f.connect();
    submit(c, CMD_SUBMIT_JOB_BG, "f", "", "x");
    r = recv(w);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].cmd, (uint32_t)CMD_NOOP);
}

TEST_F(HeldGrabTest, DeadlinesExpireOldestFirst)
{
    peer *w1 = idle_worker("f");
    f.clock += 0.001;
    peer *w2 = idle_worker("f");
    EXPECT_DOUBLE_EQ(engine_next_timer(&f.eng), f.clock + 0.001);
    f.clock += 0.0015;
    engine_run_timers(&f.eng, f.clock);
    EXPECT_EQ(recv(w1).size(), 1u);
    EXPECT_TRUE(recv(w2).empty());
    EXPECT_DOUBLE_EQ(engine_next_timer(&f.eng), f.clock + 0.0005);
}

TEST_F(HeldGrabTest, AnyFurtherInputAnswersNoJobFirst)
{
    peer *w = idle_worker("f");
    send(w, CMD_ECHO_REQ, "ping");
    auto r = recv(w);
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(r[0].cmd, (uint32_t)CMD_NO_JOB) << "the GRAB's reply comes first";
    EXPECT_EQ(r[1].cmd, (uint32_t)CMD_ECHO_RES);
    EXPECT_EQ(held_count(), 0u);
    // a GRAB pipelined with PRE_SLEEP in one read: NO_JOB, then the worker sleeps
    ASSERT_EQ(FakeShell::feed(w, FakeShell::req(CMD_GRAB_JOB_UNIQ, "") +
                                     FakeShell::req(CMD_PRE_SLEEP, "")),
              0);
    r = recv(w);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].cmd, (uint32_t)CMD_NO_JOB);
    EXPECT_EQ(held_count(), 0u);
}

TEST_F(HeldGrabTest, HeldWorkerIsPreferredOverASleeper)
{
    peer *c = f.connect();
    peer *sleeper = f.connect();
    send(sleeper, CMD_CAN_DO, "f");
    send(sleeper, CMD_PRE_SLEEP, "");
    peer *w = idle_worker("f");
    submit(c, CMD_SUBMIT_JOB_BG, "f", "", "x");
    EXPECT_TRUE(recv(sleeper).empty()) << "no NOOP: the held worker took the job";
    auto r = recv(w);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].cmd, (uint32_t)CMD_JOB_ASSIGN_UNIQ);
    submit(c, CMD_SUBMIT_JOB_BG, "f", "", "y");
    r = recv(sleeper);
    ASSERT_EQ(r.size(), 1u) << "with no held worker left, the sleeper is woken";
    EXPECT_EQ(r[0].cmd, (uint32_t)CMD_NOOP);
}

TEST_F(HeldGrabTest, AWokenSleeperThatNeverGrabsDoesNotHoldUpAHeldGrab)
{
    // a sleeper that ignores its NOOP (busy elsewhere, or broken) still counts as coming for a
    // job; a worker whose GRAB is held must get the next job at once all the same
    peer *c = f.connect();
    peer *deaf = f.connect();
    send(deaf, CMD_CAN_DO, "f");
    send(deaf, CMD_PRE_SLEEP, "");
    submit(c, CMD_SUBMIT_JOB_BG, "f", "", "x");
    auto r = recv(deaf);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].cmd, (uint32_t)CMD_NOOP) << "the sleeper is woken for x, and never grabs";
    peer *w = f.connect();
    send(w, CMD_CAN_DO, "f");
    send(w, CMD_GRAB_JOB_UNIQ, "");
    r = recv(w);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].cmd, (uint32_t)CMD_JOB_ASSIGN_UNIQ) << "w takes x";
    string h = r[0].args[0];
    send(w, CMD_WORK_COMPLETE, join({h, ""}));
    send(w, CMD_GRAB_JOB_UNIQ, "");
    EXPECT_TRUE(recv(w).empty()) << "held";
    EXPECT_EQ(held_count(), 1u);
    submit(c, CMD_SUBMIT_JOB_BG, "f", "", "y");
    r = recv(w);
    ASSERT_EQ(r.size(), 1u) << "the held GRAB answered at once, not after --grab-wait";
    EXPECT_EQ(r[0].cmd, (uint32_t)CMD_JOB_ASSIGN_UNIQ);
    EXPECT_EQ(r[0].args[3], "y");
    EXPECT_EQ(held_count(), 0u);
    EXPECT_TRUE(recv(deaf).empty());
}

TEST_F(HeldGrabTest, AnUnansweredNoopStopsCountingAfterTheGrace)
{
    // two sleepers; the one woken first ignores its NOOP: after WORKER_WAKE_GRACE the job is
    // offered again and the other sleeper is woken (else the job would wait for ever)
    peer *c = f.connect();
    peer *deaf = f.connect();
    send(deaf, CMD_CAN_DO, "f");
    send(deaf, CMD_PRE_SLEEP, "");
    peer *w = f.connect();
    send(w, CMD_CAN_DO, "f");
    send(w, CMD_PRE_SLEEP, "");
    submit(c, CMD_SUBMIT_JOB_BG, "f", "", "x");
    auto r = recv(deaf);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].cmd, (uint32_t)CMD_NOOP) << "the sleeper that waited longest is woken first";
    EXPECT_TRUE(recv(w).empty()) << "one wake-up per ready job";
    EXPECT_DOUBLE_EQ(engine_next_timer(&f.eng), f.clock + WORKER_WAKE_GRACE);
    f.clock += WORKER_WAKE_GRACE / 2;
    engine_run_timers(&f.eng, f.clock);
    EXPECT_TRUE(recv(w).empty()) << "within the grace the woken worker is still expected";
    f.clock += WORKER_WAKE_GRACE / 2;
    engine_run_timers(&f.eng, f.clock);
    r = recv(w);
    ASSERT_EQ(r.size(), 1u) << "after the grace the job is offered to the other sleeper";
    EXPECT_EQ(r[0].cmd, (uint32_t)CMD_NOOP);
    EXPECT_TRUE(recv(deaf).empty()) << "the deaf one is not woken again";
    send(w, CMD_GRAB_JOB_UNIQ, "");
    r = recv(w);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].cmd, (uint32_t)CMD_JOB_ASSIGN_UNIQ);
    // the deaf worker answers late at last: it finds nothing, and the counts stay right
    send(deaf, CMD_GRAB_JOB_UNIQ, "");
    EXPECT_TRUE(recv(deaf).empty()) << "held: no job left";
    EXPECT_LT(engine_next_timer(&f.eng) - f.clock, WORKER_WAKE_GRACE + 1e-9);
    EXPECT_EQ(f.eng.held.next != &f.eng.held, true);
}

TEST_F(HeldGrabTest, AfterAMissedNoopEverySleeperIsWokenOnce)
{
    // three sleepers that ignore NOOP, then one that answers: a job costs one grace, not three
    peer *c = f.connect();
    std::vector<peer *> deaf;
    for (int i = 0; i < 3; i++) {
        deaf.push_back(f.connect());
        send(deaf.back(), CMD_CAN_DO, "f");
        send(deaf.back(), CMD_PRE_SLEEP, "");
    }
    peer *w = f.connect();
    send(w, CMD_CAN_DO, "f");
    send(w, CMD_PRE_SLEEP, "");
    submit(c, CMD_SUBMIT_JOB_BG, "f", "", "x");
    EXPECT_EQ(recv(deaf[0]).size(), 1u) << "the sleeper that waited longest is woken first";
    EXPECT_TRUE(recv(deaf[1]).empty());
    EXPECT_TRUE(recv(w).empty());
    f.clock += WORKER_WAKE_GRACE;
    engine_run_timers(&f.eng, f.clock);
    engine_drain_ready(&f.eng);
    EXPECT_EQ(recv(deaf[1]).size(), 1u) << "after the grace every other sleeper is woken";
    EXPECT_EQ(recv(deaf[2]).size(), 1u);
    auto r = recv(w);
    ASSERT_EQ(r.size(), 1u) << "the live one too, in the same grace";
    EXPECT_EQ(r[0].cmd, (uint32_t)CMD_NOOP);
    send(w, CMD_GRAB_JOB_UNIQ, "");
    r = recv(w);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].cmd, (uint32_t)CMD_JOB_ASSIGN_UNIQ);
    send(w, CMD_WORK_COMPLETE, std::string(r[0].args[0]) + std::string(1, '\0'));
    send(w, CMD_PRE_SLEEP, "");
    // the next job, while the deaf ones still count as coming: w is woken when their grace ends
    submit(c, CMD_SUBMIT_JOB_BG, "f", "", "y");
    engine_drain_ready(&f.eng);
    EXPECT_TRUE(recv(w).empty()) << "three NOOPs are still on their way for one job";
    f.clock += WORKER_WAKE_GRACE;
    engine_run_timers(&f.eng, f.clock);
    engine_drain_ready(&f.eng);
    EXPECT_EQ(recv(w).size(), 1u) << "one grace later, not one grace per deaf sleeper";
    for (peer *d : deaf)
        EXPECT_TRUE(recv(d).empty()) << "a NOOP each, until they grab again";
}

TEST_F(HeldGrabTest, OnlyAWorkerOfTheFunctionIsAssigned)
{
    peer *c = f.connect();
    peer *w = idle_worker("f");
    submit(c, CMD_SUBMIT_JOB_BG, "g", "", "x");
    EXPECT_TRUE(recv(w).empty());
    EXPECT_EQ(held_count(), 1u);
}

TEST_F(HeldGrabTest, WorkerWithoutFunctionsGetsNoJobAtOnce)
{
    peer *w = f.connect();
    send(w, CMD_GRAB_JOB, "");
    auto r = recv(w);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].cmd, (uint32_t)CMD_NO_JOB);
}

TEST_F(HeldGrabTest, DisconnectWhileHeldLeavesNothingBehind)
{
    peer *w = idle_worker("f");
    f.disconnect(w);
    EXPECT_EQ(held_count(), 0u);
    EXPECT_LT(engine_next_timer(&f.eng), 0);
    peer *c = f.connect();
    submit(c, CMD_SUBMIT_JOB_BG, "f", "", "x"); // nobody to assign it to; check() passes
}

TEST_F(HeldGrabTest, ReleaseGrabsAnswersEveryHeldWorker)
{
    peer *w1 = idle_worker("f");
    peer *w2 = idle_worker("g");
    engine_release_grabs(&f.eng);
    EXPECT_EQ(recv(w1)[0].cmd, (uint32_t)CMD_NO_JOB);
    EXPECT_EQ(recv(w2)[0].cmd, (uint32_t)CMD_NO_JOB);
    EXPECT_EQ(held_count(), 0u);
}

TEST_F(HeldGrabTest, WakeAllModeAssignsHeldAndNoopsSleepers)
{
    f.cfg.worker_wakeup = 0;
    peer *c = f.connect();
    peer *sleeper = f.connect();
    send(sleeper, CMD_CAN_DO, "f");
    send(sleeper, CMD_PRE_SLEEP, "");
    peer *w = idle_worker("f");
    submit(c, CMD_SUBMIT_JOB_BG, "f", "", "x");
    EXPECT_EQ(recv(w)[0].cmd, (uint32_t)CMD_JOB_ASSIGN_UNIQ);
    auto r = recv(sleeper);
    ASSERT_EQ(r.size(), 1u) << "gearmand's wake-all still wakes every sleeper";
    EXPECT_EQ(r[0].cmd, (uint32_t)CMD_NOOP);
}

TEST_F(HeldGrabTest, WakeAllModeLeavesOtherHeldWorkersWaiting)
{
    f.cfg.worker_wakeup = 0;
    peer *c = f.connect();
    peer *w1 = idle_worker("f");
    peer *w2 = idle_worker("f");
    submit(c, CMD_SUBMIT_JOB_BG, "f", "", "x");
    EXPECT_EQ(recv(w1)[0].cmd, (uint32_t)CMD_JOB_ASSIGN_UNIQ);
    EXPECT_TRUE(recv(w2).empty()) << "no job for it: it stays held, no NO_JOB yet";
    EXPECT_EQ(held_count(), 1u);
    submit(c, CMD_SUBMIT_JOB_BG, "f", "", "y");
    EXPECT_EQ(recv(w2)[0].cmd, (uint32_t)CMD_JOB_ASSIGN_UNIQ);
}

TEST_F(HeldGrabTest, CheckerCatchesHeldWorkerWithReadyWork)
{
    peer *c = f.connect();
    peer *w = idle_worker("f");
    f.eng.shutting_down = 1; // func_wake stands aside, so the job stays ready
    ASSERT_EQ(FakeShell::feed(c, FakeShell::req(CMD_SUBMIT_JOB_BG, join({"f", "", "x"}))), 0);
    char err[256];
    EXPECT_NE(engine_check(&f.eng, err, sizeof err), 0);
    EXPECT_NE(string(err).find("held GRAB"), string::npos) << err;
    f.eng.shutting_down = 0;
    engine_release_grabs(&f.eng);
    recv(w);
    recv(c);
}

TEST_F(EngineTest, InvariantCheckerCatchesCorruptCounters)
{
    peer *c = f.connect();
    peer *w = f.connect();
    send(w, CMD_CAN_DO, "f");
    submit(c, CMD_SUBMIT_JOB_BG, "f", "", "a");
    submit(c, CMD_SUBMIT_JOB_BG, "f", "", "b");
    grab(w);
    func *fn = func_get(&f.eng, "f", 1, 0);
    ASSERT_NE(fn, nullptr);
    char err[256];
    fn->running++;
    EXPECT_NE(engine_check(&f.eng, err, sizeof err), 0);
    EXPECT_NE(std::string(err).find("running"), std::string::npos) << err;
    fn->running--;
    fn->queued[PRIO_NORMAL]++;
    EXPECT_NE(engine_check(&f.eng, err, sizeof err), 0);
    fn->queued[PRIO_NORMAL]--;
    fn->nworkers++;
    EXPECT_NE(engine_check(&f.eng, err, sizeof err), 0);
    fn->nworkers--;
    EXPECT_EQ(engine_check(&f.eng, err, sizeof err), 0) << err;
}

// A wake-up used to scan every worker of the function: with 5000 sleepers that ignore their
// NOOP, each submit cost 5000 steps (113k submits/s fell to 3k). Now it is O(1) amortized.
// CPU time, so machine load does not matter; the bound is several times what it takes now
// under ASan, and under half of what the scan took (about 6 s).
TEST_F(EngineTest, WakeUpsWithManySleepersCostO1)
{
    std::vector<peer *> ws;
    for (int i = 0; i < 5000; i++) {
        peer *w = f.connect();
        ASSERT_EQ(FakeShell::feed(w, FakeShell::req(CMD_CAN_DO, "busy") +
                                         FakeShell::req(CMD_PRE_SLEEP, "")), 0);
        ws.push_back(w);
    }
    peer *c = f.connect();
    string burst;
    for (int i = 0; i < 200000; i++)
        burst += FakeShell::req(CMD_SUBMIT_JOB_BG, join({"busy", "", "x"}));
    struct timespec t0, t1;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
    ASSERT_EQ(FakeShell::feed(c, burst), 0);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
    EXPECT_LT(secs, 2.0) << "100000 submits with 5000 sleepers took " << secs << " s of CPU";
    int woken = 0;
    for (peer *w : ws)
        woken += (int)recv(w).size();
    EXPECT_EQ(woken, 5000) << "every sleeper got one NOOP";
    EXPECT_EQ(f.eng.njobs, 200000u);
}

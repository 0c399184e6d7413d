/* SPDX-License-Identifier: BSD-3-Clause */
// Unit tests for lifetime (per-job timeouts and times to live), driven through peers with the
// fake shell and its clock (no sockets); engine_check (with lifetime's own check) runs after
// every packet, admin line and timer run.
#include <gtest/gtest.h>

#include <string>

#include "fake_shell.h"

extern "C" {
#include "func.h"
#include "job.h"
#include "jobx.h"
#include "lifetime.h"
#include "submit.h"
}

using std::string;

namespace {

using fake::join;
using fake::body_of;

} // namespace

class LifetimeTest : public ::testing::Test {
  protected:
    FakeShell f;
    peer *c = nullptr, *w = nullptr, *a = nullptr;
    void SetUp() override
    {
        f.cfg.job_handle_prefix = strdup("H:t");
        f.cfg.grab_wait = 0;
    }
    void start()
    {
        f.start();
        c = f.connect();
        w = f.connect();
        a = f.connect();
    }
    void TearDown() override { check(); }
    void check()
    {
        char err[256];
        ASSERT_EQ(engine_check(&f.eng, err, sizeof err), 0) << err;
    }
    string send(peer *p, uint32_t cmd, const string &body, uint32_t *reply = nullptr)
    {
        EXPECT_EQ(FakeShell::feed(p, FakeShell::req(cmd, body)), 0);
        check();
        uint32_t r = 0;
        string b = body_of(FakeShell::take(p), &r);
        if (reply != nullptr)
            *reply = r;
        return b;
    }
    string admin(const string &line)
    {
        EXPECT_EQ(FakeShell::feed(a, line + "\n"), 0);
        check();
        return FakeShell::take(a);
    }
    string grab()
    {
        uint32_t cmd = 0;
        string b = send(w, CMD_GRAB_JOB, "", &cmd);
        return cmd == CMD_JOB_ASSIGN ? b.substr(0, b.find('\0')) : "";
    }
    void tick(double s)
    {
        f.clock += s;
        engine_run_timers(&f.eng, f.clock);
        check();
    }
    job *find(const string &h) { return job_find_handle(&f.eng, h.data(), h.size()); }
};

TEST_F(LifetimeTest, TtlExpiresAQueuedJobThroughTheTimerHeap)
{
    start();
    uint32_t cmd = 0;
    EXPECT_EQ(send(c, CMD_OPTION_REQ, "job-ttl=10", &cmd), "job-ttl=10");
    EXPECT_EQ(cmd, (uint32_t)CMD_OPTION_RES);
    string h = send(c, CMD_SUBMIT_JOB_BG, join({"F", "u", "x"}), &cmd);
    ASSERT_EQ(cmd, (uint32_t)CMD_JOB_CREATED);
    job *j = find(h);
    ASSERT_NE(j, nullptr);
    EXPECT_TRUE(j->flags & JOB_LIFE);
    EXPECT_NE(j->timer, HEAP_NONE) << "a ready job with a TTL is in the timer heap";
    EXPECT_DOUBLE_EQ(engine_next_timer(&f.eng), 1010.0);
    EXPECT_EQ(lifetime_rec_of(&f.eng, j), nullptr) << "a TTL alone: its heap entry, no record";
    char m[128];
    size_t ml = f.eng.ext.job_meta(&f.eng, j, m, sizeof m);
    EXPECT_EQ(string(m, ml), "{\"expires_at\":1010.000}") << "read from the heap entry";
    tick(9.9);
    EXPECT_EQ(find(h)->state, (uint8_t)JOB_READY);
    tick(0.1);
    j = find(h);
    ASSERT_NE(j, nullptr);
    EXPECT_EQ(j->state, (uint8_t)JOB_FAILED);
    EXPECT_EQ(j->timer, HEAP_NONE);
    EXPECT_EQ(f.eng.stats.jobs_expired, 1u);
    char buf[JOBX_ERROR_BUF];
    size_t n = 0;
    const char *t = jobx_error(&f.eng, jobx_rec_of(&f.eng, j), buf, &n);
    EXPECT_EQ(string(t, n), "expired");
    EXPECT_LT(engine_next_timer(&f.eng), 0) << "nothing left in the heap";
}

TEST_F(LifetimeTest, AGrabTakesTheJobOutOfTheHeapAndArmsItsTimeout)
{
    start();
    send(c, CMD_OPTION_REQ, "job-ttl=10");
    send(c, CMD_OPTION_REQ, "job-timeout=2500");
    uint32_t cmd = 0;
    string h = send(c, CMD_SUBMIT_JOB, join({"F", "", "x"}), &cmd);
    send(w, CMD_CAN_DO_TIMEOUT, join({"F", "5000"}));
    ASSERT_EQ(grab(), h);
    EXPECT_DOUBLE_EQ(engine_next_timer(&f.eng), 1002.5) << "the smaller: the job's own";
    tick(2.4);
    EXPECT_EQ(find(h)->state, (uint8_t)JOB_RUNNING);
    tick(0.1);
    EXPECT_EQ(find(h), nullptr);
    EXPECT_EQ(body_of(FakeShell::take(c), &cmd), h);
    EXPECT_EQ(cmd, (uint32_t)CMD_WORK_FAIL);
    EXPECT_EQ(f.eng.stats.job_timeouts, 1u);
    EXPECT_EQ(f.eng.stats.jobs_expired, 0u) << "started within its TTL";
}

TEST_F(LifetimeTest, TheWorkersCanDoTimeoutWinsWhenSmaller)
{
    start();
    send(c, CMD_OPTION_REQ, "job-timeout=9000");
    string h = send(c, CMD_SUBMIT_JOB, join({"F", "", "x"}));
    send(w, CMD_CAN_DO_TIMEOUT, join({"F", "1000"}));
    ASSERT_EQ(grab(), h);
    EXPECT_DOUBLE_EQ(engine_next_timer(&f.eng), 1001.0);
    tick(1.0);
    EXPECT_EQ(find(h), nullptr);
    EXPECT_EQ(f.eng.stats.job_timeouts, 0u);
}

TEST_F(LifetimeTest, ExpiredForegroundJobFailsItsClientAndIsDropped)
{
    f.cfg.expired_drop = 0;
    start();
    send(c, CMD_OPTION_REQ, "job-ttl=1");
    string h = send(c, CMD_SUBMIT_JOB, join({"F", "", "x"}));
    tick(1.0);
    uint32_t cmd = 0;
    EXPECT_EQ(body_of(FakeShell::take(c), &cmd), h);
    EXPECT_EQ(cmd, (uint32_t)CMD_WORK_FAIL);
    EXPECT_EQ(find(h), nullptr);
    EXPECT_EQ(jobx_nfailed(&f.eng), 0u);
}

TEST_F(LifetimeTest, ExpiredDropDropsBackgroundJobs)
{
    f.cfg.expired_drop = 1;
    start();
    send(c, CMD_OPTION_REQ, "job-ttl=1");
    string h = send(c, CMD_SUBMIT_JOB_BG, join({"F", "u", "x"}));
    tick(1.0);
    EXPECT_EQ(find(h), nullptr);
    EXPECT_EQ(jobx_nfailed(&f.eng), 0u);
    EXPECT_EQ(f.eng.stats.jobs_expired, 1u);
}

TEST_F(LifetimeTest, AnEpochJobsTtlCountsFromItsDueTime)
{
    start();
    send(c, CMD_OPTION_REQ, "job-ttl=5");
    uint32_t cmd = 0;
    string h = send(c, CMD_SUBMIT_JOB_EPOCH, join({"F", "u", "1100", "x"}), &cmd);
    ASSERT_EQ(cmd, (uint32_t)CMD_JOB_CREATED);
    tick(100.0); // due: ready, its TTL armed for 1105
    EXPECT_EQ(find(h)->state, (uint8_t)JOB_READY);
    EXPECT_DOUBLE_EQ(engine_next_timer(&f.eng), 1105.0);
    tick(5.0);
    EXPECT_EQ(find(h)->state, (uint8_t)JOB_FAILED);
}

TEST_F(LifetimeTest, DefaultsApplyAndASubmitsOwnValueWins)
{
    f.cfg.job_ttl[0] = {strdup("F"), 7};
    f.cfg.njob_ttl = 1;
    f.cfg.job_timeout[0] = {strdup("F"), 300};
    f.cfg.njob_timeout = 1;
    start();
    EXPECT_EQ(f.eng.ext.life_defaults, 1u);
    EXPECT_EQ(admin("lifetime list"), "F\t300\t7\n.\n");
    string h1 = send(c, CMD_SUBMIT_JOB_BG, join({"F", "a", "x"}));
    const life_rec *r = lifetime_rec_of(&f.eng, find(h1));
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->timeout_ms, 300u);
    EXPECT_DOUBLE_EQ(r->expires, 1007.0);
    send(c, CMD_OPTION_REQ, "job-ttl=60");
    string h2 = send(c, CMD_SUBMIT_JOB_BG, join({"F", "b", "x"}));
    r = lifetime_rec_of(&f.eng, find(h2));
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->timeout_ms, 300u) << "the default timeout";
    EXPECT_DOUBLE_EQ(r->expires, 1060.0) << "the connection's TTL";
    peer *c2 = f.connect(); // without options
    string h3 = send(c2, CMD_SUBMIT_JOB_BG, join({"G", "c", "x"}));
    EXPECT_FALSE(find(h3)->flags & JOB_LIFE) << "G has no defaults: G's jobs go without";
    send(c, CMD_OPTION_REQ, "job-ttl=0");
    EXPECT_EQ(admin("lifetime F 0 0"), "OK\r\n");
    EXPECT_EQ(f.eng.ext.life_defaults, 0u);
    string h4 = send(c, CMD_SUBMIT_JOB_BG, join({"F", "d", "x"}));
    EXPECT_FALSE(find(h4)->flags & JOB_LIFE);
}

TEST_F(LifetimeTest, MetaRoundTripsBesideJobxKeys)
{
    start();
    send(c, CMD_OPTION_REQ, "job-ttl=30");
    send(c, CMD_OPTION_REQ, "job-timeout=1500");
    string h = send(c, CMD_SUBMIT_JOB_BG, join({"F", "u", "x"}));
    char m[512];
    size_t n = f.eng.ext.job_meta(&f.eng, find(h), m, sizeof m);
    EXPECT_EQ(string(m, n), "{\"timeout_ms\":1500,\"expires_at\":1030.000}");
    uint32_t t = 0;
    double x = 0;
    EXPECT_EQ(lifetime_meta_read(m, n, &t, &x), 1);
    EXPECT_EQ(t, 1500u);
    EXPECT_DOUBLE_EQ(x, 1030.0);
    // behind a jobx object: its keys are added before the closing brace
    char j[256] = "{\"state\":\"failed\",\"attempts\":1}";
    size_t jl = lifetime_meta_write(&f.eng, find(h), j, strlen(j), sizeof j);
    EXPECT_EQ(string(j, jl),
              "{\"state\":\"failed\",\"attempts\":1,\"timeout_ms\":1500,\"expires_at\":1030.000}");
    EXPECT_EQ(lifetime_meta_write(&f.eng, find(h), j, strlen(j), 20), 0u) << "too small";
    EXPECT_EQ(lifetime_meta_read("{\"state\":\"failed\"}", 18, &t, &x), 0);
}

TEST_F(LifetimeTest, CancellingAQueuedJobWithATtlLeavesNoTimer)
{
    start();
    send(c, CMD_OPTION_REQ, "job-ttl=30");
    string h = send(c, CMD_SUBMIT_JOB_BG, join({"F", "u", "x"}));
    EXPECT_EQ(admin("cancel job " + h), "OK\r\n");
    EXPECT_EQ(find(h), nullptr);
    EXPECT_LT(engine_next_timer(&f.eng), 0);
    EXPECT_EQ(lifetime_of(&f.eng)->recs.count, 0u);
}

// SPDX-License-Identifier: BSD-3-Clause
// recur: the server's recurring schedules without sockets: firing with an injected clock,
// coalescing, refusals, the admin commands, restored records and the catch-up policy, and
// daylight-saving and leap-day cases in a time zone.
#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>
#include <string>

#include "fake_shell.h"

extern "C" {
#include "func.h"
#include "job.h"
#include "recur.h"
#include "store_batch.h"
}

namespace {

struct RecurShell : FakeShell {
    void begin() { start(); } // features_attach attaches recur; engine_destroy detaches it

    int add(const std::string &text)
    {
        char err[256];
        return recur_add(&eng, text.data(), text.size(), 0, err, sizeof err);
    }
    void check(int line = 0)
    {
        SCOPED_TRACE(line);
        char err[256] = "";
        ASSERT_EQ(engine_check(&eng, err, sizeof err), 0) << err;
    }
    std::string admin(peer *p, const std::string &line)
    {
        feed(p, line + "\r\n");
        return take(p);
    }
    int restore(const std::string &key, const std::string &value)
    {
        store_record r = {STORE_REC_SCHEDULE, key.data(), key.size(), value.data(), value.size()};
        char err[256];
        return eng.ext.record_restored[STORE_REC_SCHEDULE](&eng, &r, err, sizeof err);
    }
};

class Recur : public ::testing::Test {
  protected:
    void SetUp() override
    {
        setenv("TZ", "UTC", 1);
        tzset();
    }
    void TearDown() override
    {
        setenv("TZ", "UTC", 1);
        tzset();
    }
    void zone(const char *tz)
    {
        setenv("TZ", tz, 1);
        tzset();
    }
};

TEST_F(Recur, EveryFiresAtOnceThenEachPeriodAsABackgroundJob)
{
    RecurShell s;
    s.begin();
    ASSERT_EQ(s.add("tick @every 10s ticker hello world"), RECUR_ADDED);
    EXPECT_EQ(recur_count(&s.eng), 1u);
    EXPECT_EQ(recur_next_due(&s.eng), 1000.0);
    recur_run(&s.eng, 999.0);
    EXPECT_EQ(s.eng.njobs, 0u);
    recur_run(&s.eng, 1000.0);
    ASSERT_EQ(s.eng.njobs, 1u);
    func *f = func_get(&s.eng, "ticker", 6, 0);
    ASSERT_NE(f, nullptr);
    job *j = job_find_unique(&s.eng, f, "tick", 4, "hello world", 11);
    ASSERT_NE(j, nullptr);
    EXPECT_TRUE(j->flags & JOB_BACKGROUND);
    EXPECT_EQ(f->ready[PRIO_NORMAL], 1u);
    EXPECT_EQ(s.eng.stats.schedule_fired, 1u);
    EXPECT_EQ(recur_next_due(&s.eng), 1010.0);
    s.check(__LINE__);
}

TEST_F(Recur, NohasteWaitsOnePeriodAndMissedPeriodsAreNotStacked)
{
    RecurShell s;
    s.begin();
    ASSERT_EQ(s.add("t @every 10s f --nohaste --unique u --priority high p"), RECUR_ADDED);
    EXPECT_EQ(recur_next_due(&s.eng), 1010.0);
    recur_run(&s.eng, 1055.0); /* five periods late: one firing */
    EXPECT_EQ(s.eng.stats.schedule_fired, 1u);
    EXPECT_EQ(recur_next_due(&s.eng), 1060.0);
    func *f = func_get(&s.eng, "f", 1, 0);
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->ready[PRIO_HIGH], 1u);
    EXPECT_NE(job_find_unique(&s.eng, f, "u", 1, "p", 1), nullptr);
    s.check(__LINE__);
}

TEST_F(Recur, ASlowRunIsCoalescedNotStacked)
{
    RecurShell s;
    s.begin();
    ASSERT_EQ(s.add("t @every 10s f p"), RECUR_ADDED);
    recur_run(&s.eng, 1000.0);
    recur_run(&s.eng, 1010.0);
    recur_run(&s.eng, 1020.0);
    EXPECT_EQ(s.eng.njobs, 1u);
    EXPECT_EQ(s.eng.stats.schedule_fired, 3u);
    EXPECT_EQ(s.eng.stats.schedule_coalesced, 2u);
    s.check(__LINE__);
    // once the worker finished it, the next firing makes a new job
    peer *w = s.connect();
    FakeShell::feed(w, FakeShell::req(CMD_CAN_DO, "f") + FakeShell::req(CMD_GRAB_JOB, ""));
    std::string got = FakeShell::take(w);
    ASSERT_NE(got.find("p"), std::string::npos);
    const job *j = job_find_unique(&s.eng, func_get(&s.eng, "f", 1, 0), "t", 1, "p", 1);
    ASSERT_NE(j, nullptr);
    char h[JOB_HANDLE_BUF];
    std::string handle(h, job_handle(&s.eng, j, h));
    FakeShell::feed(w, FakeShell::req(CMD_WORK_COMPLETE, handle + std::string("\0", 1)));
    EXPECT_EQ(s.eng.njobs, 0u);
    s.check(__LINE__);
    recur_run(&s.eng, 1030.0);
    EXPECT_EQ(s.eng.njobs, 1u);
    EXPECT_EQ(s.eng.stats.schedule_coalesced, 2u);
    s.check(__LINE__);
}

TEST_F(Recur, ARefusedFiringIsCountedAndTheScheduleKept)
{
    RecurShell s;
    s.begin();
    func *f = func_get(&s.eng, "f", 1, 1);
    ASSERT_NE(f, nullptr);
    f->max_queue[PRIO_NORMAL] = 1;
    ASSERT_EQ(s.add("a @every 10s f p"), RECUR_ADDED);
    ASSERT_EQ(s.add("b @every 10s f q"), RECUR_ADDED);
    recur_run(&s.eng, 1000.0);
    EXPECT_EQ(s.eng.njobs, 1u);
    EXPECT_EQ(s.eng.stats.schedule_fired, 1u);
    EXPECT_EQ(s.eng.stats.schedule_refused, 1u);
    EXPECT_EQ(recur_count(&s.eng), 2u);
    EXPECT_EQ(recur_next_due(&s.eng), 1010.0);
    s.check(__LINE__);
}

TEST_F(Recur, AddReplacesRemoveForgetsAndTheLimitHolds)
{
    RecurShell s;
    s.cfg.max_schedules = 2;
    s.begin();
    ASSERT_EQ(s.add("a @every 10s f p"), RECUR_ADDED);
    ASSERT_EQ(s.add("a @every 20s f --nohaste p"), RECUR_REPLACED);
    EXPECT_EQ(recur_next_due(&s.eng), 1020.0);
    ASSERT_EQ(s.add("b 0 * * * * f p"), RECUR_ADDED);
    EXPECT_EQ(s.add("c 0 * * * * f p"), RECUR_TOO_MANY);
    EXPECT_EQ(s.add("a 0 * * * * f p"), RECUR_REPLACED); /* a replacement is not one more */
    EXPECT_EQ(s.add("d 61 * * * * f p"), RECUR_INVALID);
    EXPECT_EQ(s.add("d @every 1s " + std::string(600, 'g') + " p"), RECUR_INVALID); /* function name longer than --max-function-name */
    EXPECT_EQ(recur_remove(&s.eng, "a", 1), 0);
    EXPECT_EQ(recur_remove(&s.eng, "a", 1), -1);
    EXPECT_EQ(recur_count(&s.eng), 1u);
    EXPECT_EQ(s.eng.ext.schedules, 1u);
    s.check(__LINE__);
}

TEST_F(Recur, AdminAddListRemoveAndErrors)
{
    RecurShell s;
    s.begin();
    peer *a = s.connect();
    EXPECT_EQ(s.admin(a, "schedule add t @every 90s fn --unique u1 --priority low a b  c d e f"),
              "OK\r\n");
    EXPECT_EQ(s.admin(a, "schedule list"),
              "t\t@every 90s\tfn\t1970-01-01T00:16:40Z\t0\t-\tu1\tlow\n.\n");
    recur_run(&s.eng, 1000.0);
    EXPECT_EQ(s.admin(a, "schedule list"),
              "t\t@every 90s\tfn\t1970-01-01T00:18:10Z\t1\t1970-01-01T00:16:40Z\tu1\tlow\n.\n");
    const job *j = job_find_unique(&s.eng, func_get(&s.eng, "fn", 2, 0), "u1", 2, "a b  c d e f", 12);
    EXPECT_NE(j, nullptr) << "the payload is the rest of the line, spaces kept";
    EXPECT_EQ(s.admin(a, "schedule add x 99 * * * * f p"),
              "ERR INVALID_SCHEDULE bad+schedule:+minute:+'99'+is+not+a+value+or+range+in+0-59\r\n");
    EXPECT_EQ(s.admin(a, "schedule add x 0 0 30 2 * f p"),
              "ERR INVALID_SCHEDULE bad+schedule:+never+fires:+February+has+no+day+30\r\n");
    EXPECT_EQ(s.admin(a, "schedule add x 0 0 12 * * * f p"),
              "ERR INVALID_SCHEDULE a+cron+schedule+has+five+fields+(minute+hour+day-of-month+"
              "month+weekday):+'*'+after+them+is+a+sixth+field,+not+a+function+name\r\n");
    EXPECT_EQ(s.admin(a, "schedule remove nope"), "ERR NOT_FOUND no+such+schedule\r\n");
    EXPECT_EQ(s.admin(a, "schedule frobnicate"),
              "ERR INVALID_ARGUMENTS usage:+schedule+add+TEXT+|+schedule+list+|+schedule+remove+NAME\r\n");
    EXPECT_EQ(s.admin(a, "schedule remove t"), "OK\r\n");
    EXPECT_EQ(s.admin(a, "schedule list"), ".\n");
    s.check(__LINE__);
}

TEST_F(Recur, RestoredScheduleSkipsMissedFiringsByDefault)
{
    RecurShell s;
    s.begin();
    s.clock = 1055;
    ASSERT_EQ(s.restore("t", "v1 1010 1000 3 1000 0\nt @every 10s f p"), 0);
    EXPECT_EQ(recur_next_due(&s.eng), 1060.0);
    recur_run(&s.eng, 1055.0);
    EXPECT_EQ(s.eng.njobs, 0u);
    peer *a = s.connect();
    EXPECT_EQ(s.admin(a, "schedule list"),
              "t\t@every 10s\tf\t1970-01-01T00:17:40Z\t3\t1970-01-01T00:16:40Z\tt\tnormal\n.\n");
    s.check(__LINE__);
}

TEST_F(Recur, RestoredScheduleRunsOnceForAllMissedWithCatchupOnce)
{
    RecurShell s;
    s.cfg.schedule_catchup = 1;
    s.begin();
    s.clock = 1055;
    ASSERT_EQ(s.restore("t", "v1 1010 1000 3 1000 0\nt @every 10s f p"), 0);
    EXPECT_EQ(recur_next_due(&s.eng), 1055.0);
    recur_run(&s.eng, 1055.0);
    EXPECT_EQ(s.eng.njobs, 1u);
    EXPECT_EQ(s.eng.stats.schedule_fired, 1u);
    EXPECT_EQ(recur_next_due(&s.eng), 1060.0);
    s.check(__LINE__);
}

TEST_F(Recur, RestoredScheduleNotYetDueIsNotFiredEvenWithCatchupOnce)
{
    RecurShell s;
    s.cfg.schedule_catchup = 1;
    s.begin();
    s.clock = 1005;
    ASSERT_EQ(s.restore("t", "v1 1010 1000 3 1000 0\nt @every 10s f p"), 0);
    EXPECT_EQ(recur_next_due(&s.eng), 1010.0);
    s.check(__LINE__);
}

TEST_F(Recur, ConfigDefinitionWinsOverADifferentStoredOne)
{
    RecurShell s;
    s.begin();
    char err[256];
    std::string text = "t @every 10s f --nohaste p";
    ASSERT_EQ(recur_add(&s.eng, text.data(), text.size(), 1, err, sizeof err), RECUR_ADDED);
    s.clock = 1001;
    // stored with another definition: ignored, the config's stays
    ASSERT_EQ(s.restore("t", "v1 5000 1000 7 1000 0\nt @every 99s f p"), 0);
    EXPECT_EQ(recur_next_due(&s.eng), 1010.0);
    // stored with the same definition: its state (due time, runs) is taken
    ASSERT_EQ(s.restore("t", "v1 1020 1000 7 1000 0\n" + text), 0);
    EXPECT_EQ(recur_next_due(&s.eng), 1020.0);
    s.check(__LINE__);
}

TEST_F(Recur, BadStoredRecordsAreRefused)
{
    RecurShell s;
    s.begin();
    EXPECT_EQ(s.restore("t", "garbage"), -1);
    EXPECT_EQ(s.restore("t", "v1 1 2 3 4 0\nu @every 10s f p"), -1); /* key and name differ */
    EXPECT_EQ(s.restore("t", "v1 1 2 3 4 0\nt @every 0s f p"), -1);
    EXPECT_EQ(recur_count(&s.eng), 0u);
    s.check(__LINE__);
}

TEST_F(Recur, EngineCheckSeesACountThatDisagrees)
{
    RecurShell s;
    s.begin();
    ASSERT_EQ(s.add("t @every 10s f p"), RECUR_ADDED);
    s.check(__LINE__);
    s.eng.ext.schedules = 2;
    char err[256] = "";
    EXPECT_EQ(engine_check(&s.eng, err, sizeof err), -1);
    EXPECT_NE(std::string(err).find("schedules"), std::string::npos) << err;
    s.eng.ext.schedules = 1;
}

TEST_F(Recur, NoFiringWhileTheStoreReplays)
{
    RecurShell s;
    s.begin();
    ASSERT_EQ(s.add("t @every 10s f p"), RECUR_ADDED);
    s.eng.replaying = 1;
    EXPECT_LT(recur_next_due(&s.eng), 0);
    recur_run(&s.eng, 1000.0);
    EXPECT_EQ(s.eng.njobs, 0u);
    s.eng.replaying = 0;
    EXPECT_EQ(recur_next_due(&s.eng), 1000.0);
}

TEST_F(Recur, SpringForwardSkippedTimeFiresOnceAtTheChangeInTheZone)
{
    zone("Europe/Berlin");
    RecurShell s;
    s.clock = 1774742400; /* 2026-03-29 00:00 UTC = 01:00 CET; 02:00 CET becomes 03:00 CEST */
    s.begin();
    ASSERT_EQ(s.add("dst 30 2 * * * f p"), RECUR_ADDED);
    EXPECT_EQ(recur_next_due(&s.eng), 1774746000.0); /* 03:00 CEST = 01:00 UTC */
    recur_run(&s.eng, 1774746000.0);
    EXPECT_EQ(s.eng.stats.schedule_fired, 1u);
    EXPECT_EQ(recur_next_due(&s.eng), 1774830600.0); /* 2026-03-30 02:30 CEST */
    s.check(__LINE__);
}

TEST_F(Recur, FallBackRepeatedTimeFiresOnlyOnce)
{
    zone("Europe/Berlin");
    RecurShell s;
    s.clock = 1792882800; /* 2026-10-24 23:00 UTC; 03:00 CEST becomes 02:00 CET at 01:00 UTC */
    s.begin();
    ASSERT_EQ(s.add("dst 30 2 * * * f p"), RECUR_ADDED);
    EXPECT_EQ(recur_next_due(&s.eng), 1792888200.0); /* 02:30 CEST, the first pass */
    recur_run(&s.eng, 1792888200.0);
    EXPECT_EQ(recur_next_due(&s.eng), 1792978200.0); /* not 02:30 CET an hour later */
    s.check(__LINE__);
}

TEST_F(Recur, LeapDayScheduleWaitsForTheNextLeapYear)
{
    RecurShell s;
    s.clock = 1772323200; /* 2026-03-01 00:00 UTC */
    s.begin();
    ASSERT_EQ(s.add("leap 0 12 29 2 * f p"), RECUR_ADDED);
    EXPECT_EQ(recur_next_due(&s.eng), 1835438400.0); /* 2028-02-29 12:00 UTC */
    s.check(__LINE__);
}

} // namespace

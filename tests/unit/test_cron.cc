/* SPDX-License-Identifier: BSD-3-Clause */
// Unit tests for SUBMIT_JOB_SCHED's schedule computation.
#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>

extern "C" {
#include "cron.h"
}

class Cron : public ::testing::Test {
  protected:
    void SetUp() override
    {
        setenv("TZ", "UTC", 1);
        tzset();
    }
    static int64_t at(int y, int mo, int d, int h, int mi)
    {
        struct tm tm = {};
        tm.tm_year = y - 1900;
        tm.tm_mon = mo - 1;
        tm.tm_mday = d;
        tm.tm_hour = h;
        tm.tm_min = mi;
        return (int64_t)timegm(&tm);
    }
};

TEST_F(Cron, FieldParsing)
{
    int v;
    EXPECT_EQ(cron_parse_field("", 0, 0, 59, &v), 0);
    EXPECT_EQ(v, -1);
    EXPECT_EQ(cron_parse_field("*", 1, 0, 59, &v), 0);
    EXPECT_EQ(v, -1);
    EXPECT_EQ(cron_parse_field("59", 2, 0, 59, &v), 0);
    EXPECT_EQ(v, 59);
    EXPECT_EQ(cron_parse_field("60", 2, 0, 59, &v), -1);
    EXPECT_EQ(cron_parse_field("0", 1, 1, 31, &v), -1);
    EXPECT_EQ(cron_parse_field("1x", 2, 0, 59, &v), -1);
}

TEST_F(Cron, AllAnyIsNextMinute)
{
    cron_spec s = {-1, -1, -1, -1, -1};
    EXPECT_EQ(cron_next(&s, at(2026, 11, 25, 10, 30) + 15), at(2026, 11, 25, 10, 31));
}

TEST_F(Cron, MinuteAndHour)
{
    cron_spec s = {5, 3, -1, -1, -1};
    EXPECT_EQ(cron_next(&s, at(2026, 11, 25, 10, 30)), at(2026, 11, 26, 3, 5));
    EXPECT_EQ(cron_next(&s, at(2026, 11, 25, 3, 4)), at(2026, 11, 25, 3, 5));
    EXPECT_EQ(cron_next(&s, at(2026, 11, 25, 3, 5)), at(2026, 11, 26, 3, 5)) << "strictly after";
}

TEST_F(Cron, DayMonthWeekday)
{
    cron_spec feb29 = {0, 0, 29, 2, -1};
    EXPECT_EQ(cron_next(&feb29, at(2026, 3, 1, 0, 0)), at(2028, 2, 29, 0, 0));
    cron_spec sunday = {0, 12, -1, -1, 0};
    EXPECT_EQ(cron_next(&sunday, at(2026, 11, 25, 0, 0)), at(2026, 11, 29, 12, 0));
}

TEST_F(Cron, ImpossibleDateIsNever)
{
    cron_spec feb30 = {0, 0, 30, 2, -1};
    EXPECT_EQ(cron_next(&feb30, at(2026, 1, 1, 0, 0)), -1);
}

// ref_next is the plain day-by-day walk cron_next used to do (every day of five years, mktime for
// each): slow but obviously right, kept here to check the date arithmetic against.
static int ref_match(int want, int have) { return want < 0 || want == have; }
static int64_t ref_next(const cron_spec *spec, int64_t after)
{
    time_t t = (time_t)(after - (after % 60) + 60);
    struct tm tm;
    localtime_r(&t, &tm);
    for (int day = 0; day < 5 * 366 + 1; day++) {
        if (ref_match(spec->mday, tm.tm_mday) && ref_match(spec->month, tm.tm_mon + 1) &&
            ref_match(spec->wday, tm.tm_wday)) {
            for (int h = tm.tm_hour; h < 24; h++) {
                if (!ref_match(spec->hour, h))
                    continue;
                int m0 = (h == tm.tm_hour) ? tm.tm_min : 0;
                for (int m = m0; m < 60; m++) {
                    if (!ref_match(spec->minute, m))
                        continue;
                    struct tm c = tm;
                    c.tm_hour = h;
                    c.tm_min = m;
                    c.tm_sec = 0;
                    c.tm_isdst = -1;
                    time_t r = mktime(&c);
                    if (r > (time_t)after)
                        return (int64_t)r;
                }
            }
        }
        struct tm n = tm;
        n.tm_mday++;
        n.tm_hour = 0;
        n.tm_min = 0;
        n.tm_sec = 0;
        n.tm_isdst = -1;
        t = mktime(&n);
        localtime_r(&t, &tm);
    }
    return -1;
}

TEST_F(Cron, ImpossibleDayOfMonthRefusedAtOnce)
{
    for (int mo = 1; mo <= 12; mo++)
        for (int d = 1; d <= 31; d++) {
            cron_spec s = {0, 0, d, mo, -1};
            int possible = !(mo == 2 && d > 29) && !(d == 31 && (mo == 4 || mo == 6 || mo == 9 ||
                                                                   mo == 11));
            EXPECT_EQ(cron_possible(&s), possible) << mo << "/" << d;
        }
    cron_spec any_month = {0, 0, 31, -1, -1};
    EXPECT_TRUE(cron_possible(&any_month));
    cron_spec feb29 = {0, 0, 29, 2, -1};
    EXPECT_TRUE(cron_possible(&feb29));
}

TEST_F(Cron, AgreesWithTheDayByDayWalk)
{
    srand(12345);
    auto pick = [](int lo, int hi) { return rand() % 2 ? -1 : lo + rand() % (hi - lo + 1); };
    for (int i = 0; i < 400; i++) {
        cron_spec s = {pick(0, 59), pick(0, 23), pick(1, 31), pick(1, 12), pick(0, 6)};
        int64_t from = at(2024 + rand() % 6, 1 + rand() % 12, 1 + rand() % 28, rand() % 24,
                          rand() % 60) + rand() % 60;
        EXPECT_EQ(cron_next(&s, from), ref_next(&s, from))
            << s.minute << " " << s.hour << " " << s.mday << " " << s.month << " " << s.wday
            << " after " << from;
    }
    // month ends, leap days and the year's turn
    cron_spec eom = {59, 23, 31, -1, -1};
    EXPECT_EQ(cron_next(&eom, at(2026, 1, 31, 23, 59)), ref_next(&eom, at(2026, 1, 31, 23, 59)));
    cron_spec leap = {0, 0, 29, 2, 2};
    EXPECT_EQ(cron_next(&leap, at(2026, 3, 1, 0, 0)), at(2028, 2, 29, 0, 0));
    cron_spec newyear = {0, 0, 1, 1, -1};
    EXPECT_EQ(cron_next(&newyear, at(2026, 12, 31, 23, 59)), at(2027, 1, 1, 0, 0));
}

// An unreachable schedule must cost little: a 64 KiB read of them used to hold the server's loop
// for seconds (up to 1 ms each, a mktime per day for five years: 8 s here). CPU time, so the bound holds
// on a loaded machine; it is some 50 times what the arithmetic needs even under ASan.
TEST_F(Cron, UnreachableSchedulesAreCheap)
{
    const cron_spec never[] = {
        {0, 0, 30, 2, -1},  // 30 February
        {0, 0, 31, 4, -1},  // 31 April
        {0, 0, 29, 2, 0},   // 29 February on a Sunday: not before 2032
        {0, 0, 31, -1, 3},  // any 31st that is a Wednesday... exists, a control
    };
    struct timespec t0, t1;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
    int64_t from = at(2026, 3, 1, 0, 0);
    for (int i = 0; i < 10000; i++) {
        EXPECT_EQ(cron_next(&never[0], from + i * 60), -1);
        EXPECT_EQ(cron_next(&never[1], from + i * 60), -1);
        EXPECT_EQ(cron_next(&never[2], from + i * 60), -1);
        EXPECT_GT(cron_next(&never[3], from + i * 60), 0);
    }
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
    EXPECT_LT(secs, 1.5) << "40000 schedules took " << secs << " s of CPU";
}

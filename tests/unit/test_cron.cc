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

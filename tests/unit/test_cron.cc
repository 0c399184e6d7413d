/* SPDX-License-Identifier: BSD-3-Clause */
// Unit tests for SUBMIT_JOB_SCHED's schedule computation.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

extern "C" {
#include "cron.h"
#include "schedule.h"
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

// ------------------------------------------------------------ crontab(5) expressions

static cron_expr expr(const char *text)
{
    cron_expr e;
    char err[128] = "";
    EXPECT_EQ(cron_expr_parse(text, &e, err, sizeof err), 0) << text << ": " << err;
    return e;
}

static std::string parse_error(const char *text)
{
    cron_expr e;
    char err[128] = "";
    if (cron_expr_parse(text, &e, err, sizeof err) == 0)
        return "(accepted)";
    return err;
}

TEST_F(Cron, ExpressionParsing)
{
    cron_expr e = expr("*/15 9-17 * * mon-fri");
    EXPECT_EQ(e.minutes, (1ull << 0) | (1ull << 15) | (1ull << 30) | (1ull << 45));
    EXPECT_EQ(e.hours, 0x3fe00u); // 9..17
    EXPECT_EQ(e.wdays, 0x3eu);    // Monday..Friday
    EXPECT_TRUE(e.mday_star);
    EXPECT_FALSE(e.wday_star);
    e = expr("0,30 0 1,15 JAN,jul 7"); // 7 is Sunday, names in either case
    EXPECT_EQ(e.minutes, 1ull | 1ull << 30);
    EXPECT_EQ(e.mdays, (1u << 1) | (1u << 15));
    EXPECT_EQ(e.months, (1u << 1) | (1u << 7));
    EXPECT_EQ(e.wdays, 1u);
    e = expr("5/20 */6 * * *"); // "N/STEP" runs from N to the end
    EXPECT_EQ(e.minutes, (1ull << 5) | (1ull << 25) | (1ull << 45));
    EXPECT_EQ(e.hours, (1u << 0) | (1u << 6) | (1u << 12) | (1u << 18));
    cron_expr daily = expr("@daily"), same = expr("0 0 * * *");
    EXPECT_EQ(memcmp(&daily, &same, sizeof daily), 0);
    EXPECT_EQ(expr("@hourly").hours, 0xffffffu);
    EXPECT_EQ(expr("  0   0 * *  *  ").minutes, 1ull);

    EXPECT_EQ(parse_error("60 * * * *"), "minute: '60' is not a value or range in 0-59");
    EXPECT_EQ(parse_error("* 5-3 * * *"), "hour: '5-3' is not a value or range in 0-23");
    EXPECT_EQ(parse_error("*/0 * * * *"), "minute: bad step in '*/0'");
    EXPECT_EQ(parse_error("* * 0 * *"), "day of month: '0' is not a value or range in 1-31");
    EXPECT_EQ(parse_error("* * * foo *"), "month: 'foo' is not a value or range in 1-12");
    EXPECT_EQ(parse_error("* * * *"), "five fields wanted (minute hour day-of-month month weekday)");
    EXPECT_EQ(parse_error("* * * * * *"), "five fields wanted, more found at '*'");
    EXPECT_EQ(parse_error("1,,2 * * * *"), "minute: '' is not a value or range in 0-59");
    EXPECT_EQ(parse_error("@reboot"), "unknown macro '@reboot'");
    EXPECT_EQ(parse_error(std::string(300, '1').c_str()), "expression longer than 256 bytes");
}

TEST_F(Cron, ExpressionsThatNeverFireAreFound)
{
    auto never = [](const char *text) -> std::string {
        cron_expr e;
        char err[128] = "";
        EXPECT_EQ(cron_expr_parse(text, &e, err, sizeof err), 0) << text << ": " << err;
        return cron_expr_never(&e, err, sizeof err) ? err : "(fires)";
    };
    EXPECT_EQ(never("0 0 30 2 *"), "never fires: February has no day 30");
    EXPECT_EQ(never("0 0 30,31 feb *"), "never fires: February has no day 30");
    EXPECT_EQ(never("0 0 31 4,6,9,11 *"), "never fires: none of the months given has day 31");
    EXPECT_EQ(never("0 0 31 apr-jun/2 *"), "never fires: none of the months given has day 31");
    for (const char *fires : {"0 0 29 2 *",    // a leap day: every four years
                              "0 0 30 2 mon",  // both day fields restricted: any Monday of February
                              "0 0 31 2-3 *",  // 31 March
                              "0 0 30 * *", "0 0 * 2 *", "0 0 31 */2 *", "@yearly"})
        EXPECT_EQ(never(fires), "(fires)") << fires;
}

TEST_F(Cron, SixthFieldsLookLikeFields)
{
    for (const char *w : {"*", "?", "0", "2027", "*/5", "1-5", "mon", "MON-FRI", "jan,jul", "1,2"})
        EXPECT_TRUE(cron_field_like(w, strlen(w))) << w;
    for (const char *w : {"report", "f", "backup-db", "mon.day", "x1", "sunday", "1a"})
        EXPECT_FALSE(cron_field_like(w, strlen(w))) << w;
}

// The reference: walk day by day, then minute by minute, in UTC (no daylight saving).
static bool day_ok(const cron_expr &e, const struct tm &tm)
{
    bool md = e.mdays >> tm.tm_mday & 1, wd = e.wdays >> tm.tm_wday & 1;
    if (!(e.months >> (tm.tm_mon + 1) & 1))
        return false;
    return (e.mday_star || e.wday_star) ? (md && wd) : (md || wd);
}

static int64_t ref_expr_next(const cron_expr &e, int64_t after)
{
    int64_t t = after - after % 60 + 60;
    for (int64_t end = t + (5 * 366 + 1) * 86400ll; t < end;) {
        time_t tt = (time_t)t;
        struct tm tm;
        gmtime_r(&tt, &tm);
        if (!day_ok(e, tm))
            t += 86400 - (tm.tm_hour * 3600 + tm.tm_min * 60); // the next midnight
        else if ((e.hours >> tm.tm_hour & 1) && (e.minutes >> tm.tm_min & 1))
            return t;
        else
            t += 60;
    }
    return -1;
}

TEST_F(Cron, ExpressionsMatchABruteForceWalkInUtc)
{
    srand(7);
    const char *fields[][6] = {{"*", "0", "*/7", "5-10", "1,31,59", "10-50/10"},
                               {"*", "0", "23", "*/5", "8-18", "1,13"},
                               {"*", "1", "31", "29", "1-7", "15-20/2"},
                               {"*", "2", "feb", "*/3", "dec", "4-6"},
                               {"*", "0", "sat", "mon-fri", "2,4", "*/2"}};
    for (int i = 0; i < 3000; i++) {
        char text[128];
        snprintf(text, sizeof text, "%s %s %s %s %s", fields[0][rand() % 6], fields[1][rand() % 6],
                 fields[2][rand() % 6], fields[3][rand() % 6], fields[4][rand() % 6]);
        cron_expr e = expr(text);
        int64_t from = at(2024 + rand() % 6, 1 + rand() % 12, 1 + rand() % 28, rand() % 24,
                          rand() % 60) + rand() % 60;
        int64_t want = ref_expr_next(e, from);
        ASSERT_EQ(cron_expr_next(&e, from), want) << text << " after " << from;
        char err[128];
        ASSERT_EQ(cron_expr_never(&e, err, sizeof err), want < 0) << text << " after " << from;
    }
    // leap days, month ends, the year's turn, impossible dates
    cron_expr leap = expr("0 0 29 2 *");
    EXPECT_EQ(cron_expr_next(&leap, at(2026, 3, 1, 0, 0)), at(2028, 2, 29, 0, 0));
    cron_expr never = expr("0 0 30 2 *");
    EXPECT_EQ(cron_expr_next(&never, at(2026, 3, 1, 0, 0)), -1);
    cron_expr newyear = expr("@yearly");
    EXPECT_EQ(cron_expr_next(&newyear, at(2026, 12, 31, 23, 59)), at(2027, 1, 1, 0, 0));
    // crontab's day rule: both day fields restricted, either matches (the 13th, or a Friday)
    cron_expr either = expr("0 12 13 * fri");
    EXPECT_EQ(cron_expr_next(&either, at(2026, 11, 26, 0, 0)), at(2026, 11, 27, 12, 0)); // Friday
    EXPECT_EQ(cron_expr_next(&either, at(2026, 12, 12, 12, 0)), at(2026, 12, 13, 12, 0)); // Sunday 13th
    // POSIX time has no leap second: 2016-12-31 23:59 is followed by 2017-01-01 00:00
    cron_expr minute = expr("* * * * *");
    EXPECT_EQ(cron_expr_next(&minute, at(2016, 12, 31, 23, 59)), at(2017, 1, 1, 0, 0));
    EXPECT_EQ(cron_expr_next(&minute, at(2016, 12, 31, 23, 59) + 59), at(2017, 1, 1, 0, 0));
}

// fires lists the instants an expression fires at from `from` for `n` firings.
static std::vector<int64_t> fires(const char *text, int64_t from, int n)
{
    cron_expr e = expr(text);
    std::vector<int64_t> out;
    for (int64_t t = from; n-- > 0;) {
        t = cron_expr_next(&e, t);
        if (t < 0)
            break;
        out.push_back(t);
    }
    return out;
}

class CronZone : public Cron {
  protected:
    void zone(const char *tz)
    {
        setenv("TZ", tz, 1);
        tzset();
    }
    void TearDown() override
    {
        setenv("TZ", "UTC", 1);
        tzset();
    }
};

TEST_F(CronZone, SpringForwardSkippedTimeFiresOnceAtTheChange)
{
    zone("America/New_York"); // 2026-03-08 02:00 EST -> 03:00 EDT at 07:00Z
    // a fixed time inside the gap fires at the change that day, at its local time on others
    EXPECT_EQ(fires("30 2 * * *", at(2026, 3, 7, 12, 0), 3),
              (std::vector<int64_t>{at(2026, 3, 8, 7, 0), at(2026, 3, 9, 6, 30),
                                    at(2026, 3, 10, 6, 30)}));
    // every 15 minutes: the four skipped times fire once, at the change, then 03:15 EDT
    EXPECT_EQ(fires("*/15 * * * *", at(2026, 3, 8, 6, 30), 4),
              (std::vector<int64_t>{at(2026, 3, 8, 6, 45), at(2026, 3, 8, 7, 0),
                                    at(2026, 3, 8, 7, 15), at(2026, 3, 8, 7, 30)}));
    zone("Europe/Berlin"); // 2026-03-29 02:00 CET -> 03:00 CEST at 01:00Z
    EXPECT_EQ(fires("0 2 * * *", at(2026, 3, 28, 12, 0), 2),
              (std::vector<int64_t>{at(2026, 3, 29, 1, 0), at(2026, 3, 30, 0, 0)}));
}

TEST_F(CronZone, FallBackRepeatedHourFiresOnceUnlessEveryHour)
{
    zone("America/New_York"); // 2026-11-01 02:00 EDT -> 01:00 EST at 06:00Z
    // a fixed time in the repeated hour: the first pass only
    EXPECT_EQ(fires("30 1 * * *", at(2026, 10, 31, 12, 0), 2),
              (std::vector<int64_t>{at(2026, 11, 1, 5, 30), at(2026, 11, 2, 6, 30)}));
    // every hour: real time rules, 01:00 fires in both passes
    EXPECT_EQ(fires("0 * * * *", at(2026, 11, 1, 3, 30), 4),
              (std::vector<int64_t>{at(2026, 11, 1, 4, 0), at(2026, 11, 1, 5, 0),
                                    at(2026, 11, 1, 6, 0), at(2026, 11, 1, 7, 0)}));
    // starting inside the second pass: the fixed time has passed for today
    EXPECT_EQ(fires("30 1 * * *", at(2026, 11, 1, 6, 10), 1),
              (std::vector<int64_t>{at(2026, 11, 2, 6, 30)}));
    // and an every-hour schedule started in the first pass still sees the second
    EXPECT_EQ(fires("15 * * * *", at(2026, 11, 1, 5, 20), 2),
              (std::vector<int64_t>{at(2026, 11, 1, 6, 15), at(2026, 11, 1, 7, 15)}));
}

TEST_F(CronZone, HalfHourChangesOnLordHowe)
{
    zone("Australia/Lord_Howe");
    // 2026-10-04 02:00 +1030 -> 02:30 +11 at 15:30Z (on the 3rd, UTC)
    EXPECT_EQ(fires("15 2 * * *", at(2026, 10, 3, 0, 0), 2),
              (std::vector<int64_t>{at(2026, 10, 3, 15, 30), at(2026, 10, 4, 15, 15)}));
    // 2026-04-05 02:00 +11 -> 01:30 +1030 at 15:00Z (on the 4th): 01:45 happens twice
    EXPECT_EQ(fires("45 1 * * *", at(2026, 4, 4, 0, 0), 2),
              (std::vector<int64_t>{at(2026, 4, 4, 14, 45), at(2026, 4, 5, 15, 15)}));
    EXPECT_EQ(fires("45 * * * *", at(2026, 4, 4, 14, 0), 3),
              (std::vector<int64_t>{at(2026, 4, 4, 14, 45), at(2026, 4, 4, 15, 15),
                                    at(2026, 4, 4, 16, 15)}));
}

// ------------------------------------------------------------ schedules

TEST(Schedule, Durations)
{
    int64_t v;
    auto ok = [&](const char *s) { return schedule_parse_duration(s, strlen(s), &v) == 0; };
    ASSERT_TRUE(ok("90"));
    EXPECT_EQ(v, 90);
    ASSERT_TRUE(ok("90s"));
    EXPECT_EQ(v, 90);
    ASSERT_TRUE(ok("5m"));
    EXPECT_EQ(v, 300);
    ASSERT_TRUE(ok("1h30m"));
    EXPECT_EQ(v, 5400);
    ASSERT_TRUE(ok("2d3h4m5s"));
    EXPECT_EQ(v, 2 * 86400 + 3 * 3600 + 4 * 60 + 5);
    ASSERT_TRUE(ok("366d"));
    EXPECT_EQ(v, 366 * 86400);
    for (const char *bad : {"", "0", "0s", "367d", "1h30", "30m1h", "1m1m", "5x", "m", "-5s",
                            "1.5h", "99999999999999999999"})
        EXPECT_FALSE(ok(bad)) << bad;
}

static schedule parsed(const char *text)
{
    schedule s;
    char err[160] = "";
    EXPECT_EQ(schedule_parse(text, strlen(text), &s, err, sizeof err), 0) << text << ": " << err;
    return s;
}

static std::string schedule_error(const char *text)
{
    schedule s;
    char err[160] = "";
    if (schedule_parse(text, strlen(text), &s, err, sizeof err) == 0) {
        schedule_free(&s);
        return "(accepted)";
    }
    return err;
}

TEST(Schedule, Parsing)
{
    schedule s = parsed("nightly 0 3 * * * backup --priority high --unique db-backup all databases");
    EXPECT_STREQ(s.name, "nightly");
    EXPECT_STREQ(s.spec, "0 3 * * *");
    EXPECT_STREQ(s.func, "backup");
    EXPECT_STREQ(s.unique, "db-backup");
    EXPECT_EQ(std::string(s.payload, s.payload_len), "all databases");
    EXPECT_EQ(s.prio, 0);
    EXPECT_EQ(s.every, 0);
    EXPECT_EQ(s.cron.hours, 1u << 3);
    schedule_free(&s);

    s = parsed("tick @every 1h30m ping --nohaste");
    EXPECT_STREQ(s.spec, "@every 1h30m");
    EXPECT_EQ(s.every, 5400);
    EXPECT_TRUE(s.nohaste);
    EXPECT_STREQ(s.unique, "tick"); // by default the name: a run still queued is not stacked
    EXPECT_EQ(s.payload_len, 0u);
    EXPECT_EQ(s.prio, 1);
    schedule_free(&s);

    s = parsed("d @daily f -- --not-an-option  two spaces");
    EXPECT_STREQ(s.spec, "@daily");
    EXPECT_EQ(std::string(s.payload, s.payload_len), "--not-an-option  two spaces");
    schedule_free(&s);

    EXPECT_EQ(schedule_error(""), "usage: NAME (CRON|@every DURATION) FUNC [OPTIONS] PAYLOAD");
    EXPECT_EQ(schedule_error("n"), "missing schedule (five cron fields, @daily..., @every DURATION)");
    EXPECT_EQ(schedule_error("n 0 3 * *"), "a cron schedule has five fields");
    EXPECT_EQ(schedule_error("n 0 3 * * *"), "missing function name");
    EXPECT_EQ(schedule_error("n 0 25 * * * f"), "bad schedule: hour: '25' is not a value or range in 0-23");
    EXPECT_EQ(schedule_error("n 0 0 30 2 * f p"), "bad schedule: never fires: February has no day 30");
    EXPECT_EQ(schedule_error("n 0 0 12 * * * f p"),
              "a cron schedule has five fields (minute hour day-of-month month weekday): '*' after "
              "them is a sixth field, not a function name");
    EXPECT_EQ(schedule_error("n 0 0 12 * * mon f"),
              "a cron schedule has five fields (minute hour day-of-month month weekday): 'mon' "
              "after them is a sixth field, not a function name");
    EXPECT_EQ(schedule_error("n 0 0 1 1 * 2027 f"),
              "a cron schedule has five fields (minute hour day-of-month month weekday): '2027' "
              "after them is a sixth field, not a function name");
    s = parsed("n 0 0 29 2 * leapfn"); // fires every four years
    schedule_free(&s);
    s = parsed("n @daily 5"); // a macro is one word: what follows is the function
    EXPECT_STREQ(s.func, "5");
    schedule_free(&s);
    EXPECT_EQ(schedule_error("n @every 0s f"), "@every wants a duration from 1s to 366d (90s, 5m, 1h30m, 2d)");
    EXPECT_EQ(schedule_error("n @sometimes f"), "bad schedule: unknown macro '@sometimes'");
    EXPECT_EQ(schedule_error("n @daily f --priority urgent"), "--priority wants high, normal or low");
    EXPECT_EQ(schedule_error("n @daily f --colour red"), "unknown option '--colour'");
    EXPECT_EQ(schedule_error("n @daily f --unique"), "--unique wants a value");
    EXPECT_EQ(schedule_error((std::string(65, 'x') + " @daily f").c_str()),
              "schedule name longer than 64 bytes");
}

TEST_F(Cron, ScheduleFirings)
{
    // @every: at once when added, then on the anchor's grid; missed periods are not stacked
    schedule s = parsed("t @every 10m f");
    int64_t t0 = at(2026, 11, 26, 12, 0) + 7;
    schedule_start(&s, t0);
    EXPECT_EQ(s.next, t0);
    schedule_fired(&s, t0);
    EXPECT_EQ(s.next, t0 + 600);
    schedule_fired(&s, t0 + 600 + 1850); // fired late: the next slot on the grid after now
    EXPECT_EQ(s.next, t0 + 3000);
    schedule_free(&s);
    // --nohaste: the first firing after one period
    s = parsed("t @every 10m f --nohaste");
    schedule_start(&s, t0);
    EXPECT_EQ(s.next, t0 + 600);
    schedule_free(&s);
    // cron: at its next matching time, never at once
    s = parsed("c 30 * * * * f");
    schedule_start(&s, t0);
    EXPECT_EQ(s.next, at(2026, 11, 26, 12, 30));
    schedule_fired(&s, at(2026, 11, 26, 12, 30));
    EXPECT_EQ(s.next, at(2026, 11, 26, 13, 30));

    // after downtime: skip the missed firings, or fire once for all of them
    int64_t back = at(2026, 11, 26, 17, 10);
    schedule_start(&s, t0); // due 12:30, missed five times by 17:10
    EXPECT_EQ(schedule_resume(&s, back, SCHEDULE_SKIP), 0);
    EXPECT_EQ(s.next, at(2026, 11, 26, 17, 30));
    schedule_start(&s, t0);
    EXPECT_EQ(schedule_resume(&s, back, SCHEDULE_ONCE), 1);
    EXPECT_EQ(s.next, at(2026, 11, 26, 17, 30));
    // not missed: nothing changes
    EXPECT_EQ(schedule_resume(&s, back, SCHEDULE_ONCE), 0);
    EXPECT_EQ(s.next, at(2026, 11, 26, 17, 30));
    // due exactly now fires whatever the policy
    EXPECT_EQ(schedule_resume(&s, at(2026, 11, 26, 17, 30), SCHEDULE_SKIP), 1);
    EXPECT_EQ(s.next, at(2026, 11, 26, 18, 30));
    schedule_free(&s);
}

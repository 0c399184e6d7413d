/* SPDX-License-Identifier: BSD-3-Clause */
/* cron: the next time that matches SUBMIT_JOB_SCHED's fields, in local time. */
#include "cron.h"

int cron_parse_field(const char *s, size_t len, int lo, int hi, int *out)
{
    if (len == 0 || (len == 1 && s[0] == '*')) {
        *out = -1;
        return 0;
    }
    if (len > 4)
        return -1;
    int v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    if (v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static int matches(int want, int have) { return want < 0 || want == have; }

/* days_in returns the days of month m (1-12) of year y. */
static int days_in(int y, int m)
{
    static const int dim[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (m == 2 && ((y % 4 == 0 && y % 100 != 0) || y % 400 == 0))
        return 29;
    return dim[m - 1];
}

int cron_possible(const struct cron_spec *spec)
{
    /* the longest each month ever is: February has a 29th only */
    static const int most[12] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return spec->month < 1 || spec->mday < 1 || spec->mday <= most[spec->month - 1];
}

int64_t cron_next(const struct cron_spec *spec, int64_t after)
{
    if (!cron_possible(spec))
        return -1;
    time_t t = (time_t)(after - (after % 60) + 60); /* next whole minute */
    struct tm tm;
    localtime_r(&t, &tm);
    int y = tm.tm_year + 1900, mo = tm.tm_mon + 1, d = tm.tm_mday, wd = tm.tm_wday;
    /* walk the calendar (at most five years) with date arithmetic, jumping over whole months
     * and to the wanted day of the month, so at most a few hundred steps; only a day that
     * matches is searched hour by hour and converted with mktime */
    int first = 1;
    for (long elapsed = 0; elapsed <= 5 * 366;) {
        int dim = days_in(y, mo);
        int skip;
        if (!matches(spec->month, mo)) {
            skip = dim - d + 1;
        } else if (spec->mday >= 0 && d != spec->mday) {
            skip = (d < spec->mday && spec->mday <= dim) ? spec->mday - d : dim - d + 1;
        } else if (!matches(spec->wday, wd)) {
            skip = 1;
        } else {
            int h0 = first ? tm.tm_hour : 0;
            for (int h = h0; h < 24; h++) {
                if (!matches(spec->hour, h))
                    continue;
                int m0 = (first && h == h0) ? tm.tm_min : 0;
                for (int m = m0; m < 60; m++) {
                    if (!matches(spec->minute, m))
                        continue;
                    struct tm c = {0};
                    c.tm_year = y - 1900;
                    c.tm_mon = mo - 1;
                    c.tm_mday = d;
                    c.tm_hour = h;
                    c.tm_min = m;
                    c.tm_isdst = -1;
                    time_t r = mktime(&c);
                    if (r > (time_t)after)
                        return (int64_t)r;
                }
            }
            skip = 1;
        }
        first = 0;
        elapsed += skip;
        wd = (wd + skip) % 7;
        d += skip;
        if (d > dim) {
            d -= dim;
            if (++mo > 12) {
                mo = 1;
                y++;
            }
        }
    }
    return -1;
}

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

int64_t cron_next(const struct cron_spec *spec, int64_t after)
{
    time_t t = (time_t)(after - (after % 60) + 60); /* next whole minute */
    struct tm tm;
    /* walk day by day (at most five years), then hour and minute inside a matching day */
    localtime_r(&t, &tm);
    for (int day = 0; day < 5 * 366 + 1; day++) {
        if (matches(spec->mday, tm.tm_mday) && matches(spec->month, tm.tm_mon + 1) &&
            matches(spec->wday, tm.tm_wday)) {
            for (int h = tm.tm_hour; h < 24; h++) {
                if (!matches(spec->hour, h))
                    continue;
                int m0 = (h == tm.tm_hour) ? tm.tm_min : 0;
                for (int m = m0; m < 60; m++) {
                    if (!matches(spec->minute, m))
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
        /* the next day at 00:00 */
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

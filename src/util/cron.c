/* SPDX-License-Identifier: BSD-3-Clause */
/* cron: the next time that matches SUBMIT_JOB_SCHED's fields, in local time. */
#include "cron.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

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

/* ------------------------------------------------------------ crontab(5) expressions */

/* name_value reads a three-letter month or weekday name at s; returns its value or -1. */
static int name_value(const char *s, size_t n, int hi)
{
    static const char *const months[] = {"jan", "feb", "mar", "apr", "may", "jun",
                                         "jul", "aug", "sep", "oct", "nov", "dec"};
    static const char *const days[] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat"};
    if (n != 3)
        return -1;
    if (hi == 12) {
        for (int i = 0; i < 12; i++)
            if (strncasecmp(s, months[i], 3) == 0)
                return i + 1;
    } else if (hi == 7) {
        for (int i = 0; i < 7; i++)
            if (strncasecmp(s, days[i], 3) == 0)
                return i;
    }
    return -1;
}

/* field_value reads a number or name in [lo, hi] from s[0..n). Returns it, or -1. */
static int field_value(const char *s, size_t n, int lo, int hi)
{
    if (n == 0)
        return -1;
    if (s[0] < '0' || s[0] > '9')
        return name_value(s, n, hi);
    if (n > 2)
        return -1;
    int v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v >= lo && v <= hi ? v : -1;
}

/* parse_set reads one field s[0..n) as a comma list into the bit set *bits (bit v for value v).
 * *star is set when the field is exactly "*". Returns 0, or -1 with a message. */
static int parse_set(const char *s, size_t n, int lo, int hi, const char *what, uint64_t *bits,
                     uint8_t *star, char *err, size_t errlen)
{
    *bits = 0;
    *star = n == 1 && s[0] == '*';
    size_t i = 0;
    while (i <= n) {
        size_t j = i;
        while (j < n && s[j] != ',')
            j++;
        const char *item = s + i;
        size_t len = j - i;
        const char *slash = memchr(item, '/', len);
        size_t rlen = slash ? (size_t)(slash - item) : len;
        int step = 1;
        if (slash != NULL) {
            step = field_value(slash + 1, len - rlen - 1, 1, hi);
            if (step < 1 || memchr(slash + 1, '/', len - rlen - 1) != NULL) {
                snprintf(err, errlen, "%s: bad step in '%.*s'", what, (int)len, item);
                return -1;
            }
        }
        int a, b;
        if (rlen == 1 && item[0] == '*') {
            a = lo;
            b = hi;
        } else {
            const char *dash = memchr(item, '-', rlen);
            if (dash != NULL) {
                a = field_value(item, (size_t)(dash - item), lo, hi);
                b = field_value(dash + 1, rlen - (size_t)(dash - item) - 1, lo, hi);
            } else {
                a = b = field_value(item, rlen, lo, hi);
                if (slash != NULL)
                    b = hi; /* "N/STEP": from N to the end, as cronie reads it */
            }
            if (a < 0 || b < 0 || a > b) {
                snprintf(err, errlen, "%s: '%.*s' is not a value or range in %d-%d", what,
                         (int)len, item, lo, hi);
                return -1;
            }
        }
        for (int v = a; v <= b; v += step)
            *bits |= 1ull << v;
        i = j + 1;
    }
    return 0;
}

int cron_expr_never(const struct cron_expr *e, char *err, size_t errlen)
{
    static const int most[13] = {0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    static const char *const names[13] = {"",        "January",  "February", "March", "April",
                                          "May",     "June",     "July",     "August",
                                          "September", "October", "November", "December"};
    if (e->mday_star || !e->wday_star)
        return 0; /* any day, or the weekday alone can match (crontab's either-day rule) */
    int months = 0, month = 0;
    for (int m = 1; m <= 12; m++) {
        if (!(e->months >> m & 1))
            continue;
        months++;
        month = m;
        if (e->mdays & ((2ull << most[m]) - 2u)) /* days 1..most[m] */
            return 0;
    }
    int day = __builtin_ctz(e->mdays);
    if (months == 1)
        snprintf(err, errlen, "never fires: %s has no day %d", names[month], day);
    else
        snprintf(err, errlen, "never fires: none of the months given has day %d", day);
    return 1;
}

int cron_field_like(const char *s, size_t n)
{
    static const int range[5][2] = {{0, 59}, {0, 23}, {1, 31}, {1, 12}, {0, 7}};
    char err[64];
    uint64_t bits;
    uint8_t star;
    if (n == 0)
        return 0;
    size_t k = 0;
    while (k < n && strchr("0123456789*,-/?", s[k]) != NULL && s[k] != '\0')
        k++;
    if (k == n)
        return 1; /* numbers (a year too), lists, ranges, steps, Quartz's "no specific value" */
    for (int f = 0; f < 5; f++) /* month and weekday names */
        if (parse_set(s, n, range[f][0], range[f][1], "", &bits, &star, err, sizeof err) == 0)
            return 1;
    return 0;
}

int cron_expr_parse(const char *text, struct cron_expr *out, char *err, size_t errlen)
{
    static const struct {
        const char *name, *expr;
    } macros[] = {{"@yearly", "0 0 1 1 *"},  {"@annually", "0 0 1 1 *"}, {"@monthly", "0 0 1 * *"},
                  {"@weekly", "0 0 * * 0"},  {"@daily", "0 0 * * *"},    {"@midnight", "0 0 * * *"},
                  {"@hourly", "0 * * * *"}};
    if (strlen(text) > CRON_EXPR_MAX) {
        snprintf(err, errlen, "expression longer than %d bytes", CRON_EXPR_MAX);
        return -1;
    }
    while (*text == ' ' || *text == '\t')
        text++;
    if (text[0] == '@') {
        for (size_t i = 0; i < sizeof macros / sizeof macros[0]; i++)
            if (strcmp(text, macros[i].name) == 0)
                return cron_expr_parse(macros[i].expr, out, err, errlen);
        snprintf(err, errlen, "unknown macro '%s'", text);
        return -1;
    }
    static const struct {
        int lo, hi;
        const char *what;
    } fields[5] = {{0, 59, "minute"}, {0, 23, "hour"}, {1, 31, "day of month"},
                   {1, 12, "month"},  {0, 7, "weekday"}};
    uint64_t bits[5];
    uint8_t star[5];
    const char *p = text;
    for (int f = 0; f < 5; f++) {
        while (*p == ' ' || *p == '\t')
            p++;
        const char *q = p;
        while (*q != '\0' && *q != ' ' && *q != '\t')
            q++;
        if (q == p) {
            snprintf(err, errlen, "five fields wanted (minute hour day-of-month month weekday)");
            return -1;
        }
        if (parse_set(p, (size_t)(q - p), fields[f].lo, fields[f].hi, fields[f].what, &bits[f],
                      &star[f], err, errlen) != 0)
            return -1;
        p = q;
    }
    while (*p == ' ' || *p == '\t')
        p++;
    if (*p != '\0') {
        snprintf(err, errlen, "five fields wanted, more found at '%s'", p);
        return -1;
    }
    memset(out, 0, sizeof *out);
    out->minutes = bits[0];
    out->hours = (uint32_t)bits[1];
    out->mdays = (uint32_t)bits[2];
    out->months = (uint16_t)bits[3];
    out->wdays = (uint8_t)((bits[4] | bits[4] >> 7) & 0x7f); /* 7 is Sunday */
    out->mday_star = star[2];
    out->wday_star = star[4];
    return 0;
}

/* Civil time: minutes since 1970-01-01 00:00 on a calendar without time zones. */

/* civil_from_days turns days since 1970-01-01 into a proleptic Gregorian date. */
static void civil_from_days(int64_t z, int *y, int *m, int *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = (int)(yoe + era * 400 + (*m <= 2));
}

/* lowest returns the lowest set bit of bits at or above from, or -1. */
static int lowest(uint64_t bits, int from)
{
    if (from > 63)
        return -1;
    bits &= ~0ull << from;
    return bits ? __builtin_ctzll(bits) : -1;
}

/* day_matches applies crontab's day rule to day z (days since the epoch). */
static int day_matches(const struct cron_expr *e, int64_t z, int m, int d)
{
    if (!(e->months >> m & 1))
        return 0;
    int wd = (int)(((z % 7) + 11) % 7); /* 1970-01-01 was a Thursday (4) */
    int md = (int)(e->mdays >> d & 1), w = (int)(e->wdays >> wd & 1);
    if (e->mday_star || e->wday_star)
        return md && w;
    return md || w;
}

/* next_civil returns the first civil minute at or after w that the expression matches, or -1
 * after five years of days without one. */
static int64_t next_civil(const struct cron_expr *e, int64_t w)
{
    int64_t z = w >= 0 ? w / 1440 : -((-w + 1439) / 1440);
    int mod = (int)(w - z * 1440);
    int h0 = mod / 60, m0 = mod % 60;
    for (int n = 0; n <= 5 * 366; n++, z++, h0 = m0 = 0) {
        int y, mo, d;
        civil_from_days(z, &y, &mo, &d);
        if (!day_matches(e, z, mo, d))
            continue;
        for (int h = lowest(e->hours, h0); h >= 0; h = lowest(e->hours, h + 1)) {
            int m = lowest(e->minutes, h == h0 ? m0 : 0);
            if (m >= 0)
                return z * 1440 + h * 60 + m;
        }
    }
    return -1;
}

/* offset returns the local time zone's offset from UTC at instant t, in seconds. */
static long offset(int64_t t)
{
    time_t tt = (time_t)t;
    struct tm tm;
    if (localtime_r(&tt, &tm) == NULL)
        return 0;
    return tm.tm_gmtoff;
}

/* instants lists the instants that show local time ws (seconds on a civil clock): none in a
 * gap left by a forward change, two in an hour repeated by a backward one. The offsets in use a
 * day either side of ws are the candidates; *lo_off and *hi_off receive the smallest and largest. */
static int instants(int64_t ws, int64_t out[2], long *lo_off, long *hi_off)
{
    long o = offset(ws);
    long cand[3] = {offset(ws - o - 86400), offset(ws - o), offset(ws - o + 86400)};
    *lo_off = *hi_off = cand[0];
    int n = 0;
    for (int i = 0; i < 3; i++) {
        if (cand[i] < *lo_off)
            *lo_off = cand[i];
        if (cand[i] > *hi_off)
            *hi_off = cand[i];
        int64_t x = ws - cand[i];
        if (offset(x) != cand[i] || (n > 0 && out[0] == x) || (n > 1 && out[1] == x))
            continue;
        if (n == 2)
            continue; /* three offsets within two days: not a zone that exists */
        out[n++] = x;
    }
    if (n == 2 && out[1] < out[0]) {
        int64_t x = out[0];
        out[0] = out[1];
        out[1] = x;
    }
    return n;
}

int64_t cron_expr_next(const struct cron_expr *e, int64_t after)
{
    if (e->minutes == 0 || e->hours == 0 || e->months == 0 ||
        (e->mdays == 0 && e->wdays == 0))
        return -1;
    int64_t t = after - (((after % 60) + 60) % 60) + 60; /* the next whole minute */
    int every_hour = e->hours == 0xffffffu;
    /* Instants from t on show local times of at least t + the smallest offset in use around t
     * (an hour earlier than now when the clocks go back within the day): the search over local
     * times starts there, so that a repeated hour is seen. */
    long a = offset(t), b = offset(t + 86400);
    int64_t w0 = (t + (a < b ? a : b)) / 60;
    for (int guard = 0; guard < 4096; guard++) {
        int64_t w = next_civil(e, w0);
        if (w < 0)
            return -1;
        int64_t x[2];
        long lo_off, hi_off;
        int n = instants(w * 60, x, &lo_off, &hi_off);
        if (n == 0) {
            /* skipped by a forward change: fire once, at the change (the first instant whose
             * offset is the later, larger one) */
            int64_t lo = w * 60 - hi_off, hi = w * 60 - lo_off;
            while (hi - lo > 1) {
                int64_t mid = lo + (hi - lo) / 2;
                if (offset(mid) == hi_off)
                    hi = mid;
                else
                    lo = mid;
            }
            if (hi >= t)
                return hi;
        } else {
            if (x[0] >= t)
                return x[0];
            if (n == 2 && x[1] >= t && every_hour)
                return x[1]; /* the repeat of an hour: only "every hour" fires again */
        }
        w0 = w + 1;
    }
    return -1;
}

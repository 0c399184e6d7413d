/* SPDX-License-Identifier: BSD-3-Clause */
/* cron: the next time that matches SUBMIT_JOB_SCHED's minute/hour/day/month/weekday fields. Pure. */
#ifndef SPUR_CRON_H
#define SPUR_CRON_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

/* struct cron_spec holds the five fields; -1 means "any". */
struct cron_spec {
    int minute;  /* 0-59 */
    int hour;    /* 0-23 */
    int mday;    /* 1-31 */
    int month;   /* 1-12 */
    int wday;    /* 0-6, 0 = Sunday */
};

/* cron_parse_field parses one field: empty (or "*") is -1, else a decimal in [lo, hi].
 * Returns 0, or -1 if invalid. */
int cron_parse_field(const char *s, size_t len, int lo, int hi, int *out);

/* cron_possible reports whether the day of month can ever fall in the month (0 for February 30
 * or 31, April 31, ...). */
int cron_possible(const struct cron_spec *spec);

/* cron_next returns the first time strictly after `after`, at a whole minute, whose local time
 * matches every field that is not -1; or -1 if none does within five years (at once when
 * !cron_possible). Computed by date arithmetic: a few hundred steps at most, not a walk over
 * every day. */
int64_t cron_next(const struct cron_spec *spec, int64_t after);

#ifdef __cplusplus
}
#endif
#endif

/* SPDX-License-Identifier: BSD-3-Clause */
/* cron: the next time that matches a schedule. Two forms: SUBMIT_JOB_SCHED's five single-valued
 * fields (cron_spec, gearmand's semantics), and full crontab(5) expressions (cron_expr: lists,
 * ranges, steps, names, @daily...) for recurring schedules, with daylight-saving changes handled
 * as cron does. Both work in the process's local time zone (TZ). Pure. */
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

/* struct cron_expr is a crontab(5) time expression: the allowed values of each field. */
struct cron_expr {
    uint64_t minutes; /* bit m: minute m (0-59) */
    uint32_t hours;   /* bit h: hour h (0-23) */
    uint32_t mdays;   /* bit d: day of month d (1-31) */
    uint16_t months;  /* bit m: month m (1-12) */
    uint8_t wdays;    /* bit w: weekday w (0-6, Sunday 0; 7 is read as Sunday too) */
    uint8_t mday_star; /* the day-of-month field was "*": with both day fields restricted, a */
    uint8_t wday_star; /* day matches when either does (crontab's rule) */
};

/* CRON_EXPR_MAX is the longest expression text accepted. */
#define CRON_EXPR_MAX 256

/* cron_expr_parse reads five space-separated fields (minute hour day-of-month month weekday), each
 * a comma list of "*", N, N-M, with an optional "/STEP", months and weekdays also by English
 * three-letter name; or one of @yearly (@annually), @monthly, @weekly, @daily (@midnight),
 * @hourly. Returns 0, or -1 with a message in err. Syntax only: see cron_expr_never. */
int cron_expr_parse(const char *text, struct cron_expr *out, char *err, size_t errlen);

/* cron_expr_never reports whether e can never fire: its weekday field is "*" and none of the
 * days of its day-of-month field exists in any month of its month field (0 0 30 2 *, 0 0 31 4
 * *). Returns 1 with a message in err ("never fires: February has no day 30"), else 0. Leap
 * days exist: 0 0 29 2 * fires every four years. With both day fields restricted a day matches
 * when either does, so the weekday alone makes it fire. Every other expression fires within
 * five years (cron_expr_next). */
int cron_expr_never(const struct cron_expr *e, char *err, size_t errlen);

/* cron_field_like reports whether s[0..n) reads as one crontab field of any of the five kinds
 * ("*", "5", "1-5", "0-30/10", "mon-fri", "jan,jul"), a number (a year), or Quartz's "?": a
 * word that follows five fields and looks like this is a sixth field, not a function name. */
int cron_field_like(const char *s, size_t n);

/* cron_expr_next returns the first time strictly after `after` (seconds since the epoch) at
 * which the expression fires in local time, or -1 if it never does within five years.
 * Daylight-saving changes as cron(8) handles them: a local time skipped by a forward change
 * fires once, at the change; a local time repeated by a backward change fires once, the first
 * time, unless the hour field is "every hour" (then real time rules and it fires in both
 * passes). Leap seconds do not exist in POSIX time: a minute always has 60 seconds. */
int64_t cron_expr_next(const struct cron_expr *e, int64_t after);

#ifdef __cplusplus
}
#endif
#endif

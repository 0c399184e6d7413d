/* SPDX-License-Identifier: BSD-3-Clause */
/* schedule: one recurring schedule (admin `schedule add`, the config file's [schedule] section):
 * its text form, and when it fires. Each firing submits an ordinary background job; what to do
 * with it is the engine's. Pure: the caller passes the times. */
#ifndef SPUR_SCHEDULE_H
#define SPUR_SCHEDULE_H

#include <stddef.h>
#include <stdint.h>

#include "cron.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SCHEDULE_NAME_MAX 64          /* bytes in a schedule's name */
#define SCHEDULE_EVERY_MAX (366 * 86400) /* the longest @every period, seconds */

/* What a schedule does about the firings it missed while the server was down. */
enum schedule_catchup {
    SCHEDULE_SKIP, /* nothing: the next firing is the next due time from now */
    SCHEDULE_ONCE, /* one firing at once for all that were missed, then as usual */
};

/* struct schedule is one schedule. Strings are owned (schedule_free). */
struct schedule {
    char *name;        /* unique among schedules */
    char *spec;        /* as given: five cron fields, a @macro or "@every DURATION" */
    char *func;        /* the function its jobs are for */
    char *unique;      /* the jobs' unique, so a run still queued or running is not stacked:
                          --unique, or the name */
    char *payload;     /* the jobs' payload (text; may be empty) */
    size_t payload_len;
    int prio;          /* 0 high, 1 normal, 2 low */
    int nohaste;       /* @every: first firing after one period, not at once */
    int64_t every;     /* @every period in seconds, 0 for a cron expression */
    struct cron_expr cron; /* the expression when every == 0 */
    int64_t anchor;    /* @every: firings fall on anchor + k * every */
    int64_t next;      /* the next due time, seconds since the epoch; -1 never */
};

/* schedule_parse_duration reads a duration such as "90s", "5m", "1h30m", "2d" or a plain number
 * of seconds into *out (seconds, 1 to SCHEDULE_EVERY_MAX). Returns 0 or -1. */
int schedule_parse_duration(const char *s, size_t len, int64_t *out);

/* schedule_parse reads `NAME SPEC FUNC [--unique U] [--priority high|normal|low] [--nohaste]
 * [--] PAYLOAD` (SPEC: five cron fields, a @macro, or "@every DURATION"; options until the first
 * word not starting with "--", or "--"; the payload is the rest of the line after one space)
 * into *out, owned strings included. Returns 0, or -1 with a message in err. */
int schedule_parse(const char *text, size_t len, struct schedule *out, char *err, size_t errlen);

/* schedule_free releases what s owns. */
void schedule_free(struct schedule *s);

/* schedule_next returns the first due time strictly after `after`, or -1 for never. */
int64_t schedule_next(const struct schedule *s, int64_t after);

/* schedule_start sets a new schedule's anchor and first due time: an @every schedule fires at
 * once (at now) unless nohaste; a cron schedule at its next matching time, as cron does. */
void schedule_start(struct schedule *s, int64_t now);

/* schedule_fired moves s->next past now after a firing (missed periods are not stacked). */
void schedule_fired(struct schedule *s, int64_t now);

/* schedule_resume applies the catch-up policy to a schedule restored with its due time s->next
 * at start: returns 1 if it should fire now (it missed firings and the policy is ONCE); s->next
 * is moved to the next due time after now whenever it had passed. */
int schedule_resume(struct schedule *s, int64_t now, enum schedule_catchup c);

#ifdef __cplusplus
}
#endif
#endif

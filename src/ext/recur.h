/* SPDX-License-Identifier: BSD-3-Clause */
/* recur: the server's recurring schedules (admin `schedule add|list|remove`, the config file's
 * [schedule] section): schedules by name, a min-heap of their due times, firing (each firing
 * submits an ordinary background job through the submit path's own steps: coalescing by
 * unique, --job-queue limits, the store), durability as store records of kind
 * STORE_REC_SCHEDULE, and the admin handlers. Pure: the shell asks recur_next_due for the job
 * timer and calls recur_run when it expires; nothing here includes <ev.h>. The text form and
 * the time arithmetic are schedule.h's and cron.h's. */
#ifndef SPUR_RECUR_H
#define SPUR_RECUR_H

#include <stddef.h>
#include <stdint.h>

#include "metrics.h"

#ifdef __cplusplus
extern "C" {
#endif

struct engine;
struct peer;
struct recur;
struct schedule;

/* What recur_add says. */
enum recur_add_result {
    RECUR_ADDED = 0,    /* a new schedule */
    RECUR_REPLACED,     /* a schedule of that name was replaced */
    RECUR_INVALID,      /* the text does not parse, or a name or unique out of range */
    RECUR_TOO_MANY,     /* --max-schedules reached */
    RECUR_NO_MEMORY,    /* out of memory */
};

/* recur_attach creates e's schedules (e->ext.recur) and installs their engine_ext hooks (the
 * store record kind STORE_REC_SCHEDULE, a check and a destroy slot). Call after engine_init
 * (features_attach does); attaching again does nothing. Returns 0 or -1 (no memory). */
int recur_attach(struct engine *e);

/* recur_detach frees every schedule and e->ext.recur and removes the hooks (engine_destroy calls
 * it through engine_ext.destroy; a caller may detach earlier). NULL-safe. */
void recur_detach(struct engine *e);

/* recur_add adds (or, for an existing name, replaces) the schedule described by text (the
 * arguments of `schedule add`, schedule_parse's form) at now (engine_now); from_config marks
 * one from the config file (which wins over a stored one of the same name, see recur.c's
 * record_restored). The schedule is written to the store (a record put into the next batch). On
 * failure err says why. */
enum recur_add_result recur_add(struct engine *e, const char *text, size_t len, int from_config,
                                char *err, size_t errlen);

/* recur_remove removes the schedule called name; returns 0, or -1 if there is none. */
int recur_remove(struct engine *e, const char *name, size_t len);

/* recur_apply_config adds the config file's schedules (cfg->schedules). Call after the store is
 * opened (so they are written to it) and before the loop runs. Returns 0, or -1 with err. */
int recur_apply_config(struct engine *e, char *err, size_t errlen);

/* recur_next_due returns when the earliest schedule is due (seconds since the epoch), or a
 * negative value if none is, or while the store replays (no firing may race the jobs coming
 * back). O(1). */
double recur_next_due(const struct engine *e);

/* recur_run fires every schedule due at or before now, each once (missed periods are not
 * stacked), and moves it to its next due time. O(log n) per firing. */
void recur_run(struct engine *e, double now);

/* recur_count returns the number of schedules. */
size_t recur_count(const struct engine *e);

/* recur_counters: the schedules' rows of the counter table (metrics.h): schedules,
 * schedule_fired, schedule_coalesced, schedule_refused; added with metrics_add(e,
 * &recur_counters) where the feature is attached. */
extern const struct metrics_table recur_counters;

/* recur_admin handles one admin line starting with the word "schedule" (line[0..len), without
 * its line ending): `schedule add TEXT`, `schedule list`, `schedule remove NAME`. It replies
 * on p. */
void recur_admin(struct peer *p, const char *line, size_t len);

/* recur_admin_register adds the `schedule` admin commands (recur_admin) to e's admin commands
 * (admin_register); they answer "schedules are not enabled" until recur_attach. Returns 0 or
 * -1. */
int recur_admin_register(struct engine *e);

/* recur_check verifies that the heap and the map agree: every schedule in both, at its due
 * time, counted. Returns 0, or -1 with a description in err. O(n). */
int recur_check(const struct engine *e, char *err, size_t errlen);

/* struct recur_view is one schedule as recur_each shows it (borrowed for the call). */
struct recur_view {
    const struct schedule *s; /* its parsed form: name, spec, function, unique, priority */
    int64_t next;             /* when it fires next (an owed catch-up: when it was owed), -1 never */
    uint64_t runs;            /* firings since it was added */
    int64_t last;             /* the last firing, -1 none */
};

/* recur_each calls fn(arg, v) for every schedule of e, in order of addition (the order of
 * `schedule list`), until fn returns non-zero. O(schedules). */
void recur_each(const struct engine *e, int (*fn)(void *arg, const struct recur_view *v),
                void *arg);

/* recur_format_time writes t (seconds since the epoch) as UTC ISO 8601 ("2026-03-29T01:00:00Z")
 * into out (at least 32 bytes), or "-" for a negative t. Returns out. */
char *recur_format_time(int64_t t, char *out, size_t cap);

#ifdef __cplusplus
}
#endif
#endif

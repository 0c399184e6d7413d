/* SPDX-License-Identifier: BSD-3-Clause */
/* dash_data: the web dashboard's JSON documents (docs/DASHBOARD.md) and its one-second history.
 * Pure renderers over the engine, its functions, workers and jobs and the features' side state
 * (jobx's dead-letter list and dependencies, recur's schedules), called by the HTTP front-end
 * (shell/dash.c). Every document is paged or bounded: a refresh costs O(functions) at most
 * (the overview: one pass, and a sort of the functions that match the filter), the history is
 * a fixed ring, a list page O(offset + limit). Names, uniques, client ids and error texts are
 * bytes: they go into JSON made valid UTF-8 (metrics_sanitize), and the page inserts them as
 * text. Each renderer appends to out at most max bytes (0: no limit) and returns 0,
 * METRICS_NO_MEMORY or METRICS_TOO_LARGE (what was appended must then be discarded). */
#ifndef SPUR_DASH_DATA_H
#define SPUR_DASH_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "hist.h"
#include "series.h"

#ifdef __cplusplus
extern "C" {
#endif

struct engine;
struct func;

#define DASH_PAGE_MAX 500   /* the most rows a list page holds */
#define DASH_QUEUE_HEAD 50  /* jobs of a function's queue head shown */
#define DASH_MARKS_MAX 4    /* marks a function may carry in the overview */

/* The overview's sort keys (struct dash_query.sort). */
enum dash_sort {
    DASH_SORT_NAME = 0, /* by name (bytes) */
    DASH_SORT_QUEUED,   /* jobs queued, all priorities */
    DASH_SORT_RUNNING,  /* jobs running */
    DASH_SORT_WORKERS,  /* workers that can do it */
    DASH_SORT_IN,       /* jobs submitted since it was created */
    DASH_SORT_OUT,      /* jobs completed since it was created */
    DASH_SORT_P50,      /* queue wait, median */
    DASH_SORT_P99,      /* queue wait, 99th percentile */
};

/* struct dash_query is one overview request. */
struct dash_query {
    size_t offset;          /* the first matching function shown (in sort order) */
    size_t limit;           /* how many at most (1..DASH_PAGE_MAX) */
    const char *filter;     /* only names holding this (ASCII case ignored); NULL or "": all */
    enum dash_sort sort;    /* the order */
    int desc;               /* descending */
    int admin;              /* actions are on (--http-admin): told to the page */
};

/* dash_marks_fn writes up to max short marks ("paused", "limited": static strings) of f into
 * marks and returns how many. */
typedef size_t (*dash_marks_fn)(const struct engine *e, const struct func *f, const char **marks,
                                size_t max);

/* dash_func_marks is the overview's hook for the marks of a function: features_attach sets it
 * to flow control's flow_marks ("paused", "limited"). NULL: no marks (the column stays
 * empty). */
extern dash_marks_fn dash_func_marks;

/* struct dash_sampler is the history the charts draw, sampled once a second by the shell. */
struct dash_sampler {
    struct series ring;                 /* the samples */
    double last_t;                      /* the previous sample's time */
    uint64_t last_in;                   /* jobs submitted (all functions) at last_t */
    uint64_t last_out;                  /* jobs completed at last_t */
    uint64_t last_wait[HIST_BOUNDS + 1];/* the wait histograms of all functions, summed, at last_t */
    int primed;                         /* the last_* fields are set */
};

/* dash_sampler_init empties s. */
void dash_sampler_init(struct dash_sampler *s);

/* dash_sample adds the sample of the interval since the last call at now (engine_now): rates
 * of submitted and completed jobs, queue depth, the wait p99 of the jobs assigned meanwhile.
 * The first call only primes the counters. O(functions). */
void dash_sample(struct dash_sampler *s, const struct engine *e, double now);

/* dash_json_series appends the history: {"interval":1,"samples":[[t,in/s,out/s,queued,
 * running,wait_p99 or null],...]}, oldest first. O(SERIES_CAP). */
int dash_json_series(const struct dash_sampler *s, struct buf *out, size_t max);

/* dash_json_overview appends the overview: the server's summary (version, uptime,
 * connections, memory, store state) and a page of the functions that match q. */
int dash_json_overview(const struct engine *e, double now, const struct dash_query *q,
                       struct buf *out, size_t max);

/* dash_json_function appends the detail of the function name[0..len): its workers (client id,
 * address, the handles of its jobs they run), the head of its queue (handle, unique, priority,
 * age), its maxqueue limits and retry policy. {"found":false} when it does not exist. */
int dash_json_function(const struct engine *e, double now, const char *name, size_t len,
                       struct buf *out, size_t max);

/* dash_json_failed appends a page of the dead-letter list, oldest first: handle, function,
 * unique, attempts, first and last failure, the last error. O(offset + limit). */
int dash_json_failed(const struct engine *e, size_t offset, size_t limit, struct buf *out,
                     size_t max);

/* dash_json_waiting appends a page of the jobs waiting for others (dependencies): handle,
 * function, unique, priority, the handles still awaited. O(jobs with side state). */
int dash_json_waiting(const struct engine *e, size_t offset, size_t limit, struct buf *out,
                      size_t max);

/* dash_json_schedules appends every schedule: name, spec, function, next, runs, last, unique,
 * priority. O(schedules). */
int dash_json_schedules(const struct engine *e, struct buf *out, size_t max);

/* dash_json_job appends the job whose handle is key[0..len) (by_unique: the oldest live job
 * with that unique): `show jobs json`'s object, its age in its state, attempts and last error,
 * the handles it waits for and how many wait for it. {"found":false} when there is none. */
int dash_json_job(const struct engine *e, double now, const char *key, size_t len, int by_unique,
                  struct buf *out, size_t max);

/* dash_sort_parse returns the sort key named name ("name", "queued", "running", "workers",
 * "in", "out", "p50", "p99"), or DASH_SORT_NAME for anything else. */
enum dash_sort dash_sort_parse(const char *name);

#ifdef __cplusplus
}
#endif
#endif

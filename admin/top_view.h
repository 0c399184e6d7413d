/* SPDX-License-Identifier: BSD-3-Clause */
/* top_view: the numbers and the text of `spuradmin top`, from snapshots of a Spur server.
 *
 * Pure: no I/O, no terminal, no clock. A snapshot (struct top_snap) holds what one refresh read
 * from `stats json` and `status json` (top_json fills it). top_view_build compares the current
 * snapshot with the previous one (rates: the difference of cumulative counters over the time
 * between them) and with an older one (percentiles: the difference of histograms, the window),
 * and top_view_render lays the result out as plain text lines cut to the terminal's size;
 * top.c adds the escape sequences.
 */
#ifndef SPUR_ADMIN_TOP_VIEW_H
#define SPUR_ADMIN_TOP_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Most bucket bounds a histogram may have (Spur's have 22); counts has one more (+Inf). */
#define TOP_HIST_MAX_BOUNDS 32

/* One histogram as `stats json` gives it: counts per bucket, not cumulative. */
struct top_hist {
	double bounds[TOP_HIST_MAX_BOUNDS];        /* upper bounds of the finite buckets, rising */
	uint64_t counts[TOP_HIST_MAX_BOUNDS + 1];  /* observations per bucket, the last above all */
	size_t nbounds;                            /* bounds used; counts used is nbounds + 1 */
	uint64_t count;                            /* observations in all */
	double sum;                                /* their sum */
};

/* One function in a snapshot. */
struct top_func {
	char *name;          /* owned, NUL-terminated UTF-8 as the server wrote it */
	uint64_t queued;     /* jobs not running (all priorities) */
	uint64_t running;    /* jobs running */
	uint64_t workers;    /* workers that can do it */
	uint64_t submitted;  /* cumulative: jobs submitted */
	uint64_t completed;  /* cumulative: WORK_COMPLETE */
	uint64_t failed;     /* cumulative: failed + exception + timed_out + lost */
	struct top_hist wait; /* queue wait, seconds */
};

/* What one refresh read. */
struct top_snap {
	int64_t at_ms;            /* when it was read, on the caller's monotonic clock */
	char version[64];         /* server version */
	int64_t pid;              /* server pid */
	double uptime;            /* seconds since the server started */
	uint64_t conns_open;      /* open connections */
	uint64_t conns_client;    /* of those, acting as clients */
	uint64_t conns_worker;    /* ... as workers */
	uint64_t conns_admin;     /* ... as admin */
	uint64_t jobs_live;       /* live jobs */
	uint64_t jobs_running;    /* running jobs */
	uint64_t jobs_queued;     /* jobs not running */
	uint64_t job_memory;      /* bytes held by live jobs */
	uint64_t submitted;       /* cumulative, all functions */
	uint64_t completed;       /* cumulative */
	uint64_t failed;          /* cumulative: failed + exception + timed_out + lost */
	bool store_enabled;       /* the server runs with --store */
	uint64_t store_commits;   /* cumulative batches written */
	uint64_t store_failures;  /* cumulative failed batches */
	struct top_hist store_commit;  /* commit latency, seconds */
	struct top_hist store_batch;   /* operations per batch */
	uint64_t flow_paused;     /* functions paused (flow control; 0 from an older server) */
	uint64_t flow_limited;    /* functions with a concurrency, rate or key limit */
	uint64_t flow_held;       /* ready jobs flow control holds back, every reason */
	uint64_t flow_keys_waiting; /* keys waiting for their key limit */
	struct top_func *funcs;   /* owned array, sorted by name (strcmp) */
	size_t nfuncs;            /* functions in funcs */
};

/* Keys the function table can be sorted by ('s' cycles through them in this order). */
enum top_sort {
	TOP_SORT_QUEUED,
	TOP_SORT_RUNNING,
	TOP_SORT_WORKERS,
	TOP_SORT_SUBMIT,
	TOP_SORT_DONE,
	TOP_SORT_WAIT_P99,
	TOP_SORT_NAME,
	TOP_SORT_COUNT /* number of keys, not a key */
};

/* Outcome of a percentile estimate. */
enum top_q {
	TOP_Q_NONE,   /* no observation in the window */
	TOP_Q_VALUE,  /* an estimate */
	TOP_Q_ABOVE   /* it lies in the +Inf bucket: above the value (the last bound) */
};

/* One row of the function table. */
struct top_row {
	const char *name;      /* borrowed from the current snapshot */
	uint64_t queued, running, workers; /* gauges */
	double submit_rate;    /* per second over the last refresh; < 0 when unknown */
	double done_rate;      /* per second; < 0 when unknown */
	double fail_rate;      /* per second; < 0 when unknown */
	enum top_q p50_kind, p99_kind; /* what p50 and p99 hold */
	double p50, p99;       /* queue wait in seconds */
};

/* Everything one frame shows. */
struct top_view {
	const struct top_snap *cur; /* borrowed */
	bool have_rates;           /* a previous snapshot was given */
	double submit_rate, done_rate, fail_rate, commit_rate; /* server-wide, per second */
	enum top_q commit_p50_kind, commit_p99_kind; /* store commit latency */
	double commit_p50, commit_p99;
	double batch_avg;          /* operations per batch in the window; < 0 when none */
	struct top_row *rows;      /* owned, one per function */
	size_t nrows;
	enum top_sort sort;        /* current order */
};

/* top_snap_free frees what s owns and zeroes it. */
void top_snap_free(struct top_snap *s);

/* top_funcs_find returns the function named name among funcs[0..n) (sorted by name), or NULL. */
struct top_func *top_funcs_find(struct top_func *funcs, size_t n, const char *name);

/* top_snap_find returns the function named name in s (sorted by name), or NULL. */
const struct top_func *top_snap_find(const struct top_snap *s, const char *name);

/* top_rate returns (cur - prev) / seconds. A counter that went down was reset (`stats reset`,
 * or the function was forgotten and made again), so it counts from 0: cur / seconds. Returns -1
 * when seconds is not positive. */
double top_rate(uint64_t prev, uint64_t cur, double seconds);

/* top_hist_delta stores in out the observations of cur not in old (cur - old bucket by bucket).
 * When old is NULL, has other bounds, or any bucket went down (a reset), out is cur. */
void top_hist_delta(const struct top_hist *old, const struct top_hist *cur, struct top_hist *out);

/* top_quantile estimates the q-quantile (0 < q < 1) of h as Prometheus' histogram_quantile
 * does: it finds the bucket holding the rank q * count and interpolates linearly between that
 * bucket's lower bound (0 for the first) and upper bound. In the +Inf bucket it answers
 * TOP_Q_ABOVE with the last bound in *value; with no observation TOP_Q_NONE. */
enum top_q top_quantile(const struct top_hist *h, double q, double *value);

/* top_view_build fills v from cur. prev, the snapshot before (or NULL on the first refresh),
 * gives the rates; base, an older snapshot (or NULL, meaning since the server started), gives
 * the window of the percentiles. Rows are sorted by sort. Returns 0, or -1 when memory runs out.
 * v borrows cur, which must outlive it. */
int top_view_build(struct top_view *v, const struct top_snap *cur, const struct top_snap *prev,
		   const struct top_snap *base, enum top_sort sort);

/* top_view_sort reorders v's rows by key (largest first; by name A to Z), ties by name. */
void top_view_sort(struct top_view *v, enum top_sort key);

/* top_view_free frees what v owns. */
void top_view_free(struct top_view *v);

/* top_sort_name returns the key's name as the screen shows it ("queued"). */
const char *top_sort_name(enum top_sort key);

/* What the header line names. */
struct top_frame_info {
	const char *server;     /* "host:port" */
	double interval;        /* seconds between refreshes */
	double window;          /* seconds of the percentile window; 0 while it is since start */
};

/* top_view_render writes the frame as at most rows lines, each at most cols columns (a
 * column is one UTF-8 character; control characters in names are shown as '?'), separated by
 * '\n' with no '\n' after the last, into out (cap bytes, always NUL-terminated). When the
 * function table does not fit, its last line says how many functions are not shown. Returns the
 * number of lines written. rows or cols below 1 write nothing. */
size_t top_view_render(const struct top_view *v, const struct top_frame_info *info, int rows,
		       int cols, char *out, size_t cap);

#ifdef __cplusplus
}
#endif

#endif

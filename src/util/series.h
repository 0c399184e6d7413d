/* SPDX-License-Identifier: BSD-3-Clause */
/* series: the dashboard's history (docs/DASHBOARD.md), a fixed ring of one-second samples of
 * the server's load, and the quantile of a histogram's counts. Pure, libc only: the shell
 * samples the engine into it once a second; the JSON is rendered above (ext/dash_data.c). */
#ifndef SPUR_SERIES_H
#define SPUR_SERIES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SERIES_CAP 900 /* samples kept: 15 minutes at one a second */

/* struct series_sample is the server's load over one interval (about a second). */
struct series_sample {
    double t;           /* when it was taken (engine_now, seconds since the epoch) */
    double submitted;   /* jobs submitted per second over the interval */
    double completed;   /* jobs completed per second over the interval */
    uint64_t queued;    /* jobs queued (not running) at t */
    uint64_t running;   /* jobs running at t */
    double wait_p99;    /* the 99th percentile of the queue wait of the jobs assigned in the
                           interval, seconds (a bucket bound); negative when none was */
};

/* struct series is the ring: the last SERIES_CAP samples, oldest overwritten first. */
struct series {
    struct series_sample s[SERIES_CAP]; /* the samples; s[(head + i) % SERIES_CAP] is the i-th
                                           oldest of the n kept */
    size_t head;                        /* index of the oldest sample */
    size_t n;                           /* samples kept (at most SERIES_CAP) */
};

/* series_init empties r. */
void series_init(struct series *r);

/* series_push appends a copy of x, dropping the oldest sample when r is full. O(1). */
void series_push(struct series *r, const struct series_sample *x);

/* series_len returns how many samples r keeps. */
size_t series_len(const struct series *r);

/* series_at returns the i-th oldest sample of r (i < series_len), borrowed. */
const struct series_sample *series_at(const struct series *r, size_t i);

/* series_quantile returns the q-quantile (0 < q <= 1) of the observations counted in
 * count[0..nb] (non-cumulative; count[i] for bucket i, whose upper bound is bounds[i], and
 * count[nb] for the values above bounds[nb-1]), as the upper bound of the bucket where it
 * falls (bounds[nb-1] for the last, unbounded bucket); negative when there is none. */
double series_quantile(const uint64_t *count, const double *bounds, size_t nb, double q);

#ifdef __cplusplus
}
#endif
#endif

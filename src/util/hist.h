/* SPDX-License-Identifier: BSD-3-Clause */
/* hist: fixed-bucket histograms for metrics (queue wait, run time, store commits). Pure, libc
 * only. A histogram is a plain array of counters: an observation is a few comparisons and one
 * increment, with no allocation, so the hot path can afford it. */
#ifndef SPUR_HIST_H
#define SPUR_HIST_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HIST_BOUNDS 22 /* finite upper bounds of every histogram; one more bucket is +Inf */

/* struct hist counts observations per bucket (not cumulative: bucket i holds the values v with
 * bounds[i-1] < v <= bounds[i]; the last, HIST_BOUNDS, those above every bound) and their sum. */
struct hist {
    uint64_t count[HIST_BOUNDS + 1]; /* observations per bucket */
    double sum;                      /* the sum of every observed value */
};

/* hist_seconds are the bounds of the time histograms: 100 us to 1000 s in the 1-2.5-5 log
 * series. hist_sizes are the bounds of the size histograms: the powers of two 1 .. 2^21. */
extern const double hist_seconds[HIST_BOUNDS];
extern const double hist_sizes[HIST_BOUNDS];

/* hist_bucket returns the bucket of v for bounds (ascending, HIST_BOUNDS of them): the first i
 * with v <= bounds[i], or HIST_BOUNDS. A binary search: five comparisons. */
size_t hist_bucket(const double *bounds, double v);

/* hist_observe counts v (a negative v, from a clock step, counts as 0). O(1). */
static inline void hist_observe(struct hist *h, const double *bounds, double v)
{
    if (v < 0)
        v = 0;
    h->count[hist_bucket(bounds, v)]++;
    h->sum += v;
}

/* hist_total returns how many observations h holds (the sum of its buckets). */
uint64_t hist_total(const struct hist *h);

#ifdef __cplusplus
}
#endif
#endif

/* SPDX-License-Identifier: BSD-3-Clause */
/* hist: fixed-bucket histograms. */
#include "hist.h"

const double hist_seconds[HIST_BOUNDS] = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
    0.5,    1,       2.5,    5,     10,     25,    50,   100,   250,  500, 1000,
};

const double hist_sizes[HIST_BOUNDS] = {
    1,    2,    4,    8,     16,    32,    64,     128,    256,    512,    1024,
    2048, 4096, 8192, 16384, 32768, 65536, 131072, 262144, 524288, 1048576, 2097152,
};

size_t hist_bucket(const double *bounds, double v)
{
    size_t lo = 0, hi = HIST_BOUNDS; /* the answer is in [lo, hi] */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (v <= bounds[mid])
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

uint64_t hist_total(const struct hist *h)
{
    uint64_t n = 0;
    for (size_t i = 0; i <= HIST_BOUNDS; i++)
        n += h->count[i];
    return n;
}

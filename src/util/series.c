/* SPDX-License-Identifier: BSD-3-Clause */
/* series: the dashboard's one-second history ring and histogram quantiles (series.h). */
#include "series.h"

#include <string.h>

void series_init(struct series *r)
{
    memset(r, 0, sizeof *r);
}

void series_push(struct series *r, const struct series_sample *x)
{
    if (r->n < SERIES_CAP) {
        r->s[(r->head + r->n) % SERIES_CAP] = *x;
        r->n++;
        return;
    }
    r->s[r->head] = *x; /* the oldest slot takes the newest sample */
    r->head = (r->head + 1) % SERIES_CAP;
}

size_t series_len(const struct series *r)
{
    return r->n;
}

const struct series_sample *series_at(const struct series *r, size_t i)
{
    return &r->s[(r->head + i) % SERIES_CAP];
}

double series_quantile(const uint64_t *count, const double *bounds, size_t nb, double q)
{
    uint64_t total = 0;
    for (size_t i = 0; i <= nb; i++)
        total += count[i];
    if (total == 0 || nb == 0)
        return -1.0;
    /* the rank of the quantile, 1-based: the smallest k with k >= q * total */
    double want = q * (double)total;
    uint64_t rank = (uint64_t)want;
    if ((double)rank < want || rank == 0)
        rank++;
    uint64_t seen = 0;
    for (size_t i = 0; i < nb; i++) {
        seen += count[i];
        if (seen >= rank)
            return bounds[i];
    }
    return bounds[nb - 1];
}

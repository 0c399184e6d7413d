/* SPDX-License-Identifier: BSD-3-Clause */
/* jobx_counters: the counters of retries, the dead-letter list and dependencies (jobx.h) in
 * `stats`, `stats json` and `metrics`: rows of the counter table (metrics.h), added with
 * metrics_add(e, &jobx_counters) where the feature is attached. */
#ifndef SPUR_JOBX_COUNTERS_H
#define SPUR_JOBX_COUNTERS_H

#include "metrics.h"

#ifdef __cplusplus
extern "C" {
#endif

/* jobx_counters: retries_total, failed_jobs, failed_dropped_total, waiting_jobs. */
extern const struct metrics_table jobx_counters;

#ifdef __cplusplus
}
#endif
#endif

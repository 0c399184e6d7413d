/* SPDX-License-Identifier: BSD-3-Clause */
/* jobx_opt: the option rows of retries, dead letters and dependencies (jobx.h): --retry,
 * --max-failed-jobs, --max-waiting-jobs, --max-dependents. Their fields are in struct config. */
#ifndef SPUR_JOBX_OPT_H
#define SPUR_JOBX_OPT_H

#ifdef __cplusplus
extern "C" {
#endif

struct opt_table;

/* jobx_options is the option rows of retries, dead letters and dependencies. */
extern const struct opt_table jobx_options;

#ifdef __cplusplus
}
#endif
#endif

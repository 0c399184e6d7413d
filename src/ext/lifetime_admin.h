/* SPDX-License-Identifier: BSD-3-Clause */
/* lifetime_admin: the admin commands and counter rows of per-job timeouts and times to live
 * (lifetime.h): `lifetime FUNC TIMEOUT_MS TTL_S` sets a function's defaults (0 0 removes them),
 * `lifetime list` lists them; job_timeouts_total and jobs_expired_total in stats, stats json
 * and metrics. */
#ifndef SPUR_LIFETIME_ADMIN_H
#define SPUR_LIFETIME_ADMIN_H

#ifdef __cplusplus
extern "C" {
#endif

struct engine;
struct metrics_table;

/* lifetime_admin_register adds the admin commands `lifetime` and `lifetime list` to e.
 * Returns 0 or -1 (admin_register). */
int lifetime_admin_register(struct engine *e);

/* lifetime_counters is the rows of job_timeouts_total and jobs_expired_total. */
extern const struct metrics_table lifetime_counters;

#ifdef __cplusplus
}
#endif
#endif

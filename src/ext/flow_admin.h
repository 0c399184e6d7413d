/* SPDX-License-Identifier: BSD-3-Clause */
/* flow_admin: the admin commands of flow control (flow.h): `limit FUNC concurrency N`,
 * `limit FUNC rate R/s`, `limit FUNC key-concurrency N`, `limit FUNC key-rate R/s`,
 * `limit FUNC off`, `limit list`, `pause FUNC`, `resume FUNC`, `weight FUNC W` (replies in
 * docs/ADMIN.md). */
#ifndef SPUR_FLOW_ADMIN_H
#define SPUR_FLOW_ADMIN_H

#ifdef __cplusplus
extern "C" {
#endif

struct engine;
struct metrics_table;

/* flow_admin_register adds the commands to e's admin table (features_attach). Returns 0 or
 * -1. */
int flow_admin_register(struct engine *e);

/* flow_counters are flow control's rows of stats, stats json and metrics (gauges). */
extern const struct metrics_table flow_counters;

#ifdef __cplusplus
}
#endif
#endif

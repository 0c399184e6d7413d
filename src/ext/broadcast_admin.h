/* SPDX-License-Identifier: BSD-3-Clause */
/* broadcast_admin: the admin commands (`broadcast FUNC on|off`, `broadcast list`) and the counter
 * rows of broadcast functions (broadcast.h). */
#ifndef SPUR_BROADCAST_ADMIN_H
#define SPUR_BROADCAST_ADMIN_H

#ifdef __cplusplus
extern "C" {
#endif

struct engine;
struct metrics_table;

/* broadcast_admin_register adds the admin commands `broadcast FUNC on|off` and
 * `broadcast list`. Returns 0 or -1. */
int broadcast_admin_register(struct engine *e);

/* broadcast_counters is the feature's rows of stats, stats json and metrics. */
extern const struct metrics_table broadcast_counters;

#ifdef __cplusplus
}
#endif
#endif

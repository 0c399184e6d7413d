/* SPDX-License-Identifier: BSD-3-Clause */
/* recur_opt: the option rows of recurring schedules (recur.h): --schedule-tz,
 * --schedule-catchup, --max-schedules. Their fields are in struct config; the config file's
 * [schedule] section is read by config.c. */
#ifndef SPUR_RECUR_OPT_H
#define SPUR_RECUR_OPT_H

#ifdef __cplusplus
extern "C" {
#endif

struct opt_table;

/* recur_options is the option rows of recurring schedules. */
extern const struct opt_table recur_options;

#ifdef __cplusplus
}
#endif
#endif

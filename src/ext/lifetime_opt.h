/* SPDX-License-Identifier: BSD-3-Clause */
/* lifetime_opt: the option rows of per-job timeouts and times to live (lifetime.h):
 * --job-timeout, --job-ttl, --expired. Their fields are in struct config. */
#ifndef SPUR_LIFETIME_OPT_H
#define SPUR_LIFETIME_OPT_H

#ifdef __cplusplus
extern "C" {
#endif

struct opt_table;

/* lifetime_options is the option rows of per-job timeouts and times to live. */
extern const struct opt_table lifetime_options;

#ifdef __cplusplus
}
#endif
#endif

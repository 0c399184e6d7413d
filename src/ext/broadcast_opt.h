/* SPDX-License-Identifier: BSD-3-Clause */
/* broadcast_opt: the option rows of broadcast functions (broadcast.h): --broadcast and
 * --broadcast-backlog. Their fields are in struct config. */
#ifndef SPUR_BROADCAST_OPT_H
#define SPUR_BROADCAST_OPT_H

#ifdef __cplusplus
extern "C" {
#endif

struct opt_table;

/* broadcast_options is the option rows of broadcast functions. */
extern const struct opt_table broadcast_options;

#ifdef __cplusplus
}
#endif
#endif

/* SPDX-License-Identifier: BSD-3-Clause */
/* flow_opt: the option rows of flow control (flow.h): --limit=FUNC:SPEC (repeatable) and
 * --limit-key-separator. Their fields are in struct config. */
#ifndef SPUR_FLOW_OPT_H
#define SPUR_FLOW_OPT_H

#ifdef __cplusplus
extern "C" {
#endif

struct opt_table;

/* flow_options is the option rows of flow control. */
extern const struct opt_table flow_options;

#ifdef __cplusplus
}
#endif
#endif

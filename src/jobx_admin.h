/* SPDX-License-Identifier: BSD-3-Clause */
/* jobx_admin: the admin text commands of jobx.h (retry policies, the dead-letter list); admin.c
 * dispatches to them. Replies are docs/ADMIN.md's. */
#ifndef SPUR_JOBX_ADMIN_H
#define SPUR_JOBX_ADMIN_H

#include <stddef.h>

#include "peer.h"
#include "proto_admin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* jobx_admin_retry runs `retry FUNC COUNT BACKOFF [MAX]`, `retry list`, `retry job HANDLE` and
 * `retry job all FUNC` (t[0] is "retry"). */
void jobx_admin_retry(struct peer *p, const struct pa_token *t, size_t n);

/* jobx_admin_show_failed runs `show failed jobs [FUNC]` (t[0..2] are "show failed jobs"). */
void jobx_admin_show_failed(struct peer *p, const struct pa_token *t, size_t n);

/* jobx_admin_purge runs `purge failed [FUNC]` (t[0] is "purge"). */
void jobx_admin_purge(struct peer *p, const struct pa_token *t, size_t n);

#ifdef __cplusplus
}
#endif
#endif

/* SPDX-License-Identifier: BSD-3-Clause */
/* jobx_admin: the admin text commands of jobx.h (retry policies, the dead-letter list, submit
 * --after), rows of admin.c's command table (jobx_admin_register). Replies are docs/ADMIN.md's. */
#ifndef SPUR_JOBX_ADMIN_H
#define SPUR_JOBX_ADMIN_H

#include <stddef.h>

#include "job.h"
#include "peer.h"
#include "proto_admin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* jobx_admin_register adds the commands below (retry, retry list, purge, submit, show failed
 * jobs) to e's admin commands (admin_register). Returns 0 or -1. */
int jobx_admin_register(struct engine *e);

/* jobx_admin_retry runs `retry FUNC COUNT BACKOFF [MAX]`, `retry list`, `retry job HANDLE` and
 * `retry job all FUNC` (t[0] is "retry"). */
void jobx_admin_retry(struct peer *p, const struct pa_token *t, size_t n);

/* jobx_admin_show_failed runs `show failed jobs [FUNC]` (t[0..2] are "show failed jobs"). */
void jobx_admin_show_failed(struct peer *p, const struct pa_token *t, size_t n);

/* jobx_admin_submit runs `submit FUNC [--after H1,H2] [--unique U] [--priority P] [--] PAYLOAD`
 * from the raw line (the payload is the rest of it): a background job, waiting for the jobs
 * named by --after until they complete. Replies `OK HANDLE`, with a store once the job is
 * durable (held like a binary JOB_CREATED). */
void jobx_admin_submit(struct peer *p, const char *line, size_t len);

/* jobx_submit submits (job_submit) a background job of function fn with unique uq, priority
 * prio and payload data, waiting for the jobs ids[0..n) (n may be 0: queued at once); a live
 * job of fn with that unique is joined instead (a dead-letter one brought back). With a store
 * the job is recorded (a runnable one is queued once durable) and the reply to owner (NULL for
 * none) is held until then. A broadcast function's submit is fanned out instead (broadcast.h).
 * Returns 0 with the handle number of the job (or of the broadcast) in *id (answer now), 1 with
 * it in *id when the reply is held for owner (the store's sink answers it: peer_ack_owner), or
 * -1 with *why an admin error ("CODE Text+with+pluses"). The encoder of the admin `submit` and
 * HTTP X-Spur-After; the name is checked where functions are created (func_get). */
int jobx_submit(struct engine *e, const char *fn, size_t fl, const char *uq, size_t ul,
                enum job_prio prio, const void *data, size_t dl, const uint64_t *ids, size_t n,
                void *owner, uint64_t *id, const char **why);

/* jobx_parse_after reads handles separated by commas (or spaces) in list[0..len) into ids:
 * each a live job not in the dead-letter list, at most JOBX_MAX_AFTER. Returns how many, or -1
 * with *why an admin error. */
int jobx_parse_after(struct engine *e, const char *list, size_t len, uint64_t *ids,
                     const char **why);

/* jobx_admin_purge runs `purge failed [FUNC]` (t[0] is "purge"). */
void jobx_admin_purge(struct peer *p, const struct pa_token *t, size_t n);

#ifdef __cplusplus
}
#endif
#endif

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
 * named by --after until they complete. Replies `OK HANDLE` at once (not held until durable). */
void jobx_admin_submit(struct peer *p, const char *line, size_t len);

/* jobx_submit creates a background job of function fn (created if needed) with unique uq,
 * priority prio and payload data, waiting for the jobs ids[0..n) (n may be 0: queued at once);
 * a live job of fn with that unique is joined instead. With a store the job is recorded (a
 * runnable one is queued once durable). Returns 0 with the job in *out, or -1 with *why an
 * admin error ("CODE Text+with+pluses"). Shared by the admin `submit` and HTTP X-Spur-After;
 * it checks the name itself (func_name_ok, --max-function-name), as every entry point must. */
int jobx_submit(struct engine *e, const char *fn, size_t fl, const char *uq, size_t ul,
                enum job_prio prio, const void *data, size_t dl, const uint64_t *ids, size_t n,
                struct job **out, const char **why);

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

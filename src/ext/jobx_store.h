/* SPDX-License-Identifier: BSD-3-Clause */
/* jobx_store: makes jobx's state durable with --store. A retried or dead-lettered job's stored
 * row carries its state as meta (a JSON object: "state" "retrying"|"failed", "attempts",
 * "first_at", "last_at", "error"), rewritten at each failure (store_update) with the retry's due
 * time; a retry policy set by the admin `retry` is a STORE_REC_RETRY record (key: the function,
 * value: "COUNT BACKOFF MAX"). At start the records come back first, then each job with meta
 * through engine_ext.job_restored: a dead-letter job returns to the list, a retrying one keeps its
 * attempts and runs at its stored due time. Outside the core (it calls store.h): jobx calls in
 * through the hooks in struct jobx that jobx_store_attach sets. */
#ifndef SPUR_JOBX_STORE_H
#define SPUR_JOBX_STORE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct engine;
struct job;

/* jobx_store_attach sets up jobx (jobx_attach) and its durability hooks on e (server start,
 * before the store is opened). Returns 0 or -1 (out of memory). */
int jobx_store_attach(struct engine *e);

/* jobx_store_policy writes the policy of function name[0..len) as it is now (set: a record
 * put; none: a record deleted) into the next store batch (the admin `retry`). Returns 0 (also
 * without a store) or -1. */
int jobx_store_policy(struct engine *e, const char *name, size_t len);

/* jobx_meta_write writes j's meta (j has a jobx record) into out (cap bytes); returns its length,
 * 0 when j has none or it does not fit. */
size_t jobx_meta_write(const struct engine *e, const struct job *j, char *out, size_t cap);

/* jobx_meta_read parses meta[0..len): *failed = state "failed", the attempts, times and error
 * (err, cap bytes, *errlen its length). Missing keys read as 0 / empty. Returns 0, or -1 when
 * meta is not an object with a "state" of jobx. */
int jobx_meta_read(const char *meta, size_t len, int *failed, uint32_t *attempts,
                   double *first_at, double *last_at, char *err, size_t cap, size_t *errlen);

#ifdef __cplusplus
}
#endif
#endif

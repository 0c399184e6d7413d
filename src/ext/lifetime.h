/* SPDX-License-Identifier: BSD-3-Clause */
/* lifetime: per-job timeouts and times to live (docs/JOB-LIFETIME.md). A job submitted with a
 * timeout (OPTION_REQ job-timeout, admin `submit --timeout`, X-Spur-Timeout, --job-timeout) fails
 * that long after its start on a worker, through the CAN_DO_TIMEOUT path (worker_job_timeout):
 * the deadline job_start arms is the smaller of the two. A job with a time to live (job-ttl,
 * --ttl, X-Spur-TTL, --job-ttl) that no worker started within it expires: counted, and put in
 * the dead-letter list with reason "expired" (or dropped: --expired=drop); its foreground
 * clients get WORK_FAIL. Its expiry is in the engine's timer heap by the job's timer field,
 * which a ready job does not use otherwise: O(log n), never a scan. The side state is one record
 * per such job (flagged JOB_LIFE), by handle number; its stored meta carries "timeout_ms" and
 * "expires_at" beside jobx's keys. The core calls in through the engine_ext life_* hooks. */
#ifndef SPUR_LIFETIME_H
#define SPUR_LIFETIME_H

#include <stddef.h>
#include <stdint.h>

#include "hmap.h"

#ifdef __cplusplus
extern "C" {
#endif

struct engine;
struct job;
struct submit_life;

#define LIFETIME_MAX_DEFAULTS 10000 /* functions with a default timeout or TTL at once */
#define LIFETIME_MAX_TTL 31536000u  /* the longest time to live: a year, in seconds */

/* struct life_rec is the lifetime of one job (JOB_LIFE), by handle number. */
struct life_rec {
    struct job *job;     /* the job */
    double expires;      /* epoch seconds its time to live ends; 0: none, or over (started) */
    uint32_t timeout_ms; /* its own timeout from each start on a worker, 0 = none */
    uint8_t own;         /* the deadline armed at its last start is its own timeout */
};

/* struct life_default is a function's default timeout and time to live (by name: the function
 * need not exist). */
struct life_default {
    uint32_t timeout_ms; /* default timeout, 0 = none */
    uint32_t ttl_s;      /* default time to live, 0 = none */
    uint32_t name_len;   /* bytes in name */
    char name[];         /* the function name, NUL-terminated */
};

/* struct lifetime is the feature's state (engine.ext.lifetime, opaque to the core). */
struct lifetime {
    struct hmap recs;     /* struct life_rec by job handle number */
    struct hmap defaults; /* struct life_default by function name */
    /* the job_meta and job_restored hooks lifetime wraps (jobx's), NULL for none */
    size_t (*meta_next)(const struct engine *e, const struct job *j, char *out, size_t cap);
    int (*restored_next)(struct engine *e, struct job *j, const char *meta, size_t len,
                         double when);
};

/* lifetime_attach sets up e's lifetime state with the defaults of --job-timeout and --job-ttl
 * and installs the life_* hooks, wrapping the job_meta and job_restored hooks already set
 * (features_attach, after jobx_store_attach). Attaching again re-wraps them and changes
 * nothing else. Returns 0, or -1 out of memory or without a check slot. */
int lifetime_attach(struct engine *e);

/* lifetime_of returns e's lifetime state, or NULL when not attached. */
struct lifetime *lifetime_of(const struct engine *e);

/* lifetime_rec_of returns j's lifetime record, or NULL. O(1). */
struct life_rec *lifetime_rec_of(const struct engine *e, const struct job *j);

/* lifetime_default_find returns the defaults of function name[0..len), or NULL. */
const struct life_default *lifetime_default_find(const struct engine *e, const char *name,
                                                 size_t len);

/* lifetime_default_set sets function name[0..len)'s default timeout (ms) and time to live
 * (seconds); both 0 removes them. Returns 0, -1 out of memory, -2 when
 * LIFETIME_MAX_DEFAULTS functions have defaults already. */
int lifetime_default_set(struct engine *e, const char *name, size_t len, uint32_t timeout_ms,
                         uint32_t ttl_s);

/* lifetime_meta_write writes j's lifetime keys ("timeout_ms", "expires_at", those set) into
 * the JSON object out[0..n) of cap bytes (n 0: a new object); returns the new length, n when j
 * has none, 0 when it does not fit. */
size_t lifetime_meta_write(const struct engine *e, const struct job *j, char *out, size_t n,
                           size_t cap);

/* lifetime_meta_read reads the lifetime keys of meta[0..len): 0 for one missing. Returns 1
 * when either is set, else 0. */
int lifetime_meta_read(const char *meta, size_t len, uint32_t *timeout_ms, double *expires);

#ifdef __cplusplus
}
#endif
#endif

/* SPDX-License-Identifier: BSD-3-Clause */
/* jobx: job extensions beyond Gearman, kept beside the jobs rather than in struct job: retry
 * policies per function (a background job that fails is run again later, with exponential
 * backoff and jitter) and the dead-letter list of the jobs that used their retries up.
 * Pure, no I/O: the engine calls in through its engine_ext hooks, where a job fails, completes,
 * leaves a place of jobx's, is freed or is checked; the admin commands are in jobx_admin.c.
 * A job with side state here carries JOB_EXT. */
#ifndef SPUR_JOBX_H
#define SPUR_JOBX_H

#include <stddef.h>
#include <stdint.h>

#include "hmap.h"
#include "list.h"

#ifdef __cplusplus
extern "C" {
#endif

struct engine;
struct func;
struct job;

#define JOBX_MAX_POLICIES 10000      /* retry policies at once (functions named) */
#define JOBX_MAX_COUNT 1000          /* retries one policy may allow */
#define JOBX_MAX_SECONDS 2592000.0   /* the largest BACKOFF or MAX: 30 days */
#define JOBX_DEFAULT_MAX 3600.0      /* MAX when `retry FUNC COUNT BACKOFF` gives none */
#define JOBX_ERROR_MAX 1024          /* bytes of a failure's text kept (the rest is cut) */
#define JOBX_ERROR_BUF (JOBX_ERROR_MAX + 1) /* room for any failure's text (jobx_error) */
#define JOBX_MAX_AFTER 64            /* jobs one job may wait for (submit --after) */

/* struct jobx_policy is the retry policy of one function (by name: the function need not exist). */
struct jobx_policy {
    uint32_t count;    /* retries after the first failure (> 0) */
    double backoff;    /* seconds before the first retry */
    double max;        /* the most seconds between two runs */
    uint32_t name_len; /* bytes in name */
    char name[];       /* the function name, NUL-terminated */
};

struct jobx_rec;

/* struct jobx_pre is a job that others wait for: the list of their edges (jobx.deps, by its
 * handle number; one entry per prerequisite, so a key never repeats in the index). Created with
 * its first waiter and freed with its last edge. */
struct jobx_pre {
    uint64_t id;              /* the prerequisite's handle number */
    struct list_node waiters; /* jobx_edge.node of every job waiting for it, oldest first */
    uint32_t n;               /* edges in waiters (bounded by --max-dependents at submit) */
};

/* struct jobx_edge is one dependency: the job of r waits for the job of pre. */
struct jobx_edge {
    struct list_node node;   /* pre->waiters */
    struct jobx_pre *pre;    /* the prerequisite; NULL once it completed */
    struct jobx_rec *r;      /* the waiting job's record */
};

/* enum jobx_err says where a record's failure text is. */
enum jobx_err {
    JOBX_ERR_NONE = 0,       /* no failure */
    JOBX_ERR_STATIC,         /* error.text is one of the common texts (not owned) */
    JOBX_ERR_OWNED,          /* error.text is malloc'd, error_len bytes (WORK_EXCEPTION data) */
    JOBX_ERR_DEP,            /* "dependency H failed", H the handle of job number error.dep */
};

/* struct jobx_rec is the side state of one job (JOB_EXT), indexed by handle number. It is kept
 * small (a waiting or dead-letter job costs at most twice a queued one, docs/LIMITS.md): the
 * failure text is allocated to its size, or not at all for the common ones, and the edge of a
 * job waiting for one job lives inside the record. */
struct jobx_rec {
    struct job *job;         /* the job */
    uint32_t attempts;       /* runs that failed */
    uint16_t nafter;         /* JOB_WAITING: edges whose prerequisite has not completed */
    uint16_t nedges;         /* entries in edges (0 when not waiting) */
    double first_failed;     /* engine_now at the first failure */
    double last_failed;      /* engine_now at the last failure */
    struct list_node fnode;  /* jobx.failed while the job is JOB_FAILED, oldest first */
    struct jobx_edge *edges; /* JOB_WAITING: what it waits for (&one when nedges is 1, else
                                malloc'd); entries whose pre is NULL have completed */
    union {
        const char *text;    /* JOBX_ERR_STATIC, JOBX_ERR_OWNED: error_len bytes */
        uint64_t dep;        /* JOBX_ERR_DEP: the handle number of the dependency that failed */
    } error;                 /* the last failure: WORK_EXCEPTION data (cut to JOBX_ERROR_MAX),
                                "WORK_FAIL", "CAN_DO_TIMEOUT", a failed dependency */
    uint16_t error_len;      /* bytes of error.text */
    uint8_t error_kind;      /* enum jobx_err */
    struct jobx_edge one;    /* the edge of a job that waits for one job */
};

/* struct jobx is the extension state of one engine (engine.ext.jobx, opaque to the core),
 * created on first use or when attached. */
struct jobx {
    struct hmap policies;    /* struct jobx_policy by name */
    struct hmap recs;        /* struct jobx_rec by job handle number */
    struct list_node failed; /* the dead-letter list (jobx_rec.fnode), oldest first */
    size_t nfailed;          /* jobs in it (a gauge) */
    struct hmap deps;        /* struct jobx_pre by the prerequisite's handle number: who waits */
    size_t nedges;           /* edges in deps (a gauge) */
    size_t nwaiting;         /* JOB_WAITING jobs (a gauge) */
    uint64_t rng;            /* xorshift state for the jitter */
    /* persist: j's side state changed (a failure deferred it to due, or dead-lettered it with
     * due 0, or a retry reset it): jobx_store rewrites its stored row. NULL without it. */
    void (*persist)(struct engine *e, struct job *j, double due);
    /* (the counters are engine_stats.retries and .failed_dropped, reset by 'stats reset') */
};

/* jobx_of returns e's extension state (e->ext.jobx), or NULL when none was made yet. */
struct jobx *jobx_of(const struct engine *e);

/* jobx_get returns e's extension state, creating it (and the policies of --retry) on first
 * use and installing its engine_ext hooks (job_failed, job_completed, job_left, job_gone,
 * job_freed, a check and a destroy slot); NULL when out of memory. */
struct jobx *jobx_get(struct engine *e);

/* jobx_attach sets up e's extension state with the policies of --retry (features_attach, after
 * engine_init). Returns 0, or -1 out of memory. */
int jobx_attach(struct engine *e);

/* jobx_destroy frees e's extension state and removes its hooks (engine_ext.destroy: called by
 * engine_destroy after the jobs are freed). */
void jobx_destroy(struct engine *e);

/* jobx_policy_find returns the policy of the function named name[0..len), or NULL. */
const struct jobx_policy *jobx_policy_find(const struct engine *e, const char *name, size_t len);

/* jobx_policy_set sets (count > 0) or removes (count 0) the policy of function name[0..len).
 * Returns 0, -1 out of memory, -2 when JOBX_MAX_POLICIES exist already. The caller checks the
 * bounds of the numbers. */
int jobx_policy_set(struct engine *e, const char *name, size_t len, uint32_t count,
                    double backoff, double max);

/* jobx_delay is the wait before run attempt+1 after `attempt` failures (attempt >= 1):
 * d = min(max, backoff * 2^(attempt-1)), then "equal jitter": d/2 + a uniform draw in
 * [0, d/2] (u01 in [0,1]). */
double jobx_delay(const struct jobx_policy *p, uint32_t attempt, double u01);

/* jobx_job_failed (the engine_ext.job_failed hook) is called when running job j failed
 * (WORK_FAIL, WORK_EXCEPTION with its text, a CAN_DO_TIMEOUT) before it is freed. When j is a
 * background job no client waits on and its function has a retry policy, jobx takes it: it is
 * deferred to its next run (JOB_FUTURE), or, its retries used up, moved to the dead-letter list
 * (JOB_FAILED); returns 1. Otherwise returns 0 and the caller frees j as Gearman does. */
int jobx_job_failed(struct engine *e, struct job *j, const char *err, size_t len);

/* jobx_bury moves j (in any place but the dead-letter list) to the dead-letter list for good
 * with the failure text err[0..len) ("expired": lifetime.h), whatever its function's retry
 * policy: stored with it, and what waits for j fails too. Returns 0, or -1 out of memory (j is
 * then untouched). */
int jobx_bury(struct engine *e, struct job *j, const char *err, size_t len);

/* jobx_rec_get returns j's record, creating it (flagging j JOB_EXT); NULL out of memory. */
struct jobx_rec *jobx_rec_get(struct engine *e, struct job *j);

/* jobx_park puts j (in limbo, with a record) in the dead-letter list (a restored job). */
void jobx_park(struct engine *e, struct job *j);

/* jobx_unpark takes dead-letter job j off the list, into JOB_LIMBO (job_detach). */
void jobx_unpark(struct engine *e, struct job *j);

/* jobx_job_left (the engine_ext.job_left hook) takes j out of the place of state: the
 * dead-letter list (JOB_FAILED, jobx_unpark) or the waiting place (JOB_WAITING, jobx_unwait). */
void jobx_job_left(struct engine *e, struct job *j, int state);

/* jobx_job_freed (engine_ext.job_freed) forgets j's side state (job_free, for jobs with
 * JOB_EXT). */
void jobx_job_freed(struct engine *e, struct job *j);

/* jobx_rec_of returns j's side state, or NULL. */
struct jobx_rec *jobx_rec_of(const struct engine *e, const struct job *j);

/* jobx_retry_job puts dead-letter job j back in its queue with its attempts reset. */
void jobx_retry_job(struct engine *e, struct job *j);

/* jobx_retry_all retries every dead-letter job of function f; returns how many. */
size_t jobx_retry_all(struct engine *e, const struct func *f);

/* jobx_purge frees every dead-letter job (of f, or all when f is NULL); returns how many. */
size_t jobx_purge(struct engine *e, const struct func *f);

/* jobx_set_error sets r's failure text to err[0..len), cut to JOBX_ERROR_MAX: a common text
 * ("WORK_FAIL", "CAN_DO_TIMEOUT", "dependency H failed" with a handle of e's) is not copied,
 * another is allocated to its size (out of memory: no text). jobx_set_dep_error sets it to
 * "dependency H failed" for job number dep; jobx_clear_error forgets it. */
void jobx_set_error(const struct engine *e, struct jobx_rec *r, const char *err, size_t len);
void jobx_set_dep_error(struct jobx_rec *r, uint64_t dep);
void jobx_clear_error(struct jobx_rec *r);

/* jobx_error returns r's failure text and its length in *len: borrowed from r (valid until it
 * changes), or written into buf (JOBX_ERROR_BUF bytes) when it is made on demand. */
const char *jobx_error(const struct engine *e, const struct jobx_rec *r, char *buf, size_t *len);

/* jobx_may_wait says whether a new job may wait for the jobs numbered after[0..n): NULL, or the
 * refusal as an admin error ("WAITING_FULL ..." past --max-waiting-jobs, "TOO_MANY_DEPENDENTS
 * ..." when one of them has --max-dependents jobs waiting already). O(n). */
const char *jobx_may_wait(const struct engine *e, const uint64_t *after, size_t n);

/* jobx_ndependents returns how many jobs wait for job number id. O(1). */
size_t jobx_ndependents(const struct engine *e, uint64_t id);

/* jobx_wait makes j (in limbo, background, a record's worth of memory aside) wait for the live
 * jobs numbered after[0..n) (1..JOBX_MAX_AFTER of them, none in the dead-letter list; repeats
 * count once): JOB_WAITING, held until every one of them completes. O(n). The caps are the
 * caller's (jobx_may_wait): a restored job waits whatever they are. Returns 0, or -1 out of
 * memory (j is left in limbo, without side state). */
int jobx_wait(struct engine *e, struct job *j, const uint64_t *after, size_t n);

/* jobx_job_done (engine_ext.job_completed): j completed (WORK_COMPLETE), before it is freed.
 * The jobs that waited for it alone become runnable, in the order they were submitted. O(1)
 * when nothing waits for j, else O(jobs waiting for it). */
void jobx_job_done(struct engine *e, struct job *j);

/* jobx_job_gone (engine_ext.job_gone): j leaves without completing (job_free; also a job moved
 * to the dead-letter list). Every job waiting for it fails into the dead-letter list
 * ("dependency H failed"), and so on down the chain: O(1) when nothing waits for j, else
 * O(jobs that fail). */
void jobx_job_gone(struct engine *e, struct job *j);

/* jobx_unwait takes waiting job j out of the waiting place into JOB_LIMBO (job_detach),
 * forgetting what it waited for. */
void jobx_unwait(struct engine *e, struct job *j);

/* jobx_nfailed (a gauge) / jobx_retries / jobx_dropped (engine_stats counters): for stats and
 * metrics. */
size_t jobx_nfailed(const struct engine *e);
size_t jobx_nwaiting(const struct engine *e);
uint64_t jobx_retries(const struct engine *e);
uint64_t jobx_dropped(const struct engine *e);

/* jobx_check (an engine_ext.check slot) verifies the side state against the jobs: every
 * JOB_EXT job has a record and every record a live JOB_EXT job, every JOB_FAILED job is on the
 * dead-letter list and only those, nfailed and each function's parked count agree. Returns 0 or
 * -1 with err. O(jobs). */
int jobx_check(const struct engine *e, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif

/* SPDX-License-Identifier: BSD-3-Clause */
/* job: jobs, their indexes (by handle number and by function+unique), handles, and the clients
 * waiting on them. Pure: what clients must be told goes through the engine's sink (engine.h);
 * a client is an opaque struct peer pointer, never dereferenced here. */
#ifndef SPUR_JOB_H
#define SPUR_JOB_H

#include <stddef.h>
#include <stdint.h>

#include "blob.h"
#include "heap.h"
#include "hmap.h"
#include "list.h"
#include "log.h"

#ifdef __cplusplus
extern "C" {
#endif

struct engine;
struct func;
struct peer;
struct worker;

/* Priorities, in the order workers are served. */
enum job_prio { PRIO_HIGH = 0, PRIO_NORMAL = 1, PRIO_LOW = 2, PRIO_COUNT = 3 };

/* Where a job is. */
enum job_state {
    JOB_READY = 0, /* in its function's ready queue */
    JOB_FUTURE,    /* waiting in the timer heap for its epoch / schedule time */
    JOB_RUNNING,   /* assigned to a worker */
    JOB_LIMBO,     /* in no queue, heap or worker list: just created, or being moved */
    JOB_PENDING,   /* background job waiting for its store batch to be durable */
    JOB_FAILED,    /* in the dead-letter list (jobx.h): retries used up, in no queue */
    JOB_WAITING,   /* waiting for the jobs it depends on (jobx.h), in no queue */
};

/* Job flags. */
enum {
    JOB_BACKGROUND = 1u << 0, /* submitted in the background (kept without clients) */
    JOB_STORED = 1u << 1,     /* added to the durable store; done must be called */
    JOB_EXT = 1u << 2,        /* has side state of a feature of engine.ext (job_freed is called) */
    JOB_UHEAD = 1u << 3,      /* the oldest live job with its unique (engine->jobs_by_unique) */
    JOB_LIFE = 1u << 4,       /* has a per-job timeout or time to live (engine.ext.life_*) */
    JOB_RING = 1u << 6,       /* shares its unique with a live job of another function: has a
                                 node in engine->unique_rings (job.c) */
    JOB_STATUS = 1u << 7,     /* has a WORK_STATUS entry in engine->job_status (job_set_status) */
};

/* struct waiter links one foreground submit to its job (a client may have several). */
struct waiter {
    struct job *job;      /* the job waited on */
    struct peer *client;  /* the client connection (opaque: handed to the sink) */
    struct list_node jnode; /* the ring of the job's waiters, newest (job.waiters) first */
    struct list_node pnode; /* the client's list of waiters (job_add_waiter), newest first */
    uint64_t status_slot; /* the client's unsent WORK_STATUS of this job (outq_put_slot), or 0 */
};

/* struct job_run is what a running job (JOB_RUNNING) holds beyond a queued one, in a small block
 * of its own (slab) from job_start to job_detach, so that a queued job carries no worker. */
struct job_run {
    struct worker *worker;    /* the worker running it */
    double started;           /* engine_now when it was assigned: its run time */
};

/* struct job is one unit of work. It is allocated together with its data: the struct, then a
 * blob header, then unique, reducer and payload. The blob is reference-counted so an output
 * queue can keep sending the payload after the job is gone; the last reference frees it all. */
struct job {
    struct list_node qnode;   /* its function's ready queue (JOB_READY) or its worker's
                                 running list (JOB_RUNNING); unlinked elsewhere */
    uint64_t id;              /* the number in the handle */
    struct func *func;        /* the function */
    struct waiter *waiters;   /* foreground clients attached: the newest, first of the ring
                                 waiter.jnode; NULL when none (job_for_each_waiter) */
    union {
        double since;         /* not JOB_RUNNING: engine_now when it last became ready
                                 (JOB_READY: its queue wait) or, after a run, was assigned */
        struct job_run *run;  /* JOB_RUNNING: its worker and start (job_worker, job_since) */
    };
    uint32_t timer;           /* heap position: due time (JOB_FUTURE), CAN_DO_TIMEOUT or job
                                 timeout deadline (JOB_RUNNING), time to live (JOB_READY with
                                 JOB_LIFE) */
    uint16_t unique_len;      /* bytes of unique at the start of the data */
    uint16_t reducer_len;     /* bytes of reducer after the unique */
    uint8_t prio;             /* enum job_prio */
    uint8_t state;            /* enum job_state */
    uint8_t flags;            /* JOB_* */
    uint8_t retries;          /* times re-queued after losing its worker */
};

#ifndef __cplusplus
_Static_assert(sizeof(struct job) % 8 == 0 && sizeof(struct job) <= BLOB_BASE_MAX,
               "a job's blob header follows it (blob_embed)");
#endif

/* job_worker returns the worker running j (JOB_RUNNING), or NULL. */
static inline struct worker *job_worker(const struct job *j)
{
    return j->state == JOB_RUNNING ? j->run->worker : NULL;
}

/* job_since returns when j last became ready (JOB_READY) or was assigned (JOB_RUNNING, and
 * after a run until it is ready again): engine_now then. */
static inline double job_since(const struct job *j)
{
    return j->state == JOB_RUNNING ? j->run->started : j->since;
}

/* job_blob returns the blob that holds the job's unique, reducer and payload. */
static inline struct blob *job_blob(const struct job *j)
{
    return (struct blob *)((char *)(uintptr_t)j + sizeof(struct job));
}

/* job_from_timer returns the job whose heap position field is pos. */
static inline struct job *job_from_timer(uint32_t *pos)
{
    return (struct job *)((char *)pos - offsetof(struct job, timer));
}

/* job_size is the memory j holds: the struct, its blob header and its data (engine.job_bytes). */
static inline size_t job_size(const struct job *j)
{
    return sizeof *j + sizeof(struct blob) + job_blob(j)->len;
}

/* job_unique / job_reducer / job_payload return borrowed pointers into the job's data. */
static inline const char *job_unique(const struct job *j) { return job_blob(j)->data; }
static inline const char *job_reducer(const struct job *j)
{
    return job_blob(j)->data + j->unique_len;
}
static inline const char *job_payload(const struct job *j)
{
    return job_blob(j)->data + j->unique_len + j->reducer_len;
}
static inline size_t job_payload_off(const struct job *j)
{
    return (size_t)j->unique_len + j->reducer_len;
}
static inline size_t job_payload_len(const struct job *j)
{
    return job_blob(j)->len - job_payload_off(j);
}


/* job_handle writes the job's handle (prefix:id) into out (at least 72 bytes); returns its length. */
size_t job_handle(const struct engine *e, const struct job *j, char *out);

/* job_find_handle returns the live job whose handle is h[0..len), or NULL. */
struct job *job_find_handle(struct engine *e, const char *h, size_t len);

/* job_handle_parse reads the job number of handle h[0..len) (this server's prefix, ':', a
 * decimal without leading zeros) into *id, whether or not the job lives: 0, or -1 when h is
 * no handle of this server. */
int job_handle_parse(const struct engine *e, const char *h, size_t len, uint64_t *id);

/* job_find_id returns the live job with handle number id, or NULL. */
struct job *job_find_id(const struct engine *e, uint64_t id);

#define JOB_HANDLE_BUF 80 /* room for any handle: a 47-byte prefix, ':', 20 digits, NUL */

/* job_handle_id writes the handle of job number id, NUL-terminated, into out (JOB_HANDLE_BUF
 * bytes); returns its length. */
size_t job_handle_id(const struct engine *e, uint64_t id, char *out);

/* job_find_unique returns the live job of f with this unique (for the unique "-", the one whose
 * payload equals data), or NULL. An empty unique never matches. */
struct job *job_find_unique(const struct engine *e, const struct func *f, const char *u,
                            size_t ulen, const char *data, size_t dlen);

/* job_find_unique_any returns the oldest live job of any function with this unique, or NULL
 * (always for "" and "-"). O(1) expected, however many functions share the unique. */
struct job *job_find_unique_any(const struct engine *e, const char *u, size_t ulen);

/* job_check_ids verifies the table of jobs by handle number (engine.jobs): its structure
 * (idtab_check) and that each job is stored under its own id. Returns 0 or -1 with err. O(jobs). */
int job_check_ids(const struct engine *e, char *err, size_t errlen);

/* job_check_uniques verifies the index of uniques against the jobs: every job with a unique entry
 * is found by its function and unique, each distinct unique has one JOB_UHEAD job (found by it)
 * whose ring holds exactly the live jobs with that unique. Returns 0 or -1 with err. O(jobs). */
int job_check_uniques(const struct engine *e, char *err, size_t errlen);

/* job_new creates a job of f (not yet queued) with the next handle number, copying unique,
 * reducer and payload into one blob. Returns NULL when out of memory. */
struct job *job_new(struct engine *e, struct func *f, enum job_prio prio, int background,
                    const char *u, size_t ulen, const char *reducer, size_t rlen,
                    const char *data, size_t dlen);

/* job_new_id is job_new with a given handle number (a job restored from the store); id 0 takes
 * the next number. NULL too when a live job has that number. */
struct job *job_new_id(struct engine *e, struct func *f, enum job_prio prio, int background,
                       const char *u, size_t ulen, const char *reducer, size_t rlen,
                       const char *data, size_t dlen, uint64_t id);

/* job_of_qnode returns the job whose queue link is n. */
static inline struct job *job_of_qnode(const struct list_node *n)
{
    return container_of(n, struct job, qnode);
}

/* job_add_waiter attaches client to j (a foreground submit); the waiter is also linked at the
 * head of list, the client's own list of waiters (waiter.pnode), which must outlive it. Returns
 * 0 or -1 (no memory). */
int job_add_waiter(struct job *j, struct peer *client, struct list_node *list);

/* job_remove_waiter detaches and frees w. */
void job_remove_waiter(struct waiter *w);

/* waiter_of returns the waiter whose job link is n. */
static inline struct waiter *waiter_of(const struct list_node *n)
{
    return container_of(n, struct waiter, jnode);
}

/* waiter_of_pnode returns the waiter whose client link is n. */
static inline struct waiter *waiter_of_pnode(const struct list_node *n)
{
    return container_of(n, struct waiter, pnode);
}

/* job_has_waiters reports whether any foreground client waits on j; job_many_waiters whether
 * two or more do. O(1). */
static inline int job_has_waiters(const struct job *j) { return j->waiters != NULL; }
static inline int job_many_waiters(const struct job *j)
{
    return j->waiters != NULL && j->waiters->jnode.next != &j->waiters->jnode;
}

/* job_next_waiter returns the waiter after w in j's ring, or NULL after the oldest. */
static inline struct waiter *job_next_waiter(const struct job *j, const struct waiter *w)
{
    return w->jnode.next == &j->waiters->jnode ? NULL : waiter_of(w->jnode.next);
}

/* job_for_each_waiter walks j's waiters (struct waiter *w), newest first. The body must not
 * remove one. */
#define job_for_each_waiter(w, j) \
    for (struct waiter *w = (j)->waiters; w != NULL; w = job_next_waiter((j), w))

/* job_nwaiters counts the foreground clients attached to j. */
uint32_t job_nwaiters(const struct job *j);

/* job_set_status records a worker's WORK_STATUS numerator and denominator for j (a side table:
 * few jobs ever get one); 0/0 forgets it. Returns 0, or -1 when out of memory (then j reads 0/0). */
int job_set_status(struct engine *e, struct job *j, uint32_t num, uint32_t den);

/* job_status reads j's last WORK_STATUS into num and den (0 and 0 without one). O(1) expected. */
void job_status(const struct engine *e, const struct job *j, uint32_t *num, uint32_t *den);

/* job_detach takes j out of its ready queue, the timer heap or its worker's running list, into
 * JOB_LIMBO, keeping the function's counters right. */
void job_detach(struct engine *e, struct job *j);

/* job_defer puts a job in limbo into the timer heap until at (JOB_FUTURE). Returns 0 or -1. */
int job_defer(struct engine *e, struct job *j, double at);

/* job_start assigns a job in limbo to worker w (JOB_RUNNING), arming its CAN_DO_TIMEOUT deadline
 * when timeout_ms > 0, or the job's own timeout when it is smaller (JOB_LIFE: life_started).
 * Returns 0, or -1 when out of memory for its job_run (j is then still in limbo). */
int job_start(struct engine *e, struct job *j, struct worker *w, uint32_t timeout_ms);

/* job_fail tells j's clients it failed (sink.job_failed) and frees j. */
void job_fail(struct engine *e, struct job *j);

/* job_cancel is the admin `cancel job` (and a client's CANCEL_JOB): j's clients are told it
 * failed; a queued job is freed; a running one (counted in stats.cancelled_running) is freed too
 * when its worker was told (sink.job_stopped), else left to its worker, whose results then go
 * nowhere: it loses its clients, is no longer durable (sink.stored_gone) and is never retried. */
void job_cancel(struct engine *e, struct job *j);

/* job_client_gone detaches a client going away from every job it waits on (list, its list of
 * waiters, ends empty): a foreground job nobody waits for any more is freed unless running. */
void job_client_gone(struct engine *e, struct list_node *list);

/* JOB_LOG_BURST is how many lines about jobs' lives are written a second at DEBUG; the rest
 * are counted and reported as suppressed. */
#define JOB_LOG_BURST 1000

/* job_log_debug writes "job HANDLE (FUNCTION): what" at DEBUG, at most JOB_LOG_BURST lines a
 * second. Call it through job_log, which costs one comparison when DEBUG is off. */
void job_log_debug(const struct engine *e, const struct job *j, const char *what);
#define job_log(e, j, what) \
    do { if (log_enabled(LOG_DEBUG)) job_log_debug((e), (j), (what)); } while (0)

/* job_free removes j from every index, queue, heap and list, tells the store it is done if it was
 * stored (sink.stored_gone), detaches its waiters (sending nothing) and frees it. */
void job_free(struct engine *e, struct job *j);

#ifdef __cplusplus
}
#endif
#endif

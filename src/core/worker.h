/* SPDX-License-Identifier: BSD-3-Clause */
/* worker: the worker side of the core. Abilities (which worker can do which function), each
 * worker's round-robin ready rings, the idle lists a wake-up picks from, held GRABs, and the
 * scheduling decisions: which job a GRAB gets, what happens to a worker's jobs when it lets go
 * of them (requeue, --job-retries), CAN_DO_TIMEOUT, and a worker or client going away. Pure:
 * what a worker or client must be told goes through the engine's sink (engine.h); the client of
 * a worker is an opaque struct peer pointer the core never dereferences. */
#ifndef SPUR_WORKER_H
#define SPUR_WORKER_H

#include <stddef.h>
#include <stdint.h>

#include "func.h"
#include "hmap.h"
#include "job.h"
#include "list.h"

#ifdef __cplusplus
extern "C" {
#endif

struct engine;
struct peer;

/* struct ability is one function one worker can do. */
struct ability {
    struct func *func;                  /* the function */
    struct worker *worker;              /* the worker */
    struct list_node fnode;             /* func->workers: the function's workers, oldest first */
    struct list_node wnode;             /* worker->abilities, in CAN_DO order */
    struct list_node inode[2];          /* in func->idle[k], or else in worker->parked[k] */
    struct list_node rnode[PRIO_COUNT]; /* worker->ready[p] (linked iff func->ready[p] > 0) */
    uint32_t timeout_ms;                /* CAN_DO_TIMEOUT, 0 = none */
};

/* WORKER_LATE_JOBS is how many jobs a worker passed the CAN_DO_TIMEOUT of are remembered for it
 * (--can-do-timeout=requeue): its late result still finishes the last ones (worker_reclaim). */
#define WORKER_LATE_JOBS 8

/* struct worker is the worker side of a connection, created on its first worker packet. */
struct worker {
    struct peer *peer;                  /* the connection: opaque to the core, handed to the
                                           sink (never dereferenced here) */
    struct list_node abilities;         /* registered functions (ability.wnode), CAN_DO order */
    uint32_t nabilities;                /* count */
    struct list_node ready[PRIO_COUNT]; /* per priority, the abilities whose function has ready
                                           jobs (ability.rnode), in round-robin order: the first
                                           is served next, then goes to the back */
    struct list_node parked[2];         /* abilities not in their function's idle list k */
    struct list_node running;           /* jobs assigned to it (job.qnode), newest first */
    uint32_t nrunning;                  /* count */
    struct func *woken_for;             /* the function whose job it was woken for, or NULL */
    struct list_node hnode;             /* engine->held while its GRAB waits for a job (oldest
                                           first, so deadlines are in order) */
    double held_until;                  /* when a held GRAB gets NO_JOB */
    uint32_t held;                      /* the GRAB held unanswered (the caller's code for its
                                           kind, handed back to sink.assign), 0 if none */
    uint8_t sleeping;                   /* sent PRE_SLEEP and found no work */
    uint8_t noop_sent;                  /* woken with a NOOP since it slept */
    uint8_t late_next;                  /* the slot of late[] written next (the oldest) */
    struct list_node inbox;             /* broadcast copies waiting for its next GRAB (kept by
                                           ext/broadcast.c through engine_ext.inbox_take and
                                           worker_letgo), oldest first; empty for most workers */
    uint32_t ninbox;                    /* entries in inbox */
    uint64_t late[WORKER_LATE_JOBS];    /* ids of the last jobs re-queued because it passed their
                                           CAN_DO_TIMEOUT (--can-do-timeout=requeue), 0 = none;
                                           a freed job's id is never reused */
};

/* ability_of_wnode / worker_of_held turn list nodes back into their objects. */
static inline struct ability *ability_of_wnode(const struct list_node *n)
{
    return container_of(n, struct ability, wnode);
}
static inline struct worker *worker_of_held(const struct list_node *n)
{
    return container_of(n, struct worker, hnode);
}

/* enum worker_grab is what worker_grab decided. */
enum worker_grab {
    WORKER_ASSIGNED, /* *job is now running on the worker: send it */
    WORKER_HELD,     /* the GRAB is held until a job comes or --grab-wait passes: send nothing */
    WORKER_NO_JOB,   /* nothing to do: send NO_JOB */
};


/* worker_new creates the worker state of client (an opaque pointer the sink gets back). NULL
 * when out of memory. The caller keeps it (e.g. in the connection) and ends it with
 * worker_gone. */
struct worker *worker_new(struct engine *e, struct peer *client);

/* worker_find returns w's ability for f, or NULL. O(1). */
struct ability *worker_find(const struct engine *e, const struct worker *w, const struct func *f);

/* worker_add registers f for w (updating the timeout if already there). Returns the ability or
 * NULL when out of memory. */
struct ability *worker_add(struct engine *e, struct worker *w, struct func *f, uint32_t timeout_ms);

/* worker_remove unregisters a from its worker. O(1). f may be released: see func_release. */
void worker_remove(struct engine *e, struct ability *a);

/* worker_reset unregisters every function of w. */
void worker_reset(struct engine *e, struct worker *w);

/* worker_cant_do unregisters f for w (CANT_DO) and re-queues w's running jobs of f. */
void worker_cant_do(struct engine *e, struct worker *w, struct func *f);

/* worker_reset_abilities unregisters every function of w and re-queues its running jobs
 * (RESET_ABILITIES). */
void worker_reset_abilities(struct engine *e, struct worker *w);

/* worker_gone ends w (its connection went away): abilities dropped, running jobs re-queued,
 * a held GRAB forgotten (nothing is sent), w freed. */
void worker_gone(struct engine *e, struct worker *w);

/* worker_take returns the job worker w should run next and removes it from its queue: highest
 * priority across all w's functions, FIFO within one function, round-robin across functions of
 * the same priority; a broadcast copy waiting in w's inbox (engine_ext.inbox_take) comes before
 * them all. *via gets the ability it was taken through. NULL if none is ready. O(1). */
struct job *worker_take(struct engine *e, struct worker *w, struct ability **via);

/* worker_has_work reports whether any of w's functions has a ready job, or a broadcast copy
 * waits for it. */
int worker_has_work(const struct worker *w);

/* worker_reclaim is for a WORK_* packet from w about j, which is not running on w: if j was
 * re-queued because w passed its CAN_DO_TIMEOUT (--can-do-timeout=requeue, one of the last
 * WORKER_LATE_JOBS such jobs of w) and is still queued or running on another worker, w takes it
 * back (it runs on w again, the other worker no longer holds it) and 1 is returned: the late
 * result counts, as long as no other worker has finished the job. Otherwise 0. O(1). */
int worker_reclaim(struct engine *e, struct worker *w, struct job *j);

/* worker_grab decides a GRAB of kind `grab` (a nonzero code the caller chooses, handed back to
 * sink.assign if the GRAB is held): assign the next job (started, *job set), hold the GRAB
 * (--grab-wait), or answer NO_JOB. During shutdown or replay no job is handed out. */
enum worker_grab worker_grab(struct engine *e, struct worker *w, uint32_t grab, struct job **job);

/* worker_sleep handles PRE_SLEEP: returns 1 if w has ready work (it must be told at once, with
 * a NOOP), else marks it asleep, a candidate for a wake-up, and returns 0. */
int worker_sleep(struct engine *e, struct worker *w);

/* worker_grab_release answers w's held GRAB with NO_JOB through the sink (the deadline passed,
 * the worker sent something else, or the server shuts down). */
void worker_grab_release(struct engine *e, struct worker *w);

/* worker_grab_held answers w's held GRAB with the job that became ready for it (or NO_JOB if
 * none is ready after all), through the sink. */
void worker_grab_held(struct engine *e, struct worker *w);

/* worker_awake records that w is no longer sleeping (it grabs, sleeps again or leaves): a NOOP
 * it was sent no longer counts for its function, which may wake another sleeper. */
void worker_awake(struct engine *e, struct worker *w);

/* worker_idle makes w a wake-up candidate (FUNC_HELD or FUNC_SLEEPING) in every function it
 * can do. Amortized O(1): only abilities dropped from an idle list since are linked again. */
void worker_idle(struct engine *e, struct worker *w, int k);

/* worker_hold keeps w's GRAB (kind grab) unanswered until now + --grab-wait: a job that
 * becomes ready for w meanwhile is assigned at once, saving the NO_JOB, PRE_SLEEP, NOOP and
 * second GRAB. w must have no ready work. */
void worker_hold(struct engine *e, struct worker *w, uint32_t grab, double now);

/* worker_unhold takes w off the engine's held list (it answers the GRAB itself). */
void worker_unhold(struct engine *e, struct worker *w);

/* worker_wake_one finds f a worker for a ready job: a worker whose GRAB is held gets the job at
 * once (sink.assign); else the sleeper that has waited longest is woken (sink.wake). Returns 1,
 * or 0 if f has no such worker. O(1) amortized. */
int worker_wake_one(struct engine *e, struct func *f);

/* worker_ready_link / worker_ready_unlink put a into / take it out of its worker's ready ring
 * for priority p (func.c calls them when f's queue p becomes non-empty / empty). */
void worker_ready_link(struct ability *a, int p);
void worker_ready_unlink(struct ability *a, int p);

/* worker_requeue handles a running job whose worker let go of it (disconnect, CANT_DO, RESET,
 * --can-do-timeout=requeue): back to the front of its queue, or failed once --job-retries is
 * exhausted: N >= 1 fails it on the N-th loss, so it is handed out N times (as gearmand); 0 fails
 * it on the first loss; -1 never. A foreground job nobody waits for any more is dropped. */
void worker_requeue(struct engine *e, struct job *j);

/* worker_job_timeout fails a running job whose worker passed its CAN_DO_TIMEOUT, or re-queues it
 * as a lost job under --can-do-timeout=requeue. */
void worker_job_timeout(struct engine *e, struct job *j);

#ifdef __cplusplus
}
#endif
#endif

/* SPDX-License-Identifier: BSD-3-Clause */
/* func: functions (job types), the workers that can do them, per-priority ready queues, and the
 * scheduling decisions: which job a worker gets and which sleeping workers are woken. Pure. */
#ifndef SPUR_FUNC_H
#define SPUR_FUNC_H

#include <stddef.h>
#include <stdint.h>

#include "hmap.h"
#include "job.h"

#ifdef __cplusplus
extern "C" {
#endif

struct engine;
struct peer;
struct worker;

/* struct func is one function name and its queues. */
struct func {
    struct hnode node;               /* engine->funcs, keyed by name */
    struct job *head[PRIO_COUNT];    /* ready queue per priority, oldest first */
    struct job *tail[PRIO_COUNT];    /* last ready job per priority */
    uint32_t ready[PRIO_COUNT];      /* jobs in each ready queue */
    uint32_t queued[PRIO_COUNT];     /* jobs not running (ready + future) per priority */
    uint32_t running;                /* jobs assigned to workers */
    uint32_t max_queue[PRIO_COUNT];  /* maxqueue limits, 0 = unlimited */
    uint32_t nworkers;               /* workers that registered the function */
    uint32_t woken;                  /* sleepers sent a NOOP for this function, not yet grabbing */
    struct ability *workers;         /* circular list of those workers; the wake-up start */
    struct func *next;               /* next function in creation order (engine->func_list) */
    struct func *prev;               /* previous one (NULL for the first) */
    struct ability *idle[2];         /* candidates for a wake-up (FUNC_HELD, FUNC_SLEEPING),
                                        oldest first; stale entries are dropped as met */
    struct ability *idle_tail[2];    /* last of each idle list */
    uint64_t seq;                    /* creation number (engine->func_seq) */
    uint8_t marker;                  /* not a function: a 'status' listing's place in func_list */
    uint32_t check[PRIO_COUNT + 1];  /* scratch for engine_check: future per priority, running */
    uint32_t name_len;               /* bytes in name */
    char name[];                     /* the name, NUL-terminated */
};

/* func_ready counts f's jobs ready to hand out, all priorities. */
static inline uint32_t func_ready(const struct func *f)
{
    return f->ready[PRIO_HIGH] + f->ready[PRIO_NORMAL] + f->ready[PRIO_LOW];
}

/* func_total is what `status` calls TOTAL: jobs queued (ready or future) plus running. */
static inline uint32_t func_total(const struct func *f)
{
    return f->queued[0] + f->queued[1] + f->queued[2] + f->running;
}

/* The two idle lists of a function: workers whose GRAB is held, and sleepers not yet woken. */
enum { FUNC_HELD = 0, FUNC_SLEEPING = 1 };

/* struct ability is one function one worker can do. */
struct ability {
    struct hnode node;                  /* engine->abilities, keyed by (worker, function) */
    struct func *func;                  /* the function */
    struct worker *worker;              /* the worker */
    struct ability *fnext;              /* next in func's circular worker list */
    struct ability *fprev;              /* previous in func's circular worker list */
    struct ability *wnext;              /* next of the worker's abilities, in CAN_DO order */
    struct ability *wprev;              /* previous of the worker's abilities */
    struct ability *inext[2];           /* in func->idle[k] (in_func[k]) or else in the
                                           worker's parked[k] list */
    struct ability *iprev[2];
    uint8_t in_func[2];                 /* 1: linked in func->idle[k], 0: in worker->parked[k] */
    struct ability *rnext[PRIO_COUNT];  /* worker's circular ready list per priority */
    struct ability *rprev[PRIO_COUNT];  /* (linked iff func->ready[p] > 0) */
    uint32_t timeout_ms;                /* CAN_DO_TIMEOUT, 0 = none */
};

/* struct worker is the worker side of a peer, created on its first worker packet. */
struct worker {
    struct peer *peer;                  /* the connection */
    struct ability *abilities;          /* registered functions, CAN_DO order */
    struct ability *abilities_tail;     /* last registered */
    uint32_t nabilities;                /* count */
    struct ability *ready[PRIO_COUNT];  /* round-robin cursor into each ready list */
    struct ability *parked[2];          /* abilities not in their function's idle list k */
    struct job *running;                /* jobs assigned to it (job->next/prev) */
    uint32_t nrunning;                  /* count */
    struct func *woken_for;             /* the function whose job it was woken for, or NULL */
    struct worker *held_next;           /* engine->held: workers whose GRAB waits for a job */
    struct worker *held_prev;           /* (oldest first, so deadlines are in order) */
    double held_until;                  /* when a held GRAB gets NO_JOB */
    uint32_t held;                      /* the GRAB command held unanswered, 0 if none */
    uint8_t sleeping;                   /* sent PRE_SLEEP and found no work */
    uint8_t noop_sent;                  /* woken with a NOOP since it slept */
};

/* func_full reports whether no new function may be created (--max-functions reached). */
int func_full(const struct engine *e);

/* ability_hash is the hash of an ability in engine->abilities. */
uint64_t ability_hash(const struct hnode *n, const void *engine);

/* func_hash is the hash of a function's name in engine->funcs. */
uint64_t func_hash(const struct hnode *n, const void *engine);

/* func_get finds the function named name[0..len), creating it if create. NULL if absent, out
 * of memory, or (creating) --max-functions exist already: see func_full. */
struct func *func_get(struct engine *e, const char *name, size_t len, int create);

/* func_drop removes f, which must have no jobs and no workers, and frees it. O(1). */
void func_drop(struct engine *e, struct func *f);

/* func_unused reports whether f holds nothing worth keeping: no worker, no job in any state, no
 * maxqueue limit and no woken worker on its way. */
int func_unused(const struct func *f);

/* func_release frees f if func_unused (a function is forgotten once its last worker, job or
 * limit goes). The caller must not use f afterwards. */
void func_release(struct engine *e, struct func *f);

/* func_name_ok reports whether name[0..len) can be listed faithfully by `status` and `workers`:
 * no byte below 0x21 (controls, space) and no 0x7f. Also used for client ids. */
int func_name_ok(const char *name, size_t len);

/* func_list_insert links a (marker) node n just before `before` in engine->func_list (at the end
 * if before is NULL); func_list_remove unlinks it. */
void func_list_insert(struct engine *e, struct func *n, struct func *before);
void func_list_remove(struct engine *e, struct func *n);

/* func_free_all frees every function (at engine teardown). */
void func_free_all(struct engine *e);

/* func_push makes a job in limbo ready: appends it to its priority queue (or puts it first if
 * at_head), and wakes sleeping workers. */
void func_push(struct engine *e, struct job *j, int at_head);

/* func_wake sends NOOP to f's sleeping workers, rotating: by default as many as f has ready jobs
 * not yet matched by a woken worker; with --worker-wakeup=N, N per call (0: all), as gearmand. */
void func_wake(struct engine *e, struct func *f);

/* worker_awake records that w is no longer sleeping (it grabs, sleeps again or leaves): a NOOP
 * it was sent no longer counts for its function, which may wake another sleeper. */
void worker_awake(struct engine *e, struct worker *w);

/* func_unlink removes a ready job from its queue into limbo. */
void func_unlink(struct engine *e, struct job *j);

/* func_take returns the job worker w should run next and removes it from its queue: highest
 * priority across all w's functions, FIFO within one function, round-robin across functions of
 * the same priority. *via gets the ability it was taken through. NULL if none is ready. O(1). */
struct job *func_take(struct engine *e, struct worker *w, struct ability **via);

/* func_has_work reports whether any of w's functions has a ready job. */
int func_has_work(const struct worker *w);

/* worker_idle makes w a wake-up candidate (FUNC_HELD or FUNC_SLEEPING) in every function it
 * can do. Amortized O(1): only abilities dropped from an idle list since are linked again. */
void worker_idle(struct engine *e, struct worker *w, int k);

/* worker_hold keeps w's GRAB (command cmd) unanswered until now + --grab-wait: a job that
 * becomes ready for w meanwhile is assigned at once, saving the NO_JOB, PRE_SLEEP, NOOP and
 * second GRAB. w must have no ready work. */
void worker_hold(struct engine *e, struct worker *w, uint32_t cmd, double now);

/* worker_unhold takes w off the engine's held list (it answers the GRAB itself). */
void worker_unhold(struct engine *e, struct worker *w);

/* worker_get returns p's worker state, creating it. NULL when out of memory. */
struct worker *worker_get(struct peer *p);

/* worker_find returns w's ability for f, or NULL. O(1). */
struct ability *worker_find(const struct worker *w, const struct func *f);

/* worker_add registers f for w (updating the timeout if already there). Returns the ability or
 * NULL when out of memory. */
struct ability *worker_add(struct engine *e, struct worker *w, struct func *f, uint32_t timeout_ms);

/* worker_remove unregisters a from its worker. O(1). f may be released: see func_release. */
void worker_remove(struct engine *e, struct ability *a);

/* worker_reset unregisters every function of w (RESET_ABILITIES). */
void worker_reset(struct engine *e, struct worker *w);

/* worker_free unregisters everything and frees w (its running jobs must be handled first). */
void worker_free(struct engine *e, struct worker *w);

#ifdef __cplusplus
}
#endif
#endif

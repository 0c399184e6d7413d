/* SPDX-License-Identifier: BSD-3-Clause */
/* func: functions (job types), their per-priority ready queues and the deferred wake-ups of their
 * workers. The workers themselves, their abilities and the choice of a job are in worker.h. Pure. */
#ifndef SPUR_FUNC_H
#define SPUR_FUNC_H

#include <stddef.h>
#include <stdint.h>

#include "engine.h"
#include "hist.h"
#include "hmap.h"
#include "job.h"
#include "list.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ability;
struct engine;
struct worker;

/* struct func is one function name and its queues. */
struct func {
    struct list_node queue[PRIO_COUNT]; /* ready jobs per priority (job.qnode), oldest first */
    uint32_t ready[PRIO_COUNT];      /* jobs in each ready queue */
    uint32_t queued[PRIO_COUNT];     /* jobs not running (ready + future) per priority */
    uint32_t running;                /* jobs assigned to workers */
    uint32_t parked;                 /* jobs held by jobx.h (dead-letter list, waiting for
                                        their dependencies): neither queued
                                        nor running, but they keep the function */
    uint32_t max_queue[PRIO_COUNT];  /* maxqueue limits, 0 = unlimited */
    uint32_t nworkers;               /* workers that registered the function */
    uint32_t woken;                  /* sleepers sent a NOOP for this function, not yet grabbing */
    struct list_node workers;        /* those workers (ability.fnode), oldest first */
    struct list_node wake;           /* engine->ready: waiting for engine_drain_ready */
    uint32_t wakes;                  /* func_wake calls since the last drain */
    uint32_t missed;                 /* NOOPs of this function unanswered past their grace
                                        since the last drain (worker_expire_wakes) */
    struct list_node anode;          /* engine->func_list, in creation order */
    struct list_node unode;          /* engine->func_idle while unused (func_release), so
                                        it can be evicted past --max-functions */
    struct list_node idle[2];        /* candidates for a wake-up (FUNC_HELD, FUNC_SLEEPING),
                                        oldest first (ability.inode); stale entries are
                                        parked as met */
    uint64_t seq;                    /* creation number (engine->func_seq) */
    void *flow;                      /* flow control's state of the function (ext/flow.h:
                                        limits, pause, weight), NULL without: the one test
                                        the hot paths pay for it */
    uint32_t weight;                 /* jobs a worker takes in a row before the next function
                                        of its ready ring at a priority (`weight`); 0 = 1 */
    uint8_t shut;                    /* priorities (bit p) whose ready jobs flow control holds
                                        back (paused, at a limit): its abilities are then in
                                        no ready ring for p (func_gate); 0 without flow */
    uint8_t marker;                  /* not a function: a 'status' listing's place in func_list */
    uint8_t broadcast;               /* a broadcast function (ext/broadcast.h): a submit fans
                                        out through engine_ext.job_broadcast; keeps f */
    uint32_t check[PRIO_COUNT + 1];  /* scratch for engine_check: future per priority, running */
    uint64_t events[JOB_EVENTS];     /* job events of this function (enum job_event), cumulative
                                        while the function exists (engine.h) */
    struct hist wait;                /* seconds from ready to assigned (hist_seconds) */
    struct hist run;                 /* seconds from assigned to the worker's WORK_COMPLETE,
                                        WORK_FAIL or WORK_EXCEPTION (hist_seconds) */
    uint32_t name_len;               /* bytes in name */
    char name[];                     /* the name, NUL-terminated */
};

/* func_ready counts f's jobs ready to hand out, all priorities. */
static inline uint32_t func_ready(const struct func *f)
{
    return f->ready[PRIO_HIGH] + f->ready[PRIO_NORMAL] + f->ready[PRIO_LOW];
}

#define FUNC_SHUT_ALL ((1u << PRIO_COUNT) - 1) /* func.shut: every priority held back */

/* func_open reports whether f's ready jobs of priority p may be handed out now: some are
 * ready and flow control does not hold p back. f's abilities are in their workers' ready rings
 * for p exactly then. */
static inline int func_open(const struct func *f, int p)
{
    return f->ready[p] > 0 && !(f->shut & (1u << p));
}

/* func_total is what `status` calls TOTAL: jobs queued (ready or future) plus running. */
static inline uint32_t func_total(const struct func *f)
{
    return f->queued[0] + f->queued[1] + f->queued[2] + f->running;
}

/* func_count counts one job event of f at priority prio, in f and in the engine's totals. O(1). */
static inline void func_count(struct engine *e, struct func *f, enum job_event ev, unsigned prio)
{
    e->stats.jobs[ev][prio]++;
    f->events[ev]++;
}

/* func_stats_reset zeroes f's events and histograms ('stats reset'). */
void func_stats_reset(struct func *f);

/* The two idle lists of a function: workers whose GRAB is held, and sleepers not yet woken. */
enum { FUNC_HELD = 0, FUNC_SLEEPING = 1 };

/* func_full reports whether no new function may be created: --max-functions exist and none is
 * unused (after a func_get that failed to create one, the exact reason of its failure). */
int func_full(const struct engine *e);


/* func_get finds the function named name[0..len), creating it if create. Creating past
 * --max-functions evicts the least recently released unused function (engine->func_idle,
 * counted in stats.functions_evicted); NULL if absent, out of memory, none can be evicted
 * (see func_full), or the name is one no function may have (func_name_ok: the check is here,
 * so no entry point can create a function without it). With create, the function found or made is the caller's: it must use it (a
 * job, an ability, a limit) or func_release it, and no other function it holds unused may be
 * passed to a later func_get with create (that could evict it). */
struct func *func_get(struct engine *e, const char *name, size_t len, int create);

/* func_drop removes f, which must have no jobs and no workers, and frees it. O(1). */
void func_drop(struct engine *e, struct func *f);

/* func_unused reports whether f holds nothing worth keeping: no worker, no job in any state, no
 * maxqueue limit, no woken worker on its way and no broadcast setting. */
int func_unused(const struct func *f);

/* func_release is called when f may have become unused (its last worker, job or limit went):
 * an unused function stays known, listed by `status` with 0 0 0 as gearmand does, until `drop
 * function` or its eviction past --max-functions, least recently released first. O(1). */
void func_release(struct engine *e, struct func *f);

/* func_name_ok reports whether name[0..len) may name a function: every byte but NUL, as
 * gearmand (Perl's Gearman::Client puts a TAB after its prefix). The one check of every entry
 * point (binary submits, CAN_DO, admin commands, HTTP, schedules, retry policies, dump load,
 * stored records); the text listings escape what would break a row (esc.h). Also used for
 * client ids. */
int func_name_ok(const char *name, size_t len);

/* func_list_after links a (marker) node n into engine->func_list just after `after` (at the head
 * if NULL); func_list_remove unlinks it; func_list_next returns the function or marker after f,
 * NULL at the end. */
void func_list_after(struct engine *e, struct func *n, struct func *after);
void func_list_remove(struct engine *e, struct func *n);
struct func *func_list_next(const struct engine *e, const struct func *f);

/* func_of_anode returns the function (or marker) whose engine->func_list link is n. */
static inline struct func *func_of_anode(const struct list_node *n)
{
    return container_of(n, struct func, anode);
}

/* func_free_all frees every function (at engine teardown). */
void func_free_all(struct engine *e);

/* func_push makes a job in limbo ready: appends it to its priority queue (or puts it first if
 * at_head), and asks for its workers to be woken (func_wake). */
void func_push(struct engine *e, struct job *j, int at_head);

/* func_wake asks for f's workers to be woken. The wake-up is deferred: f goes on the engine's
 * ready list, and engine_drain_ready does it after the current handler returns (for packets,
 * once the whole read is handled), so a push never answers another worker's held GRAB from
 * inside the handler that pushed. O(1). */
void func_wake(struct engine *e, struct func *f);

/* func_wake_now wakes f's workers through the sink, rotating: a held GRAB gets a ready job at
 * once, a sleeper is sent a wake-up; by default as many as f has ready jobs not yet matched by a
 * woken worker; with --worker-wakeup=N, N per call (0: all), as gearmand. */
void func_wake_now(struct engine *e, struct func *f);

/* func_gate sets the priorities whose ready jobs are held back (f->shut, bit p; flow control
 * calls it when a limit is reached, lifted or changed): the abilities of f enter or leave their
 * workers' ready rings where func_open changes, and f's workers are woken if a priority
 * opened. O(workers of f) when something changes, O(1) otherwise. */
void func_gate(struct engine *e, struct func *f, uint8_t shut);

/* func_unlink removes a ready job from its queue (and its time to live from the timer heap)
 * into limbo. */
void func_unlink(struct engine *e, struct job *j);

#ifdef __cplusplus
}
#endif
#endif

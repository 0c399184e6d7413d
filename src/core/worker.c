/* SPDX-License-Identifier: BSD-3-Clause */
/* worker: abilities, ready rings, idle lists, held GRABs and the scheduling decisions. */
#include "worker.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "func.h"
#include "job.h"
#include "list.h"
#include "log.h"

/* ------------------------------------------------------------ ready rings */

/* worker_ready_link puts a at the back of its worker's ready ring for priority p: it is served
 * last in the current rotation. */
void worker_ready_link(struct ability *a, int p)
{
    list_push_back(&a->worker->ready[p], &a->rnode[p]);
}

/* worker_ready_unlink takes a out of its worker's ready ring for priority p (if it is in it). */
void worker_ready_unlink(struct ability *a, int p)
{
    list_del(&a->rnode[p]);
}

/* ------------------------------------------------------------ idle lists
 * Each ability is in exactly one of two lists per kind k (FUNC_HELD, FUNC_SLEEPING): its
 * function's idle list, where a wake-up looks for a worker, or its worker's parked list. An entry
 * in a function's list is valid while its worker is held (or asleep and not yet woken); a stale
 * one is parked when a wake-up meets it, and linked again when its worker next idles. So a
 * wake-up, a GRAB and a PRE_SLEEP cost O(1) amortized, however many workers or functions. */

static void idle_unlink(struct ability *a, int k)
{
    list_del(&a->inode[k]);
}

/* idle_park puts a (in no list) at the head of its worker's parked list k. */
static void idle_park(struct ability *a, int k)
{
    list_push_front(&a->worker->parked[k], &a->inode[k]);
}

/* idle_append puts a (in no list) at the tail of its function's idle list k. */
static void idle_append(struct ability *a, int k)
{
    list_push_back(&a->func->idle[k], &a->inode[k]);
}

/* idle_valid reports whether w is what idle list k looks for. */
static int idle_valid(const struct engine *e, const struct worker *w, int k)
{
    if (e->sink.closing(e, w->peer))
        return 0;
    return k == FUNC_HELD ? w->held != 0 : (w->sleeping && !w->noop_sent);
}

void worker_idle(struct engine *e, struct worker *w, int k)
{
    (void)e;
    struct list_node *n;
    while ((n = list_first(&w->parked[k])) != NULL) {
        struct ability *a = container_of(n, struct ability, inode[k]);
        idle_unlink(a, k);
        idle_append(a, k);
    }
}

/* idle_first returns the oldest valid entry of f's idle list k, parking the stale ones before
 * it; NULL if none. */
static struct ability *idle_first(const struct engine *e, struct func *f, int k)
{
    struct list_node *n;
    while ((n = list_first(&f->idle[k])) != NULL) {
        struct ability *a = container_of(n, struct ability, inode[k]);
        if (idle_valid(e, a->worker, k))
            return a;
        idle_unlink(a, k);
        idle_park(a, k);
    }
    return NULL;
}

/* wake_one: see worker_wake_one. A held GRAB is answered through the sink (worker_grab_held);
 * a sleeper is sent a wake-up. */
int worker_serve_held(struct engine *e, struct func *f)
{
    struct ability *a;
    if (func_ready(f) == 0 || (a = idle_first(e, f, FUNC_HELD)) == NULL)
        return 0;
    idle_unlink(a, FUNC_HELD);
    idle_park(a, FUNC_HELD);
    worker_grab_held(e, a->worker);
    return 1;
}

int worker_wake_one(struct engine *e, struct func *f)
{
    struct ability *a;
    if (worker_serve_held(e, f))
        return 1;
    if ((a = idle_first(e, f, FUNC_SLEEPING)) == NULL)
        return 0;
    idle_unlink(a, FUNC_SLEEPING);
    idle_park(a, FUNC_SLEEPING);
    struct worker *w = a->worker;
    w->noop_sent = 1;
    w->woken_for = f;
    w->woken_at = engine_now(e);
    list_push_back(&e->woken, &w->wnode);
    f->woken++;
    e->sink.wake(e, w->peer);
    return 1;
}

void worker_expire_wakes(struct engine *e, double now)
{
    struct list_node *n;
    while ((n = list_first(&e->woken)) != NULL) {
        struct worker *w = container_of(n, struct worker, wnode);
        if (w->woken_at + WORKER_WAKE_GRACE > now)
            break;
        list_del(n);
        /* still noop_sent: not woken again until it sleeps again; its job is offered anew */
        struct func *f = w->woken_for;
        w->woken_for = NULL;
        if (f != NULL) {
            f->woken--;
            if (e->cfg->worker_wakeup < 0) { /* --worker-wakeup=N never wakes again for a job */
                f->missed++;
                func_wake(e, f);
            }
            func_release(e, f);
        }
    }
}

void worker_hold(struct engine *e, struct worker *w, uint32_t grab, double now)
{
    w->held = grab;
    w->held_until = now + e->cfg->grab_wait;
    list_push_back(&e->held, &w->hnode);
    worker_idle(e, w, FUNC_HELD);
}

void worker_unhold(struct engine *e, struct worker *w)
{
    if (!w->held)
        return;
    (void)e;
    list_del(&w->hnode);
    w->held = 0;
}

void worker_awake(struct engine *e, struct worker *w)
{
    w->sleeping = 0;
    if (!w->noop_sent)
        return;
    w->noop_sent = 0;
    struct func *f = w->woken_for;
    w->woken_for = NULL;
    list_del(&w->wnode);
    if (f != NULL) {
        f->woken--;
        if (e->cfg->worker_wakeup < 0)
            func_wake(e, f); /* its job may still need a worker */
        func_release(e, f);
    }
}

struct job *worker_take(struct engine *e, struct worker *w, struct ability **via)
{
    if (!list_empty(&w->inbox) && e->ext.inbox_take != NULL) { /* broadcast copies first */
        struct job *c = e->ext.inbox_take(e, w, via);
        if (c != NULL)
            return c;
    }
    for (int p = 0; p < PRIO_COUNT; p++) {
        struct list_node *n = list_first(&w->ready[p]);
        if (n == NULL)
            continue;
        struct ability *a = container_of(n, struct ability, rnode[p]);
        struct func *f = a->func;
        struct job *j = f->flow != NULL && e->ext.flow_first != NULL ? e->ext.flow_first(e, f, p)
                                                                     : NULL;
        if (j == NULL)
            j = job_of_qnode(list_first(&f->queue[p]));
        /* round-robin: the next grab at this priority starts with the next function (after
         * `weight` grabs of this one, if it has a weight) */
        if (f->weight <= 1 || ++a->served >= f->weight) {
            a->served = 0;
            list_rotate(&w->ready[p]);
        }
        func_unlink(e, j);
        *via = a;
        return j;
    }
    return NULL;
}

int worker_has_work(const struct worker *w)
{
    return !list_empty(&w->ready[0]) || !list_empty(&w->ready[1]) || !list_empty(&w->ready[2]) ||
           !list_empty(&w->inbox);
}

/* ------------------------------------------------------------ workers */

struct worker *worker_new(struct engine *e, struct peer *client)
{
    struct worker *w = calloc(1, sizeof *w);
    if (w == NULL)
        return NULL;
    w->peer = client;
    list_node_init(&w->abilities);
    for (int p = 0; p < PRIO_COUNT; p++)
        list_node_init(&w->ready[p]);
    list_node_init(&w->parked[0]);
    list_node_init(&w->parked[1]);
    list_node_init(&w->hnode);
    list_node_init(&w->wnode);
    list_node_init(&w->running);
    list_node_init(&w->inbox);
    e->nworkers++;
    return w;
}

/* ability_key hashes the pair (worker, function). */
static uint64_t ability_key(const struct worker *w, const struct func *f)
{
    return hmap_mix64((uint64_t)(uintptr_t)w ^ hmap_mix64((uint64_t)(uintptr_t)f));
}

struct ability *worker_find(const struct engine *e, const struct worker *w, const struct func *f)
{
    struct hmap_probe pr;
    for (struct ability *a = hmap_first(&e->abilities, ability_key(w, f), &pr); a != NULL;
         a = hmap_next(&pr)) {
        if (a->worker == w && a->func == f)
            return a;
    }
    return NULL;
}

struct ability *worker_add(struct engine *e, struct worker *w, struct func *f, uint32_t timeout_ms)
{
    struct ability *a = worker_find(e, w, f);
    if (a != NULL) {
        a->timeout_ms = timeout_ms;
        return a;
    }
    a = calloc(1, sizeof *a);
    if (a == NULL)
        return NULL;
    a->func = f;
    a->worker = w;
    a->timeout_ms = timeout_ms;
    if (hmap_insert(&e->abilities, a, ability_key(w, f)) != 0) {
        free(a);
        return NULL;
    }
    list_push_back(&w->abilities, &a->wnode);
    w->nabilities++;
    list_push_back(&f->workers, &a->fnode);
    f->nworkers++;
    for (int k = 0; k < 2; k++) {
        list_node_init(&a->inode[k]);
        if (idle_valid(e, w, k))
            idle_append(a, k);
        else
            idle_park(a, k);
    }
    for (int p = 0; p < PRIO_COUNT; p++) {
        list_node_init(&a->rnode[p]);
        if (func_open(f, p)) /* the last CAN_DO is served first, then backwards, as gearmand */
            list_push_front(&w->ready[p], &a->rnode[p]);
    }
    return a;
}

void worker_remove(struct engine *e, struct ability *a)
{
    struct worker *w = a->worker;
    struct func *f = a->func;
    for (int p = 0; p < PRIO_COUNT; p++)
        worker_ready_unlink(a, p);
    for (int k = 0; k < 2; k++)
        idle_unlink(a, k);
    list_del(&a->fnode);
    f->nworkers--;
    hmap_remove(&e->abilities, a, ability_key(w, f));
    list_del(&a->wnode);
    w->nabilities--;
    free(a);
    func_release(e, f);
}

void worker_reset(struct engine *e, struct worker *w)
{
    struct list_node *n;
    while ((n = list_first(&w->abilities)) != NULL)
        worker_remove(e, ability_of_wnode(n));
}

/* requeue_jobs re-queues w's running jobs of function f (every function if f is NULL). */
static void requeue_jobs(struct engine *e, struct worker *w, const struct func *f)
{
    if (e->ext.worker_letgo != NULL)
        e->ext.worker_letgo(e, w, f); /* its broadcast copies of f are lost */
    list_for_each_safe(n, next, &w->running) {
        struct job *j = job_of_qnode(n);
        if (f == NULL || j->func == f)
            worker_requeue(e, j);
    }
}

void worker_cant_do(struct engine *e, struct worker *w, struct func *f)
{
    struct ability *a = worker_find(e, w, f);
    if (a == NULL)
        return;
    worker_remove(e, a);
    requeue_jobs(e, w, f);
}

void worker_reset_abilities(struct engine *e, struct worker *w)
{
    worker_reset(e, w);
    requeue_jobs(e, w, NULL);
}

void worker_gone(struct engine *e, struct worker *w)
{
    worker_reset(e, w);
    requeue_jobs(e, w, NULL);
    worker_unhold(e, w);
    worker_awake(e, w);
    assert(list_empty(&w->inbox));
    e->nworkers--;
    free(w);
}

/* ------------------------------------------------------------ scheduling decisions */

void worker_requeue(struct engine *e, struct job *j)
{
    job_detach(e, j);
    job_set_status(e, j, 0, 0);
    if (!job_has_waiters(j) && !(j->flags & JOB_BACKGROUND)) {
        func_count(e, j->func, JOB_EV_ABANDONED, j->prio);
        job_log(e, j, "abandoned: no client waits");
        job_free(e, j);
        return;
    }
    if (j->retries < UINT8_MAX)
        j->retries++;
    int limit = e->cfg->job_retries;
    if (limit >= 0 && j->retries >= (limit > 0 ? limit : 1)) {
        log_info("job %llu failed: its worker was lost %u times (--job-retries=%d)",
                 (unsigned long long)j->id, j->retries, limit);
        func_count(e, j->func, JOB_EV_LOST, j->prio);
        job_fail(e, j);
        return;
    }
    func_count(e, j->func, JOB_EV_REQUEUED, j->prio);
    job_log(e, j, "requeued");
    func_push(e, j, 1);
}

/* late_find returns the slot of job id in w's late jobs, or -1. */
static int late_find(const struct worker *w, uint64_t id)
{
    for (int i = 0; i < WORKER_LATE_JOBS; i++)
        if (w->late[i] == id)
            return i;
    return -1;
}

/* late_note remembers job id as one w passed the CAN_DO_TIMEOUT of, forgetting the oldest. */
static void late_note(struct worker *w, uint64_t id)
{
    if (late_find(w, id) >= 0)
        return;
    w->late[w->late_next] = id;
    w->late_next = (uint8_t)((w->late_next + 1) % WORKER_LATE_JOBS);
}

/* start starts j (taken through a, or NULL) on w. Returns 0, or -1 when out of memory: j is
 * then back at the head of its queue. */
static int start(struct engine *e, struct worker *w, struct job *j, const struct ability *a)
{
    if (job_start(e, j, w, a != NULL ? a->timeout_ms : 0) == 0)
        return 0;
    log_error("out of memory starting job %llu: it stays queued", (unsigned long long)j->id);
    func_push(e, j, 1);
    return -1;
}

int worker_reclaim(struct engine *e, struct worker *w, struct job *j)
{
    int i = late_find(w, j->id);
    if (i < 0 || (j->state != JOB_READY && j->state != JOB_RUNNING) || job_worker(j) == w)
        return 0;
    w->late[i] = 0;
    log_info("job %llu: its worker's late result is taken (it passed the CAN_DO_TIMEOUT)%s",
             (unsigned long long)j->id,
             j->state == JOB_RUNNING ? ", the worker it was handed to loses it" : "");
    job_detach(e, j); /* out of its queue, or off the other worker */
    return start(e, w, j, worker_find(e, w, j->func)) == 0;
}

void worker_job_timeout(struct engine *e, struct job *j)
{
    func_count(e, j->func, JOB_EV_TIMED_OUT, j->prio);
    if (e->sink.job_stopped != NULL) /* a worker that opted in is told to stop */
        e->sink.job_stopped(e, job_worker(j)->peer, j);
    /* the job's own timeout (JOB_LIFE) when it was the smaller one: the same path, its name */
    int own = (j->flags & JOB_LIFE) && e->ext.life_timed_out != NULL &&
              e->ext.life_timed_out(e, j);
    const char *why = own ? "JOB_TIMEOUT" : "CAN_DO_TIMEOUT";
    /* a background job with a retry policy runs again later or goes to the dead-letter list */
    if (e->ext.job_failed != NULL && e->ext.job_failed(e, j, why, strlen(why))) {
        log_info("job %llu failed: it passed its %s (retry policy)", (unsigned long long)j->id,
                 why);
        return;
    }
    if (e->cfg->can_do_timeout_requeue) {
        log_info("job %llu re-queued: it passed its %s", (unsigned long long)j->id, why);
        late_note(job_worker(j), j->id); /* its result may still come: worker_reclaim */
        worker_requeue(e, j);
        return;
    }
    log_info("job %llu failed: it passed its %s", (unsigned long long)j->id, why);
    job_fail(e, j);
}

enum worker_grab worker_grab(struct engine *e, struct worker *w, uint32_t grab, struct job **job)
{
    struct ability *a;
    struct job *j = (e->shutting_down || e->replaying) ? NULL : worker_take(e, w, &a);
    /* after the take, so a wake-up it triggers is for work that is still left */
    worker_awake(e, w);
    if (j != NULL && start(e, w, j, a) != 0)
        j = NULL;
    *job = j;
    if (j != NULL)
        return WORKER_ASSIGNED;
    if (e->cfg->grab_wait > 0 && w->nabilities > 0 && !e->shutting_down && !e->replaying) {
        worker_hold(e, w, grab, engine_now(e)); /* a job may come before NO_JOB must */
        return WORKER_HELD;
    }
    return WORKER_NO_JOB;
}

int worker_sleep(struct engine *e, struct worker *w)
{
    if (worker_has_work(w) && !e->shutting_down && !e->replaying)
        return 1;
    worker_awake(e, w);
    w->sleeping = 1;
    worker_idle(e, w, FUNC_SLEEPING);
    return 0;
}

void worker_grab_held(struct engine *e, struct worker *w)
{
    uint32_t grab = w->held;
    worker_unhold(e, w);
    struct ability *a;
    struct job *j = worker_take(e, w, &a);
    if (j != NULL && start(e, w, j, a) == 0) {
        e->sink.assign(e, w->peer, grab, j);
    } else {
        e->sink.no_job(e, w->peer);
    }
}

void worker_grab_release(struct engine *e, struct worker *w)
{
    worker_unhold(e, w);
    e->sink.no_job(e, w->peer);
}


/* SPDX-License-Identifier: BSD-3-Clause */
/* func: functions, their ready queues, and the deferred wake-ups of their workers. */
#include "func.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "list.h"
#include "worker.h"

/* ------------------------------------------------------------ functions */

/* func_hash is f's hash in engine->funcs. */
static uint64_t func_hash(const struct engine *e, const struct func *f)
{
    return hmap_hash_bytes(f->name, f->name_len, e->seed);
}

/* at_limit reports whether --max-functions functions exist. */
static int at_limit(const struct engine *e)
{
    return e->cfg->max_functions > 0 && e->funcs.count >= e->cfg->max_functions;
}

int func_full(const struct engine *e)
{
    return at_limit(e) && list_empty(&e->func_idle);
}

/* evict frees the least recently released unused function; returns 0, or -1 if none is. An
 * entry of func_idle that is in use again (a limit set by maxqueue after its release...) is
 * taken off the list on the way: it is put back when released again. O(1) amortized. */
static int evict(struct engine *e)
{
    struct list_node *n;
    while ((n = list_first(&e->func_idle)) != NULL) {
        struct func *f = container_of(n, struct func, unode);
        list_del(n);
        if (func_unused(f)) {
            func_drop(e, f);
            e->stats.functions_evicted++;
            return 0;
        }
    }
    return -1;
}

int func_name_ok(const char *name, size_t len)
{
    return len == 0 || memchr(name, '\0', len) == NULL;
}

void func_list_after(struct engine *e, struct func *n, struct func *after)
{
    list_insert_after(after != NULL ? &after->anode : &e->func_list, &n->anode);
}

void func_list_remove(struct engine *e, struct func *n)
{
    (void)e;
    list_del(&n->anode);
}

struct func *func_list_next(const struct engine *e, const struct func *f)
{
    const struct list_node *n = list_next(&e->func_list, &f->anode);
    return n != NULL ? func_of_anode(n) : NULL;
}

struct func *func_get(struct engine *e, const char *name, size_t len, int create)
{
    uint64_t h = hmap_hash_bytes(name, len, e->seed);
    struct hmap_probe pr;
    for (struct func *f = hmap_first(&e->funcs, h, &pr); f != NULL; f = hmap_next(&pr)) {
        if (f->name_len == len && memcmp(f->name, name, len) == 0) {
            if (create)
                list_del(&f->unode); /* the caller's now: not evicted until released again */
            return f;
        }
    }
    /* the one name check of every entry point: a name no function may have is never created */
    if (!create || !func_name_ok(name, len) || (at_limit(e) && evict(e) != 0))
        return NULL;
    struct func *f = calloc(1, sizeof *f + len + 1);
    if (f == NULL)
        return NULL;
    memcpy(f->name, name, len);
    f->name_len = (uint32_t)len;
    if (hmap_insert(&e->funcs, f, h) != 0) {
        free(f);
        return NULL;
    }
    f->seq = e->func_seq++;
    list_node_init(&f->wake);
    list_node_init(&f->unode);
    list_node_init(&f->workers);
    for (int p = 0; p < PRIO_COUNT; p++)
        list_node_init(&f->queue[p]);
    list_node_init(&f->idle[0]);
    list_node_init(&f->idle[1]);
    list_push_back(&e->func_list, &f->anode);
    return f;
}

void func_drop(struct engine *e, struct func *f)
{
    assert(list_empty(&f->workers) && func_total(f) == 0 && f->parked == 0 && f->woken == 0);
    list_del(&f->wake);
    list_del(&f->unode);
    func_list_remove(e, f);
    hmap_remove(&e->funcs, f, func_hash(e, f));
    free(f);
}

int func_unused(const struct func *f)
{
    return f->nworkers == 0 && func_total(f) == 0 && f->parked == 0 && f->woken == 0 &&
           !f->broadcast && f->flow == NULL && f->max_queue[0] == 0 &&
           f->max_queue[1] == 0 && f->max_queue[2] == 0;
}

void func_release(struct engine *e, struct func *f)
{
    list_del(&f->unode);
    if (func_unused(f))
        list_push_back(&e->func_idle, &f->unode); /* the most recently released last */
}

void func_free_all(struct engine *e)
{
    struct hmap_iter it;
    hmap_iter_init(&it, &e->funcs);
    for (struct func *f; (f = hmap_iter_next(&it)) != NULL;)
        free(f);
    hmap_free(&e->funcs);
    list_node_init(&e->func_list);
    list_node_init(&e->func_idle);
}

/* ------------------------------------------------------------ ready queues */

/* became_ready links every worker of f into its ready ring for p; became_empty unlinks them. */
static void became_ready(struct func *f, int p)
{
    list_for_each(n, &f->workers)
        worker_ready_link(container_of(n, struct ability, fnode), p);
}

static void became_empty(struct func *f, int p)
{
    list_for_each(n, &f->workers)
        worker_ready_unlink(container_of(n, struct ability, fnode), p);
}

void func_wake(struct engine *e, struct func *f)
{
    if (list_empty(&f->workers))
        return; /* nobody to wake (a worker that comes later looks for work itself) */
    if (f->shut == FUNC_SHUT_ALL)
        return; /* held back: func_gate wakes them when it opens */
    f->wakes++;
    if (!list_linked(&f->wake))
        list_push_back(&e->ready, &f->wake);
}

/* flow_open counts the ready jobs of f (under flow control) that may start now: those of the
 * priorities it does not hold back, at most as many as its limits have room for. */
static uint32_t flow_open(struct engine *e, const struct func *f)
{
    uint32_t open = 0;
    for (int p = 0; p < PRIO_COUNT; p++)
        open += func_open(f, p) ? f->ready[p] : 0;
    uint32_t room = open > 0 && e->ext.flow_room != NULL ? e->ext.flow_room(e, f) : UINT32_MAX;
    return room < open ? room : open;
}

void func_wake_now(struct engine *e, struct func *f)
{
    if (list_empty(&f->workers) || e->shutting_down || e->replaying)
        return;
    int limit = e->cfg->worker_wakeup;
    int missed = f->missed != 0;
    f->missed = 0;
    if (f->flow != NULL) {
        /* under flow control: one worker per job that may start now (read again each time,
         * as a held GRAB starts one at once), no storm */
        while (f->woken < flow_open(e, f) && worker_wake_one(e, f))
            ;
        return;
    }
    if (limit < 0) {
        /* a held GRAB takes a ready job at once, whatever wake-ups are on their way (a woken
         * worker may be slow to GRAB, or never do: it must not hold up one that is waiting);
         * then one worker per ready job that no woken worker is coming for yet */
        while (worker_serve_held(e, f))
            ;
        /* after a NOOP went unanswered past its grace, every sleeper once (gearmand's rule):
         * workers that do not answer (busy elsewhere, stuck, or many idle ones) then cost the
         * job one grace in all, not one each */
        while ((missed || f->woken < func_ready(f)) && func_ready(f) > 0 && worker_wake_one(e, f))
            ;
        return;
    }
    /* gearmand's rule: wake every sleeper, or at most --worker-wakeup of them */
    for (int n = 0; (limit == 0 || n < limit) && worker_wake_one(e, f); n++)
        ;
}

void func_push(struct engine *e, struct job *j, int at_head)
{
    struct func *f = j->func;
    int p = j->prio;
    assert(j->state == JOB_LIMBO);
    j->state = JOB_READY;
    j->since = engine_now(e); /* the queue wait starts */
    f->queued[p]++;
    if (f->flow != NULL && e->ext.flow_push != NULL && e->ext.flow_push(e, j, at_head))
        ; /* flow control keeps it (in its key's queue) */
    else if (at_head)
        list_push_front(&f->queue[p], &j->qnode);
    else
        list_push_back(&f->queue[p], &j->qnode);
    if (f->ready[p]++ == 0 && !(f->shut & (1u << p)))
        became_ready(f, p);
    if ((j->flags & JOB_LIFE) && e->ext.life_ready != NULL)
        e->ext.life_ready(e, j); /* its time to live, in the timer heap */
    func_wake(e, f);
}

void func_gate(struct engine *e, struct func *f, uint8_t shut)
{
    uint8_t old = f->shut;
    if (old == shut)
        return;
    int opened = 0;
    f->shut = shut;
    for (int p = 0; p < PRIO_COUNT; p++) {
        int was = f->ready[p] > 0 && !(old & (1u << p)), now = func_open(f, p);
        if (was && !now)
            became_empty(f, p);
        else if (!was && now) {
            became_ready(f, p);
            opened = 1;
        }
    }
    if (opened)
        func_wake(e, f);
}

void func_unlink(struct engine *e, struct job *j)
{
    struct func *f = j->func;
    int p = j->prio;
    assert(j->state == JOB_READY);
    if (f->flow == NULL || e->ext.flow_unlink == NULL || !e->ext.flow_unlink(e, j))
        list_del(&j->qnode);
    j->state = JOB_LIMBO;
    f->queued[p]--;
    if (--f->ready[p] == 0 && !(f->shut & (1u << p)))
        became_empty(f, p);
    if (j->timer != HEAP_NONE) /* its time to live (JOB_LIFE: life_ready) */
        heap_remove(&e->timers, &j->timer);
}


void func_stats_reset(struct func *f)
{
    memset(f->events, 0, sizeof f->events);
    memset(&f->wait, 0, sizeof f->wait);
    memset(&f->run, 0, sizeof f->run);
}

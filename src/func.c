/* SPDX-License-Identifier: BSD-3-Clause */
/* func: functions, abilities, ready queues, and the choice of the next job for a worker. */
#include "func.h"

#include "cmd.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "list.h"
#include "peer.h"

/* ------------------------------------------------------------ functions */

uint64_t func_hash(const struct hnode *n, const void *engine)
{
    const struct func *f = (const struct func *)n;
    return hmap_hash_bytes(f->name, f->name_len, ((const struct engine *)engine)->seed);
}

int func_full(const struct engine *e)
{
    return e->cfg->max_functions > 0 && e->funcs.count >= e->cfg->max_functions;
}

int func_name_ok(const char *name, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)name[i];
        if (c <= 0x20 || c == 0x7f)
            return 0;
    }
    return 1;
}

void func_list_insert(struct engine *e, struct func *n, struct func *before)
{
    struct func *prev = before ? before->prev : e->func_tail;
    n->prev = prev;
    n->next = before;
    if (prev)
        prev->next = n;
    else
        e->func_list = n;
    if (before)
        before->prev = n;
    else
        e->func_tail = n;
}

void func_list_remove(struct engine *e, struct func *n)
{
    if (n->prev)
        n->prev->next = n->next;
    else
        e->func_list = n->next;
    if (n->next)
        n->next->prev = n->prev;
    else
        e->func_tail = n->prev;
    n->next = n->prev = NULL;
}

struct func *func_get(struct engine *e, const char *name, size_t len, int create)
{
    uint64_t h = hmap_hash_bytes(name, len, e->seed);
    for (struct hnode *n = hmap_chain(&e->funcs, h); n != NULL; n = n->next) {
        struct func *f = (struct func *)n;
        if (f->name_len == len && memcmp(f->name, name, len) == 0)
            return f;
    }
    if (!create || func_full(e))
        return NULL;
    struct func *f = calloc(1, sizeof *f + len + 1);
    if (f == NULL)
        return NULL;
    memcpy(f->name, name, len);
    f->name_len = (uint32_t)len;
    if (hmap_insert(&e->funcs, &f->node, h) != 0) {
        free(f);
        return NULL;
    }
    f->seq = e->func_seq++;
    func_list_insert(e, f, NULL);
    return f;
}

void func_drop(struct engine *e, struct func *f)
{
    assert(f->workers == NULL && func_total(f) == 0 && f->woken == 0);
    func_list_remove(e, f);
    hmap_remove(&e->funcs, &f->node, func_hash(&f->node, e));
    free(f);
}

int func_unused(const struct func *f)
{
    return f->nworkers == 0 && func_total(f) == 0 && f->woken == 0 && f->max_queue[0] == 0 &&
           f->max_queue[1] == 0 && f->max_queue[2] == 0;
}

void func_release(struct engine *e, struct func *f)
{
    if (func_unused(f))
        func_drop(e, f);
}

void func_free_all(struct engine *e)
{
    struct hmap_iter it;
    hmap_iter_init(&it, &e->funcs);
    for (struct hnode *n; (n = hmap_iter_next(&it)) != NULL;)
        free(n);
    hmap_free(&e->funcs);
    e->func_list = e->func_tail = NULL;
}

/* ------------------------------------------------------------ ready lists */

/* ready_link puts a into its worker's ready list for priority p (at the back of the rotation). */
static void ready_link(struct ability *a, int p)
{
    struct worker *w = a->worker;
    struct ability *cur = w->ready[p];
    if (cur == NULL) {
        a->rnext[p] = a->rprev[p] = a;
        w->ready[p] = a;
    } else {
        /* insert just before the cursor: it is served last in the current rotation */
        a->rnext[p] = cur;
        a->rprev[p] = cur->rprev[p];
        cur->rprev[p]->rnext[p] = a;
        cur->rprev[p] = a;
    }
}

/* ready_unlink removes a from its worker's ready list for priority p. */
static void ready_unlink(struct ability *a, int p)
{
    struct worker *w = a->worker;
    if (a->rnext[p] == NULL)
        return;
    if (a->rnext[p] == a) {
        w->ready[p] = NULL;
    } else {
        a->rprev[p]->rnext[p] = a->rnext[p];
        a->rnext[p]->rprev[p] = a->rprev[p];
        if (w->ready[p] == a)
            w->ready[p] = a->rnext[p];
    }
    a->rnext[p] = a->rprev[p] = NULL;
}

/* became_ready links every worker of f into its ready list for p; became_empty unlinks them. */
static void became_ready(struct func *f, int p)
{
    struct ability *a = f->workers;
    if (a == NULL)
        return;
    do {
        ready_link(a, p);
        a = a->fnext;
    } while (a != f->workers);
}

static void became_empty(struct func *f, int p)
{
    struct ability *a = f->workers;
    if (a == NULL)
        return;
    do {
        ready_unlink(a, p);
        a = a->fnext;
    } while (a != f->workers);
}

/* ------------------------------------------------------------ idle lists
 * Each ability is in exactly one of two lists per kind k (FUNC_HELD, FUNC_SLEEPING): its
 * function's idle list, where a wake-up looks for a worker, or its worker's parked list. An entry
 * in a function's list is valid while its worker is held (or asleep and not yet woken); a stale
 * one is parked when a wake-up meets it, and linked again when its worker next idles. So a
 * wake-up, a GRAB and a PRE_SLEEP cost O(1) amortized, however many workers or functions. */

static void idle_unlink(struct ability *a, int k)
{
    struct ability **head = a->in_func[k] ? &a->func->idle[k] : &a->worker->parked[k];
    if (a->iprev[k])
        a->iprev[k]->inext[k] = a->inext[k];
    else
        *head = a->inext[k];
    if (a->inext[k])
        a->inext[k]->iprev[k] = a->iprev[k];
    else if (a->in_func[k])
        a->func->idle_tail[k] = a->iprev[k];
    a->inext[k] = a->iprev[k] = NULL;
}

/* idle_park puts a (in no list) at the head of its worker's parked list k. */
static void idle_park(struct ability *a, int k)
{
    struct worker *w = a->worker;
    a->in_func[k] = 0;
    a->iprev[k] = NULL;
    a->inext[k] = w->parked[k];
    if (w->parked[k])
        w->parked[k]->iprev[k] = a;
    w->parked[k] = a;
}

/* idle_append puts a (in no list) at the tail of its function's idle list k. */
static void idle_append(struct ability *a, int k)
{
    struct func *f = a->func;
    a->in_func[k] = 1;
    a->inext[k] = NULL;
    a->iprev[k] = f->idle_tail[k];
    if (f->idle_tail[k])
        f->idle_tail[k]->inext[k] = a;
    else
        f->idle[k] = a;
    f->idle_tail[k] = a;
}

/* idle_valid reports whether w is what idle list k looks for. */
static int idle_valid(const struct worker *w, int k)
{
    if (w->peer->flags & PEER_CLOSING)
        return 0;
    return k == FUNC_HELD ? w->held != 0 : (w->sleeping && !w->noop_sent);
}

void worker_idle(struct engine *e, struct worker *w, int k)
{
    (void)e;
    while (w->parked[k] != NULL) {
        struct ability *a = w->parked[k];
        idle_unlink(a, k);
        idle_append(a, k);
    }
}

/* idle_first returns the oldest valid entry of f's idle list k, parking the stale ones before
 * it; NULL if none. */
static struct ability *idle_first(struct func *f, int k)
{
    struct ability *a;
    while ((a = f->idle[k]) != NULL && !idle_valid(a->worker, k)) {
        idle_unlink(a, k);
        idle_park(a, k);
    }
    return a;
}

/* wake_one finds f a worker for a ready job: a worker whose GRAB is held gets the job at once;
 * else the sleeper that has waited longest is sent a NOOP. Returns 1, or 0 if f has no such
 * worker. O(1) amortized. */
static int wake_one(struct engine *e, struct func *f)
{
    struct ability *a;
    if (func_ready(f) > 0 && (a = idle_first(f, FUNC_HELD)) != NULL) {
        idle_unlink(a, FUNC_HELD);
        idle_park(a, FUNC_HELD);
        cmd_grab_held(e, a->worker);
        return 1;
    }
    if ((a = idle_first(f, FUNC_SLEEPING)) == NULL)
        return 0;
    idle_unlink(a, FUNC_SLEEPING);
    idle_park(a, FUNC_SLEEPING);
    struct worker *w = a->worker;
    w->noop_sent = 1;
    w->woken_for = f;
    f->woken++;
    peer_send(w->peer, CMD_NOOP, NULL, 0);
    return 1;
}

void func_wake(struct engine *e, struct func *f)
{
    if (f->workers == NULL || e->shutting_down || e->replaying)
        return;
    int limit = e->cfg->worker_wakeup;
    if (limit < 0) {
        /* one worker per ready job that no woken worker is coming for yet (a held GRAB takes
         * a job at once, so the count is read again each time) */
        while (f->woken < func_ready(f) && wake_one(e, f))
            ;
        return;
    }
    /* gearmand's rule: wake every sleeper, or at most --worker-wakeup of them */
    for (int n = 0; (limit == 0 || n < limit) && wake_one(e, f); n++)
        ;
}

void worker_hold(struct engine *e, struct worker *w, uint32_t cmd, double now)
{
    w->held = cmd;
    w->held_until = now + e->cfg->grab_wait;
    w->held_next = NULL;
    w->held_prev = e->held_tail;
    if (e->held_tail)
        e->held_tail->held_next = w;
    else
        e->held = w;
    e->held_tail = w;
    worker_idle(e, w, FUNC_HELD);
}

void worker_unhold(struct engine *e, struct worker *w)
{
    if (!w->held)
        return;
    if (w->held_prev)
        w->held_prev->held_next = w->held_next;
    else
        e->held = w->held_next;
    if (w->held_next)
        w->held_next->held_prev = w->held_prev;
    else
        e->held_tail = w->held_prev;
    w->held_next = w->held_prev = NULL;
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
    if (f != NULL) {
        f->woken--;
        if (e->cfg->worker_wakeup < 0)
            func_wake(e, f); /* its job may still need a worker */
        func_release(e, f);
    }
}

void func_push(struct engine *e, struct job *j, int at_head)
{
    struct func *f = j->func;
    int p = j->prio;
    assert(j->state == JOB_LIMBO);
    j->state = JOB_READY;
    f->queued[p]++;
    if (f->head[p] == NULL) {
        j->next = j->prev = NULL;
        f->head[p] = f->tail[p] = j;
    } else if (at_head) {
        j->prev = NULL;
        j->next = f->head[p];
        f->head[p]->prev = j;
        f->head[p] = j;
    } else {
        j->next = NULL;
        j->prev = f->tail[p];
        f->tail[p]->next = j;
        f->tail[p] = j;
    }
    if (f->ready[p]++ == 0)
        became_ready(f, p);
    func_wake(e, f);
}

void func_unlink(struct engine *e, struct job *j)
{
    (void)e;
    struct func *f = j->func;
    int p = j->prio;
    assert(j->state == JOB_READY);
    if (j->prev)
        j->prev->next = j->next;
    else
        f->head[p] = j->next;
    if (j->next)
        j->next->prev = j->prev;
    else
        f->tail[p] = j->prev;
    j->next = j->prev = NULL;
    j->state = JOB_LIMBO;
    f->queued[p]--;
    if (--f->ready[p] == 0)
        became_empty(f, p);
}

struct job *func_take(struct engine *e, struct worker *w, struct ability **via)
{
    for (int p = 0; p < PRIO_COUNT; p++) {
        struct ability *a = w->ready[p];
        if (a == NULL)
            continue;
        struct func *f = a->func;
        struct job *j = f->head[p];
        assert(j != NULL);
        /* round-robin: the next grab at this priority starts with the next function */
        w->ready[p] = a->rnext[p];
        func_unlink(e, j);
        *via = a;
        return j;
    }
    return NULL;
}

int func_has_work(const struct worker *w)
{
    return w->ready[0] != NULL || w->ready[1] != NULL || w->ready[2] != NULL;
}

/* ------------------------------------------------------------ workers */

struct worker *worker_get(struct peer *p)
{
    if (p->worker == NULL) {
        p->worker = calloc(1, sizeof *p->worker);
        if (p->worker != NULL)
            p->worker->peer = p;
    }
    return p->worker;
}

/* ability_key hashes the pair (worker, function). */
static uint64_t ability_key(const struct worker *w, const struct func *f)
{
    return hmap_mix64((uint64_t)(uintptr_t)w ^ hmap_mix64((uint64_t)(uintptr_t)f));
}

uint64_t ability_hash(const struct hnode *n, const void *engine)
{
    (void)engine;
    const struct ability *a = (const struct ability *)n;
    return ability_key(a->worker, a->func);
}

struct ability *worker_find(const struct worker *w, const struct func *f)
{
    const struct engine *e = w->peer->eng;
    for (struct hnode *n = hmap_chain(&e->abilities, ability_key(w, f)); n != NULL; n = n->next) {
        struct ability *a = (struct ability *)n;
        if (a->worker == w && a->func == f)
            return a;
    }
    return NULL;
}

struct ability *worker_add(struct engine *e, struct worker *w, struct func *f, uint32_t timeout_ms)
{
    struct ability *a = worker_find(w, f);
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
    if (hmap_insert(&e->abilities, &a->node, ability_key(w, f)) != 0) {
        free(a);
        return NULL;
    }
    a->wprev = w->abilities_tail;
    if (w->abilities_tail)
        w->abilities_tail->wnext = a;
    else
        w->abilities = a;
    w->abilities_tail = a;
    w->nabilities++;
    if (f->workers == NULL) {
        a->fnext = a->fprev = a;
        f->workers = a;
    } else {
        a->fnext = f->workers;
        a->fprev = f->workers->fprev;
        f->workers->fprev->fnext = a;
        f->workers->fprev = a;
    }
    f->nworkers++;
    for (int k = 0; k < 2; k++) {
        if (idle_valid(w, k))
            idle_append(a, k);
        else
            idle_park(a, k);
    }
    for (int p = 0; p < PRIO_COUNT; p++)
        if (f->ready[p] > 0) {
            ready_link(a, p);
            w->ready[p] = a; /* the last CAN_DO is served first, then backwards, as gearmand */
        }
    return a;
}

void worker_remove(struct engine *e, struct ability *a)
{
    struct worker *w = a->worker;
    struct func *f = a->func;
    for (int p = 0; p < PRIO_COUNT; p++)
        ready_unlink(a, p);
    for (int k = 0; k < 2; k++)
        idle_unlink(a, k);
    if (a->fnext == a) {
        f->workers = NULL;
    } else {
        a->fprev->fnext = a->fnext;
        a->fnext->fprev = a->fprev;
        if (f->workers == a)
            f->workers = a->fnext;
    }
    f->nworkers--;
    hmap_remove(&e->abilities, &a->node, ability_key(w, f));
    if (a->wprev)
        a->wprev->wnext = a->wnext;
    else
        w->abilities = a->wnext;
    if (a->wnext)
        a->wnext->wprev = a->wprev;
    else
        w->abilities_tail = a->wprev;
    w->nabilities--;
    free(a);
    func_release(e, f);
}

void worker_reset(struct engine *e, struct worker *w)
{
    while (w->abilities != NULL)
        worker_remove(e, w->abilities);
}

void worker_free(struct engine *e, struct worker *w)
{
    worker_unhold(e, w);
    worker_awake(e, w);
    worker_reset(e, w);
    w->peer->worker = NULL;
    free(w);
}

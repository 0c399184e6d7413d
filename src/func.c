/* func: functions, abilities, ready queues, and the choice of the next job for a worker. */
#include "func.h"

#include "cmd.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "peer.h"

/* ------------------------------------------------------------ functions */

uint64_t func_hash(const struct hnode *n, const void *engine)
{
    const struct func *f = (const struct func *)n;
    return hmap_hash_bytes(f->name, f->name_len, ((const struct engine *)engine)->seed);
}

struct func *func_get(struct engine *e, const char *name, size_t len, int create)
{
    uint64_t h = hmap_hash_bytes(name, len, e->seed);
    for (struct hnode *n = hmap_chain(&e->funcs, h); n != NULL; n = n->next) {
        struct func *f = (struct func *)n;
        if (f->name_len == len && memcmp(f->name, name, len) == 0)
            return f;
    }
    if (!create)
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
    if (e->func_tail)
        e->func_tail->next = f;
    else
        e->func_list = f;
    e->func_tail = f;
    return f;
}

void func_drop(struct engine *e, struct func *f)
{
    assert(f->workers == NULL && func_total(f) == 0);
    struct func *prev = NULL;
    for (struct func *x = e->func_list; x != f; x = x->next)
        prev = x;
    if (prev)
        prev->next = f->next;
    else
        e->func_list = f->next;
    if (e->func_tail == f)
        e->func_tail = prev;
    hmap_remove(&e->funcs, &f->node, func_hash(&f->node, e));
    free(f);
}

void func_free_all(struct engine *e)
{
    for (size_t i = 0; i < e->funcs.nbuckets; i++) {
        struct hnode *n = e->funcs.buckets[i];
        while (n != NULL) {
            struct hnode *next = n->next;
            free(n);
            n = next;
        }
    }
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

/* wake_one finds f a worker for a ready job: a worker whose GRAB is held gets the job at once;
 * else the next sleeper (rotating) is sent a NOOP. Returns 1, or 0 if f has no such worker. */
static int wake_one(struct engine *e, struct func *f)
{
    struct ability *start = f->workers;
    if (start == NULL)
        return 0;
    struct ability *a = start, *sleeper = NULL;
    int ready = func_ready(f) > 0;
    do {
        struct ability *cur = a;
        struct worker *w = cur->worker;
        a = a->fnext;
        if (w->peer->flags & PEER_CLOSING)
            continue;
        if (w->held && ready) {
            f->workers = a; /* the next wake-up starts after this worker */
            cmd_grab_held(e, w);
            return 1;
        }
        if (sleeper == NULL && w->sleeping && !w->noop_sent) {
            sleeper = cur;
            if (e->held == NULL)
                break; /* no held GRAB to prefer */
        }
    } while (a != start);
    if (sleeper == NULL)
        return 0;
    struct worker *w = sleeper->worker;
    w->noop_sent = 1;
    w->woken_for = f;
    f->woken++;
    f->workers = sleeper->fnext; /* the next wake-up starts after this worker */
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

struct ability *worker_find(const struct worker *w, const struct func *f)
{
    for (struct ability *a = w->abilities; a != NULL; a = a->wnext)
        if (a->func == f)
            return a;
    return NULL;
}

struct ability *worker_add(struct engine *e, struct worker *w, struct func *f, uint32_t timeout_ms)
{
    (void)e;
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
    for (int p = 0; p < PRIO_COUNT; p++)
        if (f->ready[p] > 0) {
            ready_link(a, p);
            w->ready[p] = a; /* the last CAN_DO is served first, then backwards, as gearmand */
        }
    return a;
}

void worker_remove(struct engine *e, struct ability *a)
{
    (void)e;
    struct worker *w = a->worker;
    struct func *f = a->func;
    for (int p = 0; p < PRIO_COUNT; p++)
        ready_unlink(a, p);
    if (a->fnext == a) {
        f->workers = NULL;
    } else {
        a->fprev->fnext = a->fnext;
        a->fnext->fprev = a->fprev;
        if (f->workers == a)
            f->workers = a->fnext;
    }
    f->nworkers--;
    struct ability **pp = &w->abilities;
    struct ability *prev = NULL;
    while (*pp != a) {
        prev = *pp;
        pp = &(*pp)->wnext;
    }
    *pp = a->wnext;
    if (w->abilities_tail == a)
        w->abilities_tail = prev;
    w->nabilities--;
    free(a);
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

/* SPDX-License-Identifier: BSD-3-Clause */
/* broadcast: broadcast functions, their fan-out, the workers' inboxes (broadcast.h). */
#include "broadcast.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "engine.h"
#include "esc.h"
#include "func.h"
#include "job.h"
#include "list.h"
#include "log.h"
#include "store.h"
#include "store_batch.h"
#include "submit.h"
#include "worker.h"

/* struct bcast_msg is one broadcast submit: what every copy of it carries. Shared by the copies,
 * freed with the last. */
struct bcast_msg {
    uint32_t refs;           /* copies holding it (and the submit while it fans out) */
    uint8_t prio;            /* enum job_prio of the submit */
    uint32_t reducer_len;    /* bytes of reducer at the start of bytes */
    size_t data_len;         /* bytes of payload after it */
    char bytes[];            /* reducer, then payload */
};

/* struct bcast_copy is one copy waiting in one worker's inbox. */
struct bcast_copy {
    struct list_node wnode;  /* worker.inbox, oldest first */
    struct bcast_msg *msg;   /* what it carries (one reference) */
    struct bcast_fn *fn;     /* its function's entry (counted in its pending) */
};

struct bcast *broadcast_of(const struct engine *e) { return e->ext.bcast; }

static uint64_t name_hash(const struct engine *e, const char *name, size_t len)
{
    return hmap_hash_bytes(name, len, e->seed ^ 0x62636173ull);
}

struct bcast_fn *broadcast_find(const struct engine *e, const char *name, size_t len)
{
    const struct bcast *x = broadcast_of(e);
    if (x == NULL)
        return NULL;
    struct hmap_probe pr;
    for (struct bcast_fn *b = hmap_first(&x->fns, name_hash(e, name, len), &pr); b != NULL;
         b = hmap_next(&pr))
        if (b->name_len == len && memcmp(b->name, name, len) == 0)
            return b;
    return NULL;
}

/* fn_matches reports whether entry b is function f's. */
static int fn_matches(const struct bcast_fn *b, const struct func *f)
{
    return b->name_len == f->name_len && memcmp(b->name, f->name, f->name_len) == 0;
}

/* fn_drop frees b if it is off and no copy of it waits. */
static void fn_drop(struct engine *e, struct bcast_fn *b)
{
    if (b->on || b->pending > 0)
        return;
    hmap_remove(&broadcast_of(e)->fns, b, name_hash(e, b->name, b->name_len));
    free(b);
}

static void msg_unref(struct bcast_msg *m)
{
    if (--m->refs == 0)
        free(m);
}

/* copy_free unlinks c from w's inbox and frees it (its function's entry may go with it). */
static void copy_free(struct engine *e, struct worker *w, struct bcast_copy *c)
{
    struct bcast *x = broadcast_of(e);
    list_del(&c->wnode);
    w->ninbox--;
    x->pending--;
    c->fn->pending--;
    fn_drop(e, c->fn);
    msg_unref(c->msg);
    free(c);
}

/* inbox_take: see engine_ext.inbox_take. A copy whose worker no longer does its function (or
 * without memory for its job) is lost and the next one is tried. */
static struct job *inbox_take(struct engine *e, struct worker *w, struct ability **via)
{
    struct list_node *n;
    while ((n = list_first(&w->inbox)) != NULL) {
        struct bcast_copy *c = container_of(n, struct bcast_copy, wnode);
        const struct bcast_msg *m = c->msg;
        struct func *f = func_get(e, c->fn->name, c->fn->name_len, 0);
        struct ability *a = f != NULL ? worker_find(e, w, f) : NULL;
        struct job *j = NULL;
        if (a != NULL)
            j = job_submit_copy(e, f, (enum job_prio)m->prio, m->bytes, m->reducer_len,
                                m->bytes + m->reducer_len, m->data_len,
                                "created: a broadcast copy");
        copy_free(e, w, c);
        if (j == NULL) {
            e->stats.broadcast_lost++;
            continue;
        }
        /* a job of its own, foreground without a client: nothing re-queues it (worker_requeue
         * drops it as abandoned), nothing stores or dumps it */
        e->stats.broadcast_delivered++;
        *via = a;
        return j;
    }
    return NULL;
}

/* is_copy reports whether running job j is a broadcast copy (as far as can be told once its
 * function is no longer a broadcast function: not counted then). */
static int is_copy(const struct job *j)
{
    return j->func->broadcast && !(j->flags & JOB_BACKGROUND) && !job_has_waiters(j);
}

/* worker_letgo: see engine_ext.worker_letgo. */
static void worker_letgo(struct engine *e, struct worker *w, const struct func *f)
{
    struct bcast *x = broadcast_of(e);
    if (x == NULL || (x->nfuncs == 0 && x->pending == 0))
        return;
    list_for_each_safe(n, next, &w->inbox) {
        struct bcast_copy *c = container_of(n, struct bcast_copy, wnode);
        if (f == NULL || fn_matches(c->fn, f)) {
            copy_free(e, w, c);
            e->stats.broadcast_lost++;
        }
    }
    list_for_each(n, &w->running) {
        const struct job *j = job_of_qnode(n);
        if ((f == NULL || j->func == f) && is_copy(j))
            e->stats.broadcast_lost++; /* dropped by worker_requeue next */
    }
}

/* notify tells w, which has a copy waiting, of it: a held GRAB gets it now (even on a closing
 * connection, whose copy is then lost: no GRAB stays held while work waits for it), a sleeper a
 * NOOP; a worker that is awake takes it with its next GRAB. */
static void notify(struct engine *e, struct worker *w)
{
    if (e->shutting_down || e->replaying)
        return;
    if (w->held) {
        worker_grab_held(e, w);
    } else if (w->sleeping && !w->noop_sent && !e->sink.closing(e, w->peer)) {
        w->noop_sent = 1; /* woken_for stays NULL: no function's wake-up count is involved */
        e->sink.wake(e, w->peer);
    }
}

/* refusal returns why rq may not be fanned out, NULL if it may. */
static const char *refusal(struct engine *e, const struct submit_req *rq)
{
    if (!rq->background)
        return "BROADCAST_FUNCTION A+broadcast+function+takes+background+jobs+only";
    if (rq->nafter > 0)
        return "BROADCAST_FUNCTION A+broadcast+job+cannot+wait+for+other+jobs";
    if (rq->due > engine_now(e))
        return "BROADCAST_FUNCTION A+broadcast+job+runs+at+once:+no+epoch+or+schedule";
    return NULL;
}

/* msg_new makes the shared part of rq's copies (one reference), NULL out of memory. */
static struct bcast_msg *msg_new(const struct submit_req *rq)
{
    size_t rl = rq->reducer != NULL ? rq->reducer_len : 0;
    struct bcast_msg *m = malloc(sizeof *m + rl + rq->data_len);
    if (m == NULL)
        return NULL;
    m->refs = 1;
    m->prio = (uint8_t)rq->prio;
    m->reducer_len = (uint32_t)rl;
    m->data_len = rq->data_len;
    if (rl > 0)
        memcpy(m->bytes, rq->reducer, rl);
    if (rq->data_len > 0)
        memcpy(m->bytes + rl, rq->data, rq->data_len);
    return m;
}

/* fan_out leaves a copy of m in the inbox of each of f's workers (entry b); returns how many.
 * A worker whose inbox holds --broadcast-backlog copies, or no memory, loses its copy. */
static size_t fan_out(struct engine *e, struct func *f, struct bcast_fn *b, struct bcast_msg *m)
{
    struct bcast *x = broadcast_of(e);
    size_t backlog = e->cfg != NULL && e->cfg->broadcast_backlog > 0 ? e->cfg->broadcast_backlog
                                                                     : 10000;
    size_t n = 0;
    list_for_each(node, &f->workers) {
        struct worker *w = container_of(node, struct ability, fnode)->worker;
        struct bcast_copy *c = w->ninbox < backlog ? malloc(sizeof *c) : NULL;
        if (c == NULL) {
            e->stats.broadcast_lost++;
            continue;
        }
        c->msg = m;
        c->fn = b;
        m->refs++;
        list_push_back(&w->inbox, &c->wnode);
        w->ninbox++;
        b->pending++;
        x->pending++;
        n++;
    }
    /* then the wake-ups: a held GRAB answered now takes its copy out of its inbox */
    list_for_each(node, &f->workers) {
        struct worker *w = container_of(node, struct ability, fnode)->worker;
        if (!list_empty(&w->inbox))
            notify(e, w);
    }
    return n;
}

/* job_broadcast: see engine_ext.job_broadcast. */
static int job_broadcast(struct engine *e, struct func *f, const struct submit_req *rq,
                         struct submit_out *out)
{
    struct bcast_fn *b = broadcast_find(e, f->name, f->name_len);
    const char *why = refusal(e, rq);
    struct bcast_msg *m = NULL;
    if (why != NULL || b == NULL || (m = msg_new(rq)) == NULL) {
        func_release(e, f);
        out->why = why;
        return why != NULL ? SUBMIT_BROADCAST_REFUSED : SUBMIT_NO_MEMORY;
    }
    uint64_t id = e->next_id++; /* the broadcast's own handle, which no job has */
    size_t n = fan_out(e, f, b, m);
    msg_unref(m);
    e->stats.broadcast_jobs++;
    if (f->nworkers == 0)
        e->stats.broadcast_unheard++;
    if (log_enabled(LOG_DEBUG)) {
        char h[JOB_HANDLE_BUF];
        job_handle_id(e, id, h);
        log_debug("broadcast %s (%.*s): %zu copies", h, (int)(f->name_len < 100 ? f->name_len
                                                                                : 100),
                  f->name, n);
    }
    func_release(e, f);
    out->id = id;
    if (rq->owner != NULL && rq->owner_held && e->durable.ack != NULL) {
        /* earlier replies to the owner wait for the store: this one waits behind them */
        if (store_ack_id(e, id, rq->owner) != 0)
            return SUBMIT_NO_MEMORY;
        return SUBMIT_HELD;
    }
    return SUBMIT_BROADCAST;
}

int broadcast_set(struct engine *e, const char *name, size_t len, int on)
{
    struct bcast *x = broadcast_of(e);
    if (x == NULL)
        return -1;
    if (len == 0 || !func_name_ok(name, len))
        return -3;
    struct bcast_fn *b = broadcast_find(e, name, len);
    if (!on) {
        struct func *f = func_get(e, name, len, 0);
        if (f != NULL && f->broadcast) {
            f->broadcast = 0;
            func_release(e, f); /* unused now, maybe */
        }
        if (b != NULL && b->on) {
            b->on = 0;
            x->nfuncs--;
            fn_drop(e, b);
        }
        return 0;
    }
    if (b == NULL) {
        if ((b = calloc(1, sizeof *b + len + 1)) == NULL)
            return -1;
        b->name_len = (uint32_t)len;
        memcpy(b->name, name, len);
        if (hmap_insert(&x->fns, b, name_hash(e, name, len)) != 0) {
            free(b);
            return -1;
        }
    }
    struct func *f = func_get(e, name, len, 1);
    if (f == NULL) {
        int full = func_full(e);
        fn_drop(e, b);
        return full ? -2 : -1;
    }
    f->broadcast = 1; /* keeps f: func_unused */
    func_release(e, f);
    if (!b->on) {
        b->on = 1;
        x->nfuncs++;
    }
    return 0;
}

int broadcast_store(struct engine *e, const char *name, size_t len)
{
    const struct bcast_fn *b = broadcast_find(e, name, len);
    if (b == NULL || !b->on)
        return store_record_del(e, STORE_REC_BROADCAST, name, len);
    return store_record_put(e, STORE_REC_BROADCAST, name, len, "on", 2);
}

static int record_restored(struct engine *e, const struct store_record *r, char *err,
                           size_t errlen)
{
    int on = r->value != NULL;
    if (on && (r->value_len != 2 || memcmp(r->value, "on", 2) != 0)) {
        snprintf(err, errlen, "not a broadcast setting");
        return -1;
    }
    int rc = broadcast_set(e, r->key, r->key_len, on);
    if (rc != 0) {
        snprintf(err, errlen, "%s", rc == -3   ? "not a function name"
                                    : rc == -2 ? "too many functions (--max-functions)"
                                               : "out of memory");
        return -1;
    }
    return 0;
}

static void record_each(const struct engine *e,
                        void (*cb)(void *ctx, const struct store_record *r), void *ctx)
{
    const struct bcast *x = broadcast_of(e);
    if (x == NULL)
        return;
    struct hmap_iter it;
    hmap_iter_init(&it, &x->fns);
    for (const struct bcast_fn *b; (b = hmap_iter_next(&it)) != NULL;) {
        if (!b->on)
            continue;
        struct store_record r = {STORE_REC_BROADCAST, b->name, b->name_len, "on", 2};
        cb(ctx, &r);
    }
}

/* inbox_count counts the copies of function f waiting in w's inbox, and all of them in *all. */
static size_t inbox_count(const struct worker *w, const struct func *f, size_t *all)
{
    size_t k = 0;
    *all = 0;
    list_for_each(n, &w->inbox) {
        const struct bcast_copy *c = container_of(n, struct bcast_copy, wnode);
        (*all)++;
        if (fn_matches(c->fn, f))
            k++;
    }
    return k;
}

int broadcast_check(const struct engine *e, char *err, size_t errlen)
{
    const struct bcast *x = broadcast_of(e);
    if (x == NULL)
        return 0;
    size_t on = 0, pending = 0, seen = 0;
    struct hmap_iter it;
    hmap_iter_init(&it, &x->fns);
    for (const struct bcast_fn *b; (b = hmap_iter_next(&it)) != NULL;) {
        if (!b->on && b->pending == 0)
            return engine_check_fail(err, errlen, "broadcast: an idle entry was kept");
        if (b->on) {
            const struct func *f = func_get((struct engine *)e, b->name, b->name_len, 0);
            if (f == NULL || !f->broadcast)
                return engine_check_fail(err, errlen, "broadcast: %s is not flagged", b->name);
            on++;
        }
        pending += b->pending;
    }
    hmap_iter_init(&it, &e->abilities);
    for (const struct ability *a; (a = hmap_iter_next(&it)) != NULL;) {
        size_t all;
        seen += inbox_count(a->worker, a->func, &all);
        if (all != a->worker->ninbox)
            return engine_check_fail(err, errlen, "broadcast: ninbox %u, %zu copies",
                                     a->worker->ninbox, all);
    }
    if (on != x->nfuncs || pending != x->pending || seen != x->pending)
        return engine_check_fail(err, errlen, "broadcast: %zu on (counted %zu), %zu pending "
                                 "(entries %zu, inboxes %zu)", on, x->nfuncs, x->pending,
                                 pending, seen);
    return 0;
}

/* detach frees the state (engine_ext.destroy). Every worker is gone by then, and with it
 * every copy (worker_letgo). */
static void detach(struct engine *e)
{
    struct bcast *x = broadcast_of(e);
    if (x == NULL)
        return;
    assert(x->pending == 0);
    struct hmap_iter it;
    hmap_iter_init(&it, &x->fns);
    for (struct bcast_fn *b; (b = hmap_iter_next(&it)) != NULL;)
        free(b);
    hmap_free(&x->fns);
    free(x);
    e->ext.bcast = NULL;
    e->ext.job_broadcast = NULL;
    e->ext.inbox_take = NULL;
    e->ext.worker_letgo = NULL;
    e->ext.record_restored[STORE_REC_BROADCAST] = NULL;
    e->ext.record_each[STORE_REC_BROADCAST] = NULL;
}

/* apply_config makes each --broadcast function one (names in the escaped form, %09 a TAB). */
static void apply_config(struct engine *e)
{
    const struct config *c = e->cfg;
    for (int i = 0; c != NULL && i < c->nbroadcast; i++) {
        size_t len;
        char *name = esc_decode_dup(c->broadcast[i], strlen(c->broadcast[i]), &len);
        int rc = name != NULL ? broadcast_set(e, name, len, 1) : -1;
        if (rc != 0)
            log_error("--broadcast=%s not set: %s", c->broadcast[i],
                      rc == -3 ? "not a function name" : rc == -2 ? "too many functions"
                                                                  : "out of memory");
        free(name);
    }
}

int broadcast_attach(struct engine *e)
{
    if (broadcast_of(e) != NULL)
        return 0;
    struct bcast *x = calloc(1, sizeof *x);
    if (x == NULL)
        return -1;
    if (engine_ext_join(e, broadcast_check, detach) != 0) {
        log_error("broadcast: no engine_ext slot left (ENGINE_EXT_SLOTS)");
        free(x);
        return -1;
    }
    hmap_init(&x->fns);
    e->ext.bcast = x;
    e->ext.job_broadcast = job_broadcast;
    e->ext.inbox_take = inbox_take;
    e->ext.worker_letgo = worker_letgo;
    e->ext.record_restored[STORE_REC_BROADCAST] = record_restored;
    e->ext.record_each[STORE_REC_BROADCAST] = record_each;
    apply_config(e);
    return 0;
}

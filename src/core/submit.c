/* SPDX-License-Identifier: BSD-3-Clause */
/* submit: the one core submit (submit.h). */
#include "submit.h"

#include <string.h>

#include "engine.h"
#include "func.h"
#include "job.h"
#include "log.h"

/* the most extension state a new job is stored with: the "after" list of a waiting job (at most
 * 64 handle numbers of up to 20 digits, jobx.h) with its framing */
#define SUBMIT_META_MAX 2048

/* find_func finds or creates rq's function; NULL with *res set when it cannot. */
static struct func *find_func(struct engine *e, const struct submit_req *rq,
                              enum submit_result *res)
{
    struct func *f = func_get(e, rq->func, rq->func_len, 1);
    if (f == NULL)
        *res = !func_name_ok(rq->func, rq->func_len) ? SUBMIT_BAD_NAME
               : func_full(e)                        ? SUBMIT_TOO_MANY_FUNCTIONS
                                                     : SUBMIT_NO_MEMORY;
    return f;
}

/* join makes rq join j, the live job of its function with its unique: the new payload,
 * priority and time are ignored, as in gearmand. */
static enum submit_result join(struct engine *e, const struct submit_req *rq, struct job *j)
{
    if (rq->flags & SUBMIT_JOIN_AS_IS) {
        func_count(e, j->func, JOB_EV_COALESCED, rq->prio);
        return SUBMIT_JOINED;
    }
    if (j->state == JOB_FAILED && e->ext.job_revive != NULL)
        e->ext.job_revive(e, j); /* a dead-letter job submitted again runs again */
    func_count(e, j->func, JOB_EV_COALESCED, rq->prio);
    if (!rq->background) {
        if (rq->client != NULL && job_add_waiter(j, rq->client, rq->client_jobs) != 0)
            return SUBMIT_NO_MEMORY;
        return SUBMIT_JOINED;
    }
    if (!(j->flags & JOB_BACKGROUND)) {
        /* a background submit makes the job independent of its foreground clients, and
         * durable: the reply waits for the store */
        if (e->durable.add == NULL) {
            j->flags |= JOB_BACKGROUND;
            return SUBMIT_JOINED;
        }
        if (e->durable.add(e, j, rq->owner, 0, NULL, 0) != 0)
            return SUBMIT_STORE_ERROR;
        return rq->owner != NULL ? SUBMIT_HELD : SUBMIT_JOINED;
    }
    if (e->durable.ack != NULL && rq->owner != NULL &&
        (j->state == JOB_PENDING || rq->owner_held)) {
        /* the job is not durable yet, or earlier replies are held: this one waits too */
        if (e->durable.ack(e, j, rq->owner) != 0)
            return SUBMIT_NO_MEMORY;
        return SUBMIT_HELD;
    }
    return SUBMIT_JOINED;
}

/* create makes rq's new job of f: NULL with *res set (and f released) when it cannot. */
static struct job *create(struct engine *e, const struct submit_req *rq, struct func *f,
                          struct submit_out *out, enum submit_result *res)
{
    uint32_t max = f->max_queue[rq->prio];
    if (!(rq->flags & SUBMIT_NO_MAXQUEUE) && max > 0 && func_total(f) >= max) {
        func_release(e, f);
        *res = SUBMIT_QUEUE_FULL;
        return NULL;
    }
    if (rq->nafter > 0 && e->ext.wait_refused != NULL &&
        (out->why = e->ext.wait_refused(e, rq->after, rq->nafter)) != NULL) {
        func_release(e, f);
        *res = SUBMIT_WAIT_REFUSED;
        return NULL;
    }
    struct job *j = job_new(e, f, rq->prio, rq->background, rq->unique, rq->unique_len,
                            rq->reducer, rq->reducer_len, (const char *)rq->data, rq->data_len);
    if (j == NULL) {
        func_release(e, f);
        *res = SUBMIT_NO_MEMORY;
        return NULL;
    }
    if (rq->nafter > 0 && (e->ext.job_wait == NULL || e->ext.job_wait(e, j, rq->after,
                                                                       rq->nafter) != 0)) {
        job_free(e, j);
        *res = SUBMIT_NO_MEMORY;
        return NULL;
    }
    if (((rq->life.timeout_ms | rq->life.ttl_s) != 0 || e->ext.life_defaults > 0) &&
        e->ext.life_new != NULL && e->ext.life_new(e, j, rq) != 0) {
        job_free(e, j); /* its timeout and time to live (lifetime.h) */
        *res = SUBMIT_NO_MEMORY;
        return NULL;
    }
    func_count(e, f, JOB_EV_SUBMITTED, rq->prio);
    job_log(e, j, rq->log != NULL ? rq->log : "created");
    return j;
}

/* place stores, hands to its waiter, defers or queues j, just created for rq. */
static enum submit_result place(struct engine *e, const struct submit_req *rq, struct job *j)
{
    int future = rq->due > 0 && rq->due > engine_now(e); /* (most submits: due 0, no clock) */
    if (rq->background && e->durable.add != NULL) {
        /* the reply and the job's first run (unless it waits) wait until it is durable */
        char meta[SUBMIT_META_MAX];
        size_t ml = 0;
        if ((rq->nafter > 0 || (j->flags & JOB_LIFE)) && e->ext.job_meta != NULL)
            ml = e->ext.job_meta(e, j, meta, sizeof meta);
        if (e->durable.add(e, j, rq->owner, future ? rq->due : 0, ml ? meta : NULL, ml) != 0) {
            job_free(e, j);
            return SUBMIT_STORE_ERROR;
        }
        return rq->owner != NULL ? SUBMIT_HELD : SUBMIT_CREATED;
    }
    if (!rq->background && rq->client != NULL &&
        job_add_waiter(j, rq->client, rq->client_jobs) != 0) {
        job_free(e, j);
        return SUBMIT_NO_MEMORY;
    }
    if (rq->nafter > 0)
        return SUBMIT_CREATED; /* it waits (JOB_WAITING) */
    /* without memory for the timer the job runs now rather than being lost */
    if (!future || job_defer(e, j, rq->due) != 0)
        func_push(e, j, 0);
    return SUBMIT_CREATED;
}

/* submit does job_submit's work; job_submit counts its refusals. */
static enum submit_result submit(struct engine *e, const struct submit_req *rq,
                                 struct submit_out *out)
{
    enum submit_result res = SUBMIT_CREATED;
    out->job = NULL;
    out->why = NULL;
    out->id = 0;
    struct func *f = find_func(e, rq, &res);
    if (f == NULL)
        return res;
    if (f->broadcast && e->ext.job_broadcast != NULL) /* a flag test for every other function */
        return (enum submit_result)e->ext.job_broadcast(e, f, rq, out);
    struct job *j = job_find_unique(e, f, rq->unique, rq->unique_len, (const char *)rq->data,
                                  rq->data_len);
    if (j != NULL) {
        res = join(e, rq, j);
        if (res == SUBMIT_JOINED || res == SUBMIT_HELD)
            out->job = j;
        return res;
    }
    j = create(e, rq, f, out, &res);
    if (j == NULL)
        return res;
    res = (rq->flags & SUBMIT_LIMBO) ? SUBMIT_CREATED : place(e, rq, j);
    if (res == SUBMIT_CREATED || res == SUBMIT_HELD)
        out->job = j;
    return res;
}

enum submit_result job_submit(struct engine *e, const struct submit_req *rq,
                              struct submit_out *out)
{
    _Static_assert(SUBMIT_BROADCAST_REFUSED < ENGINE_SUBMIT_RESULTS,
                   "engine_stats.submit_refused");
    enum submit_result res = submit(e, rq, out);
    if (res >= SUBMIT_BAD_NAME && res != SUBMIT_BROADCAST)
        e->stats.submit_refused[res]++;
    return res;
}

struct job *job_submit_copy(struct engine *e, struct func *f, enum job_prio prio,
                            const char *reducer, size_t reducer_len, const void *data,
                            size_t data_len, const char *log)
{
    struct job *j = job_new(e, f, prio, 0, "", 0, reducer, reducer_len, (const char *)data,
                            data_len);
    if (j == NULL)
        return NULL;
    func_count(e, f, JOB_EV_SUBMITTED, j->prio);
    job_log(e, j, log);
    return j;
}

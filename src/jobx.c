/* SPDX-License-Identifier: BSD-3-Clause */
/* jobx: retry policies and the dead-letter list (jobx.h). */
#include "jobx.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "engine.h"
#include "esc.h"
#include "func.h"
#include "job.h"
#include "log.h"

static uint64_t name_hash(const struct engine *e, const char *name, size_t len)
{
    return hmap_hash_bytes(name, len, e->seed);
}

struct jobx *jobx_get(struct engine *e)
{
    if (e->jobx != NULL)
        return e->jobx;
    struct jobx *x = calloc(1, sizeof *x);
    if (x == NULL)
        return NULL;
    hmap_init(&x->policies);
    hmap_init(&x->recs);
    hmap_init(&x->deps);
    list_node_init(&x->failed);
    x->rng = hmap_mix64(e->seed ^ 0x6a6f6278ull) | 1;
    e->jobx = x;
    e->ext.job_freed = jobx_job_freed;
    const struct config *c = e->cfg;
    for (int i = 0; c != NULL && i < c->nretry; i++) {
        const struct config_retry *r = &c->retry[i];
        size_t fl;
        char *fn = esc_decode_dup(r->func, strlen(r->func), &fl); /* %09 is a TAB */
        if (fn != NULL && !func_name_ok(fn, fl))
            log_error("retry policy of %s not set: the name has a NUL byte (%%00)", r->func);
        else if (fn == NULL || jobx_policy_set(e, fn, fl, r->count, r->backoff, r->max) != 0)
            log_error("retry policy of %s not set: out of memory", r->func);
        free(fn);
    }
    return x;
}

int jobx_attach(struct engine *e) { return jobx_get(e) != NULL ? 0 : -1; }

void jobx_destroy(struct engine *e)
{
    struct jobx *x = e->jobx;
    if (x == NULL)
        return;
    struct hmap_iter it;
    hmap_iter_init(&it, &x->policies);
    for (void *p; (p = hmap_iter_next(&it)) != NULL;)
        free(p);
    hmap_iter_init(&it, &x->recs);
    for (struct jobx_rec *r; (r = hmap_iter_next(&it)) != NULL;) {
        free(r->after);
        free(r);
    }
    hmap_iter_init(&it, &x->deps);
    for (void *d; (d = hmap_iter_next(&it)) != NULL;)
        free(d);
    hmap_free(&x->policies);
    hmap_free(&x->recs);
    hmap_free(&x->deps);
    free(x);
    e->jobx = NULL;
}

const struct jobx_policy *jobx_policy_find(const struct engine *e, const char *name, size_t len)
{
    const struct jobx *x = e->jobx;
    if (x == NULL || x->policies.count == 0)
        return NULL;
    struct hmap_probe pr;
    for (struct jobx_policy *p = hmap_first(&x->policies, name_hash(e, name, len), &pr); p != NULL;
         p = hmap_next(&pr))
        if (p->name_len == len && memcmp(p->name, name, len) == 0)
            return p;
    return NULL;
}

int jobx_policy_set(struct engine *e, const char *name, size_t len, uint32_t count,
                    double backoff, double max)
{
    struct jobx *x = jobx_get(e);
    if (x == NULL)
        return -1;
    struct jobx_policy *p = (struct jobx_policy *)(uintptr_t)jobx_policy_find(e, name, len);
    uint64_t h = name_hash(e, name, len);
    if (count == 0) {
        if (p != NULL) {
            hmap_remove(&x->policies, p, h);
            free(p);
        }
        return 0;
    }
    if (p == NULL) {
        if (x->policies.count >= JOBX_MAX_POLICIES)
            return -2;
        p = calloc(1, sizeof *p + len + 1);
        if (p == NULL)
            return -1;
        memcpy(p->name, name, len);
        p->name_len = (uint32_t)len;
        if (hmap_insert(&x->policies, p, h) != 0) {
            free(p);
            return -1;
        }
    }
    p->count = count;
    p->backoff = backoff;
    p->max = max;
    return 0;
}

double jobx_delay(const struct jobx_policy *p, uint32_t attempt, double u01)
{
    double d = p->backoff;
    for (uint32_t i = 1; i < attempt && d < p->max; i++)
        d *= 2;
    if (d > p->max)
        d = p->max;
    return d / 2 + d / 2 * u01;
}

/* uniform returns a draw in [0, 1] from x's generator (xorshift64*). */
static double uniform(struct jobx *x)
{
    x->rng ^= x->rng >> 12;
    x->rng ^= x->rng << 25;
    x->rng ^= x->rng >> 27;
    return (double)((x->rng * 0x2545f4914f6cdd1dull) >> 11) / (double)(1ull << 53);
}

struct jobx_rec *jobx_rec_of(const struct engine *e, const struct job *j)
{
    const struct jobx *x = e->jobx;
    if (x == NULL || !(j->flags & JOB_EXT))
        return NULL;
    struct hmap_probe pr;
    for (struct jobx_rec *r = hmap_first(&x->recs, hmap_mix64(j->id), &pr); r != NULL;
         r = hmap_next(&pr))
        if (r->job == j)
            return r;
    return NULL;
}

/* rec_get returns j's record, creating it (and flagging j) if needed; NULL out of memory. */
static struct jobx_rec *rec_get(struct engine *e, struct jobx *x, struct job *j)
{
    struct jobx_rec *r = jobx_rec_of(e, j);
    if (r != NULL)
        return r;
    r = calloc(1, sizeof *r);
    if (r == NULL)
        return NULL;
    r->job = j;
    list_node_init(&r->fnode);
    if (hmap_insert(&x->recs, r, hmap_mix64(j->id)) != 0) {
        free(r);
        return NULL;
    }
    j->flags |= JOB_EXT;
    return r;
}

/* trim drops the oldest dead-letter jobs past --max-failed-jobs. */
static void trim(struct engine *e, struct jobx *x)
{
    size_t cap = e->cfg->max_failed_jobs;
    while (x->nfailed > cap) {
        struct jobx_rec *old = container_of(list_first(&x->failed), struct jobx_rec, fnode);
        e->stats.failed_dropped++;
        job_log(e, old->job, "dropped from the dead-letter list (--max-failed-jobs)");
        job_free(e, old->job); /* may be the job just failed when the cap is 0 */
    }
}

/* unpark takes dead-letter job j (record r) off the list, into limbo. */
static void unpark(struct jobx *x, struct job *j, struct jobx_rec *r)
{
    assert(j->state == JOB_FAILED);
    list_del(&r->fnode);
    list_node_init(&r->fnode);
    x->nfailed--;
    j->func->parked--;
    j->state = JOB_LIMBO;
}

struct jobx_rec *jobx_rec_get(struct engine *e, struct job *j)
{
    struct jobx *x = jobx_get(e);
    return x != NULL ? rec_get(e, x, j) : NULL;
}

void jobx_park(struct engine *e, struct job *j)
{
    struct jobx *x = e->jobx;
    struct jobx_rec *r = jobx_rec_of(e, j);
    assert(r != NULL && j->state == JOB_LIMBO);
    j->state = JOB_FAILED;
    list_push_back(&x->failed, &r->fnode);
    x->nfailed++;
    j->func->parked++;
}

int jobx_job_failed(struct engine *e, struct job *j, const char *err, size_t len)
{
    struct jobx *x = e->jobx;
    if (x == NULL || !(j->flags & JOB_BACKGROUND) || job_has_waiters(j))
        return 0;
    const struct jobx_policy *p = jobx_policy_find(e, j->func->name, j->func->name_len);
    if (p == NULL)
        return 0;
    struct jobx_rec *r = rec_get(e, x, j);
    if (r == NULL)
        return 0; /* out of memory: dropped as without a policy */
    double now = engine_now(e);
    if (r->attempts < UINT32_MAX)
        r->attempts++;
    if (r->attempts == 1)
        r->first_failed = now;
    r->last_failed = now;
    if (len > JOBX_ERROR_MAX)
        len = JOBX_ERROR_MAX;
    memcpy(r->error, err, len);
    r->error_len = (uint16_t)len;
    job_detach(e, j);
    j->num = j->den = 0;
    if (r->attempts <= p->count) {
        double at = now + jobx_delay(p, r->attempts, uniform(x));
        if (job_defer(e, j, at) == 0) {
            e->stats.retries++;
            if (x->persist != NULL)
                x->persist(e, j, at);
            job_log(e, j, "failed: retry deferred");
            return 1;
        }
        /* no room in the timer heap: it fails for good */
    }
    j->state = JOB_FAILED;
    list_push_back(&x->failed, &r->fnode);
    x->nfailed++;
    j->func->parked++;
    job_log(e, j, "failed for good: dead-letter list");
    if (x->persist != NULL)
        x->persist(e, j, 0);
    if (x->deps.count > 0)
        jobx_job_gone(e, j); /* what waits for it fails too */
    trim(e, x);
    return 1;
}

void jobx_unpark(struct engine *e, struct job *j)
{
    struct jobx_rec *r = jobx_rec_of(e, j);
    if (r != NULL)
        unpark(e->jobx, j, r);
    else
        j->state = JOB_LIMBO; /* (never: engine_check reports a failed job without a record) */
}

void jobx_job_freed(struct engine *e, struct job *j)
{
    struct jobx *x = e->jobx;
    struct jobx_rec *r = jobx_rec_of(e, j);
    if (r == NULL)
        return;
    if (j->state == JOB_FAILED)
        unpark(x, j, r);
    hmap_remove(&x->recs, r, hmap_mix64(j->id));
    free(r->after);
    free(r);
    j->flags &= (uint8_t)~JOB_EXT;
}

/* ------------------------------------------------------------ dependencies */

/* drop_edges removes every edge of waiting record r from the index and forgets its list. */
static void drop_edges(struct jobx *x, struct jobx_rec *r)
{
    for (uint16_t i = 0; i < r->nafter; i++) {
        struct hmap_probe pr;
        for (struct jobx_dep *d = hmap_first(&x->deps, hmap_mix64(r->after[i]), &pr); d != NULL;
             d = hmap_next(&pr))
            if (d->pre == r->after[i] && d->r == r) {
                hmap_remove(&x->deps, d, hmap_mix64(d->pre));
                free(d);
                break;
            }
    }
    free(r->after);
    r->after = NULL;
    r->nafter = 0;
}

int jobx_wait(struct engine *e, struct job *j, const uint64_t *after, size_t n)
{
    struct jobx *x = jobx_get(e);
    if (x == NULL || n == 0 || n > JOBX_MAX_AFTER)
        return -1;
    struct jobx_rec *r = rec_get(e, x, j);
    if (r == NULL)
        return -1;
    r->after = malloc(n * sizeof *r->after);
    if (r->after == NULL)
        goto fail;
    for (size_t i = 0; i < n; i++) {
        int dup = 0;
        for (uint16_t k = 0; k < r->nafter; k++)
            dup |= r->after[k] == after[i];
        if (dup)
            continue;
        struct jobx_dep *d = malloc(sizeof *d);
        if (d == NULL)
            goto fail;
        *d = (struct jobx_dep){after[i], r};
        if (hmap_insert(&x->deps, d, hmap_mix64(after[i])) != 0) {
            free(d);
            goto fail;
        }
        r->after[r->nafter++] = after[i];
    }
    j->state = JOB_WAITING;
    x->nwaiting++;
    j->func->parked++;
    job_log(e, j, "waiting for its dependencies");
    return 0;
fail:
    jobx_job_freed(e, j); /* its edges and record go; j stays in limbo */
    return -1;
}

void jobx_unwait(struct engine *e, struct job *j)
{
    struct jobx *x = e->jobx;
    struct jobx_rec *r = jobx_rec_of(e, j);
    if (r != NULL)
        drop_edges(x, r);
    x->nwaiting--;
    j->func->parked--;
    j->state = JOB_LIMBO;
}

/* waiters_of collects the records waiting for job number id into *out (malloc'd; *n of them).
 * Returns 0, or -1 out of memory. */
static int waiters_of(struct jobx *x, uint64_t id, struct jobx_rec ***out, size_t *n)
{
    size_t cap = 0;
    *out = NULL;
    *n = 0;
    struct hmap_probe pr;
    for (struct jobx_dep *d = hmap_first(&x->deps, hmap_mix64(id), &pr); d != NULL;
         d = hmap_next(&pr)) {
        if (d->pre != id)
            continue;
        if (array_grow((void **)out, &cap, *n + 1, sizeof **out, 8) != 0)
            return -1;
        (*out)[(*n)++] = d->r;
    }
    return 0;
}

void jobx_job_done(struct engine *e, struct job *j)
{
    struct jobx *x = e->jobx;
    if (x == NULL || x->deps.count == 0)
        return;
    struct jobx_rec **w;
    size_t n;
    if (waiters_of(x, j->id, &w, &n) != 0) {
        log_error("out of memory releasing the jobs that wait for job %llu",
                  (unsigned long long)j->id);
        free(w);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        struct jobx_rec *r = w[i];
        struct job *d = r->job;
        struct hmap_probe pr;
        for (struct jobx_dep *dep = hmap_first(&x->deps, hmap_mix64(j->id), &pr); dep != NULL;
             dep = hmap_next(&pr))
            if (dep->pre == j->id && dep->r == r) {
                hmap_remove(&x->deps, dep, hmap_mix64(j->id));
                free(dep);
                break;
            }
        for (uint16_t k = 0; k < r->nafter; k++)
            if (r->after[k] == j->id) {
                r->after[k] = r->after[--r->nafter];
                break;
            }
        if (r->nafter > 0) {
            if (x->persist != NULL)
                x->persist(e, d, 0); /* one dependency fewer */
            continue;
        }
        jobx_unwait(e, d);
        job_log(e, d, "its dependencies completed: queued");
        if (r->attempts == 0)
            jobx_job_freed(e, d); /* nothing left to keep */
        if (x->persist != NULL)
            x->persist(e, d, 0);
        func_push(e, d, 0);
    }
    free(w);
}

void jobx_job_gone(struct engine *e, struct job *j)
{
    struct jobx *x = e->jobx;
    /* a work list of the jobs that failed, so a long chain takes no stack */
    uint64_t *work = NULL;
    size_t nwork = 0, cap = 0;
    if (array_grow((void **)&work, &cap, 1, sizeof *work, 16) != 0)
        return;
    work[nwork++] = j->id;
    while (nwork > 0 && x->deps.count > 0) {
        uint64_t id = work[--nwork];
        struct jobx_rec **w;
        size_t n;
        if (waiters_of(x, id, &w, &n) != 0) {
            free(w);
            break;
        }
        char h[JOB_HANDLE_BUF];
        size_t hl = job_handle_id(e, id, h);
        for (size_t i = 0; i < n; i++) {
            struct jobx_rec *r = w[i];
            struct job *d = r->job;
            jobx_unwait(e, d);
            int len = snprintf(r->error, sizeof r->error, "dependency %.*s failed", (int)hl, h);
            r->error_len = (uint16_t)(len > 0 ? len : 0);
            r->first_failed = r->first_failed > 0 ? r->first_failed : engine_now(e);
            r->last_failed = engine_now(e);
            jobx_park(e, d);
            job_log(e, d, "a dependency failed: dead-letter list");
            if (x->persist != NULL)
                x->persist(e, d, 0);
            if (array_grow((void **)&work, &cap, nwork + 1, sizeof *work, 16) == 0)
                work[nwork++] = d->id;
        }
        free(w);
    }
    free(work);
    trim(e, x);
}

size_t jobx_nwaiting(const struct engine *e) { return e->jobx != NULL ? e->jobx->nwaiting : 0; }

void jobx_retry_job(struct engine *e, struct job *j)
{
    struct jobx_rec *r = jobx_rec_of(e, j);
    if (r == NULL || j->state != JOB_FAILED)
        return;
    unpark(e->jobx, j, r);
    r->attempts = 0;
    r->error_len = 0;
    job_log(e, j, "retried from the dead-letter list");
    if (e->jobx->persist != NULL)
        e->jobx->persist(e, j, 0);
    func_push(e, j, 0);
}

/* each_failed calls fn on every dead-letter job of f (of every function when f is NULL), oldest
 * first, and returns how many. fn may free the job, and with it f: f is only compared, never
 * read, after the first call. */
static size_t each_failed(struct engine *e, const struct func *f,
                          void (*fn)(struct engine *e, struct job *j))
{
    struct jobx *x = e->jobx;
    size_t n = 0;
    if (x == NULL)
        return 0;
    struct list_node *it = x->failed.next, *next;
    for (; it != &x->failed; it = next) {
        next = it->next;
        struct jobx_rec *r = container_of(it, struct jobx_rec, fnode);
        if (f == NULL || r->job->func == f) {
            fn(e, r->job);
            n++;
        }
    }
    return n;
}

size_t jobx_retry_all(struct engine *e, const struct func *f)
{
    return f != NULL ? each_failed(e, f, jobx_retry_job) : 0;
}

/* purge_one frees one dead-letter job. */
static void purge_one(struct engine *e, struct job *j)
{
    job_log(e, j, "purged from the dead-letter list");
    job_free(e, j);
}

size_t jobx_purge(struct engine *e, const struct func *f)
{
    return each_failed(e, f, purge_one);
}

size_t jobx_nfailed(const struct engine *e) { return e->jobx != NULL ? e->jobx->nfailed : 0; }
uint64_t jobx_retries(const struct engine *e) { return e->stats.retries; }
uint64_t jobx_dropped(const struct engine *e) { return e->stats.failed_dropped; }

int jobx_check(const struct engine *e, char *err, size_t errlen)
{
    const struct jobx *x = e->jobx;
    size_t ext = 0, failed = 0, waiting = 0, edges = 0;
    list_for_each(n, &e->func_list)
        func_of_anode(n)->check[PRIO_COUNT] = 0; /* reused: jobs parked */
    struct hmap_iter it;
    hmap_iter_init(&it, &e->jobs_by_id);
    for (const struct job *j; (j = hmap_iter_next(&it)) != NULL;) {
        if (j->state == JOB_FAILED || j->state == JOB_WAITING) {
            failed += j->state == JOB_FAILED;
            waiting += j->state == JOB_WAITING;
            j->func->check[PRIO_COUNT]++; /* (the running count is checked before this) */
        }
        if (!(j->flags & JOB_EXT)) {
            if (j->state == JOB_FAILED || j->state == JOB_WAITING)
                return engine_check_fail(err, errlen, "failed job %llu has no side state",
                                         (unsigned long long)j->id);
            continue;
        }
        ext++;
        const struct jobx_rec *r = jobx_rec_of(e, j);
        if (r == NULL)
            return engine_check_fail(err, errlen, "job %llu flagged JOB_EXT has no record",
                                     (unsigned long long)j->id);
        if ((j->state == JOB_FAILED) != list_linked(&r->fnode))
            return engine_check_fail(err, errlen, "job %llu: dead-letter link disagrees with state",
                                     (unsigned long long)j->id);
        if ((j->state == JOB_WAITING) != (r->nafter > 0))
            return engine_check_fail(err, errlen, "job %llu: waits for %u jobs in state %d",
                                     (unsigned long long)j->id, r->nafter, j->state);
        for (uint16_t i = 0; i < r->nafter; i++) {
            const struct jobx_dep *d = NULL;
            struct hmap_probe pr;
            for (d = hmap_first(&x->deps, hmap_mix64(r->after[i]), &pr); d != NULL;
                 d = hmap_next(&pr))
                if (d->pre == r->after[i] && d->r == r)
                    break;
            if (d == NULL)
                return engine_check_fail(err, errlen, "job %llu waits for %llu off the index",
                                         (unsigned long long)j->id,
                                         (unsigned long long)r->after[i]);
            edges++;
        }
    }
    size_t nwaiting = x != NULL ? x->nwaiting : 0, ndeps = x != NULL ? x->deps.count : 0;
    if (nwaiting != waiting)
        return engine_check_fail(err, errlen, "nwaiting=%zu but %zu waiting jobs", nwaiting,
                                 waiting);
    if (ndeps != edges)
        return engine_check_fail(err, errlen, "%zu dependency edges indexed, %zu listed", ndeps,
                                 edges);
    size_t nrecs = x != NULL ? x->recs.count : 0, nfailed = x != NULL ? x->nfailed : 0;
    if (nrecs != ext)
        return engine_check_fail(err, errlen, "%zu jobx records but %zu JOB_EXT jobs", nrecs, ext);
    if (nfailed != failed)
        return engine_check_fail(err, errlen, "nfailed=%zu but %zu failed jobs", nfailed, failed);
    size_t listed = 0;
    if (x != NULL)
        list_for_each(n, &x->failed) {
            const struct jobx_rec *r = container_of(n, struct jobx_rec, fnode);
            if (r->job->state != JOB_FAILED)
                return engine_check_fail(err, errlen, "job %llu on the dead-letter list not failed",
                                         (unsigned long long)r->job->id);
            listed++;
        }
    if (listed != nfailed)
        return engine_check_fail(err, errlen, "dead-letter list holds %zu, nfailed=%zu", listed,
                                 nfailed);
    list_for_each(n, &e->func_list) {
        const struct func *f = func_of_anode(n);
        if (!f->marker && f->parked != f->check[PRIO_COUNT])
            return engine_check_fail(err, errlen, "%s: parked=%u but %u jobs parked", f->name,
                                     f->parked, f->check[PRIO_COUNT]);
    }
    return 0;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* jobx: retry policies and the dead-letter list (jobx.h). */
#include "jobx.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
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
    list_node_init(&x->failed);
    x->rng = hmap_mix64(e->seed ^ 0x6a6f6278ull) | 1;
    e->jobx = x;
    e->ext.job_freed = jobx_job_freed;
    const struct config *c = e->cfg;
    for (int i = 0; c != NULL && i < c->nretry; i++) {
        const struct config_retry *r = &c->retry[i];
        if (jobx_policy_set(e, r->func, strlen(r->func), r->count, r->backoff, r->max) != 0)
            log_error("retry policy of %s not set: out of memory", r->func);
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
    for (void *r; (r = hmap_iter_next(&it)) != NULL;)
        free(r);
    hmap_free(&x->policies);
    hmap_free(&x->recs);
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
    size_t cap = e->cfg->max_failed_jobs;
    while (x->nfailed > cap) {
        struct jobx_rec *old = container_of(list_first(&x->failed), struct jobx_rec, fnode);
        e->stats.failed_dropped++;
        job_log(e, old->job, "dropped from the dead-letter list (--max-failed-jobs)");
        job_free(e, old->job); /* may be j itself when the cap is 0 */
    }
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
    free(r);
    j->flags &= (uint8_t)~JOB_EXT;
}

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
    size_t ext = 0, failed = 0;
    list_for_each(n, &e->func_list)
        func_of_anode(n)->check[PRIO_COUNT] = 0; /* reused: jobs parked */
    struct hmap_iter it;
    hmap_iter_init(&it, &e->jobs_by_id);
    for (const struct job *j; (j = hmap_iter_next(&it)) != NULL;) {
        if (j->state == JOB_FAILED) {
            failed++;
            j->func->check[PRIO_COUNT]++; /* (the running count is checked before this) */
        }
        if (!(j->flags & JOB_EXT)) {
            if (j->state == JOB_FAILED)
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
    }
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

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

static void drop_edges(struct jobx *x, struct jobx_rec *r);

static uint64_t name_hash(const struct engine *e, const char *name, size_t len)
{
    return hmap_hash_bytes(name, len, e->seed);
}

struct jobx *jobx_of(const struct engine *e) { return e->ext.jobx; }

/* hook installs (on != 0) or removes jobx's engine_ext hooks. Returns 0, or -1 when no slot is
 * left for its check. */
static int hook(struct engine *e, int on)
{
    if (!on) {
        engine_ext_leave(e, jobx_check, jobx_destroy);
    } else if (engine_ext_join(e, jobx_check, jobx_destroy) != 0) {
        log_error("jobx: no engine_ext slot left (ENGINE_EXT_SLOTS)");
        return -1;
    }
    e->ext.job_failed = on ? jobx_job_failed : NULL;
    e->ext.job_completed = on ? jobx_job_done : NULL;
    e->ext.job_left = on ? jobx_job_left : NULL;
    e->ext.job_gone = NULL; /* installed while some job waits for another (jobx_wait) */
    e->ext.job_freed = on ? jobx_job_freed : NULL;
    e->ext.job_revive = on ? jobx_retry_job : NULL; /* a submit joining a dead letter revives it */
    e->ext.wait_refused = on ? jobx_may_wait : NULL; /* a submit's after list: this module's */
    e->ext.job_wait = on ? jobx_wait : NULL;
    return 0;
}

struct jobx *jobx_get(struct engine *e)
{
    if (e->ext.jobx != NULL)
        return e->ext.jobx;
    struct jobx *x = calloc(1, sizeof *x);
    if (x == NULL)
        return NULL;
    if (hook(e, 1) != 0) {
        free(x);
        return NULL;
    }
    hmap_init(&x->policies);
    hmap_init(&x->recs);
    hmap_init(&x->deps);
    list_node_init(&x->failed);
    x->rng = hmap_mix64(e->seed ^ 0x6a6f6278ull) | 1;
    e->ext.jobx = x;
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
    struct jobx *x = e->ext.jobx;
    if (x == NULL)
        return;
    hook(e, 0);
    struct hmap_iter it;
    hmap_iter_init(&it, &x->policies);
    for (void *p; (p = hmap_iter_next(&it)) != NULL;)
        free(p);
    hmap_iter_init(&it, &x->recs);
    for (struct jobx_rec *r; (r = hmap_iter_next(&it)) != NULL;) {
        if (r->edges != &r->one)
            free(r->edges);
        jobx_clear_error(r);
        free(r);
    }
    hmap_iter_init(&it, &x->deps);
    for (void *d; (d = hmap_iter_next(&it)) != NULL;)
        free(d); /* (the edges are in the records) */
    hmap_free(&x->policies);
    hmap_free(&x->recs);
    hmap_free(&x->deps);
    free(x);
    e->ext.jobx = NULL;
}

const struct jobx_policy *jobx_policy_find(const struct engine *e, const char *name, size_t len)
{
    const struct jobx *x = jobx_of(e);
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
    const struct jobx *x = jobx_of(e);
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
    struct jobx *x = jobx_of(e);
    struct jobx_rec *r = jobx_rec_of(e, j);
    assert(r != NULL && j->state == JOB_LIMBO);
    j->state = JOB_FAILED;
    list_push_back(&x->failed, &r->fnode);
    x->nfailed++;
    j->func->parked++;
}

/* bury puts j (in limbo, with record r) in the dead-letter list for good: stored, and what
 * waits for it fails too; the oldest are dropped past --max-failed-jobs. */
static void bury(struct engine *e, struct jobx *x, struct job *j, struct jobx_rec *r)
{
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
}

int jobx_job_failed(struct engine *e, struct job *j, const char *err, size_t len)
{
    struct jobx *x = jobx_of(e);
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
    jobx_set_error(e, r, err, len);
    job_detach(e, j);
    job_set_status(e, j, 0, 0);
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
    bury(e, x, j, r);
    return 1;
}

int jobx_bury(struct engine *e, struct job *j, const char *err, size_t len)
{
    struct jobx *x = jobx_get(e);
    struct jobx_rec *r = x != NULL ? rec_get(e, x, j) : NULL;
    if (r == NULL)
        return -1;
    double now = engine_now(e);
    if (r->attempts == 0)
        r->first_failed = now;
    r->last_failed = now;
    jobx_set_error(e, r, err, len);
    job_detach(e, j);
    job_set_status(e, j, 0, 0);
    bury(e, x, j, r);
    return 0;
}

void jobx_unpark(struct engine *e, struct job *j)
{
    struct jobx_rec *r = jobx_rec_of(e, j);
    if (r != NULL)
        unpark(jobx_of(e), j, r);
    else
        j->state = JOB_LIMBO; /* (never: engine_check reports a failed job without a record) */
}

void jobx_job_left(struct engine *e, struct job *j, int state)
{
    if (state == JOB_FAILED)
        jobx_unpark(e, j);
    else
        jobx_unwait(e, j);
}

void jobx_job_freed(struct engine *e, struct job *j)
{
    struct jobx *x = jobx_of(e);
    struct jobx_rec *r = jobx_rec_of(e, j);
    if (r == NULL)
        return;
    if (j->state == JOB_FAILED)
        unpark(x, j, r);
    drop_edges(x, r); /* (a job that waits leaves through jobx_unwait first) */
    hmap_remove(&x->recs, r, hmap_mix64(j->id));
    jobx_clear_error(r);
    free(r);
    j->flags &= (uint8_t)~JOB_EXT;
}

/* ------------------------------------------------------------ failure text */

/* the common failure texts, kept without a copy */
static const char *const common_errors[] = {"WORK_FAIL", "CAN_DO_TIMEOUT", "JOB_TIMEOUT",
                                            "expired"};

void jobx_clear_error(struct jobx_rec *r)
{
    if (r->error_kind == JOBX_ERR_OWNED)
        free((char *)(uintptr_t)r->error.text);
    r->error.text = NULL;
    r->error_len = 0;
    r->error_kind = JOBX_ERR_NONE;
}

/* dep_of returns the job number of err[0..len) when it is exactly the text jobx_error makes for
 * a failed dependency of this server ("dependency H failed"), else 0. */
static uint64_t dep_of(const struct engine *e, const char *err, size_t len)
{
    static const char pre[] = "dependency ", post[] = " failed";
    size_t a = sizeof pre - 1, b = sizeof post - 1;
    if (len <= a + b || len >= JOB_HANDLE_BUF + a + b || memcmp(err, pre, a) != 0 ||
        memcmp(err + len - b, post, b) != 0)
        return 0;
    size_t i = len - b;
    uint64_t id = 0, scale = 1;
    while (i > a && err[i - 1] >= '0' && err[i - 1] <= '9' && scale <= UINT64_MAX / 10) {
        id += (uint64_t)(err[--i] - '0') * scale;
        scale *= 10;
    }
    char h[JOB_HANDLE_BUF];
    size_t hl = job_handle_id(e, id, h);
    return id != 0 && hl == len - a - b && memcmp(h, err + a, hl) == 0 ? id : 0;
}

void jobx_set_error(const struct engine *e, struct jobx_rec *r, const char *err, size_t len)
{
    jobx_clear_error(r);
    if (len > JOBX_ERROR_MAX)
        len = JOBX_ERROR_MAX;
    uint64_t dep = dep_of(e, err, len);
    if (dep != 0) { /* (restored from a row or a dump) */
        jobx_set_dep_error(r, dep);
        return;
    }
    for (size_t i = 0; i < sizeof common_errors / sizeof common_errors[0]; i++)
        if (strlen(common_errors[i]) == len && memcmp(common_errors[i], err, len) == 0) {
            r->error.text = common_errors[i];
            r->error_len = (uint16_t)len;
            r->error_kind = JOBX_ERR_STATIC;
            return;
        }
    if (len == 0)
        return;
    char *t = malloc(len);
    if (t == NULL)
        return; /* out of memory: the job fails all the same, without its text */
    memcpy(t, err, len);
    r->error.text = t;
    r->error_len = (uint16_t)len;
    r->error_kind = JOBX_ERR_OWNED;
}

void jobx_set_dep_error(struct jobx_rec *r, uint64_t dep)
{
    jobx_clear_error(r);
    r->error.dep = dep;
    r->error_kind = JOBX_ERR_DEP;
}

const char *jobx_error(const struct engine *e, const struct jobx_rec *r, char *buf, size_t *len)
{
    if (r->error_kind == JOBX_ERR_DEP) {
        char h[JOB_HANDLE_BUF];
        size_t hl = job_handle_id(e, r->error.dep, h);
        int n = snprintf(buf, JOBX_ERROR_BUF, "dependency %.*s failed", (int)hl, h);
        *len = n > 0 ? (size_t)n : 0;
        return buf;
    }
    *len = r->error_len;
    return r->error_kind == JOBX_ERR_NONE ? "" : r->error.text;
}

/* ------------------------------------------------------------ dependencies */

/* pre_find returns the entry of prerequisite number id (the jobs waiting for it), or NULL.
 * Keys are unique in jobx.deps: a lookup is O(1) however many jobs wait for one job. */
static struct jobx_pre *pre_find(const struct jobx *x, uint64_t id)
{
    struct hmap_probe pr;
    for (struct jobx_pre *p = hmap_first(&x->deps, hmap_mix64(id), &pr); p != NULL;
         p = hmap_next(&pr))
        if (p->id == id)
            return p;
    return NULL;
}

/* edge_drop takes edge ed off its prerequisite's list, freeing the entry with its last edge. */
static void edge_drop(struct jobx *x, struct jobx_edge *ed)
{
    struct jobx_pre *p = ed->pre;
    list_del(&ed->node);
    list_node_init(&ed->node);
    ed->pre = NULL;
    ed->r->nafter--;
    x->nedges--;
    if (--p->n == 0) {
        hmap_remove(&x->deps, p, hmap_mix64(p->id));
        free(p);
    }
}

/* drop_edges removes every edge of record r from the index and forgets them. O(r's edges). */
static void drop_edges(struct jobx *x, struct jobx_rec *r)
{
    for (uint16_t i = 0; i < r->nedges; i++)
        if (r->edges[i].pre != NULL)
            edge_drop(x, &r->edges[i]);
    if (r->edges != &r->one)
        free(r->edges);
    r->edges = NULL;
    r->nedges = r->nafter = 0;
}

size_t jobx_ndependents(const struct engine *e, uint64_t id)
{
    const struct jobx *x = jobx_of(e);
    const struct jobx_pre *p = x != NULL && x->deps.count > 0 ? pre_find(x, id) : NULL;
    return p != NULL ? p->n : 0;
}

const char *jobx_may_wait(const struct engine *e, const uint64_t *after, size_t n)
{
    if (n == 0)
        return NULL;
    if (jobx_nwaiting(e) >= e->cfg->max_waiting_jobs)
        return "WAITING_FULL Too+many+jobs+wait+for+others+(--max-waiting-jobs)";
    for (size_t i = 0; i < n; i++)
        if (jobx_ndependents(e, after[i]) >= e->cfg->max_dependents)
            return "TOO_MANY_DEPENDENTS Too+many+jobs+wait+for+that+job+(--max-dependents)";
    return NULL;
}

int jobx_wait(struct engine *e, struct job *j, const uint64_t *after, size_t n)
{
    struct jobx *x = jobx_get(e);
    if (x == NULL || n == 0 || n > JOBX_MAX_AFTER)
        return -1;
    uint64_t ids[JOBX_MAX_AFTER];
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        size_t k = 0;
        while (k < m && ids[k] != after[i])
            k++;
        if (k == m)
            ids[m++] = after[i];
    }
    struct jobx_rec *r = rec_get(e, x, j);
    if (r == NULL)
        return -1;
    r->edges = m == 1 ? &r->one : malloc(m * sizeof *r->edges);
    if (r->edges == NULL)
        goto fail;
    for (size_t i = 0; i < m; i++) {
        struct jobx_pre *p = pre_find(x, ids[i]);
        if (p == NULL) {
            p = malloc(sizeof *p);
            if (p == NULL)
                goto fail;
            p->id = ids[i];
            p->n = 0;
            list_node_init(&p->waiters);
            if (hmap_insert(&x->deps, p, hmap_mix64(p->id)) != 0) {
                free(p);
                goto fail;
            }
            e->ext.job_gone = jobx_job_gone; /* a job freed may fail what waits for it */
        }
        struct jobx_edge *ed = &r->edges[r->nedges++];
        ed->pre = p;
        ed->r = r;
        list_push_back(&p->waiters, &ed->node);
        p->n++;
        r->nafter++;
        x->nedges++;
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
    struct jobx *x = jobx_of(e);
    struct jobx_rec *r = jobx_rec_of(e, j);
    if (r != NULL)
        drop_edges(x, r);
    x->nwaiting--;
    j->func->parked--;
    j->state = JOB_LIMBO;
}

void jobx_job_done(struct engine *e, struct job *j)
{
    struct jobx *x = jobx_of(e);
    if (x == NULL || x->deps.count == 0)
        return;
    /* one waiter at a time, oldest first: the entry is freed with its last edge, and releasing
     * a job touches no other job's edge to j */
    for (struct jobx_pre *p; (p = pre_find(x, j->id)) != NULL;) {
        struct jobx_edge *ed = container_of(list_first(&p->waiters), struct jobx_edge, node);
        struct jobx_rec *r = ed->r;
        struct job *d = r->job;
        edge_drop(x, ed);
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
}

void jobx_job_gone(struct engine *e, struct job *j)
{
    struct jobx *x = jobx_of(e);
    if (x == NULL || x->deps.count == 0) {
        e->ext.job_gone = NULL; /* nothing waits: freeing a job costs no call until jobx_wait */
        return;
    }
    if (pre_find(x, j->id) == NULL)
        return;
    /* a work list of the jobs that failed, so a long chain takes no stack */
    uint64_t *work = NULL;
    size_t nwork = 0, cap = 0;
    if (array_grow((void **)&work, &cap, 1, sizeof *work, 16) != 0)
        return;
    work[nwork++] = j->id;
    while (nwork > 0 && x->deps.count > 0) {
        uint64_t id = work[--nwork];
        for (struct jobx_pre *p; (p = pre_find(x, id)) != NULL;) {
            struct jobx_edge *ed = container_of(list_first(&p->waiters), struct jobx_edge, node);
            struct jobx_rec *r = ed->r;
            struct job *d = r->job;
            jobx_unwait(e, d); /* drops ed, and p with its last edge */
            jobx_set_dep_error(r, id);
            r->first_failed = r->first_failed > 0 ? r->first_failed : engine_now(e);
            r->last_failed = engine_now(e);
            jobx_park(e, d);
            job_log(e, d, "a dependency failed: dead-letter list");
            if (x->persist != NULL)
                x->persist(e, d, 0);
            if (array_grow((void **)&work, &cap, nwork + 1, sizeof *work, 16) == 0)
                work[nwork++] = d->id;
        }
    }
    free(work);
    trim(e, x);
}

size_t jobx_nwaiting(const struct engine *e)
{
    const struct jobx *x = jobx_of(e);
    return x != NULL ? x->nwaiting : 0;
}

void jobx_retry_job(struct engine *e, struct job *j)
{
    struct jobx_rec *r = jobx_rec_of(e, j);
    if (r == NULL || j->state != JOB_FAILED)
        return;
    struct jobx *x = jobx_of(e);
    unpark(x, j, r);
    r->attempts = 0;
    jobx_clear_error(r);
    job_log(e, j, "retried from the dead-letter list");
    if (x->persist != NULL)
        x->persist(e, j, 0);
    func_push(e, j, 0);
}

/* each_failed calls fn on every dead-letter job of f (of every function when f is NULL), oldest
 * first, and returns how many. fn may free the job, and with it f: f is only compared, never
 * read, after the first call. */
static size_t each_failed(struct engine *e, const struct func *f,
                          void (*fn)(struct engine *e, struct job *j))
{
    struct jobx *x = jobx_of(e);
    size_t n = 0;
    if (x == NULL)
        return 0;
    list_for_each_safe(it, next, &x->failed) {
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

size_t jobx_nfailed(const struct engine *e)
{
    const struct jobx *x = jobx_of(e);
    return x != NULL ? x->nfailed : 0;
}
uint64_t jobx_retries(const struct engine *e) { return e->stats.retries; }
uint64_t jobx_dropped(const struct engine *e) { return e->stats.failed_dropped; }

int jobx_check(const struct engine *e, char *err, size_t errlen)
{
    const struct jobx *x = jobx_of(e);
    size_t ext = 0, failed = 0, waiting = 0, edges = 0;
    list_for_each(n, &e->func_list)
        func_of_anode(n)->check[PRIO_COUNT] = 0; /* reused: jobs parked */
    struct idtab_iter it;
    idtab_iter_init(&it, &e->jobs);
    for (const struct job *j; (j = idtab_iter_next(&it, NULL)) != NULL;) {
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
        if ((r->nedges == 1) != (r->edges == &r->one) && r->nedges > 0)
            return engine_check_fail(err, errlen, "job %llu: %u edges, inline %d",
                                     (unsigned long long)j->id, r->nedges, r->edges == &r->one);
        size_t live = 0;
        for (uint16_t i = 0; i < r->nedges; i++) {
            const struct jobx_edge *ed = &r->edges[i];
            if (ed->pre == NULL)
                continue;
            live++;
            if (ed->r != r || pre_find(x, ed->pre->id) != ed->pre || !list_linked(&ed->node))
                return engine_check_fail(err, errlen, "job %llu waits for %llu off the index",
                                         (unsigned long long)j->id,
                                         (unsigned long long)ed->pre->id);
        }
        if (live != r->nafter)
            return engine_check_fail(err, errlen, "job %llu: nafter=%u but %zu edges",
                                     (unsigned long long)j->id, r->nafter, live);
        edges += live;
    }
    size_t nwaiting = x != NULL ? x->nwaiting : 0, ndeps = x != NULL ? x->nedges : 0;
    if (nwaiting != waiting)
        return engine_check_fail(err, errlen, "nwaiting=%zu but %zu waiting jobs", nwaiting,
                                 waiting);
    if (ndeps != edges)
        return engine_check_fail(err, errlen, "%zu dependency edges counted, %zu listed", ndeps,
                                 edges);
    if (x != NULL) {
        /* every prerequisite's list holds its count of edges, each pointing back at it */
        size_t listed = 0;
        struct hmap_iter hi;
        hmap_iter_init(&hi, &x->deps);
        for (const struct jobx_pre *p; (p = hmap_iter_next(&hi)) != NULL;) {
            size_t k = 0;
            list_for_each(n, &p->waiters) {
                if (container_of(n, struct jobx_edge, node)->pre != p)
                    return engine_check_fail(err, errlen, "an edge of %llu points elsewhere",
                                             (unsigned long long)p->id);
                k++;
            }
            if (k != p->n || k == 0)
                return engine_check_fail(err, errlen, "%llu: n=%u but %zu edges listed",
                                         (unsigned long long)p->id, p->n, k);
            listed += k;
        }
        if (listed != edges)
            return engine_check_fail(err, errlen, "%zu dependency edges indexed, %zu listed",
                                     listed, edges);
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

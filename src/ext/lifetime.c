/* SPDX-License-Identifier: BSD-3-Clause */
/* lifetime: per-job timeouts and times to live (lifetime.h). */
#include "lifetime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "esc.h"
#include "func.h"
#include "job.h"
#include "jobx.h"
#include "log.h"
#include "meta_text.h"
#include "store.h"
#include "submit.h"

struct lifetime *lifetime_of(const struct engine *e) { return e->ext.lifetime; }

static uint64_t name_hash(const struct engine *e, const char *name, size_t len)
{
    return hmap_hash_bytes(name, len, e->seed ^ 0x6c696665ull);
}

struct life_rec *lifetime_rec_of(const struct engine *e, const struct job *j)
{
    const struct lifetime *l = lifetime_of(e);
    if (l == NULL || !(j->flags & JOB_LIFE))
        return NULL;
    struct hmap_probe pr;
    for (struct life_rec *r = hmap_first(&l->recs, hmap_mix64(j->id), &pr); r != NULL;
         r = hmap_next(&pr))
        if (r->job == j)
            return r;
    return NULL;
}

/* rec_get returns j's record, creating it (and flagging j JOB_LIFE); NULL out of memory. */
static struct life_rec *rec_get(struct engine *e, struct lifetime *l, struct job *j)
{
    struct life_rec *r = lifetime_rec_of(e, j);
    if (r != NULL)
        return r;
    if ((r = calloc(1, sizeof *r)) == NULL)
        return NULL;
    r->job = j;
    if (hmap_insert(&l->recs, r, hmap_mix64(j->id)) != 0) {
        free(r);
        return NULL;
    }
    j->flags |= JOB_LIFE;
    return r;
}

const struct life_default *lifetime_default_find(const struct engine *e, const char *name,
                                                 size_t len)
{
    const struct lifetime *l = lifetime_of(e);
    if (l == NULL || l->defaults.count == 0)
        return NULL;
    struct hmap_probe pr;
    for (struct life_default *d = hmap_first(&l->defaults, name_hash(e, name, len), &pr);
         d != NULL; d = hmap_next(&pr))
        if (d->name_len == len && memcmp(d->name, name, len) == 0)
            return d;
    return NULL;
}

int lifetime_default_set(struct engine *e, const char *name, size_t len, uint32_t timeout_ms,
                         uint32_t ttl_s)
{
    struct lifetime *l = lifetime_of(e);
    if (l == NULL)
        return -1;
    uint64_t h = name_hash(e, name, len);
    struct life_default *d = (struct life_default *)lifetime_default_find(e, name, len);
    if (timeout_ms == 0 && ttl_s == 0) {
        if (d != NULL) {
            hmap_remove(&l->defaults, d, h);
            free(d);
        }
    } else if (d == NULL) {
        if (l->defaults.count >= LIFETIME_MAX_DEFAULTS)
            return -2;
        if ((d = malloc(sizeof *d + len + 1)) == NULL)
            return -1;
        d->name_len = (uint32_t)len;
        memcpy(d->name, name, len);
        d->name[len] = '\0';
        if (hmap_insert(&l->defaults, d, h) != 0) {
            free(d);
            return -1;
        }
    }
    if (d != NULL && (timeout_ms != 0 || ttl_s != 0)) {
        d->timeout_ms = timeout_ms;
        d->ttl_s = ttl_s;
    }
    e->ext.life_defaults = l->defaults.count;
    return 0;
}

/* ------------------------------------------------------------ meta */

size_t lifetime_meta_write(const struct engine *e, const struct job *j, char *out, size_t n,
                           size_t cap)
{
    const struct life_rec *r = lifetime_rec_of(e, j);
    struct life_rec alone = {NULL, 0, 0, 0};
    if (r == NULL && (j->flags & JOB_LIFE) && j->state == JOB_READY && j->timer != HEAP_NONE) {
        alone.expires = e->timers.a[j->timer].at; /* a TTL alone: its heap entry (life_new) */
        r = &alone;
    }
    if (r == NULL || (r->timeout_ms == 0 && r->expires <= 0))
        return n;
    if (n > 0 && (out[n - 1] != '}' || n < 2))
        return n; /* not an object: left alone */
    size_t k = n > 0 ? n - 1 : 0; /* before the closing brace, or a new object */
    const char *sep = n > 2 ? "," : "";
    if (n == 0) {
        if (cap < 2)
            return 0;
        out[k++] = '{';
    }
    int w = 0;
    if (r->timeout_ms != 0 && k < cap) {
        w = snprintf(out + k, cap - k, "%s\"timeout_ms\":%u", sep, r->timeout_ms);
        k += w > 0 ? (size_t)w : 0;
        sep = ",";
    }
    if (r->expires > 0 && k < cap) {
        w = snprintf(out + k, cap - k, "%s\"expires_at\":%.3f", sep, r->expires);
        k += w > 0 ? (size_t)w : 0;
    }
    if (k + 1 >= cap)
        return 0;
    out[k++] = '}';
    return k;
}

int lifetime_meta_read(const char *meta, size_t len, uint32_t *timeout_ms, double *expires)
{
    const char *p, *end = meta + len;
    double t = (p = meta_find(meta, len, "timeout_ms")) != NULL ? meta_number(p, end) : 0;
    double x = (p = meta_find(meta, len, "expires_at")) != NULL ? meta_number(p, end) : 0;
    *timeout_ms = t >= 1 && t <= UINT32_MAX ? (uint32_t)t : 0;
    *expires = x > 0 && x < 1e12 ? x : 0;
    return *timeout_ms != 0 || *expires > 0;
}

/* meta is the engine_ext.job_meta hook: the wrapped hook's meta (jobx's), then lifetime's. */
static size_t meta(const struct engine *e, const struct job *j, char *out, size_t cap)
{
    const struct lifetime *l = lifetime_of(e);
    size_t n = l->meta_next != NULL ? l->meta_next(e, j, out, cap) : 0;
    return lifetime_meta_write(e, j, out, n, cap);
}

/* restored is the engine_ext.job_restored hook: lifetime's keys, then the wrapped hook. */
static int restored(struct engine *e, struct job *j, const char *m, size_t len, double when)
{
    struct lifetime *l = lifetime_of(e);
    uint32_t t;
    double x;
    if (lifetime_meta_read(m, len, &t, &x)) {
        struct life_rec *r = rec_get(e, l, j);
        if (r == NULL) {
            log_error("store: out of memory restoring the lifetime of job %llu",
                      (unsigned long long)j->id);
        } else {
            r->timeout_ms = t;
            r->expires = x; /* passed while the server was down: it expires once ready */
        }
    }
    return l->restored_next != NULL ? l->restored_next(e, j, m, len, when) : 0;
}

/* persist rewrites j's stored row (its due time 0) with its meta as it is now. */
static void persist(struct engine *e, struct job *j)
{
    char m[JOBX_ERROR_MAX * 6 + 512];
    size_t n = e->ext.job_meta != NULL ? e->ext.job_meta(e, j, m, sizeof m) : 0;
    if (store_update(e, j, 0, n ? m : NULL, n) != 0)
        log_error("store: out of memory recording the lifetime of job %llu",
                  (unsigned long long)j->id);
}

/* ------------------------------------------------------------ hooks */

/* queued_at_once says whether the job of rq goes straight to its ready queue (submit.c's
 * place): due now, waiting for nothing, not held for the store, not left in limbo. */
static int queued_at_once(const struct engine *e, const struct submit_req *rq, double now)
{
    return rq->due <= now && rq->nafter == 0 && !(rq->flags & SUBMIT_LIMBO) &&
           !(rq->background && e->durable.add != NULL);
}

static int life_new(struct engine *e, struct job *j, const struct submit_req *rq)
{
    struct lifetime *l = lifetime_of(e);
    uint32_t timeout = rq->life.timeout_ms, ttl = rq->life.ttl_s;
    if ((timeout == 0 || ttl == 0) && l->defaults.count > 0) {
        const struct life_default *d = lifetime_default_find(e, j->func->name,
                                                             j->func->name_len);
        if (d != NULL) {
            timeout = timeout != 0 ? timeout : d->timeout_ms;
            ttl = ttl != 0 ? ttl : d->ttl_s;
        }
    }
    if (timeout == 0 && ttl == 0)
        return 0;
    double now = engine_now(e), expires = ttl != 0 ? (rq->due > now ? rq->due : now) + ttl : 0;
    if (timeout == 0 && queued_at_once(e, rq, now)) {
        /* a TTL alone on a job queued now: its deadline is its timer heap entry, no record
         * (the submit cost of many jobs with TTLs); life_ready finds it armed */
        if (heap_push(&e->timers, &j->timer, expires) != 0)
            return -1;
        j->flags |= JOB_LIFE;
        return 0;
    }
    struct life_rec *r = rec_get(e, l, j);
    if (r == NULL)
        return -1;
    r->timeout_ms = timeout;
    r->expires = expires;
    return 0;
}

static void life_ready(struct engine *e, struct job *j)
{
    if (j->timer != HEAP_NONE)
        return; /* armed by life_new */
    const struct life_rec *r = lifetime_rec_of(e, j);
    if (r == NULL || r->expires <= 0)
        return;
    if (heap_push(&e->timers, &j->timer, r->expires) != 0)
        log_error("job %llu: out of memory arming its time to live: it does not expire",
                  (unsigned long long)j->id);
}

static uint32_t life_started(struct engine *e, struct job *j, uint32_t timeout_ms)
{
    struct life_rec *r = lifetime_rec_of(e, j);
    if (r == NULL)
        return timeout_ms;
    if (r->expires > 0) {
        r->expires = 0; /* started: its time to live is over */
        if (j->flags & JOB_STORED)
            persist(e, j); /* a restart does not expire it */
    }
    r->own = r->timeout_ms != 0 && (timeout_ms == 0 || r->timeout_ms < timeout_ms);
    return r->own ? r->timeout_ms : timeout_ms;
}

static int life_timed_out(struct engine *e, const struct job *j)
{
    const struct life_rec *r = lifetime_rec_of(e, j);
    if (r == NULL || !r->own)
        return 0;
    e->stats.job_timeouts++;
    return 1;
}

static void life_expired(struct engine *e, struct job *j)
{
    struct life_rec *r = lifetime_rec_of(e, j);
    job_detach(e, j); /* out of its queue and the timer heap */
    if (r != NULL)
        r->expires = 0; /* a retry from the dead-letter list runs it */
    e->stats.jobs_expired++;
    log_info("job %llu expired: no worker started it within its time to live",
             (unsigned long long)j->id);
    if (job_has_waiters(j)) {
        e->sink.job_failed(e, j); /* WORK_FAIL to its foreground clients */
        while (job_has_waiters(j))
            job_remove_waiter(j->waiters);
    }
    if (!(j->flags & JOB_BACKGROUND) || e->cfg->expired_drop) {
        job_log(e, j, "expired: dropped");
        job_free(e, j);
        return;
    }
    if (jobx_bury(e, j, "expired", 7) != 0) {
        log_error("job %llu: out of memory moving it to the dead-letter list: dropped",
                  (unsigned long long)j->id);
        job_free(e, j);
    }
}

static void life_freed(struct engine *e, struct job *j)
{
    if (j->timer != HEAP_NONE) /* freed in limbo after life_new armed it (a refused submit) */
        heap_remove(&e->timers, &j->timer);
    struct life_rec *r = lifetime_rec_of(e, j);
    if (r != NULL) {
        hmap_remove(&lifetime_of(e)->recs, r, hmap_mix64(j->id));
        free(r);
    }
    j->flags &= (uint8_t)~JOB_LIFE;
}

/* check (an engine_ext.check slot): every record is a live JOB_LIFE job's (a JOB_LIFE job
 * without one has a TTL alone, armed by life_new); a ready job is in the timer heap only while
 * its time to live runs. O(jobs). */
static int check(const struct engine *e, char *err, size_t errlen)
{
    const struct lifetime *l = lifetime_of(e);
    size_t n = 0;
    struct idtab_iter it;
    idtab_iter_init(&it, &e->jobs);
    for (const struct job *j; (j = idtab_iter_next(&it, NULL)) != NULL;) {
        const struct life_rec *r = lifetime_rec_of(e, j);
        n += r != NULL;
        if (j->state != JOB_READY || j->timer == HEAP_NONE)
            continue;
        if (!(j->flags & JOB_LIFE) || (r != NULL && r->expires <= 0))
            return engine_check_fail(err, errlen, "ready job %llu in the timer heap without a "
                                     "time to live", (unsigned long long)j->id);
    }
    if (n != l->recs.count)
        return engine_check_fail(err, errlen, "%zu lifetime records but %zu JOB_LIFE jobs",
                                 l->recs.count, n);
    return 0;
}

/* destroy (engine_ext.destroy, once the jobs are freed): frees the state, unhooks it. */
static void destroy(struct engine *e)
{
    struct lifetime *l = lifetime_of(e);
    if (l == NULL)
        return;
    engine_ext_leave(e, check, destroy);
    struct hmap_iter it;
    hmap_iter_init(&it, &l->recs);
    for (void *r; (r = hmap_iter_next(&it)) != NULL;)
        free(r);
    hmap_iter_init(&it, &l->defaults);
    for (void *d; (d = hmap_iter_next(&it)) != NULL;)
        free(d);
    hmap_free(&l->recs);
    hmap_free(&l->defaults);
    if (e->ext.job_meta == meta)
        e->ext.job_meta = l->meta_next;
    if (e->ext.job_restored == restored)
        e->ext.job_restored = l->restored_next;
    e->ext.life_new = NULL;
    e->ext.life_ready = NULL;
    e->ext.life_started = NULL;
    e->ext.life_expired = NULL;
    e->ext.life_timed_out = NULL;
    e->ext.life_freed = NULL;
    e->ext.life_defaults = 0;
    free(l);
    e->ext.lifetime = NULL;
}

/* load_defaults sets the defaults of --job-timeout and --job-ttl. */
static void load_defaults(struct engine *e, const struct config_life *v, int n, int ttl)
{
    for (int i = 0; i < n; i++) {
        size_t fl;
        char *fn = esc_decode_dup(v[i].func, strlen(v[i].func), &fl); /* %09 is a TAB */
        const struct life_default *d = fn != NULL ? lifetime_default_find(e, fn, fl) : NULL;
        uint32_t t = ttl ? (d != NULL ? d->timeout_ms : 0) : v[i].value;
        uint32_t s = ttl ? v[i].value : (d != NULL ? d->ttl_s : 0);
        if (fn != NULL && !func_name_ok(fn, fl))
            log_error("--job-%s of %s not set: the name has a NUL byte (%%00)",
                      ttl ? "ttl" : "timeout", v[i].func);
        else if (fn == NULL || lifetime_default_set(e, fn, fl, t, s) != 0)
            log_error("--job-%s of %s not set: out of memory", ttl ? "ttl" : "timeout",
                      v[i].func);
        free(fn);
    }
}

int lifetime_attach(struct engine *e)
{
    struct lifetime *l = lifetime_of(e);
    if (l == NULL) {
        if ((l = calloc(1, sizeof *l)) == NULL)
            return -1;
        if (engine_ext_join(e, check, destroy) != 0) {
            log_error("lifetime: no engine_ext slot left (ENGINE_EXT_SLOTS)");
            free(l);
            return -1;
        }
        hmap_init(&l->recs);
        hmap_init(&l->defaults);
        e->ext.lifetime = l;
        e->ext.life_new = life_new;
        e->ext.life_ready = life_ready;
        e->ext.life_started = life_started;
        e->ext.life_expired = life_expired;
        e->ext.life_timed_out = life_timed_out;
        e->ext.life_freed = life_freed;
        if (e->cfg != NULL) {
            load_defaults(e, e->cfg->job_timeout, e->cfg->njob_timeout, 0);
            load_defaults(e, e->cfg->job_ttl, e->cfg->njob_ttl, 1);
        }
    }
    if (e->ext.job_meta != meta) { /* wrap what is there (again, if it was set anew) */
        l->meta_next = e->ext.job_meta;
        e->ext.job_meta = meta;
    }
    if (e->ext.job_restored != restored) {
        l->restored_next = e->ext.job_restored;
        e->ext.job_restored = restored;
    }
    return 0;
}

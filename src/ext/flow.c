/* SPDX-License-Identifier: BSD-3-Clause */
/* flow: concurrency and rate limits, per-key limits with fair share, weights and pause
 * (flow.h, docs/FLOW-CONTROL.md).
 *
 * How a job is held back: a function with settings has a flow_func in func.flow. Whenever its
 * state changes (a job starts or stops, a token comes back, a setting changes), `regate`
 * computes which priorities may hand out a job and calls func_gate, which takes the function's
 * abilities out of the workers' ready rings (or puts them back and wakes a worker). So a worker
 * asking for work never sees a function at its limit, and no scan is ever made: a grab costs
 * what it costs without flow control.
 *
 * Keys: with a key limit the function's ready jobs are kept per key (flow_key.queue, FIFO),
 * and ff->ring[p] holds the keys that have ready jobs at p and may start one; a grab takes the
 * first job of the first key of the ring and moves that key to the back: keys take turns
 * (fair share), O(1). A key at its limit leaves the ring, and comes back when a job of it ends
 * or a token comes back. */
#include "flow.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "engine.h"
#include "esc.h"
#include "func.h"
#include "job.h"
#include "log.h"
#include "store.h"
#include "store_batch.h"
#include "worker.h"

/* is_default reports whether s sets nothing. */
static int is_default(const struct flow_settings *s)
{
    return s->concurrency == 0 && s->rate.count == 0 && s->key_concurrency == 0 &&
           s->key_rate.count == 0 && s->weight == 1 && !s->paused;
}

/* ------------------------------------------------------------ token buckets */

static double rate_per_s(const struct flow_rate *r) { return (double)r->count / r->unit; }

/* bucket_cap is a bucket's size: one second's worth of tokens, at least one. */
static double bucket_cap(const struct flow_rate *r)
{
    double c = rate_per_s(r);
    return c > 1 ? c : 1;
}

static void bucket_reset(struct flow_bucket *b, const struct flow_rate *r, double now)
{
    b->tokens = r->count ? bucket_cap(r) : 0;
    b->stamp = now;
}

/* bucket_fill adds the tokens that came back since the last fill. */
static void bucket_fill(struct flow_bucket *b, const struct flow_rate *r, double now)
{
    if (now > b->stamp) {
        b->tokens += (now - b->stamp) * rate_per_s(r);
        if (b->tokens > bucket_cap(r))
            b->tokens = bucket_cap(r);
    }
    b->stamp = now;
}

/* bucket_ok reports whether a start may take a token. */
static int bucket_ok(const struct flow_bucket *b) { return b->tokens >= 1 - 1e-9; }

/* bucket_of_pos returns the bucket whose heap position field is pos. */
static struct flow_bucket *bucket_of_pos(uint32_t *pos)
{
    return container_of(pos, struct flow_bucket, pos);
}

/* bucket_take_wait puts b (empty, not waiting) into x->due for when its next token comes. */
static void bucket_take_wait(struct flow *x, struct flow_bucket *b, const struct flow_rate *r,
                             double now)
{
    double at = now + (1 - b->tokens) / rate_per_s(r) + 1e-6;
    if (heap_push(&x->due, &b->pos, at) != 0)
        b->tokens = 1; /* out of memory: no wait rather than a wait nothing ends */
}

/* bucket_take takes a token for a start and, when the bucket is then empty, waits in x->due for
 * the next one. */
static void bucket_take(struct flow *x, struct flow_bucket *b, const struct flow_rate *r,
                        double now)
{
    bucket_fill(b, r, now);
    b->tokens -= 1;
    if (!bucket_ok(b) && b->pos == HEAP_NONE)
        bucket_take_wait(x, b, r, now);
}

/* ------------------------------------------------------------ state */

struct flow *flow_of(const struct engine *e) { return e->ext.flow; }

static struct flow_func *ff_of(const struct func *f) { return f->flow; }

/* blocked reports whether the whole function is held back (paused, at its concurrency limit,
 * out of tokens). */
static int blocked(const struct flow_func *ff)
{
    return ff->s.paused || (ff->s.concurrency && ff->f->running >= ff->s.concurrency) ||
           (ff->s.rate.count && !bucket_ok(&ff->bucket));
}

/* wanted_shut is the func.shut ff's state calls for. */
static uint8_t wanted_shut(const struct flow_func *ff)
{
    if (blocked(ff))
        return FUNC_SHUT_ALL;
    uint8_t shut = 0;
    if (ff->keyed)
        for (int p = 0; p < PRIO_COUNT; p++)
            if (list_empty(&ff->ring[p]))
                shut |= (uint8_t)(1u << p);
    return shut;
}

static void regate(struct engine *e, struct flow_func *ff) { func_gate(e, ff->f, wanted_shut(ff)); }

/* ------------------------------------------------------------ keys */

/* key_span returns the key of j: its unique up to the first separator (the whole unique
 * without one). */
static size_t key_span(const struct flow *x, const struct job *j, const char **key)
{
    const char *u = job_unique(j);
    const char *c = memchr(u, x->sep, j->unique_len);
    *key = u;
    return c != NULL ? (size_t)(c - u) : j->unique_len;
}

static uint64_t key_hash(const struct engine *e, const char *k, size_t len)
{
    return hmap_hash_bytes(k, len, e->seed ^ 0x6b6579u);
}

/* key_find returns ff's key k[0..len), creating it if create; NULL if absent or no memory. */
static struct flow_key *key_find(const struct engine *e, struct flow_func *ff, const char *k,
                                 size_t len, int create)
{
    uint64_t h = key_hash(e, k, len);
    struct hmap_probe pr;
    for (struct flow_key *y = hmap_first(&ff->keys, h, &pr); y != NULL; y = hmap_next(&pr))
        if (y->len == len && memcmp(y->name, k, len) == 0)
            return y;
    if (!create)
        return NULL;
    struct flow_key *y = calloc(1, sizeof *y + len + 1);
    if (y == NULL)
        return NULL;
    y->ff = ff;
    y->len = (uint32_t)len;
    memcpy(y->name, k, len);
    for (int p = 0; p < PRIO_COUNT; p++) {
        list_node_init(&y->queue[p]);
        list_node_init(&y->rnode[p]);
    }
    y->bucket.pos = HEAP_NONE;
    y->bucket.ff = ff;
    y->bucket.of_key = 1;
    bucket_reset(&y->bucket, &ff->s.key_rate, engine_now((struct engine *)e));
    if (hmap_insert(&ff->keys, y, h) != 0) {
        free(y);
        return NULL;
    }
    ff->nkeys++;
    return y;
}

/* key_of_job returns the key of j in ff (which is keyed). */
static struct flow_key *key_of_job(const struct engine *e, struct flow_func *ff,
                                   const struct job *j, int create)
{
    const char *k;
    size_t len = key_span(e->ext.flow, j, &k);
    return key_find(e, ff, k, len, create);
}

static int key_has_ready(const struct flow_key *y)
{
    return y->ready[0] + y->ready[1] + y->ready[2] > 0;
}

/* key_startable reports whether a job of key y may start now (its key limits). */
static int key_startable(const struct flow_func *ff, const struct flow_key *y)
{
    return (ff->s.key_concurrency == 0 || y->running < ff->s.key_concurrency) &&
           (ff->s.key_rate.count == 0 || bucket_ok(&y->bucket));
}

/* key_waiting reports whether y counts in keys_waiting: ready jobs held back by a key limit. */
static int key_waiting(const struct flow_func *ff, const struct flow_key *y)
{
    return key_has_ready(y) && !key_startable(ff, y);
}

static void key_relink(struct flow_func *ff, struct flow_key *y, int was);

static void key_free(struct engine *e, struct flow_func *ff, struct flow_key *y)
{
    struct flow *x = e->ext.flow;
    heap_remove(&x->due, &y->bucket.pos);
    for (int p = 0; p < PRIO_COUNT; p++)
        if (list_linked(&y->rnode[p])) {
            list_del(&y->rnode[p]);
            ff->nring--;
        }
    hmap_remove(&ff->keys, y, key_hash(e, y->name, y->len));
    ff->nkeys--;
    free(y);
}

/* key_sync puts y into the rings of the priorities where it may start a ready job and out of
 * the others, counts it as waiting or not (was: whether it counted before the change), and
 * frees it once it holds nothing. It does not regate. */
static void key_sync(struct engine *e, struct flow_func *ff, struct flow_key *y, int was)
{
    key_relink(ff, y, was);
    if (key_has_ready(y) || y->running > 0)
        return;
    const struct flow_rate *r = &ff->s.key_rate;
    if (r->count && y->bucket.pos == HEAP_NONE) {
        /* an idle key is freed once its bucket is full again (then a new one is the same) */
        double now = engine_now(e);
        bucket_fill(&y->bucket, r, now);
        if (y->bucket.tokens < bucket_cap(r) - 1e-9 &&
            heap_push(&((struct flow *)e->ext.flow)->due, &y->bucket.pos,
                      now + (bucket_cap(r) - y->bucket.tokens) / rate_per_s(r) + 1e-6) == 0)
            return;
    }
    if (y->bucket.pos == HEAP_NONE)
        key_free(e, ff, y);
}

/* key_relink is key_sync without the free. */
static void key_relink(struct flow_func *ff, struct flow_key *y, int was)
{
    int ok = key_startable(ff, y);
    for (int p = 0; p < PRIO_COUNT; p++) {
        int want = ok && y->ready[p] > 0;
        if (want && !list_linked(&y->rnode[p])) {
            list_push_back(&ff->ring[p], &y->rnode[p]);
            ff->nring++;
        } else if (!want && list_linked(&y->rnode[p])) {
            list_del(&y->rnode[p]);
            ff->nring--;
        }
    }
    ff->keys_waiting = ff->keys_waiting - (uint32_t)was + (uint32_t)key_waiting(ff, y);
}

/* key_link puts ready job j (JOB_READY) into its key's queue. Returns 0 or -1 (no memory). */
static int key_link(struct engine *e, struct flow_func *ff, struct job *j, int at_head)
{
    struct flow_key *y = key_of_job(e, ff, j, 1);
    if (y == NULL)
        return -1;
    int was = key_waiting(ff, y);
    if (at_head)
        list_push_front(&y->queue[j->prio], &j->qnode);
    else
        list_push_back(&y->queue[j->prio], &j->qnode);
    y->ready[j->prio]++;
    key_sync(e, ff, y, was);
    return 0;
}

/* keys_on moves ff's ready jobs into their keys' queues and counts the running ones per key
 * (a key limit was set): O(jobs). Returns 0 or -1 (no memory: ff stays unkeyed). */
static int keys_on(struct engine *e, struct flow_func *ff)
{
    hmap_init(&ff->keys);
    for (int p = 0; p < PRIO_COUNT; p++)
        list_node_init(&ff->ring[p]);
    ff->keyed = 1;
    ff->nkeys = ff->keys_waiting = ff->nring = 0;
    struct func *f = ff->f;
    struct idtab_iter it; /* the running ones first: their keys may be at the limit */
    idtab_iter_init(&it, &e->jobs);
    for (struct job *j; (j = idtab_iter_next(&it, NULL)) != NULL;) {
        if (j->state == JOB_RUNNING && j->func == f) {
            struct flow_key *y = key_of_job(e, ff, j, 1);
            if (y != NULL)
                y->running++;
        }
    }
    for (int p = 0; p < PRIO_COUNT; p++) {
        struct list_node *n;
        while ((n = list_first(&f->queue[p])) != NULL) {
            list_del(n);
            if (key_link(e, ff, job_of_qnode(n), 0) != 0)
                log_error("flow: out of memory keying the jobs of a function");
        }
    }
    return 0;
}

/* keys_off puts ff's keyed ready jobs back into the function's queues (key after key) and
 * forgets the keys. */
static void keys_off(struct engine *e, struct flow_func *ff)
{
    if (!ff->keyed)
        return;
    struct hmap_iter it;
    hmap_iter_init(&it, &ff->keys);
    for (struct flow_key *y; (y = hmap_iter_next(&it)) != NULL;) {
        for (int p = 0; p < PRIO_COUNT; p++) {
            struct list_node *n;
            while ((n = list_first(&y->queue[p])) != NULL) {
                list_del(n);
                list_push_back(&ff->f->queue[p], n);
            }
        }
        heap_remove(&((struct flow *)e->ext.flow)->due, &y->bucket.pos);
        free(y);
    }
    hmap_free(&ff->keys);
    ff->keyed = 0;
    ff->nkeys = ff->keys_waiting = ff->nring = 0;
    for (int p = 0; p < PRIO_COUNT; p++)
        list_node_init(&ff->ring[p]);
}

/* ------------------------------------------------------------ the core's hooks */

static int hook_push(struct engine *e, struct job *j, int at_head)
{
    struct flow_func *ff = ff_of(j->func);
    if (!ff->keyed)
        return 0;
    if (key_link(e, ff, j, at_head) != 0) {
        log_error("flow: out of memory for a key: the job queues without its key");
        return 0;
    }
    regate(e, ff);
    return 1;
}

static int hook_unlink(struct engine *e, struct job *j)
{
    struct flow_func *ff = ff_of(j->func);
    if (!ff->keyed)
        return 0;
    struct flow_key *y = key_of_job(e, ff, j, 0);
    if (y == NULL || !list_linked(&j->qnode))
        return 0; /* (queued without its key: out of memory) */
    int was = key_waiting(ff, y);
    list_del(&j->qnode);
    y->ready[j->prio]--;
    key_sync(e, ff, y, was);
    regate(e, ff);
    return 1;
}

static struct job *hook_first(struct engine *e, struct func *f, int p)
{
    (void)e;
    struct flow_func *ff = ff_of(f);
    if (!ff->keyed)
        return NULL;
    struct list_node *n = list_first(&ff->ring[p]);
    if (n == NULL)
        return NULL;
    struct flow_key *y = container_of(n, struct flow_key, rnode[p]);
    list_rotate(&ff->ring[p]); /* the next grab starts with the next key */
    return job_of_qnode(list_first(&y->queue[p]));
}

static void hook_started(struct engine *e, struct job *j)
{
    struct flow *x = e->ext.flow;
    struct flow_func *ff = ff_of(j->func);
    double now = engine_now(e);
    if (ff->s.concurrency && ff->f->running > ff->s.concurrency && ff->f->running > ff->over)
        ff->over = ff->f->running; /* only a late result taken back (worker_reclaim) */
    if (ff->s.rate.count)
        bucket_take(x, &ff->bucket, &ff->s.rate, now);
    if (ff->keyed) {
        struct flow_key *y = key_of_job(e, ff, j, 1);
        if (y != NULL) {
            int was = key_waiting(ff, y);
            y->running++;
            if (ff->s.key_rate.count)
                bucket_take(x, &y->bucket, &ff->s.key_rate, now);
            key_sync(e, ff, y, was);
        }
    }
    regate(e, ff);
}

static void hook_stopped(struct engine *e, struct job *j)
{
    struct flow_func *ff = ff_of(j->func);
    if (ff->over > ff->f->running)
        ff->over = ff->f->running > ff->s.concurrency ? ff->f->running : 0;
    if (ff->keyed) {
        struct flow_key *y = key_of_job(e, ff, j, 0);
        if (y != NULL && y->running > 0) {
            int was = key_waiting(ff, y);
            y->running--;
            key_sync(e, ff, y, was);
        }
    }
    regate(e, ff);
}

static uint32_t hook_room(struct engine *e, const struct func *f)
{
    const struct flow_func *ff = ff_of(f);
    if (ff->s.paused)
        return 0;
    uint32_t room = UINT32_MAX;
    if (ff->s.concurrency)
        room = f->running < ff->s.concurrency ? ff->s.concurrency - f->running : 0;
    if (ff->s.rate.count) {
        struct flow_bucket b = ff->bucket;
        bucket_fill(&b, &ff->s.rate, engine_now(e));
        uint32_t t = b.tokens >= 1 ? (uint32_t)(b.tokens + 1e-9) : 0;
        room = t < room ? t : room;
    }
    if (ff->keyed && ff->nring < room)
        room = ff->nring; /* at least one each (a woken worker's grab wakes the next) */
    return room;
}

static double hook_timer_next(const struct engine *e)
{
    const struct flow *x = e->ext.flow;
    double at;
    if (x == NULL || heap_top(&x->due, &at) == NULL)
        return -1;
    return at;
}

static void hook_timer_run(struct engine *e, double now)
{
    struct flow *x = e->ext.flow;
    uint32_t *pos;
    double at;
    while ((pos = heap_top(&x->due, &at)) != NULL && at <= now) {
        heap_remove(&x->due, pos);
        struct flow_bucket *b = bucket_of_pos(pos);
        if (!b->of_key) {
            bucket_fill(b, &b->ff->s.rate, now);
            if (!bucket_ok(b))
                bucket_take_wait(x, b, &b->ff->s.rate, now);
            regate(e, b->ff);
            continue;
        }
        struct flow_key *y = container_of(b, struct flow_key, bucket);
        struct flow_func *ff = y->ff;
        int was = key_waiting(ff, y);
        bucket_fill(b, &ff->s.key_rate, now);
        if (!bucket_ok(b))
            bucket_take_wait(x, b, &ff->s.key_rate, now);
        key_sync(e, ff, y, was);
        regate(e, ff);
    }
}

/* ------------------------------------------------------------ settings */

/* persist writes name's settings s to the store (deletes them when default). */
static int persist(struct engine *e, const char *name, size_t len, const struct flow_settings *s)
{
    if (((struct flow *)e->ext.flow)->restoring)
        return 0; /* (a replayed record is the stored one) */
    if (is_default(s))
        return store_record_del(e, STORE_REC_FLOW, name, len);
    char v[256];
    size_t n = flow_format_spec(s, v, sizeof v);
    return store_record_put(e, STORE_REC_FLOW, name, len, v, n);
}

/* ff_new gives f flow state (settings at their defaults). Returns it or NULL (no memory). */
static struct flow_func *ff_new(struct engine *e, struct func *f)
{
    struct flow *x = e->ext.flow;
    struct flow_func *ff = calloc(1, sizeof *ff);
    if (ff == NULL)
        return NULL;
    ff->f = f;
    flow_defaults(&ff->s);
    ff->bucket.pos = HEAP_NONE;
    ff->bucket.ff = ff;
    for (int p = 0; p < PRIO_COUNT; p++)
        list_node_init(&ff->ring[p]);
    list_push_back(&x->funcs, &ff->node);
    x->nfuncs++;
    f->flow = ff;
    return ff;
}

/* ff_free takes f's flow state away: its jobs back in its queues, nothing held back. */
static void ff_free(struct engine *e, struct flow_func *ff)
{
    struct flow *x = e->ext.flow;
    struct func *f = ff->f;
    keys_off(e, ff);
    func_gate(e, f, 0);
    f->flow = NULL;
    f->weight = 0;
    heap_remove(&x->due, &ff->bucket.pos);
    list_del(&ff->node);
    x->nfuncs--;
    free(ff);
    func_release(e, f);
}

/* apply makes s ff's settings and holds back or lets go what they say. */
static void apply(struct engine *e, struct flow_func *ff, const struct flow_settings *s)
{
    struct flow *x = e->ext.flow;
    struct flow_settings old = ff->s;
    double now = engine_now(e);
    ff->s = *s;
    ff->f->weight = s->weight > 1 ? s->weight : 0;
    if (old.rate.count != s->rate.count || old.rate.unit != s->rate.unit) {
        heap_remove(&x->due, &ff->bucket.pos);
        bucket_reset(&ff->bucket, &s->rate, now);
    }
    if (old.concurrency != s->concurrency)
        ff->over = s->concurrency && ff->f->running > s->concurrency ? ff->f->running : 0;
    int keyed = s->key_concurrency || s->key_rate.count;
    if (ff->keyed && !keyed)
        keys_off(e, ff);
    else if (!ff->keyed && keyed)
        keys_on(e, ff);
    else if (keyed) {
        int new_rate = old.key_rate.count != s->key_rate.count ||
                       old.key_rate.unit != s->key_rate.unit;
        struct hmap_iter it;
        hmap_iter_init(&it, &ff->keys);
        ff->keys_waiting = 0; /* every key counted again under the new limits */
        for (struct flow_key *y; (y = hmap_iter_next(&it)) != NULL;) {
            if (new_rate) {
                heap_remove(&x->due, &y->bucket.pos);
                bucket_reset(&y->bucket, &s->key_rate, now);
            }
            key_relink(ff, y, 0); /* (not freed while the table is walked) */
        }
    }
    regate(e, ff);
}

int flow_set(struct engine *e, const char *name, size_t len, const struct flow_settings *s)
{
    struct flow *x = e->ext.flow;
    struct func *f = func_get(e, name, len, 0);
    if (f == NULL && is_default(s))
        return persist(e, name, len, s) != 0 ? -1 : 0;
    if (f == NULL || f->flow == NULL) {
        if (x->nfuncs >= FLOW_MAX_FUNCS)
            return -2;
        f = func_get(e, name, len, 1);
        if (f == NULL)
            return func_name_ok(name, len) && !func_full(e) ? -1 : -3;
        if (ff_new(e, f) == NULL) {
            func_release(e, f);
            return -1;
        }
    }
    struct flow_func *ff = f->flow;
    if (is_default(s))
        ff_free(e, ff);
    else
        apply(e, ff, s);
    return persist(e, name, len, s) != 0 ? -1 : 0;
}

int flow_get(const struct engine *e, const char *name, size_t len, struct flow_settings *s)
{
    struct func *f = func_get((struct engine *)e, name, len, 0);
    if (f == NULL || f->flow == NULL) {
        flow_defaults(s);
        return 0;
    }
    *s = ff_of(f)->s;
    return 1;
}

void flow_held(const struct flow_func *ff, uint32_t held[4])
{
    const struct func *f = ff->f;
    uint32_t ready = func_ready(f);
    memset(held, 0, 4 * sizeof held[0]);
    if (ff->s.paused)
        held[0] = ready;
    else if (ff->s.concurrency && f->running >= ff->s.concurrency)
        held[1] = ready;
    else if (ff->s.rate.count && !bucket_ok(&ff->bucket))
        held[2] = ready;
    else if (ff->keyed && ff->keys_waiting > 0) {
        struct hmap_iter it; /* O(keys): for the listings and counters, never a grab */
        hmap_iter_init(&it, &ff->keys);
        for (const struct flow_key *y; (y = hmap_iter_next(&it)) != NULL;)
            if (key_waiting(ff, y))
                held[3] += y->ready[0] + y->ready[1] + y->ready[2];
    }
}

/* ------------------------------------------------------------ records, config */

/* config_limits applies the --limit options naming the function name[0..len) onto *s: the
 * limits they name replace all four of s (pause and weight stay unless named). Returns 1 when
 * one named it, 0 when none did, -1 out of memory or a bad option (err). */
static int config_limits(const struct engine *e, const char *name, size_t len,
                         struct flow_settings *s, char *err, size_t errlen)
{
    const struct config *c = e->cfg;
    int found = 0;
    for (int i = 0; i < c->nlimits; i++) {
        const char *arg = c->limits[i], *colon = strrchr(arg, ':');
        if (colon == NULL)
            continue; /* (flow_opt.c checked the form) */
        size_t fl;
        char *fn = esc_decode_dup(arg, (size_t)(colon - arg), &fl);
        if (fn == NULL) {
            snprintf(err, errlen, "--limit '%.60s': out of memory", arg);
            return -1;
        }
        int same = fl == len && memcmp(fn, name, len) == 0;
        free(fn);
        if (!same)
            continue;
        if (!found) {
            s->concurrency = s->key_concurrency = 0;
            s->rate.count = s->key_rate.count = 0;
        }
        found = 1;
        if (flow_parse_spec(colon + 1, strlen(colon + 1), s, err, errlen) != 0)
            return -1;
    }
    return found;
}

static int record_restored(struct engine *e, const struct store_record *r, char *err,
                           size_t errlen)
{
    struct flow_settings s;
    flow_defaults(&s);
    if (r->value == NULL || r->key_len == 0 || !func_name_ok(r->key, r->key_len)) {
        snprintf(err, errlen, "not a flow control record");
        return -1;
    }
    if (flow_parse_spec(r->value, r->value_len, &s, err, errlen) != 0)
        return -1;
    /* a --limit of the function wins over its stored limits (the replay ends after start) */
    if (config_limits(e, r->key, r->key_len, &s, err, errlen) < 0)
        return -1;
    struct flow *x = e->ext.flow;
    x->restoring = 1;
    int rc = flow_set(e, r->key, r->key_len, &s);
    x->restoring = 0;
    if (rc != 0) {
        snprintf(err, errlen, "cannot apply flow control settings (%s)",
                 rc == -2 ? "too many functions with settings" : "no memory or no function");
        return -1;
    }
    return 0;
}

static void record_each(const struct engine *e,
                        void (*cb)(void *ctx, const struct store_record *r), void *ctx)
{
    const struct flow *x = e->ext.flow;
    if (x == NULL)
        return;
    list_for_each(n, &x->funcs) {
        const struct flow_func *ff = container_of(n, struct flow_func, node);
        char v[256];
        size_t vl = flow_format_spec(&ff->s, v, sizeof v);
        struct store_record r = {STORE_REC_FLOW, ff->f->name, ff->f->name_len, v, vl};
        cb(ctx, &r);
    }
}

int flow_apply_config(struct engine *e, char *err, size_t errlen)
{
    const struct config *c = e->cfg;
    err[0] = '\0';
    for (int i = 0; i < c->nlimits; i++) {
        const char *arg = c->limits[i], *colon = strrchr(arg, ':');
        if (colon == NULL)
            continue;
        size_t fl;
        char *name = esc_decode_dup(arg, (size_t)(colon - arg), &fl);
        if (name == NULL) {
            snprintf(err, errlen, "--limit '%.60s': out of memory", arg);
            return -1;
        }
        struct flow_settings s;
        flow_get(e, name, fl, &s);
        int rc = config_limits(e, name, fl, &s, err, errlen) < 0 ? -1 : 0;
        if (rc == 0)
            rc = flow_set(e, name, fl, &s);
        free(name);
        if (rc != 0) {
            if (err[0] == '\0')
                snprintf(err, errlen, "--limit '%.60s': cannot apply it (%s)", arg,
                         rc == -3 ? "no function can be made" : "out of memory or store");
            return -1;
        }
    }
    engine_drain_ready(e);
    return 0;
}

/* ------------------------------------------------------------ checks, teardown */

/* check_keys verifies ff's keys against its function's ready jobs. */
static int check_keys(const struct engine *e, const struct flow_func *ff, char *err,
                      size_t errlen)
{
    const struct func *f = ff->f;
    uint32_t ready[PRIO_COUNT] = {0}, running = 0, waiting = 0, ring = 0, n = 0;
    struct hmap_iter it;
    hmap_iter_init(&it, &ff->keys);
    for (const struct flow_key *y; (y = hmap_iter_next(&it)) != NULL; n++) {
        for (int p = 0; p < PRIO_COUNT; p++) {
            uint32_t k = 0;
            list_for_each(q, &y->queue[p]) {
                const struct job *j = job_of_qnode(q);
                const char *kn;
                size_t kl = key_span(e->ext.flow, j, &kn);
                if (j->state != JOB_READY || j->func != f || j->prio != p || kl != y->len ||
                    memcmp(kn, y->name, kl) != 0)
                    return engine_check_fail(err, errlen, "flow: %s: job %llu in the wrong key "
                                             "queue", f->name, (unsigned long long)j->id);
                k++;
            }
            if (k != y->ready[p])
                return engine_check_fail(err, errlen, "flow: %s: key ready count", f->name);
            ready[p] += k;
            if (list_linked(&y->rnode[p]) != (k > 0 && key_startable(ff, y)))
                return engine_check_fail(err, errlen, "flow: %s: key ring link", f->name);
            ring += list_linked(&y->rnode[p]);
        }
        running += y->running;
        waiting += (uint32_t)key_waiting(ff, y);
    }
    for (int p = 0; p < PRIO_COUNT; p++)
        if (ready[p] != f->ready[p] || !list_empty(&f->queue[p]))
            return engine_check_fail(err, errlen, "flow: %s: keys hold %u ready at %d, the "
                                     "function %u", f->name, ready[p], p, f->ready[p]);
    if (running != f->running || waiting != ff->keys_waiting || ring != ff->nring ||
        n != ff->nkeys)
        return engine_check_fail(err, errlen, "flow: %s: key counts", f->name);
    return 0;
}

static int flow_check(const struct engine *e, char *err, size_t errlen)
{
    const struct flow *x = e->ext.flow;
    if (x == NULL)
        return 0;
    size_t n = 0;
    list_for_each(it, &x->funcs) {
        const struct flow_func *ff = container_of(it, struct flow_func, node);
        const struct func *f = ff->f;
        n++;
        if (f->flow != ff || f->shut != wanted_shut(ff))
            return engine_check_fail(err, errlen, "flow: %s: held back %#x, its limits say %#x",
                                     f->name, f->shut, wanted_shut(ff));
        if (ff->s.concurrency && f->running > ff->s.concurrency && f->running > ff->over)
            return engine_check_fail(err, errlen, "flow: %s: %u running over the limit %u",
                                     f->name, f->running, ff->s.concurrency);
        if (ff->keyed && check_keys(e, ff, err, errlen) != 0)
            return -1;
    }
    if (n != x->nfuncs)
        return engine_check_fail(err, errlen, "flow: function count");
    return 0;
}

static void flow_destroy(struct engine *e)
{
    struct flow *x = e->ext.flow;
    if (x == NULL)
        return;
    struct list_node *n;
    while ((n = list_first(&x->funcs)) != NULL) {
        struct flow_func *ff = container_of(n, struct flow_func, node);
        if (ff->keyed) {
            struct hmap_iter it;
            hmap_iter_init(&it, &ff->keys);
            for (struct flow_key *y; (y = hmap_iter_next(&it)) != NULL;)
                free(y);
            hmap_free(&ff->keys);
        }
        ff->f->flow = NULL;
        list_del(n);
        free(ff);
    }
    heap_free(&x->due);
    free(x);
    e->ext.flow = NULL;
}

int flow_attach(struct engine *e)
{
    if (e->ext.flow != NULL)
        return 0;
    struct flow *x = calloc(1, sizeof *x);
    if (x == NULL)
        return -1;
    list_node_init(&x->funcs);
    x->sep = e->cfg->limit_key_separator != 0 ? e->cfg->limit_key_separator : ':';
    e->ext.flow = x;
    if (engine_ext_join(e, flow_check, flow_destroy) != 0) {
        free(x);
        e->ext.flow = NULL;
        return -1;
    }
    e->ext.flow_push = hook_push;
    e->ext.flow_unlink = hook_unlink;
    e->ext.flow_first = hook_first;
    e->ext.flow_started = hook_started;
    e->ext.flow_stopped = hook_stopped;
    e->ext.flow_room = hook_room;
    e->ext.timer_next = hook_timer_next;
    e->ext.timer_run = hook_timer_run;
    e->ext.record_restored[STORE_REC_FLOW] = record_restored;
    e->ext.record_each[STORE_REC_FLOW] = record_each;
    return 0;
}

size_t flow_marks(const struct engine *e, const struct func *f, const char **marks, size_t max)
{
    struct flow_settings s;
    if (f->flow == NULL || !flow_get(e, f->name, f->name_len, &s))
        return 0;
    size_t n = 0;
    if (s.paused && n < max)
        marks[n++] = "paused";
    if ((s.concurrency || s.key_concurrency || s.rate.count || s.key_rate.count) && n < max)
        marks[n++] = "limited";
    return n;
}

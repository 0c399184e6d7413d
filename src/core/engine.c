/* SPDX-License-Identifier: BSD-3-Clause */
/* engine: the server's pure state and the seam to the I/O shell. */
#include "engine.h"

#include "list.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "func.h"
#include "job.h"
#include "worker.h"

/* the sink until engine_set_sink: tells nobody anything */
static void nop_peer(struct engine *e, struct peer *p)
{
    (void)e;
    (void)p;
}
static void nop_assign(struct engine *e, struct peer *p, uint32_t grab, const struct job *j)
{
    (void)e;
    (void)p;
    (void)grab;
    (void)j;
}
static void nop_job(struct engine *e, const struct job *j)
{
    (void)e;
    (void)j;
}
static int nop_closing(const struct engine *e, const struct peer *p)
{
    (void)e;
    (void)p;
    return 0;
}
static const struct engine_sink nop_sink = {nop_peer, nop_assign, nop_peer, nop_job, nop_closing,
                                            nop_job, NULL};

void engine_set_sink(struct engine *e, const struct engine_sink *sink) { e->sink = *sink; }

int engine_init(struct engine *e, const struct config *cfg, const struct engine_ops *ops,
                void *shell)
{
    memset(e, 0, sizeof *e);
    e->cfg = cfg;
    e->ops = *ops;
    e->shell = shell;
    e->sink = nop_sink;
    list_node_init(&e->ready);
    list_node_init(&e->held);
    list_node_init(&e->woken);
    list_node_init(&e->peers);
    list_node_init(&e->func_list);
    list_node_init(&e->func_idle);
    list_node_init(&e->listings);
    list_node_init(&e->worker_listings);
    if (cfg->job_handle_prefix != NULL) {
        snprintf(e->prefix, sizeof e->prefix, "%s", cfg->job_handle_prefix);
    } else {
        char host[256] = "localhost";
        gethostname(host, sizeof host - 1);
        host[sizeof host - 1] = '\0';
        snprintf(e->prefix, sizeof e->prefix, "H:%.38s", host);
    }
    e->prefix_len = strlen(e->prefix);
    hmap_init(&e->funcs);
    hmap_init(&e->abilities);
    idtab_init(&e->jobs);
    hmap_init(&e->jobs_by_unique);
    hmap_init(&e->job_status);
    hmap_init(&e->unique_rings);
    /* handle numbers start from the clock (2^24 per second of the epoch), so a restarted server
     * never hands out a number an earlier run used unless it outran 16M jobs a second */
    e->next_id = ((uint64_t)time(NULL) << 24) | 1;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    e->seed = hmap_mix64((uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32));
    if (e->ops.now != NULL)
        e->started = e->ops.now(e);
    return 0;
}

void engine_destroy(struct engine *e)
{
    e->destroying = 1;
    for (struct job *j; (j = idtab_first(&e->jobs)) != NULL;) {
        j->flags &= (uint8_t)~JOB_STORED; /* shutting down is not completion */
        job_free(e, j);
    }
    for (int i = ENGINE_EXT_SLOTS - 1; i >= 0; i--) /* the features, last attached first */
        if (e->ext.destroy[i] != NULL)
            e->ext.destroy[i](e);
    idtab_free(&e->jobs);
    hmap_free(&e->jobs_by_unique);
    hmap_free(&e->job_status);
    hmap_free(&e->unique_rings);
    heap_free(&e->timers);
    func_free_all(e);
    hmap_free(&e->abilities);
}

double engine_now(struct engine *e) { return e->ops.now(e); }

double engine_next_timer(const struct engine *e)
{
    double at;
    if (!heap_top(&e->timers, &at))
        at = -1.0;
    const struct list_node *n = list_first(&e->held);
    if (n != NULL && (at < 0 || worker_of_held(n)->held_until < at))
        at = worker_of_held(n)->held_until;
    double ext = e->ext.timer_next != NULL ? e->ext.timer_next(e) : -1.0;
    if (ext >= 0 && (at < 0 || ext < at))
        at = ext;
    n = list_first(&e->woken);
    if (n != NULL) {
        double wake_at = container_of(n, struct worker, wnode)->woken_at + WORKER_WAKE_GRACE;
        if (at < 0 || wake_at < at)
            at = wake_at;
    }
    return at;
}

void engine_run_timers(struct engine *e, double now)
{
    uint32_t *pos;
    double at;
    while ((pos = heap_top(&e->timers, &at)) != NULL && at <= now) {
        struct job *j = job_from_timer(pos);
        if (j->state == JOB_FUTURE) {
            job_detach(e, j);
            func_push(e, j, 0);
        } else if (j->state == JOB_READY) { /* its time to live passed (JOB_LIFE) */
            if (e->ext.life_expired != NULL)
                e->ext.life_expired(e, j);
            else
                heap_remove(&e->timers, &j->timer);
        } else {
            worker_job_timeout(e, j);
        }
    }
    struct list_node *n;
    while ((n = list_first(&e->held)) != NULL && worker_of_held(n)->held_until <= now)
        worker_grab_release(e, worker_of_held(n));
    if (e->ext.timer_run != NULL)
        e->ext.timer_run(e, now);
    worker_expire_wakes(e, now);
    engine_drain_ready(e);
}

void engine_release_grabs(struct engine *e)
{
    struct list_node *n;
    while ((n = list_first(&e->held)) != NULL)
        worker_grab_release(e, worker_of_held(n));
}

void engine_drain_ready(struct engine *e)
{
    struct list_node *n;
    while ((n = list_first(&e->ready)) != NULL) {
        struct func *f = container_of(n, struct func, wake);
        /* one pass does it by default (the count of ready jobs is read again each time); under
         * --worker-wakeup=N each func_wake call woke up to N, so as many passes */
        uint32_t passes = e->cfg->worker_wakeup < 0 ? 1 : f->wakes;
        list_del(n);
        f->wakes = 0;
        while (passes-- > 0)
            func_wake_now(e, f); /* never frees f */
    }
}

void engine_begin_shutdown(struct engine *e)
{
    e->shutting_down = 1;
    engine_release_grabs(e);
}

void engine_stats_get(const struct engine *e, struct engine_snapshot *st)
{
    memset(st, 0, sizeof *st);
    st->stats = e->stats;
    st->jobs = e->njobs;
    st->running = e->nrunning;
    list_for_each(n, &e->func_list) {
        const struct func *f = func_of_anode(n);
        if (!f->marker)
            for (int p = 0; p < PRIO_COUNT && p < PRIO_SNAPSHOT; p++)
                st->queued[p] += f->queued[p];
    }
    st->functions = e->funcs.count;
    st->workers = e->nworkers;
    st->abilities = e->abilities.count;
    list_for_each(n, &e->held)
        st->held++;
    st->peers = e->npeers;
    st->buffered = e->buffered;
    st->buffered_peak = e->buffered_peak;
    memcpy(st->conn_now, e->conn_now, sizeof st->conn_now);
    st->job_bytes = e->job_bytes;
    st->started = e->started;
}

void engine_stats_reset(struct engine *e)
{
    memset(&e->stats, 0, sizeof e->stats);
    list_for_each(n, &e->func_list) {
        struct func *f = func_of_anode(n);
        if (!f->marker)
            func_stats_reset(f);
    }
}

int engine_check_fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}


/* check_func verifies one function's queues and counters against the counts of its jobs that
 * engine_check gathered in f->check. */
static int check_func(const struct func *f, char *err, size_t errlen)
{
    for (int p = 0; p < PRIO_COUNT; p++) {
        uint32_t n = 0;
        list_for_each(it, &f->queue[p]) {
            const struct job *j = job_of_qnode(it);
            if (j->state != JOB_READY || j->func != f || j->prio != p || it->next->prev != it)
                return engine_check_fail(err, errlen, "%s: bad job %llu in ready queue %d", f->name,
                                         (unsigned long long)j->id, p);
            n++;
        }
        if (n != f->ready[p] && !(f->flow != NULL && n == 0)) /* (or kept by flow control,
                                                                 whose check counts them) */
            return engine_check_fail(err, errlen, "%s: ready[%d]=%u but queue holds %u", f->name, p,
                                     f->ready[p], n);
        n = f->ready[p];
        if (f->queued[p] != n + f->check[p])
            return engine_check_fail(err, errlen,
                                     "%s: queued[%d]=%u but %u ready + %u future", f->name, p,
                                     f->queued[p], n, f->check[p]);
    }
    if (f->running != f->check[PRIO_COUNT])
        return engine_check_fail(err, errlen, "%s: running=%u but %u jobs run", f->name, f->running,
                                 f->check[PRIO_COUNT]);
    uint32_t nw = 0;
    list_for_each(n, &f->workers) {
        const struct ability *a = container_of(n, struct ability, fnode);
        if (a->func != f)
            return engine_check_fail(err, errlen, "%s: foreign ability in worker list", f->name);
        for (int p = 0; p < PRIO_COUNT; p++)
            if (list_linked(&a->rnode[p]) != func_open(f, p))
                return engine_check_fail(err, errlen, "%s: ready list link %d disagrees with queue",
                                         f->name, p);
        nw++;
    }
    if (nw != f->nworkers)
        return engine_check_fail(err, errlen,
                                 "%s: nworkers=%u but %u linked", f->name, f->nworkers, nw);
    return 0;
}

int engine_check(const struct engine *e, char *err, size_t errlen)
{
    size_t nfunc = 0;
    list_for_each(n, &e->func_list) {
        struct func *f = func_of_anode(n);
        memset(f->check, 0, sizeof f->check);
        nfunc += !f->marker;
    }
    if (nfunc != e->funcs.count)
        return engine_check_fail(err, errlen,
                                 "%zu functions listed, %zu indexed", nfunc, e->funcs.count);
    /* one pass over the jobs gathers each function's future and running counts */
    size_t bytes = 0;
    struct idtab_iter it;
    idtab_iter_init(&it, &e->jobs);
    for (const struct job *j; (j = idtab_iter_next(&it, NULL)) != NULL;) {
        bytes += job_size(j);
        if (j->state == JOB_FUTURE || j->state == JOB_PENDING)
            j->func->check[j->prio]++;
        else if (j->state == JOB_RUNNING)
            j->func->check[PRIO_COUNT]++;
        else if (j->state == JOB_LIMBO)
            return engine_check_fail(err, errlen,
                                     "job %llu left in limbo", (unsigned long long)j->id);
        if (j->state == JOB_FUTURE && j->timer == HEAP_NONE)
            return engine_check_fail(err, errlen, "future job %llu has no timer",
                                     (unsigned long long)j->id);
        if (!job_has_waiters(j) && !(j->flags & JOB_BACKGROUND) && j->state != JOB_RUNNING)
            return engine_check_fail(err, errlen, "foreground job %llu queued with no client",
                                     (unsigned long long)j->id);
    }
    list_for_each(n, &e->func_list) {
        const struct func *f = func_of_anode(n);
        if (!f->marker && check_func(f, err, errlen) != 0)
            return -1; /* (a marker has no lists) */
        if (!f->marker && func_unused(f) && !list_linked(&f->unode))
            return engine_check_fail(err, errlen, "%s: unused but not evictable (func_release "
                                     "not called)", f->name);
    }
    if (bytes != e->job_bytes)
        return engine_check_fail(err, errlen, "job_bytes=%zu but jobs hold %zu", e->job_bytes,
                                 bytes);
    if (e->jobs.count != e->njobs)
        return engine_check_fail(err, errlen,
                                 "njobs=%zu but %zu indexed", e->njobs, e->jobs.count);
    size_t total_running = 0;
    list_for_each(n, &e->func_list)
        total_running += func_of_anode(n)->running;
    if (total_running != e->nrunning)
        return engine_check_fail(err, errlen, "nrunning=%zu but functions count %zu", e->nrunning,
                                 total_running);
    double last = 0;
    list_for_each(n, &e->held) {
        const struct worker *w = worker_of_held(n);
        if (!w->held)
            return engine_check_fail(err, errlen, "a worker on the held list without a held GRAB");
        if (w->held_until < last)
            return engine_check_fail(err, errlen, "held GRABs out of deadline order");
        if (worker_has_work(w))
            return engine_check_fail(err, errlen, "a held GRAB while a job is ready for it");
        last = w->held_until;
    }
    if (!list_empty(&e->ready))
        return engine_check_fail(err, errlen,
                                 "wake-ups left undone after the handler (engine_drain_ready)");
    if (job_check_ids(e, err, errlen) != 0 || job_check_uniques(e, err, errlen) != 0)
        return -1;
    for (int i = 0; i < ENGINE_EXT_SLOTS; i++) /* the features' own invariants */
        if (e->ext.check[i] != NULL && e->ext.check[i](e, err, errlen) != 0)
            return -1;
    return 0;
}

int engine_ext_join(struct engine *e, engine_ext_check_fn check, engine_ext_destroy_fn destroy)
{
    int free_slot = -1;
    for (int i = ENGINE_EXT_SLOTS - 1; i >= 0; i--) {
        if (e->ext.check[i] == check && e->ext.destroy[i] == destroy && (check || destroy))
            return 0; /* joined already */
        if (e->ext.check[i] == NULL && e->ext.destroy[i] == NULL)
            free_slot = i;
    }
    if (free_slot < 0)
        return -1;
    e->ext.check[free_slot] = check;
    e->ext.destroy[free_slot] = destroy;
    return 0;
}

void engine_ext_leave(struct engine *e, engine_ext_check_fn check, engine_ext_destroy_fn destroy)
{
    for (int i = 0; i < ENGINE_EXT_SLOTS; i++)
        if (e->ext.check[i] == check && e->ext.destroy[i] == destroy) {
            e->ext.check[i] = NULL;
            e->ext.destroy[i] = NULL;
            return;
        }
}

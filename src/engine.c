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

#include "cmd.h"
#include "func.h"
#include "job.h"
#include "list.h"
#include "peer.h"

int engine_init(struct engine *e, const struct config *cfg, const struct engine_ops *ops,
                void *shell)
{
    memset(e, 0, sizeof *e);
    e->cfg = cfg;
    e->ops = *ops;
    e->shell = shell;
    list_node_init(&e->peers);
    if (cfg->job_handle_prefix != NULL) {
        snprintf(e->prefix, sizeof e->prefix, "%s", cfg->job_handle_prefix);
    } else {
        char host[256] = "localhost";
        gethostname(host, sizeof host - 1);
        host[sizeof host - 1] = '\0';
        snprintf(e->prefix, sizeof e->prefix, "H:%.38s", host);
    }
    e->prefix_len = strlen(e->prefix);
    hmap_init(&e->funcs, func_hash, e);
    hmap_init(&e->abilities, ability_hash, e);
    hmap_init(&e->jobs_by_id, job_id_hash, e);
    hmap_init(&e->jobs_by_unique, job_unique_hash, e);
    /* handle numbers start from the clock (2^24 per second of the epoch), so a restarted server
     * never hands out a number an earlier run used unless it outran 16M jobs a second */
    e->next_id = ((uint64_t)time(NULL) << 24) | 1;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    e->seed = hmap_mix64((uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32));
    return 0;
}

void engine_destroy(struct engine *e)
{
    e->destroying = 1;
    struct hmap_iter it;
    hmap_iter_init(&it, &e->jobs_by_id);
    for (struct hnode *n; (n = hmap_iter_next(&it)) != NULL;) {
        struct job *j = container_of(n, struct job, by_id);
        j->flags &= (uint8_t)~JOB_STORED; /* shutting down is not completion */
        job_free(e, j);
    }
    hmap_free(&e->jobs_by_id);
    hmap_free(&e->jobs_by_unique);
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
    if (e->held != NULL && (at < 0 || e->held->held_until < at))
        at = e->held->held_until;
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
        } else {
            cmd_job_timeout(e, j);
        }
    }
    while (e->held != NULL && e->held->held_until <= now)
        cmd_grab_release(e, e->held);
}

void engine_release_grabs(struct engine *e)
{
    while (e->held != NULL)
        cmd_grab_release(e, e->held);
}

/* fail formats an invariant violation. */
static int fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...)
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
        const struct job *prev = NULL;
        for (const struct job *j = f->head[p]; j != NULL; j = j->next) {
            if (j->state != JOB_READY || j->func != f || j->prio != p || j->prev != prev)
                return fail(err, errlen, "%s: bad job %llu in ready queue %d", f->name,
                            (unsigned long long)j->id, p);
            prev = j;
            n++;
        }
        if (f->tail[p] != prev)
            return fail(err, errlen, "%s: tail of queue %d is wrong", f->name, p);
        if (n != f->ready[p])
            return fail(err, errlen, "%s: ready[%d]=%u but queue holds %u", f->name, p,
                        f->ready[p], n);
        if (f->queued[p] != n + f->check[p])
            return fail(err, errlen, "%s: queued[%d]=%u but %u ready + %u future", f->name, p,
                        f->queued[p], n, f->check[p]);
    }
    if (f->running != f->check[PRIO_COUNT])
        return fail(err, errlen, "%s: running=%u but %u jobs run", f->name, f->running,
                    f->check[PRIO_COUNT]);
    uint32_t nw = 0;
    const struct ability *a = f->workers;
    if (a != NULL) {
        do {
            if (a->func != f)
                return fail(err, errlen, "%s: foreign ability in worker list", f->name);
            for (int p = 0; p < PRIO_COUNT; p++)
                if ((a->rnext[p] != NULL) != (f->ready[p] > 0))
                    return fail(err, errlen, "%s: ready list link %d disagrees with queue",
                                f->name, p);
            nw++;
            a = a->fnext;
        } while (a != f->workers);
    }
    if (nw != f->nworkers)
        return fail(err, errlen, "%s: nworkers=%u but %u linked", f->name, f->nworkers, nw);
    return 0;
}

int engine_check(const struct engine *e, char *err, size_t errlen)
{
    size_t nfunc = 0;
    for (struct func *f = e->func_list; f != NULL; f = f->next) {
        memset(f->check, 0, sizeof f->check);
        nfunc += !f->marker;
    }
    if (nfunc != e->funcs.count)
        return fail(err, errlen, "%zu functions listed, %zu indexed", nfunc, e->funcs.count);
    /* one pass over the jobs gathers each function's future and running counts */
    struct hmap_iter it;
    hmap_iter_init(&it, &e->jobs_by_id);
    for (const struct hnode *n; (n = hmap_iter_next(&it)) != NULL;) {
        const struct job *j = container_of(n, struct job, by_id);
        if (j->state == JOB_FUTURE || j->state == JOB_PENDING)
            j->func->check[j->prio]++;
        else if (j->state == JOB_RUNNING)
            j->func->check[PRIO_COUNT]++;
        else if (j->state == JOB_LIMBO)
            return fail(err, errlen, "job %llu left in limbo", (unsigned long long)j->id);
        if (j->state == JOB_FUTURE && j->timer == HEAP_NONE)
            return fail(err, errlen, "future job %llu has no timer",
                        (unsigned long long)j->id);
        if (j->waiters == NULL && !(j->flags & JOB_BACKGROUND) && j->state != JOB_RUNNING)
            return fail(err, errlen, "foreground job %llu queued with no client",
                        (unsigned long long)j->id);
    }
    for (const struct func *f = e->func_list; f != NULL; f = f->next)
        if (check_func(f, err, errlen) != 0)
            return -1;
    if (e->jobs_by_id.count != e->njobs)
        return fail(err, errlen, "njobs=%zu but %zu indexed", e->njobs, e->jobs_by_id.count);
    size_t total_running = 0;
    for (const struct func *f = e->func_list; f != NULL; f = f->next)
        total_running += f->running;
    if (total_running != e->nrunning)
        return fail(err, errlen, "nrunning=%zu but functions count %zu", e->nrunning,
                    total_running);
    double last = 0;
    for (const struct worker *w = e->held; w != NULL; w = w->held_next) {
        if (!w->held || w->peer->worker != w)
            return fail(err, errlen, "fd %d: on the held list without a held GRAB", w->peer->fd);
        if (w->held_until < last)
            return fail(err, errlen, "held GRABs out of deadline order");
        if (func_has_work(w))
            return fail(err, errlen, "fd %d: a held GRAB while a job is ready for it",
                        w->peer->fd);
        if ((w->held_next == NULL) != (w == e->held_tail))
            return fail(err, errlen, "held list tail mismatch");
        last = w->held_until;
    }
    return 0;
}

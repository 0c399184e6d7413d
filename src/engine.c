/* engine: the server's pure state and the seam to the I/O shell. */
#include "engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cmd.h"
#include "func.h"
#include "job.h"

int engine_init(struct engine *e, const struct config *cfg, const struct engine_ops *ops,
                void *shell)
{
    memset(e, 0, sizeof *e);
    e->cfg = cfg;
    e->ops = *ops;
    e->shell = shell;
    if (cfg->job_handle_prefix != NULL) {
        snprintf(e->prefix, sizeof e->prefix, "%s", cfg->job_handle_prefix);
    } else {
        char host[256] = "localhost";
        gethostname(host, sizeof host - 1);
        host[sizeof host - 1] = '\0';
        snprintf(e->prefix, sizeof e->prefix, "H:%.38s", host);
    }
    e->prefix_len = strlen(e->prefix);
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
    for (size_t i = 0; i < e->jobs_by_id.nbuckets; i++) {
        struct hnode *n = e->jobs_by_id.buckets[i];
        while (n != NULL) {
            struct hnode *next = n->next;
            struct job *j = (struct job *)((char *)n - offsetof(struct job, by_id));
            j->flags &= (uint8_t)~JOB_STORED; /* shutting down is not completion */
            job_free(e, j);
            n = next;
        }
    }
    hmap_free(&e->jobs_by_id);
    hmap_free(&e->jobs_by_unique);
    heap_free(&e->timers);
    func_free_all(e);
}

double engine_now(struct engine *e) { return e->ops.now(e); }

double engine_next_timer(const struct engine *e)
{
    const struct heap_entry *t = heap_top(&e->timers);
    return t ? t->at : -1.0;
}

void engine_run_timers(struct engine *e, double now)
{
    struct heap_entry *t;
    while ((t = heap_top(&e->timers)) != NULL && t->at <= now) {
        struct job *j = (struct job *)((char *)t - offsetof(struct job, timer));
        if (j->state == JOB_FUTURE) {
            job_detach(e, j);
            func_push(e, j, 0);
        } else {
            cmd_job_timeout(e, j);
        }
    }
}

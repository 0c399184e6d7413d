/* SPDX-License-Identifier: BSD-3-Clause */
/* store: the engine's side of durability: group commit on a committer thread, held replies,
 * and streamed replay, over any backend of store_backend.h. */
#include "store.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine.h"
#include "func.h"
#include "hmap.h"
#include "job.h"
#include "log.h"
#include "store_backend.h"
#include "store_batch.h"

#define RETRY_FIRST 0.01 /* seconds before the first retry of deletions after a failed commit */
#define RETRY_MAX 5.0     /* the pause doubles after each failure up to this */

/* struct ack is one reply held until a batch is durable. */
struct ack {
    struct ack *next;   /* next held reply, in submission order */
    void *who;          /* who gets the reply (opaque owner); NULL once gone */
    uint64_t id;        /* the job's handle number */
    double due;         /* when the job may run (for the ack that created it) */
    double held_at;     /* monotonic time it was held: answered with an error once it has waited
                           --store-wait + --store-timeout */
    uint8_t owner;      /* 1: this submit created the job, which becomes runnable when durable */
    uint8_t added;      /* 1: this submit added a record to the batch (owner, or a conversion of
                           a foreground job to background) */
};

/* struct renum is one job renumbered by a takeover: stored as old, restored as nw. */
struct renum {
    uint64_t old; /* the id in the other server's rows */
    uint64_t nw;  /* the id it has here */
};

/* struct ack_list is a FIFO of held replies. */
struct ack_list {
    struct ack *head; /* oldest */
    struct ack *tail; /* newest */
};

/* struct replay_job is one stored job copied out by the committer thread during replay. */
struct replay_job {
    uint64_t id;           /* handle number */
    int64_t when;          /* due time, 0 = now */
    uint32_t func_len;     /* bytes of function name at bytes */
    uint32_t unique_len;   /* then the unique */
    uint32_t reducer_len;  /* then the reducer */
    uint32_t data_len;     /* then the payload */
    uint32_t meta_len;     /* then the meta (engine_ext), 0 = none */
    uint8_t prio;          /* priority */
    char *bytes;           /* func, unique, reducer, data, meta */
};

/* struct replay_chunk is a run of replayed jobs handed to the loop at once. */
struct replay_chunk {
    struct replay_chunk *next;                  /* next chunk */
    size_t n;                                   /* jobs in use */
    struct replay_job jobs[STORE_REPLAY_CHUNK]; /* the jobs */
};

/* struct store is the manager; fields say which thread owns them. */
struct store {
    struct engine *eng;            /* loop */
    const struct store_backend *be; /* the backend; its threading contract: store_backend.h */
    void *db;                      /* the backend's handle */
    const struct store_sink *sink; /* loop: where held replies are answered */
    struct store_queue q;          /* loop: the batch being filled */
    pthread_t thread;              /* the committer */
    pthread_mutex_t mu;            /* guards the hand-off fields below */
    pthread_cond_t cv;             /* wakes the committer */
    void (*notify)(void *arg);     /* wakes the loop (thread-safe) */
    void *notify_arg;              /* for notify */
    /* hand-off, under mu */
    struct store_batch *to_write;  /* batch for the committer */
    struct store_batch *written;   /* batch the committer finished */
    int written_rc;                /* its result */
    struct replay_chunk *chunks;   /* replayed jobs for the loop, oldest first */
    struct replay_chunk *chunks_tail;
    struct store_batch *records;   /* the stored records, replayed before the first chunk */
    int replay_done;               /* the committer finished replaying */
    int replay_failed;             /* replay stopped on a read error */
    int stop;                      /* the committer should exit */
    int closing;                   /* store_close waits: a replay stops at its next chunk */
    int busy;                      /* the committer is replaying, writing or maintaining */
    int exited;                    /* the committer returned (store_close waits for it on done) */
    int detached;                  /* store_close gave up waiting: never wake the loop again */
    pthread_cond_t done;           /* signalled when the committer is idle or has exited */
    uint64_t adopted;              /* jobs adopt handed over since the loop last looked */
    int adopt_fenced;              /* adopt found this server fenced (-2) */
    char adopt_note[256];          /* whose they were, for the log */
    double wake_at;                /* monotonic time to wake the loop (retry after a failed
                                      commit), 0 = none */
    /* committer only */
    struct replay_chunk *filling;  /* chunk being filled during replay */
    /* loop only */
    double limit;                  /* --store-wait + --store-timeout: the longest a reply is held,
                                      0 = no limit */
    double timeout;                /* --store-timeout: the longest store_close waits, 0 = none */
    int stalled;                   /* held replies were refused for want of an answer from the
                                      committer since its last successful commit */
    struct ack_list cur;           /* replies held on the current batch */
    struct ack_list flight;        /* replies held on the batch being written */
    size_t held;                   /* entries in cur and flight */
    int in_flight;                 /* a batch is with the committer */
    double flight_since;           /* monotonic time it was handed over (commit latency) */
    uint64_t replayed;             /* jobs restored so far */
    double replay_started;         /* monotonic time the replay began */
    double retry_at;               /* after a failed commit: monotonic time before which a batch
                                      of only deletions is not written, 0 = not failing */
    double retry_gap;              /* the current pause between retries */
    uint64_t fails;                /* failed commits since the last success */
    uint64_t refused;              /* background submits refused since the last success */
    int fenced;                    /* the backend said another server took over this one's jobs */
    struct hmap renum;             /* struct renum by old id: the jobs renumbered by the replay or
                                      takeover in progress (a waiting job's meta names the ids it
                                      waits for as they were stored); emptied when it ends */
    double down_since;             /* monotonic time of the first of those failures */
};

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* wake_loop asks the loop to call store_complete (committer thread), unless store_close gave up
 * on this thread: the loop may be gone then. */
static void wake_loop(struct store *st)
{
    pthread_mutex_lock(&st->mu);
    if (!st->detached)
        st->notify(st->notify_arg);
    pthread_mutex_unlock(&st->mu);
}

_Static_assert(STORE_REC_KINDS == ENGINE_EXT_KINDS, "engine_ext has a hook per record kind");

/* ------------------------------------------------------------ committer thread */

/* push_chunk hands a filled replay chunk to the loop. Returns -1 when the store is closing (the
 * replay may stop: nobody will run the jobs), else 0. */
static int push_chunk(struct store *st, struct replay_chunk *c)
{
    pthread_mutex_lock(&st->mu);
    if (st->chunks_tail)
        st->chunks_tail->next = c;
    else
        st->chunks = c;
    st->chunks_tail = c;
    int closing = st->closing;
    pthread_mutex_unlock(&st->mu);
    wake_loop(st);
    return closing ? -1 : 0;
}

/* replay_row copies one stored job into the chunk being filled. */
static int replay_row(void *ctx, const struct store_rec *r)
{
    struct store *st = ctx;
    if (st->filling == NULL) {
        st->filling = calloc(1, sizeof *st->filling);
        if (st->filling == NULL)
            return -1;
    }
    size_t meta_len = r->meta != NULL && r->meta_len <= STORE_META_MAX ? r->meta_len : 0;
    size_t total = r->func_len + r->unique_len + r->reducer_len + r->data_len;
    if (r->unique_len > UINT16_MAX || r->reducer_len > UINT16_MAX || total > UINT32_MAX - meta_len)
        return 0; /* cannot be a job: skip it */
    char *b = malloc(total + meta_len ? total + meta_len : 1);
    if (b == NULL)
        return -1;
    struct replay_job *j = &st->filling->jobs[st->filling->n++];
    memcpy(b, r->func, r->func_len);
    memcpy(b + r->func_len, r->unique, r->unique_len);
    memcpy(b + r->func_len + r->unique_len, r->reducer, r->reducer_len);
    memcpy(b + r->func_len + r->unique_len + r->reducer_len, r->data, r->data_len);
    if (meta_len)
        memcpy(b + total, r->meta, meta_len);
    *j = (struct replay_job){r->id, r->when, (uint32_t)r->func_len, (uint32_t)r->unique_len,
                             (uint32_t)r->reducer_len, (uint32_t)r->data_len, (uint32_t)meta_len,
                             (uint8_t)r->prio, b};
    if (st->filling->n == STORE_REPLAY_CHUNK) {
        struct replay_chunk *c = st->filling;
        st->filling = NULL;
        return push_chunk(st, c);
    }
    return 0;
}

/* maintain lets the backend keep its store bounded (and renew its lease), then take over the
 * rows of dead servers, handed to the loop as replayed jobs are (committer thread). */
static void maintain(struct store *st)
{
    st->be->maintain(st->db);
    if (st->be->adopt == NULL)
        return;
    const char *note = NULL;
    int n = st->be->adopt(st->db, replay_row, st, &note);
    if (st->filling != NULL) {
        push_chunk(st, st->filling);
        st->filling = NULL;
    }
    if (n != 0) {
        pthread_mutex_lock(&st->mu);
        if (n > 0)
            st->adopted += (uint64_t)n;
        if (n == -2)
            st->adopt_fenced = 1;
        snprintf(st->adopt_note, sizeof st->adopt_note, "%s",
                 n > 0 ? (note != NULL ? note : "") : st->be->error(st->db));
        pthread_mutex_unlock(&st->mu);
        wake_loop(st);
    }
}

/* replay_record copies one stored record into the batch of replayed records (committer). */
static int replay_record(void *ctx, const struct store_record *r)
{
    if (r->value == NULL || store_queue_record(ctx, r) == 0)
        return 0;
    int valid = r->kind > 0 && r->kind < STORE_REC_KINDS && r->key_len > 0 &&
                r->key_len <= STORE_KEY_MAX && r->value_len <= STORE_META_MAX;
    return valid ? -1 : 0; /* out of memory stops the replay; an invalid record is skipped */
}

static void *committer(void *arg)
{
    struct store *st = arg;
    struct store_queue rq = {0};
    int rc = st->be->replay_records(st->db, replay_record, &rq);
    struct store_batch *records = store_queue_take(&rq);
    store_queue_clear(&rq);
    pthread_mutex_lock(&st->mu);
    st->records = records; /* before any chunk: the loop applies them first */
    pthread_mutex_unlock(&st->mu);
    if (rc == 0)
        rc = st->be->replay(st->db, replay_row, st);
    if (st->filling != NULL) {
        push_chunk(st, st->filling);
        st->filling = NULL;
    }
    pthread_mutex_lock(&st->mu);
    st->replay_done = 1;
    st->replay_failed = rc != 0;
    st->busy = 0;
    pthread_cond_broadcast(&st->done);
    pthread_mutex_unlock(&st->mu);
    wake_loop(st);

    double last_maintain = mono();
    pthread_mutex_lock(&st->mu);
    for (;;) {
        while (st->to_write == NULL && !st->stop) {
            double wait = 1.0;
            if (st->wake_at > 0) { /* the loop wants to retry a failed write at wake_at */
                double left = st->wake_at - mono();
                if (left <= 0) {
                    st->wake_at = 0;
                    if (!st->detached)
                        st->notify(st->notify_arg);
                    continue;
                }
                if (left < wait)
                    wait = left;
            }
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            long ns = until.tv_nsec + (long)(wait * 1e9);
            until.tv_sec += ns / 1000000000L;
            until.tv_nsec = ns % 1000000000L;
            pthread_cond_timedwait(&st->cv, &st->mu, &until);
            if (st->to_write == NULL && !st->stop && mono() - last_maintain >= 1.0) {
                st->busy = 1;
                pthread_mutex_unlock(&st->mu);
                maintain(st);
                last_maintain = mono();
                pthread_mutex_lock(&st->mu);
                st->busy = 0;
                pthread_cond_broadcast(&st->done);
            }
        }
        if (st->to_write == NULL && st->stop)
            break;
        struct store_batch *b = st->to_write;
        st->to_write = NULL;
        st->busy = 1;
        pthread_mutex_unlock(&st->mu);
        int wrc = st->be->write_batch(st->db, b);
        pthread_mutex_lock(&st->mu);
        int stopping = st->stop;
        pthread_mutex_unlock(&st->mu);
        if (!stopping && mono() - last_maintain >= 1.0) {
            maintain(st);
            last_maintain = mono();
        }
        pthread_mutex_lock(&st->mu);
        st->written = b;
        st->written_rc = wrc;
        st->busy = 0;
        pthread_cond_broadcast(&st->done);
        if (!st->detached)
            st->notify(st->notify_arg);
    }
    st->exited = 1;
    pthread_cond_broadcast(&st->done);
    pthread_mutex_unlock(&st->mu);
    return NULL;
}

/* ------------------------------------------------------------ loop side */

static struct store *mgr(const struct engine *e) { return e->store_mgr; }

int store_replaying(const struct engine *e) { return e->replaying; }

int store_start(struct engine *e, const struct store_backend *b, const struct store_params *p,
                const struct store_sink *sink, void (*notify)(void *arg), void *arg, char *err,
                size_t errlen)
{
    struct store *st = calloc(1, sizeof *st);
    if (st == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    uint64_t next_id = e->next_id;
    st->db = b->open(p, &next_id, err, errlen);
    if (st->db == NULL) {
        free(st);
        return -1;
    }
    const char *note = b->note(st->db);
    if (note != NULL)
        log_notice("store: %s", note);
    if (next_id > e->next_id)
        e->next_id = next_id;
    st->be = b;
    st->sink = sink;
    st->eng = e;
    st->notify = notify;
    st->notify_arg = arg;
    st->limit = p->timeout > 0 ? p->wait + p->timeout : 0;
    st->timeout = p->timeout;
    st->busy = 1; /* replaying */
    pthread_mutex_init(&st->mu, NULL);
    pthread_cond_init(&st->cv, NULL);
    pthread_cond_init(&st->done, NULL);
    e->store_mgr = st;
    e->durable = (struct engine_durable){store_add_meta, store_ack};
    e->replaying = 1;
    st->replay_started = mono();
    if (pthread_create(&st->thread, NULL, committer, st) != 0) {
        snprintf(err, errlen, "cannot start the store thread");
        b->close(st->db);
        pthread_mutex_destroy(&st->mu);
        pthread_cond_destroy(&st->cv);
        pthread_cond_destroy(&st->done);
        e->store_mgr = NULL;
        e->durable = (struct engine_durable){NULL, NULL};
        e->replaying = 0;
        free(st);
        return -1;
    }
    log_notice("store: %s:%s opened; replaying stored jobs", b->name,
               p->shown != NULL ? p->shown : p->location);
    return 0;
}

static void free_chunk(struct replay_chunk *c)
{
    for (size_t i = 0; i < c->n; i++)
        free(c->jobs[i].bytes);
    free(c);
}

static void free_acks(struct ack_list *l)
{
    while (l->head != NULL) {
        struct ack *a = l->head;
        l->head = a->next;
        free(a);
    }
    l->tail = NULL;
}

/* renum_clear forgets the renumbering of the replay or takeover that ended. */
static void renum_clear(struct store *st)
{
    if (st->renum.count == 0 && st->renum.cap == 0)
        return;
    struct hmap_iter it;
    hmap_iter_init(&it, &st->renum);
    for (void *r; (r = hmap_iter_next(&it)) != NULL;)
        free(r);
    hmap_free(&st->renum);
}

/* idle tells whether the committer waits for work (no batch handed over or being written, no
 * replay or maintenance); exited whether it returned. Under st->mu. */
static int idle(const struct store *st) { return !st->busy && st->to_write == NULL; }

static int exited(const struct store *st) { return st->exited; }

/* until_wait waits on st->done until cond(st), or until the monotonic time `until` (0 = no
 * limit). Called and returns with st->mu held. Returns 0, or -1 past until. */
static int until_wait(struct store *st, int (*cond)(const struct store *st), double until)
{
    while (!cond(st)) {
        if (until <= 0) {
            pthread_cond_wait(&st->done, &st->mu);
            continue;
        }
        double left = until - mono();
        if (left <= 0)
            return -1;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        long ns = ts.tv_nsec + (long)((left - (double)(long)left) * 1e9);
        ts.tv_sec += (time_t)left + ns / 1000000000L;
        ts.tv_nsec = ns % 1000000000L;
        pthread_cond_timedwait(&st->done, &st->mu, &ts);
    }
    return 0;
}

/* the store whose committer store_close gave up waiting for: it still uses it until the process
 * exits (kept reachable, not leaked) */
static struct store *stuck_store;

int store_close(struct engine *e)
{
    struct store *st = mgr(e);
    if (st == NULL)
        return 0;
    double until = st->timeout > 0 ? mono() + st->timeout : 0;
    /* the committer finishes what it is doing (a batch, maintenance; a replay stops at its next
     * chunk), then writes the final batch and exits, all within --store-timeout: a hung database
     * or disk never holds the stop longer */
    pthread_mutex_lock(&st->mu);
    st->closing = 1;
    int waiting = until_wait(st, idle, until) == 0;
    pthread_mutex_unlock(&st->mu);
    struct store_batch *final = NULL;
    size_t unanswered = st->held;
    if (waiting) {
        /* what the committer finished is settled here (its replies are not sent); the final
         * batch has the deletions of a failed last batch put back into it */
        pthread_mutex_lock(&st->mu);
        struct store_batch *w = st->written;
        int wrc = st->written_rc;
        st->written = NULL;
        pthread_mutex_unlock(&st->mu);
        if (w != NULL && wrc != 0)
            store_queue_retry_dones(&st->q, w);
        store_batch_free(w);
        final = store_queue_take_final(&st->q);
    }
    pthread_mutex_lock(&st->mu);
    if (waiting)
        st->to_write = final;
    st->stop = 1;
    pthread_cond_signal(&st->cv);
    int done = waiting && until_wait(st, exited, until) == 0;
    if (!done)
        st->detached = 1; /* the loop goes away: the committer must not wake it */
    pthread_mutex_unlock(&st->mu);
    if (!done) {
        /* never pretend: what the committer holds may or may not be written, and nothing more is */
        log_error("store: the %s store's thread did not finish within %.1f s (--store-timeout; a "
                  "hung database or disk): stopping without waiting for it. The batch it was "
                  "writing may or may not be durable; %zu background submits waiting for it were "
                  "never acknowledged; %zu later operations (deletions of finished jobs, updates) "
                  "are not written: those jobs may run again after a restart",
                  st->be->name, st->timeout, unanswered,
                  store_queue_pending(&st->q) + (final != NULL ? store_batch_ops(final) : 0));
        pthread_detach(st->thread);
        stuck_store = st;
        e->store_mgr = NULL;
        e->durable = (struct engine_durable){NULL, NULL};
        e->replaying = 0;
        return -1;
    }
    pthread_join(st->thread, NULL);
    if (st->written != NULL && st->written_rc != 0) /* best effort: left to a later replay */
        log_error("store: writing the last %zu operations failed: %s", store_batch_ops(st->written),
                  store_batch_error(st->written));
    store_batch_free(st->written);
    store_batch_free(st->records);
    while (st->chunks != NULL) {
        struct replay_chunk *c = st->chunks;
        st->chunks = c->next;
        free_chunk(c);
    }
    free_acks(&st->cur);
    free_acks(&st->flight);
    renum_clear(st);
    store_queue_clear(&st->q);
    st->be->close(st->db);
    pthread_mutex_destroy(&st->mu);
    pthread_cond_destroy(&st->cv);
    pthread_cond_destroy(&st->done);
    free(st);
    e->store_mgr = NULL;
    e->durable = (struct engine_durable){NULL, NULL};
    e->replaying = 0;
    return 0;
}

int store_stuck(void) { return stuck_store != NULL; }

/* hold appends a held reply to the current batch's list. */
static int hold(struct store *st, uint64_t id, void *who, double due, int owner, int added)
{
    struct ack *a = malloc(sizeof *a);
    if (a == NULL)
        return -1;
    *a = (struct ack){NULL, who, id, due, st->limit > 0 ? mono() : 0, (uint8_t)owner,
                      (uint8_t)added};
    if (st->cur.tail)
        st->cur.tail->next = a;
    else
        st->cur.head = a;
    st->cur.tail = a;
    st->held++;
    if (who != NULL)
        st->sink->held(st->eng, who);
    return 0;
}

/* record fills a store_rec from a job and its meta. */
static void record(const struct job *j, double due, const char *meta, size_t meta_len,
                   struct store_rec *r)
{
    const struct func *f = j->func;
    *r = (struct store_rec){j->id, f->name, f->name_len, job_unique(j), j->unique_len,
                            job_reducer(j), j->reducer_len, job_payload(j), job_payload_len(j),
                            j->prio, (int64_t)due, meta, meta_len};
}

int store_add(struct engine *e, struct job *j, void *who, double due)
{
    return store_add_meta(e, j, who, due, NULL, 0);
}

int store_add_meta(struct engine *e, struct job *j, void *who, double due, const char *meta,
                   size_t meta_len)
{
    struct store *st = mgr(e);
    struct store_rec r;
    record(j, due, meta, meta_len, &r);
    int owner = j->state == JOB_LIMBO;
    if (store_queue_add(&st->q, &r) != 0)
        return -1;
    if (hold(st, j->id, who, due, owner, 1) != 0) {
        store_queue_done(&st->q, j->id);
        return -1;
    }
    j->flags |= JOB_STORED | JOB_BACKGROUND;
    if (owner) {
        j->state = JOB_PENDING;
        j->func->queued[j->prio]++;
    }
    return 0;
}

int store_ack(struct engine *e, struct job *j, void *who)
{
    return hold(mgr(e), j->id, who, 0, 0, 0);
}

int store_ack_id(struct engine *e, uint64_t id, void *who)
{
    return hold(mgr(e), id, who, 0, 0, 0);
}

int store_update(struct engine *e, struct job *j, double due, const char *meta, size_t meta_len)
{
    struct store *st = mgr(e);
    if (st == NULL || !(j->flags & JOB_STORED))
        return 0;
    struct store_rec r;
    record(j, due, meta, meta_len, &r);
    return store_queue_update(&st->q, &r);
}

/* put_record queues a record operation (value NULL: a deletion). */
static int put_record(struct engine *e, int kind, const char *key, size_t klen, const void *val,
                      size_t vlen)
{
    struct store *st = mgr(e);
    if (st == NULL)
        return 0;
    struct store_record r = {kind, key, klen, val, vlen};
    return store_queue_record(&st->q, &r);
}

int store_record_put(struct engine *e, int kind, const char *key, size_t klen, const void *val,
                     size_t vlen)
{
    return put_record(e, kind, key, klen, val != NULL ? val : "", vlen);
}

int store_record_del(struct engine *e, int kind, const char *key, size_t klen)
{
    return put_record(e, kind, key, klen, NULL, 0);
}

void store_done(struct engine *e, const struct job *j)
{
    struct store *st = mgr(e);
    if (st != NULL && store_queue_done(&st->q, j->id) != 0)
        log_error("store: out of memory recording that job %llu is done",
                  (unsigned long long)j->id);
}

/* activate makes a job that just became durable runnable. */
static void activate(struct engine *e, struct job *j, double due)
{
    job_detach(e, j);
    if (due <= engine_now(e) || job_defer(e, j, due) != 0)
        func_push(e, j, 0);
}

/* answer settles the held reply of a, given whether its batch was written, and tells its owner.
 * maybe: the write was given up on while the committer may still store it (store_expire): the
 * refused job's deletion is queued behind it (or its add cancelled, when its batch was never
 * handed over), and a foreground job made background stays flagged stored, so the deletion of
 * its row follows when it finishes. */
static void answer(struct engine *e, struct store *st, struct ack *a, int ok, const char *errtext,
                   int maybe)
{
    struct job *j = job_find_id(e, a->id);
    /* a new job that waits for others (a submit --after) was added in JOB_WAITING: refused with
     * its reply like a pending one, it must not stay */
    int waits = a->added && j != NULL && j->state == JOB_WAITING;
    if ((a->owner && j != NULL && j->state == JOB_PENDING) || waits) {
        if (ok) {
            if (!waits)
                activate(e, j, a->due);
        } else {
            j->flags &= (uint8_t)~JOB_STORED; /* never stored: nothing to delete */
            if (maybe && store_queue_done(&st->q, j->id) != 0)
                log_error("store: out of memory recording that job %llu was refused: it may run "
                          "after a restart", (unsigned long long)j->id);
            job_fail(e, j);
            j = NULL;
        }
    } else if (!ok && a->added && j != NULL && !maybe) {
        j->flags &= (uint8_t)~JOB_STORED; /* the conversion to background was not stored */
    }
    if (!ok && a->added)
        st->refused++;
    if (a->who != NULL)
        st->sink->acked(e, a->who, a->id, !ok && (a->added || j == NULL) ? errtext : NULL);
}

/* answer_all answers every held reply of l in order and empties it (maybe: as answer). */
static void answer_all(struct engine *e, struct ack_list *l, int ok, const char *errtext, int maybe)
{
    struct store *st = mgr(e);
    while (l->head != NULL) {
        struct ack *a = l->head;
        l->head = a->next;
        if (l->head == NULL)
            l->tail = NULL;
        st->held--;
        answer(e, st, a, ok, errtext, maybe);
        free(a);
    }
}

void store_flush(struct engine *e)
{
    struct store *st = mgr(e);
    if (st == NULL || st->in_flight || e->replaying)
        return;
    /* after a failed commit, deletions alone wait for the retry time: nobody waits on them, and
     * writing them again at once would spin on a full disk. A batch with replies held (submits)
     * is written at once, so its clients learn the outcome without delay. */
    if (st->retry_at > 0 && st->cur.head == NULL && mono() < st->retry_at)
        return;
    struct store_batch *b = store_queue_take(&st->q);
    if (b == NULL) {
        /* replies held only behind earlier ones (joins of durable jobs): nothing to write */
        answer_all(e, &st->cur, 1, "", 0);
        return;
    }
    st->flight = st->cur;
    st->cur.head = st->cur.tail = NULL;
    st->in_flight = 1;
    st->flight_since = mono();
    pthread_mutex_lock(&st->mu);
    st->to_write = b;
    pthread_cond_signal(&st->cv);
    pthread_mutex_unlock(&st->mu);
}

uint64_t store_restored_id(const struct engine *e, uint64_t id)
{
    const struct store *st = mgr(e);
    if (st == NULL || st->renum.count == 0)
        return id;
    struct hmap_probe pr;
    for (const struct renum *r = hmap_first(&st->renum, hmap_mix64(id), &pr); r != NULL;
         r = hmap_next(&pr))
        if (r->old == id)
            return r->nw;
    return id;
}

/* restore recreates one replayed job, runnable in its stored order. */
static void restore(struct engine *e, const struct replay_job *r)
{
    const char *b = r->bytes;
    struct func *f = func_get(e, b, r->func_len, 1);
    if (f == NULL) {
        log_error("store: out of memory restoring job %llu", (unsigned long long)r->id);
        return;
    }
    const char *u = b + r->func_len, *red = u + r->unique_len, *d = red + r->reducer_len;
    const char *meta = r->meta_len ? d + r->data_len : NULL;
    /* an id this server has not reached is another server's (a job taken over, docs/HA.md): the
     * job gets a new id of this server's, and its row is rewritten under it in the next batch
     * (the add and the deletion of the old id commit together) */
    int rekey = r->id >= e->next_id;
    if (!rekey && job_find_id(e, r->id) != NULL) { /* (one live job a handle number) */
        func_release(e, f);
        log_error("store: job %llu is already live: its stored copy is skipped",
                  (unsigned long long)r->id);
        return;
    }
    struct job *j = job_new_id(e, f, (enum job_prio)r->prio, 1, u, r->unique_len, red,
                               r->reducer_len, d, r->data_len, rekey ? 0 : r->id);
    if (j == NULL) {
        func_release(e, f);
        log_error("store: out of memory restoring job %llu", (unsigned long long)r->id);
        return;
    }
    j->flags |= JOB_STORED;
    if (rekey) {
        struct store_queue *q = &mgr(e)->q;
        struct store_rec rec;
        record(j, (double)r->when, meta, r->meta_len, &rec);
        if (store_queue_add(q, &rec) != 0 || store_queue_done(q, r->id) != 0)
            log_error("store: out of memory renumbering job %llu taken over (as %llu): it may run "
                      "again after a restart", (unsigned long long)r->id, (unsigned long long)j->id);
        /* the jobs that wait for it name it by its old id: store_restored_id translates it until
         * this replay or takeover ends (ids ascend, so a job comes back before what waits for it) */
        struct renum *m = malloc(sizeof *m);
        if (m != NULL)
            *m = (struct renum){r->id, j->id};
        if (m == NULL || hmap_insert(&mgr(e)->renum, m, hmap_mix64(r->id)) != 0) {
            free(m);
            log_error("store: out of memory renumbering job %llu taken over (as %llu): the jobs "
                      "waiting for it do not wait", (unsigned long long)r->id,
                      (unsigned long long)j->id);
        }
    }
    if (meta != NULL && e->ext.job_restored != NULL &&
        e->ext.job_restored(e, j, meta, r->meta_len, (double)r->when))
        return; /* an extension keeps it (a dead-letter list, a waiting place) */
    if (r->when <= engine_now(e) || job_defer(e, j, (double)r->when) != 0)
        func_push(e, j, 0);
}

/* restore_records hands the replayed records to their extensions, before any job comes back. */
static void restore_records(struct engine *e, struct store_batch *b)
{
    for (size_t i = 0, n = store_batch_nrecords(b); i < n; i++) {
        struct store_record r;
        store_batch_record_at(b, i, &r);
        char why[256] = "no extension reads this kind";
        if (e->ext.record_restored[r.kind] == NULL ||
            e->ext.record_restored[r.kind](e, &r, why, sizeof why) != 0)
            log_error("store: stored record of kind %d (key %.*s) skipped: %s", r.kind,
                      (int)(r.key_len < 64 ? r.key_len : 64), r.key, why);
    }
    store_batch_free(b);
}

/* wake_all wakes the workers of every function with jobs ready. */
static void wake_all(struct engine *e)
{
    list_for_each(n, &e->func_list) {
        struct func *f = func_of_anode(n);
        if (f->ready[PRIO_HIGH] + f->ready[PRIO_NORMAL] + f->ready[PRIO_LOW] > 0)
            func_wake(e, f);
    }
}

/* finish_replay opens the queues to workers once every stored job is back. */
static void finish_replay(struct engine *e, int failed)
{
    struct store *st = mgr(e);
    e->replaying = 0;
    if (failed)
        log_error("store: replay stopped early (%s); %llu jobs restored",
                  st->be->error(st->db), (unsigned long long)st->replayed);
    else
        log_notice("store: replayed %llu jobs in %.3fs", (unsigned long long)st->replayed,
                   mono() - st->replay_started);
    const char *qnote;
    if (st->be->quarantined(st->db, &qnote) > 0)
        log_error("store: %s", qnote);
    wake_all(e);
    st->sink->replay_done(e); /* submits that waited for the replay go on */
}

/* commit_failed counts a failed commit of b, logs the first failure of an outage (one line with
 * the reason; the end of the outage is the other line, in store_complete) and sets the time before
 * which deletions alone are not retried: RETRY_FIRST, doubling after each failure up to RETRY_MAX.
 * The committer wakes the loop then. */
static void commit_failed(struct store *st, const struct store_batch *b)
{
    double now = mono();
    if (st->fails++ == 0) {
        st->down_since = now;
        log_error("store: writing %zu operations failed: %s (background submits are refused until "
                  "a commit succeeds; deletions are retried)", store_batch_ops(b),
                  store_batch_error(b));
    }
    st->retry_gap = st->retry_gap > 0 ? st->retry_gap * 2 : RETRY_FIRST;
    if (st->retry_gap > RETRY_MAX)
        st->retry_gap = RETRY_MAX;
    st->retry_at = now + st->retry_gap;
    pthread_mutex_lock(&st->mu);
    st->wake_at = st->retry_at;
    pthread_cond_signal(&st->cv);
    pthread_mutex_unlock(&st->mu);
}

/* fence stops the server once its backend says another server took its stored jobs over
 * (docs/HA.md): they must not run here too. As on SIGTERM: the loop ends, nothing is written. */
static void fence(struct store *st, const char *why)
{
    if (st->fenced)
        return;
    st->fenced = 1;
    log_error("store: %s: stopping this server", why);
    raise(SIGTERM);
}

void store_complete(struct engine *e)
{
    struct store *st = mgr(e);
    if (st == NULL)
        return;
    pthread_mutex_lock(&st->mu);
    struct store_batch *b = st->written;
    int rc = st->written_rc;
    st->written = NULL;
    struct replay_chunk *chunks = st->chunks;
    st->chunks = st->chunks_tail = NULL;
    struct store_batch *records = st->records;
    st->records = NULL;
    int replay_done = st->replay_done, replay_failed = st->replay_failed;
    uint64_t adopted = st->adopted;
    char adopt_note[sizeof st->adopt_note];
    memcpy(adopt_note, st->adopt_note, sizeof adopt_note);
    int adopt_fenced = st->adopt_fenced;
    st->adopted = 0;
    st->adopt_fenced = 0;
    st->adopt_note[0] = '\0';
    pthread_mutex_unlock(&st->mu);

    if (records != NULL)
        restore_records(e, records);
    while (chunks != NULL) {
        struct replay_chunk *c = chunks;
        chunks = c->next;
        for (size_t i = 0; i < c->n; i++)
            restore(e, &c->jobs[i]);
        st->replayed += c->n;
        e->stats.store_replayed += c->n;
        free_chunk(c);
    }
    /* the replay or a takeover ended: every job of it is back */
    int ended = (replay_done && e->replaying) || adopted > 0 || adopt_fenced || adopt_note[0];
    if (replay_done && e->replaying)
        finish_replay(e, replay_failed);
    else if (adopted > 0)
        wake_all(e); /* jobs taken over at run time: workers may sleep */
    if (ended)
        renum_clear(st);
    if (adopted > 0)
        log_notice("store: took over %llu jobs (%s)", (unsigned long long)adopted, adopt_note);
    else if (adopt_fenced)
        fence(st, adopt_note);
    else if (adopt_note[0])
        log_error("store: taking over a dead server's jobs failed: %s", adopt_note);
    if (b != NULL) {
        hist_observe(&e->stats.store_commit_seconds, hist_seconds, mono() - st->flight_since);
        hist_observe(&e->stats.store_batch_ops, hist_sizes, (double)store_batch_ops(b));
        if (rc != 0)
            e->stats.store_commit_failures++;
        else
            e->stats.store_commits++;
        if (rc == -2)
            fence(st, store_batch_error(b));
        if (rc != 0) {
            commit_failed(st, b);
            if (store_queue_retry_dones(&st->q, b) != 0)
                log_error("store: out of memory keeping failed deletions for a retry");
        }
        st->in_flight = 0;
        answer_all(e, &st->flight, rc == 0, store_batch_error(b), 0);
        if (rc == 0)
            st->stalled = 0;
        if (rc == 0 && st->fails > 0) {
            log_notice("store: writing works again after %llu failed commits (down %.1fs; %llu "
                       "background submits refused meanwhile)", (unsigned long long)st->fails,
                       mono() - st->down_since, (unsigned long long)st->refused);
            st->fails = st->refused = 0;
            st->retry_at = st->retry_gap = 0;
        }
        store_batch_free(b);
    }
    store_flush(e);
}

void store_owner_gone(struct engine *e, void *who)
{
    struct store *st = mgr(e);
    if (st == NULL || st->held == 0)
        return;
    for (struct ack *a = st->flight.head; a != NULL; a = a->next)
        if (a->who == who)
            a->who = NULL;
    for (struct ack *a = st->cur.head; a != NULL; a = a->next)
        if (a->who == who)
            a->who = NULL;
}

void store_get_state(const struct engine *e, struct store_state *s)
{
    const struct store *st = mgr(e);
    memset(s, 0, sizeof *s);
    if (st == NULL)
        return;
    s->in_flight = st->in_flight;
    s->queued = store_queue_pending(&st->q);
    s->held = st->held;
    s->fails = st->fails;
    s->retry_gap = st->retry_gap;
}

double store_deadline(const struct engine *e)
{
    const struct store *st = mgr(e);
    if (st == NULL || st->limit <= 0 || st->held == 0)
        return -1;
    double t = -1;
    if (st->in_flight && st->flight.head != NULL)
        t = st->flight.head->held_at;
    if (st->cur.head != NULL && (t < 0 || st->cur.head->held_at < t))
        t = st->cur.head->held_at;
    if (t < 0)
        return -1;
    double left = t + st->limit - mono();
    return left > 0 ? left : 0;
}

void store_expire(struct engine *e)
{
    struct store *st = mgr(e);
    if (st == NULL || st->limit <= 0 || st->held == 0)
        return;
    double now = mono();
    char why[200];
    snprintf(why, sizeof why, "no answer from the store within %g s (--store-wait + "
             "--store-timeout; the database or disk hangs?)", st->limit);
    size_t n = 0;
    /* the batch with the committer: its replies go now, whatever it becomes (answer's maybe) */
    if (st->in_flight && st->flight.head != NULL && st->flight.head->held_at + st->limit <= now) {
        for (const struct ack *a = st->flight.head; a != NULL; a = a->next)
            n++;
        answer_all(e, &st->flight, 0, why, 1);
    }
    /* replies behind it, in the batch being filled: each when it has waited as long */
    while (st->cur.head != NULL && st->cur.head->held_at + st->limit <= now) {
        struct ack *a = st->cur.head;
        st->cur.head = a->next;
        if (st->cur.head == NULL)
            st->cur.tail = NULL;
        st->held--;
        answer(e, st, a, 0, why, 1);
        free(a);
        n++;
    }
    if (n > 0 && !st->stalled) {
        st->stalled = 1;
        if (st->fails++ == 0)
            st->down_since = now;
        log_error("store: %s: held background submits are refused with QUEUE_ERROR until a "
                  "commit succeeds", why);
    }
}

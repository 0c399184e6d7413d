/* SPDX-License-Identifier: BSD-3-Clause */
/* submit: the one way a job is submitted, whatever asked (a binary SUBMIT_JOB*, an HTTP POST,
 * the admin 'submit', a schedule firing, a live 'load'). job_submit validates, joins a live job
 * with the same unique (bringing a dead-letter one back), applies maxqueue, creates and counts
 * the job, and defers, queues or stores it; each entry point only encodes its result in its own
 * protocol. The restore of a stored job (store.c) is the one other place that creates jobs. */
#ifndef SPUR_SUBMIT_H
#define SPUR_SUBMIT_H

#include <stddef.h>
#include <stdint.h>

#include "job.h"

#ifdef __cplusplus
extern "C" {
#endif

struct engine;
struct list_node;
struct peer;

/* What became of a submit. */
enum submit_result {
    SUBMIT_CREATED = 0,     /* a new job (out.job): answer now */
    SUBMIT_JOINED,          /* joined the live job out.job with the same unique: answer now */
    SUBMIT_HELD,            /* created or joined out.job, but the reply to the owner waits
                               until the job is durable (the store's sink answers it) */
    SUBMIT_BAD_NAME,        /* the function name is one no function may have (func_name_ok) */
    SUBMIT_QUEUE_FULL,      /* the function's maxqueue for that priority is reached */
    SUBMIT_TOO_MANY_FUNCTIONS, /* a new function past --max-functions, none can be evicted */
    SUBMIT_NO_MEMORY,       /* out of memory (nothing was created) */
    SUBMIT_STORE_ERROR,     /* the store could not take the job (nothing was created) */
    SUBMIT_WAIT_REFUSED,    /* the job may not wait for its after[] (a limit of the feature
                               that owns waiting: engine_ext.wait_refused; reason in out.why) */
    SUBMIT_BROADCAST,       /* fanned out to the workers of a broadcast function
                               (engine_ext.job_broadcast): no job, out.id names it: answer now */
    SUBMIT_BROADCAST_REFUSED, /* a broadcast function takes only background submits to run
                               now, without --after: reason in out.why ("CODE Text+in+admin
                               +form") */
};

/* Flags of struct submit_req. */
enum {
    SUBMIT_NO_MAXQUEUE = 1u << 0, /* maxqueue does not apply (a 'load' restores what was) */
    SUBMIT_LIMBO = 1u << 1,       /* a new job is left in limbo, unstored: the caller places
                                     it itself (a 'load' stores it as dumped, with its state) */
    SUBMIT_JOIN_AS_IS = 1u << 2,  /* a live job with the unique is joined unchanged: not brought
                                     back from the dead-letter list, not made background (a
                                     'load' of a job that is there changes nothing) */
};

/* struct submit_life is the lifetime a submit asks for its new job (docs/JOB-LIFETIME.md):
 * zero fields are unset (a function's default, lifetime.h, may apply). */
struct submit_life {
    uint32_t timeout_ms; /* fail the job this long after its start on a worker, 0 = none */
    uint32_t ttl_s;      /* expire it if no worker started it this long after it was due */
};

/* struct submit_req is one request to submit a job. Every pointer is borrowed for the call;
 * the job copies what it keeps. */
struct submit_req {
    const char *func;       /* function name (func_len bytes, any byte but NUL) */
    size_t func_len;        /* its length */
    const char *unique;     /* unique key ("" for none; "-" coalesces by payload) */
    size_t unique_len;      /* its length */
    const char *reducer;    /* reducer name (SUBMIT_REDUCE_JOB*), NULL for none */
    size_t reducer_len;     /* its length */
    const void *data;       /* the payload */
    size_t data_len;        /* its length */
    enum job_prio prio;     /* priority */
    int background;         /* a background job: nobody waits, durable with a store */
    double due;             /* when a new job may run (epoch time), 0 or past = now */
    const uint64_t *after;  /* handle numbers a new job waits for (engine_ext.job_wait) */
    size_t nafter;          /* how many (0: it does not wait) */
    struct peer *client;    /* the client that waits on a foreground job (opaque here), NULL
                               for none */
    struct list_node *client_jobs; /* client's list of foreground jobs it waits on (a waiter's
                                      pnode is linked there) */
    void *owner;            /* the owner of the reply the store holds until a background job
                               is durable (store.h, opaque here); NULL: nothing is held */
    int owner_held;         /* owner already has replies held by the store: a join waits too,
                               so replies stay in request order */
    const char *log;        /* what the job log says of a new job ("created") */
    unsigned flags;         /* SUBMIT_* flags */
    struct submit_life life; /* its timeout and time to live (engine_ext.life_new) */
};

/* struct submit_out is what job_submit tells its caller besides the result. */
struct submit_out {
    struct job *job;        /* the job created or joined (CREATED, JOINED, HELD), else NULL */
    const char *why;        /* SUBMIT_WAIT_REFUSED, SUBMIT_BROADCAST_REFUSED: the feature's
                               reason, else NULL */
    uint64_t id;            /* SUBMIT_BROADCAST (and SUBMIT_HELD without a job): the handle
                               number of the broadcast, which no job has */
};

/* job_submit submits the job rq describes, in this order: the function (found or created:
 * BAD_NAME, TOO_MANY_FUNCTIONS, NO_MEMORY), a broadcast function's fan-out
 * (engine_ext.job_broadcast: BROADCAST, BROADCAST_REFUSED), a live job with the same unique to join (a
 * dead-letter one is brought back through engine_ext.job_revive; a background submit makes a
 * foreground job background, and durable), maxqueue (QUEUE_FULL), the waiting limits
 * (WAIT_REFUSED), the new job, counted in func_count and logged, then for a background job
 * with a store (engine.durable) its record, the reply held for the owner (HELD); else the
 * owner becomes the waiter of a foreground job, and the job is deferred to rq->due, left
 * waiting, or queued. Wake-ups wait for engine_drain_ready. A refusal leaves nothing behind.
 * Returns the result, out filled. */
enum submit_result job_submit(struct engine *e, const struct submit_req *rq,
                              struct submit_out *out);

/* job_submit_copy creates one copy of a submit that job_submit fanned out (engine_ext.
 * job_broadcast), when the worker it is for takes it: a job of f with no unique and no client
 * (nothing re-queues it), the reducer and payload copied, counted as submitted and logged with
 * log. Returns it in JOB_LIMBO, or NULL when out of memory. The one other place jobs are made
 * for submissions, so that job_new stays the core submit's. */
struct job *job_submit_copy(struct engine *e, struct func *f, enum job_prio prio,
                            const char *reducer, size_t reducer_len, const void *data,
                            size_t data_len, const char *log);

#ifdef __cplusplus
}
#endif
#endif

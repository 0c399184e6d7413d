/* SPDX-License-Identifier: BSD-3-Clause */
/* engine: the server's pure state (connections as peers, functions, jobs) and the seam to the
 * I/O shell. Nothing here includes <ev.h> or touches a socket, so tests drive it directly. */
#ifndef SPUR_ENGINE_H
#define SPUR_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "heap.h"
#include "hist.h"
#include "hmap.h"
#include "idtab.h"
#include "list.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ENGINE_ADMIN_TABLES 8 /* admin command tables the features may register (admin.h) */
#define PRIO_SNAPSHOT 3 /* priorities in struct engine_snapshot (PRIO_COUNT in job.h) */

struct acl;
struct admin_cmd;
struct admin_listing;
struct peer;
struct engine;
struct engine_snapshot;
struct func;
struct job;
struct store;

/* struct engine_ops is what the engine asks of the shell that owns the sockets. */
struct engine_ops {
    /* output: p has new bytes in its output queue; flush them before the loop sleeps. */
    void (*output)(struct engine *e, struct peer *p);
    /* close: tear p down once the current callback has returned. */
    void (*close)(struct engine *e, struct peer *p);
    /* shutdown: stop the server; graceful lets running jobs finish first. */
    void (*shutdown)(struct engine *e, int graceful);
    /* now: the current wall-clock time in seconds (the loop's cached time). */
    double (*now)(struct engine *e);
    /* resume: p had stopped taking input (a listing in progress) and takes it again. */
    void (*resume)(struct engine *e, struct peer *p);
};

/* struct engine_sink is how the core (engine, job, func, worker) says what must be told to whom,
 * without knowing packet encodings or connection fields: a client or worker is an opaque struct
 * peer pointer the core hands back and never dereferences. The protocol side implements it (cmd.c:
 * cmd_sink for the real server); tests record the calls. Every member must be set. Calls happen
 * after the handler that caused them returned (engine_drain_ready) for wake-ups and held GRABs,
 * and at once for failures and store notices. */
struct engine_sink {
    /* wake: worker (asleep after PRE_SLEEP) has work: NOOP. */
    void (*wake)(struct engine *e, struct peer *worker);
    /* assign: answer worker's held GRAB of kind grab (worker_hold) with j, already running on
     * it: JOB_ASSIGN / JOB_ASSIGN_UNIQ / JOB_ASSIGN_ALL. */
    void (*assign)(struct engine *e, struct peer *worker, uint32_t grab, const struct job *j);
    /* no_job: answer worker's held GRAB with NO_JOB (deadline, shutdown, other input). */
    void (*no_job)(struct engine *e, struct peer *worker);
    /* job_failed: every client waiting on j is told it failed (WORK_FAIL); j is still whole. */
    void (*job_failed)(struct engine *e, const struct job *j);
    /* closing: client is being torn down; it is no candidate for a wake-up any more. */
    int (*closing)(const struct engine *e, const struct peer *client);
    /* stored_gone: j, which had been added to the durable store (JOB_STORED), is finished or
     * cancelled: the store may forget it. Set by whoever owns the store. */
    void (*stored_gone)(struct engine *e, const struct job *j);
    /* job_stopped: j, running on worker, was cancelled or passed its timeout (the core stops
     * waiting for its result): returns 1 when the worker was told (it opted in to the notice,
     * docs/PROTOCOL-EXTENSIONS.md) and will send nothing more about j that matters, 0 when not.
     * NULL: tell nobody. */
    int (*job_stopped)(struct engine *e, struct peer *worker, const struct job *j);
};

/* struct engine_ext is where the features beyond Gearman (retry policies and the dead-letter
 * list, dependencies, schedules: docs/BEYOND-GEARMAN.md) hook into the core and the store, so
 * that neither knows them: the core calls a feature only through these members and keeps its
 * state as opaque pointers. Every member may be NULL (engine_init zeroes them); each feature sets
 * its own when it is attached (feature_set.h attaches them all). The store calls job_restored and
 * record_restored while it replays (and a load calls them too); the core calls job_failed,
 * job_completed, job_left, job_gone, job_freed, check and destroy; a dump calls job_meta and
 * record_each. A record's kind indexes the record arrays (STORE_REC_* of store_batch.h, which
 * is ENGINE_EXT_KINDS wide); a feature's check and destroy share one of ENGINE_EXT_SLOTS slots
 * (engine_ext_join). */
#define ENGINE_EXT_KINDS 8
#define ENGINE_EXT_COUNTERS 8 /* counter tables features may add (metrics_add) */
struct metrics_table;
#define ENGINE_EXT_SLOTS 8
struct store_record;
struct submit_req;
struct submit_out;
struct worker;
struct ability;
/* engine_ext_check_fn is a feature's invariant check (engine_ext.check); engine_ext_destroy_fn
 * frees a feature's state (engine_ext.destroy). */
typedef int (*engine_ext_check_fn)(const struct engine *e, char *err, size_t errlen);
typedef void (*engine_ext_destroy_fn)(struct engine *e);

struct engine_ext {
    /* job_restored: j (JOB_LIMBO, background, stored) came back with meta (meta_len bytes) and
     * was due at when: returns 1 when the feature took it (a dead-letter list, a waiting place,
     * its own deferral), 0 to let the caller make it runnable at when as usual. */
    int (*job_restored)(struct engine *e, struct job *j, const char *meta, size_t meta_len,
                        double when);
    /* job_meta: the meta j (flagged JOB_EXT) would be stored with now, into out (cap bytes);
     * returns its length, 0 for none. */
    size_t (*job_meta)(const struct engine *e, const struct job *j, char *out, size_t cap);
    /* job_freed: j (flagged JOB_EXT) is being freed (job_free): forget its side state. */
    void (*job_freed)(struct engine *e, struct job *j);
    /* record_restored[kind]: a record of this kind came back from the store or a load: apply it
     * (0), or refuse it (-1, a reason in err; a replayed one is logged and skipped). */
    int (*record_restored[ENGINE_EXT_KINDS])(struct engine *e, const struct store_record *r,
                                             char *err, size_t errlen);
    /* record_each[kind]: calls cb for every live record of this kind (a dump). */
    void (*record_each[ENGINE_EXT_KINDS])(const struct engine *e,
                                          void (*cb)(void *ctx, const struct store_record *r),
                                          void *ctx);
    /* counters: the tables of counters the features add to stats, stats json and metrics
     * (metrics.h, metrics_add), in the order added, NULL after the last. The core never reads
     * them. */
    const struct metrics_table *counters[ENGINE_EXT_COUNTERS];
    /* job_revive: a submit (job_submit) joined j, which is in the dead-letter list
     * (JOB_FAILED): bring it back to run again, as 'retry job' does. */
    void (*job_revive)(struct engine *e, struct job *j);
    /* wait_refused: a submit asks for a new job waiting for the jobs numbered after[0..n): NULL
     * when it may wait, else why not (a limit of the feature), as "CODE Text+in+admin+form". */
    const char *(*wait_refused)(const struct engine *e, const uint64_t *after, size_t n);
    /* job_wait: make j, just created by a submit (JOB_LIMBO), wait for the jobs numbered
     * after[0..n) (n > 0): 0, or -1 out of memory (j left in limbo without side state). */
    int (*job_wait)(struct engine *e, struct job *j, const uint64_t *after, size_t n);
    /* job_failed: running job j failed (WORK_FAIL, WORK_EXCEPTION with its data, a
     * CAN_DO_TIMEOUT: err[0..len) says which), before it is freed: returns 1 when the feature
     * took it (j is then the feature's, deferred or parked), 0 to let the caller fail it. */
    int (*job_failed)(struct engine *e, struct job *j, const char *err, size_t len);
    /* job_completed: j completed (WORK_COMPLETE), before it is freed. */
    void (*job_completed)(struct engine *e, struct job *j);
    /* job_left: j leaves a place a feature keeps (state is JOB_FAILED or JOB_WAITING of
     * job.h) for JOB_LIMBO (job_detach): the feature takes it out of its place. */
    void (*job_left)(struct engine *e, struct job *j, int state);
    /* job_gone: j is being freed without having completed (job_free, after job_detach); a
     * feature installs it only while it has work for it (jobx: while a job waits for one). */
    void (*job_gone)(struct engine *e, struct job *j);
    /* check[i]: a feature's invariant check, run by engine_check after the core's own: 0, or
     * -1 with a description in err (engine_check_fail). */
    engine_ext_check_fn check[ENGINE_EXT_SLOTS];
    /* destroy[i]: frees a feature's state; engine_destroy calls it once the jobs are freed. */
    engine_ext_destroy_fn destroy[ENGINE_EXT_SLOTS];
    /* job_broadcast: a submit (job_submit) of rq to f, a broadcast function (func.broadcast):
     * fan it out to f's workers (or refuse it) and release f; returns the submit's result
     * (SUBMIT_BROADCAST, SUBMIT_HELD, SUBMIT_BROADCAST_REFUSED with out->why, ...). */
    int (*job_broadcast)(struct engine *e, struct func *f, const struct submit_req *rq,
                         struct submit_out *out);
    /* inbox_take: worker w grabs and its inbox (worker.inbox) is not empty: the next copy as a
     * new job in limbo, *via the ability it is for; NULL when none is left (worker_take). */
    struct job *(*inbox_take)(struct engine *e, struct worker *w, struct ability **via);
    /* worker_letgo: w lets go of its jobs of f (every function if f is NULL: it left, or reset
     * its abilities), before they are re-queued: its broadcast copies are lost. */
    void (*worker_letgo)(struct engine *e, struct worker *w, const struct func *f);
    void *bcast;      /* the broadcast functions (ext/broadcast.h), opaque here; NULL until
                         attached */
    /* flow_started / flow_stopped: j, of a function with flow state (func.flow), started
     * running (job_start) / stopped running (job_detach of a running job: completed, failed,
     * requeued, cancelled, its worker gone): flow control counts it against the limits and
     * holds the function back or lets it go (func_gate). */
    /* flow_push: j (becoming JOB_READY) of a function with flow state joins its ready jobs:
     * returns 1 when the feature linked j.qnode into a queue of its own (a key's), 0 to let the
     * core queue it (func.queue). flow_unlink: j leaves them: returns 1 when the feature
     * unlinked j.qnode, 0 to let the core. flow_first: the job of f a grab at priority p takes
     * (func_open(f, p) holds), NULL for the head of f->queue[p]. */
    int (*flow_push)(struct engine *e, struct job *j, int at_head);
    int (*flow_unlink)(struct engine *e, struct job *j);
    struct job *(*flow_first)(struct engine *e, struct func *f, int p);
    void (*flow_started)(struct engine *e, struct job *j);
    void (*flow_stopped)(struct engine *e, struct job *j);
    /* flow_room: how many more jobs of f (with flow state) may start now (UINT32_MAX: no
     * bound): func_wake_now wakes no more workers than that. */
    uint32_t (*flow_room)(struct engine *e, const struct func *f);
    /* timer_next: a feature's earliest deadline (flow control's token buckets), negative for
     * none; engine_next_timer includes it. timer_run: engine_run_timers calls it with the
     * time, before the wake-ups are drained. */
    double (*timer_next)(const struct engine *e);
    void (*timer_run)(struct engine *e, double now);
    /* life_new: a submit (job_submit) created j (JOB_LIMBO) for rq, with the per-job timeout
     * and time to live of rq->life (0 = none; the feature adds a function's defaults): it
     * keeps them beside j, flagged JOB_LIFE (a job about to be queued at once with a TTL
     * alone may be put in e->timers already, by its timer field). 0, or -1 out of memory.
     * Called when rq->life sets one, or when life_defaults > 0. */
    int (*life_new)(struct engine *e, struct job *j, const struct submit_req *rq);
    /* life_ready: j (JOB_LIFE) became ready (func_push): a job never started with a time to
     * live is put in e->timers by its timer field until it expires (life_expired). */
    void (*life_ready)(struct engine *e, struct job *j);
    /* life_started: j (JOB_LIFE) starts on a worker whose CAN_DO_TIMEOUT is timeout_ms (0:
     * none): its time to live is over; returns the deadline job_start arms, in ms: the
     * smaller of timeout_ms and j's own timeout (0: none). */
    uint32_t (*life_started)(struct engine *e, struct job *j, uint32_t timeout_ms);
    /* life_expired: ready job j's time to live passed (its timer, engine_run_timers): the
     * feature takes it out of its queue and fails, dead-letters or drops it. */
    void (*life_expired)(struct engine *e, struct job *j);
    /* life_timed_out: running job j (JOB_LIFE) passed the deadline life_started returned:
     * 1 when it was j's own timeout (worker_job_timeout fails it as JOB_TIMEOUT), 0 when it
     * was the worker's CAN_DO_TIMEOUT. */
    int (*life_timed_out)(struct engine *e, const struct job *j);
    /* life_freed: j (JOB_LIFE) is being freed (job_free): forget its lifetime. */
    void (*life_freed)(struct engine *e, struct job *j);
    size_t life_defaults; /* per-function default timeouts and times to live (lifetime.h): while
                             0, a submit that sets neither costs no call */
    void *jobx;       /* the retries/dead-letter/dependency state (jobx.h), opaque here; NULL
                         until attached or first used */
    void *flow;       /* flow control's state (ext/flow.h), opaque here; NULL when not
                         attached */
    void *recur;      /* the recurring schedules (recur.h), opaque here; NULL when not attached */
    void *lifetime;   /* per-job timeouts and times to live (lifetime.h), opaque here; NULL
                         when not attached */
    size_t schedules; /* schedules defined, a gauge kept by recur.c (for stats and metrics) */
};

/* struct engine_durable is how the core submit (job_submit) reaches the durable store without
 * naming it: store_start sets it when it sets engine.store_mgr, and it is all NULL without a
 * store. owner is the opaque peer a held reply goes to (store_sink), NULL for none. */
struct engine_durable {
    /* add: record background job j (with meta, meta_len bytes, NULL for none) in the next
     * batch, holding the reply to owner until it is durable; due is when j may run (0 = now).
     * 0, or -1 out of memory (store_add_meta). */
    int (*add)(struct engine *e, struct job *j, void *owner, double due, const char *meta,
               size_t meta_len);
    /* ack: hold a reply about j to owner behind owner's held replies (store_ack): 0 or -1. */
    int (*ack)(struct engine *e, struct job *j, void *owner);
};

/* What a connection did, which makes it a client, a worker or an admin connection (one may be
 * several). PEER_KIND_NONE is a connection that did none of these (yet). */
enum peer_kind { PEER_KIND_CLIENT = 0, PEER_KIND_WORKER, PEER_KIND_ADMIN, PEER_KIND_NONE,
                 PEER_KINDS };

/* Events in a job's life, counted per priority (engine_stats.jobs) and per function
 * (func.events). A job created by a submit ends in exactly one of COMPLETED, FAILED, EXCEPTION,
 * TIMED_OUT, LOST, CANCELLED (queued when cancelled) or ABANDONED, unless still live. */
enum job_event {
    JOB_EV_SUBMITTED = 0, /* a submit created a new job */
    JOB_EV_COALESCED,     /* a submit joined a live job with the same unique instead */
    JOB_EV_ASSIGNED,      /* the job was handed to a worker (each time) */
    JOB_EV_RETRIED,       /* ... of those, handed out again after a requeue */
    JOB_EV_COMPLETED,     /* the worker sent WORK_COMPLETE */
    JOB_EV_FAILED,        /* the worker sent WORK_FAIL */
    JOB_EV_EXCEPTION,     /* the worker sent WORK_EXCEPTION */
    JOB_EV_TIMED_OUT,     /* the worker passed CAN_DO_TIMEOUT or the job's own timeout
                             (failed, or re-queued with --can-do-timeout=requeue) */
    JOB_EV_REQUEUED,      /* put back at the head of its queue: its worker was lost (closed,
                             CANT_DO, RESET_ABILITIES) or timed out with requeue */
    JOB_EV_LOST,          /* failed by the server: its worker was lost --job-retries times */
    JOB_EV_CANCELLED,     /* cancelled by the admin 'cancel job' */
    JOB_EV_ABANDONED,     /* a foreground job dropped because no client waits for it */
    JOB_EVENTS,
};

/* Kinds of malformed input (engine_stats.protocol_error). */
enum proto_error_kind {
    PERR_BAD_MAGIC = 0,  /* a binary packet without \0REQ or \0RES: the connection closes */
    PERR_WRONG_MAGIC,    /* a response (\0RES) packet sent to the server */
    PERR_TOO_LARGE,      /* a packet larger than --max-packet-size */
    PERR_BAD_COMMAND,    /* an unknown command number */
    PERR_BAD_ARGS,       /* fewer argument separators than the command has arguments */
    PERR_LINE_TOO_LONG,  /* an admin line longer than --max-line-length */
    PERR_UNRECOGNISED,   /* no protocol recognised: the connection closes */
    PERR_KINDS,
};

/* What a refusal by acl.c refused (engine_stats.permission_denied). */
enum { DENIED_SUBMIT = 0, DENIED_CAN_DO, DENIED_ADMIN, DENIED_KINDS };

/* struct engine_stats counts what the server did, for logs, admin and metrics. Every field is
 * cumulative since the start or the last 'stats reset', incremented in O(1) where the event
 * happens; gauges (what is, not what happened) are kept elsewhere. */
#define ENGINE_SUBMIT_RESULTS 12 /* at least the number of enum submit_result values (submit.h) */

struct engine_stats {
    uint64_t connections;   /* peers ever added */
    uint64_t packets;       /* binary packets handled */
    uint64_t lines;         /* admin lines handled */
    uint64_t protocol_errors; /* malformed input answered or closed */
    uint64_t shed;          /* connections closed because all buffers passed --max-buffer-memory */
    uint64_t shed_bytes;    /* buffered bytes those connections held when closed */
    uint64_t status_coalesced; /* unsent WORK_STATUS packets replaced by a newer one */
    uint64_t conn_kind[PEER_KINDS]; /* connections that acted as each kind (NONE: counted when
                                       one closes without having done anything) */
    uint64_t conn_rejected[PEER_KINDS]; /* connections closed by the server (malformed input,
                                           --max-output-buffer, --max-buffer-memory, no
                                           memory), by kind (the first of worker, client,
                                           admin that applies) */
    uint64_t accept_errors; /* accept() failures (EMFILE...) and connections refused at once */
    uint64_t tls_handshakes;         /* TLS handshakes completed */
    uint64_t tls_handshake_failures; /* TLS handshakes failed (refused certificate, not TLS...) */
    uint64_t tls_handshake_timeouts; /* TLS connections closed by --ssl-handshake-timeout */
    uint64_t http_request_timeouts;  /* HTTP connections closed by --http-request-timeout */
    uint64_t packets_out;   /* binary packets queued to peers */
    uint64_t bytes_in;      /* bytes read from connections */
    uint64_t bytes_out;     /* bytes written to connections */
    uint64_t protocol_error[PERR_KINDS]; /* protocol_errors by kind */
    uint64_t jobs[JOB_EVENTS][PRIO_SNAPSHOT]; /* job events by priority */
    uint64_t cancelled_running; /* of JOB_EV_CANCELLED, jobs that were running on a worker */
    uint64_t store_commits; /* store batches written */
    uint64_t store_commit_failures; /* store batches whose write failed */
    struct hist store_batch_ops; /* operations (adds and deletions) per batch written */
    struct hist store_commit_seconds; /* from hand-off to the committer to its answer */
    uint64_t store_replayed; /* jobs restored from the store at start-up */
    uint64_t permission_denied[DENIED_KINDS]; /* refusals by acl.c, by DENIED_* */
    uint64_t submit_refused[ENGINE_SUBMIT_RESULTS]; /* submits job_submit refused, by its
                                                       result (enum submit_result, submit.h) */
    uint64_t retries;       /* failed background jobs deferred to a retry (jobx.h) */
    uint64_t failed_dropped; /* dead-letter jobs dropped past --max-failed-jobs (jobx.h) */
    uint64_t schedule_fired;     /* schedule firings that submitted or joined a job (recur.h) */
    uint64_t schedule_coalesced; /* ... of those, joined a live job with their unique */
    uint64_t schedule_refused;   /* schedule firings refused (maxqueue, memory, store) */
    uint64_t functions_evicted;  /* unused functions freed to make room past --max-functions */
    uint64_t broadcast_jobs;     /* background submits fanned out to a broadcast function's
                                    workers (ext/broadcast.h) */
    uint64_t broadcast_unheard;  /* ... of those, with no worker registered: dropped */
    uint64_t broadcast_delivered; /* broadcast copies handed to their worker (JOB_ASSIGN) */
    uint64_t broadcast_lost;     /* copies lost: their worker left (or stopped doing the
                                    function) before finishing them, or its backlog was full */
    uint64_t job_timeouts;       /* running jobs that passed their own timeout (lifetime.h) */
    uint64_t jobs_expired;       /* queued jobs that passed their time to live (lifetime.h) */
};

/* struct engine is the whole pure server state. */
struct engine {
    const struct config *cfg;     /* settings (borrowed, outlives the engine) */
    struct engine_ops ops;        /* the shell's callbacks */
    struct engine_sink sink;      /* what to tell clients and workers (engine_set_sink) */
    struct engine_ext ext;        /* the features beyond Gearman (all NULL when none attached) */
    struct engine_durable durable; /* the store as the core submit sees it (all NULL without) */
    struct list_node ready;       /* functions with a wake-up to do (func->wake), in order */
    void *shell;                  /* the shell's own pointer, for its callbacks */
    struct list_node peers;       /* all connected peers, oldest first (struct peer.node) */
    size_t npeers;                /* peers in the list */
    struct engine_stats stats;    /* counters */
    struct acl *acl;              /* access rules (acl.h), NULL when none are configured: the
                                     hot path tests only this pointer */
    int shutting_down;            /* graceful shutdown: no new assignments, wait for running */
    size_t buffered;              /* bytes held by all open peers' input buffers and output
                                     queues (the sum of peer.held), for --max-buffer-memory */
    size_t buffered_peak;         /* the highest buffered has been */
    uint64_t queued_packets;      /* replies queued to any peer: bounds the work one peer's
                                     input may cause in one turn (PEER_PACKET_QUOTA) */

    struct hmap funcs;            /* struct func by name */
    struct hmap abilities;        /* struct ability by (worker, function) */
    struct list_node func_list;   /* every function in creation order (func.anode), and the
                                     markers of 'status' listings */
    struct list_node func_idle;   /* functions that were unused when last released
                                     (func.unode), least recently first: evicted in this
                                     order past --max-functions (func_get) */
    struct list_node listings;    /* peers with a 'show' listing still to write
                                     (peer.listing_node), in turn order */
    struct list_node worker_listings; /* 'workers' listings in progress (admin.c) */
    const struct admin_cmd *admin_cmds[ENGINE_ADMIN_TABLES]; /* the admin command tables the
                                     features registered (admin_register), each ended by a row
                                     without a name; admin.c's own rows are not among them */
    size_t admin_tables;          /* how many of admin_cmds are set */
    uint64_t peer_seq;            /* attach number of the next peer */
    struct idtab jobs;            /* every job by handle number, in that order (listings
                                     walk it with a cursor: idtab_next) */
    uint64_t func_seq;            /* creation number of the next new function */
    struct hmap jobs_by_unique;   /* struct job by unique, one entry per job: the oldest of a
                                     unique (JOB_UHEAD, heading the ring of the others) by the
                                     unique alone, for GET_STATUS_UNIQUE; the others by
                                     function and unique; "-" by function and payload */
    struct hmap unique_rings;     /* the ring nodes of the jobs whose unique is shared by
                                     several functions (JOB_RING), by job pointer (job.c) */
    struct hmap job_status;       /* struct job_status by job pointer: the last WORK_STATUS of
                                     the jobs that have one (JOB_STATUS; job_set_status) */
    struct heap timers;           /* epoch due times and CAN_DO_TIMEOUT deadlines */
    uint64_t next_id;             /* handle number of the next new job */
    uint64_t seed;                /* hash seed */
    size_t njobs;                 /* live jobs */
    size_t nrunning;              /* jobs assigned to workers */
    char prefix[48];              /* job handle prefix, e.g. "H:hostname" */
    size_t prefix_len;            /* bytes in prefix */
    struct store *store_mgr;      /* the durable store, NULL for memory only (store.h) */
    int replaying;                /* stored jobs are still being loaded: no job is handed out */
    int destroying;               /* engine_destroy runs: functions are freed all at once */
    struct list_node held;        /* workers whose GRAB waits for a job (worker.hnode),
                                     oldest first, so the first has the earliest deadline */
    struct list_node woken;       /* workers whose NOOP is unanswered (worker.wnode), oldest
                                     first (worker_expire_wakes) */
    size_t nworkers;              /* live struct worker (worker_new .. worker_gone) */
    size_t conn_now[PEER_KINDS];  /* open connections that acted as each kind (NONE unused) */
    size_t job_bytes;             /* bytes allocated for live jobs (struct, unique, reducer,
                                     payload), a gauge */
    double started;               /* engine_now at engine_init: the start, for uptime */
};

/* engine_init sets up e with cfg and the shell's callbacks. Returns 0 or -1. */
int engine_init(struct engine *e, const struct config *cfg, const struct engine_ops *ops,
                void *shell);

/* engine_set_sink installs what the core tells clients and workers through (engine_init
 * installs one that tells nobody). */
void engine_set_sink(struct engine *e, const struct engine_sink *sink);

/* engine_drain_ready does the wake-ups asked for since the last drain (func_wake): held GRABs
 * get their jobs, sleepers a NOOP. Called once the session has handled a whole read (not after
 * each packet, so a held GRAB takes the best job of a pipelined burst), after a peer's teardown
 * and the timers, and by the shell before the loop flushes and sleeps; it is cheap when nothing
 * waits. */
void engine_drain_ready(struct engine *e);

/* engine_begin_shutdown starts a graceful shutdown: nothing new is assigned, every held GRAB is
 * answered NO_JOB, running jobs may finish. The shell calls it from engine_ops.shutdown and
 * stops its listeners itself. */
void engine_begin_shutdown(struct engine *e);

/* struct engine_snapshot is a copy of the engine's counters at one moment, independent of
 * uptime and of any listing: the API admin and a metrics module read. */
struct engine_snapshot {
    struct engine_stats stats;        /* the event counters (struct engine_stats) */
    size_t jobs;                      /* live jobs, in any state */
    size_t running;                   /* jobs assigned to workers */
    uint64_t queued[PRIO_SNAPSHOT];   /* jobs waiting (ready, future or pending) per priority */
    size_t functions;                 /* functions known */
    size_t workers;                   /* connections that sent a worker packet */
    size_t abilities;                 /* (worker, function) pairs registered */
    size_t held;                      /* GRABs held unanswered */
    size_t peers;                     /* connections attached */
    size_t buffered;                  /* bytes held by all connections' buffers */
    size_t buffered_peak;             /* the most that has been */
    size_t conn_now[PEER_KINDS];      /* open connections that acted as each kind */
    size_t job_bytes;                 /* bytes allocated for live jobs */
    double started;                   /* engine_now at start (uptime = now - started) */
};

/* engine_stats_get fills *st with the current counters. O(functions) for the per-priority
 * queue counts; everything else O(1). */
void engine_stats_get(const struct engine *e, struct engine_snapshot *st);

/* engine_stats_reset zeroes every cumulative counter (struct engine_stats and each function's
 * events and histograms: the admin 'stats reset'); gauges are left alone. O(functions). */
void engine_stats_reset(struct engine *e);

/* engine_destroy frees everything e holds. Peers must have been removed first. */
void engine_destroy(struct engine *e);

/* engine_check verifies the engine's invariants by walking every structure: each job is in
 * exactly one place, every counter matches its queue, ready lists match non-empty queues, no
 * held GRAB while a job is ready for it. The per-connection part is session_check.
 * Returns 0, or -1 with a description in err. O(jobs + functions + abilities): for tests and the
 * fuzzer. It writes only the functions' scratch counters (func.check). */
int engine_check(const struct engine *e, char *err, size_t errlen);

/* engine_ext_join registers a feature's invariant check and teardown (either may be NULL) in a
 * free slot of e->ext.check and e->ext.destroy; joining again with the same pair does nothing.
 * Returns 0, or -1 when all ENGINE_EXT_SLOTS slots are taken. */
int engine_ext_join(struct engine *e, engine_ext_check_fn check, engine_ext_destroy_fn destroy);

/* engine_ext_leave frees the slot engine_ext_join gave the same pair (a feature detached before
 * engine_destroy); does nothing when it has none. */
void engine_ext_leave(struct engine *e, engine_ext_check_fn check, engine_ext_destroy_fn destroy);

/* engine_check_fail formats an invariant violation into err (errlen bytes) and returns -1: the
 * one helper of engine_check and the other layers' checkers (session_check). */
int engine_check_fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* engine_now returns the current wall-clock time in seconds, from the shell. */
double engine_now(struct engine *e);

/* engine_next_timer returns the earliest timer deadline, or a negative value if none. */
double engine_next_timer(const struct engine *e);

/* engine_run_timers handles every timer due at or before now: future jobs become ready (and
 * workers are woken), running jobs past their CAN_DO_TIMEOUT fail, held GRABs get NO_JOB. */
void engine_run_timers(struct engine *e, double now);

/* engine_release_grabs answers every held GRAB with NO_JOB (graceful shutdown). */
void engine_release_grabs(struct engine *e);

#ifdef __cplusplus
}
#endif
#endif

/* SPDX-License-Identifier: BSD-3-Clause */
/* engine: the server's pure state (connections as peers, functions, jobs) and the seam to the
 * I/O shell. Nothing here includes <ev.h> or touches a socket, so tests drive it directly. */
#ifndef SPUR_ENGINE_H
#define SPUR_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "heap.h"
#include "hmap.h"
#include "list.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PRIO_SNAPSHOT 3 /* priorities in struct engine_snapshot (PRIO_COUNT in job.h) */

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
};

/* struct engine_stats counts what the server did, for logs and admin. */
struct engine_stats {
    uint64_t connections;   /* peers ever added */
    uint64_t packets;       /* binary packets handled */
    uint64_t lines;         /* admin lines handled */
    uint64_t protocol_errors; /* malformed input answered or closed */
    uint64_t shed;          /* connections closed because all buffers passed --max-buffer-memory */
    uint64_t shed_bytes;    /* buffered bytes those connections held when closed */
    uint64_t status_coalesced; /* unsent WORK_STATUS packets replaced by a newer one */
};

/* struct engine is the whole pure server state. */
struct engine {
    const struct config *cfg;     /* settings (borrowed, outlives the engine) */
    struct engine_ops ops;        /* the shell's callbacks */
    struct engine_sink sink;      /* what to tell clients and workers (engine_set_sink) */
    struct list_node ready;       /* functions with a wake-up to do (func->wake), in order */
    void *shell;                  /* the shell's own pointer, for its callbacks */
    struct list_node peers;       /* all connected peers, oldest first (struct peer.node) */
    size_t npeers;                /* peers in the list */
    struct engine_stats stats;    /* counters */
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
    struct list_node listings;    /* peers with a 'show' listing still to write
                                     (peer.listing_node), in turn order */
    struct list_node worker_listings; /* 'workers' listings in progress (admin.c) */
    uint64_t peer_seq;            /* attach number of the next peer */
    struct hmap jobs_by_id;       /* struct job by handle number */
    struct list_node jobs;        /* every job in handle-number order (job.anode) */
    uint64_t func_seq;            /* creation number of the next new function */
    struct hmap jobs_by_unique;   /* struct job by unique (all functions; "-" by payload) */
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
    size_t nworkers;              /* live struct worker (worker_new .. worker_gone) */
};

/* engine_init sets up e with cfg and the shell's callbacks. Returns 0 or -1. */
int engine_init(struct engine *e, const struct config *cfg, const struct engine_ops *ops,
                void *shell);

/* engine_set_sink installs what the core tells clients and workers through (engine_init
 * installs one that tells nobody). */
void engine_set_sink(struct engine *e, const struct engine_sink *sink);

/* engine_drain_ready does the wake-ups asked for since the last drain (func_wake): held GRABs
 * get their jobs, sleepers a NOOP. Called after each handler returns (cmd_dispatch, a peer's
 * teardown, timers) and by the shell before the loop flushes and sleeps; it is cheap when
 * nothing waits. */
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
};

/* engine_stats_get fills *st with the current counters. O(functions) for the per-priority
 * queue counts; everything else O(1). */
void engine_stats_get(const struct engine *e, struct engine_snapshot *st);

/* engine_destroy frees everything e holds. Peers must have been removed first. */
void engine_destroy(struct engine *e);

/* engine_check verifies the engine's invariants by walking every structure: each job is in
 * exactly one place, every counter matches its queue, ready lists match non-empty queues, no
 * held GRAB while a job is ready for it. The per-connection part is session_check.
 * Returns 0, or -1 with a description in err. O(jobs + functions + abilities): for tests and the
 * fuzzer. It writes only the functions' scratch counters (func.check). */
int engine_check(const struct engine *e, char *err, size_t errlen);

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

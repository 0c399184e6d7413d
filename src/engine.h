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

struct admin_listing;
struct peer;
struct engine;
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
    struct func *func_list;       /* every function in creation order */
    struct peer *listings;        /* peers with a 'show' listing still to write */
    struct admin_listing *worker_listings; /* 'workers' listings in progress (admin.c) */
    uint64_t peer_seq;            /* attach number of the next peer */
    struct func *func_tail;       /* the newest function */
    struct hmap jobs_by_id;       /* struct job by handle number */
    struct job *jobs;             /* every job in handle-number order (job->anext) */
    struct job *jobs_tail;        /* the last of them */
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
    struct worker *held;          /* workers whose GRAB waits for a job, oldest first */
    struct worker *held_tail;     /* the newest of them */
};

/* engine_init sets up e with cfg and the shell's callbacks. Returns 0 or -1. */
int engine_init(struct engine *e, const struct config *cfg, const struct engine_ops *ops,
                void *shell);

/* engine_destroy frees everything e holds. Peers must have been removed first. */
void engine_destroy(struct engine *e);

/* engine_check verifies the engine's invariants by walking every structure: each job is in
 * exactly one place, every counter matches its queue, ready lists match non-empty queues, no
 * held GRAB while a job is ready for it. The per-connection part is session_check.
 * Returns 0, or -1 with a description in err. O(jobs + functions + abilities): for tests and the
 * fuzzer. It writes only the functions' scratch counters (func.check). */
int engine_check(const struct engine *e, char *err, size_t errlen);

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

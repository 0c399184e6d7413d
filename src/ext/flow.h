/* SPDX-License-Identifier: BSD-3-Clause */
/* flow: flow control in the server (docs/FLOW-CONTROL.md): per function a concurrency limit, a
 * rate limit (a token bucket on job starts), per-key limits with fair share between keys, a
 * weight among a worker's functions, and pause. The core asks nothing of it while no function
 * has settings: a function with some carries its state in func.flow, and flow control holds
 * its ready jobs back through func_gate (core/func.h) when it is paused or at a limit. Pure:
 * the shell's one job timer reaches the token buckets through engine_ext.timer_next/timer_run. */
#ifndef SPUR_FLOW_H
#define SPUR_FLOW_H

#include <stddef.h>
#include <stdint.h>

#include "heap.h"
#include "hmap.h"
#include "flow_spec.h"
#include "list.h"

#ifdef __cplusplus
extern "C" {
#endif

struct engine;
struct func;
struct job;
struct metrics_table;

#define FLOW_MAX_FUNCS 100000   /* functions with settings at once */

/* struct flow_bucket is a token bucket: tokens come back at rate per second up to cap; a start
 * takes one, and none may start below one. */
struct flow_bucket {
    double tokens; /* tokens now (as of stamp) */
    double stamp;  /* engine time of the last refill */
    uint32_t pos;  /* position in flow.due (HEAP_NONE when not waiting for a token) */
    struct flow_func *ff; /* the function it limits */
    int of_key;    /* a key's bucket (struct flow_key), not the function's */
};

/* struct flow_key is one key of a function with a key limit: its ready jobs (job.qnode) per
 * priority, the jobs of it running, and its token bucket. */
struct flow_key {
    struct flow_func *ff;               /* its function's state */
    struct list_node queue[3];          /* its ready jobs per priority, oldest first */
    uint32_t ready[3];                  /* jobs in each queue */
    struct list_node rnode[3];          /* ff->ring[p] while it has ready jobs at p and may start
                                           one; unlinked otherwise */
    uint32_t running;                   /* its jobs running */
    struct flow_bucket bucket;          /* with a key rate */
    uint32_t len;                       /* bytes in name */
    char name[];                        /* the key (the unique's part before the separator) */
};

/* struct flow_func is a function's flow state (func.flow). */
struct flow_func {
    struct func *f;             /* the function */
    struct list_node node;      /* flow.funcs, in the order they were set */
    struct flow_settings s;     /* the settings */
    struct flow_bucket bucket;  /* with a rate: the function's token bucket */
    uint32_t over;              /* jobs running above the concurrency limit when it was set
                                   (they may finish; 0 once they have) */
    int keyed;                  /* ready jobs are kept per key (a key limit is set) */
    struct hmap keys;           /* struct flow_key by name (keyed) */
    struct list_node ring[3];   /* keys that may start a job, per priority, in turn */
    uint32_t nkeys;             /* keys known (with ready or running jobs) */
    uint32_t nring;             /* entries in the rings (a key once per priority) */
    uint32_t keys_waiting;      /* keys with ready jobs held back by a key limit */
};

/* struct flow is the feature's state (engine_ext.flow). */
struct flow {
    struct list_node funcs;     /* struct flow_func, in the order set */
    size_t nfuncs;              /* how many */
    struct heap due;            /* buckets waiting for a token, by when it comes back */
    char sep;                   /* --limit-key-separator */
    int restoring;              /* a stored record is being applied: not written back */
};

/* flow_attach installs flow control's hooks on e (features_attach). Returns 0 or -1. */
int flow_attach(struct engine *e);

/* flow_of returns e's flow state, NULL before flow_attach. */
struct flow *flow_of(const struct engine *e);

/* flow_set replaces the settings of the function named name[0..len) (created if need be) with
 * s, applies them at once (jobs held back or let go, workers woken) and, with a store, writes
 * them. Settings all at their defaults remove the function's state. Returns 0, -1 out of memory
 * or a store failure, -2 too many functions with settings (FLOW_MAX_FUNCS), -3 a name no function
 * may have or no function can be made (--max-functions). */
int flow_set(struct engine *e, const char *name, size_t len, const struct flow_settings *s);

/* flow_get fills *s with the settings of the function named name[0..len) (the defaults if it
 * has none). Returns 1 when it has settings, 0 otherwise. */
int flow_get(const struct engine *e, const char *name, size_t len, struct flow_settings *s);

/* flow_apply_config applies the --limit options of e->cfg at start (after store_open; the
 * replay, which ends later, keeps them over the stored limits of their function: record_restored
 * applies them again). Returns 0, or -1 with a message in err. */
int flow_apply_config(struct engine *e, char *err, size_t errlen);

/* flow_marks writes the dashboard's marks of f (dash_data.h's dash_marks_fn): "paused" while
 * it is paused, "limited" while it has a concurrency, rate or key limit. Returns how many (at
 * most max). */
size_t flow_marks(const struct engine *e, const struct func *f, const char **marks, size_t max);

/* flow_held counts the ready jobs of ff's function held back now, by reason: [0] paused, [1] a
 * concurrency limit, [2] a rate limit, [3] a key limit. */
void flow_held(const struct flow_func *ff, uint32_t held[4]);

#ifdef __cplusplus
}
#endif
#endif

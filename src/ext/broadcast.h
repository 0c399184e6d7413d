/* SPDX-License-Identifier: BSD-3-Clause */
/* broadcast: broadcast functions (docs/BROADCAST.md). A background job submitted to a broadcast
 * function is delivered once to every worker registered for it at the time of the submit: the
 * submit (job_submit, through engine_ext.job_broadcast) leaves one copy in each worker's inbox
 * (worker.inbox) and wakes the worker; the worker's next GRAB takes its copy
 * (engine_ext.inbox_take), which only then becomes a job, with a handle of its own, running on
 * that worker. A worker that leaves (or stops doing the function) loses its copies
 * (engine_ext.worker_letgo): nothing is re-queued to another worker. Copies are never stored;
 * the submit is answered once fanned out, with a handle of its own that no job has. A
 * foreground submit, one with --after, or one due later is refused (SUBMIT_BROADCAST_REFUSED).
 * With --store the setting is a STORE_REC_BROADCAST record (key: the function, value "on"). */
#ifndef SPUR_BROADCAST_H
#define SPUR_BROADCAST_H

#include <stddef.h>
#include <stdint.h>

#include "hmap.h"

#ifdef __cplusplus
extern "C" {
#endif

struct engine;

/* The code of the ERROR (and admin ERR) refusing a submit a broadcast function does not take. */
#define BROADCAST_ERR_CODE "BROADCAST_FUNCTION"

/* struct bcast_fn is one function that is, or was, a broadcast function. */
struct bcast_fn {
    uint32_t pending;  /* its copies waiting in workers' inboxes */
    uint8_t on;        /* a broadcast function now (off: kept while copies wait) */
    uint32_t name_len; /* bytes in name */
    char name[];       /* the function's name, NUL-terminated */
};

/* struct bcast is the feature's state (engine_ext.bcast). */
struct bcast {
    struct hmap fns;   /* struct bcast_fn by name */
    size_t nfuncs;     /* entries of fns that are on */
    size_t pending;    /* copies waiting in all inboxes */
};

/* broadcast_attach creates e's broadcast state (e->ext.bcast) and installs its hooks (the
 * submit step, the inbox, the record kind STORE_REC_BROADCAST, a check and a destroy slot),
 * then makes each --broadcast function one. Attaching again does nothing. Returns 0 or -1. */
int broadcast_attach(struct engine *e);

/* broadcast_of returns e's broadcast state, NULL when not attached. */
struct bcast *broadcast_of(const struct engine *e);

/* broadcast_set makes function name[0..len) a broadcast function (on) or an ordinary one. Not
 * stored (broadcast_store does that). Returns 0, -1 out of memory, -2 when the function cannot
 * be created (--max-functions), -3 for a name no function may have. */
int broadcast_set(struct engine *e, const char *name, size_t len, int on);

/* broadcast_store writes the setting of name[0..len) as it is now into the next store batch (a
 * record put when on, deleted when off). Returns 0 (also without a store) or -1. */
int broadcast_store(struct engine *e, const char *name, size_t len);

/* broadcast_find returns the entry of function name[0..len), NULL if none. */
struct bcast_fn *broadcast_find(const struct engine *e, const char *name, size_t len);

/* broadcast_check verifies the feature's invariants: the pending counts match the inboxes,
 * every on entry's function is flagged. Returns 0 or -1 with err. O(abilities x inbox). */
int broadcast_check(const struct engine *e, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif

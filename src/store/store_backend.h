/* SPDX-License-Identifier: BSD-3-Clause */
/* store_backend: the interface a durable store implements (SQLite: store_sqlite.c; PostgreSQL:
 * store_pg.c; the in-memory test backend: store_mem.c), and the table that chooses one from the
 * configuration. A backend owns its options too: its option rows (opt.h, listed in
 * shell/options.c) and the params hook that reads them into its own parameters.
 *
 * The store manager (store.c) owns the batching (store_batch.h: the queue, add/done cancellation),
 * the committer thread, the held replies and the replay hand-off; a backend only opens, writes
 * whole batches, streams its jobs back, keeps its files bounded and closes. Adding a backend is one
 * new file implementing struct store_backend plus one entry in the table of store_open.c.
 *
 * Threading contract (db is what open returned):
 *   - open runs on the loop thread before the committer thread exists; it may block (file checks,
 *     an import) and logs nothing but what it returns, except a recovery report (log_error).
 *   - replay_records, replay, write_batch, maintain and error run on the COMMITTER thread only,
 *     never two at once:
 *     replay once, first; then write_batch for each batch in the order the loop took them, and
 *     maintain about once a second while idle or after a write.
 *   - note and quarantined run on the loop thread, once the replay has finished and before the
 *     loop hands over its first batch (the committer is idle then); error too, after a failed
 *     replay, at that same moment.
 *   - close runs on the loop thread after the committer thread has been joined.
 * A backend takes no lock of its own for this: the manager's hand-off orders memory. */
#ifndef SPUR_STORE_BACKEND_H
#define SPUR_STORE_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "store_batch.h"

#ifdef __cplusplus
extern "C" {
#endif

struct config;

/* struct store_params is what a backend is opened with, from the configuration. */
struct store_params {
    const char *location;     /* what follows "scheme:" in --store (a path for sqlite) */
    const char *shown;        /* the location as logs may show it (no password), NULL: location */
    const char *import_table; /* gearmand's queue table to import, NULL for none */
    int gearmand;             /* 1: opened as gearmand's -q TYPE (import from import_table or the
                                 backend's default table) */
    int sync_normal;          /* --store-sync=normal: do not sync every batch */
    double wait;              /* --store-wait: seconds a write may wait for an unavailable
                                 database before it fails (postgres), 0 = fail at once */
    double timeout;           /* --store-timeout: seconds one write (postgres: one statement, or
                                 one batch) may take before it is given up, 0 = no limit */
    size_t max_function;      /* --max-function-name: longest name a replayed row may have */
    const void *own;          /* the backend's own parameters (what its params hook returned:
                                 struct store_sqlite_params, struct store_pg_params), NULL for
                                 the backend's defaults */
};

/* struct store_backend is one kind of durable store. Every function is required but adopt. */
struct store_backend {
    const char *name; /* for messages: "sqlite" */

    /* params (NULL when the backend has no options of its own) reads the backend's own options
     * from c into its own parameters and returns them (static storage, valid until the next
     * call: one store per process); it may also set p->shown (loop thread, before open). */
    const void *(*params)(const struct config *c, struct store_params *p);

    /* open opens, or creates, the store described by p (loop thread). On return *next_id is at
     * least the largest id the store has ever used + 1 (it is not lowered). Returns the backend's
     * handle, or NULL with a message in err (errlen bytes, NUL-terminated). */
    void *(*open)(const struct store_params *p, uint64_t *next_id, char *err, size_t errlen);

    /* replay calls cb(ctx, r) for every stored job in ascending id order (committer thread); r is
     * valid only during the call. A non-zero return from cb stops it and is returned. Returns 0,
     * cb's value, or -1 on a read error (text in error). */
    int (*replay)(void *db, int (*cb)(void *ctx, const struct store_rec *r), void *ctx);

    /* replay_records calls cb(ctx, r) for every stored record (struct store_record) in (kind,
     * key) order (committer thread, before replay), r valid only during the call. Returns as
     * replay. */
    int (*replay_records)(void *db, int (*cb)(void *ctx, const struct store_record *r), void *ctx);

    /* write_batch writes b (its live adds, each replacing a stored row of the same id; then its
     * dones; then its records in order, each replacing or deleting the stored record of its kind
     * and key; and store_batch_max_id as a high-water mark) as one atomic, durable transaction (committer thread). Returns 0, or -1 with nothing of b
     * stored and the text in store_batch_error(b), or -2 likewise when nothing will ever be
     * written again because another server took this one's jobs over (the server then stops).
     * b may be written again or freed after. */
    int (*write_batch)(void *db, struct store_batch *b);

    /* maintain keeps the store's files bounded; cheap when there is nothing to do (committer). */
    void (*maintain)(void *db);

    /* error returns the text of the last failed operation, or "" (never NULL). */
    const char *(*error)(const void *db);

    /* note returns one line the operator should know about what open did (an import), or NULL. */
    const char *(*note)(const void *db);

    /* quarantined returns how many stored records the replay found not to be jobs and set aside,
     * with a one-line summary in *note when note is not NULL. */
    uint64_t (*quarantined)(const void *db, const char **note);

    /* adopt (NULL when the backend has no shared store) claims, at run time, the rows of other
     * servers that it may take over (--takeover-after) and calls cb(ctx, r) for each, as replay
     * does (committer thread, after maintain). Returns how many rows it handed over, -1 (text
     * in error), or -2 when this server's own jobs were taken over (as write_batch's -2); *note,
     * when not NULL, says whose they were or why (valid until the next call). */
    int (*adopt)(void *db, int (*cb)(void *ctx, const struct store_rec *r), void *ctx,
                 const char **note);

    /* close writes nothing more (the manager wrote the final batch) and frees db. NULL allowed. */
    void (*close)(void *db);
};

/* store_backend_choose picks the backend for configuration c from the scheme table (--store=
 * SCHEME:LOCATION, or gearmand's -q TYPE) and fills *p. Returns the backend, or NULL when c asks
 * for no durable store. */
const struct store_backend *store_backend_choose(const struct config *c, struct store_params *p);

/* store_backend_params is store_backend_choose plus the chosen backend's params hook: its own
 * parameters in p->own (postgres: the default --server-id HOSTNAME:PORT too) and, where the
 * location may hold a password, p->shown. What it fills stays valid until the next call (one
 * store per process). */
const struct store_backend *store_backend_params(const struct config *c, struct store_params *p);

#ifdef __cplusplus
}
#endif
#endif

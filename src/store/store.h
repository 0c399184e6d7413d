/* SPDX-License-Identifier: BSD-3-Clause */
/* store: the engine's side of durability. Background jobs are added to a batch as they are
 * submitted; once per loop iteration the batch goes to a committer thread, which writes it as one
 * fsync'd transaction (group commit) while the loop goes on. When the batch is durable the loop
 * sends the JOB_CREATED replies it held back and makes the jobs runnable. On start the committer
 * thread streams the stored jobs back to the loop in chunks (replay), so the server answers admin
 * commands and ECHO while a large store loads.
 *
 * No libev here: the committer wakes the loop through the notify callback the shell gives, and the
 * loop calls store_complete from that wake-up.
 *
 * No protocol here either: a held reply belongs to an opaque owner (a connection, for cmd.c) and
 * its outcome is told through the store_sink that the opener gives. The backend (SQLite, or the
 * in-memory test backend) sits behind store_backend.h; the batching is store_batch.h. */
#ifndef SPUR_STORE_H
#define SPUR_STORE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct engine;
struct job;
struct store;
struct store_backend;
struct store_params;

/* struct store_sink is how the store tells the protocol side what became of held replies. Every
 * function is required and is called on the loop thread, from store_add/store_ack (held) or from
 * store_complete and store_flush (acked, replay_done). */
struct store_sink {
    /* held: one more reply to owner (not NULL) is held until its batch is durable. */
    void (*held)(struct engine *e, void *owner);
    /* acked: the held reply about job id to owner is due: error is NULL when the job is stored
     * (send JOB_CREATED), or why it could not be (send a QUEUE_ERROR). Replies to one owner come
     * in the order they were held. Never called for an owner passed to store_owner_gone. */
    void (*acked)(struct engine *e, void *owner, uint64_t id, const char *error);
    /* replay_done: every stored job is back and runnable; submits that waited may go on. */
    void (*replay_done)(struct engine *e);
};

#define STORE_REPLAY_CHUNK 4096 /* stored jobs handed to the loop at a time during replay */

/* store_open opens the durable store described by the configuration (--store=sqlite:PATH, or
 * -q libsqlite3 --libsqlite3-db=PATH [--libsqlite3-table=T], which also imports a gearmand queue
 * table), choosing the backend from the scheme table (store_open.c), and calls store_start. A
 * configuration without a store returns 0 and leaves e->store_mgr NULL. Defined in
 * store_open.c, so that store.c links no backend. */
int store_open(struct engine *e, const struct store_sink *sink, void (*notify)(void *arg), void *arg,
               char *err, size_t errlen);

/* store_start opens backend b with p, starts the committer thread and begins the replay.
 * notify(arg) is called from the committer thread whenever the loop must call store_complete; sink
 * (kept, not copied) hears about held replies. Sets e->store_mgr and e->replaying, and raises
 * e->next_id above every id the store has used. Returns 0, or -1 with a message in err. */
int store_start(struct engine *e, const struct store_backend *b, const struct store_params *p,
                const struct store_sink *sink, void (*notify)(void *arg), void *arg, char *err,
                size_t errlen);

/* store_close stops the committer thread after its current batch, writes what is left (its
 * replies are not sent), and closes the store. It waits for the committer at most --store-timeout
 * seconds in all (a hung database or disk): past that it logs what may not be written, leaves the
 * thread and its store to the process's exit, and returns -1 (store_stuck then says so).
 * Returns 0 otherwise. */
int store_close(struct engine *e);

/* store_stuck reports whether a store_close gave up waiting for its committer: the process should
 * then exit without its exit handlers (_exit), which the committer's libraries may still need. */
int store_stuck(void);

/* store_deadline returns the seconds until the oldest held reply has waited --store-wait +
 * --store-timeout (0 when it has), or -1 when no reply is held or there is no limit. The shell
 * calls store_expire then. */
double store_deadline(const struct engine *e);

/* store_expire answers every held reply that has waited --store-wait + --store-timeout with a
 * QUEUE_ERROR, although its batch may still be with the committer (a hung database). The refused
 * job's deletion is queued behind that batch (its add cancelled if its batch was never handed
 * over): a late commit leaves no job that was refused. Called on the loop when store_deadline
 * says so. */
void store_expire(struct engine *e);

/* store_add records background job j in the current batch and holds the reply to owner (NULL for
 * none) until the batch is durable; due is when j may run (0 = now). A j in limbo becomes
 * JOB_PENDING and runnable once durable (failed, through job_fail, if the write fails); a running
 * or queued j (a foreground job made background) is only recorded. Returns 0, or -1 when out of
 * memory (nothing held). */
int store_add(struct engine *e, struct job *j, void *owner, double due);

/* store_add_meta is store_add of a job with extension state: meta (meta_len bytes, at most
 * STORE_META_MAX; NULL for none) is stored with it and handed to engine_ext.job_restored when
 * the job comes back. */
int store_add_meta(struct engine *e, struct job *j, void *owner, double due, const char *meta,
                   size_t meta_len);

/* store_update rewrites the stored row of j (same id) with a new due time and meta in the next
 * batch; no reply is held. Returns 0 (also when there is no store or j is not stored: nothing to
 * do) or -1 when out of memory. After a failed commit it is tried again with the next batch. */
int store_update(struct engine *e, struct job *j, double due, const char *meta, size_t meta_len);

/* store_record_put writes the durable record (kind, key) with value val (vlen bytes), replacing
 * it; store_record_del deletes it. Queued into the next batch (durable with it; tried again after
 * a failed commit). Returns 0 (also without a store) or -1 (no memory, or a length out of range:
 * key 1..STORE_KEY_MAX, value at most STORE_META_MAX). At start the stored records are handed
 * to engine_ext.record_restored[kind] before any job comes back. */
int store_record_put(struct engine *e, int kind, const char *key, size_t klen, const void *val,
                     size_t vlen);
int store_record_del(struct engine *e, int kind, const char *key, size_t klen);

/* store_ack holds a reply about j to owner behind owner's held replies (a submit that joined j
 * while owner waits on the store). Returns 0 or -1. */
int store_ack(struct engine *e, struct job *j, void *owner);

/* store_ack_id holds a reply about handle number id, which no job has (a broadcast,
 * ext/broadcast.h), to owner behind owner's held replies. Returns 0 or -1. */
int store_ack_id(struct engine *e, uint64_t id, void *owner);

/* store_restored_id returns the id a job stored as id has here, during the replay or takeover
 * that restores it: a job taken over from another server whose id this server has not reached
 * gets a new one (docs/HA.md), and what names it (a waiting job's meta "after") is translated
 * through this. id itself when it was not renumbered, or no replay or takeover is in progress. */
uint64_t store_restored_id(const struct engine *e, uint64_t id);

/* store_done records that stored job j left the server. */
void store_done(struct engine *e, const struct job *j);

/* store_flush hands the current batch to the committer unless one is being written. Called once
 * per loop iteration, before the loop sleeps. */
void store_flush(struct engine *e);

/* store_complete handles what the committer finished: held replies of a durable (or failed)
 * batch, through sink->acked, and replayed jobs (sink->replay_done once all are back). Called on
 * the loop after notify. */
void store_complete(struct engine *e);

/* store_owner_gone forgets the replies held for owner: sink->acked is never called for them. Costs
 * a walk of every held reply: call it only for an owner that has some. */
void store_owner_gone(struct engine *e, void *owner);

/* struct store_state is a snapshot of the manager's retry state, for tests and diagnostics. */
struct store_state {
    int in_flight;        /* a batch is with the committer */
    size_t queued;        /* operations in the current batch */
    size_t held;          /* replies held (current batch and batch in flight) */
    uint64_t fails;       /* failed commits since the last success */
    double retry_gap;     /* seconds deletions alone wait after a failure, 0 = not failing */
};

/* store_get_state fills *s; all zero when e has no store. */
void store_get_state(const struct engine *e, struct store_state *s);

/* store_replaying reports whether stored jobs are still being loaded. */
int store_replaying(const struct engine *e);

#ifdef __cplusplus
}
#endif
#endif

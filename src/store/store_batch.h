/* SPDX-License-Identifier: BSD-3-Clause */
/* store_batch: the backend-neutral side of group commit. Jobs to store and ids to delete are
 * queued into the current batch of a store_queue; a done for an id added in the same batch cancels
 * both (nothing reaches the backend); the batch is then taken whole (O(1)) and handed to a
 * backend's write_batch (store_backend.h), which reads it through the accessors below.
 *
 * No I/O, no locks, no backend knowledge. A queue is used from one thread (the loop). A taken
 * batch belongs to whoever holds it; hand it between threads only through something that orders
 * memory (a mutex). */
#ifndef SPUR_STORE_BATCH_H
#define SPUR_STORE_BATCH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* struct store_rec is one persisted background job. Its pointers are borrowed for the duration of a
 * call (add copies them; replay's and store_batch_add_at's are valid only as long as their source). */
struct store_rec {
    uint64_t id;          /* handle number: unique, never reused, at most INT64_MAX */
    const char *func;     /* function name bytes */
    size_t func_len;      /* length of func */
    const char *unique;   /* unique id bytes, may be empty; several jobs may share an empty unique */
    size_t unique_len;    /* length of unique */
    const char *reducer;  /* reducer function name, may be empty */
    size_t reducer_len;   /* length of reducer */
    const void *data;     /* payload: may contain NULs, may be large */
    size_t data_len;      /* length of data */
    int prio;             /* 0 high, 1 normal, 2 low */
    int64_t when;         /* unix time the job may run at (epoch or schedule), 0 = now */
    const char *meta;     /* the job's extension state (engine_ext; a JSON object text), opaque
                             to the store; NULL or empty = none */
    size_t meta_len;      /* length of meta, at most STORE_META_MAX */
};

#define STORE_META_MAX 65536  /* longest meta of a job, and longest value of a record */
#define STORE_KEY_MAX 1024    /* longest key of a record */

/* Kinds of durable records (struct store_record); STORE_REC_KINDS bounds them. */
enum { STORE_REC_SCHEDULE = 1, STORE_REC_RETRY = 2, STORE_REC_KINDS = 8 };
enum { STORE_REC_BROADCAST = 5 }; /* a broadcast function (ext/broadcast.h): key FUNC, value "on" */

/* struct store_record is a small durable key/value record that is not a job (a schedule, a retry
 * policy), written in the same transaction as the jobs of its batch. Pointers are borrowed as in
 * struct store_rec. value NULL means: delete the record of this kind and key. */
struct store_record {
    int kind;           /* 1 .. STORE_REC_KINDS - 1 */
    const char *key;    /* key bytes, 1 .. STORE_KEY_MAX */
    size_t key_len;
    const void *value;  /* value bytes (at most STORE_META_MAX), or NULL for a deletion */
    size_t value_len;
};

/* struct store_batch is a detached batch of operations (adds with their own copies of the job,
 * and done ids). Opaque. */
struct store_batch;

/* struct store_queue holds the batch being filled. Zero-initialise it; store_queue_clear frees it. */
struct store_queue {
    struct store_batch *cur; /* the batch being filled, NULL when empty */
    uint64_t carry_max_id;   /* largest id of batches dropped because they cancelled out */
};

/* store_queue_add queues the job r to be stored, in the current batch, which owns a copy of every
 * field. Returns 0, or -1 when out of memory or when r is invalid (id 0 or above INT64_MAX, prio
 * outside 0..2). */
int store_queue_add(struct store_queue *q, const struct store_rec *r);

/* store_queue_update queues a new version of a job that may already be stored (same id: a new due
 * time or meta): the backend replaces the stored row. Unlike an add, a later done of the same
 * batch does not cancel it silently: the deletion is still written, since an older version may
 * be stored. A second add or update of an id in one batch replaces the first. Returns as
 * store_queue_add. */
int store_queue_update(struct store_queue *q, const struct store_rec *r);

/* store_queue_record queues the write (value not NULL) or deletion (value NULL) of a record.
 * Records are written in the order queued, after the jobs of the batch. Returns 0, or -1 when out
 * of memory or when r is invalid (kind, key or value length out of range). */
int store_queue_record(struct store_queue *q, const struct store_record *r);

/* store_queue_done queues the deletion of id. If the current batch still holds the add of id,
 * both are dropped. Returns 0, or -1 when out of memory. */
int store_queue_done(struct store_queue *q, uint64_t id);

/* store_queue_pending returns the operations in the current batch (adds, dones and records, not
 * counting pairs that cancelled out). */
size_t store_queue_pending(const struct store_queue *q);

/* store_queue_take detaches the current batch and returns it, leaving an empty current batch (O(1),
 * no allocation). Returns NULL when there is nothing to write (the largest id of a batch that
 * cancelled out is carried into the next one). The caller frees the batch with store_batch_free. */
struct store_batch *store_queue_take(struct store_queue *q);

/* store_queue_take_final is store_queue_take for closing: it also returns a batch with no
 * operation when an id must still be recorded as used (see store_batch_max_id), so that a new
 * server never reuses it. NULL when there is nothing at all. */
struct store_batch *store_queue_take_final(struct store_queue *q);

/* store_queue_retry_dones copies the done ids, the updates and the records of b (a batch whose
 * write failed) into the current batch, so they are tried again with the next batch (records
 * before the current batch's: the newer write of a key wins; an update only when the current batch
 * has no newer version of its job); deleting an id that is not stored is harmless. Returns 0, or
 * -1 when out of memory. */
int store_queue_retry_dones(struct store_queue *q, const struct store_batch *b);

/* store_queue_clear frees the current batch; the queue is empty and reusable. */
void store_queue_clear(struct store_queue *q);

/* store_batch_ops returns the number of operations in b (live adds, dones and records). */
size_t store_batch_ops(const struct store_batch *b);

/* store_batch_nadds returns the number of add slots in b, cancelled ones included; iterate them
 * with store_batch_add_at. */
size_t store_batch_nadds(const struct store_batch *b);

/* store_batch_add_at fills r with add number i of b (i < store_batch_nadds) and returns 0, or
 * returns -1 when that add was cancelled by a done of the same batch. r's pointers stay valid until
 * b is freed. Adds come in the order they were queued. */
int store_batch_add_at(const struct store_batch *b, size_t i, struct store_rec *r);

/* store_batch_add_is_update tells whether add number i of b is a new version of a job that may be
 * stored already (store_queue_update), not the first write of a new job. */
int store_batch_add_is_update(const struct store_batch *b, size_t i);

/* store_batch_nrecords returns the number of record operations in b; store_batch_record_at fills
 * r with number i (its pointers valid until b is freed; value NULL for a deletion). */
size_t store_batch_nrecords(const struct store_batch *b);
void store_batch_record_at(const struct store_batch *b, size_t i, struct store_record *r);

/* store_batch_ndones returns the number of deletions in b; store_batch_done_at the id of number i,
 * in the order they were queued. */
size_t store_batch_ndones(const struct store_batch *b);
uint64_t store_batch_done_at(const struct store_batch *b, size_t i);

/* store_batch_max_id returns the largest id ever added to b or to batches before it that cancelled
 * out: a backend keeps it as a high-water mark, so ids are never reused after a restart. */
uint64_t store_batch_max_id(const struct store_batch *b);

/* store_batch_error returns the error text of b's last failed write, or "" (never NULL). Valid
 * until b is freed or written again. store_batch_set_error sets it (a backend's write_batch does;
 * NULL or "" clears it). */
const char *store_batch_error(const struct store_batch *b);
void store_batch_set_error(struct store_batch *b, const char *text);

/* store_batch_free frees b and the job copies it owns. NULL is allowed. */
void store_batch_free(struct store_batch *b);

#ifdef __cplusplus
}
#endif
#endif

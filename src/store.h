/* SPDX-License-Identifier: BSD-3-Clause */
/* store: the engine's side of durability. Background jobs are added to a batch as they are
 * submitted; once per loop iteration the batch goes to a committer thread, which writes it as one
 * fsync'd transaction (group commit) while the loop goes on. When the batch is durable the loop
 * sends the JOB_CREATED replies it held back and makes the jobs runnable. On start the committer
 * thread streams the stored jobs back to the loop in chunks (replay), so the server answers admin
 * commands and ECHO while a large store loads.
 *
 * No libev here: the committer wakes the loop through the notify callback the shell gives, and the
 * loop calls store_complete from that wake-up. */
#ifndef SPUR_STORE_H
#define SPUR_STORE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct engine;
struct job;
struct peer;
struct store;

#define STORE_REPLAY_CHUNK 4096 /* stored jobs handed to the loop at a time during replay */

/* store_open opens the durable store described by the configuration (--store=sqlite:PATH, or
 * -q libsqlite3 --libsqlite3-db=PATH [--libsqlite3-table=T], which also imports a gearmand queue
 * table), starts the committer thread and begins the replay. notify(arg) is called from the
 * committer thread whenever the loop must call store_complete. Sets e->store_mgr and raises
 * e->next_id above every id the store has used. Returns 0, or -1 with a message in err. A
 * configuration without a store returns 0 and leaves e->store_mgr NULL. */
int store_open(struct engine *e, void (*notify)(void *arg), void *arg, char *err, size_t errlen);

/* store_close stops the committer thread after its current batch, writes what is left (its
 * replies are not sent), and closes the store. */
void store_close(struct engine *e);

/* store_add records a new background job j in the current batch and holds the reply to client p
 * (NULL for none) until the batch is durable; due is when j may run (0 = now). j must be in limbo;
 * it becomes JOB_PENDING. Returns 0, or -1 when out of memory. */
int store_add(struct engine *e, struct job *j, struct peer *p, double due);

/* store_ack holds a JOB_CREATED for j to client p behind p's pending replies (a submit that joined
 * j while p waits on the store). Returns 0 or -1. */
int store_ack(struct engine *e, struct job *j, struct peer *p);

/* store_done records that stored job j left the server. */
void store_done(struct engine *e, const struct job *j);

/* store_flush hands the current batch to the committer unless one is being written. Called once
 * per loop iteration, before the loop sleeps. */
void store_flush(struct engine *e);

/* store_complete handles what the committer finished: replies for a durable batch (or
 * QUEUE_ERROR for a failed one), and replayed jobs. Called on the loop after notify. */
void store_complete(struct engine *e);

/* store_peer_gone forgets the replies held for p. */
void store_peer_gone(struct engine *e, struct peer *p);

/* store_replaying reports whether stored jobs are still being loaded. */
int store_replaying(const struct engine *e);

#ifdef __cplusplus
}
#endif
#endif

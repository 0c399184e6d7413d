/* SPDX-License-Identifier: BSD-3-Clause */
/* conn: one accepted socket: reading into its peer, flushing its output queue, teardown. */
#ifndef SPUR_CONN_H
#define SPUR_CONN_H

#include <ev.h>

#include "peer.h"

#ifdef __cplusplus
extern "C" {
#endif

struct server;

/* struct conn is a socket plus the engine's peer for it. */
struct conn {
    struct peer peer;        /* must be first: the engine's view of the connection */
    struct server *srv;      /* owner */
    ev_io rio;               /* readable watcher */
    ev_io wio;               /* writable watcher, active only while the socket is full */
    struct conn *dirty_next; /* server's list of conns to flush this iteration */
    struct conn *lazy_next;  /* server's list of conns whose replies wait to be batched */
    struct conn *lazy_prev;  /* (doubly linked: a flush or a close takes c off it) */
    struct conn *close_next; /* server's list of conns to free */
    struct conn *defer_next; /* server's list of conns whose input waits (PEER_DEFERRED) */
    struct conn *defer_prev; /* (doubly linked: a close takes c off it) */
    unsigned dirty : 1;      /* on the dirty list */
    unsigned lazy : 1;       /* on the lazy list */
    unsigned eof : 1;        /* the peer half-closed: finish writing, then close */
    unsigned closing : 1;    /* on the closing list */
    unsigned deferred : 1;   /* on the deferred list */
    unsigned defer_round;    /* the server's defer_round when c joined the deferred list */
    double partial_since;    /* when an unfinished packet or line started waiting, 0 if none */
};

/* conn_new wraps an accepted socket and starts reading it. Returns NULL on failure (fd closed). */
struct conn *conn_new(struct server *s, int fd, const char *ip, int local);

/* conn_flush writes as much queued output as the socket takes. Returns 0, or -1 on a write error
 * (the conn is then scheduled for close). */
int conn_flush(struct conn *c);

/* conn_close schedules c for teardown after the current callback (idempotent). */
void conn_close(struct conn *c);

/* conn_free tears c down now: a last flush attempt, engine detach, watchers, fd, memory. */
void conn_free(struct conn *c);

/* conn_idle_sweep closes every connection whose unfinished packet has waited longer than
 * --idle-timeout (called about once a second when the option is set). */
void conn_idle_sweep(struct server *s, double now);

/* conn_run_deferred gives every conn whose input was deferred (PEER_DEFERRED) one more turn:
 * each handles input until its replies pass the quota again. Called once per loop iteration. */
void conn_run_deferred(struct server *s);

/* conn_resume handles input buffered while c's peer was busy and starts reading again. */
void conn_resume(struct conn *c);

/* conn_mark_dirty notes that c has output: on the dirty list (written at the end of this loop
 * iteration, PEER_URGENT output first, then PEER_NOW) or else on the lazy list, whose replies
 * wait to be batched: written when a poll finds no input and no job runs, or --reply-batch after
 * the first of them was queued (server.c). */
void conn_mark_dirty(struct conn *c);

/* conn_pop_dirty takes the next conn to flush off the server's dirty list, or returns NULL. */
struct conn *conn_pop_dirty(struct server *s);

/* conn_pop_lazy takes the first conn off the server's lazy list, or returns NULL. */
struct conn *conn_pop_lazy(struct server *s);

#ifdef __cplusplus
}
#endif
#endif

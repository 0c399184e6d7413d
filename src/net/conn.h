/* SPDX-License-Identifier: BSD-3-Clause */
/* conn: one accepted connection: reading into its peer through its transport, flushing its
 * output queue, teardown; and the lists of connections with work left in this loop iteration
 * (struct conn_ctx), which conn.c alone manages. Knows libev and the engine's peer, not the
 * server: what it needs from around it is in struct conn_ctx. */
#ifndef SPUR_CONN_H
#define SPUR_CONN_H

#include <ev.h>
#include <stddef.h>

#include "list.h"
#include "peer.h"
#include "transport.h"

#ifdef __cplusplus
extern "C" {
#endif

struct config;
struct engine;
struct spin;

#define CONN_READ_SIZE 65536 /* bytes read from a connection at a time */

/* struct conn_ctx is what every connection shares: its surroundings (set by conn_ctx_init,
 * borrowed) and the lists of connections with work left before the loop sleeps. The owner
 * embeds it; only conn.c touches the fields, everyone else calls the conn_* functions. */
struct conn_ctx {
    struct ev_loop *loop;      /* the loop the watchers run on */
    struct engine *eng;        /* the engine every peer belongs to */
    const struct config *cfg;  /* --reply-batch, --idle-timeout */
    struct spin *spin;         /* told about every input (spin_input), or NULL */
    char *rbuf;                /* shared read buffer, CONN_READ_SIZE bytes */
    struct list_node dirty;    /* conns to flush this iteration: PEER_URGENT ones first */
    struct list_node lazy;     /* conns whose replies wait to be batched */
    double lazy_since;         /* when the first of those was queued */
    struct list_node closing;  /* conns to free before the loop sleeps */
    struct list_node deferred; /* conns with input left for the next iteration (also input
                                  held inside the transport: transport_pending) */
    struct list_node handshakes; /* conns whose transport handshake runs, oldest first */
    struct list_node all;      /* every open connection, oldest first (conn.all_node) */
    unsigned defer_round;      /* counts conn_run_deferred calls */
    size_t nconns;             /* open connections */
};

/* struct conn is a transport plus the engine's peer for it. */
struct conn {
    struct peer peer;        /* the engine's view of the connection (its ops: conn_peer_ops) */
    struct conn_ctx *ctx;    /* shared surroundings and lists */
    struct transport tr;     /* how its bytes move (transport.h) */
    ev_io rio;               /* readable watcher */
    ev_io wio;               /* writable watcher, active only while the transport is full */
    struct list_node dirty_node; /* on ctx->dirty */
    struct list_node lazy_node;  /* on ctx->lazy */
    struct list_node close_node; /* on ctx->closing */
    struct list_node defer_node; /* on ctx->deferred */
    struct list_node hs_node;    /* on ctx->handshakes while handshaking */
    struct list_node all_node;   /* on ctx->all until conn_free */
    double opened;           /* when it was accepted (ev_now) */
    unsigned eof : 1;        /* the peer half-closed: finish writing, then close */
    unsigned closing : 1;    /* conn_close was called */
    unsigned read_wants_write : 1; /* the transport's read waits for the fd to be writable */
    unsigned write_wants_read : 1; /* the transport's write waits for the fd to be readable */
    unsigned handshaking : 1; /* the transport's handshake is not done (TLS) */
    unsigned tr_pending : 1;  /* on ctx->deferred to read input held inside the transport */
    unsigned tr_partial : 1;  /* the transport holds a partial unit of input (a TLS record):
                                 an unfinished packet for --idle-timeout (transport_held) */
    unsigned defer_round;    /* ctx->defer_round when c joined the deferred list */
    double partial_since;    /* when an unfinished packet or line started waiting, 0 if none */
};

/* conn_ctx_init prepares x for connections on loop, with peers in engine eng, settings cfg and
 * the busy-poll state spin (may be NULL); all borrowed. Returns 0, or -1 when out of memory. */
int conn_ctx_init(struct conn_ctx *x, struct ev_loop *loop, struct engine *eng,
                  const struct config *cfg, struct spin *spin);

/* conn_ctx_destroy frees every connection still open (conn_free; those on x's own list, not
 * the engine's other peers) and x's buffer. */
void conn_ctx_destroy(struct conn_ctx *x);

/* conn_new makes a connection over transport t (copied; conn closes it from now on, also when
 * this fails) and starts reading it. Returns NULL on failure. */
struct conn *conn_new(struct conn_ctx *x, const struct transport *t);

/* conn_count returns how many connections are open (freed ones no longer count). */
static inline size_t conn_count(const struct conn_ctx *x) { return x->nconns; }

/* conn_flush writes as much queued output as the transport takes. Returns 0, or -1 on a write
 * error (the conn is then scheduled for close). */
int conn_flush(struct conn *c);

/* conn_close schedules c for teardown before the loop sleeps (idempotent). */
void conn_close(struct conn *c);

/* conn_free tears c down now: a last flush attempt, engine detach, watchers, transport, memory. */
void conn_free(struct conn *c);

/* conn_free_closed frees every connection conn_close scheduled, flushing after each the output
 * its teardown queued for others (re-queued jobs wake workers). Returns how many it freed. */
size_t conn_free_closed(struct conn_ctx *x);

/* conn_idle_sweep closes every connection (x's own list, not the engine's other peers) whose
 * unfinished packet has waited longer than --idle-timeout (called about once a second when the
 * option is set). */
void conn_idle_sweep(struct conn_ctx *x, double now);

/* conn_handshake_sweep closes every connection whose transport handshake has run longer than
 * --ssl-handshake-timeout (called about once a second while TLS listeners exist). O(1) per
 * connection: the list is in accept order and the timeout is the same for all. */
void conn_handshake_sweep(struct conn_ctx *x, double now);

/* conn_run_deferred gives every conn whose input was deferred (PEER_DEFERRED) one more turn:
 * each handles input until its replies pass the quota again; a conn whose transport holds input
 * (transport_pending) reads it. Called once per loop iteration. */
void conn_run_deferred(struct conn_ctx *x);

/* conn_have_deferred reports whether some conn's input waits for the next iteration. */
static inline int conn_have_deferred(const struct conn_ctx *x) { return !list_empty(&x->deferred); }

/* conn_resume handles input buffered while c's peer was busy and starts reading again. */
void conn_resume(struct conn *c);

/* conn_mark_dirty notes that c has output: on the dirty list (written at the end of this loop
 * iteration, PEER_URGENT output first, then PEER_NOW) or else on the lazy list, whose replies
 * wait to be batched: written when a poll finds no input and no job runs, or --reply-batch after
 * the first of them was queued (server.c). */
void conn_mark_dirty(struct conn *c);

/* conn_flush_dirty writes the output of every conn on the dirty list, emptying it. */
void conn_flush_dirty(struct conn_ctx *x);

/* conn_flush_lazy writes the output of every conn on the lazy list, emptying it. */
void conn_flush_lazy(struct conn_ctx *x);

/* conn_have_lazy reports whether replies wait to be batched; *since (if not NULL) receives when
 * the first of them was queued. */
static inline int conn_have_lazy(const struct conn_ctx *x, double *since)
{
    if (since != NULL)
        *since = x->lazy_since;
    return !list_empty(&x->lazy);
}

#ifdef __cplusplus
}
#endif
#endif

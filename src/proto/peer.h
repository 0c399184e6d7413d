/* SPDX-License-Identifier: BSD-3-Clause */
/* peer: one connection's state as the engine sees it, and its output queue: replies are queued
 * here (put_packet: urgency from the command table, --max-output-buffer, --max-buffer-memory)
 * and the shell writes them. Pure. The input side (sniffing, framing, dispatch, teardown
 * fan-out) is session.h's. */
#ifndef SPUR_PEER_H
#define SPUR_PEER_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "engine.h"
#include "list.h"
#include "outq.h"
#include "proto.h"

#ifdef __cplusplus
extern "C" {
#endif

struct admin_listing;
struct engine;
struct waiter;
struct worker;

/* Peer flags. */
enum {
    PEER_CLOSING = 1u << 0,    /* teardown requested; ignore further input */
    PEER_LOCAL = 1u << 1,      /* loopback or unix socket: may run admin shutdown */
    PEER_EXCEPTIONS = 1u << 2, /* OPTION_REQ exceptions was set */
    PEER_SKIP_LINE = 1u << 3,  /* dropping the rest of an over-long admin line */
    PEER_WAIT_REPLAY = 1u << 4, /* a submit waits for the store's replay to finish */
    PEER_URGENT = 1u << 5,     /* queued output someone waits on (a NOOP, a job, a result):
                                  written first at the end of this loop iteration */
    PEER_NOW = 1u << 6,        /* other queued output to write in this loop iteration; with
                                  neither flag, output waits for the input to run dry */
    PEER_BLOCKED = 1u << 7,    /* the socket took no more output: the other side is not
                                  reading (set and cleared by the shell) */
    PEER_DEFERRED = 1u << 8,   /* input processing stopped at PEER_INPUT_QUOTA,
                                  PEER_OUTPUT_QUOTA or PEER_PACKET_QUOTA; the rest of p->in
                                  waits for the next loop iteration */
    PEER_TLS = 1u << 10,       /* the connection is TLS (set by the shell at accept) */
};

/* PEER_OUTPUT_QUOTA is how many bytes of replies one session_feed or session_process may queue before
 * it stops and leaves the remaining input for the next loop iteration (PEER_DEFERRED), so a
 * connection that pipelines cheap requests with large replies (admin status, ECHO) cannot keep
 * the loop from others, and does not queue up to the output limits in one go. */
#define PEER_OUTPUT_QUOTA (64u << 10)

/* PEER_PACKET_QUOTA likewise bounds the replies queued to all peers together by one turn of a
 * peer's input: a worker whose job has thousands of waiting clients forwards its WORK_* packets
 * a few thousand copies at a time, and the loop serves the others in between. */
#define PEER_PACKET_QUOTA 8192u

/* PEER_INPUT_QUOTA bounds the requests (packets or admin lines) one turn handles, whatever they
 * answer: a worker that pipelines 100k CAN_DO, or a client 100k cheap submits, gets through a
 * 64 KiB read (some 2,700 small packets) in several turns, and the loop serves the others in
 * between. A turn of 1024 requests is far more than the batching benefit needs. */
#define PEER_INPUT_QUOTA 1024u

struct peer;

/* peer_packet_fn encodes one reply packet for p: command cmd, the arguments args[0..nargs) and,
 * when b is not NULL, bytes [off, off+len) of blob b as the body's tail (the payload); without
 * b the last argument is the tail. Returns 0, or -1 when out of memory (p is then closed). */
typedef int (*peer_packet_fn)(struct peer *p, uint32_t cmd, const struct proto_arg *args,
                              int nargs, struct blob *b, size_t off, size_t len);

/* struct peer_ops is what a peer's owner does for it: set by whoever creates the peer (net/conn.c
 * for a connection, shell/http_api.c for an HTTP request); the shell's engine_ops forward their
 * output, close and resume to it, so no one needs to know what a peer is embedded in. */
struct peer_ops {
    void (*output)(struct peer *p); /* p has new output (queued, or its answer recorded):
                                       handle it before the loop sleeps */
    void (*close)(struct peer *p);  /* tear p down once the current callback has returned */
    void (*resume)(struct peer *p); /* p had stopped taking input (a listing, the store's
                                       replay) and takes it again */
    peer_packet_fn packet;          /* its reply encoder; NULL: the binary one (into
                                       p->out, peer.c) */
};

/* struct peer is one connection's protocol state. */
struct peer {
    struct engine *eng;   /* owner */
    const struct peer_ops *ops; /* its owner's callbacks (peer_ops), or NULL for a peer whose
                                   shell handles it by other means (unit tests); peer_init
                                   sets NULL */
    struct list_node node; /* in engine->peers while attached */
    struct buf in;        /* unparsed input (a partial packet or line) */
    struct outq out;      /* replies not yet written */
    uint64_t discard;     /* body bytes of an oversize packet still to drop */
    uint32_t flags;       /* PEER_* */
    int fd;               /* socket number, for the admin 'workers' listing */
    char *client_id;      /* SET_CLIENT_ID value, NULL for '-' */
    struct worker *worker; /* worker state, created by the first worker packet */
    struct list_node waiters; /* foreground jobs this client waits on (waiter.pnode), newest
                                 first */
    struct admin_listing *listing; /* a 'show' listing being written in slices, or NULL */
    struct list_node listing_node; /* in engine->listings while listing is pending */
    uint64_t seq;         /* attach order (engine->peer_seq), for the 'workers' listing */
    uint32_t cursors;     /* 'workers' listings whose next row is this peer */
    uint32_t pending_acks; /* replies held until the store has written their batch */
    size_t held;          /* bytes of in's allocation plus out's unsent bytes plus tr_held,
                             as counted in eng->buffered (0 once closing) */
    size_t tr_held;       /* bytes its transport holds (TLS: a partial record, OpenSSL's
                             buffers in use; transport.h's held), set by the shell */
    char ip[48];          /* peer address as text, for 'workers' */
    /* Who it is, for access rules. Set by the shell; the engine only reads them. */
    const char *listener; /* the listener's name (struct listener.name: "127.0.0.1:4730",
                             "unix:/run/spur.sock"), "http" for an HTTP request's client;
                             never NULL once attached (peer_init sets "-") */
    char *cert_names;     /* TLS with a verified client certificate: its names (subject CN,
                             then the DNS and email SANs), each NUL-terminated, the list ended
                             by an empty string; else NULL. Freed by peer_unlink */
    uint32_t acl_gen;     /* the policy generation acl_mask and acl_class were resolved
                             under (acl.c), 0 for none; whoever changes ip, listener or
                             cert_names after a request was handled must set it to 0 */
    uint8_t acl_class;    /* its class under that policy (ACL_NO_CLASS: uncached) */
    uint8_t kinds;        /* what it did: bit 1 << PEER_KIND_* (peer_mark) */
    uint64_t acl_mask;    /* the policy's principals it is (acl.c) */
};

/* peer_of returns the peer whose engine->peers link is n, or NULL for NULL (so it takes
 * list_first and list_next as they are). */
static inline struct peer *peer_of(const struct list_node *n)
{
    return n != NULL ? container_of(n, struct peer, node) : NULL;
}

/* peer_mark_first records that p first acted as kind k (a client, a worker, an admin
 * connection): counted in the engine's totals and open connections of that kind. */
void peer_mark_first(struct peer *p, enum peer_kind k);

/* peer_mark records that p acted as kind k: one test when it had already. */
static inline void peer_mark(struct peer *p, enum peer_kind k)
{
    if (!(p->kinds & (1u << k)))
        peer_mark_first(p, k);
}

/* peer_kind_name writes what p did ("client", "worker+admin", "none") into out (32 bytes). */
const char *peer_kind_name(const struct peer *p, char *out);

/* peer_ack_owner returns the owner of p's replies held by the store (store.h's opaque owner),
 * written as admin lines when text, else as binary packets: p's address, plus one byte for
 * text (an odd address, which no peer has). A peer has one owner of each kind, so its binary
 * and admin replies each keep their order. peer_ack_peer and peer_ack_text decode it. */
static inline void *peer_ack_owner(struct peer *p, int text) { return (char *)p + (text ? 1 : 0); }

/* peer_ack_peer returns the peer of an owner made by peer_ack_owner. */
static inline struct peer *peer_ack_peer(const void *owner)
{
    return (struct peer *)((uintptr_t)owner & ~(uintptr_t)1);
}

/* peer_ack_text returns 1 if an owner made by peer_ack_owner writes admin lines, else 0. */
static inline int peer_ack_text(const void *owner) { return (int)((uintptr_t)owner & 1); }

/* peer_init prepares p for engine e with the socket number and printable address. */
void peer_init(struct peer *p, struct engine *e, int fd, const char *ip, int local);

/* peer_attach adds p to the engine's list of peers. */
void peer_attach(struct peer *p);

/* peer_unlink removes p from the engine's list of peers and frees its buffers; its output queue
 * is cleared. The last step of session_detach, which first releases what cmd, admin and the
 * store hold for p. */
void peer_unlink(struct peer *p);

/* peer_busy reports whether p must not take more input now: a 'show' listing is still being
 * written, and later requests wait so replies stay in request order. */
static inline int peer_busy(const struct peer *p) { return p->listing != NULL; }

/* peer_waiting reports whether p holds input it may not process yet: replies wait on the store,
 * or the store's replay is still running. */
static inline int peer_waiting(const struct peer *p)
{
    return p->pending_acks > 0 || (p->flags & PEER_WAIT_REPLAY);
}

/* peer_send queues one response packet with these arguments through p's encoder (peer_ops;
 * binary by default); the last argument is the body tail (no NUL after it). Returns 0 or -1
 * (out of memory: the peer is being closed). */
int peer_send(struct peer *p, uint32_t cmd, const struct proto_arg *args, int nargs);

/* peer_send_ref queues a packet whose body is the arguments args[0..nargs) each followed by a
 * NUL, then bytes [off, off+len) of blob b, shared rather than copied when large. */
int peer_send_ref(struct peer *p, uint32_t cmd, const struct proto_arg *args, int nargs,
                  struct blob *b, size_t off, size_t len);

/* peer_send_error queues an ERROR packet with gearmand's code and text. */
int peer_send_error(struct peer *p, const char *code, const char *text);

/* peer_write queues raw bytes (admin text replies). Returns 0 or -1. */
int peer_write(struct peer *p, const void *data, size_t n);

/* peer_write_name queues name[0..len) escaped for an admin listing (esc.h: control bytes, and
 * spaces with ESC_SPACE in flags, as %XX); an ordinary name is queued as it is. Returns 0 or -1. */
int peer_write_name(struct peer *p, const char *name, size_t len, unsigned flags);

/* peer_printf formats one admin reply line (at most 1 KiB: longer is cut) and queues it. */
void peer_printf(struct peer *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* peer_send_status queues a WORK_STATUS packet (args as forwarded) for one waiter. While p does
 * not read (PEER_BLOCKED), it is queued as a slot, and *slot names the waiter's previous one
 * (outq_put_slot ticket): while that is still wholly unsent it is replaced, so a client that
 * does not read holds at most one status per job it waits on.
 * Returns 0 or -1 as peer_send. */
int peer_send_status(struct peer *p, const struct proto_arg *args, int nargs, uint64_t *slot);

/* peer_account brings p's share of eng->buffered up to date after its input buffer, output
 * queue or tr_held changed. When the total grew past --max-buffer-memory, connections are
 * shed, worst first (peer_shed), and p may be among them. O(1) unless shedding. */
void peer_account(struct peer *p);

/* peer_shed closes connections until eng->buffered is within --max-buffer-memory: first those
 * that do not read (PEER_BLOCKED) or hold a partial packet (or their transport holds bytes: a
 * partial TLS record), largest first; then the largest of the rest. Each is closed like any
 * disconnect. Returns how many were closed. O(peers). */
int peer_shed(struct engine *e);

/* peer_close asks the shell to tear p down after the current callback. */
void peer_close(struct peer *p);

#ifdef __cplusplus
}
#endif
#endif

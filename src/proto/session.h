/* SPDX-License-Identifier: BSD-3-Clause */
/* session: one connection's input side. It recognises the protocol at each packet boundary from
 * a table (session_protos), frames the bytes (proto_bin, proto_admin), hands each packet or line
 * to its handler (cmd, admin), holds input back while replies wait (the store, a replay, a quota),
 * releases a worker's held GRAB on any input, does the wake-ups a read's packets asked for once
 * the whole read is handled (so a held GRAB takes a burst's best job), and fans a connection's
 * teardown out to cmd, admin and store. Pure: the shell (conn) owns the socket and calls session_feed with what it read. The
 * output side, and the connection's state, are peer.h's. */
#ifndef SPUR_SESSION_H
#define SPUR_SESSION_H

#include <stddef.h>

#include "peer.h"

#ifdef __cplusplus
extern "C" {
#endif

struct engine;

/* enum session_match is what a protocol says about the bytes at a packet boundary. */
enum session_match {
    SESSION_NO = 0,        /* not this protocol: try the next entry */
    SESSION_YES,           /* this protocol: its frame function takes the bytes */
    SESSION_NEED_MORE,     /* cannot tell yet: wait for more bytes (at most SESSION_SNIFF_MAX) */
};

/* SESSION_SNIFF_MAX is the most bytes a match function may ask for before it must answer yes or
 * no. */
#define SESSION_SNIFF_MAX 16

/* struct session_proto is one protocol a connection may speak, one entry of session_protos.
 *
 * Adding a protocol is one file with its match and frame functions and one entry in the table
 * (session.c), before any entry that would also match its first bytes. HTTP and TLS are not
 * entries: an HTTP listener hands its sockets to the HTTP front-end (shell/http_mhd.c), whose
 * requests are peers with their own peer_ops (peer.h), and TLS is a transport under the
 * connection (net/transport.h), whose decrypted bytes are sniffed by this same table.
 * Sniffing is per packet, as in gearmand: binary and text may be mixed on one connection. */
struct session_proto {
    const char *name; /* for logs and tests, e.g. "binary" */
    /* match looks at the first n (>= 1) bytes at a packet boundary. */
    enum session_match (*match)(const char *data, size_t n);
    /* must_wait reports whether the unit at data[0..n) must not be handled yet: replies are held
     * on the store, or the store's replay runs. May set PEER_WAIT_REPLAY. NULL: never waits. */
    int (*must_wait)(struct peer *p, const char *data, size_t n);
    /* frame handles the unit (packet or line) at the start of data[0..n) and hands it to its
     * handler. Returns bytes used, 0 when the unit is incomplete (nothing used), or -1 when
     * framing is lost and the connection must close. */
    long (*frame)(struct peer *p, const char *data, size_t n);
};

/* session_protos is the protocol table, in the order entries are tried, ended by a NULL name. */
extern const struct session_proto session_protos[];

/* session_sniff returns the table entry that takes the bytes at data[0..n) (n >= 1), or NULL
 * with *need_more set to 1 when an entry needs more bytes to decide, or to 0 when no entry
 * matches. */
const struct session_proto *session_sniff(const char *data, size_t n, int *need_more);

/* session_feed handles n input bytes: complete packets and lines are dispatched, a partial one is
 * kept in p->in, and so is the rest when the replies passed a quota (PEER_DEFERRED: the shell
 * calls session_process again in the next loop iteration). Returns 0, or -1 when the connection
 * must be closed (framing lost, no memory). */
int session_feed(struct peer *p, const char *data, size_t n);

/* SESSION_READ_AHEAD is how much room session_feed makes for the rest of a partial packet beyond
 * what arrived: one read's worth (the shell's read size). */
#define SESSION_READ_AHEAD 65536u

/* session_need returns how many more bytes complete the binary packet held partially in p->in
 * (0 when p->in is empty, holds an admin line, or the header is not all there): the shell reads
 * no more than that, so the read ends at the packet's end and nothing is left to move. */
size_t session_need(const struct peer *p);

/* session_process handles the bytes already in p->in (after the shell read into it directly).
 * Returns 0 or -1 as session_feed. */
int session_process(struct peer *p);

/* session_detach tears p's session down: the store forgets its held replies, cmd releases its
 * jobs and abilities (the engine re-queues them), admin drops its listings; then p leaves the
 * engine (peer_unlink) and its buffers are freed. The shell's one teardown call. */
void session_detach(struct peer *p);

/* session_check verifies the per-connection invariants by walking every peer: a worker's running
 * list and count, held GRABs with no ready work, waiters belonging to their client. Returns 0, or
 * -1 with a description in err. O(peers + running jobs + waiters): for tests and the fuzzer,
 * beside engine_check. */
int session_check(const struct engine *e, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif

/* SPDX-License-Identifier: BSD-3-Clause */
/* transport_loop: an in-memory connection for unit tests. The test plays the other side: it
 * appends what the server shall read to to_server and takes what the server wrote from
 * from_server, and it chooses short reads and writes, "would block" and errors. The fd the
 * conn's watchers wait on is a pipe nobody writes, so it never becomes ready: the test feeds the
 * watchers' events itself (ev_feed_event). Not selectable from the command line. */
#ifndef SPUR_TRANSPORT_LOOP_H
#define SPUR_TRANSPORT_LOOP_H

#include <stddef.h>

#include "buf.h"
#include "transport.h"

#ifdef __cplusplus
extern "C" {
#endif

/* struct loop_pipe is one in-memory connection; the test owns it (loop_pipe_init/destroy) and
 * may change every control field at any time. */
struct loop_pipe {
    struct buf to_server;   /* bytes the server's next reads return */
    struct buf from_server; /* bytes the server wrote */
    size_t read_max;        /* a read returns at most this many bytes; 0 = no limit */
    size_t write_max;       /* a writev takes at most this many bytes; 0 = no limit */
    size_t write_room;      /* bytes writev takes in all before it would block (SIZE_MAX) */
    int eof;                /* once to_server is empty, reads see the end of input */
    int read_result;        /* when non-zero, every read returns it (a TRANSPORT_* result) */
    int write_result;       /* when non-zero, every writev returns it */
    int local;              /* what peer_name says: 1 = a local peer */
    int shutdowns;          /* shutdown calls seen */
    int closed;             /* close calls seen (at most 1) */
    int fds[2];             /* the idle pipe; fds[0] is the watchers' fd */
    int held;               /* to_server's bytes are held inside the transport, like TLS
                               records already decrypted: pending reports them */
    int handshaking;        /* handshaking reports this; reads return TRANSPORT_WANT_READ (or
                               read_result) while it is set */
    const char *names;      /* peer_names returns a copy of this cert_names list (names_len
                               bytes, the final empty string included), NULL for none */
    size_t names_len;       /* bytes of names */
};

/* loop_pipe_init prepares lp: empty, no limits, local. Returns 0, or -1 (no pipe). */
int loop_pipe_init(struct loop_pipe *lp);

/* loop_pipe_destroy frees lp's buffers and closes its pipe (after the conn was freed). */
void loop_pipe_destroy(struct loop_pipe *lp);

/* transport_loop is the kind: its wrap takes the struct loop_pipe as arg and ignores fd. */
extern const struct transport_kind transport_loop;

#ifdef __cplusplus
}
#endif
#endif

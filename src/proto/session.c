/* SPDX-License-Identifier: BSD-3-Clause */
/* session: one connection's input side: sniffing from the protocol table, framing, dispatch,
 * holding input back, and teardown fan-out. */
#include "session.h"

#include <stdio.h>
#include <string.h>

#include "admin.h"
#include "cmd.h"
#include "engine.h"
#include "func.h"
#include "job.h"
#include "log.h"
#include "proto_admin.h"
#include "proto_bin.h"
#include "store.h"
#include "worker.h"

static struct log_limit bad_input_limit = {1.0, 0, 0, 0, 0};

/* bad_input logs malformed input at a rate-limited level. */
static void bad_input(struct peer *p, enum proto_error_kind kind, const char *what, uint32_t cmd)
{
    p->eng->stats.protocol_errors++;
    p->eng->stats.protocol_error[kind]++;
    log_limited(&bad_input_limit, LOG_WARNING, __FILE__, __LINE__,
                "fd %d (%s): %s (command %u)", p->fd, p->ip, what, cmd);
}

/* ------------------------------------------------------------ binary packets (\0REQ) */

/* bin_match takes anything starting with a NUL: pb_parse tells a bad magic from a good one. */
static enum session_match bin_match(const char *data, size_t n)
{
    (void)n;
    return data[0] == '\0' ? SESSION_YES : SESSION_NO;
}

/* bin_must_wait: while the store replays, submits wait (so restored jobs keep their order ahead
 * of new ones); while p has replies held on the store, anything but another background submit
 * waits (so replies stay in request order). */
static int bin_must_wait(struct peer *p, const char *data, size_t n)
{
    if (n < PROTO_HEADER_SIZE)
        return 0;
    uint32_t f = proto_cmd_flags(proto_get32(data + 4));
    if (p->eng->replaying && (f & PROTO_F_SUBMIT)) {
        p->flags |= PEER_WAIT_REPLAY;
        return 1;
    }
    return p->pending_acks > 0 && !(f & PROTO_F_DURABLE);
}

/* bin_frame parses one binary packet and dispatches it to cmd, or answers its framing error. */
static long bin_frame(struct peer *p, const char *data, size_t n)
{
    struct engine *e = p->eng;
    struct pb_packet pkt;
    size_t used = 0;
    enum pb_status st = pb_parse(data, n, PROTO_MAGIC_REQ, e->cfg->max_packet, &pkt, &used);
    switch (st) {
    case PB_NEED_MORE:
        return 0;
    case PB_BAD_MAGIC:
        bad_input(p, PERR_BAD_MAGIC, "bad magic, closing", 0);
        return -1;
    case PB_WRONG_MAGIC:
        bad_input(p, PERR_WRONG_MAGIC, "response magic from a client", pkt.cmd);
        peer_send_error(p, PROTO_ERR_INVALID_MAGIC, "Request magic expected");
        return (long)used;
    case PB_TOO_LARGE:
        bad_input(p, PERR_TOO_LARGE, "packet larger than --max-packet-size", pkt.cmd);
        peer_send_error(p, PROTO_ERR_ARGUMENT_TOO_LARGE, "Packet larger than max-packet-size");
        p->discard = pkt.size; /* the body is dropped as it arrives (step) */
        return (long)used;
    case PB_BAD_COMMAND:
        bad_input(p, PERR_BAD_COMMAND, "unknown command", pkt.cmd);
        peer_send_error(p, PROTO_ERR_INVALID_COMMAND, "Invalid command expected");
        return (long)used;
    case PB_BAD_ARGS:
        bad_input(p, PERR_BAD_ARGS, "missing argument separators", pkt.cmd);
        peer_send_error(p, PROTO_ERR_INVALID_ARGUMENT, "Malformed arguments");
        return (long)used;
    case PB_OK:
        e->stats.packets++;
        cmd_dispatch(p, &pkt);
        return (long)used;
    }
    return -1;
}

/* ------------------------------------------------------------ admin text lines */

/* text_match takes any other first byte: gearmand answers any line as an admin command. */
static enum session_match text_match(const char *data, size_t n)
{
    (void)n;
    return data[0] != '\0' ? SESSION_YES : SESSION_NO;
}

/* text_must_wait: admin lines answer during a replay, but wait behind replies held on the store. */
static int text_must_wait(struct peer *p, const char *data, size_t n)
{
    (void)data;
    (void)n;
    return p->pending_acks > 0;
}

/* text_frame finds one admin line and hands it to admin, or answers an over-long one. */
static long text_frame(struct peer *p, const char *data, size_t n)
{
    struct engine *e = p->eng;
    size_t len, used;
    switch (pa_find_line(data, n, e->cfg->max_line, &len, &used)) {
    case PA_NEED_MORE:
        return 0;
    case PA_TOO_LONG: {
        bad_input(p, PERR_LINE_TOO_LONG, "admin line too long", 0);
        admin_line_too_long(p);
        /* drop through the newline if it is here already, else until it arrives */
        const char *nl = memchr(data, '\n', n);
        if (nl != NULL)
            return (long)(nl - data + 1);
        p->flags |= PEER_SKIP_LINE;
        return (long)n;
    }
    case PA_OK:
        e->stats.lines++;
        peer_mark(p, PEER_KIND_ADMIN);
        admin_line(p, data, len);
        return (long)used;
    }
    return -1;
}

/* ------------------------------------------------------------ the protocol table */

const struct session_proto session_protos[] = {
    {"binary", bin_match, bin_must_wait, bin_frame},
    {"text", text_match, text_must_wait, text_frame},
    {NULL, NULL, NULL, NULL},
};

const struct session_proto *session_sniff(const char *data, size_t n, int *need_more)
{
    *need_more = 0;
    for (const struct session_proto *sp = session_protos; sp->name != NULL; sp++) {
        enum session_match m = sp->match(data, n);
        if (m == SESSION_YES)
            return sp;
        if (m == SESSION_NEED_MORE && n < SESSION_SNIFF_MAX) {
            *need_more = 1;
            return NULL;
        }
    }
    return NULL;
}

/* ------------------------------------------------------------ input */

/* step handles the unit at data[0..n): the tail of an oversize packet or line being dropped, or
 * one packet or line of the protocol its first bytes name. Returns bytes used (0: it is
 * incomplete, or must wait), or -1 when the connection must close. */
static long step(struct peer *p, const char *data, size_t n)
{
    const struct session_proto *sp = NULL;
    if (p->discard == 0 && !(p->flags & PEER_SKIP_LINE)) {
        int need_more;
        sp = session_sniff(data, n, &need_more);
        if (sp == NULL) {
            if (need_more)
                return 0;
            bad_input(p, PERR_UNRECOGNISED, "no protocol recognised, closing", 0);
            return -1;
        }
        if ((p->pending_acks > 0 || p->eng->replaying) && sp->must_wait != NULL &&
            sp->must_wait(p, data, n))
            return 0;
    }
    if (p->worker != NULL && p->worker->held)
        cmd_grab_release(p->eng, p->worker); /* the worker did not wait: NO_JOB before anything */
    if (p->discard > 0) {
        size_t d = p->discard < n ? (size_t)p->discard : n;
        p->discard -= d;
        return (long)d;
    }
    if (p->flags & PEER_SKIP_LINE) {
        const char *nl = memchr(data, '\n', n);
        if (nl == NULL)
            return (long)n;
        p->flags &= ~PEER_SKIP_LINE;
        return (long)(nl - data + 1);
    }
    return sp->frame(p, data, n);
}

/* run handles data[0..n) until it is used up or incomplete; *left gets the unused count. */
static int run(struct peer *p, const char *data, size_t n, size_t *left)
{
    size_t off = 0;
    size_t quota = outq_pending(&p->out) + PEER_OUTPUT_QUOTA;
    uint64_t packets = p->eng->queued_packets + PEER_PACKET_QUOTA;
    unsigned steps = 0;
    p->flags &= ~PEER_DEFERRED;
    while (off < n && !(p->flags & PEER_CLOSING) && !peer_busy(p)) {
        if (outq_pending(&p->out) > quota || p->eng->queued_packets > packets ||
            steps++ == PEER_INPUT_QUOTA) {
            p->flags |= PEER_DEFERRED; /* enough for one turn: the rest next iteration */
            break;
        }
        long used = step(p, data + off, n - off);
        if (used < 0) {
            peer_close(p);
            engine_drain_ready(p->eng); /* what the packets before it asked for */
            return -1;
        }
        if (used == 0)
            break;
        off += (size_t)used;
    }
    /* the wake-ups the packets asked for happen once the whole read is handled, not after
     * each packet: a GRAB another worker holds then gets the best job of a pipelined burst of
     * submits, as a GRAB sent after the burst would, not the first one read */
    engine_drain_ready(p->eng);
    *left = (p->flags & PEER_CLOSING) ? 0 : n - off;
    return 0;
}

/* frame_size returns the whole size of the binary packet that data[0..n) begins, when its header
 * is there (0 otherwise, or for a packet over --max-packet-size, which is never buffered). */
static size_t frame_size(const struct peer *p, const char *data, size_t n)
{
    if (p->discard > 0 || (p->flags & PEER_SKIP_LINE) || n < PROTO_HEADER_SIZE ||
        proto_get32(data) != PROTO_MAGIC_REQ)
        return 0;
    uint32_t size = proto_get32(data + 8);
    if (size > p->eng->cfg->max_packet)
        return 0;
    return PROTO_HEADER_SIZE + (size_t)size;
}

size_t session_need(const struct peer *p)
{
    size_t have = buf_len(&p->in);
    size_t total = frame_size(p, buf_head(&p->in), have);
    return total > have ? total - have : 0;
}

int session_feed(struct peer *p, const char *data, size_t n)
{
    if (p->flags & PEER_CLOSING)
        return 0;
    if (buf_len(&p->in) > 0) {
        if (buf_append(&p->in, data, n) != 0) {
            peer_close(p);
            return -1;
        }
        return session_process(p);
    }
    size_t left;
    if (run(p, data, n, &left) != 0)
        return -1;
    if (left > 0) {
        /* a packet cut by the read: room for it and what the next read brings of it, in one
         * allocation (never more than a read ahead of what arrived: a header alone cannot make
         * spurd allocate its declared size) */
        size_t total = frame_size(p, data + (n - left), left);
        size_t room = total > left ? total - left : 0;
        if (room > SESSION_READ_AHEAD)
            room = SESSION_READ_AHEAD;
        if (buf_reserve_exact(&p->in, left + room) != 0 ||
            buf_append(&p->in, data + (n - left), left) != 0) {
            peer_close(p);
            return -1;
        }
        peer_account(p); /* a partial packet is held: it counts against the budget */
    }
    return 0;
}

int session_process(struct peer *p)
{
    size_t left;
    size_t n = buf_len(&p->in);
    if (n == 0)
        return 0;
    if (run(p, buf_head(&p->in), n, &left) != 0)
        return -1;
    buf_consume(&p->in, n - left);
    buf_shrink(&p->in);
    peer_account(p);
    return 0;
}

/* ------------------------------------------------------------ teardown */

void session_detach(struct peer *p)
{
    if (p->pending_acks > 0) { /* replies held by the store for p are dropped */
        store_owner_gone(p->eng, peer_ack_owner(p, 0));
        store_owner_gone(p->eng, peer_ack_owner(p, 1));
        p->pending_acks = 0;
    }
    cmd_peer_gone(p);
    admin_peer_gone(p);
    peer_unlink(p);
}

/* ------------------------------------------------------------ invariants */


int session_check(const struct engine *e, char *err, size_t errlen)
{
    list_for_each(it, &e->peers) {
        const struct peer *p = peer_of(it);
        if (p->worker != NULL) {
            uint32_t n = 0;
            if (p->worker->peer != p)
                return engine_check_fail(err, errlen, "fd %d: worker of another peer", p->fd);
            list_for_each(jt, &p->worker->running) {
                const struct job *j = job_of_qnode(jt);
                if (j->state != JOB_RUNNING || job_worker(j) != p->worker)
                    return engine_check_fail(err, errlen, "fd %d: bad job in running list", p->fd);
                n++;
            }
            if (n != p->worker->nrunning)
                return engine_check_fail(err, errlen, "fd %d: nrunning mismatch", p->fd);
            if (p->worker->held && worker_has_work(p->worker))
                return engine_check_fail(err, errlen,
                                         "fd %d: a held GRAB while a job is ready for it", p->fd);
        }
        list_for_each(n, &p->waiters)
            if (waiter_of_pnode(n)->client != p)
                return engine_check_fail(err, errlen, "fd %d: waiter of another client", p->fd);
    }
    return 0;
}

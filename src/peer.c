/* SPDX-License-Identifier: BSD-3-Clause */
/* peer: one connection as the engine sees it: framing, sniffing, dispatch and reply queueing. */
#include "peer.h"

#include <stdlib.h>
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

static struct log_limit bad_input_limit = {1.0, 0, 0};
static struct log_limit shed_limit = {1.0, 0, 0};

/* account updates p's share of e->buffered; sheds when the total grew past the budget. */
static inline void account(struct peer *p)
{
    size_t now = (p->flags & PEER_CLOSING) ? 0 : p->in.cap + outq_pending(&p->out);
    if (now == p->held)
        return;
    struct engine *e = p->eng;
    int grew = now > p->held;
    e->buffered = e->buffered - p->held + now;
    p->held = now;
    if (!grew)
        return;
    if (e->buffered > e->buffered_peak)
        e->buffered_peak = e->buffered;
    if (e->buffered > e->cfg->max_buffer_memory && e->cfg->max_buffer_memory != 0)
        peer_shed(e);
}

void peer_account(struct peer *p)
{
    account(p);
}

/* worse reports whether a is a better victim than b (NULL): not reading before reading, then
 * more bytes held. */
static int worse(const struct peer *a, const struct peer *b)
{
    if (b == NULL)
        return 1;
    int sa = (a->flags & PEER_BLOCKED) || a->in.cap > 0;
    int sb = (b->flags & PEER_BLOCKED) || b->in.cap > 0;
    if (sa != sb)
        return sa;
    return a->held > b->held;
}

int peer_shed(struct engine *e)
{
    size_t limit = e->cfg->max_buffer_memory;
    int n = 0;
    while (limit != 0 && e->buffered > limit && e->peers != NULL) {
        struct peer *victim = NULL, *p = e->peers;
        do {
            if (!(p->flags & PEER_CLOSING) && p->held > 0 && worse(p, victim))
                victim = p;
            p = p->next;
        } while (p != e->peers);
        if (victim == NULL)
            break;
        e->stats.shed++;
        e->stats.shed_bytes += victim->held;
        log_limited(&shed_limit, LOG_WARNING, __FILE__, __LINE__,
                    "closing fd %d (%s)%s: it holds %zu buffered bytes, and all connections "
                    "together hold %zu, over --max-buffer-memory (%zu)",
                    victim->fd, victim->ip,
                    (victim->flags & PEER_BLOCKED) ? ", which does not read" : "",
                    victim->held, e->buffered, limit);
        peer_close(victim);
        account(victim); /* closing: its bytes no longer count, they are freed soon */
        n++;
    }
    return n;
}

void peer_init(struct peer *p, struct engine *e, int fd, const char *ip, int local)
{
    memset(p, 0, sizeof *p);
    p->eng = e;
    p->fd = fd;
    snprintf(p->ip, sizeof p->ip, "%s", ip ? ip : "-");
    if (local)
        p->flags |= PEER_LOCAL;
    if (e->cfg->exceptions)
        p->flags |= PEER_EXCEPTIONS;
}

void peer_attach(struct peer *p)
{
    struct engine *e = p->eng;
    p->seq = e->peer_seq++;
    if (e->peers == NULL) {
        e->peers = p;
        p->next = p->prev = p;
    } else {
        struct peer *last = e->peers->prev;
        p->prev = last;
        p->next = e->peers;
        last->next = p;
        e->peers->prev = p;
    }
    e->npeers++;
    e->stats.connections++;
}

void peer_detach(struct peer *p)
{
    struct engine *e = p->eng;
    if (p->pending_acks > 0) { /* replies held by the store for p are dropped */
        store_owner_gone(p->eng, p);
        p->pending_acks = 0;
    }
    cmd_peer_gone(p);
    admin_peer_gone(p);
    if (p->next != NULL) {
        if (p->next == p) {
            e->peers = NULL;
        } else {
            p->prev->next = p->next;
            p->next->prev = p->prev;
            if (e->peers == p)
                e->peers = p->next;
        }
        p->next = p->prev = NULL;
        e->npeers--;
    }
    buf_free(&p->in);
    outq_clear(&p->out);
    e->buffered -= p->held;
    p->held = 0;
    free(p->client_id);
    p->client_id = NULL;
}

void peer_close(struct peer *p)
{
    if (p->flags & PEER_CLOSING)
        return;
    p->flags |= PEER_CLOSING;
    p->eng->ops.close(p->eng, p);
    account(p);
}

/* queued notes that p has output, and enforces the output limit. Returns 0 or -1. */
static int queued(struct peer *p)
{
    if (outq_pending(&p->out) > p->eng->cfg->max_output) {
        log_limited(&bad_input_limit, LOG_WARNING, __FILE__, __LINE__,
                    "closing fd %d (%s): %zu unread reply bytes exceed --max-output-buffer",
                    p->fd, p->ip, outq_pending(&p->out));
        peer_close(p);
        return -1;
    }
    p->eng->queued_packets++;
    account(p);
    if (p->flags & PEER_CLOSING)
        return -1; /* shed: the budget was passed and p was the worst */
    p->eng->ops.output(p->eng, p);
    return 0;
}

int peer_write(struct peer *p, const void *data, size_t n)
{
    if (p->flags & PEER_CLOSING)
        return -1;
    if (outq_put(&p->out, data, n) != 0) {
        peer_close(p);
        return -1;
    }
    p->flags |= PEER_NOW;
    return queued(p);
}

/* mark_write says when p's output with this packet is written: a worker's next job, and the
 * result a client waits on, go out first in this loop iteration; other replies later in it. A
 * client with more jobs in flight gets its replies batched, so one write carries many
 * (conn_mark_dirty). */
static void mark_write(struct peer *p, uint32_t cmd)
{
    int to_worker = cmd == CMD_NOOP || cmd == CMD_JOB_ASSIGN || cmd == CMD_JOB_ASSIGN_UNIQ ||
                    cmd == CMD_JOB_ASSIGN_ALL;
    int lazy = !to_worker && cmd != CMD_NO_JOB && p->waiters != NULL &&
               p->waiters->pnext != NULL;
    if (to_worker || (!lazy && (cmd == CMD_WORK_COMPLETE || cmd == CMD_WORK_FAIL ||
                                cmd == CMD_WORK_EXCEPTION)))
        p->flags |= PEER_URGENT;
    else if (!lazy)
        p->flags |= PEER_NOW;
}

/* put_packet queues a response: header, the arguments separated by NULs (and one after the last
 * when a blob range follows), then bytes [off, off+len) of b if b is not NULL. */
static int put_packet(struct peer *p, uint32_t cmd, const struct proto_arg *args, int nargs,
                      struct blob *b, size_t off, size_t len)
{
    if (p->flags & PEER_CLOSING)
        return -1;
    mark_write(p, cmd);
    uint64_t body = b ? len : 0;
    for (int i = 0; i < nargs; i++)
        body += args[i].len + ((b != NULL || i + 1 < nargs) ? 1 : 0);
    if (body > UINT32_MAX)
        return -1;
    unsigned char hdr[PROTO_HEADER_SIZE];
    proto_header(hdr, PROTO_MAGIC_RES, cmd, (uint32_t)body);
    static const char nul = '\0';
    int rc = outq_put(&p->out, hdr, sizeof hdr);
    for (int i = 0; i < nargs && rc == 0; i++) {
        rc = outq_put(&p->out, args[i].ptr, args[i].len);
        if (rc == 0 && (b != NULL || i + 1 < nargs))
            rc = outq_put(&p->out, &nul, 1);
    }
    if (rc == 0 && b != NULL)
        rc = outq_put_ref(&p->out, b, off, len);
    if (rc != 0) {
        peer_close(p);
        return -1;
    }
    return queued(p);
}

/* STATUS_SLOT_MAX bounds a WORK_STATUS packet that is coalesced; a larger one (its numerator
 * and denominator are whatever the worker sent) is queued like any other packet. */
#define STATUS_SLOT_MAX 256

int peer_send_status(struct peer *p, const struct proto_arg *args, int nargs, uint64_t *slot)
{
    if (p->flags & PEER_CLOSING)
        return -1;
    size_t body = 0;
    for (int i = 0; i < nargs; i++)
        body += args[i].len + (i + 1 < nargs ? 1 : 0);
    if (!(p->flags & PEER_BLOCKED) || body > STATUS_SLOT_MAX - PROTO_HEADER_SIZE) {
        /* the client reads (its socket takes what is written): every status goes out */
        *slot = 0;
        return put_packet(p, CMD_WORK_STATUS, args, nargs, NULL, 0, 0);
    }
    mark_write(p, CMD_WORK_STATUS);
    char pkt[STATUS_SLOT_MAX];
    proto_header((unsigned char *)pkt, PROTO_MAGIC_RES, CMD_WORK_STATUS, (uint32_t)body);
    size_t n = PROTO_HEADER_SIZE;
    for (int i = 0; i < nargs; i++) {
        if (args[i].len > 0)
            memcpy(pkt + n, args[i].ptr, args[i].len);
        n += args[i].len;
        if (i + 1 < nargs)
            pkt[n++] = '\0';
    }
    int rc = outq_put_slot(&p->out, pkt, n, slot);
    if (rc < 0) {
        peer_close(p);
        return -1;
    }
    if (rc > 0)
        p->eng->stats.status_coalesced++;
    return queued(p);
}

int peer_send(struct peer *p, uint32_t cmd, const struct proto_arg *args, int nargs)
{
    return put_packet(p, cmd, args, nargs, NULL, 0, 0);
}

int peer_send_ref(struct peer *p, uint32_t cmd, const struct proto_arg *args, int nargs,
                  struct blob *b, size_t off, size_t len)
{
    return put_packet(p, cmd, args, nargs, b, off, len);
}

int peer_send_error(struct peer *p, const char *code, const char *text)
{
    struct proto_arg a[2] = {{code, strlen(code)}, {text, strlen(text)}};
    return peer_send(p, CMD_ERROR, a, 2);
}

/* bad_input logs malformed input at a rate-limited level. */
static void bad_input(struct peer *p, const char *what, uint32_t cmd)
{
    p->eng->stats.protocol_errors++;
    log_limited(&bad_input_limit, LOG_WARNING, __FILE__, __LINE__,
                "fd %d (%s): %s (command %u)", p->fd, p->ip, what, cmd);
}

/* parse_one handles the packet or line at data[0..n). Returns bytes used (0 = need more),
 * or -1 when the connection must close. */
static long parse_one(struct peer *p, const char *data, size_t n)
{
    struct engine *e = p->eng;
    if (p->worker != NULL && p->worker->held)
        cmd_grab_release(e, p->worker); /* the worker did not wait: NO_JOB before anything else */
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
    if (data[0] != '\0') {
        size_t len, used;
        switch (pa_find_line(data, n, e->cfg->max_line, &len, &used)) {
        case PA_NEED_MORE:
            return 0;
        case PA_TOO_LONG: {
            bad_input(p, "admin line too long", 0);
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
            admin_line(p, data, len);
            return (long)used;
        }
    }

    struct pb_packet pkt;
    size_t used = 0;
    enum pb_status st = pb_parse(data, n, PROTO_MAGIC_REQ, e->cfg->max_packet, &pkt, &used);
    switch (st) {
    case PB_NEED_MORE:
        return 0;
    case PB_BAD_MAGIC:
        bad_input(p, "bad magic, closing", 0);
        return -1;
    case PB_WRONG_MAGIC:
        bad_input(p, "response magic from a client", pkt.cmd);
        peer_send_error(p, PROTO_ERR_INVALID_MAGIC, "Request magic expected");
        return (long)used;
    case PB_TOO_LARGE:
        bad_input(p, "packet larger than --max-packet-size", pkt.cmd);
        peer_send_error(p, PROTO_ERR_ARGUMENT_TOO_LARGE, "Packet larger than max-packet-size");
        p->discard = pkt.size;
        return (long)used;
    case PB_BAD_COMMAND:
        bad_input(p, "unknown command", pkt.cmd);
        peer_send_error(p, PROTO_ERR_INVALID_COMMAND, "Invalid command expected");
        return (long)used;
    case PB_BAD_ARGS:
        bad_input(p, "missing argument separators", pkt.cmd);
        peer_send_error(p, PROTO_ERR_INVALID_ARGUMENT, "Malformed arguments");
        return (long)used;
    case PB_OK:
        e->stats.packets++;
        cmd_dispatch(p, &pkt);
        return (long)used;
    }
    return -1;
}

/* is_durable_submit reports whether cmd creates a background job (its reply may wait on the store). */
static int is_durable_submit(uint32_t cmd)
{
    return cmd == CMD_SUBMIT_JOB_BG || cmd == CMD_SUBMIT_JOB_HIGH_BG ||
           cmd == CMD_SUBMIT_JOB_LOW_BG || cmd == CMD_SUBMIT_JOB_EPOCH ||
           cmd == CMD_SUBMIT_JOB_SCHED || cmd == CMD_SUBMIT_REDUCE_JOB_BACKGROUND;
}

static int is_submit(uint32_t cmd)
{
    return is_durable_submit(cmd) || cmd == CMD_SUBMIT_JOB || cmd == CMD_SUBMIT_JOB_HIGH ||
           cmd == CMD_SUBMIT_JOB_LOW || cmd == CMD_SUBMIT_REDUCE_JOB;
}

/* must_wait reports whether the packet at data must wait: while the store replays, submits
 * wait (so restored jobs keep their order ahead of new ones); while p has replies held on the
 * store, anything but another background submit waits (so replies stay in request order). */
static int must_wait(struct peer *p, const char *data, size_t n)
{
    int replaying = p->eng->replaying;
    if (p->pending_acks == 0 && !replaying)
        return 0;
    if (p->discard > 0 || (p->flags & PEER_SKIP_LINE))
        return 0;
    if (data[0] != '\0')
        return p->pending_acks > 0; /* admin lines answer during a replay */
    if (n < PROTO_HEADER_SIZE)
        return 0;
    uint32_t cmd = proto_get32(data + 4);
    if (replaying && is_submit(cmd)) {
        p->flags |= PEER_WAIT_REPLAY;
        return 1;
    }
    return p->pending_acks > 0 && !is_durable_submit(cmd);
}

/* run parses data[0..n) until it is used up or incomplete; *left gets the unused count. */
static int run(struct peer *p, const char *data, size_t n, size_t *left)
{
    size_t off = 0;
    size_t quota = outq_pending(&p->out) + PEER_OUTPUT_QUOTA;
    uint64_t packets = p->eng->queued_packets + PEER_PACKET_QUOTA;
    p->flags &= ~PEER_DEFERRED;
    while (off < n && !(p->flags & PEER_CLOSING) && !peer_busy(p)) {
        if (outq_pending(&p->out) > quota || p->eng->queued_packets > packets) {
            p->flags |= PEER_DEFERRED; /* enough replies for now: the rest next iteration */
            break;
        }
        if (must_wait(p, data + off, n - off))
            break;
        long used = parse_one(p, data + off, n - off);
        if (used < 0) {
            peer_close(p);
            return -1;
        }
        if (used == 0)
            break;
        off += (size_t)used;
    }
    *left = (p->flags & PEER_CLOSING) ? 0 : n - off;
    return 0;
}

int peer_feed(struct peer *p, const char *data, size_t n)
{
    if (p->flags & PEER_CLOSING)
        return 0;
    if (buf_len(&p->in) > 0) {
        if (buf_append(&p->in, data, n) != 0) {
            peer_close(p);
            return -1;
        }
        return peer_process(p);
    }
    size_t left;
    if (run(p, data, n, &left) != 0)
        return -1;
    if (left > 0) {
        if (buf_append(&p->in, data + (n - left), left) != 0) {
            peer_close(p);
            return -1;
        }
        account(p); /* a partial packet is held: it counts against the budget */
    }
    return 0;
}

int peer_process(struct peer *p)
{
    size_t left;
    size_t n = buf_len(&p->in);
    if (n == 0)
        return 0;
    if (run(p, buf_head(&p->in), n, &left) != 0)
        return -1;
    buf_consume(&p->in, n - left);
    buf_shrink(&p->in);
    account(p);
    return 0;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* peer: one connection's state and its output queue (replies, urgency, limits, the memory
 * budget). The input side is session.c. */
#include "peer.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "esc.h"
#include "job.h"
#include "log.h"

static struct log_limit output_limit = {1.0, 0, 0, 0, 0};
static struct log_limit shed_limit = {1.0, 0, 0, 0, 0};

/* account updates p's share of e->buffered; sheds when the total grew past the budget. */
static inline void account(struct peer *p)
{
    size_t now = (p->flags & PEER_CLOSING) ? 0 : p->in.cap + outq_pending(&p->out) + p->tr_held;
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
    int sa = (a->flags & PEER_BLOCKED) || a->in.cap > 0 || a->tr_held > 0;
    int sb = (b->flags & PEER_BLOCKED) || b->in.cap > 0 || b->tr_held > 0;
    if (sa != sb)
        return sa;
    return a->held > b->held;
}

int peer_shed(struct engine *e)
{
    size_t limit = e->cfg->max_buffer_memory;
    int n = 0;
    while (limit != 0 && e->buffered > limit && !list_empty(&e->peers)) {
        struct peer *victim = NULL;
        list_for_each(it, &e->peers) {
            struct peer *p = peer_of(it);
            if (!(p->flags & PEER_CLOSING) && p->held > 0 && worse(p, victim))
                victim = p;
        }
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
    list_node_init(&p->node);
    list_node_init(&p->waiters);
    list_node_init(&p->listing_node);
    p->eng = e;
    p->fd = fd;
    snprintf(p->ip, sizeof p->ip, "%s", ip ? ip : "-");
    p->listener = "-";
    if (local)
        p->flags |= PEER_LOCAL;
    if (e->cfg->exceptions)
        p->flags |= PEER_EXCEPTIONS;
}

void peer_mark_first(struct peer *p, enum peer_kind k)
{
    p->kinds |= (uint8_t)(1u << k);
    p->eng->stats.conn_kind[k]++;
    p->eng->conn_now[k]++;
}

const char *peer_kind_name(const struct peer *p, char *out)
{
    static const char *const names[PEER_KINDS] = {"client", "worker", "admin", "none"};
    size_t n = 0;
    out[0] = '\0';
    for (int k = 0; k < PEER_KIND_NONE; k++)
        if (p->kinds & (1u << k))
            n += (size_t)snprintf(out + n, 32 - n, "%s%s", n > 0 ? "+" : "", names[k]);
    if (n == 0)
        snprintf(out, 32, "%s", names[PEER_KIND_NONE]);
    return out;
}

/* primary_kind is the kind a closed connection is counted under: worker, client, admin, none. */
static enum peer_kind primary_kind(const struct peer *p)
{
    if (p->kinds & (1u << PEER_KIND_WORKER))
        return PEER_KIND_WORKER;
    if (p->kinds & (1u << PEER_KIND_CLIENT))
        return PEER_KIND_CLIENT;
    if (p->kinds & (1u << PEER_KIND_ADMIN))
        return PEER_KIND_ADMIN;
    return PEER_KIND_NONE;
}

void peer_attach(struct peer *p)
{
    struct engine *e = p->eng;
    p->seq = e->peer_seq++;
    list_push_back(&e->peers, &p->node);
    e->npeers++;
    e->stats.connections++;
}

void peer_unlink(struct peer *p)
{
    struct engine *e = p->eng;
    if (list_linked(&p->node)) {
        list_del(&p->node);
        e->npeers--;
        for (int k = 0; k < PEER_KIND_NONE; k++)
            if (p->kinds & (1u << k))
                e->conn_now[k]--;
        if (p->kinds == 0)
            e->stats.conn_kind[PEER_KIND_NONE]++;
        if (log_enabled(LOG_INFO)) {
            char kind[32];
            log_info("disconnect fd %d (%s), kind %s", p->fd, p->ip,
                     peer_kind_name(p, kind));
        }
    }
    buf_free(&p->in);
    outq_clear(&p->out);
    e->buffered -= p->held;
    p->held = 0;
    free(p->client_id);
    p->client_id = NULL;
    free(p->cert_names);
    p->cert_names = NULL;
}

void peer_close(struct peer *p)
{
    if (p->flags & PEER_CLOSING)
        return;
    p->flags |= PEER_CLOSING;
    p->eng->stats.conn_rejected[primary_kind(p)]++;
    p->eng->ops.close(p->eng, p);
    account(p);
}

/* queued notes that p has output, and enforces the output limit. Returns 0 or -1. */
static int queued(struct peer *p)
{
    if (outq_pending(&p->out) > p->eng->cfg->max_output) {
        log_limited(&output_limit, LOG_WARNING, __FILE__, __LINE__,
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

int peer_write_name(struct peer *p, const char *name, size_t len, unsigned flags)
{
    /* runs of plain bytes are queued as they are, each escaped byte as its three */
    size_t start = 0;
    for (size_t i = 0; i < len; i++) {
        if (!esc_byte(name, len, i, flags))
            continue;
        static const char hex[] = "0123456789ABCDEF";
        unsigned char c = (unsigned char)name[i];
        char e[3] = {'%', hex[c >> 4], hex[c & 15]};
        if ((i > start && peer_write(p, name + start, i - start) != 0) ||
            peer_write(p, e, sizeof e) != 0)
            return -1;
        start = i + 1;
    }
    return len > start ? peer_write(p, name + start, len - start) : 0;
}

/* mark_write says when p's output with this packet is written: a worker's next job, and the
 * result a client waits on, go out first in this loop iteration; other replies later in it. A
 * client with more jobs in flight gets its replies batched, so one write carries many
 * (conn_mark_dirty); so does the JOB_CREATED of a client's foreground job, which its result
 * (or --reply-batch) carries: one write and one wake-up of the client per job, not two. */
static void mark_write(struct peer *p, uint32_t cmd)
{
    uint32_t f = proto_cmd_flags(cmd);
    if (!(f & PROTO_F_TO_WORKER) && !list_empty(&p->waiters) &&
        (cmd == CMD_JOB_CREATED || p->waiters.next->next != &p->waiters))
        return; /* lazy: a client with a job in flight */
    p->flags |= (f & PROTO_F_URGENT) ? PEER_URGENT : PEER_NOW;
}

/* packet_body is the body size of a binary packet with these arguments and blob range. */
static uint64_t packet_body(const struct proto_arg *args, int nargs, const struct blob *b,
                            size_t len)
{
    uint64_t body = b ? len : 0;
    for (int i = 0; i < nargs; i++)
        body += args[i].len + ((b != NULL || i + 1 < nargs) ? 1 : 0);
    return body;
}

/* binary is the binary reply encoding, every connection's: into p->out, a header for a body of
 * body bytes, the arguments separated by NULs (one after the last when a blob range follows),
 * then bytes [off, off+len) of b, shared rather than copied when large. 0 or -1 (no memory). */
static int binary(struct peer *p, uint32_t cmd, const struct proto_arg *args, int nargs,
                  struct blob *b, size_t off, size_t len, uint64_t body)
{
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
    return rc;
}

/* put_packet queues a response through p's encoder (peer_ops.packet, binary by default): the
 * arguments and, if b is not NULL, bytes [off, off+len) of b as the payload. The binary
 * encoding, every connection's, is called directly (no indirect call on the hot path). */
static int put_packet(struct peer *p, uint32_t cmd, const struct proto_arg *args, int nargs,
                      struct blob *b, size_t off, size_t len)
{
    if (p->flags & PEER_CLOSING)
        return -1;
    p->eng->stats.packets_out++;
    mark_write(p, cmd);
    uint64_t body = packet_body(args, nargs, b, len);
    if (body > UINT32_MAX)
        return -1; /* no encoding carries it: dropped */
    int rc = p->ops != NULL && p->ops->packet != NULL
                 ? p->ops->packet(p, cmd, args, nargs, b, off, len)
                 : binary(p, cmd, args, nargs, b, off, len, body);
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
    if (!(p->flags & PEER_BLOCKED) || body > STATUS_SLOT_MAX - PROTO_HEADER_SIZE ||
        (p->ops != NULL && p->ops->packet != NULL)) {
        /* the client reads (its socket takes what is written), or has its own encoder: every
         * status goes out */
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
    else
        p->eng->stats.packets_out++;
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

void peer_printf(struct peer *p, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if (n > (int)sizeof buf - 1)
        n = (int)sizeof buf - 1;
    peer_write(p, buf, (size_t)n);
}

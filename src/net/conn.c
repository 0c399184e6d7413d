/* SPDX-License-Identifier: BSD-3-Clause */
/* conn: one accepted connection: reading into its peer, flushing its output queue, teardown. */
#include "conn.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "config.h"
#include "engine.h"
#include "log.h"
#include "session.h"
#include "spin.h"

#define CONN_IOV_MAX 64 /* iovecs per writev */

static void read_cb(struct ev_loop *loop, ev_io *w, int revents);
static void write_cb(struct ev_loop *loop, ev_io *w, int revents);

int conn_ctx_init(struct conn_ctx *x, struct ev_loop *loop, struct engine *eng,
                  const struct config *cfg, struct spin *spin)
{
    memset(x, 0, sizeof *x);
    x->loop = loop;
    x->eng = eng;
    x->cfg = cfg;
    x->spin = spin;
    list_node_init(&x->dirty);
    list_node_init(&x->lazy);
    list_node_init(&x->closing);
    list_node_init(&x->deferred);
    list_node_init(&x->handshakes);
    list_node_init(&x->all);
    x->rbuf = malloc(CONN_READ_SIZE);
    return x->rbuf != NULL ? 0 : -1;
}

void conn_ctx_destroy(struct conn_ctx *x)
{
    while (x->eng != NULL && !list_empty(&x->all)) { /* x->eng: conn_ctx_init ran */
        struct conn *c = container_of(list_first(&x->all), struct conn, all_node);
        if (!c->closing)
            conn_close(c);
        conn_free(c);
    }
    free(x->rbuf);
    x->rbuf = NULL;
}

/* conn_of returns the conn whose peer is p (a peer made by conn_new: its ops are
 * conn_peer_ops). */
static struct conn *conn_of(struct peer *p)
{
    return container_of(p, struct conn, peer);
}

static void peer_output(struct peer *p)
{
    conn_mark_dirty(conn_of(p));
}

static void peer_closed(struct peer *p)
{
    conn_close(conn_of(p));
}

static void peer_resumed(struct peer *p)
{
    conn_resume(conn_of(p));
}

/* conn_peer_ops are the peer_ops of a connection's peer: binary replies into its output
 * queue, written by conn_flush. */
static const struct peer_ops conn_peer_ops = {peer_output, peer_closed, peer_resumed, NULL};

struct conn *conn_new(struct conn_ctx *x, const struct transport *t)
{
    struct conn *c = calloc(1, sizeof *c);
    if (c == NULL) {
        struct transport tmp = *t;
        transport_close(&tmp);
        return NULL;
    }
    c->ctx = x;
    c->tr = *t;
    int fd = t->fd;
    char ip[sizeof c->peer.ip];
    int local = transport_peer_name(&c->tr, ip, sizeof ip);
    peer_init(&c->peer, x->eng, fd, ip, local);
    c->peer.ops = &conn_peer_ops;
    peer_attach(&c->peer);
    log_info("connect fd %d from %s (%s)", fd, c->peer.ip, t->ops->name);
    list_node_init(&c->dirty_node);
    list_node_init(&c->lazy_node);
    list_node_init(&c->close_node);
    list_node_init(&c->defer_node);
    list_node_init(&c->hs_node);
    list_push_back(&x->all, &c->all_node);
    c->opened = ev_now(x->loop);
    if (transport_handshaking(&c->tr)) {
        c->handshaking = 1;
        list_push_back(&x->handshakes, &c->hs_node);
    }
    ev_io_init(&c->rio, read_cb, fd, EV_READ);
    ev_io_init(&c->wio, write_cb, fd, EV_WRITE);
    c->rio.data = c;
    c->wio.data = c;
    ev_io_start(x->loop, &c->rio);
    x->nconns++;
    return c;
}

void conn_mark_dirty(struct conn *c)
{
    struct conn_ctx *x = c->ctx;
    if (list_linked(&c->dirty_node) || c->closing)
        return;
    if (c->peer.flags & (PEER_URGENT | PEER_NOW) || x->cfg->reply_batch <= 0) {
        list_del(&c->lazy_node);
        if (c->peer.flags & PEER_URGENT)
            /* a worker's next job or a client's result goes out before acknowledgements */
            list_push_front(&x->dirty, &c->dirty_node);
        else
            list_push_back(&x->dirty, &c->dirty_node);
    } else if (!list_linked(&c->lazy_node)) {
        /* a client with more jobs in flight: its replies wait a little, so that one write
         * carries many of them */
        if (list_empty(&x->lazy))
            x->lazy_since = ev_now(x->loop);
        list_push_back(&x->lazy, &c->lazy_node);
    }
}

void conn_flush_dirty(struct conn_ctx *x)
{
    struct list_node *n;
    while ((n = list_first(&x->dirty)) != NULL) {
        list_del(n);
        conn_flush(container_of(n, struct conn, dirty_node));
    }
}

void conn_flush_lazy(struct conn_ctx *x)
{
    struct list_node *n;
    while ((n = list_first(&x->lazy)) != NULL) {
        list_del(n);
        conn_flush(container_of(n, struct conn, lazy_node));
    }
}

void conn_close(struct conn *c)
{
    if (c->closing)
        return;
    list_del(&c->defer_node);
    list_del(&c->hs_node);
    c->closing = 1;
    c->peer.flags |= PEER_CLOSING;
    peer_account(&c->peer); /* its buffers no longer count: they are freed before the loop sleeps */
    list_del(&c->lazy_node);
    list_del(&c->dirty_node); /* conn_free makes the last write */
    ev_io_stop(c->ctx->loop, &c->rio);
    list_push_back(&c->ctx->closing, &c->close_node);
}

/* tr_account counts what c's transport holds in the memory budget (which may shed c: check
 * c->closing after it) and notes whether that includes a partial record. */
static void tr_account(struct conn *c)
{
    int partial;
    size_t held = transport_held(&c->tr, &partial);
    c->tr_partial = partial != 0;
    if (held != c->peer.tr_held) {
        c->peer.tr_held = held;
        peer_account(&c->peer);
    }
}

int conn_flush(struct conn *c)
{
    struct outq *q = &c->peer.out;
    c->peer.flags &= ~(PEER_URGENT | PEER_NOW);
    while (outq_pending(q) > 0) {
        struct iovec iov[CONN_IOV_MAX];
        int n = outq_iov(q, iov, CONN_IOV_MAX);
        ssize_t w = transport_writev(&c->tr, iov, n);
        if (w < 0) {
            if (w == TRANSPORT_WANT_WRITE) {
                if (!ev_is_active(&c->wio))
                    ev_io_start(c->ctx->loop, &c->wio);
                c->peer.flags |= PEER_BLOCKED;
                tr_account(c);
                peer_account(&c->peer);
                return 0;
            }
            if (w == TRANSPORT_WANT_READ) {
                /* the transport must read before it can write (TLS): read_cb flushes again */
                c->write_wants_read = 1;
                if (!ev_is_active(&c->rio))
                    ev_io_start(c->ctx->loop, &c->rio);
                c->peer.flags |= PEER_BLOCKED;
                tr_account(c);
                peer_account(&c->peer);
                return 0;
            }
            log_debug("write to %s fd %d failed: %s", c->tr.ops->name, c->peer.fd,
                      strerror(errno));
            outq_clear(q);
            conn_close(c);
            return -1;
        }
        c->ctx->eng->stats.bytes_out += (uint64_t)w;
        outq_consume(q, (size_t)w);
    }
    c->peer.flags &= ~PEER_BLOCKED;
    c->write_wants_read = 0;
    tr_account(c);
    peer_account(&c->peer);
    if (ev_is_active(&c->wio) && !c->read_wants_write)
        ev_io_stop(c->ctx->loop, &c->wio);
    if (c->eof && !peer_waiting(&c->peer)) /* (replies held by the store: conn_resume) */
        conn_close(c);
    return 0;
}

void conn_free(struct conn *c)
{
    struct conn_ctx *x = c->ctx;
    /* best effort: replies already queued (an ERROR before a close) still get one try */
    if (outq_pending(&c->peer.out) > 0) {
        struct iovec iov[CONN_IOV_MAX];
        int n = outq_iov(&c->peer.out, iov, CONN_IOV_MAX);
        ssize_t w = transport_writev(&c->tr, iov, n);
        if (w > 0)
            x->eng->stats.bytes_out += (uint64_t)w;
    }
    ev_io_stop(x->loop, &c->rio);
    ev_io_stop(x->loop, &c->wio);
    list_del(&c->dirty_node);
    list_del(&c->lazy_node);
    list_del(&c->close_node);
    list_del(&c->defer_node);
    list_del(&c->hs_node);
    list_del(&c->all_node);
    session_detach(&c->peer);
    (void)transport_shutdown(&c->tr); /* best effort, as the last write */
    transport_close(&c->tr);
    x->nconns--;
    free(c);
}

size_t conn_free_closed(struct conn_ctx *x)
{
    size_t freed = 0;
    struct list_node *n;
    while ((n = list_first(&x->closing)) != NULL) {
        conn_free(container_of(n, struct conn, close_node));
        freed++;
        /* freeing may have queued output for others (re-queued jobs wake workers) */
        conn_flush_dirty(x);
    }
    return freed;
}

/* on_eof handles the peer's half-close: pending replies are still written, also those the
 * store holds until a job is durable (and the input waiting behind them), then the conn
 * closes. */
static void on_eof(struct conn *c)
{
    c->eof = 1;
    ev_io_stop(c->ctx->loop, &c->rio);
    if (outq_pending(&c->peer.out) == 0 && !list_linked(&c->dirty_node) &&
        !list_linked(&c->lazy_node) && !peer_waiting(&c->peer))
        conn_close(c);
}

/* note_partial records when c started holding an unfinished packet or line, and puts c on the
 * deferred list when its input stopped at the output quota (reading waits until it is done). */
static void note_partial(struct conn *c)
{
    const struct peer *p = &c->peer;
    if ((p->flags & PEER_DEFERRED) && !c->closing) {
        if (!list_linked(&c->defer_node)) {
            c->defer_round = c->ctx->defer_round;
            list_push_back(&c->ctx->deferred, &c->defer_node);
        }
        ev_io_stop(c->ctx->loop, &c->rio);
        c->partial_since = 0;
        return;
    }
    if (!peer_busy(p) && (buf_len(&p->in) > 0 || p->discard > 0 ||
                          (p->flags & PEER_SKIP_LINE) || c->tr_partial)) {
        if (c->partial_since == 0)
            c->partial_since = ev_now(c->ctx->loop);
    } else {
        c->partial_since = 0;
    }
}

/* check_pending puts c on the deferred list when its transport holds input that no fd event
 * will announce (TLS records already decrypted) while c reads: conn_run_deferred reads it. */
static void check_pending(struct conn *c)
{
    if (c->closing || !ev_is_active(&c->rio) || transport_pending(&c->tr) == 0)
        return;
    c->tr_pending = 1;
    if (!list_linked(&c->defer_node)) {
        c->defer_round = c->ctx->defer_round;
        list_push_back(&c->ctx->deferred, &c->defer_node);
    }
}

/* handshake_step follows c's transport handshake after a read returned n: once it is done, the
 * verified certificate's names go to the peer, before any byte read reaches the session. */
static void handshake_step(struct conn *c, ssize_t n)
{
    struct engine *e = c->ctx->eng;
    if (n == TRANSPORT_ERROR) {
        e->stats.tls_handshake_failures++;
        c->handshaking = 0;
        list_del(&c->hs_node);
        return;
    }
    if (transport_handshaking(&c->tr))
        return;
    c->handshaking = 0;
    list_del(&c->hs_node);
    e->stats.tls_handshakes++;
    free(c->peer.cert_names);
    c->peer.cert_names = transport_peer_names(&c->tr);
    if (c->peer.cert_names != NULL && log_enabled(LOG_INFO)) {
        char names[256]; /* the list as "a, b, c", cut to fit */
        size_t k = 0;
        for (const char *nm = c->peer.cert_names; *nm != '\0' && k + 1 < sizeof names;
             nm += strlen(nm) + 1) {
            int w = snprintf(names + k, sizeof names - k, "%s%s", k > 0 ? ", " : "", nm);
            k += w > 0 ? (size_t)w : 0;
        }
        names[sizeof names - 1] = '\0';
        log_info("fd %d (%s): TLS client certificate verified: %s", c->peer.fd, c->peer.ip,
                 names);
    } else
        log_debug("fd %d (%s): TLS handshake done", c->peer.fd, c->peer.ip);
}

void conn_handshake_sweep(struct conn_ctx *x, double now)
{
    double limit = x->cfg->ssl_handshake_timeout;
    struct list_node *n;
    if (limit <= 0)
        return;
    while ((n = list_first(&x->handshakes)) != NULL) {
        struct conn *c = container_of(n, struct conn, hs_node);
        if (now - c->opened < limit)
            break;
        log_info("closing fd %d (%s): TLS handshake not done after %.0fs "
                 "(--ssl-handshake-timeout)", c->peer.fd, c->peer.ip, now - c->opened);
        x->eng->stats.tls_handshake_timeouts++;
        c->handshaking = 0;
        conn_close(c); /* takes it off the list */
    }
}

void conn_idle_sweep(struct conn_ctx *x, double now)
{
    double limit = x->cfg->idle_timeout;
    if (limit <= 0)
        return;
    list_for_each_safe(n, next, &x->all) {
        struct conn *c = container_of(n, struct conn, all_node);
        if (c->partial_since > 0 && !c->closing && now - c->partial_since >= limit) {
            log_info("closing fd %d (%s): a packet left unfinished for %.0fs (--idle-timeout)",
                     c->peer.fd, c->peer.ip, now - c->partial_since);
            conn_close(c);
        }
    }
}

static void read_cb(struct ev_loop *loop, ev_io *w, int revents)
{
    (void)revents;
    struct conn *c = w->data;
    struct conn_ctx *x = c->ctx;
    struct peer *p = &c->peer;
    ssize_t n;
    if (x->spin != NULL)
        spin_input(x->spin, ev_now(loop));
    if (c->write_wants_read) {
        /* the transport's write waited for this: retry it first */
        c->write_wants_read = 0;
        if (conn_flush(c) != 0 || c->closing)
            return;
    }
    if (peer_busy(p) || (peer_waiting(p) && buf_len(&p->in) >= 16 * CONN_READ_SIZE)) {
        /* replies must stay in order: read again once the listing is written or the held
         * replies are sent (conn_resume); meanwhile the input buffer stays bounded */
        ev_io_stop(loop, &c->rio);
        return;
    }
    if (buf_len(&p->in) > 0) {
        /* a partial packet is pending: read straight behind it, up to its end when its size is
         * known (then nothing is left over to move to the front of the buffer) */
        size_t need = session_need(p);
        size_t want = need > 0 && need < CONN_READ_SIZE ? need : CONN_READ_SIZE;
        if (buf_reserve(&p->in, want) != 0) {
            conn_close(c);
            return;
        }
        peer_account(p); /* the buffer may have grown: count it before filling it */
        if (c->closing)
            return;
        n = transport_read(&c->tr, buf_tail(&p->in), want);
        if (c->handshaking)
            handshake_step(c, n);
        tr_account(c);
        if (c->closing)
            return; /* shed: what it holds passed the budget */
        if (n > 0) {
            x->eng->stats.bytes_in += (uint64_t)n;
            buf_commit(&p->in, (size_t)n);
            session_process(p);
            note_partial(c);
            check_pending(c);
            return;
        }
    } else {
        n = transport_read(&c->tr, x->rbuf, CONN_READ_SIZE);
        if (c->handshaking)
            handshake_step(c, n);
        tr_account(c);
        if (c->closing)
            return;
        if (n > 0) {
            x->eng->stats.bytes_in += (uint64_t)n;
            session_feed(p, x->rbuf, (size_t)n);
            note_partial(c);
            check_pending(c);
            return;
        }
    }
    if (n == 0) {
        on_eof(c);
        return;
    }
    if (n == TRANSPORT_WANT_READ) {
        note_partial(c); /* the transport may hold the start of a record */
        return;
    }
    if (n == TRANSPORT_WANT_WRITE) {
        /* the transport must write before it can read (TLS): write_cb reads again */
        c->read_wants_write = 1;
        if (!ev_is_active(&c->wio))
            ev_io_start(loop, &c->wio);
        return;
    }
    log_debug("read from %s fd %d failed: %s", c->tr.ops->name, p->fd, strerror(errno));
    conn_close(c);
}

void conn_resume(struct conn *c)
{
    if (c->closing)
        return;
    session_process(&c->peer);
    note_partial(c);
    if (!c->closing && !c->eof && !peer_busy(&c->peer) && !(c->peer.flags & PEER_DEFERRED)) {
        ev_io_start(c->ctx->loop, &c->rio);
        check_pending(c); /* input the transport held while c did not read */
    }
}

void conn_run_deferred(struct conn_ctx *x)
{
    /* each conn that was waiting gets one turn; one that defers again joins the end of the list
     * with the new round and waits for the next iteration */
    unsigned round = ++x->defer_round;
    struct list_node *n;
    while ((n = list_first(&x->deferred)) != NULL) {
        struct conn *c = container_of(n, struct conn, defer_node);
        if (c->defer_round == round)
            break;
        list_del(n);
        c->peer.flags &= ~PEER_DEFERRED;
        if (c->tr_pending) {
            c->tr_pending = 0;
            if (!c->closing && ev_is_active(&c->rio)) {
                read_cb(x->loop, &c->rio, EV_READ); /* what the transport holds */
                continue;
            }
        }
        conn_resume(c);
    }
}

static void write_cb(struct ev_loop *loop, ev_io *w, int revents)
{
    struct conn *c = w->data;
    if (c->read_wants_write) {
        /* the transport's read waited for this: retry it */
        c->read_wants_write = 0;
        read_cb(loop, &c->rio, revents);
        if (c->closing)
            return;
    }
    conn_flush(c);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* conn: one accepted socket: reading into its peer, flushing its output queue, teardown. */
#include "conn.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "log.h"
#include "server.h"
#include "session.h"

#define CONN_IOV_MAX 64 /* iovecs per writev */

static void read_cb(struct ev_loop *loop, ev_io *w, int revents);
static void write_cb(struct ev_loop *loop, ev_io *w, int revents);

struct conn *conn_new(struct server *s, int fd, const char *ip, int local)
{
    struct conn *c = calloc(1, sizeof *c);
    if (c == NULL) {
        close(fd);
        return NULL;
    }
    c->srv = s;
    peer_init(&c->peer, &s->eng, fd, ip, local);
    peer_attach(&c->peer);
    ev_io_init(&c->rio, read_cb, fd, EV_READ);
    ev_io_init(&c->wio, write_cb, fd, EV_WRITE);
    c->rio.data = c;
    c->wio.data = c;
    ev_io_start(s->loop, &c->rio);
    s->nconns++;
    return c;
}

static void lazy_unlink(struct conn *c)
{
    struct server *s = c->srv;
    if (c->lazy_prev)
        c->lazy_prev->lazy_next = c->lazy_next;
    else
        s->lazy = c->lazy_next;
    if (c->lazy_next)
        c->lazy_next->lazy_prev = c->lazy_prev;
    else
        s->lazy_tail = c->lazy_prev;
    c->lazy_next = c->lazy_prev = NULL;
    c->lazy = 0;
}

void conn_mark_dirty(struct conn *c)
{
    struct server *s = c->srv;
    if (c->dirty || c->closing)
        return;
    if (c->peer.flags & (PEER_URGENT | PEER_NOW) || s->cfg->reply_batch <= 0) {
        if (c->lazy)
            lazy_unlink(c);
        c->dirty = 1;
        c->dirty_next = NULL;
        if (c->peer.flags & PEER_URGENT) {
            /* a worker's next job or a client's result goes out before acknowledgements */
            c->dirty_next = s->dirty;
            s->dirty = c;
            if (s->dirty_tail == NULL)
                s->dirty_tail = c;
        } else {
            if (s->dirty_tail)
                s->dirty_tail->dirty_next = c;
            else
                s->dirty = c;
            s->dirty_tail = c;
        }
    } else if (!c->lazy) {
        /* a client with more jobs in flight: its replies wait a little, so that one write
         * carries many of them */
        c->lazy = 1;
        if (s->lazy == NULL)
            s->lazy_since = ev_now(s->loop);
        c->lazy_next = NULL;
        c->lazy_prev = s->lazy_tail;
        if (s->lazy_tail)
            s->lazy_tail->lazy_next = c;
        else
            s->lazy = c;
        s->lazy_tail = c;
    }
}

struct conn *conn_pop_dirty(struct server *s)
{
    struct conn *c = s->dirty;
    if (c == NULL)
        return NULL;
    s->dirty = c->dirty_next;
    if (s->dirty == NULL)
        s->dirty_tail = NULL;
    c->dirty = 0;
    c->dirty_next = NULL;
    return c;
}

struct conn *conn_pop_lazy(struct server *s)
{
    struct conn *c = s->lazy;
    if (c != NULL)
        lazy_unlink(c);
    return c;
}

/* defer_unlink takes c off the server's deferred list. */
static void defer_unlink(struct conn *c)
{
    struct server *s = c->srv;
    if (c->defer_prev)
        c->defer_prev->defer_next = c->defer_next;
    else
        s->deferred = c->defer_next;
    if (c->defer_next)
        c->defer_next->defer_prev = c->defer_prev;
    else
        s->deferred_tail = c->defer_prev;
    c->defer_next = c->defer_prev = NULL;
    c->deferred = 0;
}

void conn_close(struct conn *c)
{
    if (c->closing)
        return;
    if (c->deferred)
        defer_unlink(c);
    c->closing = 1;
    c->peer.flags |= PEER_CLOSING;
    peer_account(&c->peer); /* its buffers no longer count: they are freed before the loop sleeps */
    if (c->lazy)
        lazy_unlink(c);
    ev_io_stop(c->srv->loop, &c->rio);
    c->close_next = c->srv->closing;
    c->srv->closing = c;
}

int conn_flush(struct conn *c)
{
    struct outq *q = &c->peer.out;
    c->peer.flags &= ~(PEER_URGENT | PEER_NOW);
    while (outq_pending(q) > 0) {
        struct iovec iov[CONN_IOV_MAX];
        int n = outq_iov(q, iov, CONN_IOV_MAX);
        ssize_t w = writev(c->peer.fd, iov, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                if (!ev_is_active(&c->wio))
                    ev_io_start(c->srv->loop, &c->wio);
                c->peer.flags |= PEER_BLOCKED;
                peer_account(&c->peer);
                return 0;
            }
            log_debug("write to fd %d failed: %s", c->peer.fd, strerror(errno));
            outq_clear(q);
            conn_close(c);
            return -1;
        }
        outq_consume(q, (size_t)w);
    }
    c->peer.flags &= ~PEER_BLOCKED;
    peer_account(&c->peer);
    if (ev_is_active(&c->wio))
        ev_io_stop(c->srv->loop, &c->wio);
    if (c->eof)
        conn_close(c);
    return 0;
}

void conn_free(struct conn *c)
{
    struct server *s = c->srv;
    /* best effort: replies already queued (an ERROR before a close) still get one try */
    if (outq_pending(&c->peer.out) > 0) {
        struct iovec iov[CONN_IOV_MAX];
        int n = outq_iov(&c->peer.out, iov, CONN_IOV_MAX);
        ssize_t w = writev(c->peer.fd, iov, n);
        (void)w;
    }
    ev_io_stop(s->loop, &c->rio);
    ev_io_stop(s->loop, &c->wio);
    session_detach(&c->peer);
    close(c->peer.fd);
    s->nconns--;
    free(c);
}

/* on_eof handles the peer's half-close: pending replies are still written, then the conn closes. */
static void on_eof(struct conn *c)
{
    c->eof = 1;
    ev_io_stop(c->srv->loop, &c->rio);
    if (outq_pending(&c->peer.out) == 0 && !c->dirty && !c->lazy)
        conn_close(c);
}

/* note_partial records when c started holding an unfinished packet or line, and puts c on the
 * deferred list when its input stopped at the output quota (reading waits until it is done). */
static void note_partial(struct conn *c)
{
    const struct peer *p = &c->peer;
    if ((p->flags & PEER_DEFERRED) && !c->closing) {
        if (!c->deferred) {
            struct server *s = c->srv;
            c->deferred = 1;
            c->defer_round = s->defer_round;
            c->defer_next = NULL;
            c->defer_prev = s->deferred_tail;
            if (s->deferred_tail)
                s->deferred_tail->defer_next = c;
            else
                s->deferred = c;
            s->deferred_tail = c;
        }
        ev_io_stop(c->srv->loop, &c->rio);
        c->partial_since = 0;
        return;
    }
    if (!peer_busy(p) && (buf_len(&p->in) > 0 || p->discard > 0 || (p->flags & PEER_SKIP_LINE))) {
        if (c->partial_since == 0)
            c->partial_since = ev_now(c->srv->loop);
    } else {
        c->partial_since = 0;
    }
}

void conn_idle_sweep(struct server *s, double now)
{
    double limit = s->cfg->idle_timeout;
    if (limit <= 0)
        return;
    list_for_each_safe(n, next, &s->eng.peers) {
        struct conn *c = (struct conn *)peer_of(n);
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
    struct peer *p = &c->peer;
    ssize_t n;
    spin_input(&c->srv->spin, ev_now(loop));
    if (peer_busy(p) || (peer_waiting(p) && buf_len(&p->in) >= 16 * SERVER_READ_SIZE)) {
        /* replies must stay in order: read again once the listing is written or the held
         * replies are sent (conn_resume); meanwhile the input buffer stays bounded */
        ev_io_stop(c->srv->loop, &c->rio);
        return;
    }
    if (buf_len(&p->in) > 0) {
        /* a partial packet is pending: read straight behind it */
        if (buf_reserve(&p->in, SERVER_READ_SIZE) != 0) {
            conn_close(c);
            return;
        }
        peer_account(p); /* the buffer may have grown: count it before filling it */
        if (c->closing)
            return;
        n = read(p->fd, buf_tail(&p->in), SERVER_READ_SIZE);
        if (n > 0) {
            buf_commit(&p->in, (size_t)n);
            session_process(p);
            note_partial(c);
            return;
        }
    } else {
        n = read(p->fd, c->srv->rbuf, SERVER_READ_SIZE);
        if (n > 0) {
            session_feed(p, c->srv->rbuf, (size_t)n);
            note_partial(c);
            return;
        }
    }
    if (n == 0) {
        on_eof(c);
        return;
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
        return;
    log_debug("read from fd %d failed: %s", p->fd, strerror(errno));
    conn_close(c);
}

void conn_resume(struct conn *c)
{
    if (c->closing)
        return;
    session_process(&c->peer);
    note_partial(c);
    if (!c->closing && !c->eof && !peer_busy(&c->peer) && !(c->peer.flags & PEER_DEFERRED))
        ev_io_start(c->srv->loop, &c->rio);
}

void conn_run_deferred(struct server *s)
{
    /* each conn that was waiting gets one turn; one that defers again joins the end of the list
     * with the new round and waits for the next iteration */
    unsigned round = ++s->defer_round;
    struct conn *c;
    while ((c = s->deferred) != NULL && c->defer_round != round) {
        defer_unlink(c);
        c->peer.flags &= ~PEER_DEFERRED;
        conn_resume(c);
    }
}

static void write_cb(struct ev_loop *loop, ev_io *w, int revents)
{
    (void)loop;
    (void)revents;
    conn_flush(w->data);
}

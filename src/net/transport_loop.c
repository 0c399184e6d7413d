/* SPDX-License-Identifier: BSD-3-Clause */
/* transport_loop: an in-memory connection for unit tests (transport_loop.h). */
#include "transport_loop.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int loop_pipe_init(struct loop_pipe *lp)
{
    memset(lp, 0, sizeof *lp);
    lp->write_room = SIZE_MAX;
    lp->local = 1;
    return pipe2(lp->fds, O_CLOEXEC | O_NONBLOCK);
}

void loop_pipe_destroy(struct loop_pipe *lp)
{
    buf_free(&lp->to_server);
    buf_free(&lp->from_server);
    close(lp->fds[0]);
    close(lp->fds[1]);
}

static ssize_t loop_read(struct transport *t, void *out, size_t len)
{
    struct loop_pipe *lp = t->ctx;
    if (lp->read_result != 0) {
        errno = ECONNRESET;
        return lp->read_result;
    }
    if (lp->handshaking)
        return TRANSPORT_WANT_READ;
    size_t n = buf_len(&lp->to_server);
    if (n == 0)
        return lp->eof ? 0 : TRANSPORT_WANT_READ;
    if (n > len)
        n = len;
    if (lp->read_max > 0 && n > lp->read_max)
        n = lp->read_max;
    memcpy(out, buf_head(&lp->to_server), n);
    buf_consume(&lp->to_server, n);
    return (ssize_t)n;
}

static ssize_t loop_writev(struct transport *t, const struct iovec *iov, int iovcnt)
{
    struct loop_pipe *lp = t->ctx;
    if (lp->write_result != 0) {
        errno = EPIPE;
        return lp->write_result;
    }
    if (lp->write_room == 0)
        return TRANSPORT_WANT_WRITE;
    size_t limit = lp->write_room;
    if (lp->write_max > 0 && lp->write_max < limit)
        limit = lp->write_max;
    size_t done = 0;
    for (int i = 0; i < iovcnt && done < limit; i++) {
        size_t k = iov[i].iov_len;
        if (k > limit - done)
            k = limit - done;
        if (buf_append(&lp->from_server, iov[i].iov_base, k) != 0) {
            errno = ENOMEM;
            return TRANSPORT_ERROR;
        }
        done += k;
    }
    if (lp->write_room != SIZE_MAX)
        lp->write_room -= done;
    return (ssize_t)done;
}

static int loop_shutdown(struct transport *t)
{
    struct loop_pipe *lp = t->ctx;
    lp->shutdowns++;
    return 0;
}

static void loop_close(struct transport *t)
{
    struct loop_pipe *lp = t->ctx;
    lp->closed++;
    t->fd = -1;
}

static int loop_peer_name(struct transport *t, char *out, size_t outlen)
{
    struct loop_pipe *lp = t->ctx;
    snprintf(out, outlen, "loop");
    return lp->local;
}

static size_t loop_pending(struct transport *t)
{
    const struct loop_pipe *lp = t->ctx;
    return lp->held ? buf_len(&lp->to_server) : 0;
}

static int loop_handshaking(struct transport *t)
{
    const struct loop_pipe *lp = t->ctx;
    return lp->handshaking;
}

static char *loop_peer_names(struct transport *t)
{
    const struct loop_pipe *lp = t->ctx;
    if (lp->names == NULL)
        return NULL;
    char *copy = malloc(lp->names_len);
    if (copy != NULL)
        memcpy(copy, lp->names, lp->names_len);
    return copy;
}

static const struct transport_ops loop_ops = {
    "loop",         loop_read,    loop_writev,      loop_shutdown,  loop_close,
    loop_peer_name, loop_pending, loop_handshaking, loop_peer_names, NULL,
};

static int loop_wrap(struct transport *t, int fd, void *arg)
{
    (void)fd;
    struct loop_pipe *lp = arg;
    if (lp == NULL)
        return -1;
    t->ops = &loop_ops;
    t->fd = lp->fds[0];
    t->ctx = lp;
    return 0;
}

const struct transport_kind transport_loop = {.name = "loop", .wrap = loop_wrap};

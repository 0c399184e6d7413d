/* SPDX-License-Identifier: BSD-3-Clause */
/* conn: one server connection. Non-blocking sockets; waits are bounded by the timeout. */
#include "lgc.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* READ_CHUNK is the least free space offered to each recv(). */
#define READ_CHUNK 65536
/* READ_MAX_AHEAD bounds how far ahead of the data a large packet's buffer is grown at once. */
#define READ_MAX_AHEAD (16u << 20)

/* now_ms returns a monotonic clock in milliseconds. */
static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* poll_retry polls with a total timeout (ms, -1 forever), retrying after EINTR with the time left.
 * Returns poll's result. */
static int poll_retry(struct pollfd *pfds, nfds_t n, int timeout)
{
    int64_t deadline = timeout >= 0 ? now_ms() + timeout : 0;
    for (;;) {
        int rc = poll(pfds, n, timeout);
        if (rc >= 0 || errno != EINTR)
            return rc;
        if (timeout >= 0) {
            int64_t left = deadline - now_ms();
            timeout = left > 0 ? (int)left : 0;
        }
    }
}

/* drop closes the socket after a failure but keeps bytes already read (and the reply FIFO), so
 * the owner can still process packets that arrived before the failure. */
static void drop(struct lgc_conn *conn)
{
    lgc_tls_close(conn);
    if (conn->fd >= 0)
        close(conn->fd);
    conn->fd = -1;
    lgc_buf_clear(&conn->out);
    conn->sleeping = false;
    conn->noop = false;
}

void lgc_conn_close(struct lgc_conn *conn)
{
    drop(conn);
    lgc_buf_clear(&conn->in);
    lgc_fifo_clear(&conn->pend);
}

/* connect_one tries one address. Returns the connected socket, or -1 with *err set. */
static int connect_one(const struct addrinfo *ai, int timeout, int *err)
{
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
        *err = errno;
        return -1;
    }
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        if (errno != EINPROGRESS) {
            *err = errno;
            close(fd);
            return -1;
        }
        struct pollfd pfd = {.fd = fd, .events = POLLOUT, .revents = 0};
        int rc = poll_retry(&pfd, 1, timeout);
        if (rc <= 0) {
            *err = rc == 0 ? ETIMEDOUT : errno;
            close(fd);
            return -1;
        }
        int soerr = 0;
        socklen_t len = sizeof soerr;
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) != 0)
            soerr = errno;
        if (soerr != 0) {
            *err = soerr;
            close(fd);
            return -1;
        }
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

/* connect_unix connects to the unix-domain socket at path (a host that starts with '/', spurd's
 * --unix=PATH; the port is ignored). Returns the socket, or -1 with *err set. */
static int connect_unix(const char *path, int timeout, int *err)
{
    struct sockaddr_un sun;
    memset(&sun, 0, sizeof sun);
    sun.sun_family = AF_UNIX;
    size_t n = strlen(path);
    if (n >= sizeof sun.sun_path) {
        *err = ENAMETOOLONG;
        return -1;
    }
    memcpy(sun.sun_path, path, n + 1);
    struct addrinfo ai;
    memset(&ai, 0, sizeof ai);
    ai.ai_family = AF_UNIX;
    ai.ai_socktype = SOCK_STREAM;
    ai.ai_addr = (struct sockaddr *)&sun;
    ai.ai_addrlen = sizeof sun;
    return connect_one(&ai, timeout, err);
}

gearman_return_t lgc_conn_connect(struct lgc_universal *u, struct lgc_conn *conn)
{
    lgc_conn_close(conn);
    int timeout = u->timeout > 0 ? u->timeout : GEARMAN_DEFAULT_CONNECT_TIMEOUT;
    int err = ECONNREFUSED;
    int fd = -1;
    if (conn->host[0] == '/') {
        fd = connect_unix(conn->host, timeout, &err);
        if (fd < 0) {
            char what[300];
            snprintf(what, sizeof what, "connect to %s", conn->host);
            return lgc_set_errno(u, GEARMAN_COULD_NOT_CONNECT, err, what);
        }
        goto connected;
    }
    struct addrinfo hints;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    struct addrinfo *res = NULL;
    int gai = getaddrinfo(conn->host, conn->port, &hints, &res);
    if (gai != 0)
        return lgc_set_error(u, GEARMAN_GETADDRINFO, "%s:%s: %s", conn->host, conn->port,
                             gai_strerror(gai));
    for (const struct addrinfo *ai = res; ai != NULL && fd < 0; ai = ai->ai_next)
        fd = connect_one(ai, timeout, &err);
    freeaddrinfo(res);
    if (fd < 0) {
        char what[300];
        snprintf(what, sizeof what, "connect to %s:%s", conn->host, conn->port);
        return lgc_set_errno(u, GEARMAN_COULD_NOT_CONNECT, err, what);
    }
connected:
    conn->fd = fd;
    conn->was_tls = false;
    if (u->ssl) {
        gearman_return_t rc = lgc_tls_handshake(u, conn, timeout);
        if (rc != GEARMAN_SUCCESS) {
            lgc_conn_close(conn);
            return rc;
        }
    }
    conn->generation++;
    if (u->identifier != NULL) {
        struct proto_arg a = {u->identifier, u->identifier_len};
        if (lgc_conn_queue(u, conn, CMD_SET_CLIENT_ID, &a, 1) != GEARMAN_SUCCESS)
            goto nomem;
    }
    for (size_t i = 0; i < u->noptions; i++) {
        struct proto_arg a = {u->options[i], strlen(u->options[i])};
        if (lgc_conn_queue(u, conn, CMD_OPTION_REQ, &a, 1) != GEARMAN_SUCCESS ||
            lgc_fifo_push(&conn->pend, LGC_PEND_OPTION, NULL) != 0)
            goto nomem;
    }
    if (u->on_connect != NULL) {
        gearman_return_t rc = u->on_connect(u->owner, conn);
        if (rc != GEARMAN_SUCCESS) {
            lgc_conn_close(conn);
            return rc;
        }
    }
    return GEARMAN_SUCCESS;
nomem:
    lgc_conn_close(conn);
    return lgc_set_error(u, GEARMAN_MEMORY_ALLOCATION_FAILURE, "connection setup");
}

gearman_return_t lgc_conn_queue(struct lgc_universal *u, struct lgc_conn *conn, uint32_t cmd,
                                const struct proto_arg *args, int nargs)
{
    if (lgc_buf_append_packet(&conn->out, cmd, args, nargs) != 0)
        return lgc_set_error(u, GEARMAN_MEMORY_ALLOCATION_FAILURE, "queueing %s",
                             proto_cmd_name(cmd));
    return GEARMAN_SUCCESS;
}

/* lost records a failed connection, drops it and returns -1. */
static int lost(struct lgc_universal *u, struct lgc_conn *conn, int err, const char *what)
{
    char msg[300];
    snprintf(msg, sizeof msg, "%s %s:%s%s", what, conn->host, conn->port,
             conn->ssl != NULL ? " over TLS" : "");
    if (err == EPROTO && conn->ssl != NULL)
        lgc_set_error(u, GEARMAN_LOST_CONNECTION, "%s: TLS: %s", msg, conn->ssl_error);
    else if (err != 0)
        lgc_set_errno(u, GEARMAN_LOST_CONNECTION, err, msg);
    else
        lgc_set_error(u, GEARMAN_LOST_CONNECTION, "%s: server closed the connection", msg);
    drop(conn);
    return -1;
}

int lgc_conn_write(struct lgc_universal *u, struct lgc_conn *conn)
{
    if (conn->fd < 0)
        return lgc_buf_len(&conn->out) ? -1 : 0;
    while (lgc_buf_len(&conn->out) > 0) {
        ssize_t n = conn->ssl != NULL
                        ? lgc_tls_send(conn, lgc_buf_head(&conn->out), lgc_buf_len(&conn->out))
                        : send(conn->fd, lgc_buf_head(&conn->out), lgc_buf_len(&conn->out),
                               MSG_NOSIGNAL);
        if (n > 0) {
            lgc_buf_consume(&conn->out, (size_t)n);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        return lost(u, conn, n < 0 ? errno : 0, "write to");
    }
    return 0;
}

int lgc_conn_read(struct lgc_universal *u, struct lgc_conn *conn)
{
    if (conn->fd < 0)
        return -1;
    /* TLS: keep reading while the session holds decrypted bytes (at most one record), which
     * poll() cannot report. */
    for (int rounds = 0; rounds < 64 || lgc_tls_pending(conn); rounds++) {
        size_t want = READ_CHUNK;
        size_t have = lgc_buf_len(&conn->in);
        if (have >= PROTO_HEADER_SIZE) { /* grow towards the whole packet in one step */
            size_t total = PROTO_HEADER_SIZE + (size_t)proto_get32(lgc_buf_head(&conn->in) + 8);
            if (total > have && total - have > want)
                want = total - have < READ_MAX_AHEAD ? total - have : READ_MAX_AHEAD;
        }
        char *p = lgc_buf_reserve(&conn->in, want);
        if (p == NULL) {
            lgc_set_error(u, GEARMAN_MEMORY_ALLOCATION_FAILURE, "receive buffer");
            drop(conn);
            return -1;
        }
        size_t space = conn->in.cap - conn->in.end;
        ssize_t n = conn->ssl != NULL ? lgc_tls_recv(conn, p, space) : recv(conn->fd, p, space, 0);
        if (n > 0) {
            conn->in.end += (size_t)n;
            if ((size_t)n < space && conn->ssl == NULL)
                return 0; /* TLS returns a record at a time: read on until it would block */
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        return lost(u, conn, n < 0 ? errno : 0, "read from");
    }
    return 0;
}

int lgc_conn_packet(struct lgc_universal *u, struct lgc_conn *conn, struct pb_packet *pkt,
                    size_t *used)
{
    for (;;) {
        size_t n = lgc_buf_len(&conn->in);
        if (n == 0)
            return 0;
        enum pb_status st =
            pb_parse(lgc_buf_head(&conn->in), n, PROTO_MAGIC_RES, UINT32_MAX, pkt, used);
        switch (st) {
        case PB_OK:
            return 1;
        case PB_NEED_MORE:
            return 0;
        case PB_BAD_COMMAND: /* a command this library does not know: skip it */
            lgc_buf_consume(&conn->in, *used);
            continue;
        case PB_BAD_MAGIC:
        case PB_WRONG_MAGIC:
        case PB_TOO_LARGE:
        case PB_BAD_ARGS:
            break;
        }
        lgc_set_error(u, GEARMAN_INVALID_PACKET, "%s:%s sent a malformed packet (%s)", conn->host,
                      conn->port, pb_status_name(st));
        lgc_conn_close(conn);
        return -1;
    }
}

void lgc_conn_consume(struct lgc_conn *conn, size_t used)
{
    lgc_buf_consume(&conn->in, used);
}

gearman_return_t lgc_conn_flush(struct lgc_universal *u, struct lgc_conn *conn)
{
    for (;;) {
        if (lgc_conn_write(u, conn) != 0)
            return GEARMAN_LOST_CONNECTION;
        if (lgc_buf_len(&conn->out) == 0)
            return GEARMAN_SUCCESS;
        /* Keep reading while blocked on a full socket so that neither side can deadlock. */
        struct pollfd pfd = {.fd = conn->fd, .events = POLLIN | POLLOUT, .revents = 0};
        int rc = poll_retry(&pfd, 1, u->timeout);
        if (rc < 0)
            return lgc_set_errno(u, GEARMAN_ERRNO, errno, "poll");
        if (rc == 0)
            return lgc_set_timeout(u, 1);
        if ((pfd.revents & (POLLIN | POLLHUP | POLLERR)) &&
            (!(pfd.revents & POLLOUT) || conn->ssl != NULL) && lgc_conn_read(u, conn) != 0)
            return GEARMAN_LOST_CONNECTION;
    }
}

gearman_return_t lgc_conn_recv(struct lgc_universal *u, struct lgc_conn *conn,
                               struct pb_packet *pkt, size_t *used)
{
    for (;;) {
        int r = lgc_conn_packet(u, conn, pkt, used);
        if (r > 0)
            return GEARMAN_SUCCESS;
        if (r < 0)
            return GEARMAN_INVALID_PACKET;
        if (conn->fd < 0) {
            if (u->error_code == GEARMAN_LOST_CONNECTION && conn->was_tls)
                return GEARMAN_LOST_CONNECTION; /* keep the reason lost() recorded */
            return lgc_set_error(u, GEARMAN_LOST_CONNECTION, "%s:%s closed the connection",
                                 conn->host, conn->port);
        }
        if (lgc_conn_write(u, conn) != 0)
            continue; /* dropped: report after any packet that is still buffered */
        struct pollfd pfd = {.fd = conn->fd, .events = POLLIN, .revents = 0};
        if (lgc_buf_len(&conn->out) > 0 || conn->ssl_read_wants_write)
            pfd.events |= POLLOUT;
        int rc = lgc_tls_pending(conn) ? 1 : poll_retry(&pfd, 1, u->timeout);
        if (rc < 0)
            return lgc_set_errno(u, GEARMAN_ERRNO, errno, "poll");
        if (rc == 0)
            return lgc_set_timeout(u, 1);
        if ((pfd.revents & (POLLIN | POLLHUP | POLLERR)) || conn->ssl != NULL)
            (void)lgc_conn_read(u, conn);
    }
}

gearman_return_t lgc_wait(struct lgc_universal *u)
{
    struct pollfd pfds[64];
    struct lgc_conn *conns[64];
    nfds_t n = 0;
    bool pending = false;
    for (struct lgc_conn *c = u->conns; c != NULL && n < 64; c = c->next) {
        if (c->fd < 0)
            continue;
        pfds[n].fd = c->fd;
        pfds[n].events = POLLIN;
        if (lgc_buf_len(&c->out) > 0 || c->ssl_read_wants_write)
            pfds[n].events |= POLLOUT;
        pfds[n].revents = 0;
        if (lgc_tls_pending(c))
            pending = true;
        conns[n++] = c;
    }
    if (n == 0)
        return lgc_set_error(u, GEARMAN_NO_ACTIVE_FDS, "no connection to wait on");
    /* Decrypted bytes already buffered in a TLS session: look, but do not sleep. */
    int rc = poll_retry(pfds, n, pending ? 0 : u->timeout);
    if (rc == 0 && pending) {
        for (nfds_t i = 0; i < n; i++)
            if (lgc_tls_pending(conns[i]))
                (void)lgc_conn_read(u, conns[i]);
        return GEARMAN_SUCCESS;
    }
    if (rc < 0)
        return lgc_set_errno(u, GEARMAN_ERRNO, errno, "poll");
    if (rc == 0)
        return lgc_set_timeout(u, (unsigned)n);
    for (nfds_t i = 0; i < n; i++) {
        if ((pfds[i].revents & POLLOUT) && lgc_conn_write(u, conns[i]) != 0)
            continue;
        if ((pfds[i].revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL)) ||
            (conns[i]->ssl != NULL && (pfds[i].revents != 0 || lgc_tls_pending(conns[i]))))
            (void)lgc_conn_read(u, conns[i]);
    }
    return GEARMAN_SUCCESS;
}

gearman_return_t lgc_echo(struct lgc_universal *u, const void *data, size_t size,
                          lgc_packet_fn handler, void *owner)
{
    if (u->conns == NULL)
        return lgc_set_error(u, GEARMAN_NO_SERVERS, "no servers added");
    if (size > UINT32_MAX)
        return lgc_set_error(u, GEARMAN_ARGUMENT_TOO_LARGE, "echo payload over 4 GiB");
    for (struct lgc_conn *c = u->conns; c != NULL; c = c->next) {
        gearman_return_t rc;
        if (c->fd < 0 && (rc = lgc_conn_connect(u, c)) != GEARMAN_SUCCESS)
            return rc;
        struct proto_arg a = {data, size};
        if ((rc = lgc_conn_queue(u, c, CMD_ECHO_REQ, &a, 1)) != GEARMAN_SUCCESS)
            return rc;
        if (lgc_fifo_push(&c->pend, LGC_PEND_ECHO, NULL) != 0)
            return lgc_set_error(u, GEARMAN_MEMORY_ALLOCATION_FAILURE, "echo");
        for (;;) {
            struct pb_packet pkt;
            size_t used;
            if ((rc = lgc_conn_recv(u, c, &pkt, &used)) != GEARMAN_SUCCESS) {
                lgc_conn_close(c); /* the reply order is unknown now */
                return rc;
            }
            struct lgc_pend *head = lgc_fifo_peek(&c->pend);
            bool ours = head != NULL && head->kind == LGC_PEND_ECHO;
            if (ours && pkt.cmd == CMD_ECHO_RES) {
                bool same = pkt.data_len == size && (size == 0 || memcmp(pkt.data, data, size) == 0);
                lgc_fifo_pop(&c->pend);
                lgc_conn_consume(c, used);
                if (!same)
                    return lgc_set_error(u, GEARMAN_ECHO_DATA_CORRUPTION,
                                         "%s:%s echoed different bytes", c->host, c->port);
                break;
            }
            if (ours && pkt.cmd == CMD_ERROR) {
                rc = lgc_return_from_server_code(pkt.arg[0], pkt.len[0]);
                lgc_set_error(u, rc, "%.*s: %.*s", (int)pkt.len[0], pkt.arg[0], (int)pkt.len[1],
                              pkt.arg[1]);
                lgc_fifo_pop(&c->pend);
                lgc_conn_consume(c, used);
                return rc;
            }
            if (handler != NULL)
                handler(owner, c, &pkt);
            lgc_conn_consume(c, used);
        }
    }
    return GEARMAN_SUCCESS;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* transport_tcp: the plain socket transport (TCP over IPv4/IPv6, unix domain): recv, sendmsg and
 * close on the fd itself. The socket calls rather than read and writev: they go to the socket
 * without the file layer's work (vfs_read/vfs_writev and the file-position lookup, some 5% of
 * the kernel's time per delivered reply when many clients wait), and MSG_NOSIGNAL makes a write
 * to a closed peer an EPIPE, not a SIGPIPE. */
#include "transport.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

static ssize_t tcp_read(struct transport *t, void *buf, size_t len)
{
    for (;;) {
        ssize_t n = recv(t->fd, buf, len, 0);
        if (n >= 0)
            return n;
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return TRANSPORT_WANT_READ;
        return TRANSPORT_ERROR;
    }
}

static ssize_t tcp_writev(struct transport *t, const struct iovec *iov, int iovcnt)
{
    for (;;) {
        struct msghdr msg = {.msg_iov = (struct iovec *)(uintptr_t)iov,
                             .msg_iovlen = (size_t)iovcnt};
        ssize_t n = sendmsg(t->fd, &msg, MSG_NOSIGNAL);
        if (n >= 0)
            return n;
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return TRANSPORT_WANT_WRITE;
        return TRANSPORT_ERROR;
    }
}

static int tcp_shutdown(struct transport *t)
{
    (void)t;
    return 0; /* the close says it */
}

static void tcp_close(struct transport *t)
{
    close(t->fd);
    t->fd = -1;
}

/* tcp_peer_name formats the peer address; a loopback or unix peer is local. */
static int tcp_peer_name(struct transport *t, char *out, size_t outlen)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    if (getpeername(t->fd, (struct sockaddr *)&ss, &sl) != 0) {
        snprintf(out, outlen, "-");
        return 0;
    }
    if (ss.ss_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)&ss;
        inet_ntop(AF_INET, &in->sin_addr, out, (socklen_t)outlen);
        return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
    }
    if (ss.ss_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&ss;
        inet_ntop(AF_INET6, &in6->sin6_addr, out, (socklen_t)outlen);
        if (IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr))
            return 1;
        if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr))
            return in6->sin6_addr.s6_addr[12] == 127;
        return 0;
    }
    snprintf(out, outlen, "unix");
    return 1;
}

static const struct transport_ops tcp_ops = {
    "tcp", tcp_read, tcp_writev, tcp_shutdown, tcp_close, tcp_peer_name, NULL, NULL, NULL, NULL,
};

static int tcp_wrap(struct transport *t, int fd, void *arg)
{
    (void)arg;
    t->ops = &tcp_ops;
    t->fd = fd;
    t->ctx = NULL;
    return 0;
}

const struct transport_kind transport_tcp = {.name = "tcp", .wrap = tcp_wrap};

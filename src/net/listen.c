/* SPDX-License-Identifier: BSD-3-Clause */
/* listen: opening the listening sockets. */
#include "listen.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static int set_port(struct sockaddr *sa, int port)
{
    if (sa->sa_family == AF_INET)
        ((struct sockaddr_in *)sa)->sin_port = htons((uint16_t)port);
    else if (sa->sa_family == AF_INET6)
        ((struct sockaddr_in6 *)sa)->sin6_port = htons((uint16_t)port);
    else
        return -1;
    return 0;
}

static int get_port(int fd)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) != 0)
        return -1;
    if (ss.ss_family == AF_INET)
        return ntohs(((struct sockaddr_in *)&ss)->sin_port);
    if (ss.ss_family == AF_INET6)
        return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    return -1;
}

int listen_backlog(int configured)
{
    if (configured > 0)
        return configured;
    int n = SOMAXCONN;
    FILE *f = fopen("/proc/sys/net/core/somaxconn", "re");
    if (f != NULL) {
        long v;
        if (fscanf(f, "%ld", &v) == 1 && v > 0)
            n = v < INT_MAX ? (int)v : INT_MAX;
        fclose(f);
    }
    return n;
}

/* open_one binds and listens on one address. Returns the fd or -1 (errno set). */
static int open_one(const struct addrinfo *ai, int port, int backlog)
{
    struct sockaddr_storage ss;
    memcpy(&ss, ai->ai_addr, ai->ai_addrlen);
    set_port((struct sockaddr *)&ss, port);
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0)
        return -1;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (ai->ai_family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)&ss, ai->ai_addrlen) != 0 ||
        listen(fd, listen_backlog(backlog)) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

/* listen_name writes "ADDR:PORT" ("[ADDR]:PORT" for IPv6) for a bound address. */
static void listen_name(const struct sockaddr *sa, int port, char *out, size_t outlen)
{
    char host[INET6_ADDRSTRLEN] = "?";
    if (sa->sa_family == AF_INET6) {
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, host, sizeof host);
        snprintf(out, outlen, "[%s]:%d", host, port);
    } else {
        inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, host, sizeof host);
        snprintf(out, outlen, "%s:%d", host, port);
    }
}

/* listen_tcp_once is listen_tcp without the retries for port 0. */
static int listen_tcp_once(char *const *hosts, int nhosts, int port, int backlog,
                           struct listener *out, int max, int *bound_port, char *err,
                           size_t errlen)
{
    int count = 0;
    int all = nhosts == 0;
    for (int h = 0; h < (all ? 1 : nhosts); h++) {
        const char *host = all ? NULL : hosts[h];
        struct addrinfo hints, *res = NULL;
        memset(&hints, 0, sizeof hints);
        hints.ai_family = AF_UNSPEC;
        hints.ai_socktype = SOCK_STREAM;
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
        int rc = getaddrinfo(host, "0", &hints, &res);
        if (rc != 0) {
            snprintf(err, errlen, "cannot resolve listen address '%s': %s", host ? host : "*",
                     gai_strerror(rc));
            goto fail;
        }
        /* a name with several addresses (localhost: 127.0.0.1 and ::1 on a stock Debian) binds
         * them all, and needs only one of them when the machine lacks a family */
        int several = res != NULL && res->ai_next != NULL;
        int opened = 0, skipped_errno = 0;
        for (struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next) {
            if (count == max) {
                freeaddrinfo(res);
                snprintf(err, errlen, "too many listen addresses");
                goto fail;
            }
            int fd = open_one(ai, port, backlog);
            if (fd < 0) {
                /* an address family the machine lacks (no IPv6) is not fatal when listening
                 * on all addresses */
                if ((all || several) && (errno == EAFNOSUPPORT || errno == EADDRNOTAVAIL)) {
                    skipped_errno = errno;
                    continue;
                }
                int e = errno;
                snprintf(err, errlen, "cannot listen on '%s' port %d: %s", host ? host : "*",
                         port, strerror(e));
                freeaddrinfo(res);
                for (int i = 0; i < count; i++)
                    close(out[i].fd);
                errno = e;
                return -1;
            }
            if (port == 0)
                port = get_port(fd);
            memset(&out[count], 0, sizeof out[count]);
            out[count].fd = fd;
            out[count].family = ai->ai_family;
            out[count].proto = LISTEN_GEARMAN;
            listen_name(ai->ai_addr, port, out[count].name, sizeof out[count].name);
            count++;
            opened++;
        }
        freeaddrinfo(res);
        if (!all && opened == 0) {
            snprintf(err, errlen, "cannot listen on '%s' port %d: %s", host, port,
                     strerror(skipped_errno));
            goto fail;
        }
    }
    if (count == 0) {
        snprintf(err, errlen, "no address to listen on");
        return -1;
    }
    *bound_port = port;
    return count;
fail:
    for (int i = 0; i < count; i++)
        close(out[i].fd);
    return -1;
}

/* Port 0 with several addresses: the first bind picks a free port, which another process may
 * hold on a later address (127.0.0.1 free, ::1 taken); then all of them try another port. */
#define LISTEN_PORT0_TRIES 8

int listen_tcp(char *const *hosts, int nhosts, int port, int backlog, struct listener *out,
               int max, int *bound_port, char *err, size_t errlen)
{
    for (int attempt = 1;; attempt++) {
        errno = 0;
        int n = listen_tcp_once(hosts, nhosts, port, backlog, out, max, bound_port, err, errlen);
        if (n >= 0 || port != 0 || errno != EADDRINUSE || attempt == LISTEN_PORT0_TRIES)
            return n;
    }
}

int listen_unix(const char *path, int backlog, struct listen_unix_id *id, char *err,
                size_t errlen)
{
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    if (strlen(path) >= sizeof sa.sun_path) {
        snprintf(err, errlen, "unix socket path too long: %s", path);
        return -1;
    }
    strcpy(sa.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, errlen, "cannot listen on unix socket %s: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (lstat(path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) {
            snprintf(err, errlen, "cannot listen on unix socket %s: the path exists and is not a "
                     "socket (not removed)", path);
            close(fd);
            return -1;
        }
        /* a socket: a server still answers on it, or it is stale (ECONNREFUSED) */
        int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (probe < 0) {
            snprintf(err, errlen, "cannot probe unix socket %s: %s", path, strerror(errno));
            close(fd);
            return -1;
        }
        int rc = connect(probe, (struct sockaddr *)&sa, sizeof sa);
        int e = errno;
        close(probe);
        if (rc == 0 || e == EAGAIN) {
            snprintf(err, errlen, "unix socket %s is in use by another server", path);
            close(fd);
            return -1;
        }
        if (e != ECONNREFUSED) {
            snprintf(err, errlen, "cannot probe unix socket %s: %s", path, strerror(e));
            close(fd);
            return -1;
        }
        unlink(path); /* stale: nobody listens on it */
    }
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
        listen(fd, listen_backlog(backlog)) != 0 || lstat(path, &st) != 0) {
        snprintf(err, errlen, "cannot listen on unix socket %s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    id->dev = st.st_dev;
    id->ino = st.st_ino;
    return fd;
}

int listen_unix_remove(const char *path, const struct listen_unix_id *id)
{
    struct stat st;
    if (lstat(path, &st) != 0 || !S_ISSOCK(st.st_mode) || st.st_dev != id->dev ||
        st.st_ino != id->ino)
        return -1;
    return unlink(path);
}

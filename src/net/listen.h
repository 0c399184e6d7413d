/* SPDX-License-Identifier: BSD-3-Clause */
/* listen: opening the listening sockets (TCP over IPv4/IPv6, unix domain). No libev. */
#ifndef SPUR_LISTEN_H
#define SPUR_LISTEN_H

#include <stddef.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LISTEN_MAX 32 /* listening sockets at most */

struct transport_kind;

/* What the connections accepted on a listener speak: selects what accept builds for them
 * (server.c's accept_proto table). */
enum listen_proto {
    LISTEN_GEARMAN, /* the Gearman binary and admin text protocols (conn + peer) */
    LISTEN_HTTP,    /* HTTP (http.h): pages and job submission; the socket goes to libmicrohttpd */
    LISTEN_PROTO_MAX
};

/* struct listener is one bound, listening, non-blocking socket, and what its connections are. */
struct listener {
    int fd;                                 /* the socket */
    int family;                             /* AF_INET, AF_INET6 or AF_UNIX */
    enum listen_proto proto;                /* what its connections speak */
    const struct transport_kind *transport; /* how their bytes move (transport.h) */
    void *transport_arg;                    /* the kind's per-listener state (a TLS context
                                               later), or NULL */
    char name[128]; /* "ADDR:PORT" ("[ADDR]:PORT" for IPv6) or "unix:PATH" (a unix socket path
                       has at most 107 bytes): for logs and access rules (peer.listener points
                       here) */
};

/* listen_backlog returns the backlog listen() is given for the configured --backlog: the value
 * itself when it is positive; for 0 (the default) the kernel's maximum, net.core.somaxconn as
 * /proc/sys/net/core/somaxconn says (listen() would clamp a larger value to it anyway), or
 * SOMAXCONN where that file cannot be read. listen_tcp and listen_unix call it. */
int listen_backlog(int configured);

/* listen_tcp binds every address of hosts (NULL/0 entries mean all addresses) on port, with
 * SO_REUSEADDR and IPV6_V6ONLY. The listeners it fills speak LISTEN_GEARMAN with no transport
 * set: the caller chooses it. With port 0 the first socket picks a free port and the rest use
 * the same one (if another process holds it on one of them, up to 8 tries with a new port). A name that resolves to several addresses binds each; one of a family the
 * machine lacks (EAFNOSUPPORT, EADDRNOTAVAIL: ::1 with IPv6 off) is skipped as long as another
 * of that name binds. Appends to out (at most LISTEN_MAX) and returns how many it opened, or -1 with a
 * message in err (errno tells why a bind failed, e.g. EADDRINUSE). *bound_port receives the
 * port. */
int listen_tcp(char *const *hosts, int nhosts, int port, int backlog, struct listener *out,
               int max, int *bound_port, char *err, size_t errlen);

/* struct listen_unix_id identifies the socket file this process bound, so that only that file
 * is ever removed. */
struct listen_unix_id {
    dev_t dev; /* the socket file's device */
    ino_t ino; /* and inode, right after bind */
};

/* listen_unix binds a unix-domain socket at path. An existing path is never removed unless it is
 * a stale socket (connecting to it is refused); a socket a server answers on, or any other kind
 * of file, is an error. Fills *id. Returns the fd, or -1 with a message in err. */
int listen_unix(const char *path, int backlog, struct listen_unix_id *id, char *err,
                size_t errlen);

/* listen_unix_remove unlinks path if it is still the socket file described by id.
 * Returns 0, or -1 when it was left alone (gone or replaced). */
int listen_unix_remove(const char *path, const struct listen_unix_id *id);

#ifdef __cplusplus
}
#endif
#endif

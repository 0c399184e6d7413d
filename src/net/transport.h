/* SPDX-License-Identifier: BSD-3-Clause */
/* transport: how one connection's bytes move. A struct of function pointers chosen when the
 * connection is accepted (from its listener's transport kind): plain TCP and unix sockets today
 * (transport_tcp.c), an in-memory pipe for tests (transport_loop.c), TLS (transport_tls.c). conn.c reads,
 * writes and closes only through it. No libev: a transport reports "would block until readable /
 * writable" and conn turns that into its watchers.
 *
 * Adding a transport is one new file implementing struct transport_ops plus a transport_kind
 * (its per-server state behind init/reload/destroy, its traits), one enum transport_id value and
 * one entry in transport_kinds[] (transport_kinds.c); the shell iterates that table. Which
 * listeners carry the kind is the shell's (server.c's open_* and an option in config.c). */
#ifndef SPUR_TRANSPORT_H
#define SPUR_TRANSPORT_H

#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What read and writev return besides a byte count (always negative). */
enum transport_result {
    TRANSPORT_ERROR = -1,      /* failed (errno tells why): close the connection */
    TRANSPORT_WANT_READ = -2,  /* would block: retry once the fd is readable */
    TRANSPORT_WANT_WRITE = -3, /* would block: retry once the fd is writable (a TLS read may
                                  need to write first) */
};

struct transport;

/* struct transport_ops is one implementation. Every function is called on the loop thread. */
struct transport_ops {
    const char *name; /* "tcp", "loop", ... for logs */
    /* read reads up to len bytes into buf. Returns how many (> 0), 0 at an orderly end of input,
     * or a TRANSPORT_* result. EINTR is retried inside. */
    ssize_t (*read)(struct transport *t, void *buf, size_t len);
    /* writev writes from iov. Returns how many bytes (>= 0, maybe fewer than offered), or a
     * TRANSPORT_* result. EINTR is retried inside. */
    ssize_t (*writev)(struct transport *t, const struct iovec *iov, int iovcnt);
    /* shutdown ends the sending side in an orderly way (TLS close_notify; nothing for TCP, whose
     * close says it). Returns 0 when done, or a TRANSPORT_* result. */
    int (*shutdown)(struct transport *t);
    /* close releases everything the transport holds, the fd included. Called once. */
    void (*close)(struct transport *t);
    /* peer_name writes the peer's address as text into out ("unix" for a unix socket). Returns 1
     * for a local peer (loopback or unix: may run admin shutdown), else 0. */
    int (*peer_name)(struct transport *t, char *out, size_t outlen);
    /* The optional ops below may be NULL (plain sockets need none of them). */
    /* pending returns how many input bytes the transport holds ready to read (TLS: decrypted,
     * or whole records not yet decrypted): readable now although the fd may never become
     * readable for them. conn reads them without waiting for the fd whenever its reading is on
     * (also when it resumes after a pause). */
    size_t (*pending)(struct transport *t);
    /* handshaking returns 1 while the transport's opening handshake is unfinished (TLS), else
     * 0. conn bounds that time (--ssl-handshake-timeout) and, once it ends, asks for
     * peer_names before any byte read reaches the session. */
    int (*handshaking)(struct transport *t);
    /* peer_names returns the names of the peer's verified certificate in peer.cert_names'
     * format (malloc'd, the caller owns it), or NULL when there is none. */
    char *(*peer_names)(struct transport *t);
    /* held returns the bytes of memory the transport holds for this connection's input and
     * output beyond the socket (TLS: a partial record, OpenSSL's buffers while in use), and
     * sets *partial to 1 when they include input that is not yet a whole unit (a partial
     * record), else 0. conn counts them in the memory budget (peer.tr_held) and treats a
     * partial unit as an unfinished packet (--idle-timeout, shedding). */
    size_t (*held)(struct transport *t, int *partial);
};

/* struct transport is one connection's transport, embedded in struct conn (no allocation). */
struct transport {
    const struct transport_ops *ops; /* the implementation */
    int fd;                          /* the descriptor the conn's watchers wait on */
    void *ctx;                       /* the implementation's state (a TLS session), or NULL */
};

struct config;

/* What a kind's connections are (struct transport_kind.traits). */
enum transport_trait {
    TRANSPORT_SECURE = 1u << 0, /* encrypted, with an opening handshake bounded by
                                   --ssl-handshake-timeout and maybe a client certificate: the
                                   shell sets PEER_TLS on its connections' peers */
};

/* struct transport_kind makes transports: what a listener carries. It has a lifecycle, as
 * redis's ConnectionType: the shell calls init once per kind at start-up, reload on SIGHUP and
 * destroy at exit, and hands the state init made to wrap (as the listener's transport_arg). The
 * lifecycle ops may be NULL (a kind with no per-server state). Called on the loop thread. */
struct transport_kind {
    const char *name; /* "tcp", "loop" */
    unsigned traits;  /* enum transport_trait bits */
    /* init makes the kind's per-server state from cfg into *state: NULL when cfg does not use
     * the kind (its listeners cannot be opened then). Returns 0, or -1 with a message in err. */
    int (*init)(const struct config *cfg, void **state, char *err, size_t errlen);
    /* reload re-reads what the state was made from (SIGHUP), for connections accepted from now
     * on, and logs the outcome: on failure the old state stays in use. state is not NULL. */
    void (*reload)(void *state);
    /* destroy frees the state (connections still open keep what they hold). NULL is allowed. */
    void (*destroy)(void *state);
    /* wrap makes *t a transport over the accepted socket fd; arg is the listener's
     * transport_arg (the state init made). Returns 0, or -1 (fd left open for the caller). */
    int (*wrap)(struct transport *t, int fd, void *arg);
};

/* The kinds, indexed by enum transport_id: the one table a new transport is added to. */
enum transport_id {
    TRANSPORT_PLAIN, /* TCP and unix sockets (transport_tcp.c) */
    TRANSPORT_LOOP,  /* in-memory pipe for unit tests (transport_loop.c); not configurable */
    TRANSPORT_TLS,   /* TLS over TCP (transport_tls.c); its state is a struct tls_server */
    TRANSPORT_MAX
};
extern const struct transport_kind *const transport_kinds[TRANSPORT_MAX];

/* transport_tcp is the plain socket kind (TCP over IPv4/IPv6, unix domain). */
extern const struct transport_kind transport_tcp;

/* transport_tls is the TLS kind (transport_tls.h). */
extern const struct transport_kind transport_tls;

/* The calls conn makes: one indirect call each. */
static inline ssize_t transport_read(struct transport *t, void *buf, size_t len)
{
    return t->ops->read(t, buf, len);
}

static inline ssize_t transport_writev(struct transport *t, const struct iovec *iov, int n)
{
    return t->ops->writev(t, iov, n);
}

static inline int transport_shutdown(struct transport *t) { return t->ops->shutdown(t); }

static inline void transport_close(struct transport *t) { t->ops->close(t); }

static inline int transport_peer_name(struct transport *t, char *out, size_t outlen)
{
    return t->ops->peer_name(t, out, outlen);
}

static inline size_t transport_pending(struct transport *t)
{
    return t->ops->pending != NULL ? t->ops->pending(t) : 0;
}

static inline int transport_handshaking(struct transport *t)
{
    return t->ops->handshaking != NULL && t->ops->handshaking(t);
}

static inline size_t transport_held(struct transport *t, int *partial)
{
    *partial = 0;
    return t->ops->held != NULL ? t->ops->held(t, partial) : 0;
}

static inline char *transport_peer_names(struct transport *t)
{
    return t->ops->peer_names != NULL ? t->ops->peer_names(t) : NULL;
}

#ifdef __cplusplus
}
#endif
#endif

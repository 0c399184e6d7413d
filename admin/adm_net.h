/* SPDX-License-Identifier: BSD-3-Clause */
/* adm_net: blocking-style TCP client I/O with deadlines, for spuradmin, optionally over TLS.
 *
 * Sockets are non-blocking underneath; every wait goes through poll() with the time left before
 * a deadline, so no call blocks longer than the caller allows (name resolution excepted: it is
 * bounded only by the resolver's own timeouts).
 *
 * TLS: after adm_net_tls_start(fd, ...) succeeds, adm_net_send, adm_net_recv, adm_net_recv_now
 * and adm_net_close on that fd go through the TLS session. One TLS connection per process (what
 * spuradmin needs); starting TLS ignores SIGPIPE for the process.
 */
#ifndef SPUR_ADMIN_ADM_NET_H
#define SPUR_ADMIN_ADM_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Outcome of a network call. */
enum adm_net_status {
	ADM_NET_OK,        /* done */
	ADM_NET_RESOLVE,   /* getaddrinfo failed; see the gai error code */
	ADM_NET_CONNECT,   /* no address accepted the connection */
	ADM_NET_TIMEOUT,   /* the deadline passed */
	ADM_NET_CLOSED,    /* the peer closed the connection (end of file) */
	ADM_NET_ERROR,     /* any other socket error (reset, broken pipe, ...) */
	ADM_NET_TLS        /* TLS failed: handshake, certificate, or a TLS error on the stream */
};

/* The TLS files. NULL: the environment variable libgearman reads (GEARMAND_CA_CERTIFICATE,
 * GEARMAN_CLIENT_PEM, GEARMAN_CLIENT_KEY), else for the CA the system's store, and no client
 * certificate. */
struct adm_net_tls {
	const char *ca_file;   /* CA certificate(s) the server's certificate must chain to */
	const char *cert_file; /* client certificate, sent when the server asks */
	const char *key_file;  /* its key (NULL: in cert_file) */
};

/* adm_net_now_ms returns a monotonic clock reading in milliseconds. */
int64_t adm_net_now_ms(void);

/* adm_net_connect resolves host and port (a number or a service name) and connects to the
 * first address that accepts, giving each address timeout_ms. A host that starts with '/' is
 * the path of a unix-domain socket (spurd --unix=PATH); port is then ignored. On ADM_NET_OK *fd is the
 * connected socket, owned by the caller. On ADM_NET_RESOLVE *gai_error holds getaddrinfo's
 * code. ADM_NET_TIMEOUT means the last address tried timed out. */
enum adm_net_status adm_net_connect(const char *host, const char *port, int timeout_ms, int *fd,
				    int *gai_error);

/* adm_net_send writes all len bytes of buf to fd before deadline_ms (adm_net_now_ms time). */
enum adm_net_status adm_net_send(int fd, const char *buf, size_t len, int64_t deadline_ms);

/* adm_net_recv reads between 1 and cap bytes into buf before deadline_ms and stores the count
 * in *got. */
enum adm_net_status adm_net_recv(int fd, char *buf, size_t cap, int64_t deadline_ms, size_t *got);

/* adm_net_recv_now reads what is available without waiting: ADM_NET_OK with *got bytes (0 when
 * nothing is there yet), ADM_NET_CLOSED, ADM_NET_ERROR or ADM_NET_TLS. */
enum adm_net_status adm_net_recv_now(int fd, char *buf, size_t cap, size_t *got);

/* adm_net_tls_start runs the TLS client handshake on the connected fd before deadline_ms and
 * verifies the server's certificate for host (its CA and its name or address; the environment
 * LIBGEARMAN_COMPAT_SSL_VERIFY=none turns verification off). Returns ADM_NET_OK,
 * ADM_NET_TIMEOUT, or ADM_NET_TLS with a one-line reason in err. */
enum adm_net_status adm_net_tls_start(int fd, const char *host, const struct adm_net_tls *cfg,
				      int64_t deadline_ms, char *err, size_t errlen);

/* adm_net_pending reports whether fd's TLS session holds bytes already decrypted, which poll()
 * cannot see: read them with adm_net_recv_now before sleeping. */
bool adm_net_pending(int fd);

/* adm_net_tls_error returns the reason of the last ADM_NET_TLS from a send or receive. */
const char *adm_net_tls_error(void);

/* adm_net_errno returns the errno behind the last ADM_NET_CONNECT or ADM_NET_ERROR (0 if
 * none), for messages. */
int adm_net_errno(void);

/* adm_net_close ends fd's TLS session, if any (close_notify, no wait), and closes fd. */
void adm_net_close(int fd);

#ifdef __cplusplus
}
#endif

#endif

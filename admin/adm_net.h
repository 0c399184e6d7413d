/* SPDX-License-Identifier: BSD-3-Clause */
/* adm_net: blocking-style TCP client I/O with deadlines, for spuradmin.
 *
 * Sockets are non-blocking underneath; every wait goes through poll() with the time left before
 * a deadline, so no call blocks longer than the caller allows (name resolution excepted: it is
 * bounded only by the resolver's own timeouts).
 */
#ifndef SPUR_ADMIN_ADM_NET_H
#define SPUR_ADMIN_ADM_NET_H

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
	ADM_NET_ERROR      /* any other socket error (reset, broken pipe, ...) */
};

/* adm_net_now_ms returns a monotonic clock reading in milliseconds. */
int64_t adm_net_now_ms(void);

/* adm_net_connect resolves host and port (a number or a service name) and connects to the
 * first address that accepts, giving each address timeout_ms. On ADM_NET_OK *fd is the
 * connected socket, owned by the caller. On ADM_NET_RESOLVE *gai_error holds getaddrinfo's
 * code. ADM_NET_TIMEOUT means the last address tried timed out. */
enum adm_net_status adm_net_connect(const char *host, const char *port, int timeout_ms, int *fd,
				    int *gai_error);

/* adm_net_send writes all len bytes of buf to fd before deadline_ms (adm_net_now_ms time). */
enum adm_net_status adm_net_send(int fd, const char *buf, size_t len, int64_t deadline_ms);

/* adm_net_recv reads between 1 and cap bytes into buf before deadline_ms and stores the count
 * in *got. */
enum adm_net_status adm_net_recv(int fd, char *buf, size_t cap, int64_t deadline_ms, size_t *got);

#ifdef __cplusplus
}
#endif

#endif

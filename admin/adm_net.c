/* SPDX-License-Identifier: BSD-3-Clause */
/* adm_net: TCP client I/O with deadlines; see adm_net.h. */
#include "adm_net.h"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

int64_t adm_net_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* wait_for polls fd for events until deadline_ms. Returns ADM_NET_OK when fd is ready (or has
 * an error or hang-up to report to the next call), ADM_NET_TIMEOUT, or ADM_NET_ERROR. */
static enum adm_net_status wait_for(int fd, short events, int64_t deadline_ms)
{
	for (;;) {
		int64_t left = deadline_ms - adm_net_now_ms();
		if (left <= 0)
			return ADM_NET_TIMEOUT;
		struct pollfd pfd = {.fd = fd, .events = events, .revents = 0};
		int n = poll(&pfd, 1, left > 60000 ? 60000 : (int)left);
		if (n > 0)
			return ADM_NET_OK;
		if (n < 0 && errno != EINTR)
			return ADM_NET_ERROR;
	}
}

/* finish_connect waits up to timeout_ms for a non-blocking connect on s to complete and
 * returns ADM_NET_OK, ADM_NET_TIMEOUT or ADM_NET_CONNECT. */
static enum adm_net_status finish_connect(int s, int timeout_ms)
{
	enum adm_net_status st = wait_for(s, POLLOUT, adm_net_now_ms() + timeout_ms);
	if (st == ADM_NET_TIMEOUT)
		return st;
	int soerr = 0;
	socklen_t len = sizeof soerr;
	if (st != ADM_NET_OK || getsockopt(s, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0 || soerr != 0)
		return ADM_NET_CONNECT;
	return ADM_NET_OK;
}

/* connect_one connects a new socket to one resolved address within timeout_ms. Returns the
 * status and, on success, the socket in *fd. */
static enum adm_net_status connect_one(const struct addrinfo *ai, int timeout_ms, int *fd)
{
	int s = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
		       ai->ai_protocol);
	if (s < 0)
		return ADM_NET_CONNECT;
	enum adm_net_status st = ADM_NET_OK;
	if (connect(s, ai->ai_addr, ai->ai_addrlen) < 0)
		st = errno == EINPROGRESS || errno == EINTR ? finish_connect(s, timeout_ms)
							    : ADM_NET_CONNECT;
	if (st != ADM_NET_OK) {
		close(s);
		return st;
	}
	*fd = s;
	return ADM_NET_OK;
}

enum adm_net_status adm_net_connect(const char *host, const char *port, int timeout_ms, int *fd,
				    int *gai_error)
{
	struct addrinfo hints;
	struct addrinfo *list = NULL;
	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	int rc = getaddrinfo(host, port, &hints, &list);
	if (rc != 0) {
		*gai_error = rc;
		return ADM_NET_RESOLVE;
	}
	enum adm_net_status st = ADM_NET_CONNECT;
	for (const struct addrinfo *ai = list; ai != NULL; ai = ai->ai_next) {
		st = connect_one(ai, timeout_ms, fd);
		if (st == ADM_NET_OK)
			break;
	}
	freeaddrinfo(list);
	return st;
}

enum adm_net_status adm_net_send(int fd, const char *buf, size_t len, int64_t deadline_ms)
{
	while (len > 0) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
		if (n > 0) {
			buf += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			return ADM_NET_ERROR;
		enum adm_net_status st = wait_for(fd, POLLOUT, deadline_ms);
		if (st != ADM_NET_OK)
			return st;
	}
	return ADM_NET_OK;
}

enum adm_net_status adm_net_recv(int fd, char *buf, size_t cap, int64_t deadline_ms, size_t *got)
{
	for (;;) {
		ssize_t n = recv(fd, buf, cap, 0);
		if (n > 0) {
			*got = (size_t)n;
			return ADM_NET_OK;
		}
		if (n == 0)
			return ADM_NET_CLOSED;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return ADM_NET_ERROR;
		enum adm_net_status st = wait_for(fd, POLLIN, deadline_ms);
		if (st != ADM_NET_OK)
			return st;
	}
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* adm_net: TCP client I/O with deadlines; see adm_net.h. */
#include "adm_net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

/* The one TLS connection of the process (spuradmin opens one). */
static struct {
	int fd;          /* its socket, -1 when none */
	SSL *ssl;        /* the session, NULL when none */
	SSL_CTX *ctx;    /* its context */
	char err[256];   /* reason of the last ADM_NET_TLS from send or receive */
} tls = {-1, NULL, NULL, ""};

/* errno of the last ADM_NET_CONNECT or ADM_NET_ERROR, 0 when none was seen. */
static int last_errno;

/* tls_of returns fd's TLS session, or NULL for a plain socket. */
static SSL *tls_of(int fd)
{
	return tls.ssl != NULL && tls.fd == fd ? tls.ssl : NULL;
}

/* ssl_reason writes OpenSSL's oldest queued error (or fallback) into buf and clears the queue. */
static void ssl_reason(char *buf, size_t len, const char *fallback)
{
	unsigned long e = ERR_get_error();
	if (e != 0)
		ERR_error_string_n(e, buf, len);
	else
		snprintf(buf, len, "%s", fallback);
	ERR_clear_error();
}

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
	if (st != ADM_NET_OK || getsockopt(s, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0 || soerr != 0) {
		last_errno = soerr != 0 ? soerr : errno;
		return ADM_NET_CONNECT;
	}
	return ADM_NET_OK;
}

/* connect_one connects a new socket to one resolved address within timeout_ms. Returns the
 * status and, on success, the socket in *fd. */
static enum adm_net_status connect_one(const struct addrinfo *ai, int timeout_ms, int *fd)
{
	int s = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
		       ai->ai_protocol);
	if (s < 0) {
		last_errno = errno;
		return ADM_NET_CONNECT;
	}
	enum adm_net_status st = ADM_NET_OK;
	if (connect(s, ai->ai_addr, ai->ai_addrlen) < 0) {
		last_errno = errno;
		st = errno == EINPROGRESS || errno == EINTR ? finish_connect(s, timeout_ms)
							    : ADM_NET_CONNECT;
	}
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
	if (host[0] == '/') { /* a unix-domain socket's path */
		struct sockaddr_un sun;
		memset(&sun, 0, sizeof sun);
		sun.sun_family = AF_UNIX;
		if (strlen(host) >= sizeof sun.sun_path) {
			last_errno = ENAMETOOLONG;
			return ADM_NET_CONNECT;
		}
		memcpy(sun.sun_path, host, strlen(host) + 1);
		struct addrinfo ai = {.ai_family = AF_UNIX, .ai_socktype = SOCK_STREAM,
				      .ai_addrlen = sizeof sun, .ai_addr = (struct sockaddr *)&sun};
		return connect_one(&ai, timeout_ms, fd);
	}
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

/* tls_io runs one SSL_read or SSL_write (want_write false/true) of up to len bytes. Returns
 * bytes moved (> 0), 0 with *events set to what to poll for, or -1 with the status in *st. */
static ssize_t tls_io(SSL *ssl, bool write, void *buf, size_t len, short *events,
		      enum adm_net_status *st)
{
	int n = len > INT32_MAX ? INT32_MAX : (int)len;
	ERR_clear_error();
	errno = 0;
	int r = write ? SSL_write(ssl, buf, n) : SSL_read(ssl, buf, n);
	if (r > 0)
		return r;
	int e = SSL_get_error(ssl, r);
	if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
		*events = e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT;
		return 0;
	}
	if (e == SSL_ERROR_ZERO_RETURN || (e == SSL_ERROR_SYSCALL && ERR_peek_error() == 0)) {
		*st = e == SSL_ERROR_ZERO_RETURN || errno == 0 ? ADM_NET_CLOSED : ADM_NET_ERROR;
		if (*st == ADM_NET_ERROR)
			last_errno = errno;
		return -1;
	}
	ssl_reason(tls.err, sizeof tls.err, "TLS error");
	*st = ADM_NET_TLS;
	return -1;
}

const char *adm_net_tls_error(void)
{
	return tls.err;
}

int adm_net_errno(void)
{
	return last_errno;
}

enum adm_net_status adm_net_send(int fd, const char *buf, size_t len, int64_t deadline_ms)
{
	SSL *ssl = tls_of(fd);
	while (ssl != NULL && len > 0) {
		short ev = 0;
		enum adm_net_status st = ADM_NET_ERROR;
		ssize_t n = tls_io(ssl, true, (void *)buf, len, &ev, &st);
		if (n < 0)
			return st;
		if (n > 0) {
			buf += n;
			len -= (size_t)n;
			continue;
		}
		if ((st = wait_for(fd, ev, deadline_ms)) != ADM_NET_OK)
			return st;
	}
	while (len > 0) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
		if (n > 0) {
			buf += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
			last_errno = errno;
			return ADM_NET_ERROR;
		}
		enum adm_net_status st = wait_for(fd, POLLOUT, deadline_ms);
		if (st != ADM_NET_OK)
			return st;
	}
	return ADM_NET_OK;
}

enum adm_net_status adm_net_recv(int fd, char *buf, size_t cap, int64_t deadline_ms, size_t *got)
{
	SSL *ssl = tls_of(fd);
	while (ssl != NULL) {
		short ev = 0;
		enum adm_net_status st = ADM_NET_ERROR;
		ssize_t n = tls_io(ssl, false, buf, cap, &ev, &st);
		if (n < 0)
			return st;
		if (n > 0) {
			*got = (size_t)n;
			return ADM_NET_OK;
		}
		if ((st = wait_for(fd, ev, deadline_ms)) != ADM_NET_OK)
			return st;
	}
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
		if (errno != EAGAIN && errno != EWOULDBLOCK) {
			last_errno = errno;
			return ADM_NET_ERROR;
		}
		enum adm_net_status st = wait_for(fd, POLLIN, deadline_ms);
		if (st != ADM_NET_OK)
			return st;
	}
}

enum adm_net_status adm_net_recv_now(int fd, char *buf, size_t cap, size_t *got)
{
	*got = 0;
	SSL *ssl = tls_of(fd);
	if (ssl != NULL) {
		short ev = 0;
		enum adm_net_status st = ADM_NET_ERROR;
		ssize_t n = tls_io(ssl, false, buf, cap, &ev, &st);
		if (n < 0)
			return st;
		*got = (size_t)n;
		return ADM_NET_OK;
	}
	for (;;) {
		ssize_t n = recv(fd, buf, cap, MSG_DONTWAIT);
		if (n > 0) {
			*got = (size_t)n;
			return ADM_NET_OK;
		}
		if (n == 0)
			return ADM_NET_CLOSED;
		if (errno == EINTR)
			continue;
		return errno == EAGAIN || errno == EWOULDBLOCK ? ADM_NET_OK : ADM_NET_ERROR;
	}
}

bool adm_net_pending(int fd)
{
	SSL *ssl = tls_of(fd);
	return ssl != NULL && SSL_pending(ssl) > 0;
}

/* env_or returns v, else the environment variable name's non-empty value, else NULL. */
static const char *env_or(const char *v, const char *name)
{
	const char *e = getenv(name);
	return v != NULL ? v : e != NULL && e[0] != '\0' ? e : NULL;
}

/* make_ctx builds the context from cfg. Returns it, or NULL with the reason in err. */
static SSL_CTX *make_ctx(const struct adm_net_tls *cfg, char *err, size_t errlen)
{
	char why[256];
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	if (ctx == NULL) {
		ssl_reason(why, sizeof why, "out of memory");
		snprintf(err, errlen, "TLS setup: %s", why);
		return NULL;
	}
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	const char *ca = env_or(cfg->ca_file, "GEARMAND_CA_CERTIFICATE");
	const char *cert = env_or(cfg->cert_file, "GEARMAN_CLIENT_PEM");
	const char *key = env_or(cfg->key_file, "GEARMAN_CLIENT_KEY");
	const char *verify = getenv("LIBGEARMAN_COMPAT_SSL_VERIFY");
	const char *bad = NULL;
	if (ca != NULL ? SSL_CTX_load_verify_locations(ctx, ca, NULL) != 1
		       : SSL_CTX_set_default_verify_paths(ctx) != 1)
		bad = ca != NULL ? ca : "the system's CA store";
	else if (cert != NULL && SSL_CTX_use_certificate_chain_file(ctx, cert) != 1)
		bad = cert;
	else if (cert != NULL && (SSL_CTX_use_PrivateKey_file(ctx, key != NULL ? key : cert,
							      SSL_FILETYPE_PEM) != 1 ||
				  SSL_CTX_check_private_key(ctx) != 1))
		bad = key != NULL ? key : cert;
	if (bad != NULL) {
		ssl_reason(why, sizeof why, "unreadable");
		snprintf(err, errlen, "cannot load %s: %s", bad, why);
		SSL_CTX_free(ctx);
		return NULL;
	}
	bool on = !(verify != NULL && strcmp(verify, "none") == 0);
	SSL_CTX_set_verify(ctx, on ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, NULL);
	return ctx;
}

enum adm_net_status adm_net_tls_start(int fd, const char *host, const struct adm_net_tls *cfg,
				      int64_t deadline_ms, char *err, size_t errlen)
{
	signal(SIGPIPE, SIG_IGN); /* OpenSSL writes with write(), not send(MSG_NOSIGNAL) */
	ERR_clear_error();
	SSL_CTX *ctx = make_ctx(cfg, err, errlen);
	if (ctx == NULL)
		return ADM_NET_TLS;
	SSL *ssl = SSL_new(ctx);
	unsigned char addr[16];
	bool is_ip = inet_pton(AF_INET, host, addr) == 1 || inet_pton(AF_INET6, host, addr) == 1;
	if (ssl == NULL || SSL_set_fd(ssl, fd) != 1 ||
	    (is_ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) != 1
		   : SSL_set1_host(ssl, host) != 1 || SSL_set_tlsext_host_name(ssl, host) != 1)) {
		snprintf(err, errlen, "TLS setup failed");
		SSL_free(ssl);
		SSL_CTX_free(ctx);
		return ADM_NET_TLS;
	}
	for (;;) {
		ERR_clear_error();
		int r = SSL_connect(ssl);
		if (r == 1)
			break;
		int e = SSL_get_error(ssl, r);
		enum adm_net_status st = ADM_NET_TLS;
		if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
			st = wait_for(fd, e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline_ms);
			if (st == ADM_NET_OK)
				continue;
		}
		char why[256];
		long vr = SSL_get_verify_result(ssl);
		if (st == ADM_NET_TIMEOUT)
			snprintf(err, errlen, "TLS handshake timed out");
		else if (vr != X509_V_OK)
			snprintf(err, errlen, "server certificate not verified: %s",
				 X509_verify_cert_error_string(vr));
		else {
			ssl_reason(why, sizeof why, "the server closed the connection");
			snprintf(err, errlen, "TLS handshake failed: %s", why);
		}
		SSL_free(ssl);
		SSL_CTX_free(ctx);
		return st == ADM_NET_TIMEOUT ? st : ADM_NET_TLS;
	}
	tls.fd = fd;
	tls.ssl = ssl;
	tls.ctx = ctx;
	return ADM_NET_OK;
}

void adm_net_close(int fd)
{
	if (tls_of(fd) != NULL) {
		ERR_clear_error();
		(void)SSL_shutdown(tls.ssl);
		ERR_clear_error();
		SSL_free(tls.ssl);
		SSL_CTX_free(tls.ctx);
		tls.ssl = NULL;
		tls.ctx = NULL;
		tls.fd = -1;
	}
	close(fd);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* tls: TLS for a client's or worker's connections (GEARMAN_CLIENT_SSL, GEARMAN_WORKER_SSL),
 * on OpenSSL 3. conn.c calls lgc_tls_handshake after connect() and then reads and writes through
 * lgc_tls_recv / lgc_tls_send, which behave like recv/send on a non-blocking socket. The
 * SSL_CTX is built once per client or worker, at its first TLS connect, from the files
 * gearman_*_set_ssl named, or the environment (libgearman's variables), or the defaults. */
#include "lgc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

/* The defaults libgearman is built with (gearmand's configure: $sysconfdir/ssl/certs/...). */
#define DEFAULT_CA_FILE "/etc/ssl/certs/gearmand-ca.pem"
#define DEFAULT_CERT_FILE "/etc/ssl/certs/gearman.pem"
#define DEFAULT_KEY_FILE "/etc/ssl/certs/gearman.key"

/* ---------------------------------------------------------------- a socket BIO without SIGPIPE */

/* OpenSSL's socket BIO writes with write(), which raises SIGPIPE when the server has gone; a
 * library must not kill its program for that. This BIO does send(MSG_NOSIGNAL) and recv() on the
 * descriptor stored as its data. */

static int bio_write(BIO *b, const char *data, int len)
{
    int fd = (int)(intptr_t)BIO_get_data(b);
    BIO_clear_retry_flags(b);
    ssize_t n = send(fd, data, (size_t)len, MSG_NOSIGNAL);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        BIO_set_retry_write(b);
    return (int)n;
}

static int bio_read(BIO *b, char *data, int len)
{
    int fd = (int)(intptr_t)BIO_get_data(b);
    BIO_clear_retry_flags(b);
    ssize_t n = recv(fd, data, (size_t)len, 0);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        BIO_set_retry_read(b);
    return (int)n;
}

static long bio_ctrl(BIO *b, int cmd, long num, void *ptr)
{
    (void)b;
    (void)num;
    (void)ptr;
    return cmd == BIO_CTRL_FLUSH ? 1 : 0;
}

static int bio_create(BIO *b)
{
    BIO_set_init(b, 1);
    return 1;
}

/* ---------------------------------------------------------------- settings */

/* set_path replaces *dst with a copy of src (NULL or "" clears it). Returns 0 or -1. */
static int set_path(char **dst, const char *src)
{
    char *copy = NULL;
    if (src != NULL && src[0] != '\0' && (copy = strdup(src)) == NULL)
        return -1;
    free(*dst);
    *dst = copy;
    return 0;
}

void lgc_tls_reset(struct lgc_universal *u)
{
    if (u->ssl_ctx != NULL)
        SSL_CTX_free(u->ssl_ctx);
    if (u->ssl_bio != NULL)
        BIO_meth_free(u->ssl_bio);
    u->ssl_ctx = NULL;
    u->ssl_bio = NULL;
}

void lgc_tls_free(struct lgc_universal *u)
{
    lgc_tls_reset(u);
    free(u->ssl_ca_file);
    free(u->ssl_cert_file);
    free(u->ssl_key_file);
    u->ssl_ca_file = u->ssl_cert_file = u->ssl_key_file = NULL;
}

int lgc_tls_set(struct lgc_universal *u, bool on, const char *ca_file, const char *cert_file,
                const char *key_file)
{
    lgc_tls_reset(u); /* the next connect builds a context from the new files */
    u->ssl = on;
    if (set_path(&u->ssl_ca_file, ca_file) != 0 || set_path(&u->ssl_cert_file, cert_file) != 0 ||
        set_path(&u->ssl_key_file, key_file) != 0)
        return -1;
    return 0;
}

int lgc_tls_copy(struct lgc_universal *u, const struct lgc_universal *from)
{
    return lgc_tls_set(u, from->ssl, from->ssl_ca_file, from->ssl_cert_file, from->ssl_key_file);
}

/* pick returns the file to use: the one set through the API, else the environment variable's,
 * else NULL. *dflt says a default applies (neither was given). */
static const char *pick(const char *set, const char *env, bool *dflt)
{
    const char *e = getenv(env);
    *dflt = false;
    if (set != NULL)
        return set;
    if (e != NULL && e[0] != '\0')
        return e;
    *dflt = true;
    return NULL;
}

/* tls_error records code with what and OpenSSL's oldest queued error, and returns code. */
static gearman_return_t tls_error(struct lgc_universal *u, gearman_return_t code, const char *what)
{
    unsigned long e = ERR_get_error();
    char buf[256] = "";
    if (e != 0)
        ERR_error_string_n(e, buf, sizeof buf);
    ERR_clear_error();
    return lgc_set_error(u, code, "%s%s%s", what, e != 0 ? ": " : "", buf);
}

/* make_ctx builds u->ssl_ctx. Returns GEARMAN_SUCCESS, or GEARMAN_INVALID_ARGUMENT when a file
 * named through the API or the environment cannot be used (error recorded). */
static gearman_return_t make_ctx(struct lgc_universal *u)
{
    char what[1200];
    ERR_clear_error();
    BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK | BIO_TYPE_DESCRIPTOR,
                                 "lgc socket");
    if (m == NULL || !BIO_meth_set_write(m, bio_write) || !BIO_meth_set_read(m, bio_read) ||
        !BIO_meth_set_ctrl(m, bio_ctrl) || !BIO_meth_set_create(m, bio_create)) {
        BIO_meth_free(m);
        return tls_error(u, GEARMAN_MEMORY_ALLOCATION_FAILURE, "TLS setup");
    }
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (ctx == NULL) {
        BIO_meth_free(m);
        return tls_error(u, GEARMAN_MEMORY_ALLOCATION_FAILURE, "TLS setup");
    }
    u->ssl_ctx = ctx;
    u->ssl_bio = m;
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_mode(ctx, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_ENABLE_PARTIAL_WRITE);

    bool dflt;
    const char *ca = pick(u->ssl_ca_file, "GEARMAND_CA_CERTIFICATE", &dflt);
    if (dflt && access(DEFAULT_CA_FILE, R_OK) == 0)
        ca = DEFAULT_CA_FILE;
    if (ca != NULL) {
        if (SSL_CTX_load_verify_locations(ctx, ca, NULL) != 1) {
            snprintf(what, sizeof what, "cannot load the CA certificate %s", ca);
            goto fail;
        }
    } else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
        snprintf(what, sizeof what, "cannot load the system's CA certificates");
        goto fail;
    }
    const char *v = getenv("LIBGEARMAN_COMPAT_SSL_VERIFY");
    bool verify = !(v != NULL && strcmp(v, "none") == 0);
    SSL_CTX_set_verify(ctx, verify ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, NULL);

    bool cert_dflt, key_dflt;
    const char *cert = pick(u->ssl_cert_file, "GEARMAN_CLIENT_PEM", &cert_dflt);
    const char *key = pick(u->ssl_key_file, "GEARMAN_CLIENT_KEY", &key_dflt);
    if (cert_dflt && access(DEFAULT_CERT_FILE, R_OK) == 0)
        cert = DEFAULT_CERT_FILE;
    if (key_dflt && access(DEFAULT_KEY_FILE, R_OK) == 0)
        key = DEFAULT_KEY_FILE;
    if (cert != NULL) {
        if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1) {
            snprintf(what, sizeof what, "cannot load the client certificate %s", cert);
            goto fail;
        }
        if (key == NULL)
            key = cert; /* one PEM file holding both */
        if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1 ||
            SSL_CTX_check_private_key(ctx) != 1) {
            snprintf(what, sizeof what, "cannot load the key %s of the client certificate", key);
            goto fail;
        }
    }
    return GEARMAN_SUCCESS;
fail:
    lgc_tls_reset(u);
    return tls_error(u, GEARMAN_INVALID_ARGUMENT, what);
}

/* ---------------------------------------------------------------- per connection */

/* now_ms returns a monotonic clock in milliseconds. */
static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

gearman_return_t lgc_tls_handshake(struct lgc_universal *u, struct lgc_conn *conn, int timeout)
{
    gearman_return_t rc;
    if (u->ssl_ctx == NULL && (rc = make_ctx(u)) != GEARMAN_SUCCESS)
        return rc;
    ERR_clear_error();
    SSL *ssl = SSL_new(u->ssl_ctx);
    BIO *bio = ssl != NULL ? BIO_new(u->ssl_bio) : NULL;
    if (bio == NULL) {
        SSL_free(ssl);
        return tls_error(u, GEARMAN_MEMORY_ALLOCATION_FAILURE, "TLS connection");
    }
    BIO_set_data(bio, (void *)(intptr_t)conn->fd);
    conn->ssl_error[0] = '\0';
    conn->was_tls = true;
    SSL_set_bio(ssl, bio, bio);
    conn->ssl = ssl;
    /* The certificate must name the host we dialled: an address (SAN IP) or a DNS name. */
    unsigned char addr[16];
    bool is_ip = inet_pton(AF_INET, conn->host, addr) == 1 || inet_pton(AF_INET6, conn->host, addr) == 1;
    if (is_ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), conn->host) != 1
              : (SSL_set1_host(ssl, conn->host) != 1 ||
                 SSL_set_tlsext_host_name(ssl, conn->host) != 1)) {
        lgc_tls_close(conn);
        return tls_error(u, GEARMAN_MEMORY_ALLOCATION_FAILURE, "TLS connection");
    }
    int64_t deadline = now_ms() + timeout;
    for (;;) {
        ERR_clear_error();
        int r = SSL_connect(ssl);
        if (r == 1)
            return GEARMAN_SUCCESS;
        int err = SSL_get_error(ssl, r);
        short ev = err == SSL_ERROR_WANT_READ ? POLLIN : err == SSL_ERROR_WANT_WRITE ? POLLOUT : 0;
        if (ev != 0) {
            int64_t left = deadline - now_ms();
            struct pollfd pfd = {.fd = conn->fd, .events = ev, .revents = 0};
            int pr = left > 0 ? poll(&pfd, 1, (int)left) : 0;
            if (pr < 0 && errno == EINTR)
                continue;
            if (pr > 0)
                continue;
            lgc_tls_close(conn);
            return lgc_set_error(u, GEARMAN_TIMEOUT, "TLS handshake with %s:%s timed out",
                                 conn->host, conn->port);
        }
        char what[1200];
        long vr = SSL_get_verify_result(ssl);
        if (vr != X509_V_OK)
            snprintf(what, sizeof what,
                     "TLS handshake with %s:%s failed: server certificate not verified (%s)",
                     conn->host, conn->port, X509_verify_cert_error_string(vr));
        else if (err == SSL_ERROR_SYSCALL && ERR_peek_error() == 0)
            snprintf(what, sizeof what,
                     "TLS handshake with %s:%s failed: the server closed the connection (%s)",
                     conn->host, conn->port, errno != 0 ? strerror(errno) : "end of file");
        else
            snprintf(what, sizeof what, "TLS handshake with %s:%s failed", conn->host,
                     conn->port);
        lgc_tls_close(conn);
        return tls_error(u, GEARMAN_COULD_NOT_CONNECT, what);
    }
}

void lgc_tls_close(struct lgc_conn *conn)
{
    if (conn->ssl == NULL)
        return;
    ERR_clear_error();
    (void)SSL_shutdown(conn->ssl); /* one try at close_notify; never waits */
    ERR_clear_error();
    SSL_free(conn->ssl); /* frees the BIO too */
    conn->ssl = NULL;
    conn->ssl_read_wants_write = false;
}

/* io_result turns an SSL_read/SSL_write failure into recv/send's convention: -1 with errno
 * EAGAIN (retry when the socket is ready; *want_write says for writing), 0 at a clean close, or
 * -1 with errno set (EPROTO for a TLS failure, the text in conn->ssl_error). */
static ssize_t io_result(struct lgc_conn *conn, int r, bool *want_write)
{
    int saved = errno;
    int err = SSL_get_error(conn->ssl, r);
    *want_write = false;
    switch (err) {
    case SSL_ERROR_WANT_READ:
        errno = EAGAIN;
        return -1;
    case SSL_ERROR_WANT_WRITE:
        *want_write = true;
        errno = EAGAIN;
        return -1;
    case SSL_ERROR_ZERO_RETURN:
        return 0;
    case SSL_ERROR_SYSCALL:
        if (ERR_peek_error() == 0) {
            errno = saved != 0 ? saved : EPIPE;
            if (saved == 0)
                return 0; /* EOF without close_notify: the server closed */
            return -1;
        }
        /* fall through */
    default: {
        unsigned long e = ERR_get_error();
        if (e != 0)
            ERR_error_string_n(e, conn->ssl_error, sizeof conn->ssl_error);
        else
            snprintf(conn->ssl_error, sizeof conn->ssl_error, "TLS error %d", err);
        ERR_clear_error();
        errno = EPROTO;
        return -1;
    }
    }
}

ssize_t lgc_tls_send(struct lgc_conn *conn, const void *data, size_t len)
{
    if (len > INT32_MAX)
        len = INT32_MAX;
    ERR_clear_error();
    errno = 0;
    int r = SSL_write(conn->ssl, data, (int)len);
    if (r > 0)
        return r;
    bool ww;
    return io_result(conn, r, &ww);
}

ssize_t lgc_tls_recv(struct lgc_conn *conn, void *data, size_t len)
{
    if (len > INT32_MAX)
        len = INT32_MAX;
    ERR_clear_error();
    errno = 0;
    int r = SSL_read(conn->ssl, data, (int)len);
    conn->ssl_read_wants_write = false;
    if (r > 0)
        return r;
    bool ww;
    ssize_t n = io_result(conn, r, &ww);
    conn->ssl_read_wants_write = ww;
    return n;
}

bool lgc_tls_pending(const struct lgc_conn *conn)
{
    return conn->ssl != NULL && SSL_pending(conn->ssl) > 0;
}

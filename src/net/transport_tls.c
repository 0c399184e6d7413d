/* SPDX-License-Identifier: BSD-3-Clause */
/* transport_tls: the TLS transport kind over OpenSSL 3 (transport_tls.h). */
#include "transport_tls.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "config.h"
#include "log.h"

#define TLS_RECORD 16384 /* application bytes in one TLS record at most */
/* TLS_RAW_CAP is the size of a connection's buffer of encrypted input: one record of the largest
 * size OpenSSL accepts, header included, so a partial record always fits. */
#define TLS_RAW_CAP SSL3_RT_MAX_PACKET_SIZE
/* TLS_SSL_BUF is what OpenSSL allocates for its read or its write buffer while one is in use
 * (one record of the largest size; SSL_MODE_RELEASE_BUFFERS frees them when empty), counted in
 * the memory budget while it holds bytes. */
#define TLS_SSL_BUF SSL3_RT_MAX_PACKET_SIZE

/* struct tls_server is the context new connections get, and where it comes from. */
struct tls_server {
    SSL_CTX *ctx;           /* for connections accepted from now on (each SSL holds a ref) */
    char *cert;             /* --ssl-certificate */
    char *key;              /* --ssl-key */
    char *ca;               /* --ssl-ca-file, or NULL */
    enum ssl_verify verify; /* --ssl-verify-client */
};

/* struct tls_conn is one connection's TLS state (transport.ctx). */
struct tls_conn {
    SSL *ssl;    /* the session, in accept state */
    int fd;      /* the socket, read by the input BIO (raw_read) */
    int wpend;   /* length of an SSL_write that must be repeated (WANT_*), else 0 */
    int done;    /* the handshake finished */
    /* Encrypted input read from the socket and not yet taken by OpenSSL. OpenSSL is handed whole
     * records only, so a partial record waits here, where it is seen and counted (tls_held), not
     * inside OpenSSL's own buffer. */
    unsigned char *raw; /* TLS_RAW_CAP bytes while it holds input, else NULL */
    size_t raw_off;     /* bytes OpenSSL has taken from the front */
    size_t raw_ready;   /* end of the whole records found so far (raw_off <= raw_ready) */
    size_t raw_len;     /* end of the bytes read (raw_ready <= raw_len <= TLS_RAW_CAP) */
    int raw_opaque;     /* the input is not a sequence of TLS records (an SSLv2 hello, or
                           garbage): every byte is handed on and OpenSSL judges it */
};

static BIO_METHOD *raw_method;   /* the BIO's functions, made once (raw_method_init) */
static unsigned char *raw_spare; /* a released raw buffer kept for the next one: no malloc on
                                    each read (one thread: the loop's) */

static struct log_limit fail_limit = {10.0, 0, 0, 10, 0};

/* ssl_reason formats OpenSSL's last error (and clears the queue). */
static void ssl_reason(char *out, size_t outlen)
{
    unsigned long e = ERR_peek_last_error();
    if (e == 0)
        snprintf(out, outlen, "unknown error");
    else
        ERR_error_string_n(e, out, outlen);
    ERR_clear_error();
}

/* readable checks that path can be opened for reading, for a clearer message than OpenSSL's. */
static int readable(const char *what, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        snprintf(err, errlen, "cannot read %s %s: %s", what, path, strerror(errno));
        return -1;
    }
    fclose(f);
    return 0;
}

/* ctx_new makes a server context from ts's files. Returns it, or NULL with a message in err. */
static SSL_CTX *ctx_new(const struct tls_server *ts, char *err, size_t errlen)
{
    char why[256];
    if (readable("--ssl-certificate", ts->cert, err, errlen) != 0 ||
        readable("--ssl-key", ts->key, err, errlen) != 0 ||
        (ts->ca != NULL && readable("--ssl-ca-file", ts->ca, err, errlen) != 0))
        return NULL;
    ERR_clear_error();
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (ctx == NULL) {
        ssl_reason(why, sizeof why);
        snprintf(err, errlen, "cannot make a TLS context: %s", why);
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION |
                                 SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_CIPHER_SERVER_PREFERENCE);
    SSL_CTX_set_mode(ctx, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS);
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
    static const unsigned char sid[] = "spurd";
    SSL_CTX_set_session_id_context(ctx, sid, sizeof sid - 1);
    const char *what = "--ssl-certificate", *file = ts->cert;
    if (SSL_CTX_use_certificate_chain_file(ctx, ts->cert) != 1)
        goto fail;
    what = "--ssl-key", file = ts->key;
    if (SSL_CTX_use_PrivateKey_file(ctx, ts->key, SSL_FILETYPE_PEM) != 1)
        goto fail;
    if (SSL_CTX_check_private_key(ctx) != 1) {
        ssl_reason(why, sizeof why);
        snprintf(err, errlen, "--ssl-key %s does not match --ssl-certificate %s: %s", ts->key,
                 ts->cert, why);
        SSL_CTX_free(ctx);
        return NULL;
    }
    if (ts->ca != NULL) {
        what = "--ssl-ca-file", file = ts->ca;
        if (SSL_CTX_load_verify_locations(ctx, ts->ca, NULL) != 1)
            goto fail;
        STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(ts->ca);
        if (names == NULL)
            goto fail;
        SSL_CTX_set_client_CA_list(ctx, names);
    }
    int mode = SSL_VERIFY_NONE;
    if (ts->verify == SSL_VERIFY_CLIENT_OPTIONAL)
        mode = SSL_VERIFY_PEER;
    else if (ts->verify == SSL_VERIFY_CLIENT_REQUIRE)
        mode = SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
    SSL_CTX_set_verify(ctx, mode, NULL);
    return ctx;
fail:
    ssl_reason(why, sizeof why);
    snprintf(err, errlen, "cannot load %s %s: %s", what, file, why);
    SSL_CTX_free(ctx);
    return NULL;
}

struct tls_server *tls_server_new(const struct config *cfg, char *err, size_t errlen)
{
    struct tls_server *ts = calloc(1, sizeof *ts);
    if (ts == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    ts->cert = strdup(cfg->ssl_certificate != NULL ? cfg->ssl_certificate : "");
    ts->key = strdup(cfg->ssl_key != NULL ? cfg->ssl_key : "");
    ts->ca = cfg->ssl_ca_file != NULL ? strdup(cfg->ssl_ca_file) : NULL;
    ts->verify = cfg->ssl_verify_client;
    if (ts->cert == NULL || ts->key == NULL || (cfg->ssl_ca_file != NULL && ts->ca == NULL)) {
        snprintf(err, errlen, "out of memory");
        tls_server_free(ts);
        return NULL;
    }
    ts->ctx = ctx_new(ts, err, errlen);
    if (ts->ctx == NULL) {
        tls_server_free(ts);
        return NULL;
    }
    return ts;
}

int tls_server_reload(struct tls_server *ts, char *err, size_t errlen)
{
    SSL_CTX *ctx = ctx_new(ts, err, errlen);
    if (ctx == NULL)
        return -1;
    SSL_CTX_free(ts->ctx); /* open connections hold their own references */
    ts->ctx = ctx;
    return 0;
}

void tls_server_free(struct tls_server *ts)
{
    if (ts == NULL)
        return;
    SSL_CTX_free(ts->ctx);
    free(ts->cert);
    free(ts->key);
    free(ts->ca);
    free(ts);
    free(raw_spare); /* connections still open allocate a new one if they need it */
    raw_spare = NULL;
}

/* ------------------------------------------------------------ certificate names */

/* add_name appends one name of n bytes to *list (*len bytes used, *cap allocated). */
static int add_name(char **list, size_t *len, size_t *cap, const unsigned char *n, int nlen)
{
    if (nlen <= 0 || memchr(n, '\0', (size_t)nlen) != NULL)
        return 0; /* empty, or a NUL inside: not a name anyone can match */
    size_t need = *len + (size_t)nlen + 2;
    if (need > *cap) {
        size_t c = *cap * 2 > need ? *cap * 2 : need + 64;
        char *l = realloc(*list, c);
        if (l == NULL)
            return -1;
        *list = l;
        *cap = c;
    }
    memcpy(*list + *len, n, (size_t)nlen);
    *len += (size_t)nlen;
    (*list)[(*len)++] = '\0';
    return 0;
}

char *tls_cert_names(X509 *cert)
{
    char *list = NULL;
    size_t len = 0, cap = 0;
    int bad = 0;
    X509_NAME *subj = X509_get_subject_name(cert);
    for (int i = -1; subj != NULL && !bad;) {
        i = X509_NAME_get_index_by_NID(subj, NID_commonName, i);
        if (i < 0)
            break;
        ASN1_STRING *d = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subj, i));
        unsigned char *u = NULL;
        int n = ASN1_STRING_to_UTF8(&u, d);
        if (n >= 0)
            bad = add_name(&list, &len, &cap, u, n) != 0;
        OPENSSL_free(u);
    }
    GENERAL_NAMES *sans = X509_get_ext_d2i(cert, NID_subject_alt_name, NULL, NULL);
    for (int i = 0; sans != NULL && !bad && i < sk_GENERAL_NAME_num(sans); i++) {
        const GENERAL_NAME *g = sk_GENERAL_NAME_value(sans, i);
        if (g->type == GEN_DNS || g->type == GEN_EMAIL) {
            const ASN1_IA5STRING *s = g->type == GEN_DNS ? g->d.dNSName : g->d.rfc822Name;
            bad = add_name(&list, &len, &cap, ASN1_STRING_get0_data(s), ASN1_STRING_length(s)) != 0;
        }
    }
    GENERAL_NAMES_free(sans);
    if (bad || len == 0) {
        free(list);
        return NULL;
    }
    list[len] = '\0'; /* the empty string that ends the list (add_name kept room for it) */
    return list;
}

/* ------------------------------------------------------------ the input BIO */

/* OpenSSL reads a connection's input through this BIO, not straight from the socket: raw_read
 * reads the socket into tc->raw and hands OpenSSL whole records only. So OpenSSL never holds a
 * partial record (which it would keep in its read buffer, where nobody can see it), and what a
 * connection holds is known exactly: the bytes in tc->raw, and OpenSSL's buffer while it holds
 * decrypted bytes (SSL_has_pending). One socket read fills up to a record's worth, where OpenSSL
 * alone makes two (header, then body) per record. */

/* raw_release frees tc's raw buffer (into the spare slot when it is empty). */
static void raw_release(struct tls_conn *tc)
{
    if (tc->raw == NULL)
        return;
    if (raw_spare == NULL)
        raw_spare = tc->raw;
    else
        free(tc->raw);
    tc->raw = NULL;
    tc->raw_off = tc->raw_ready = tc->raw_len = 0;
}

/* raw_scan moves tc->raw_ready past every whole record read. Bytes that are not a TLS record
 * header (a content type from change_cipher_spec (20) to heartbeat (24), a length OpenSSL
 * accepts) make the input opaque: from then on all of it is handed on as it comes. */
static void raw_scan(struct tls_conn *tc)
{
    while (!tc->raw_opaque && tc->raw_len - tc->raw_ready >= SSL3_RT_HEADER_LENGTH) {
        const unsigned char *h = tc->raw + tc->raw_ready;
        size_t n = SSL3_RT_HEADER_LENGTH + ((size_t)h[3] << 8 | h[4]);
        if (h[0] < 20 || h[0] > 24 || n > TLS_RAW_CAP) {
            tc->raw_opaque = 1;
            break;
        }
        if (tc->raw_len - tc->raw_ready < n)
            return;
        tc->raw_ready += n;
    }
    if (tc->raw_opaque || (tc->raw_off == 0 && tc->raw_len == TLS_RAW_CAP))
        tc->raw_ready = tc->raw_len; /* (full without a whole record cannot happen) */
}

static int raw_read(BIO *b, char *out, int outl)
{
    struct tls_conn *tc = BIO_get_data(b);
    BIO_clear_retry_flags(b);
    if (outl <= 0)
        return 0;
    if (tc->raw_ready == tc->raw_off) {
        /* nothing whole to hand on: read the socket behind the partial record held */
        if (tc->raw == NULL) {
            tc->raw = raw_spare != NULL ? raw_spare : malloc(TLS_RAW_CAP);
            raw_spare = NULL;
            if (tc->raw == NULL) {
                errno = ENOMEM;
                return -1;
            }
        }
        if (tc->raw_off > 0) {
            memmove(tc->raw, tc->raw + tc->raw_off, tc->raw_len - tc->raw_off);
            tc->raw_len -= tc->raw_off;
            tc->raw_ready -= tc->raw_off;
            tc->raw_off = 0;
        }
        ssize_t n;
        do
            n = read(tc->fd, tc->raw + tc->raw_len, TLS_RAW_CAP - tc->raw_len);
        while (n < 0 && errno == EINTR);
        if (n <= 0) {
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                BIO_set_retry_read(b);
            if (tc->raw_len == 0)
                raw_release(tc);
            return n == 0 ? 0 : -1; /* 0: the end of input */
        }
        tc->raw_len += (size_t)n;
        raw_scan(tc);
        if (tc->raw_ready == tc->raw_off) {
            BIO_set_retry_read(b); /* a partial record: wait for the rest */
            return -1;
        }
    }
    size_t k = tc->raw_ready - tc->raw_off;
    if (k > (size_t)outl)
        k = (size_t)outl;
    memcpy(out, tc->raw + tc->raw_off, k);
    tc->raw_off += k;
    if (tc->raw_off == tc->raw_len)
        raw_release(tc);
    return (int)k;
}

static long raw_ctrl(BIO *b, int cmd, long num, void *ptr)
{
    (void)num;
    (void)ptr;
    const struct tls_conn *tc = BIO_get_data(b);
    if (cmd == BIO_CTRL_FLUSH)
        return 1;
    if (cmd == BIO_CTRL_PENDING && tc != NULL)
        return (long)(tc->raw_ready - tc->raw_off);
    return 0;
}

static int raw_create(BIO *b)
{
    BIO_set_init(b, 1);
    return 1;
}

/* raw_method_init makes the BIO's method once. Returns 0, or -1 when out of memory. */
static int raw_method_init(void)
{
    if (raw_method != NULL)
        return 0;
    BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "spur-tls-input");
    if (m == NULL || BIO_meth_set_read(m, raw_read) != 1 ||
        BIO_meth_set_ctrl(m, raw_ctrl) != 1 || BIO_meth_set_create(m, raw_create) != 1) {
        BIO_meth_free(m);
        return -1;
    }
    raw_method = m; /* kept for the life of the process */
    return 0;
}

/* ------------------------------------------------------------ the transport */

/* peer_text writes the peer's address, as the plain transport would. */
static void peer_text(struct transport *t, char *out, size_t outlen)
{
    struct transport plain;
    transport_tcp.wrap(&plain, t->fd, NULL);
    plain.ops->peer_name(&plain, out, outlen);
}

/* handshake_failed logs why a handshake failed (rate-limited) and returns TRANSPORT_ERROR. */
static ssize_t handshake_failed(struct transport *t, int err)
{
    struct tls_conn *tc = t->ctx;
    char who[64], why[256];
    peer_text(t, who, sizeof who);
    if (err == SSL_ERROR_SYSCALL && ERR_peek_last_error() == 0) {
        log_debug("TLS handshake with %s: the peer left (%s)", who,
                  errno != 0 ? strerror(errno) : "end of input");
        ERR_clear_error();
        if (errno == 0)
            errno = ECONNRESET;
        return TRANSPORT_ERROR;
    }
    ssl_reason(why, sizeof why);
    long v = SSL_get_verify_result(tc->ssl);
    log_limited(&fail_limit, LOG_WARNING, __FILE__, __LINE__,
                "TLS handshake with %s failed: %s%s%s", who, why,
                v != X509_V_OK ? "; client certificate: " : "",
                v != X509_V_OK ? X509_verify_cert_error_string(v) : "");
    errno = EPROTO;
    return TRANSPORT_ERROR;
}

/* would_block maps SSL_get_error's answer for a failed call to a TRANSPORT_* result; other
 * answers are errors (errno set). */
static ssize_t would_block(int e)
{
    if (e == SSL_ERROR_WANT_READ)
        return TRANSPORT_WANT_READ;
    if (e == SSL_ERROR_WANT_WRITE)
        return TRANSPORT_WANT_WRITE;
    if (e != SSL_ERROR_SYSCALL || errno == 0)
        errno = EPROTO;
    ERR_clear_error();
    return TRANSPORT_ERROR;
}

static ssize_t tls_read(struct transport *t, void *buf, size_t len)
{
    struct tls_conn *tc = t->ctx;
    if (!tc->done) {
        ERR_clear_error();
        errno = 0;
        int r = SSL_do_handshake(tc->ssl);
        if (r != 1) {
            int e = SSL_get_error(tc->ssl, r);
            if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
                return would_block(e);
            return handshake_failed(t, e);
        }
        tc->done = 1;
    }
    if (len > INT_MAX)
        len = INT_MAX;
    /* SSL_read returns one record at most: take the next ones while they are there, up to len
     * (a failure after some bytes is seen again by the next read) */
    size_t got = 0;
    int n;
    do {
        ERR_clear_error();
        errno = 0;
        n = SSL_read(tc->ssl, (char *)buf + got, (int)(len - got));
        if (n > 0)
            got += (size_t)n;
    } while (n > 0 && got < len);
    if (got > 0) {
        ERR_clear_error();
        return (ssize_t)got;
    }
    int e = SSL_get_error(tc->ssl, n);
    if (e == SSL_ERROR_ZERO_RETURN)
        return 0; /* close_notify, or the end of input (SSL_OP_IGNORE_UNEXPECTED_EOF) */
    return would_block(e);
}

static ssize_t tls_writev(struct transport *t, const struct iovec *iov, int iovcnt)
{
    struct tls_conn *tc = t->ctx;
    if (!tc->done)
        return TRANSPORT_WANT_READ; /* the handshake is driven by reads */
    /* one record at a time: from the first iovec when it is long enough, else gathered */
    unsigned char stage[TLS_RECORD];
    const void *p;
    size_t n;
    size_t want = tc->wpend > 0 ? (size_t)tc->wpend : TLS_RECORD;
    if (iovcnt == 0)
        return 0;
    if (iov[0].iov_len >= want || iovcnt == 1) {
        p = iov[0].iov_base;
        n = iov[0].iov_len < want ? iov[0].iov_len : want;
    } else {
        n = 0;
        for (int i = 0; i < iovcnt && n < want; i++) {
            size_t k = iov[i].iov_len < want - n ? iov[i].iov_len : want - n;
            memcpy(stage + n, iov[i].iov_base, k);
            n += k;
        }
        p = stage;
    }
    if (n == 0)
        return 0;
    ERR_clear_error();
    errno = 0;
    int w = SSL_write(tc->ssl, p, (int)n);
    if (w > 0) {
        tc->wpend = 0;
        return w;
    }
    int e = SSL_get_error(tc->ssl, w);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
        tc->wpend = (int)n; /* repeated with the same bytes (they stay first in the queue) */
    return would_block(e);
}

static int tls_shutdown(struct transport *t)
{
    struct tls_conn *tc = t->ctx;
    if (tc->done && tc->wpend == 0) {
        ERR_clear_error();
        (void)SSL_shutdown(tc->ssl); /* close_notify, best effort: the socket is closed next */
        ERR_clear_error();
    }
    return 0;
}

static void tls_close(struct transport *t)
{
    struct tls_conn *tc = t->ctx;
    SSL_free(tc->ssl);
    raw_release(tc);
    free(tc);
    t->ctx = NULL;
    close(t->fd);
    t->fd = -1;
}

static int tls_peer_name(struct transport *t, char *out, size_t outlen)
{
    struct transport plain;
    transport_tcp.wrap(&plain, t->fd, NULL);
    return plain.ops->peer_name(&plain, out, outlen);
}

static size_t tls_pending(struct transport *t)
{
    struct tls_conn *tc = t->ctx;
    size_t whole = tc->raw_ready - tc->raw_off; /* records read from the socket, not yet taken */
    if (!tc->done)
        return whole;
    int n = SSL_pending(tc->ssl);
    return whole + (n > 0 ? (size_t)n : 0);
}

static size_t tls_held(struct transport *t, int *partial)
{
    struct tls_conn *tc = t->ctx;
    *partial = tc->raw_len > tc->raw_ready || (tc->raw_opaque && tc->raw != NULL);
    size_t n = tc->raw != NULL ? TLS_RAW_CAP : 0;
    if (SSL_has_pending(tc->ssl))
        n += TLS_SSL_BUF; /* decrypted bytes not read yet, in OpenSSL's read buffer */
    if (tc->wpend > 0)
        n += TLS_SSL_BUF; /* a record waiting in OpenSSL's write buffer */
    return n;
}

static int tls_handshaking(struct transport *t)
{
    const struct tls_conn *tc = t->ctx;
    return !tc->done;
}

static char *tls_peer_names(struct transport *t)
{
    struct tls_conn *tc = t->ctx;
    X509 *cert = SSL_get0_peer_certificate(tc->ssl);
    if (cert == NULL || SSL_get_verify_result(tc->ssl) != X509_V_OK)
        return NULL;
    return tls_cert_names(cert);
}

static const struct transport_ops tls_ops = {
    "tls",       tls_read,    tls_writev,      tls_shutdown,   tls_close,
    tls_peer_name, tls_pending, tls_handshaking, tls_peer_names, tls_held,
};

static int tls_wrap(struct transport *t, int fd, void *arg)
{
    struct tls_server *ts = arg;
    struct tls_conn *tc = calloc(1, sizeof *tc);
    if (tc == NULL || ts == NULL)
        goto fail;
    tc->fd = fd;
    tc->ssl = SSL_new(ts->ctx);
    if (tc->ssl == NULL || raw_method_init() != 0)
        goto fail;
    BIO *rbio = BIO_new(raw_method), *wbio = BIO_new_socket(fd, BIO_NOCLOSE);
    if (rbio == NULL || wbio == NULL) {
        BIO_free(rbio);
        BIO_free(wbio);
        goto fail;
    }
    BIO_set_data(rbio, tc);
    SSL_set_bio(tc->ssl, rbio, wbio); /* the SSL owns both from now on */
    SSL_set_accept_state(tc->ssl);
    t->ops = &tls_ops;
    t->fd = fd;
    t->ctx = tc;
    return 0;
fail:
    if (tc != NULL)
        SSL_free(tc->ssl);
    free(tc);
    ERR_clear_error();
    return -1;
}

/* ------------------------------------------------------------ the kind's lifecycle */

/* tls_kind_init makes the server's context when cfg turns TLS on (--ssl, --ssl-listen). */
static int tls_kind_init(const struct config *cfg, void **state, char *err, size_t errlen)
{
    *state = NULL;
    if (!config_tls_enabled(cfg))
        return 0;
    *state = tls_server_new(cfg, err, errlen);
    return *state != NULL ? 0 : -1;
}

/* tls_kind_reload reads the certificate, key and CA files again for new connections (SIGHUP). */
static void tls_kind_reload(void *state)
{
    char err[512];
    if (tls_server_reload(state, err, sizeof err) != 0)
        log_error("SIGHUP: TLS files not reloaded, the old ones stay in use: %s", err);
    else
        log_notice("SIGHUP: TLS certificate, key and CA reloaded for new connections");
}

/* tls_kind_destroy frees the server's context. */
static void tls_kind_destroy(void *state) { tls_server_free(state); }

const struct transport_kind transport_tls = {
    .name = "tls",
    .traits = TRANSPORT_SECURE,
    .init = tls_kind_init,
    .reload = tls_kind_reload,
    .destroy = tls_kind_destroy,
    .wrap = tls_wrap,
};

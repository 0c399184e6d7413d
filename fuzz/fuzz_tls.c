/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_tls: the TLS-facing session path. The server side is the real TLS transport
 * (transport_tls.c) over one end of a non-blocking socketpair, with a peer of a memory-only
 * engine behind it, as conn.c drives them; the other end is an in-process OpenSSL client.
 *
 * The first input byte chooses the mode:
 *   - even: the client completes a handshake, then sends the rest of the input as application
 *     data, in records of sizes taken from the input. Every byte the server transport decrypts
 *     goes to session_feed (in reads of varying sizes, so decrypted bytes are left inside
 *     OpenSSL and taken with transport_pending, as conn does), and the server's replies are
 *     written back through the transport's writev and read by the client. engine_check and
 *     session_check must hold after each step.
 *   - odd: the rest of the input is written raw into the socket as the client's side of the
 *     handshake (a fuzzed ClientHello, garbage, a plaintext Gearman packet): the server's reads
 *     must end in an error or "would block", never a crash, a hang or a byte for the session.
 * At the end the transport is closed, the peer detached and the engine destroyed: LeakSanitizer
 * must find nothing. The certificate is made in memory once (LLVMFuzzerInitialize). */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "admin.h"
#include "cmd.h"
#include "config.h"
#include "engine.h"
#include "fuzz_util.h"
#include "log.h"
#include "options.h"
#include "outq.h"
#include "peer.h"
#include "session.h"
#include "transport.h"
#include "transport_tls.h"

#define MAX_STEPS 4096 /* server reads per input, at most */

static struct tls_server *server_ctx; /* the server's context, made once */
static SSL_CTX *client_ctx;           /* the client's */

/* the fake shell: what server.c does for a conn, reduced to one peer */
static struct {
    struct config cfg;
    struct engine eng;
    struct peer *p;
    int closed; /* the engine asked to close the peer */
} S;

static void cb_output(struct engine *e, struct peer *p) { (void)e, (void)p; }
static void cb_close(struct engine *e, struct peer *p) { (void)e, (void)p, S.closed = 1; }
static void cb_shutdown(struct engine *e, int graceful) { (void)e, (void)graceful; }
static double cb_now(struct engine *e) { (void)e; return 1700000000.0; }
static void cb_resume(struct engine *e, struct peer *p) { (void)e, session_process(p); }

static void check(void)
{
    char err[256];
    FUZZ_CHECK(engine_check(&S.eng, err, sizeof err) == 0, "%s", err);
    FUZZ_CHECK(session_check(&S.eng, err, sizeof err) == 0, "%s", err);
}

/* write_file writes a PEM object to a fresh temporary file and returns its path (static). */
static const char *write_pem(const char *name, X509 *x, EVP_PKEY *k)
{
    static char paths[2][64];
    char *path = paths[x != NULL ? 0 : 1];
    snprintf(path, 64, "/tmp/spur-fuzz-tls-%d-%s", (int)getpid(), name);
    FILE *f = fopen(path, "w");
    FUZZ_CHECK(f != NULL, "cannot write %s", path);
    if (x != NULL)
        PEM_write_X509(f, x);
    else
        PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL);
    fclose(f);
    return path;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    log_open("none");
    EVP_PKEY *k = EVP_EC_gen("P-256");
    X509 *x = X509_new();
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
    X509_gmtime_adj(X509_getm_notBefore(x), -3600);
    X509_gmtime_adj(X509_getm_notAfter(x), 86400L * 365);
    X509_set_pubkey(x, k);
    X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
                               (const unsigned char *)"fuzz", -1, -1, 0);
    X509_set_issuer_name(x, X509_get_subject_name(x));
    X509_sign(x, k, EVP_sha256());
    struct config c;
    options_defaults(&c);
    c.ssl = 1;
    c.ssl_certificate = strdup(write_pem("cert.pem", x, NULL));
    c.ssl_key = strdup(write_pem("key.pem", NULL, k));
    char err[256];
    server_ctx = tls_server_new(&c, err, sizeof err);
    FUZZ_CHECK(server_ctx != NULL, "%s", err);
    unlink(c.ssl_certificate);
    unlink(c.ssl_key);
    config_free(&c);
    X509_free(x);
    EVP_PKEY_free(k);
    client_ctx = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_verify(client_ctx, SSL_VERIFY_NONE, NULL);
    return 0;
}

/* flush writes the peer's queued replies through the transport, as conn_flush does, after
 * what server.c's before_sleep would do first (listings, deferred input). */
static void flush(struct transport *t)
{
    struct outq *q = &S.p->out;
    admin_continue(&S.eng);
    if (S.p->flags & PEER_DEFERRED) {
        S.p->flags &= ~PEER_DEFERRED;
        session_process(S.p);
    }
    for (int i = 0; i < 64 && outq_pending(q) > 0; i++) {
        struct iovec iov[64];
        int n = outq_iov(q, iov, 64);
        ssize_t w = transport_writev(t, iov, n);
        if (w <= 0)
            return;
        outq_consume(q, (size_t)w);
    }
}

/* drain_client reads and drops what the server sent. */
static void drain_client(SSL *cl)
{
    char buf[16384];
    for (int i = 0; i < 256; i++)
        if (SSL_read(cl, buf, sizeof buf) <= 0)
            return;
}

/* serve reads from the server transport until it would block, feeding the session. Returns
 * -1 once the transport failed or ended. */
static int serve(struct transport *t, struct reader *sizes, int *steps)
{
    static char buf[65536];
    while (*steps < MAX_STEPS && !S.closed) {
        (*steps)++;
        size_t want = 1 + (rd_u8(sizes) * 97u) % sizeof buf;
        ssize_t n = transport_read(t, buf, want);
        if (n == TRANSPORT_WANT_READ || n == TRANSPORT_WANT_WRITE)
            return 0;
        if (n <= 0)
            return -1;
        FUZZ_CHECK(!transport_handshaking(t), "a byte read during the handshake");
        if (!peer_busy(S.p))
            session_feed(S.p, buf, (size_t)n);
        check();
        flush(t);
        if (transport_pending(t) == 0)
            return 0;
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct reader r = {data, size, 0};
    uint8_t mode = rd_u8(&r);
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
        return 0;
    fcntl(sv[0], F_SETFL, O_NONBLOCK);
    fcntl(sv[1], F_SETFL, O_NONBLOCK);
    memset(&S, 0, sizeof S);
    options_defaults(&S.cfg);
    S.cfg.max_output = 1 << 20;
    S.cfg.max_packet = 1 << 16;
    static const struct engine_ops ops = {cb_output, cb_close, cb_shutdown, cb_now, cb_resume};
    FUZZ_CHECK(engine_init(&S.eng, &S.cfg, &ops, &S) == 0, "engine_init");
    engine_set_sink(&S.eng, &cmd_sink);
    struct transport t;
    FUZZ_CHECK(transport_kinds[TRANSPORT_TLS]->wrap(&t, sv[0], server_ctx) == 0, "wrap");
    S.p = calloc(1, sizeof *S.p);
    peer_init(S.p, &S.eng, sv[0], "192.0.2.1", 0);
    peer_attach(S.p);
    int steps = 0;

    if (mode & 1) {
        /* raw bytes into the handshake */
        size_t n;
        const uint8_t *raw = rd_bytes(&r, rd_left(&r), &n);
        if (n > 0 && write(sv[1], raw, n) < 0)
            FUZZ_CHECK(errno == EAGAIN, "write: %d", errno);
        struct reader none = {NULL, 0, 0};
        (void)serve(&t, &none, &steps);
    } else {
        SSL *cl = SSL_new(client_ctx);
        SSL_set_fd(cl, sv[1]);
        SSL_set_connect_state(cl);
        struct reader none = {NULL, 0, 0};
        int done = 0;
        for (int i = 0; i < 16 && !done; i++) {
            done = SSL_do_handshake(cl) == 1;
            if (serve(&t, &none, &steps) != 0)
                break;
        }
        /* the server's handshake ends on its next read (TLS 1.3: the client's Finished) */
        if (done && serve(&t, &none, &steps) == 0) {
            while (rd_left(&r) > 0 && steps < MAX_STEPS && !S.closed) {
                size_t len = 1 + rd_u8(&r) * 64u; /* a record of up to 16 KiB */
                size_t got;
                const uint8_t *p = rd_bytes(&r, len, &got);
                if (got == 0 || SSL_write(cl, p, (int)got) <= 0)
                    break;
                if (serve(&t, &r, &steps) != 0)
                    break;
                drain_client(cl);
            }
            SSL_shutdown(cl); /* close_notify: the server sees the end of input */
            (void)serve(&t, &none, &steps);
        }
        SSL_free(cl);
    }

    check();
    session_detach(S.p);
    free(S.p);
    (void)transport_shutdown(&t);
    transport_close(&t); /* closes sv[0] */
    close(sv[1]);
    engine_destroy(&S.eng);
    config_free(&S.cfg);
    ERR_clear_error();
    return 0;
}

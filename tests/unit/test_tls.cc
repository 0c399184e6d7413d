/* SPDX-License-Identifier: BSD-3-Clause */
// transport_tls: the certificate names handed to the peer (tls_cert_names), the context's start-up
// checks (tls_server_new), and the transport driven over a socketpair against an in-process
// OpenSSL client: the handshake returns "would block" instead of waiting, then bytes flow both
// ways and the client's verified names come out.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

extern "C" {
#include "config.h"
#include "log.h"
#include "options.h"
#include "transport.h"
#include "transport_tls.h"
}

namespace {

// names splits a cert_names list into "a|b|c".
std::string names(const char *list)
{
    std::string out;
    for (const char *n = list; *n != '\0'; n += strlen(n) + 1)
        out += (out.empty() ? "" : "|") + std::string(n);
    return out;
}

EVP_PKEY *new_key() { return EVP_EC_gen("P-256"); }

// make_cert makes a certificate for key with subject CN cn (may hold a NUL: cn_len) and the
// subjectAltName san (NULL for none), signed by ca_key (its own key when NULL) as issuer.
X509 *make_cert(EVP_PKEY *key, const char *cn, int cn_len, const char *san, X509 *issuer,
                EVP_PKEY *ca_key)
{
    X509 *x = X509_new();
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), rand() & 0xffff);
    X509_gmtime_adj(X509_getm_notBefore(x), -3600);
    X509_gmtime_adj(X509_getm_notAfter(x), 3600);
    X509_set_pubkey(x, key);
    X509_NAME *name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, cn_len, -1, 0);
    X509_set_issuer_name(x, issuer != nullptr ? X509_get_subject_name(issuer) : name);
    if (san != nullptr) {
        X509_EXTENSION *e = X509V3_EXT_conf_nid(nullptr, nullptr, NID_subject_alt_name, san);
        X509_add_ext(x, e, -1);
        X509_EXTENSION_free(e);
    }
    if (issuer == nullptr) { // a self-signed CA
        X509_EXTENSION *e = X509V3_EXT_conf_nid(nullptr, nullptr, NID_basic_constraints,
                                                "critical,CA:TRUE");
        X509_add_ext(x, e, -1);
        X509_EXTENSION_free(e);
    }
    X509_sign(x, ca_key != nullptr ? ca_key : key, EVP_sha256());
    return x;
}

TEST(TlsNames, SubjectCnThenDnsAndEmailSans)
{
    EVP_PKEY *k = new_key();
    X509 *x = make_cert(k, "worker-1", -1,
                        "DNS:w1.example,IP:127.0.0.1,email:ops@example.com,DNS:w1.local", nullptr,
                        nullptr);
    char *l = tls_cert_names(x);
    ASSERT_NE(l, nullptr);
    EXPECT_EQ(names(l), "worker-1|w1.example|ops@example.com|w1.local");
    free(l);
    X509_free(x);
    EVP_PKEY_free(k);
}

TEST(TlsNames, NameWithANulIsSkippedAndNoNameIsNull)
{
    EVP_PKEY *k = new_key();
    X509 *x = make_cert(k, "admin\0evil", 10, "DNS:ok.example", nullptr, nullptr);
    char *l = tls_cert_names(x);
    ASSERT_NE(l, nullptr);
    EXPECT_EQ(names(l), "ok.example");
    free(l);
    X509_free(x);
    x = make_cert(k, "bad\0", 4, nullptr, nullptr, nullptr);
    EXPECT_EQ(tls_cert_names(x), nullptr);
    X509_free(x);
    EVP_PKEY_free(k);
}

// Files is a temporary directory with a CA, a server certificate and key, and a client
// certificate and key signed by the CA.
struct Files {
    char dir[64];
    EVP_PKEY *ca_key, *srv_key, *cli_key;
    X509 *ca, *srv, *cli;

    Files()
    {
        strcpy(dir, "/tmp/spur-tls-test-XXXXXX");
        EXPECT_NE(mkdtemp(dir), nullptr);
        ca_key = new_key();
        srv_key = new_key();
        cli_key = new_key();
        ca = make_cert(ca_key, "Test CA", -1, nullptr, nullptr, nullptr);
        srv = make_cert(srv_key, "localhost", -1, "DNS:localhost", ca, ca_key);
        cli = make_cert(cli_key, "client-1", -1, "email:c1@example.com", ca, ca_key);
        write_cert("ca.pem", ca);
        write_cert("srv.pem", srv);
        write_key("srv.key", srv_key);
        write_key("other.key", cli_key);
    }

    ~Files()
    {
        for (const char *f : {"ca.pem", "srv.pem", "srv.key", "other.key"})
            unlink(path(f).c_str());
        rmdir(dir);
        X509_free(ca);
        X509_free(srv);
        X509_free(cli);
        EVP_PKEY_free(ca_key);
        EVP_PKEY_free(srv_key);
        EVP_PKEY_free(cli_key);
    }

    std::string path(const char *f) const { return std::string(dir) + "/" + f; }

    void write_cert(const char *f, X509 *x)
    {
        FILE *fp = fopen(path(f).c_str(), "w");
        PEM_write_X509(fp, x);
        fclose(fp);
    }

    void write_key(const char *f, EVP_PKEY *k)
    {
        FILE *fp = fopen(path(f).c_str(), "w");
        PEM_write_PrivateKey(fp, k, nullptr, nullptr, 0, nullptr, nullptr);
        fclose(fp);
    }

    // config fills c for these files; key names the key file.
    void config(struct config *c, const char *key, enum ssl_verify v)
    {
        options_defaults(c);
        c->ssl = 1;
        c->ssl_certificate = strdup(path("srv.pem").c_str());
        c->ssl_key = strdup(path(key).c_str());
        c->ssl_ca_file = strdup(path("ca.pem").c_str());
        c->ssl_verify_client = v;
    }
};

TEST(TlsServer, StartUpChecksNameTheFileAndWhy)
{
    Files f;
    struct config c;
    char err[512];
    f.config(&c, "srv.key", SSL_VERIFY_CLIENT_REQUIRE);
    struct tls_server *ts = tls_server_new(&c, err, sizeof err);
    ASSERT_NE(ts, nullptr) << err;
    EXPECT_EQ(tls_server_reload(ts, err, sizeof err), 0) << err;
    tls_server_free(ts);
    config_free(&c);

    f.config(&c, "other.key", SSL_VERIFY_CLIENT_NONE); // not the certificate's key
    EXPECT_EQ(tls_server_new(&c, err, sizeof err), nullptr);
    EXPECT_NE(strstr(err, "--ssl-key"), nullptr) << err;
    EXPECT_NE(strstr(err, "mismatch"), nullptr) << err;
    config_free(&c);

    f.config(&c, "missing.key", SSL_VERIFY_CLIENT_NONE);
    EXPECT_EQ(tls_server_new(&c, err, sizeof err), nullptr);
    EXPECT_NE(strstr(err, "cannot read --ssl-key"), nullptr) << err;
    config_free(&c);

    f.config(&c, "srv.key", SSL_VERIFY_CLIENT_NONE);
    free(c.ssl_certificate);
    c.ssl_certificate = strdup(f.path("srv.key").c_str()); // a key is no certificate
    EXPECT_EQ(tls_server_new(&c, err, sizeof err), nullptr);
    EXPECT_NE(strstr(err, "cannot load --ssl-certificate"), nullptr) << err;
    config_free(&c);
}

// file_text returns the contents of path ("" when it cannot be read).
static std::string file_text(const std::string &path)
{
    std::string out;
    FILE *fp = fopen(path.c_str(), "r");
    if (fp == nullptr)
        return out;
    char buf[512];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, fp)) > 0)
        out.append(buf, n);
    fclose(fp);
    return out;
}

TEST(TlsKind, LifecycleMakesReloadsAndFreesTheServersContext)
{
    const struct transport_kind *k = transport_kinds[TRANSPORT_TLS];
    EXPECT_EQ(k, &transport_tls);
    EXPECT_TRUE(k->traits & TRANSPORT_SECURE); // what sets PEER_TLS
    EXPECT_FALSE(transport_kinds[TRANSPORT_PLAIN]->traits & TRANSPORT_SECURE);
    EXPECT_FALSE(transport_kinds[TRANSPORT_LOOP]->traits & TRANSPORT_SECURE);
    EXPECT_EQ(transport_kinds[TRANSPORT_PLAIN]->init, nullptr); // no per-server state
    ASSERT_NE(k->init, nullptr);
    ASSERT_NE(k->reload, nullptr);
    ASSERT_NE(k->destroy, nullptr);

    Files f;
    struct config c;
    char err[512];
    void *state = &f;
    options_defaults(&c); // TLS off: no state, no error
    EXPECT_EQ(k->init(&c, &state, err, sizeof err), 0);
    EXPECT_EQ(state, nullptr);
    config_free(&c);

    f.config(&c, "missing.key", SSL_VERIFY_CLIENT_NONE); // tls_server_new's checks and texts
    EXPECT_EQ(k->init(&c, &state, err, sizeof err), -1);
    EXPECT_EQ(state, nullptr);
    EXPECT_NE(strstr(err, "cannot read --ssl-key"), nullptr) << err;
    config_free(&c);

    f.config(&c, "srv.key", SSL_VERIFY_CLIENT_NONE);
    ASSERT_EQ(k->init(&c, &state, err, sizeof err), 0) << err;
    ASSERT_NE(state, nullptr);
    std::string log = f.path("log.txt");
    enum log_level level = log_get_level();
    log_set_level(LOG_NOTICE);
    ASSERT_EQ(log_open(log.c_str()), 0);
    k->reload(state);
    unlink(f.path("srv.key").c_str()); // a reload that fails keeps the old context
    k->reload(state);
    log_open("stderr");
    log_set_level(level);
    std::string text = file_text(log);
    unlink(log.c_str());
    EXPECT_NE(text.find("SIGHUP: TLS certificate, key and CA reloaded for new connections"),
              std::string::npos)
        << text;
    EXPECT_NE(text.find("SIGHUP: TLS files not reloaded, the old ones stay in use: cannot read "
                        "--ssl-key"),
              std::string::npos)
        << text;
    int sv[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    struct transport t;
    ASSERT_EQ(k->wrap(&t, sv[0], state), 0); // still made with the old context
    EXPECT_TRUE(transport_handshaking(&t));
    transport_close(&t);
    close(sv[1]);
    k->destroy(state);
    k->destroy(nullptr);
    config_free(&c);
}

TEST(TlsTransport, HandshakeWouldBlockThenBytesFlowAndNamesComeOut)
{
    Files f;
    struct config c;
    char err[512];
    log_set_level(LOG_DEBUG);
    f.config(&c, "srv.key", SSL_VERIFY_CLIENT_REQUIRE);
    struct tls_server *ts = tls_server_new(&c, err, sizeof err);
    ASSERT_NE(ts, nullptr) << err;
    int sv[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    fcntl(sv[0], F_SETFL, O_NONBLOCK);
    fcntl(sv[1], F_SETFL, O_NONBLOCK);
    struct transport t;
    ASSERT_EQ(transport_kinds[TRANSPORT_TLS]->wrap(&t, sv[0], ts), 0);
    EXPECT_TRUE(transport_handshaking(&t));

    SSL_CTX *cctx = SSL_CTX_new(TLS_client_method());
    SSL_CTX_use_certificate(cctx, f.cli);
    SSL_CTX_use_PrivateKey(cctx, f.cli_key);
    X509_STORE_add_cert(SSL_CTX_get_cert_store(cctx), f.ca);
    SSL_CTX_set_verify(cctx, SSL_VERIFY_PEER, nullptr);
    SSL *cl = SSL_new(cctx);
    SSL_set_fd(cl, sv[1]);
    SSL_set_connect_state(cl);

    char buf[64];
    // nothing sent yet: the server would block, it does not wait
    EXPECT_EQ(transport_read(&t, buf, sizeof buf), TRANSPORT_WANT_READ);
    int done = 0;
    for (int i = 0; i < 20 && !done; i++) {
        done = SSL_do_handshake(cl) == 1;
        ssize_t n = transport_read(&t, buf, sizeof buf);
        ASSERT_TRUE(n == TRANSPORT_WANT_READ || n == TRANSPORT_WANT_WRITE) << n << " " << i;
    }
    ASSERT_TRUE(done);
    ASSERT_EQ(SSL_write(cl, "hello", 5), 5);
    ssize_t n = TRANSPORT_WANT_READ;
    for (int i = 0; i < 5 && n == TRANSPORT_WANT_READ; i++)
        n = transport_read(&t, buf, 2); // less than the record: the rest stays inside
    ASSERT_EQ(n, 2);
    EXPECT_FALSE(transport_handshaking(&t));
    EXPECT_EQ(transport_pending(&t), 3u);
    EXPECT_EQ(transport_read(&t, buf + 2, sizeof buf - 2), 3);
    EXPECT_EQ(std::string(buf, 5), "hello");
    char *nm = transport_peer_names(&t);
    ASSERT_NE(nm, nullptr);
    EXPECT_EQ(names(nm), "client-1|c1@example.com");
    free(nm);

    struct iovec iov[3] = {{(void *)"ab", 2}, {(void *)"cd", 2}, {(void *)"e", 1}};
    EXPECT_EQ(transport_writev(&t, iov, 3), 5);
    int r = -1;
    for (int i = 0; i < 5 && r <= 0; i++)
        r = SSL_read(cl, buf, sizeof buf);
    ASSERT_EQ(r, 5);
    EXPECT_EQ(std::string(buf, 5), "abcde");

    EXPECT_EQ(transport_shutdown(&t), 0);
    transport_close(&t);
    SSL_free(cl);
    SSL_CTX_free(cctx);
    close(sv[1]);
    tls_server_free(ts);
    config_free(&c);
}

TEST(TlsTransport, PlaintextIsAnError)
{
    Files f;
    struct config c;
    char err[512];
    f.config(&c, "srv.key", SSL_VERIFY_CLIENT_NONE);
    struct tls_server *ts = tls_server_new(&c, err, sizeof err);
    ASSERT_NE(ts, nullptr) << err;
    int sv[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    fcntl(sv[0], F_SETFL, O_NONBLOCK);
    struct transport t;
    ASSERT_EQ(transport_kinds[TRANSPORT_TLS]->wrap(&t, sv[0], ts), 0);
    static const char req[] = "\0REQ\0\0\0\x10\0\0\0\x02hi";
    ASSERT_EQ(write(sv[1], req, sizeof req - 1), (ssize_t)(sizeof req - 1));
    char buf[64];
    EXPECT_EQ(transport_read(&t, buf, sizeof buf), TRANSPORT_ERROR);
    transport_close(&t);
    close(sv[1]);
    tls_server_free(ts);
    config_free(&c);
}

} // namespace

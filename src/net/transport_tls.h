/* SPDX-License-Identifier: BSD-3-Clause */
/* transport_tls: the TLS transport kind (OpenSSL 3) and the server's TLS context.
 *
 * A struct tls_server holds the SSL_CTX new connections are made with. It is the kind's state:
 * transport_tls.init makes it when the configuration turns TLS on (--ssl, --ssl-listen),
 * .reload re-reads its files on SIGHUP, .destroy frees it, and a TLS listener's transport_arg
 * points at it. The kind has the TRANSPORT_SECURE trait. transport_tls.wrap makes an
 * accept-state SSL over the socket; the handshake runs inside the transport's read (never
 * blocking, never looping: it returns TRANSPORT_WANT_READ / TRANSPORT_WANT_WRITE and conn waits
 * on the fd), so no decrypted byte reaches conn before it is done. conn bounds its time (transport_handshaking,
 * --ssl-handshake-timeout) and takes the client certificate's names (transport_peer_names) when
 * it ends. tls_server_reload swaps in a new SSL_CTX (SIGHUP): each SSL holds a reference to the
 * context it was made with, so open connections keep theirs.
 *
 * OpenSSL reads the socket through the transport's own input BIO, which hands it whole records
 * only: a partial record waits in the transport's buffer, where the held op counts it (the
 * memory budget) and reports it as unfinished input (--idle-timeout), instead of inside
 * OpenSSL's read buffer, where nobody could see it. Writes go to a socket BIO.
 *
 * Policy: TLS 1.2 at least, no renegotiation, no compression, OpenSSL's default ciphers and
 * security level (2), no server-side session cache (TLS 1.3 tickets are stateless), a peer's
 * end of input without close_notify is an end of input. No libev. */
#ifndef SPUR_TRANSPORT_TLS_H
#define SPUR_TRANSPORT_TLS_H

#include <stddef.h>

#include "transport.h"

#ifdef __cplusplus
extern "C" {
#endif

struct config;
struct tls_server;
typedef struct x509_st X509;

/* tls_server_new loads --ssl-certificate, --ssl-key and --ssl-ca-file of cfg (their paths are
 * copied) and makes the first context. Returns it, or NULL with a message naming the file and
 * OpenSSL's reason in err. */
struct tls_server *tls_server_new(const struct config *cfg, char *err, size_t errlen);

/* tls_server_reload reads the same files again into a new context for the connections accepted
 * from now on. Returns 0, or -1 with a message in err: the old context stays in use. */
int tls_server_reload(struct tls_server *ts, char *err, size_t errlen);

/* tls_server_free drops the server's reference to its context (connections still open keep
 * theirs) and frees ts. NULL is allowed. */
void tls_server_free(struct tls_server *ts);

/* tls_cert_names returns the names of a certificate in peer.cert_names' format: the subject's
 * CNs, then the DNS and email subjectAltNames, each NUL-terminated, the list ended by an empty
 * string (names that are empty or contain a NUL are skipped). malloc'd, the caller frees it;
 * NULL when it has no name or memory is short. Pure. */
char *tls_cert_names(X509 *cert);

#ifdef __cplusplus
}
#endif
#endif

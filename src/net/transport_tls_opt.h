/* SPDX-License-Identifier: BSD-3-Clause */
/* transport_tls_opt: the TLS transport's option rows (opt.h): --ssl, --ssl-listen, the
 * certificate, key and CA files, client verification and the handshake timeout. Their fields
 * are in struct config; apart from transport_tls.c so that parsing links no OpenSSL. */
#ifndef SPUR_TRANSPORT_TLS_OPT_H
#define SPUR_TRANSPORT_TLS_OPT_H

#ifdef __cplusplus
extern "C" {
#endif

struct opt_table;

/* transport_tls_options is the TLS transport's option rows. */
extern const struct opt_table transport_tls_options;

#ifdef __cplusplus
}
#endif
#endif

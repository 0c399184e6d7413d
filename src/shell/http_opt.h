/* SPDX-License-Identifier: BSD-3-Clause */
/* http_opt: the HTTP front-end's option rows (opt.h): -r http, --http-port, --http-listen and
 * the other --http-* limits. Their fields are in struct config; apart from http.c so that
 * parsing links no libmicrohttpd. */
#ifndef SPUR_HTTP_OPT_H
#define SPUR_HTTP_OPT_H

#ifdef __cplusplus
extern "C" {
#endif

struct opt_table;

/* http_options is the HTTP front-end's option rows. */
extern const struct opt_table http_options;

#ifdef __cplusplus
}
#endif
#endif

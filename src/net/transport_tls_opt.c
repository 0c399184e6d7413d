/* SPDX-License-Identifier: BSD-3-Clause */
/* transport_tls_opt: the TLS transport's option rows. Pure: util only. */
#include "transport_tls_opt.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "opt.h"

#define F(field) offsetof(struct config, field)
#define CFG(x) ((struct config *)(x)->cfg)

/* set_ssl_listen appends an --ssl-listen ADDR:PORT. */
static int set_ssl_listen(struct opt_ctx *x, const char *arg)
{
    struct config *c = CFG(x);
    char host[256];
    int port;
    if (config_split_hostport(arg, host, sizeof host, &port) != 0)
        return opt_errf(x, "invalid --ssl-listen '%s' (ADDR:PORT or [ADDR6]:PORT)", arg);
    if (c->nssl_listen == CONFIG_MAX_LISTEN)
        return opt_errf(x, "too many --ssl-listen addresses (at most %d)", CONFIG_MAX_LISTEN);
    c->ssl_listen[c->nssl_listen++] = strdup(arg);
    return 0;
}

/* The values of --ssl-verify-client. */
static const struct opt_choice verify_choices[] = {
    {"none", SSL_VERIFY_CLIENT_NONE},
    {"optional", SSL_VERIFY_CLIENT_OPTIONAL},
    {"require", SSL_VERIFY_CLIENT_REQUIRE},
    {NULL, 0},
};

/* The rows of --ssl* (--help: gearmand's part and Spur's own). */
static const struct opt tls_rows[] = {
    {.name = "ssl",
     .parse = OPT_P_FLAG, .field = OPT_F_INT, .off = F(ssl),
     .help = "the -p/-L listeners speak TLS (docs/SECURITY.md); needs\n"
              "--ssl-certificate and --ssl-key",
     .section = CONFIG_HELP_GEARMAND, .rank = 230},
    {.name = "ssl-certificate", .arg = "F",
     .parse = OPT_P_STRING, .field = OPT_F_NONE, .off = F(ssl_certificate),
     .help = "the server's certificate chain (PEM, its own first)",
     .section = CONFIG_HELP_GEARMAND, .rank = 240},
    {.name = "ssl-key", .arg = "FILE",
     .parse = OPT_P_STRING, .field = OPT_F_NONE, .off = F(ssl_key),
     .help = "the server's private key (PEM)",
     .section = CONFIG_HELP_GEARMAND, .rank = 250},
    {.name = "ssl-ca-file", .arg = "FILE",
     .parse = OPT_P_STRING, .field = OPT_F_NONE, .off = F(ssl_ca_file),
     .help = "CA certificates (PEM) client certificates are checked\n"
              "against (see --ssl-verify-client)",
     .section = CONFIG_HELP_GEARMAND, .rank = 260},
    {.name = "ssl-listen", .arg = "A:PORT",
     .parse = OPT_P_CUSTOM, .set = set_ssl_listen, .has_arg = 1,
     .help = "also listen for TLS only on address A, port PORT\n"
              "([ADDR6]:PORT; repeatable), beside the plain -p/-L ones",
     .section = CONFIG_HELP_SPUR, .rank = 30},
    {.name = "ssl-verify-client", .arg = "M",
     .parse = OPT_P_ENUM, .field = OPT_F_INT, .off = F(ssl_verify_client),
     .choices = verify_choices,
     .err = "invalid --ssl-verify-client '%s' (none, optional or require)",
     .help = "none (default, as gearmand): no client certificate asked;\n"
              "optional: one presented must verify; require: a client\n"
              "without a verified certificate is refused",
     .section = CONFIG_HELP_SPUR, .rank = 40},
    {.name = "ssl-handshake-timeout", .arg = "S",
     .parse = OPT_P_SECONDS, .field = OPT_F_DOUBLE, .off = F(ssl_handshake_timeout), .dmax = 86400,
     .def = 10, .err = "invalid --ssl-handshake-timeout '%s' (seconds, 0..86400)",
     .help = "close a TLS connection whose handshake is not done\n"
              "after S seconds (default 10; 0 = never)",
     .section = CONFIG_HELP_SPUR, .rank = 50},
};

const struct opt_table transport_tls_options = {tls_rows, sizeof tls_rows / sizeof tls_rows[0]};

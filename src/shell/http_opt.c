/* SPDX-License-Identifier: BSD-3-Clause */
/* http_opt: the HTTP front-end's option rows. Pure: util only. */
#include "http_opt.h"

#include <stddef.h>
#include <stdint.h>
#include <strings.h>

#include "config.h"
#include "opt.h"

#define F(field) offsetof(struct config, field)
#define CFG(x) ((struct config *)(x)->cfg)

/* set_protocol takes gearmand's -r http. */
static int set_protocol(struct opt_ctx *x, const char *arg)
{
    if (strcasecmp(arg, "http") != 0)
        return opt_errf(x, "--protocol=%s is not supported by spurd (only http)", arg);
    CFG(x)->http_protocol = 1;
    return 0;
}

/* The rows of -r http and --http-*. */
static const struct opt http_rows[] = {
    {.name = "protocol", .short_name = 'r', .arg = "http",
     .parse = OPT_P_CUSTOM, .set = set_protocol, .has_arg = 1,
     .help = "serve HTTP (docs/HTTP.md) on --http-port (default 8080)",
     .section = CONFIG_HELP_GEARMAND, .rank = 270},
    {.name = "http-port", .arg = "PORT",
     .parse = OPT_P_LONG, .field = OPT_F_INT, .off = F(http_port), .lo = 0, .hi = 65535, .def = -1,
     .err = "invalid --http-port value '%s'",
     .help = "the HTTP port; given alone it also turns HTTP on (0 = any\n"
              "free port)",
     .section = CONFIG_HELP_GEARMAND, .rank = 280},
    {.name = "http-listen", .arg = "ADDR",
     .parse = OPT_P_LIST, .field = OPT_F_NONE, .off = F(http_listen), .count_off = F(nhttp_listen),
     .hi = CONFIG_MAX_LISTEN, .err = "too many --http-listen addresses (at most %d)",
     .help = "address of the HTTP listener (repeatable; default all)",
     .section = CONFIG_HELP_SPUR, .rank = 80},
    {.name = "http-port-file", .arg = "FILE",
     .parse = OPT_P_STRING, .field = OPT_F_NONE, .off = F(http_port_file),
     .help = "write the bound HTTP port to FILE",
     .section = CONFIG_HELP_SPUR, .rank = 90},
    {.name = "http-max-connections", .arg = "N",
     .parse = OPT_P_SIZE, .field = OPT_F_SIZE, .off = F(http_max_connections), .lo = 1,
     .hi = 1000000, .def = 1024, .err = "invalid --http-max-connections '%s' (1..1000000)",
     .help = "HTTP connections at once (default 1024)",
     .section = CONFIG_HELP_SPUR, .rank = 100},
    {.name = "http-max-header-size", .arg = "N",
     .parse = OPT_P_SIZE, .field = OPT_F_SIZE, .off = F(http_max_header), .lo = 1024, .hi = 1 << 20,
     .def = 16 << 10, .err = "invalid --http-max-header-size '%s' (1k..1M)",
     .help = "request line and headers of an HTTP request, at most\n"
              "(default 16384; more is answered 431)",
     .section = CONFIG_HELP_SPUR, .rank = 110},
    {.name = "http-max-body", .arg = "N",
     .parse = OPT_P_SIZE, .field = OPT_F_SIZE, .off = F(http_max_body), .lo = 1, .hi = UINT32_MAX,
     .err = "invalid --http-max-body '%s' (1..4294967295)",
     .help = "largest HTTP request body (default: --max-packet-size;\n"
              "more is answered 413)",
     .section = CONFIG_HELP_SPUR, .rank = 120},
    {.name = "http-idle-timeout", .arg = "S",
     .parse = OPT_P_LONG, .field = OPT_F_UINT, .off = F(http_idle_timeout), .lo = 0, .hi = 86400,
     .def = 60, .err = "invalid --http-idle-timeout '%s' (seconds, 0..86400)",
     .help = "close an HTTP connection idle for S seconds, unless it\n"
              "waits on its job (default 60; 0 = never)",
     .section = CONFIG_HELP_SPUR, .rank = 130},
    {.name = "http-request-timeout", .arg = "S",
     .parse = OPT_P_SECONDS, .field = OPT_F_DOUBLE, .off = F(http_request_timeout), .dmax = 86400,
     .def = 30, .err = "invalid --http-request-timeout '%s' (seconds, 0..86400)",
     .help = "close an HTTP connection whose request line, headers\n"
              "and body are not all in S seconds after the request\n"
              "began (default 30; 0 = never)",
     .section = CONFIG_HELP_SPUR, .rank = 140},
    {.name = "http-admin",
     .parse = OPT_P_FLAG, .field = OPT_F_INT, .off = F(http_admin),
     .help = "answer POST /admin: the body is one admin command, the\n"
              "answer its reply (--admin-allow applies; default off)",
     .section = CONFIG_HELP_SPUR, .rank = 150},
};

const struct opt_table http_options = {http_rows, sizeof http_rows / sizeof http_rows[0]};

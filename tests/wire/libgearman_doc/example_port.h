/* SPDX-License-Identifier: BSD-3-Clause */
/* Forced in (cc -include) when the test builds the C examples of libgearman-doc: they connect to
 * "localhost" port 0, i.e. the default 4730. With SPUR_EXAMPLE_PORT set, port 0 means that port
 * instead, and with SPUR_EXAMPLE_HOST set, "localhost" with port 0 means that address, so the
 * test can point them at a server of its own. The host matters where /etc/hosts maps localhost
 * to ::1 as well (Debian's does): libgearman 1.1.20 tries ::1 first and, refused there by a
 * server on 127.0.0.1 only, falls back to 127.0.0.1 and then never sends its request. Nothing
 * else changes. */
#ifndef SPUR_EXAMPLE_PORT_H
#define SPUR_EXAMPLE_PORT_H
#include <stdlib.h>
#include <string.h>

#include <libgearman/gearman.h>

static inline in_port_t spur_example_port(in_port_t port)
{
    const char *env = getenv("SPUR_EXAMPLE_PORT");
    return port != 0 || env == NULL ? port : (in_port_t)atoi(env);
}

static inline const char *spur_example_host(const char *host, in_port_t port)
{
    const char *env = getenv("SPUR_EXAMPLE_HOST");
    return port != 0 || env == NULL || host == NULL || strcmp(host, "localhost") != 0 ? host : env;
}

#define gearman_client_add_server(client, host, port) \
    gearman_client_add_server((client), spur_example_host((host), (port)), spur_example_port(port))
#endif

/* SPDX-License-Identifier: BSD-3-Clause */
/* Forced in (cc -include) when the test builds the C examples of libgearman-doc: they connect to
 * "localhost" port 0, i.e. the default 4730. With SPUR_EXAMPLE_PORT set, port 0 means that port
 * instead, so the test can point them at a server of its own. Nothing else changes. */
#ifndef SPUR_EXAMPLE_PORT_H
#define SPUR_EXAMPLE_PORT_H
#include <stdlib.h>

#include <libgearman/gearman.h>

static inline in_port_t spur_example_port(in_port_t port)
{
    const char *env = getenv("SPUR_EXAMPLE_PORT");
    return port != 0 || env == NULL ? port : (in_port_t)atoi(env);
}

#define gearman_client_add_server(client, host, port) \
    gearman_client_add_server((client), (host), spur_example_port(port))
#endif

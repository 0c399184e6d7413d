/* SPDX-License-Identifier: BSD-3-Clause */
/* transport_kinds: the table of transport kinds (transport.h); the one file that knows every
 * transport, kept apart from transport.h so that the transports and their interface form no cycle. */
#include "transport.h"

#include "transport_loop.h"

const struct transport_kind *const transport_kinds[TRANSPORT_MAX] = {
    [TRANSPORT_PLAIN] = &transport_tcp,
    [TRANSPORT_LOOP] = &transport_loop,
    [TRANSPORT_TLS] = &transport_tls,
};

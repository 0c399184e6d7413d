/* SPDX-License-Identifier: BSD-3-Clause */
/* transport: the table of transport kinds (transport.h). */
#include "transport.h"

#include "transport_loop.h"

const struct transport_kind *const transport_kinds[TRANSPORT_MAX] = {
    [TRANSPORT_PLAIN] = &transport_tcp,
    [TRANSPORT_LOOP] = &transport_loop,
};

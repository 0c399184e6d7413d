/* SPDX-License-Identifier: BSD-3-Clause */
/* broadcast_opt: the option rows of broadcast functions. Pure: util only. */
#include "broadcast_opt.h"

#include <stddef.h>

#include "config.h"
#include "opt.h"

#define F(field) offsetof(struct config, field)

/* The rows of --broadcast and --broadcast-backlog. */
static const struct opt broadcast_rows[] = {
    {.name = "broadcast", .arg = "FUNC",
     .parse = OPT_P_LIST, .field = OPT_F_NONE, .off = F(broadcast), .count_off = F(nbroadcast),
     .hi = CONFIG_MAX_BROADCAST, .err = "too many --broadcast functions (at most %d)",
     .help = "make FUNC a broadcast function: a background job is\n"
              "delivered once to every worker registered for FUNC\n"
              "(repeatable; the admin 'broadcast' changes them)",
     .section = CONFIG_HELP_SPUR, .rank = 392},
    {.name = "broadcast-backlog", .arg = "N",
     .parse = OPT_P_SIZE, .field = OPT_F_SIZE, .off = F(broadcast_backlog), .lo = 1,
     .hi = 100000000, .def = 10000, .err = "invalid --broadcast-backlog '%s' (1..100000000)",
     .help = "broadcast copies that may wait for one worker; more are\n"
              "lost (default 10000)",
     .section = CONFIG_HELP_SPUR, .rank = 394},
};

const struct opt_table broadcast_options = {broadcast_rows,
                                            sizeof broadcast_rows / sizeof broadcast_rows[0]};

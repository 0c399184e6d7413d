/* SPDX-License-Identifier: BSD-3-Clause */
/* store_pg_opt: the PostgreSQL backend's option rows (store_pg.c reads them through its params
 * hook). Pure: util and store_pg_text only, so that parsing links no libpq. */
#include "store_pg_opt.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "opt.h"
#include "store_pg_text.h"

#define F(field) offsetof(struct config, field)
#define CFG(x) ((struct config *)(x)->cfg)

/* set_libpq_table sets --libpq-table, a plain SQL identifier. */
static int set_libpq_table(struct opt_ctx *x, const char *arg)
{
    if (!store_pg_valid_ident(arg))
        return opt_errf(x, "invalid --libpq-table '%s' (letters, digits and _, at most %d bytes)",
                        arg, STORE_PG_IDENT_MAX);
    opt_set_str(&CFG(x)->pg_table, arg);
    return 0;
}

/* set_server_id sets --server-id. */
static int set_server_id(struct opt_ctx *x, const char *arg)
{
    if (!store_pg_valid_server_id(arg))
        return opt_errf(x, "invalid --server-id '%s' (1 to %d letters, digits and ._:@-)", arg,
                        STORE_PG_SERVER_ID_MAX);
    opt_set_str(&CFG(x)->server_id, arg);
    return 0;
}

/* set_takeover appends a --takeover server id. */
static int set_takeover(struct opt_ctx *x, const char *arg)
{
    struct config *c = CFG(x);
    if (!store_pg_valid_server_id(arg))
        return opt_errf(x, "invalid --takeover '%s' (a server id: 1 to %d letters, digits and "
                           "._:@-)", arg, STORE_PG_SERVER_ID_MAX);
    if (c->ntakeover == CONFIG_MAX_TAKEOVER)
        return opt_errf(x, "too many --takeover ids (at most %d)", CONFIG_MAX_TAKEOVER);
    c->takeover[c->ntakeover++] = strdup(arg);
    return 0;
}

/* The PostgreSQL backend's option rows (opt.h), and the second form of --store in --help; their
 * fields are in struct config. */
static const struct opt pg_rows[] = {
    {.name = "libpq-conninfo", .arg = "S",
     .parse = OPT_P_STRING, .field = OPT_F_NONE, .off = F(pg_conninfo),
     .help = "libpq connection string for -q Postgres (default: libpq's\n"
              "defaults and PG* variables)",
     .section = CONFIG_HELP_GEARMAND, .rank = 200},
    {.name = "libpq-table", .arg = "T",
     .parse = OPT_P_CUSTOM, .set = set_libpq_table, .has_arg = 1,
     .help = "gearmand queue table to import for -q Postgres (default\n"
              "queue)",
     .section = CONFIG_HELP_GEARMAND, .rank = 210},
    {.name = "store", .arg = "postgres:CONNINFO",
     .parse = OPT_P_USAGE,
     .help = "keep them in PostgreSQL (libpq connection string)",
     .section = CONFIG_HELP_SPUR, .rank = 170},
    {.name = "server-id", .arg = "ID",
     .parse = OPT_P_CUSTOM, .set = set_server_id, .has_arg = 1,
     .help = "postgres: this server's id in a database shared by several\n"
              "servers (default HOSTNAME:PORT; docs/HA.md)",
     .section = CONFIG_HELP_SPUR, .rank = 220},
    {.name = "takeover", .arg = "ID",
     .parse = OPT_P_CUSTOM, .set = set_takeover, .has_arg = 1,
     .help = "postgres: at start, claim and run the stored jobs of the\n"
              "dead server ID (refused while ID holds its lease; repeatable)",
     .section = CONFIG_HELP_SPUR, .rank = 230},
    {.name = "takeover-after", .arg = "S",
     .parse = OPT_P_SECONDS, .field = OPT_F_DOUBLE, .off = F(takeover_after), .dmin = 1,
     .dmax = 86400, .flags = OPT_OR_ZERO,
     .err = "invalid --takeover-after '%s' (0, or 1 to 86400 seconds)",
     .help = "postgres: claim the jobs of any server whose lease has not\n"
              "been renewed for S seconds (default 0: never)",
     .section = CONFIG_HELP_SPUR, .rank = 240},
};

const struct opt_table store_pg_options = {pg_rows, sizeof pg_rows / sizeof pg_rows[0]};

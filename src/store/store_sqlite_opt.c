/* SPDX-License-Identifier: BSD-3-Clause */
/* store_sqlite_opt: the SQLite backend's option rows (store_sqlite.c reads them through its
 * params hook). Pure: util only, so that parsing links no SQLite. */
#include "store_sqlite_opt.h"

#include <limits.h>
#include <stddef.h>

#include "config.h"
#include "opt.h"

#define F(field) offsetof(struct config, field)

/* The SQLite backend's option rows (opt.h); their fields are in struct config. */
static const struct opt sqlite_rows[] = {
    {.name = "libsqlite3-db", .arg = "FILE",
     .parse = OPT_P_STRING, .field = OPT_F_NONE, .off = F(sqlite_db),
     .help = "SQLite file for -q libsqlite3",
     .section = CONFIG_HELP_GEARMAND, .rank = 180},
    {.name = "libsqlite3-table", .arg = "T",
     .parse = OPT_P_STRING, .field = OPT_F_NONE, .off = F(sqlite_table),
     .help = "gearmand queue table to import (default gearman_queue)",
     .section = CONFIG_HELP_GEARMAND, .rank = 190},
    {.name = "store-max-pages", .arg = "N",
     .parse = OPT_P_LONG, .field = OPT_F_LONG, .off = F(store_max_pages), .lo = 0, .hi = LONG_MAX,
     .err = "invalid --store-max-pages '%s'",
     .help = "cap the store at N pages (to test a full disk)",
     .section = CONFIG_HELP_SPUR, .rank = 190},
    {.name = "store-recover",
     .parse = OPT_P_FLAG, .field = OPT_F_INT, .off = F(store_recover),
     .help = "start even if the store is damaged: rewrite it with every\n"
              "readable job, keep the damaged file as PATH.damaged-TIME",
     .section = CONFIG_HELP_SPUR, .rank = 250},
};

const struct opt_table store_sqlite_options = {sqlite_rows,
                                               sizeof sqlite_rows / sizeof sqlite_rows[0]};

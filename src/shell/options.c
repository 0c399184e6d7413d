/* SPDX-License-Identifier: BSD-3-Clause */
/* options: spurd's option tables, assembled for the generic parser (config.c, opt.c). */
#include "options.h"

#include "config.h"
#include "opt.h"
#include "store_pg.h"
#include "store_sqlite.h"

const struct opt_table *const options_tables[] = {
    &config_options,
    &store_sqlite_options,
    &store_pg_options,
    NULL,
};

int options_parse(struct config *c, int argc, char **argv, char *err, size_t errlen, FILE *out)
{
    return config_parse_with(c, options_tables, argc, argv, err, errlen, out);
}

void options_usage(FILE *out)
{
    config_usage(options_tables, out);
}

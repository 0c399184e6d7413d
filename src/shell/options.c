/* SPDX-License-Identifier: BSD-3-Clause */
/* options: spurd's option tables, assembled for the generic parser (config.c, opt.c). */
#include "options.h"

#include "broadcast_opt.h"
#include "config.h"
#include "http_opt.h"
#include "jobx_opt.h"
#include "opt.h"
#include "recur_opt.h"
#include "store_pg_opt.h"
#include "store_sqlite_opt.h"
#include "transport_tls_opt.h"

const struct opt_table *const options_tables[] = {
    &config_options,
    &transport_tls_options,
    &http_options,
    &jobx_options,
    &recur_options,
    &broadcast_options,
    &store_sqlite_options,
    &store_pg_options,
    NULL,
};

void options_defaults(struct config *c)
{
    config_defaults_with(c, options_tables);
}

int options_parse(struct config *c, int argc, char **argv, char *err, size_t errlen, FILE *out)
{
    return config_parse_with(c, options_tables, argc, argv, err, errlen, out);
}

void options_usage(FILE *out)
{
    config_usage(options_tables, out);
}

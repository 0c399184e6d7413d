/* SPDX-License-Identifier: BSD-3-Clause */
/* options: spurd's option tables, assembled: the server's own (config_options), the TLS
 * transport's, the HTTP front-end's, the features' (jobx, recur) and each store backend's. The
 * one place that knows every table; config.c (util) parses whatever list it is handed. Adding
 * an option is one row in the table of the module it belongs to. Every table is in a *_opt.c
 * of util-level code only, so linking this links no library (OpenSSL, libmicrohttpd, SQLite,
 * libpq). */
#ifndef SPUR_OPTIONS_H
#define SPUR_OPTIONS_H

#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

struct config;
struct opt_table;

/* options_tables is every option table of spurd, NULL-terminated. */
extern const struct opt_table *const options_tables[];

/* options_defaults fills c with every default: the rows of every table in options_tables
 * (config_defaults_with). No allocation. */
void options_defaults(struct config *c);

/* options_parse is config_parse_with over options_tables: parses argv (and the config files it
 * names) into c. Returns 0; 1 when --help or --version was printed to out; -1 with a message
 * in err. */
int options_parse(struct config *c, int argc, char **argv, char *err, size_t errlen, FILE *out);

/* options_usage writes spurd's --help text to out. */
void options_usage(FILE *out);

#ifdef __cplusplus
}
#endif
#endif

/* SPDX-License-Identifier: BSD-3-Clause */
/* store_pg_opt: the PostgreSQL backend's option rows (opt.h), apart from store_pg.c so that
 * parsing links no libpq. */
#ifndef SPUR_STORE_PG_OPT_H
#define SPUR_STORE_PG_OPT_H

#ifdef __cplusplus
extern "C" {
#endif

struct opt_table;

/* store_pg_options is the PostgreSQL backend's option rows: --libpq-conninfo,
 * --libpq-table, --server-id, --takeover, --takeover-after, and the postgres: form of --store
 * in --help. */
extern const struct opt_table store_pg_options;

#ifdef __cplusplus
}
#endif
#endif

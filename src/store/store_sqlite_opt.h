/* SPDX-License-Identifier: BSD-3-Clause */
/* store_sqlite_opt: the SQLite backend's option rows (opt.h), apart from store_sqlite.c so that
 * parsing links no SQLite. */
#ifndef SPUR_STORE_SQLITE_OPT_H
#define SPUR_STORE_SQLITE_OPT_H

#ifdef __cplusplus
extern "C" {
#endif

struct opt_table;

/* store_sqlite_options is the SQLite backend's option rows: --libsqlite3-db,
 * --libsqlite3-table, --store-max-pages, --store-recover. */
extern const struct opt_table store_sqlite_options;

#ifdef __cplusplus
}
#endif
#endif

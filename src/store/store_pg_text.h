/* SPDX-License-Identifier: BSD-3-Clause */
/* store_pg_text: the pure text helpers of the PostgreSQL store (store_pg.c), apart so that the
 * configuration can check an option without linking libpq. No I/O, no allocation. */
#ifndef SPUR_STORE_PG_TEXT_H
#define SPUR_STORE_PG_TEXT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define STORE_PG_IDENT_MAX 63 /* longest table name (PostgreSQL's NAMEDATALEN - 1) */

/* store_pg_valid_ident returns 1 when name is a plain identifier: 1..STORE_PG_IDENT_MAX bytes of
 * ASCII letters, digits and '_', not starting with a digit; 0 otherwise. Such a name is also
 * always written double-quoted in SQL. */
int store_pg_valid_ident(const char *name);

#define STORE_PG_SERVER_ID_MAX 63 /* longest --server-id */

/* store_pg_valid_server_id returns 1 when id is 1..STORE_PG_SERVER_ID_MAX bytes of ASCII letters,
 * digits and "._:@-"; 0 otherwise. */
int store_pg_valid_server_id(const char *id);

/* store_pg_redact writes conninfo into out (len bytes, NUL-terminated) without its password, for
 * logs: the keyword=value and URI forms are both handled. Returns out. */
char *store_pg_redact(const char *conninfo, char *out, size_t len);

#ifdef __cplusplus
}
#endif
#endif

/* SPDX-License-Identifier: BSD-3-Clause */
/* store_row: decoding and validating one stored job row. See store_row.h. */
#include "store_row.h"

#include <string.h>

/* bytes_col checks that c holds text or bytes of at most max bytes, NUL-free unless nul_ok, and
 * returns them through p and n. Returns NULL or the reason (what names the column). */
static const char *bytes_col(const struct store_col *c, size_t max, int nul_ok, const char **p,
                             size_t *n, const char *bad_type, const char *too_long,
                             const char *has_nul)
{
    if (c->type != STORE_COL_TEXT && c->type != STORE_COL_BLOB)
        return bad_type;
    if (c->n > max)
        return too_long;
    if (c->n > 0 && c->p == NULL)
        return bad_type;
    *p = c->n > 0 ? (const char *)c->p : "";
    *n = c->n;
    if (!nul_ok && c->n > 0 && memchr(*p, '\0', c->n) != NULL)
        return has_nul;
    return NULL;
}

const char *store_row_decode(const struct store_col cols[STORE_ROW_NCOLS], size_t max_func,
                             struct store_rec *out)
{
    const struct store_col *id = &cols[STORE_ROW_ID], *prio = &cols[STORE_ROW_PRIO],
                           *when = &cols[STORE_ROW_RUN_AT];
    const char *why;
    if (id->type != STORE_COL_INT)
        return "id is not an integer";
    if (id->i < 1 || (uint64_t)id->i > STORE_ID_MAX)
        return "id out of range";
    if (prio->type != STORE_COL_INT)
        return "priority is not an integer";
    if (prio->i < 0 || prio->i > 2)
        return "priority out of range (0..2)";
    if (when->type != STORE_COL_INT)
        return "run_at is not an integer";
    if (when->i > STORE_RUN_AT_MAX)
        return "run_at out of range";
    const char *fp, *up, *rp, *dp;
    size_t fn, un, rn, dn;
    if ((why = bytes_col(&cols[STORE_ROW_FUNC], max_func, 0, &fp, &fn, "function name is not bytes",
                         "function name longer than --max-function-name",
                         "function name contains NUL")) != NULL)
        return why;
    if (fn == 0)
        return "function name is empty";
    if ((why = bytes_col(&cols[STORE_ROW_UNIQUE], STORE_UNIQUE_MAX, 0, &up, &un,
                         "unique is not bytes", "unique longer than 64 bytes",
                         "unique contains NUL")) != NULL)
        return why;
    if ((why = bytes_col(&cols[STORE_ROW_REDUCER], max_func, 0, &rp, &rn, "reducer is not bytes",
                         "reducer longer than --max-function-name", "reducer contains NUL")) != NULL)
        return why;
    if ((why = bytes_col(&cols[STORE_ROW_DATA], STORE_ROW_BYTES_MAX, 1, &dp, &dn,
                         "payload is not bytes", "payload too large", "")) != NULL)
        return why;
    if (fn + un + rn > STORE_ROW_BYTES_MAX - dn) /* each term is bounded: no overflow */
        return "job too large";
    *out = (struct store_rec){(uint64_t)id->i, fp, fn, up, un, rp, rn, dp, dn, (int)prio->i,
                              when->i > 0 ? when->i : 0, NULL, 0};
    return NULL;
}

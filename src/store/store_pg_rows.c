/* SPDX-License-Identifier: BSD-3-Clause */
/* store_pg_rows: a batch's jobs as PostgreSQL binary arrays. See store_pg_rows.h. */
#include "store_pg_rows.h"

#include <stdint.h>
#include <string.h>

#define HEADER 20 /* ndim, flags, element type, length, lower bound */
#define PUT32(p, v) store_pg_put_be((p), (v), 4) /* an int4 of the array format */

/* elem_oid is the element type of each column's array. */
static const uint32_t elem_oid[STORE_PG_NCOLS] = {
    STORE_PG_OID_INT8,  STORE_PG_OID_INT2,  STORE_PG_OID_INT8,  STORE_PG_OID_BYTEA,
    STORE_PG_OID_BYTEA, STORE_PG_OID_BYTEA, STORE_PG_OID_BYTEA, STORE_PG_OID_BYTEA};

/* put_elem appends one element (its length, then n bytes of v; v NULL: a NULL element) to a. */
static int put_elem(struct buf *a, const void *v, size_t n)
{
    if (v == NULL)
        n = 0;
    if (n > INT32_MAX || buf_reserve(a, 4 + n) != 0)
        return -1;
    unsigned char *p = (unsigned char *)buf_tail(a);
    PUT32(p, v == NULL ? UINT32_MAX : (uint32_t)n);
    if (n > 0)
        memcpy(p + 4, v, n);
    buf_commit(a, 4 + n);
    return 0;
}

/* put_int appends an integer element of len (2 or 8) bytes to a. */
static int put_int(struct buf *a, uint64_t v, int len)
{
    unsigned char b[8];
    store_pg_put_be(b, v, (size_t)len);
    return put_elem(a, b, (size_t)len);
}

/* put_row appends job x to the arrays of r. */
static int put_row(struct store_pg_rows *r, const struct store_rec *x)
{
    struct buf *c = r->col;
    return put_int(&c[STORE_PG_COL_ID], x->id, 8) != 0 ||
                   put_int(&c[STORE_PG_COL_PRIO], (uint64_t)x->prio, 2) != 0 ||
                   put_int(&c[STORE_PG_COL_RUN_AT], (uint64_t)x->when, 8) != 0 ||
                   put_elem(&c[STORE_PG_COL_FUNC], x->func_len ? x->func : "", x->func_len) != 0 ||
                   put_elem(&c[STORE_PG_COL_UNIQ], x->unique_len ? x->unique : "", x->unique_len) != 0 ||
                   put_elem(&c[STORE_PG_COL_REDUCER], x->reducer_len ? x->reducer : "",
                            x->reducer_len) != 0 ||
                   put_elem(&c[STORE_PG_COL_DATA], x->data_len ? x->data : "", x->data_len) != 0 ||
                   put_elem(&c[STORE_PG_COL_META], x->meta_len ? x->meta : NULL, x->meta_len) != 0
               ? -1
               : 0;
}

/* start empties r and writes each array's header, its length and null flag left for finish. */
static int start(struct store_pg_rows *r)
{
    r->nrows = r->bytes = 0;
    for (int k = 0; k < STORE_PG_NCOLS; k++) {
        struct buf *a = &r->col[k];
        a->start = a->end = 0;
        if (buf_reserve(a, HEADER) != 0)
            return -1;
        unsigned char *p = (unsigned char *)buf_tail(a);
        PUT32(p, 1);               /* one dimension */
        PUT32(p + 4, 0);           /* no NULL element, so far */
        PUT32(p + 8, elem_oid[k]); /* element type */
        PUT32(p + 12, 0);          /* length, so far */
        PUT32(p + 16, 1);          /* lower bound */
        buf_commit(a, HEADER);
        r->bytes += HEADER;
    }
    return 0;
}

/* finish sets each array's length to r->nrows, and the meta array's null flag when it has a NULL. */
static void finish(struct store_pg_rows *r, int meta_null)
{
    for (int k = 0; k < STORE_PG_NCOLS; k++)
        PUT32((unsigned char *)buf_head(&r->col[k]) + 12, (uint32_t)r->nrows);
    PUT32((unsigned char *)buf_head(&r->col[STORE_PG_COL_META]) + 4, meta_null ? 1 : 0);
}

int store_pg_rows_fill(struct store_pg_rows *r, const struct store_batch *b, size_t *next,
                       size_t max_bytes, enum store_pg_take take)
{
    if (start(r) != 0)
        goto fail;
    int meta_null = 0;
    size_t n = store_batch_nadds(b);
    while (*next < n && (r->nrows == 0 || r->bytes < max_bytes)) {
        struct store_rec x;
        size_t i = (*next)++;
        if (take != STORE_PG_TAKE_ALL &&
            (store_batch_add_is_update(b, i) != 0) != (take == STORE_PG_TAKE_UPDATES))
            continue; /* the other kind */
        if (store_batch_add_at(b, i, &x) != 0)
            continue; /* cancelled by a done of the same batch */
        if (r->nrows >= INT32_MAX || put_row(r, &x) != 0)
            goto fail;
        /* a length word per element, the integers, the byte strings */
        r->bytes += 4 * STORE_PG_NCOLS + 8 + 2 + 8 + x.func_len + x.unique_len + x.reducer_len +
                    x.data_len + x.meta_len;
        r->nrows++;
        meta_null |= x.meta_len == 0;
    }
    finish(r, meta_null);
    return (int)r->nrows;
fail:
    for (int k = 0; k < STORE_PG_NCOLS; k++)
        r->col[k].start = r->col[k].end = 0;
    r->nrows = r->bytes = 0;
    return -1;
}

void store_pg_rows_free(struct store_pg_rows *r)
{
    for (int k = 0; k < STORE_PG_NCOLS; k++)
        buf_free(&r->col[k]);
    r->nrows = r->bytes = 0;
}

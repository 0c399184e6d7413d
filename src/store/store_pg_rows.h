/* SPDX-License-Identifier: BSD-3-Clause */
/* store_pg_rows: a batch's jobs as PostgreSQL binary arrays, one array per column, so that the
 * PostgreSQL store (store_pg.c) writes a whole chunk of jobs with one statement
 * (INSERT ... SELECT ... FROM unnest($1, ..., $8)) instead of one statement per job: the
 * backend's per-statement cost (bind, plan, executor start and end) is then paid once a chunk.
 *
 * Pure: no libpq, no I/O; the format is array_recv's (PostgreSQL's src/backend/utils/adt/
 * arrayfuncs.c): int32 ndim (1), int32 flags (1 when an element is NULL), Oid element type,
 * int32 length, int32 lower bound (1), then per element int32 length (-1 = NULL) and its bytes,
 * all big-endian. */
#ifndef SPUR_STORE_PG_ROWS_H
#define SPUR_STORE_PG_ROWS_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "store_batch.h"

#ifdef __cplusplus
extern "C" {
#endif

/* the columns, in the order of the statement's parameters $1..$8 */
enum {
    STORE_PG_COL_ID,      /* int8 */
    STORE_PG_COL_PRIO,    /* int2 */
    STORE_PG_COL_RUN_AT,  /* int8 */
    STORE_PG_COL_FUNC,    /* bytea */
    STORE_PG_COL_UNIQ,    /* bytea */
    STORE_PG_COL_REDUCER, /* bytea */
    STORE_PG_COL_DATA,    /* bytea */
    STORE_PG_COL_META,    /* bytea, NULL when the job has no meta (absent or empty) */
    STORE_PG_NCOLS
};

#define STORE_PG_OID_INT8 20      /* PostgreSQL's type oids (pg_type.dat) */
#define STORE_PG_OID_INT2 21
#define STORE_PG_OID_BYTEA 17
#define STORE_PG_OID_INT8_ARRAY 1016
#define STORE_PG_OID_INT2_ARRAY 1005
#define STORE_PG_OID_BYTEA_ARRAY 1001
#define STORE_PG_CHUNK_BYTES (1024 * 1024) /* array bytes a chunk stops growing at */

/* store_pg_put_be writes the low len bytes of v big-endian at p: PostgreSQL's binary int2, int4
 * and int8, and the words of an array's header. */
static inline void store_pg_put_be(void *p, uint64_t v, size_t len)
{
    unsigned char *b = (unsigned char *)p;
    for (size_t i = len; i-- > 0; v >>= 8)
        b[i] = (unsigned char)v;
}

/* struct store_pg_rows is one chunk of jobs being encoded: its arrays and how many rows they
 * hold. Zero-initialise it; store_pg_rows_free frees it. Reused from chunk to chunk. */
struct store_pg_rows {
    struct buf col[STORE_PG_NCOLS]; /* one complete binary array per column (after a fill) */
    size_t nrows;                   /* rows (jobs) in the arrays */
    size_t bytes;                   /* bytes of all arrays together */
};

/* which adds of a batch store_pg_rows_fill takes */
enum store_pg_take {
    STORE_PG_TAKE_ALL,    /* every live add */
    STORE_PG_TAKE_NEW,    /* the first writes of new jobs (store_queue_add) */
    STORE_PG_TAKE_UPDATES /* the new versions of jobs that may be stored (store_queue_update) */
};

/* store_pg_rows_fill encodes the live adds of b that take selects, from add slot *next on
 * (cancelled slots and those of the other kind are skipped), into r, replacing what r held, until the arrays hold at least max_bytes bytes or the
 * adds run out; a chunk holds at least one job. *next moves past the slots taken. Returns the
 * rows encoded (r->nrows; 0 when no live add is left), or -1 when out of memory or a field is
 * longer than INT32_MAX bytes (r is then empty). The ids of b's adds are distinct
 * (store_batch.h: a second version in one batch replaces the first), so no two rows of a chunk
 * have the same id. */
int store_pg_rows_fill(struct store_pg_rows *r, const struct store_batch *b, size_t *next,
                       size_t max_bytes, enum store_pg_take take);

/* store_pg_rows_free frees r's arrays; r is empty and reusable. */
void store_pg_rows_free(struct store_pg_rows *r);

#ifdef __cplusplus
}
#endif
#endif

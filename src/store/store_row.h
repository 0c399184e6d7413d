/* SPDX-License-Identifier: BSD-3-Clause */
/* store_row: the decoder and validator of one stored job row, as read back from the store. Pure:
 * no SQLite, no I/O, no allocation; the fuzz target fuzz/fuzz_store_row.c drives it directly.
 *
 * Nothing in a store file is trusted: it may have been edited by hand, written by another program,
 * or damaged. A row becomes a job only if a submit could have created it; anything else is moved
 * aside (store_sqlite quarantines it) instead of being replayed. */
#ifndef SPUR_STORE_ROW_H
#define SPUR_STORE_ROW_H

#include <stddef.h>
#include <stdint.h>

#include "store_batch.h"

#ifdef __cplusplus
extern "C" {
#endif

#define STORE_ID_MAX ((uint64_t)1 << 62) /* largest job id accepted from a store: leaves 2^62 ids
                                            for new jobs (spurd numbers from time << 24, ~2^55) */
#define STORE_UNIQUE_MAX 64              /* longest unique (the protocol's limit) */
#define STORE_RUN_AT_MAX 253402300799LL  /* latest run_at: 9999-12-31T23:59:59Z */
#define STORE_ROW_BYTES_MAX 0xffffff00u  /* function + unique + reducer + payload of one job */

/* enum store_col_type is the storage class of a column value, as SQLite reports it. */
enum store_col_type {
    STORE_COL_INT = 1,   /* 64-bit integer */
    STORE_COL_FLOAT = 2, /* floating point */
    STORE_COL_TEXT = 3,  /* text */
    STORE_COL_BLOB = 4,  /* bytes */
    STORE_COL_NULL = 5,  /* NULL */
};

/* struct store_col is one column value of a row. */
struct store_col {
    enum store_col_type type; /* its storage class; anything else is invalid */
    int64_t i;                /* the value, for STORE_COL_INT */
    const void *p;            /* the bytes, for TEXT and BLOB (may be NULL when n is 0) */
    size_t n;                 /* their length */
};

/* The columns of a spur_jobs row, in the order store_row_decode takes them. */
enum store_row_col {
    STORE_ROW_ID, STORE_ROW_PRIO, STORE_ROW_RUN_AT, STORE_ROW_FUNC, STORE_ROW_UNIQUE,
    STORE_ROW_REDUCER, STORE_ROW_DATA, STORE_ROW_NCOLS
};

/* store_row_decode checks the STORE_ROW_NCOLS columns of one stored row and, if they make a job,
 * fills *out with borrowed pointers into the columns (empty fields point at ""). The rules:
 *   - id: an integer in 1..STORE_ID_MAX;
 *   - prio: an integer 0 (high), 1 (normal) or 2 (low);
 *   - run_at: an integer at most STORE_RUN_AT_MAX; a negative one means now (0);
 *   - func: text or bytes, 1..max_func bytes, without NUL;
 *   - unique: text or bytes, at most STORE_UNIQUE_MAX bytes, without NUL;
 *   - reducer: text or bytes, at most max_func bytes, without NUL;
 *   - data: text or bytes, anything;
 *   - the four byte fields together at most STORE_ROW_BYTES_MAX bytes.
 * These are what a submit can create (the wire allows tabs and newlines in a function name, so they
 * are kept). Returns NULL when the row is a job, or a static, human-readable reason it is not (out
 * is then unspecified). O(length of the row). */
const char *store_row_decode(const struct store_col cols[STORE_ROW_NCOLS], size_t max_func,
                             struct store_rec *out);

#ifdef __cplusplus
}
#endif
#endif

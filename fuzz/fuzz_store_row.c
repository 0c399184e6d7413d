/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_store_row: libFuzzer target for store_row_decode, the check every stored row passes before
 * it becomes a job at start-up. The input describes the seven columns of one row (storage class,
 * integer or bytes) and the --max-function-name in force. Each byte column is copied into a
 * malloc of exactly its size, so ASan sees any read past it. The target checks the decoder against
 * a reference written from the contract in store_row.h: a row is accepted exactly when the
 * reference accepts it, and an accepted row is decoded into exactly its columns. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "store_row.h"

/* take_col reads one column: a type byte, then an integer or a length and bytes. */
static void take_col(struct reader *r, struct store_col *c, void **owned)
{
    uint8_t t = rd_u8(r);
    *owned = NULL;
    memset(c, 0, sizeof *c);
    c->type = (enum store_col_type)(t % 6); /* 0 is not a valid type: it must be rejected */
    if (c->type == STORE_COL_INT) {
        uint8_t how = rd_u8(r);
        if (how < 64) { /* small values and the edges */
            static const int64_t edge[] = {0, 1, 2, 3, -1, -2, INT64_MAX, INT64_MIN,
                                           (int64_t)STORE_ID_MAX, (int64_t)STORE_ID_MAX + 1,
                                           STORE_RUN_AT_MAX, STORE_RUN_AT_MAX + 1};
            c->i = edge[how % (sizeof edge / sizeof edge[0])];
        } else {
            uint64_t v = ((uint64_t)rd_u32(r) << 32) | rd_u32(r);
            c->i = (int64_t)v;
        }
    } else if (c->type == STORE_COL_TEXT || c->type == STORE_COL_BLOB) {
        size_t want = rd_u16(r) % 1024, got;
        if (rd_u8(r) == 0xff)
            want = 70000; /* larger than any limit, filled with the byte that follows */
        if (want <= 1024) {
            const uint8_t *p = rd_bytes(r, want, &got);
            if (got > 0) {
                *owned = malloc(got);
                memcpy(*owned, p, got);
            }
            c->p = *owned;
            c->n = got;
        } else {
            *owned = malloc(want);
            memset(*owned, rd_u8(r), want);
            c->p = *owned;
            c->n = want;
        }
    }
}

/* ref_bytes is the reference check of a byte column. */
static int ref_bytes(const struct store_col *c, size_t max, int nul_ok)
{
    if (c->type != STORE_COL_TEXT && c->type != STORE_COL_BLOB)
        return 0;
    if (c->n > max)
        return 0;
    for (size_t i = 0; !nul_ok && i < c->n; i++)
        if (((const char *)c->p)[i] == '\0')
            return 0;
    return 1;
}

/* same_bytes tells whether a decoded field is exactly the column's bytes. */
static int same_bytes(const char *p, size_t n, const struct store_col *c)
{
    return p != NULL && n == c->n && (n == 0 || (p == c->p));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct reader r = {data, size, 0};
    size_t max_func = rd_u8(&r) < 128 ? rd_u8(&r) : 512;
    struct store_col cols[STORE_ROW_NCOLS];
    void *owned[STORE_ROW_NCOLS];
    for (int k = 0; k < STORE_ROW_NCOLS; k++)
        take_col(&r, &cols[k], &owned[k]);

    struct store_rec out;
    memset(&out, 0xa5, sizeof out);
    const char *why = store_row_decode(cols, max_func, &out);

    const struct store_col *id = &cols[STORE_ROW_ID], *prio = &cols[STORE_ROW_PRIO],
                           *when = &cols[STORE_ROW_RUN_AT], *fn = &cols[STORE_ROW_FUNC];
    int ok = id->type == STORE_COL_INT && id->i >= 1 && (uint64_t)id->i <= STORE_ID_MAX &&
             prio->type == STORE_COL_INT && prio->i >= 0 && prio->i <= 2 &&
             when->type == STORE_COL_INT && when->i <= STORE_RUN_AT_MAX &&
             ref_bytes(fn, max_func, 0) && fn->n > 0 &&
             ref_bytes(&cols[STORE_ROW_UNIQUE], STORE_UNIQUE_MAX, 0) &&
             ref_bytes(&cols[STORE_ROW_REDUCER], max_func, 0) &&
             ref_bytes(&cols[STORE_ROW_DATA], STORE_ROW_BYTES_MAX, 1);
    FUZZ_CHECK(ok == (why == NULL), "decoder says %s, reference says %s", why ? why : "ok",
               ok ? "ok" : "invalid");
    if (why != NULL) {
        FUZZ_CHECK(why[0] != '\0', "an empty reason");
    } else {
        FUZZ_CHECK(out.id == (uint64_t)id->i, "id");
        FUZZ_CHECK(out.prio == (int)prio->i, "prio");
        FUZZ_CHECK(out.when == (when->i > 0 ? when->i : 0), "run_at");
        FUZZ_CHECK(same_bytes(out.func, out.func_len, fn), "func");
        FUZZ_CHECK(same_bytes(out.unique, out.unique_len, &cols[STORE_ROW_UNIQUE]), "unique");
        FUZZ_CHECK(same_bytes(out.reducer, out.reducer_len, &cols[STORE_ROW_REDUCER]), "reducer");
        FUZZ_CHECK(same_bytes((const char *)out.data, out.data_len, &cols[STORE_ROW_DATA]), "data");
        /* everything the engine will read: ASan checks it is inside the columns */
        volatile unsigned sum = 0;
        for (size_t i = 0; i < out.func_len; i++)
            sum += (unsigned char)out.func[i];
        for (size_t i = 0; i < out.unique_len; i++)
            sum += (unsigned char)out.unique[i];
        for (size_t i = 0; i < out.reducer_len; i++)
            sum += (unsigned char)out.reducer[i];
        for (size_t i = 0; i < out.data_len; i++)
            sum += ((const unsigned char *)out.data)[i];
        (void)sum;
    }
    for (int k = 0; k < STORE_ROW_NCOLS; k++)
        free(owned[k]);
    return 0;
}

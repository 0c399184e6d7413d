/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_dump_line: libFuzzer target for the dump file's line parser (dumpfmt.h), which reads what
 * `spuradmin --load` and `spurd --load` are given. The input is one line. The target checks the
 * contract: a line that parses is written back by the writer, and that line parses to the same
 * content (bytes of every field kept exactly); a meta that parses is renumbered without harm. The
 * input is copied into a malloc of exactly its size, so ASan sees any read past it. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "dumpfmt.h"
#include "fuzz_util.h"

static int same(const void *a, size_t an, const void *b, size_t bn)
{
    return an == bn && (an == 0 || memcmp(a, b, an) == 0);
}

static void check_job(const struct dump_job *a, const struct dump_job *b)
{
    FUZZ_CHECK(a->id == b->id && a->prio == b->prio && a->when == b->when, "scalars differ");
    FUZZ_CHECK(same(a->func, a->func_len, b->func, b->func_len), "func differs");
    FUZZ_CHECK(same(a->unique, a->unique_len, b->unique, b->unique_len), "unique differs");
    FUZZ_CHECK(same(a->reducer, a->reducer_len, b->reducer, b->reducer_len), "reducer differs");
    FUZZ_CHECK(same(a->data, a->data_len, b->data, b->data_len), "payload differs");
    FUZZ_CHECK(same(a->meta, a->meta_len, b->meta, b->meta_len), "meta differs");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *line = malloc(size ? size : 1);
    if (line == NULL)
        return 0;
    memcpy(line, data, size);
    struct dump_line l;
    char err[256];
    if (dump_parse(line, size, &l, err, sizeof err) != 0) {
        FUZZ_CHECK(l.mem == NULL && err[0] != '\0', "a refused line leaves memory or no reason");
        free(line);
        return 0;
    }
    struct buf b = {0};
    if (l.type == DUMP_JOB) {
        FUZZ_CHECK(dump_write_job(&b, &l.job) == 0, "write failed");
        FUZZ_CHECK(buf_len(&b) <= dump_job_line_max(&l.job), "line longer than its bound");
        struct dump_line again;
        FUZZ_CHECK(dump_parse(buf_head(&b), buf_len(&b), &again, err, sizeof err) == 0,
                   "the written line does not parse: %s", err);
        check_job(&l.job, &again.job);
        if (l.job.meta_len > 0) {
            static const uint64_t olds[] = {1, 2, 3}, news[] = {7, 8, 9};
            char *m = NULL;
            size_t mn = 0;
            if (dump_meta_renumber(l.job.meta, l.job.meta_len, olds, news, 3, &m, &mn) == 0) {
                FUZZ_CHECK(m != NULL && mn == strlen(m), "renumbered meta");
                free(m);
            }
        }
        dump_line_free(&again);
    } else if (l.type == DUMP_RECORD) {
        FUZZ_CHECK(dump_write_record(&b, &l.rec) == 0, "write failed");
        struct dump_line again;
        FUZZ_CHECK(dump_parse(buf_head(&b), buf_len(&b), &again, err, sizeof err) == 0,
                   "the written record does not parse: %s", err);
        FUZZ_CHECK(again.rec.kind == l.rec.kind &&
                       same(again.rec.key, again.rec.key_len, l.rec.key, l.rec.key_len) &&
                       same(again.rec.value, again.rec.value_len, l.rec.value, l.rec.value_len),
                   "record differs");
        dump_line_free(&again);
    } else if (l.type == DUMP_END) {
        FUZZ_CHECK(dump_write_end(&b, l.njobs, l.nrecords) == 0, "write failed");
    }
    buf_free(&b);
    dump_line_free(&l);
    free(line);
    return 0;
}

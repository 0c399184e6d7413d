/* SPDX-License-Identifier: BSD-3-Clause */
/* dumpfmt: the dump file format (docs/BEYOND-GEARMAN.md "Dump and load"): one JSON object a line,
 * a header {"spur_dump":1,...}, job lines, record lines, and a trailer {"type":"end",...} that
 * counts them so a cut file is detected. Payloads and record values are base64; a function name,
 * unique or reducer is a JSON string when it is valid UTF-8 without NUL, else its "*_b64" twin.
 * Pure (libc, jansson, buf): the daemon, spuradmin, the unit tests and the fuzz target link it. */
#ifndef SPUR_DUMPFMT_H
#define SPUR_DUMPFMT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "buf.h"

#ifdef __cplusplus
extern "C" {
#endif

#define DUMP_VERSION 1
#define DUMP_META_MAX 65536  /* longest meta object text (STORE_META_MAX) */
#define DUMP_KEY_MAX 1024    /* longest record key */
#define DUMP_KINDS 8         /* record kinds 1..7 (STORE_REC_KINDS) */

/* struct dump_job is one job line's content; pointers are borrowed. */
struct dump_job {
    uint64_t id;          /* handle number on the server it came from */
    const char *func;
    size_t func_len;
    const char *unique;
    size_t unique_len;
    const char *reducer;
    size_t reducer_len;
    const void *data;
    size_t data_len;
    int prio;             /* 0 high, 1 normal, 2 low */
    int64_t when;         /* unix time it may run, 0 = now */
    const char *meta;     /* compact JSON object text, or empty */
    size_t meta_len;
};

/* struct dump_record is one record line's content; value NULL never occurs in a dump. */
struct dump_record {
    int kind;
    const char *key;
    size_t key_len;
    const void *value;
    size_t value_len;
};

/* dump_write_header / _job / _record / _end append one line (with its '\n') to b. Return 0, or
 * -1 when out of memory (b may hold part of a line: discard it). */
int dump_write_header(struct buf *b, int64_t created, const char *server);
int dump_write_job(struct buf *b, const struct dump_job *j);
int dump_write_record(struct buf *b, const struct dump_record *r);
int dump_write_end(struct buf *b, uint64_t jobs, uint64_t records);

/* dump_job_line_max is an upper bound of the bytes dump_write_job appends for j. */
size_t dump_job_line_max(const struct dump_job *j);

enum dump_type { DUMP_HEADER = 1, DUMP_JOB, DUMP_RECORD, DUMP_END };

/* struct dump_line is a parsed line. Its pointers point into mem (owned): dump_line_free. */
struct dump_line {
    enum dump_type type;
    int version;              /* DUMP_HEADER */
    struct dump_job job;      /* DUMP_JOB */
    struct dump_record rec;   /* DUMP_RECORD */
    uint64_t njobs, nrecords; /* DUMP_END */
    char *mem;
};

/* dump_parse parses line[0..len) (no newline needed; a trailing "\n" or "\r\n" is allowed) into
 * *out. Returns 0, or -1 with a reason in err (nothing to free). A line of an unknown "type" is
 * an error, as is any field of the wrong kind, bad base64, a priority other than high, normal or
 * low, a meta that is not an object or longer than DUMP_META_MAX, an empty key or one longer
 * than DUMP_KEY_MAX, a kind outside 1..DUMP_KINDS-1, or a header of another version. */
int dump_parse(const char *line, size_t len, struct dump_line *out, char *err, size_t errlen);
void dump_line_free(struct dump_line *l);

/* dump_verify_file reads the dump file f through (from where it is) and checks it: a header
 * line first, every line parses, the end line last with the counts of the lines before it.
 * Returns 0, or -1 with the line number and reason in err (a cut file: "cut short"). */
int dump_verify_file(FILE *f, char *err, size_t errlen);

/* struct dump_idmap maps a dump's handle numbers to the ones a load gave (olds ascending, as a
 * dump lists them). Zero-initialise; dump_idmap_free releases it. */
struct dump_idmap {
    uint64_t *olds, *news; /* n pairs old -> new */
    size_t n, cap;
};

/* dump_idmap_add records old -> nw. An old id not above the last one is ignored (a dump lists
 * ids ascending: an out-of-order one is not renumbered). Returns 0, or -1 when out of memory. */
int dump_idmap_add(struct dump_idmap *m, uint64_t old, uint64_t nw);
void dump_idmap_free(struct dump_idmap *m);

/* dump_meta_renumber rewrites meta's "after" array of handle numbers through map (old ids
 * olds[i] -> news[i], olds ascending, n pairs): an id not in map is dropped (the job it waited
 * for was gone when the dump was taken). Writes the compact result into *out (malloc'd, caller
 * frees) and its length into *outlen; a meta without "after" is copied. Returns 0, or -1 (bad
 * meta, or no memory). */
int dump_meta_renumber(const char *meta, size_t len, const uint64_t *olds, const uint64_t *news,
                       size_t n, char **out, size_t *outlen);

/* base64 (RFC 4648, with padding). dump_b64_len is the encoded length of n bytes. */
size_t dump_b64_len(size_t n);
void dump_b64_encode(const void *in, size_t n, char *out);
/* dump_b64_decode decodes in[0..n) into out (at least n / 4 * 3 bytes); returns the length, or
 * -1 when in is not canonical padded base64. */
long dump_b64_decode(const char *in, size_t n, void *out);

#ifdef __cplusplus
}
#endif
#endif

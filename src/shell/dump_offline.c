/* SPDX-License-Identifier: BSD-3-Clause */
/* dump_offline: the stopped-store dump and load (see dump_offline.h). */
#include "dump_offline.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "config.h"
#include "dump.h"
#include "dumpfmt.h"
#include "hmap.h"
#include "store_backend.h"
#include "store_batch.h"

/* open_store opens the store c describes; NULL (message on stderr) when it cannot. */
static void *open_store(const struct config *c, const struct store_backend **bp, uint64_t *next_id,
                        const char **shown)
{
    struct store_params p;
    const struct store_backend *b = store_backend_params(c, &p);
    if (shown != NULL && b != NULL)
        *shown = p.shown != NULL ? p.shown : c->store; /* no password */
    if (b == NULL) {
        fprintf(stderr, "spurd: --dump and --load need a store (--store=sqlite:PATH or "
                        "--store=postgres:CONNINFO)\n");
        return NULL;
    }
    char err[512] = "";
    void *db = b->open(&p, next_id, err, sizeof err);
    if (db == NULL)
        fprintf(stderr, "spurd: cannot open the %s store: %s\n", b->name, err);
    *bp = b;
    return db;
}

/* ------------------------------------------------------------ dump */

/* struct dump_ctx is a dump being written. */
struct dump_ctx {
    FILE *f;          /* the dump file (or stdout) */
    struct buf b;     /* lines not yet written to f */
    uint64_t jobs;    /* job lines written */
    uint64_t records; /* record lines written */
    int failed;       /* out of memory or a write error */
};

/* flush writes what ctx's buffer holds to its file. */
static int flush(struct dump_ctx *x)
{
    size_t n = buf_len(&x->b);
    if (n > 0 && fwrite(buf_head(&x->b), 1, n, x->f) != n)
        x->failed = 1;
    buf_consume(&x->b, n);
    return x->failed ? -1 : 0;
}

/* dump_rec_cb writes one stored job's line. */
static int dump_rec_cb(void *ctx, const struct store_rec *r)
{
    struct dump_ctx *x = ctx;
    struct dump_job d = {
        .id = r->id, .func = r->func, .func_len = r->func_len, .unique = r->unique,
        .unique_len = r->unique_len, .reducer = r->reducer, .reducer_len = r->reducer_len,
        .data = r->data, .data_len = r->data_len, .prio = r->prio, .when = r->when,
        .meta = r->meta, .meta_len = r->meta != NULL ? r->meta_len : 0,
    };
    if (dump_write_job(&x->b, &d) != 0) {
        x->failed = 1;
        return -1;
    }
    x->jobs++;
    return buf_len(&x->b) > (1u << 20) ? flush(x) : 0;
}

/* dump_record_cb writes one stored record's line. */
static int dump_record_cb(void *ctx, const struct store_record *r)
{
    struct dump_ctx *x = ctx;
    struct dump_record d = {r->kind, r->key, r->key_len, r->value, r->value_len};
    if (r->value == NULL)
        return 0;
    if (dump_write_record(&x->b, &d) != 0) {
        x->failed = 1;
        return -1;
    }
    x->records++;
    return 0;
}

int dump_offline_dump(const struct config *c, const char *path)
{
    const struct store_backend *b;
    uint64_t next_id = 1;
    const char *shown = "";
    void *db = open_store(c, &b, &next_id, &shown);
    if (db == NULL)
        return -1;
    struct dump_ctx x = {0};
    int to_stdout = strcmp(path, "-") == 0;
    x.f = to_stdout ? stdout : fopen(path, "wb");
    if (x.f == NULL) {
        fprintf(stderr, "spurd: cannot write %s: %s\n", path, strerror(errno));
        b->close(db);
        return -1;
    }
    int rc = dump_write_header(&x.b, (int64_t)time(NULL), shown ? shown : "") == 0 ? 0 : -1;
    if (rc == 0 && (b->replay_records(db, dump_record_cb, &x) != 0 ||
                    b->replay(db, dump_rec_cb, &x) != 0)) {
        fprintf(stderr, "spurd: reading the store failed: %s\n",
                x.failed ? "out of memory or write error" : b->error(db));
        rc = -1;
    }
    if (rc == 0 && (dump_write_end(&x.b, x.jobs, x.records) != 0 || flush(&x) != 0))
        rc = -1;
    if ((to_stdout ? fflush(x.f) : fclose(x.f)) != 0 || x.failed) {
        if (rc == 0)
            fprintf(stderr, "spurd: writing %s failed: %s\n", path, strerror(errno));
        rc = -1;
    }
    buf_free(&x.b);
    b->close(db);
    if (rc == 0)
        fprintf(stderr, "spurd: dumped %llu jobs and %llu records to %s\n",
                (unsigned long long)x.jobs, (unsigned long long)x.records, path);
    return rc;
}

/* ------------------------------------------------------------ load */

#define LOAD_BATCH_BYTES (64u << 20) /* a load writes a transaction per this many bytes */

/* struct ukey is a function + unique already in the store or the file (coalescing). */
struct ukey {
    size_t flen, ulen; /* the lengths of the function name and the unique */
    char b[];          /* the function name, then the unique */
};

static uint64_t ukey_hash(const char *f, size_t flen, const char *u, size_t ulen)
{
    return hmap_hash_bytes(u, ulen, hmap_hash_bytes(f, flen, 0x5eed));
}

/* struct load_ctx is a load under way. */
struct load_ctx {
    const struct config *c;         /* the configuration (the limits a job must respect) */
    const struct store_backend *b;  /* the store's backend */
    void *db;                       /* the open store */
    uint64_t next_id;               /* the handle number the next loaded job gets */
    struct hmap keys;               /* struct ukey: function + unique stored or loaded */
    struct dump_idmap map;          /* the file's handle numbers -> the loaded ones */
    struct store_queue q;           /* what the next transaction writes */
    size_t pending;                 /* payload bytes in q */
    uint64_t loaded, skipped, failed, records; /* the summary line's counts */
};

/* seen reports whether func+unique is a key of x, adding it when not. An empty unique never
 * matches. Returns 1 seen, 0 not, -1 no memory. */
static int seen(struct load_ctx *x, const char *f, size_t flen, const char *u, size_t ulen)
{
    if (ulen == 0)
        return 0;
    uint64_t h = ukey_hash(f, flen, u, ulen);
    struct hmap_probe pr;
    for (struct ukey *k = hmap_first(&x->keys, h, &pr); k != NULL; k = hmap_next(&pr))
        if (k->flen == flen && k->ulen == ulen && memcmp(k->b, f, flen) == 0 &&
            memcmp(k->b + flen, u, ulen) == 0)
            return 1;
    struct ukey *k = malloc(sizeof *k + flen + ulen);
    if (k == NULL)
        return -1;
    k->flen = flen;
    k->ulen = ulen;
    memcpy(k->b, f, flen);
    memcpy(k->b + flen, u, ulen);
    if (hmap_insert(&x->keys, k, h) != 0) {
        free(k);
        return -1;
    }
    return 0;
}

/* load_rec_cb notes the function + unique of a job already stored. */
static int load_rec_cb(void *ctx, const struct store_rec *r)
{
    struct load_ctx *x = ctx;
    return seen(x, r->func, r->func_len, r->unique, r->unique_len) < 0 ? -1 : 0;
}

/* open_dump opens the dump file path ("-": a copy of stdin, which is read twice) and checks it
 * whole. Returns it rewound, or NULL with a message on stderr. */
static FILE *open_dump(const char *path)
{
    int from_stdin = strcmp(path, "-") == 0;
    FILE *f = from_stdin ? tmpfile() : fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "spurd: cannot read %s: %s\n", path, strerror(errno));
        return NULL;
    }
    if (from_stdin) {
        char blk[65536];
        size_t n;
        while ((n = fread(blk, 1, sizeof blk, stdin)) > 0)
            if (fwrite(blk, 1, n, f) != n) {
                fprintf(stderr, "spurd: cannot copy stdin: %s\n", strerror(errno));
                fclose(f);
                return NULL;
            }
        rewind(f);
    }
    char why[512];
    if (dump_verify_file(f, why, sizeof why) != 0) {
        fprintf(stderr, "spurd: %s: %s\n", path, why);
        fclose(f);
        return NULL;
    }
    rewind(f);
    return f;
}

/* load_job queues the job of a dump line, unless its function + unique is there (skipped) or a
 * submit would refuse it (reported, failed). Returns 0, or -1 to stop the load. */
static int load_job(struct load_ctx *x, const struct dump_job *d)
{
    int s = seen(x, d->func, d->func_len, d->unique, d->unique_len);
    if (s != 0) {
        x->skipped += s == 1;
        return s < 0 ? -1 : 0;
    }
    struct store_rec r = {
        .id = x->next_id++, .func = d->func, .func_len = d->func_len, .unique = d->unique,
        .unique_len = d->unique_len, .reducer = d->reducer, .reducer_len = d->reducer_len,
        .data = d->data, .data_len = d->data_len, .prio = d->prio, .when = d->when,
    };
    char *meta = NULL;
    if (d->meta_len > 0 && dump_meta_renumber(d->meta, d->meta_len, x->map.olds, x->map.news,
                                              x->map.n, &meta, &r.meta_len) != 0) {
        fprintf(stderr, "spurd: job %llu: its meta is not a JSON object\n",
                (unsigned long long)d->id);
        free(meta);
        return -1;
    }
    r.meta = meta;
    int rc = 0;
    const char *bad = dump_job_invalid(x->c, d);
    if (bad != NULL) {
        fprintf(stderr, "spurd: job %llu not loaded: %s\n", (unsigned long long)d->id, bad);
        x->failed++;
    } else if (dump_idmap_add(&x->map, d->id, r.id) != 0 || store_queue_add(&x->q, &r) != 0) {
        rc = -1;
    } else {
        x->loaded++;
        x->pending += d->data_len + d->func_len + d->unique_len + r.meta_len;
    }
    free(meta);
    return rc;
}

/* load_write writes the queued transaction (final: the last one). Returns 0, or -1 with a
 * message on stderr. */
static int load_write(struct load_ctx *x, int final)
{
    struct store_batch *sb = final ? store_queue_take_final(&x->q) : store_queue_take(&x->q);
    int rc = 0;
    if (sb != NULL && x->b->write_batch(x->db, sb) != 0) {
        fprintf(stderr, "spurd: writing the store failed: %s\n", store_batch_error(sb));
        rc = -1;
    }
    store_batch_free(sb);
    x->pending = 0;
    return rc;
}

/* load_lines loads every line of f into x's store. Returns 0, or -1 with a message on stderr
 * (or none, when out of memory). */
static int load_lines(struct load_ctx *x, FILE *f, const char *path)
{
    size_t cap = 0;
    char *line = NULL, err[256];
    ssize_t n;
    int rc = 0;
    while (rc == 0 && (n = getline(&line, &cap, f)) >= 0) {
        struct dump_line l;
        if (dump_parse(line, (size_t)n, &l, err, sizeof err) != 0) {
            rc = -1; /* verified a moment ago: the file changed */
            fprintf(stderr, "spurd: %s changed while loading: %s\n", path, err);
            break;
        }
        if (l.type == DUMP_RECORD) {
            struct store_record r = {l.rec.kind, l.rec.key, l.rec.key_len, l.rec.value,
                                     l.rec.value_len};
            if (store_queue_record(&x->q, &r) != 0)
                rc = -1;
            else
                x->records++;
        } else if (l.type == DUMP_JOB) {
            rc = load_job(x, &l.job);
        }
        dump_line_free(&l);
        if (rc == 0 && x->pending > LOAD_BATCH_BYTES)
            rc = load_write(x, 0);
    }
    free(line);
    return rc == 0 ? load_write(x, 1) : rc;
}

int dump_offline_load(const struct config *c, const char *path)
{
    FILE *f = open_dump(path);
    if (f == NULL)
        return -1;
    struct load_ctx x = {.c = c, .next_id = 1};
    x.db = open_store(c, &x.b, &x.next_id, NULL);
    if (x.db == NULL) {
        fclose(f);
        return -1;
    }
    hmap_init(&x.keys);
    int rc = 0;
    if (x.b->replay(x.db, load_rec_cb, &x) != 0) {
        fprintf(stderr, "spurd: reading the store failed: %s\n", x.b->error(x.db));
        rc = -1;
    }
    if (rc == 0)
        rc = load_lines(&x, f, path);
    store_queue_clear(&x.q);
    dump_idmap_free(&x.map);
    struct hmap_iter it;
    hmap_iter_init(&it, &x.keys);
    for (void *k; (k = hmap_iter_next(&it)) != NULL;)
        free(k);
    hmap_free(&x.keys);
    x.b->close(x.db);
    fclose(f);
    if (rc == 0)
        printf("loaded %llu jobs, skipped %llu (unique already there), failed %llu, %llu records\n",
               (unsigned long long)x.loaded, (unsigned long long)x.skipped,
               (unsigned long long)x.failed, (unsigned long long)x.records);
    if (rc != 0)
        fprintf(stderr, "spurd: load failed\n");
    return rc == 0 && x.failed == 0 ? 0 : -1;
}

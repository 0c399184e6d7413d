/* SPDX-License-Identifier: BSD-3-Clause */
/* dump: jobs and records as dump lines; the stopped-store dump and load (see dump.h). */
#include "dump.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "dumpfmt.h"
#include "engine.h"
#include "func.h"
#include "hmap.h"
#include "job.h"
#include "proto.h"
#include "store.h"
#include "submit.h"
#include "store_backend.h"

int dump_dumped(const struct job *j)
{
    return j->state != JOB_MARKER && (j->flags & (JOB_BACKGROUND | JOB_EXT));
}

int dump_job_append(const struct engine *e, const struct job *j, struct buf *b)
{
    struct dump_job d = {0};
    d.id = j->id;
    d.func = j->func->name;
    d.func_len = j->func->name_len;
    d.unique = job_unique(j);
    d.unique_len = j->unique_len;
    d.reducer = job_reducer(j);
    d.reducer_len = j->reducer_len;
    d.data = job_payload(j);
    d.data_len = job_payload_len(j);
    d.prio = j->prio;
    if (j->state == JOB_FUTURE && j->timer != HEAP_NONE)
        d.when = (int64_t)e->timers.a[j->timer].at;
    char *meta = NULL;
    if ((j->flags & JOB_EXT) && e->ext.job_meta != NULL) {
        if ((meta = malloc(STORE_META_MAX)) == NULL)
            return -1;
        d.meta = meta;
        d.meta_len = e->ext.job_meta(e, j, meta, STORE_META_MAX);
        if (d.meta_len > STORE_META_MAX)
            d.meta_len = 0;
    }
    int rc = dump_write_job(b, &d);
    free(meta);
    return rc;
}

struct rec_ctx {
    struct buf *b;
    uint64_t n;
    int failed;
};

static void rec_cb(void *ctx, const struct store_record *r)
{
    struct rec_ctx *x = ctx;
    struct dump_record d = {r->kind, r->key, r->key_len, r->value, r->value_len};
    if (r->value == NULL)
        return;
    if (dump_write_record(x->b, &d) != 0)
        x->failed = 1;
    else
        x->n++;
}

int dump_records_append(const struct engine *e, struct buf *b, uint64_t *n)
{
    struct rec_ctx x = {b, 0, 0};
    for (int k = 1; k < STORE_REC_KINDS; k++)
        if (e->ext.record_each[k] != NULL)
            e->ext.record_each[k](e, rec_cb, &x);
    *n = x.n;
    return x.failed ? -1 : 0;
}

/* job_invalid returns why d cannot be a job under configuration c, or NULL: what a submit
 * refuses, so that no loaded job is one a replay would set aside. */
static const char *job_invalid(const struct config *c, const struct dump_job *d)
{
    if (d->func_len == 0 || d->func_len > c->max_function)
        return "function name empty or longer than --max-function-name";
    if (!func_name_ok(d->func, d->func_len))
        return "function name has a NUL byte";
    if (d->unique_len > PROTO_UNIQUE_MAX)
        return "unique longer than 64 bytes";
    if (d->reducer_len > c->max_function)
        return "reducer name longer than --max-function-name";
    if (d->data_len > c->max_packet)
        return "payload larger than --max-packet-size";
    return NULL;
}

/* reply_err writes "ERR CODE text\r\n" into out, text with its spaces as '+'. */
static void reply_err(char *out, size_t cap, const char *code, const char *text)
{
    int n = snprintf(out, cap, "ERR %s ", code);
    size_t i = n > 0 ? (size_t)n : 0;
    for (; *text != '\0' && i + 3 < cap; text++)
        out[i++] = *text == ' ' ? '+' : (*text == '\r' || *text == '\n' ? '.' : *text);
    snprintf(out + i, cap - i, "\r\n");
}

/* load_record applies and stores a record of a `load` line. */
static void load_record(struct engine *e, const struct dump_record *d, char *out, size_t cap)
{
    struct store_record r = {d->kind, d->key, d->key_len, d->value, d->value_len};
    char why[256] = "";
    if (e->ext.record_restored[d->kind] == NULL) {
        reply_err(out, cap, "UNKNOWN_KIND", "no feature of this server reads this kind");
    } else if (e->ext.record_restored[d->kind](e, &r, why, sizeof why) != 0) {
        reply_err(out, cap, "BAD_RECORD", why[0] ? why : "refused");
    } else if (store_record_put(e, d->kind, d->key, d->key_len, d->value, d->value_len) != 0) {
        reply_err(out, cap, "QUEUE_ERROR", "could not store the record");
    } else {
        snprintf(out, cap, "OK\r\n");
    }
}

/* load_job creates the job of a `load` line (see dump.h). */
static void load_job(struct engine *e, const struct dump_job *d, char *out, size_t cap)
{
    const char *why = job_invalid(e->cfg, d);
    if (why != NULL) {
        reply_err(out, cap, "INVALID_JOB", why);
        return;
    }
    /* a new job is left in limbo, without maxqueue: it is stored and placed as it was dumped;
     * a job that is there is left as it is */
    struct submit_req rq = {.func = d->func, .func_len = d->func_len, .unique = d->unique,
                            .unique_len = d->unique_len, .reducer = d->reducer,
                            .reducer_len = d->reducer_len, .data = d->data,
                            .data_len = d->data_len, .prio = (enum job_prio)d->prio,
                            .background = 1, .log = "loaded",
                            .flags = SUBMIT_NO_MAXQUEUE | SUBMIT_LIMBO | SUBMIT_JOIN_AS_IS};
    struct submit_out so;
    enum submit_result res = job_submit(e, &rq, &so);
    struct job *j = so.job;
    if (res == SUBMIT_JOINED) {
        snprintf(out, cap, "OK EXISTS %llu\r\n", (unsigned long long)j->id);
        return;
    }
    if (res == SUBMIT_TOO_MANY_FUNCTIONS) {
        reply_err(out, cap, "TOO_MANY_FUNCTIONS", "function limit reached (--max-functions)");
        return;
    }
    if (res != SUBMIT_CREATED) { /* a bad name was refused by job_invalid */
        reply_err(out, cap, "MEMORY_ALLOCATION_FAILURE", "out of memory");
        return;
    }
    double when = (double)d->when;
    if (e->store_mgr != NULL) {
        /* stored as it is, in the next batch, whoever takes it below */
        j->flags |= JOB_STORED;
        if (store_update(e, j, when, d->meta_len ? d->meta : NULL, d->meta_len) != 0) {
            job_free(e, j);
            reply_err(out, cap, "QUEUE_ERROR", "could not store the job");
            return;
        }
    }
    uint64_t id = j->id;
    if (d->meta_len == 0 || e->ext.job_restored == NULL ||
        !e->ext.job_restored(e, j, d->meta, d->meta_len, when)) {
        if (when <= engine_now(e) || job_defer(e, j, when) != 0)
            func_push(e, j, 0);
    }
    engine_drain_ready(e); /* a sleeping worker of its function hears of it now */
    snprintf(out, cap, "OK H %llu\r\n", (unsigned long long)id);
}

void dump_load_line(struct engine *e, const char *line, size_t len, char *out, size_t cap)
{
    struct dump_line l;
    char why[256];
    if (e->replaying) {
        reply_err(out, cap, "BUSY", "the store is still being replayed");
        return;
    }
    if (dump_parse(line, len, &l, why, sizeof why) != 0) {
        reply_err(out, cap, "BAD_LINE", why);
        return;
    }
    if (l.type == DUMP_RECORD)
        load_record(e, &l.rec, out, cap);
    else if (l.type == DUMP_JOB)
        load_job(e, &l.job, out, cap);
    else
        snprintf(out, cap, "OK\r\n"); /* a header or end line: nothing to do */
    dump_line_free(&l);
}

/* ------------------------------------------------------------ stopped store */

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

struct dump_ctx {
    FILE *f;
    struct buf b;
    uint64_t jobs, records;
    int failed;
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

int dump_offline(const struct config *c, const char *path)
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

/* struct ukey is a function + unique already in the store or the file (coalescing). */
struct ukey {
    size_t flen, ulen;
    char b[];
};

static uint64_t ukey_hash(const char *f, size_t flen, const char *u, size_t ulen)
{
    return hmap_hash_bytes(u, ulen, hmap_hash_bytes(f, flen, 0x5eed));
}

struct load_ctx {
    struct hmap keys;
    int failed;
};

/* seen reports whether func+unique is a key of x, adding it when not (add = 1). An empty unique
 * never matches. Returns 1 seen, 0 not, -1 no memory. */
static int seen(struct load_ctx *x, const char *f, size_t flen, const char *u, size_t ulen, int add)
{
    if (ulen == 0)
        return 0;
    uint64_t h = ukey_hash(f, flen, u, ulen);
    struct hmap_probe pr;
    for (struct ukey *k = hmap_first(&x->keys, h, &pr); k != NULL; k = hmap_next(&pr))
        if (k->flen == flen && k->ulen == ulen && memcmp(k->b, f, flen) == 0 &&
            memcmp(k->b + flen, u, ulen) == 0)
            return 1;
    if (!add)
        return 0;
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

static int load_rec_cb(void *ctx, const struct store_rec *r)
{
    struct load_ctx *x = ctx;
    return seen(x, r->func, r->func_len, r->unique, r->unique_len, 1) < 0 ? -1 : 0;
}

/* read_line reads one line of f into *line (grown with getline); returns its length, or -1 at
 * the end. */
static long read_line(FILE *f, char **line, size_t *cap)
{
    ssize_t n = getline(line, cap, f);
    return n < 0 ? -1 : (long)n;
}


#define LOAD_BATCH_BYTES (64u << 20) /* a load writes a transaction per this many bytes */

int load_offline(const struct config *c, const char *path)
{
    FILE *f = strcmp(path, "-") == 0 ? tmpfile() : fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "spurd: cannot read %s: %s\n", path, strerror(errno));
        return -1;
    }
    if (strcmp(path, "-") == 0) { /* stdin is read twice: keep a copy */
        char blk[65536];
        size_t n;
        while ((n = fread(blk, 1, sizeof blk, stdin)) > 0)
            if (fwrite(blk, 1, n, f) != n) {
                fprintf(stderr, "spurd: cannot copy stdin: %s\n", strerror(errno));
                fclose(f);
                return -1;
            }
        rewind(f);
    }
    char why[512];
    if (dump_verify_file(f, why, sizeof why) != 0) {
        fprintf(stderr, "spurd: %s: %s\n", path, why);
        fclose(f);
        return -1;
    }
    rewind(f);
    const struct store_backend *b;
    uint64_t next_id = 1;
    void *db = open_store(c, &b, &next_id, NULL);
    if (db == NULL) {
        fclose(f);
        return -1;
    }
    struct load_ctx x = {0};
    hmap_init(&x.keys);
    int rc = 0;
    if (b->replay(db, load_rec_cb, &x) != 0) {
        fprintf(stderr, "spurd: reading the store failed: %s\n", b->error(db));
        rc = -1;
    }
    struct dump_idmap map = {0};
    struct store_queue q = {0};
    uint64_t loaded = 0, skipped = 0, failed = 0, records = 0;
    size_t pending = 0, cap = 0;
    char *line = NULL, err[256];
    long n;
    while (rc == 0 && (n = read_line(f, &line, &cap)) >= 0) {
        struct dump_line l;
        if (dump_parse(line, (size_t)n, &l, err, sizeof err) != 0) {
            rc = -1; /* verified a moment ago: the file changed */
            fprintf(stderr, "spurd: %s changed while loading: %s\n", path, err);
            break;
        }
        if (l.type == DUMP_RECORD) {
            struct store_record r = {l.rec.kind, l.rec.key, l.rec.key_len, l.rec.value,
                                     l.rec.value_len};
            if (store_queue_record(&q, &r) != 0)
                rc = -1;
            else
                records++;
        } else if (l.type == DUMP_JOB) {
            const struct dump_job *d = &l.job;
            int s = seen(&x, d->func, d->func_len, d->unique, d->unique_len, 1);
            if (s < 0) {
                rc = -1;
            } else if (s == 1) {
                skipped++;
            } else {
                struct store_rec r = {
                    .id = next_id++, .func = d->func, .func_len = d->func_len,
                    .unique = d->unique, .unique_len = d->unique_len, .reducer = d->reducer,
                    .reducer_len = d->reducer_len, .data = d->data, .data_len = d->data_len,
                    .prio = d->prio, .when = d->when,
                };
                char *meta = NULL;
                size_t mlen = 0;
                if (d->meta_len > 0 && dump_meta_renumber(d->meta, d->meta_len, map.olds,
                                                          map.news, map.n, &meta, &mlen) != 0) {
                    fprintf(stderr, "spurd: job %llu: its meta is not a JSON object\n",
                            (unsigned long long)d->id);
                    rc = -1;
                }
                r.meta = meta;
                r.meta_len = mlen;
                const char *bad = job_invalid(c, d);
                if (rc != 0) {
                    /* reported */
                } else if (bad != NULL) {
                    fprintf(stderr, "spurd: job %llu not loaded: %s\n", (unsigned long long)d->id,
                            bad);
                    failed++;
                } else if (dump_idmap_add(&map, d->id, r.id) != 0 || store_queue_add(&q, &r) != 0) {
                    rc = -1;
                } else {
                    loaded++;
                    pending += d->data_len + d->func_len + d->unique_len + mlen;
                }
                free(meta);
            }
        }
        dump_line_free(&l);
        if (rc == 0 && pending > LOAD_BATCH_BYTES) {
            struct store_batch *sb = store_queue_take(&q);
            if (sb != NULL && b->write_batch(db, sb) != 0) {
                fprintf(stderr, "spurd: writing the store failed: %s\n", store_batch_error(sb));
                rc = -1;
            }
            store_batch_free(sb);
            pending = 0;
        }
    }
    if (rc == 0) {
        struct store_batch *sb = store_queue_take_final(&q);
        if (sb != NULL && b->write_batch(db, sb) != 0) {
            fprintf(stderr, "spurd: writing the store failed: %s\n", store_batch_error(sb));
            rc = -1;
        }
        store_batch_free(sb);
    }
    store_queue_clear(&q);
    free(line);
    dump_idmap_free(&map);
    struct hmap_iter it;
    hmap_iter_init(&it, &x.keys);
    for (void *k; (k = hmap_iter_next(&it)) != NULL;)
        free(k);
    hmap_free(&x.keys);
    b->close(db);
    fclose(f);
    if (rc == 0)
        printf("loaded %llu jobs, skipped %llu (unique already there), failed %llu, %llu records\n",
               (unsigned long long)loaded, (unsigned long long)skipped,
               (unsigned long long)failed, (unsigned long long)records);
    if (rc != 0)
        fprintf(stderr, "spurd: load failed\n");
    return rc == 0 && failed == 0 ? 0 : -1;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* dump: jobs and records as dump lines, and the admin `load` line (see dump.h). */
#include "dump.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "config.h"
#include "dumpfmt.h"
#include "engine.h"
#include "func.h"
#include "job.h"
#include "proto.h"
#include "store.h"
#include "store_batch.h"
#include "submit.h"

int dump_dumped(const struct job *j)
{
    return (j->flags & (JOB_BACKGROUND | JOB_EXT));
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
    if ((j->flags & (JOB_EXT | JOB_LIFE)) && e->ext.job_meta != NULL) {
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

const char *dump_job_invalid(const struct config *c, const struct dump_job *d)
{
    return job_invalid(c, d);
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
    if (res == SUBMIT_BROADCAST) { /* a broadcast function's: fanned out, nothing to place */
        snprintf(out, cap, "OK H %llu\r\n", (unsigned long long)so.id);
        return;
    }
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

/* ------------------------------------------------------------ admin commands */

/* listing_head writes a dump's header and its record lines (few: schedules and retry
 * policies), counting the records in *records. */
static int listing_head(struct engine *e, struct buf *b, uint64_t *records)
{
    const char *server = e->cfg->server_id ? e->cfg->server_id : e->prefix;
    if (dump_write_header(b, (int64_t)engine_now(e), server) != 0)
        return -1;
    return dump_records_append(e, b, records);
}

/* dump_listing is the `dump` listing's lines, written by admin.c a slice at a time. */
static const struct admin_job_listing dump_listing = {listing_head, dump_dumped, dump_job_append,
                                                      dump_write_end};

/* admin_dump: 'dump' streams the dump lines (docs/BEYOND-GEARMAN.md), then a line "."; 'dump
 * next-id' answers "OK N", the handle number the next new job gets (spuradmin --load tells a job
 * it created from one that existed before). */
static void admin_dump(struct peer *p, const struct pa_token *t, size_t n)
{
    if (n == 1)
        admin_list_jobs(p, &dump_listing);
    else if (n == 2 && pa_token_is(&t[1], "next-id"))
        peer_printf(p, "OK %llu\n", (unsigned long long)p->eng->next_id);
    else {
        static const char usage[] = "ERR UNKNOWN_ARGS Usage:+dump+[next-id]\r\n";
        peer_write(p, usage, sizeof usage - 1);
    }
}

/* admin_load: 'load LINE', one dump line (spuradmin --load sends records and jobs with meta so).
 * The JSON has spaces of its own: the rest of the line is taken whole, not split. */
static void admin_load(struct peer *p, const char *line, size_t len)
{
    char out[512];
    dump_load_line(p->eng, line + 5, len - 5, out, sizeof out);
    peer_write(p, out, strlen(out));
}

/* dump_cmds are the admin commands of dump and load. */
static const struct admin_cmd dump_cmds[] = {
    {"dump", ADM_CHANGES, admin_dump, NULL}, /* reads every payload: as sensitive as a change */
    {"load", ADM_CHANGES | ADM_LINE, NULL, admin_load},
    {NULL, 0, NULL, NULL},
};

int dump_admin_register(struct engine *e) { return admin_register(e, dump_cmds); }

/* SPDX-License-Identifier: BSD-3-Clause */
/* jobx_store: jobx's state in the durable store (jobx_store.h). */
#include "jobx_store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "func.h"
#include "job.h"
#include "jobx.h"
#include "log.h"
#include "meta_text.h"
#include "store.h"
#include "store_batch.h"

/* ------------------------------------------------------------ meta */

/* waiting_meta writes the meta of waiting job j (record r): its state and the handle numbers it
 * still waits for. Returns its length, 0 when cap is too small. */
static size_t waiting_meta(const struct jobx_rec *r, char *out, size_t cap)
{
    int n = snprintf(out, cap, "{\"state\":\"waiting\",\"after\":[");
    size_t k = n > 0 ? (size_t)n : 0;
    const char *sep = "";
    for (uint16_t i = 0; i < r->nedges && k < cap; i++) {
        if (r->edges[i].pre == NULL)
            continue; /* completed */
        n = snprintf(out + k, cap - k, "%s%llu", sep, (unsigned long long)r->edges[i].pre->id);
        k += n > 0 ? (size_t)n : 0;
        sep = ",";
    }
    if (k + 2 >= cap)
        return 0;
    out[k++] = ']';
    out[k++] = '}';
    return k;
}

size_t jobx_meta_write(const struct engine *e, const struct job *j, char *out, size_t cap)
{
    const struct jobx_rec *r = jobx_rec_of(e, j);
    if (r != NULL && j->state == JOB_WAITING)
        return waiting_meta(r, out, cap);
    if (r == NULL || (r->attempts == 0 && j->state != JOB_FAILED))
        return 0;
    int n = snprintf(out, cap,
                     "{\"state\":\"%s\",\"attempts\":%u,\"first_at\":%.3f,\"last_at\":%.3f,"
                     "\"error\":\"",
                     j->state == JOB_FAILED ? "failed" : "retrying", r->attempts, r->first_failed,
                     r->last_failed);
    if (n < 0 || (size_t)n >= cap)
        return 0;
    size_t k = (size_t)n, el;
    char eb[JOBX_ERROR_BUF];
    const char *et = jobx_error(e, r, eb, &el);
    for (size_t i = 0; i < el; i++) {
        unsigned char c = (unsigned char)et[i];
        /* every byte that is not printable ASCII, and the quote and backslash, as \u00XX: the
         * text stays one valid JSON (and UTF-8) string whatever the worker sent */
        if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\') {
            if (k + 6 >= cap)
                return 0;
            snprintf(out + k, cap - k, "\\u%04x", c);
            k += 6;
        } else {
            if (k + 1 >= cap)
                return 0;
            out[k++] = (char)c;
        }
    }
    if (k + 2 >= cap)
        return 0;
    out[k++] = '"';
    out[k++] = '}';
    return k;
}

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* string decodes the JSON string at p (its opening quote) into out (cap bytes); returns its
 * length. \u escapes below 0x100 give that byte, others '?'. */
static size_t string(const char *p, const char *end, char *out, size_t cap)
{
    size_t n = 0;
    if (p >= end || *p != '"')
        return 0;
    for (p++; p < end && *p != '"' && n < cap; p++) {
        char c = *p;
        if (c == '\\' && p + 1 < end) {
            c = *++p;
            if (c == 'n') c = '\n';
            else if (c == 't') c = '\t';
            else if (c == 'r') c = '\r';
            else if (c == 'b') c = '\b';
            else if (c == 'f') c = '\f';
            else if (c == 'u' && p + 4 < end) {
                int v = 0;
                for (int i = 1; i <= 4; i++) {
                    int h = hexval(p[i]);
                    v = h < 0 ? 0x10000 : v * 16 + h;
                }
                c = v < 0x100 ? (char)v : '?';
                p += 4;
            }
        }
        out[n++] = c;
    }
    return n;
}

int jobx_meta_read(const char *meta, size_t len, int *failed, uint32_t *attempts,
                   double *first_at, double *last_at, char *err, size_t cap, size_t *errlen)
{
    const char *end = meta + len, *p;
    char st[16];
    if ((p = meta_find(meta, len, "state")) == NULL)
        return -1;
    size_t sl = string(p, end, st, sizeof st);
    if (sl == 6 && memcmp(st, "failed", 6) == 0)
        *failed = 1;
    else if (sl == 8 && memcmp(st, "retrying", 8) == 0)
        *failed = 0;
    else
        return -1;
    double a = (p = meta_find(meta, len, "attempts")) != NULL ? meta_number(p, end) : 0;
    *attempts = a > 0 && a < 4e9 ? (uint32_t)a : 0;
    *first_at = (p = meta_find(meta, len, "first_at")) != NULL ? meta_number(p, end) : 0;
    *last_at = (p = meta_find(meta, len, "last_at")) != NULL ? meta_number(p, end) : 0;
    *errlen = (p = meta_find(meta, len, "error")) != NULL ? string(p, end, err, cap) : 0;
    return 0;
}

/* ------------------------------------------------------------ hooks */

static void persist(struct engine *e, struct job *j, double due)
{
    char meta[JOBX_ERROR_MAX * 6 + 256];
    /* through the hook: a feature that wraps it (lifetime.h) keeps its keys in the row */
    size_t n = e->ext.job_meta != NULL ? e->ext.job_meta(e, j, meta, sizeof meta) : 0;
    if (store_update(e, j, due, n ? meta : NULL, n) != 0)
        log_error("store: out of memory recording the retry state of job %llu",
                  (unsigned long long)j->id);
}

/* read_after reads the "after" array of handle numbers of meta into ids (at most
 * JOBX_MAX_AFTER); returns how many, -1 when there is none or it is malformed. */
static int read_after(const char *meta, size_t len, uint64_t *ids)
{
    const char *end = meta + len, *p = meta_find(meta, len, "after");
    if (p == NULL || p >= end || *p != '[')
        return -1;
    int n = 0;
    for (p++; p < end && *p != ']';) {
        if (*p == ',' || *p == ' ') {
            p++;
            continue;
        }
        if (*p < '0' || *p > '9' || n == JOBX_MAX_AFTER)
            return -1;
        uint64_t v = 0;
        while (p < end && *p >= '0' && *p <= '9' && v < UINT64_MAX / 10)
            v = v * 10 + (uint64_t)(*p++ - '0');
        ids[n++] = v;
    }
    return p < end ? n : -1;
}

/* restore_waiting puts a job stored (or loaded) as waiting back: it waits for those of its
 * prerequisites still here (one that is gone completed: a failed one stays in the dead-letter
 * list), fails at once when one of them failed, and runs when none is left. A prerequisite
 * renumbered by a takeover is found under its new id (store_restored_id), and the row is
 * rewritten with the new ids. Returns as job_restored. */
static int restore_waiting(struct engine *e, struct job *j, const char *meta, size_t len)
{
    uint64_t ids[JOBX_MAX_AFTER], keep[JOBX_MAX_AFTER];
    int n = read_after(meta, len, ids);
    size_t k = 0;
    int renumbered = 0;
    for (int i = 0; i < n; i++) {
        uint64_t id = store_restored_id(e, ids[i]);
        renumbered |= id != ids[i];
        ids[i] = id;
        struct job *pre = job_find_id(e, ids[i]);
        if (pre == NULL || pre == j)
            continue;
        if (pre->state == JOB_FAILED) {
            struct jobx_rec *r = jobx_rec_get(e, j);
            if (r == NULL)
                return 0;
            jobx_set_dep_error(r, pre->id);
            r->first_failed = r->last_failed = engine_now(e);
            jobx_park(e, j);
            if (jobx_of(e)->persist != NULL)
                jobx_of(e)->persist(e, j, 0);
            return 1;
        }
        keep[k++] = ids[i];
    }
    if (k == 0)
        return 0; /* everything it waited for completed: runnable */
    if (jobx_wait(e, j, keep, k) != 0) {
        log_error("store: out of memory restoring the dependencies of job %llu: it runs now",
                  (unsigned long long)j->id);
        return 0;
    }
    if (renumbered && jobx_of(e)->persist != NULL)
        jobx_of(e)->persist(e, j, 0); /* its row names the new ids */
    return 1;
}

static int job_restored(struct engine *e, struct job *j, const char *meta, size_t len,
                        double when)
{
    (void)when;
    const char *st = meta_find(meta, len, "state");
    if (st != NULL && meta + len - st >= 9 && memcmp(st, "\"waiting\"", 9) == 0)
        return restore_waiting(e, j, meta, len);
    int failed;
    uint32_t attempts;
    double first, last;
    char err[JOBX_ERROR_MAX];
    size_t el;
    if (jobx_meta_read(meta, len, &failed, &attempts, &first, &last, err, sizeof err, &el) != 0)
        return 0; /* not jobx's meta: runnable as usual */
    struct jobx_rec *r = jobx_rec_get(e, j);
    if (r == NULL) {
        log_error("store: out of memory restoring the retry state of job %llu",
                  (unsigned long long)j->id);
        return 0;
    }
    r->attempts = attempts;
    r->first_failed = first;
    r->last_failed = last;
    jobx_set_error(e, r, err, el);
    if (!failed)
        return 0; /* a retry: runnable at its stored due time */
    jobx_park(e, j);
    return 1;
}

/* policy_value writes "COUNT BACKOFF MAX" into out; returns its length. */
static size_t policy_value(const struct jobx_policy *p, char *out, size_t cap)
{
    int n = snprintf(out, cap, "%u %.17g %.17g", p->count, p->backoff, p->max);
    return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

static int record_restored(struct engine *e, const struct store_record *r, char *err,
                           size_t errlen)
{
    char v[128], cs[32], bs[48], ms[48];
    uint32_t count;
    double backoff, max;
    if (r->value == NULL || r->value_len >= sizeof v || r->key_len == 0 ||
        !func_name_ok(r->key, r->key_len)) {
        snprintf(err, errlen, "not a retry policy");
        return -1;
    }
    memcpy(v, r->value, r->value_len);
    v[r->value_len] = '\0';
    if (sscanf(v, "%31s %47s %47s", cs, bs, ms) != 3 ||
        config_parse_retry_numbers(cs, bs, ms, &count, &backoff, &max) != 0) {
        snprintf(err, errlen, "bad retry policy '%s'", v);
        return -1;
    }
    if (jobx_policy_set(e, r->key, r->key_len, count, backoff, max) != 0) {
        snprintf(err, errlen, "out of memory or too many policies");
        return -1;
    }
    return 0;
}

static void record_each(const struct engine *e,
                        void (*cb)(void *ctx, const struct store_record *r), void *ctx)
{
    const struct jobx *x = jobx_of(e);
    if (x == NULL)
        return;
    struct hmap_iter it;
    hmap_iter_init(&it, &x->policies);
    for (const struct jobx_policy *p; (p = hmap_iter_next(&it)) != NULL;) {
        char v[128];
        size_t n = policy_value(p, v, sizeof v);
        struct store_record r = {STORE_REC_RETRY, p->name, p->name_len, v, n};
        cb(ctx, &r);
    }
}

int jobx_store_policy(struct engine *e, const char *name, size_t len)
{
    const struct jobx_policy *p = jobx_policy_find(e, name, len);
    if (p == NULL)
        return store_record_del(e, STORE_REC_RETRY, name, len);
    char v[128];
    size_t n = policy_value(p, v, sizeof v);
    return store_record_put(e, STORE_REC_RETRY, name, len, v, n);
}

int jobx_store_attach(struct engine *e)
{
    struct jobx *x = jobx_get(e);
    if (x == NULL)
        return -1;
    x->persist = persist;
    e->ext.job_restored = job_restored;
    e->ext.job_meta = jobx_meta_write;
    e->ext.record_restored[STORE_REC_RETRY] = record_restored;
    e->ext.record_each[STORE_REC_RETRY] = record_each;
    return 0;
}

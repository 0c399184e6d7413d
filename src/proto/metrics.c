/* SPDX-License-Identifier: BSD-3-Clause */
/* metrics: the server's counters and state as STAT lines, JSON and Prometheus text. */
#include "metrics.h"

#include <assert.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine.h"
#include "esc.h"
#include "func.h"
#include "docout.h"
#include "hist.h"
#include "job.h"
#include "peer.h"
#include "submit.h"
#include "worker.h"

static const char *const prio_names[PRIO_SNAPSHOT] = {"high", "normal", "low"};
static const char *const event_names[JOB_EVENTS] = {
    "submitted", "coalesced", "assigned", "retried",   "completed", "failed",
    "exception", "timed_out", "requeued", "lost",      "cancelled", "abandoned",
};

struct metrics_src;
static void rows_text(struct docout *o, const struct metrics_src *src);
static json_t *rows_json(const struct metrics_src *src);
static void rows_prom(struct docout *o, const struct metrics_src *src);

/* ------------------------------------------------------------ text helpers */

/* put_name appends name[0..len) escaped for a text line whose fields are separated by spaces
 * (esc.h, ESC_SPACE). */
static void put_name(struct docout *o, const char *name, size_t len)
{
    if (o->err)
        return;
    size_t before = buf_len(o->b);
    if (esc_append(o->b, name, len, ESC_SPACE) != 0)
        o->err = METRICS_NO_MEMORY;
    else if (o->max != 0 && buf_len(o->b) - o->start > o->max) {
        o->b->end -= buf_len(o->b) - before; /* taken back: the document stays within max */
        o->err = METRICS_TOO_LARGE;
    }
}

/* comma separates the items of a JSON list or object: a comma before all but the first. */
static void comma(struct docout *o, int *first)
{
    if (!*first)
        docout_puts(o, ",");
    *first = 0;
}

static void putf(struct docout *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(struct docout *o, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    docout_put(o, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* utf8_len returns the length of the valid UTF-8 sequence at s[0..n), or 0 if it is not one. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t len;
    unsigned min;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2;
        min = 0x80;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        min = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        min = 0x10000;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    unsigned cp = c & (0xff >> (len + 1));
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

size_t metrics_sanitize(const char *name, size_t len, char *out)
{
    const unsigned char *s = (const unsigned char *)name;
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        size_t l = utf8_len(s + i, len - i);
        if (l == 0) {
            static const char hex[] = "0123456789abcdef";
            out[o++] = '\\';
            out[o++] = 'x';
            out[o++] = hex[s[i] >> 4];
            out[o++] = hex[s[i] & 15];
            i++;
            continue;
        }
        memcpy(out + o, s + i, l);
        o += l;
        i += l;
    }
    out[o] = '\0';
    return o;
}

/* clean returns name[0..len) as valid UTF-8 text, malloc'd; NULL when out of memory. */
static char *clean(const char *name, size_t len)
{
    char *s = malloc(4 * len + 1);
    if (s != NULL)
        metrics_sanitize(name, len, s);
    return s;
}

/* put_label appends name[0..len) as a Prometheus label value (between its quotes): valid
 * UTF-8 with \, " and newline escaped. */
static void put_label(struct docout *o, const char *name, size_t len)
{
    char *s = clean(name, len);
    if (s == NULL) {
        o->err = METRICS_NO_MEMORY;
        return;
    }
    for (const char *c = s; *c; c++) {
        if (*c == '\\' || *c == '"')
            docout_put(o, "\\", 1);
        if (*c == '\n')
            docout_put(o, "\\n", 2);
        else
            docout_put(o, c, 1);
    }
    free(s);
}

static uint64_t sum3(const uint64_t v[PRIO_SNAPSHOT]) { return v[0] + v[1] + v[2]; }

static uint64_t hist_count(const struct hist *h) { return hist_total(h); }

/* ------------------------------------------------------------ stats (STAT lines) */

static void stat_u(struct docout *o, const char *name, uint64_t v)
{
    putf(o, "STAT %s %llu\r\n", name, (unsigned long long)v);
}

static void stat_f(struct docout *o, const char *name, double v) { putf(o, "STAT %s %.6f\r\n", name, v); }

int metrics_stats_text(const struct engine *e, double now, struct buf *b, size_t max)
{
    struct docout o = docout_init(b, max);
    struct engine_snapshot s;
    engine_stats_get(e, &s);
    const struct metrics_src src = {e, &s, now};
    rows_text(&o, &src);
    docout_puts(&o, "END\r\n");
    return o.err;
}

int metrics_stats_functions(const struct engine *e, struct buf *b, size_t max)
{
    struct docout o = docout_init(b, max);
    list_for_each(n, &e->func_list) {
        const struct func *f = func_of_anode(n);
        if (f->marker)
            continue;
        /* names are escaped (esc.h): a line stays one line of two fields */
        struct {
            const char *what;
            uint64_t v;
        } rows[] = {
            {"total", func_total(f)},       {"running", f->running},
            {"workers", f->nworkers},       {"queued_high", f->queued[PRIO_HIGH]},
            {"queued_normal", f->queued[PRIO_NORMAL]}, {"queued_low", f->queued[PRIO_LOW]},
            {"wait_count", hist_count(&f->wait)},      {"run_count", hist_count(&f->run)},
        };
        for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
            docout_puts(&o, "STAT ");
            put_name(&o, f->name, f->name_len);
            putf(&o, ":%s %llu\r\n", rows[i].what, (unsigned long long)rows[i].v);
        }
        for (int ev = 0; ev < JOB_EVENTS; ev++) {
            docout_puts(&o, "STAT ");
            put_name(&o, f->name, f->name_len);
            putf(&o, ":%s %llu\r\n", event_names[ev], (unsigned long long)f->events[ev]);
        }
        docout_puts(&o, "STAT ");
        put_name(&o, f->name, f->name_len);
        putf(&o, ":wait_seconds %.6f\r\n", f->wait.sum);
        docout_puts(&o, "STAT ");
        put_name(&o, f->name, f->name_len);
        putf(&o, ":run_seconds %.6f\r\n", f->run.sum);
        if (o.err)
            break;
    }
    docout_puts(&o, "END\r\n");
    return o.err;
}

/* ------------------------------------------------------------ JSON */

/* dump appends v (taken; NULL means out of memory) as compact JSON, reals to 9 digits. */
static void dump(struct docout *o, json_t *v) { docout_json(o, v, 9); }

/* item writes v (and takes it) as the next item of a JSON list; returns o->err. */
static int item(struct docout *o, int *first, json_t *v)
{
    comma(o, first);
    docout_json(o, v, 9);
    return o->err;
}

/* jtext returns a JSON string of the bytes name[0..len), made valid UTF-8 (metrics_sanitize). */
static json_t *jtext(const char *name, size_t len)
{
    char *s = clean(name, len);
    if (s == NULL)
        return NULL;
    json_t *v = json_string(s);
    free(s);
    return v;
}

static json_t *jprio(const uint64_t v[PRIO_SNAPSHOT])
{
    return json_pack("{sIsIsIsI}", "high", (json_int_t)v[0], "normal", (json_int_t)v[1], "low",
                     (json_int_t)v[2], "total", (json_int_t)sum3(v));
}

/* jhist returns a histogram: its bounds, its (non-cumulative) counts, one more than the bounds
 * for the values above the last, the count and the sum. */
static json_t *jhist(const struct hist *h, const double *bounds)
{
    json_t *b = json_array(), *c = json_array();
    for (size_t i = 0; i < HIST_BOUNDS; i++)
        json_array_append_new(b, json_real(bounds[i]));
    for (size_t i = 0; i <= HIST_BOUNDS; i++)
        json_array_append_new(c, json_integer((json_int_t)h->count[i]));
    return json_pack("{soso sIsf}", "bounds", b, "counts", c, "count",
                     (json_int_t)hist_count(h), "sum", h->sum);
}

int metrics_json_stats(const struct engine *e, double now, struct buf *b, size_t max)
{
    struct engine_snapshot s;
    engine_stats_get(e, &s);
    const struct metrics_src src = {e, &s, now};
    json_t *doc = rows_json(&src);
    struct docout o = docout_init(b, max);
    dump(&o, doc);
    if (o.err)
        return o.err;
    /* the functions go in one at a time, so the document is never whole in memory: the dump's
     * closing brace is taken back, then ,"functions_by_name":{"NAME":{...},...}} */
    assert(buf_len(b) > o.start && b->data[b->end - 1] == '}');
    b->end--;
    docout_puts(&o, ",\"functions_by_name\":{");
    int first = 1;
    list_for_each(n, &e->func_list) {
        const struct func *f = func_of_anode(n);
        if (f->marker)
            continue;
        json_t *fe = json_object();
        for (int ev = 0; ev < JOB_EVENTS && fe != NULL; ev++)
            json_object_set_new(fe, event_names[ev], json_integer((json_int_t)f->events[ev]));
        comma(&o, &first);
        dump(&o, jtext(f->name, f->name_len));
        docout_puts(&o, ":");
        dump(&o, json_pack("{sososo}", "events", fe, "wait_seconds",
                           jhist(&f->wait, hist_seconds), "run_seconds",
                           jhist(&f->run, hist_seconds)));
        if (o.err)
            return o.err;
    }
    docout_puts(&o, "}}\n");
    return o.err;
}

int metrics_json_status(const struct engine *e, struct buf *b, size_t max)
{
    struct docout o = docout_init(b, max);
    docout_puts(&o, "{\"functions\":[");
    int first = 1;
    list_for_each(n, &e->func_list) {
        const struct func *f = func_of_anode(n);
        if (f->marker)
            continue;
        uint64_t q[PRIO_SNAPSHOT] = {f->queued[PRIO_HIGH], f->queued[PRIO_NORMAL],
                                     f->queued[PRIO_LOW]};
        json_t *row = json_pack("{sosIsIsIsIso}", "function", jtext(f->name, f->name_len),
                                "total", (json_int_t)func_total(f), "running",
                                (json_int_t)f->running, "available_workers",
                                (json_int_t)f->nworkers, "ready", (json_int_t)func_ready(f),
                                "queued", jprio(q));
        if (item(&o, &first, row) != 0)
            return o.err;
    }
    docout_puts(&o, "]}\n");
    return o.err;
}

int metrics_json_workers(const struct engine *e, struct buf *b, size_t max)
{
    struct docout o = docout_init(b, max);
    docout_puts(&o, "{\"workers\":[");
    int first = 1;
    list_for_each(n, &e->peers) {
        const struct peer *q = peer_of(n);
        if (q->flags & PEER_CLOSING)
            continue;
        json_t *fns = json_array();
        uint32_t running = 0;
        if (q->worker != NULL) {
            running = q->worker->nrunning;
            list_for_each(it, &q->worker->abilities) {
                const struct ability *a = ability_of_wnode(it);
                json_array_append_new(fns, jtext(a->func->name, a->func->name_len));
            }
        }
        char kind[32];
        json_t *row = json_pack(
            "{sIsssosssosIsb}", "fd", (json_int_t)q->fd, "ip", q->ip, "client_id",
            q->client_id ? jtext(q->client_id, strlen(q->client_id)) : json_null(), "kind",
            peer_kind_name(q, kind), "functions", fns, "running", (json_int_t)running,
            "sleeping", q->worker != NULL && q->worker->sleeping);
        if (item(&o, &first, row) != 0)
            return o.err;
    }
    docout_puts(&o, "]}\n");
    return o.err;
}

static const char *state_name(const struct job *j)
{
    switch (j->state) {
    case JOB_READY: return "queued";
    case JOB_FUTURE: return "scheduled";
    case JOB_RUNNING: return "running";
    case JOB_PENDING: return "storing";
    case JOB_FAILED: return "failed";
    case JOB_WAITING: return "waiting";
    default: return "other";
    }
}

int metrics_json_job(const struct engine *e, const struct job *j, struct buf *b)
{
    char h[JOB_HANDLE_BUF];
    job_handle(e, j, h);
    json_t *doc = json_pack(
        "{sssososssssIsbsIsIsI}", "handle", h, "function", jtext(j->func->name, j->func->name_len),
        "unique", jtext(job_unique(j), j->unique_len), "priority",
        prio_names[j->prio < PRIO_SNAPSHOT ? j->prio : PRIO_NORMAL], "state", state_name(j),
        "retries", (json_int_t)j->retries, "background", (j->flags & JOB_BACKGROUND) != 0,
        "clients", (json_int_t)job_nwaiters(j), "payload_bytes", (json_int_t)job_payload_len(j),
        "memory_bytes", (json_int_t)job_size(j));
    struct docout o = docout_init(b, 0);
    dump(&o, doc);
    return o.err;
}

/* ------------------------------------------------------------ Prometheus */

static void help(struct docout *o, const char *name, const char *type, const char *text)
{
    putf(o, "# HELP %s %s\n# TYPE %s %s\n", name, text, name, type);
}

/* func_sample appends one sample "name{function="f"[,extra]} value". */
static void func_sample(struct docout *o, const char *name, const struct func *f, const char *extra,
                        const char *value)
{
    putf(o, "%s{function=\"", name);
    put_label(o, f->name, f->name_len);
    putf(o, "\"%s} %s\n", extra, value);
}

static void func_u(struct docout *o, const char *name, const struct func *f, const char *extra,
                   uint64_t v)
{
    char num[32];
    snprintf(num, sizeof num, "%llu", (unsigned long long)v);
    func_sample(o, name, f, extra, num);
}

/* prom_hist appends the samples of one histogram: cumulative _bucket lines, _sum, _count. f is
 * the function of its label, or NULL for none. */
static void prom_hist(struct docout *o, const char *name, const struct func *f, const struct hist *h,
                      const double *bounds)
{
    char metric[96], extra[48], num[48];
    uint64_t cum = 0;
    snprintf(metric, sizeof metric, "%s_bucket", name);
    for (size_t i = 0; i <= HIST_BOUNDS; i++) {
        cum += h->count[i];
        if (i < HIST_BOUNDS)
            snprintf(extra, sizeof extra, "%sle=\"%.10g\"", f ? "," : "", bounds[i]);
        else
            snprintf(extra, sizeof extra, "%sle=\"+Inf\"", f ? "," : "");
        snprintf(num, sizeof num, "%llu", (unsigned long long)cum);
        if (f)
            func_sample(o, metric, f, extra, num);
        else
            putf(o, "%s{%s} %s\n", metric, extra, num);
    }
    snprintf(metric, sizeof metric, "%s_sum", name);
    snprintf(num, sizeof num, "%.9g", h->sum);
    if (f)
        func_sample(o, metric, f, "", num);
    else
        putf(o, "%s %s\n", metric, num);
    snprintf(metric, sizeof metric, "%s_count", name);
    snprintf(num, sizeof num, "%llu", (unsigned long long)cum);
    if (f)
        func_sample(o, metric, f, "", num);
    else
        putf(o, "%s %s\n", metric, num);
}

static void gauge(struct docout *o, const char *name, const char *text, double v)
{
    help(o, name, "gauge", text);
    putf(o, "%s %.17g\n", name, v);
}

/* FOR_FUNCS walks the functions (not the listing markers) of e as f, until the out o fails. */
#define FOR_FUNCS(e, f)                                                                      \
    for (const struct list_node *n_ = (e)->func_list.next; n_ != &(e)->func_list && !o.err;  \
         n_ = n_->next)                                                                       \
        for (const struct func *f = func_of_anode(n_); f != NULL && !f->marker; f = NULL)

int metrics_prometheus(const struct engine *e, double now, struct buf *b, size_t max)
{
    struct docout o = docout_init(b, max);
    struct engine_snapshot s;
    engine_stats_get(e, &s);

    /* the queue state, as the gearman exporters name it */
    gauge(&o, "gearman_up", "1: the server answered.", 1);
    help(&o, "gearman_jobs", "gauge", "Jobs of the function queued or running (status TOTAL).");
    FOR_FUNCS(e, f) func_u(&o, "gearman_jobs", f, "", func_total(f));
    help(&o, "gearman_jobs_running", "gauge", "Jobs of the function running on workers.");
    FOR_FUNCS(e, f) func_u(&o, "gearman_jobs_running", f, "", f->running);
    help(&o, "gearman_jobs_waiting", "gauge", "Jobs of the function not running (queued or scheduled).");
    FOR_FUNCS(e, f) func_u(&o, "gearman_jobs_waiting", f, "", func_total(f) - f->running);
    help(&o, "gearman_workers", "gauge", "Workers that can do the function.");
    FOR_FUNCS(e, f) func_u(&o, "gearman_workers", f, "", f->nworkers);

    /* per function */
    help(&o, "spur_function_jobs_queued", "gauge", "Jobs of the function not running, by priority.");
    FOR_FUNCS(e, f) for (int p = 0; p < PRIO_SNAPSHOT; p++) {
        char extra[32];
        snprintf(extra, sizeof extra, ",priority=\"%s\"", prio_names[p]);
        func_u(&o, "spur_function_jobs_queued", f, extra, f->queued[p]);
    }
    help(&o, "spur_function_jobs_total", "counter",
         "Job events of the function (see OBSERVABILITY.md), while the function exists.");
    FOR_FUNCS(e, f) for (int ev = 0; ev < JOB_EVENTS; ev++) {
        char extra[48];
        snprintf(extra, sizeof extra, ",event=\"%s\"", event_names[ev]);
        func_u(&o, "spur_function_jobs_total", f, extra, f->events[ev]);
    }
    help(&o, "spur_job_queue_wait_seconds", "histogram",
         "Seconds a job of the function waited ready before a worker took it.");
    FOR_FUNCS(e, f) prom_hist(&o, "spur_job_queue_wait_seconds", f, &f->wait, hist_seconds);
    help(&o, "spur_job_run_seconds", "histogram",
         "Seconds from assignment to the worker's WORK_COMPLETE, WORK_FAIL or WORK_EXCEPTION.");
    FOR_FUNCS(e, f) prom_hist(&o, "spur_job_run_seconds", f, &f->run, hist_seconds);

    /* the server: the counter table */
    const struct metrics_src src = {e, &s, now};
    rows_prom(&o, &src);
    return o.err;
}

/* ------------------------------------------------------------ the core's counters */

static void get_pid(const struct metrics_src *src, struct metrics_value *v)
{
    (void)src;
    v->u = (uint64_t)getpid();
}

static void get_uptime(const struct metrics_src *src, struct metrics_value *v)
{
    v->u = (uint64_t)(src->now - src->s->started);
    v->d = src->now - src->s->started;
}

static void get_time(const struct metrics_src *src, struct metrics_value *v)
{
    v->u = (uint64_t)src->now;
}

static void get_version(const struct metrics_src *src, struct metrics_value *v)
{
    (void)src;
    v->text = PACKAGE_VERSION;
}

static void get_store(const struct metrics_src *src, struct metrics_value *v)
{
    v->u = src->e->store_mgr != NULL;
}

static void get_batch_ops(const struct metrics_src *src, struct metrics_value *v)
{
    v->h = &src->s->stats.store_batch_ops;
    v->bounds = hist_sizes;
    v->u = (uint64_t)v->h->sum;
}

static void get_commit_seconds(const struct metrics_src *src, struct metrics_value *v)
{
    v->h = &src->s->stats.store_commit_seconds;
    v->bounds = hist_seconds;
    v->d = v->h->sum;
}

/* FIELD reads a field of struct engine_snapshot; SUM adds n fields from f[0]. */
#define FIELD(f) METRICS_FIELD(f)
#define SUM(f, k) METRICS_FIELD(f[0]), .n = (k)
#define COUNTER .kind = METRICS_COUNTER
#define GAUGE .kind = METRICS_GAUGE

/* the rows of one peer kind k (PEER_KIND_*) named s */
#define H_OPEN "Open connections, by what they did (one may be several kinds; all: every one)."
#define H_CONNS "Connections that acted as each kind (none: closed having done nothing)."
#define H_REJECTED "Connections closed by the server (bad input, output or memory limits), by kind."
#define KIND_OPEN(k, s)                                                                        \
    {.text = "curr_connections_" s, .json = "connections.open_by_kind." s,                   \
     .prom = "spur_connections_open{kind=\"" s "\"}", .help = H_OPEN, GAUGE,                  \
     FIELD(conn_now[k]), .at = {70 + 10 * (k), 60 + (k), 30 + (k)}}
#define KIND_TOTAL(k, s)                                                                       \
    {.text = "total_connections_" s, .json = "connections.total_by_kind." s,                 \
     .prom = "spur_connections_total{kind=\"" s "\"}", .help = H_CONNS, COUNTER,              \
     FIELD(stats.conn_kind[k]), .at = {100 + 10 * (k), 70 + (k), 40 + (k)}}
#define KIND_REJECTED(k, s)                                                                    \
    {.text = "rejected_connections_" s, .json = "connections.rejected_by_kind." s,           \
     .prom = "spur_connections_rejected_total{kind=\"" s "\"}", .help = H_REJECTED, COUNTER,  \
     FIELD(stats.conn_rejected[k]), .at = {140 + 10 * (k), 80 + (k), 50 + (k)}}

/* the row of protocol error kind k named s */
#define PERR(k, s)                                                                             \
    {.text = "protocol_errors_" s, .json = "protocol_errors." s,                              \
     .prom = "spur_protocol_errors_total{kind=\"" s "\"}", .help = "Malformed input, by kind.", \
     COUNTER, FIELD(stats.protocol_error[k]), .at = {320 + 10 * (k), 190 + (k), 150 + (k)}}

/* the rows of job event ev named s: the sum over the priorities, then each priority */
#define H_JOBS "Job events of every function, by priority."
#define EVENT_PRIO(ev, s, p, ps)                                                               \
    {.text = "jobs_" s "_" ps, .json = "jobs.events." s "." ps,                               \
     .prom = "spur_jobs_total{event=\"" s "\",priority=\"" ps "\"}", .help = H_JOBS, COUNTER, \
     FIELD(stats.jobs[ev][p]), .at = {400 + 40 * (ev) + 10 * (p), 300 + 4 * (ev) + (p),      \
                                      200 + 3 * (ev) + (p)}}
#define EVENT(ev, s)                                                                           \
    {.text = "jobs_" s, .json = "jobs.events." s ".total", COUNTER, SUM(stats.jobs[ev], 3),  \
     .at = {390 + 40 * (ev), 303 + 4 * (ev), 0}},                                             \
        EVENT_PRIO(ev, s, 0, "high"), EVENT_PRIO(ev, s, 1, "normal"),                         \
        EVENT_PRIO(ev, s, 2, "low")

/* the row of live jobs queued at priority p named s */
#define QUEUED(p, s)                                                                           \
    {.text = "curr_jobs_queued_" s, .json = "jobs.queued." s,                                 \
     .prom = "spur_jobs_queued{priority=\"" s "\"}",                                           \
     .help = "Jobs not running (queued, scheduled, storing), by priority.", GAUGE,            \
     FIELD(queued[p]), .at = {890 + 10 * (p), 220 + (p), 320 + (p)}}

/* the row of refusals of kind k (DENIED_*) named s */
#define DENIED(k, s)                                                                           \
    {.text = "permission_denied_" s, .json = "permission_denied." s,                          \
     .prom = "spur_permission_denied_total{what=\"" s "\"}",                                   \
     .help = "Requests refused by --admin-allow, --admin-read or --policy, by what was refused.", \
     COUNTER, FIELD(stats.permission_denied[k]), .at = {1040 + 10 * (k), 520 + (k), 480 + (k)}}

/* the row of submits refused with result k (enum submit_result) named s */
#define REFUSED(k, s)                                                                          \
    {.text = "submits_refused_" s, .json = "jobs.refused." s,                                 \
     .prom = "spur_submits_refused_total{reason=\"" s "\"}",                                  \
     .help = "Submits refused (every entry point: binary, admin, HTTP, schedules, load), by "  \
             "reason.",                                                                        \
     COUNTER, FIELD(stats.submit_refused[k])}

/* core_rows are the server's own counters and gauges. The places (at) keep the order each
 * output had before the table: {stats, stats json, metrics}. */
static const struct metrics_row core_rows[] = {
    {.text = "pid", .json = "pid", .get = get_pid, .at = {10, 20, 0}},
    {.text = "uptime", .get = get_uptime, .at = {20, 0, 0}},
    {.text = "time", .json = "time", .get = get_time, .at = {30, 30, 0}},
    {.text = "version", .json = "version", .type = METRICS_TEXT, .get = get_version,
     .at = {40, 10, 0}},
    {.json = "uptime_seconds", .prom = "spur_uptime_seconds",
     .help = "Seconds since the server started.", GAUGE, .type = METRICS_REAL, .get = get_uptime,
     .at = {0, 40, 20}},
    {.prom = "spur_start_time_seconds", .help = "Unix time the server started.", GAUGE,
     .type = METRICS_REAL, FIELD(started), .at = {0, 0, 10}},
    {.text = "curr_connections", .json = "connections.open",
     .prom = "spur_connections_open{kind=\"all\"}", .help = H_OPEN, GAUGE, FIELD(peers),
     .at = {50, 50, 33}},
    {.text = "total_connections", .json = "connections.total",
     .prom = "spur_connections_total{kind=\"all\"}", .help = H_CONNS, COUNTER,
     FIELD(stats.connections), .at = {60, 90, 44}},
    KIND_OPEN(PEER_KIND_CLIENT, "client"),
    KIND_OPEN(PEER_KIND_WORKER, "worker"),
    KIND_OPEN(PEER_KIND_ADMIN, "admin"),
    {.json = "connections.open_by_kind.all", SUM(conn_now, PEER_KIND_NONE), .at = {0, 63, 0}},
    KIND_TOTAL(PEER_KIND_CLIENT, "client"),
    KIND_TOTAL(PEER_KIND_WORKER, "worker"),
    KIND_TOTAL(PEER_KIND_ADMIN, "admin"),
    KIND_TOTAL(PEER_KIND_NONE, "none"),
    {.json = "connections.total_by_kind.all", SUM(stats.conn_kind, PEER_KINDS), .at = {0, 74, 0}},
    KIND_REJECTED(PEER_KIND_CLIENT, "client"),
    KIND_REJECTED(PEER_KIND_WORKER, "worker"),
    KIND_REJECTED(PEER_KIND_ADMIN, "admin"),
    KIND_REJECTED(PEER_KIND_NONE, "none"),
    {.json = "connections.rejected_by_kind.all", SUM(stats.conn_rejected, PEER_KINDS),
     .at = {0, 84, 0}},
    {.text = "accept_errors", .json = "connections.accept_errors",
     .prom = "spur_accept_errors_total", .help = "Failed accepts (EMFILE...).", COUNTER,
     FIELD(stats.accept_errors), .at = {180, 100, 60}},
    {.text = "tls_handshakes", .prom = "spur_tls_handshakes_total{result=\"done\"}",
     .help = "TLS handshakes, by result (done, failed, timeout).", COUNTER,
     FIELD(stats.tls_handshakes), .at = {190, 0, 70}},
    {.text = "tls_handshake_failures", .prom = "spur_tls_handshakes_total{result=\"failed\"}",
     COUNTER, FIELD(stats.tls_handshake_failures), .at = {200, 0, 71}},
    {.text = "tls_handshake_timeouts", .prom = "spur_tls_handshakes_total{result=\"timeout\"}",
     COUNTER, FIELD(stats.tls_handshake_timeouts), .at = {210, 0, 72}},
    {.text = "http_request_timeouts", .prom = "spur_http_request_timeouts_total",
     .help = "HTTP connections closed because a request was not in within "
             "--http-request-timeout.",
     COUNTER, FIELD(stats.http_request_timeouts), .at = {220, 0, 80}},
    {.text = "connections_shed", .json = "connections.shed", .prom = "spur_connections_shed_total",
     .help = "Connections closed because all buffers passed --max-buffer-memory.", COUNTER,
     FIELD(stats.shed), .at = {230, 110, 90}},
    {.text = "connections_shed_bytes", .json = "traffic.shed_bytes", FIELD(stats.shed_bytes),
     .at = {240, 180, 0}},
    {.text = "packets_in", .json = "traffic.packets_in",
     .prom = "spur_packets_received_total{protocol=\"binary\"}",
     .help = "Requests handled, by protocol.", COUNTER, FIELD(stats.packets),
     .at = {250, 120, 100}},
    {.text = "lines_in", .json = "traffic.lines_in",
     .prom = "spur_packets_received_total{protocol=\"text\"}", COUNTER, FIELD(stats.lines),
     .at = {260, 130, 101}},
    {.text = "packets_out", .json = "traffic.packets_out", .prom = "spur_packets_sent_total",
     .help = "Binary packets queued to connections.", COUNTER, FIELD(stats.packets_out),
     .at = {270, 140, 110}},
    {.text = "bytes_in", .json = "traffic.bytes_in", .prom = "spur_received_bytes_total",
     .help = "Bytes read from connections.", COUNTER, FIELD(stats.bytes_in), .at = {280, 150, 120}},
    {.text = "bytes_out", .json = "traffic.bytes_out", .prom = "spur_sent_bytes_total",
     .help = "Bytes written to connections.", COUNTER, FIELD(stats.bytes_out),
     .at = {290, 160, 130}},
    {.text = "status_coalesced", .json = "traffic.status_coalesced",
     .prom = "spur_status_coalesced_total",
     .help = "WORK_STATUS packets replaced unsent by a newer one.", COUNTER,
     FIELD(stats.status_coalesced), .at = {300, 170, 140}},
    {.text = "protocol_errors", .json = "protocol_errors.total", FIELD(stats.protocol_errors),
     .at = {310, 197, 0}},
    PERR(PERR_BAD_MAGIC, "bad_magic"),
    PERR(PERR_WRONG_MAGIC, "wrong_magic"),
    PERR(PERR_TOO_LARGE, "too_large"),
    PERR(PERR_BAD_COMMAND, "bad_command"),
    PERR(PERR_BAD_ARGS, "bad_args"),
    PERR(PERR_LINE_TOO_LONG, "line_too_long"),
    PERR(PERR_UNRECOGNISED, "unrecognised"),
    EVENT(JOB_EV_SUBMITTED, "submitted"),
    EVENT(JOB_EV_COALESCED, "coalesced"),
    EVENT(JOB_EV_ASSIGNED, "assigned"),
    EVENT(JOB_EV_RETRIED, "retried"),
    EVENT(JOB_EV_COMPLETED, "completed"),
    EVENT(JOB_EV_FAILED, "failed"),
    EVENT(JOB_EV_EXCEPTION, "exception"),
    EVENT(JOB_EV_TIMED_OUT, "timed_out"),
    EVENT(JOB_EV_REQUEUED, "requeued"),
    EVENT(JOB_EV_LOST, "lost"),
    EVENT(JOB_EV_CANCELLED, "cancelled"),
    EVENT(JOB_EV_ABANDONED, "abandoned"),
    {.text = "jobs_cancelled_running", .json = "jobs.cancelled_running",
     .prom = "spur_jobs_cancelled_running_total",
     .help = "Jobs cancelled while running on a worker (cancel job, CANCEL_JOB).", COUNTER,
     FIELD(stats.cancelled_running), .at = {860, 350, 240}},
    {.text = "curr_jobs", .json = "jobs.live", .prom = "spur_jobs_live",
     .help = "Live jobs, in any state.", GAUGE, FIELD(jobs), .at = {870, 200, 300}},
    {.text = "curr_jobs_running", .json = "jobs.running", .prom = "spur_jobs_running",
     .help = "Jobs running on workers.", GAUGE, FIELD(running), .at = {880, 210, 310}},
    QUEUED(0, "high"),
    QUEUED(1, "normal"),
    QUEUED(2, "low"),
    {.json = "jobs.queued.total", SUM(queued, PRIO_SNAPSHOT), .at = {0, 223, 0}},
    {.text = "job_memory_bytes", .json = "jobs.memory_bytes", .prom = "spur_job_memory_bytes",
     .help = "Bytes allocated for live jobs and their data.", GAUGE, FIELD(job_bytes),
     .at = {920, 230, 330}},
    {.text = "functions", .json = "functions", .prom = "spur_functions",
     .help = "Functions known.", GAUGE, FIELD(functions), .at = {930, 460, 340}},
    {.text = "functions_evicted", .json = "functions_evicted",
     .prom = "spur_functions_evicted_total",
     .help = "Unused functions forgotten to make room past --max-functions.", COUNTER,
     FIELD(stats.functions_evicted), .at = {940, 530, 350}},
    {.text = "workers", .json = "workers", .prom = "spur_workers",
     .help = "Connections that sent a worker packet.", GAUGE, FIELD(workers),
     .at = {950, 470, 360}},
    {.text = "abilities", .json = "abilities", FIELD(abilities), .at = {960, 480, 0}},
    {.text = "held_grabs", .json = "held_grabs", .prom = "spur_held_grabs",
     .help = "GRABs waiting for a job (--grab-wait).", GAUGE, FIELD(held), .at = {970, 490, 370}},
    {.text = "buffered_bytes", .json = "buffered_bytes", .prom = "spur_buffered_bytes",
     .help = "Bytes held by all connections' buffers.", GAUGE, FIELD(buffered),
     .at = {980, 500, 380}},
    {.text = "buffered_peak_bytes", .json = "buffered_peak_bytes", FIELD(buffered_peak),
     .at = {990, 510, 0}},
    {.text = "store", .json = "store.enabled", .prom = "spur_store_enabled",
     .help = "1 with a durable store (--store).", GAUGE, .type = METRICS_BOOL, .get = get_store,
     .at = {1000, 400, 390}},
    {.text = "store_commits", .json = "store.commits",
     .prom = "spur_store_commits_total{result=\"ok\"}",
     .help = "Store batches written, by result.", COUNTER, FIELD(stats.store_commits),
     .at = {1010, 410, 400}},
    {.text = "store_commit_failures", .json = "store.commit_failures",
     .prom = "spur_store_commits_total{result=\"failed\"}", COUNTER,
     FIELD(stats.store_commit_failures), .at = {1020, 420, 401}},
    {.text = "permission_denied", .json = "permission_denied.total",
     SUM(stats.permission_denied, DENIED_KINDS), .at = {1030, 523, 0}},
    DENIED(DENIED_SUBMIT, "submit"),
    DENIED(DENIED_CAN_DO, "can_do"),
    DENIED(DENIED_ADMIN, "admin"),
    {.text = "store_batch_operations", .get = get_batch_ops, .at = {1070, 0, 0}},
    {.text = "store_commit_seconds", .type = METRICS_REAL, .get = get_commit_seconds,
     .at = {1080, 0, 0}},
    {.json = "store.batch_operations", .prom = "spur_store_batch_operations",
     .help = "Adds and deletions per store batch.", .kind = METRICS_HISTOGRAM,
     .type = METRICS_HIST, .get = get_batch_ops, .at = {0, 440, 410}},
    {.json = "store.commit_seconds", .prom = "spur_store_commit_seconds",
     .help = "Seconds from handing a batch to the committer to its durable answer.",
     .kind = METRICS_HISTOGRAM, .type = METRICS_HIST, .get = get_commit_seconds,
     .at = {0, 450, 420}},
    {.text = "store_replayed", .json = "store.replayed", .prom = "spur_store_replayed_jobs_total",
     .help = "Jobs restored from the store at start-up.", COUNTER, FIELD(stats.store_replayed),
     .at = {1090, 430, 430}},
    REFUSED(SUBMIT_BAD_NAME, "bad_name"),
    REFUSED(SUBMIT_QUEUE_FULL, "queue_full"),
    REFUSED(SUBMIT_TOO_MANY_FUNCTIONS, "too_many_functions"),
    REFUSED(SUBMIT_NO_MEMORY, "no_memory"),
    REFUSED(SUBMIT_STORE_ERROR, "store_error"),
    REFUSED(SUBMIT_WAIT_REFUSED, "wait_refused"),
};

/* ------------------------------------------------------------ the table, rendered */

int metrics_add(struct engine *e, const struct metrics_table *t)
{
    for (size_t i = 0; i < ENGINE_EXT_COUNTERS; i++) {
        if (e->ext.counters[i] == t)
            return 0;
        if (e->ext.counters[i] == NULL) {
            e->ext.counters[i] = t;
            return 0;
        }
    }
    return -1;
}

/* struct placed is a row in the order of one output. */
struct placed {
    const struct metrics_row *r; /* the row */
    long key;                    /* its place: at[], a row at 0 after every placed one */
    size_t seq;                  /* its rank in the tables, which breaks ties */
};

static int placed_cmp(const void *a, const void *b)
{
    const struct placed *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static const char *row_name(const struct metrics_row *r, int out)
{
    return out == METRICS_AT_TEXT ? r->text : out == METRICS_AT_JSON ? r->json : r->prom;
}

/* rows_in returns, malloc'd, the rows of e (the core's, then each added table's) that output
 * out names, in its order; *n their count. NULL when out of memory (or none). */
static struct placed *rows_in(const struct engine *e, int out, size_t *n)
{
    const struct metrics_table core = {core_rows, sizeof core_rows / sizeof core_rows[0]};
    const struct metrics_table *tables[ENGINE_EXT_COUNTERS + 1] = {&core};
    size_t ntables = 1, total = 0;
    for (size_t i = 0; i < ENGINE_EXT_COUNTERS && e->ext.counters[i] != NULL; i++)
        tables[ntables++] = e->ext.counters[i];
    for (size_t i = 0; i < ntables; i++)
        total += tables[i]->n;
    struct placed *v = malloc(sizeof *v * (total ? total : 1));
    *n = 0;
    if (v == NULL)
        return NULL;
    size_t seq = 0;
    for (size_t i = 0; i < ntables; i++)
        for (size_t k = 0; k < tables[i]->n; k++, seq++) {
            const struct metrics_row *r = &tables[i]->rows[k];
            if (row_name(r, out) == NULL)
                continue;
            long at = r->at[out];
            v[(*n)++] = (struct placed){r, at > 0 ? at : LONG_MAX, seq};
        }
    qsort(v, *n, sizeof *v, placed_cmp);
    return v;
}

/* row_value reads r's value from src. */
static struct metrics_value row_value(const struct metrics_src *src, const struct metrics_row *r)
{
    struct metrics_value v = {0, 0, "", NULL, NULL};
    if (r->get != NULL) {
        r->get(src, &v);
        return v;
    }
    const unsigned char *p = (const unsigned char *)src->s + r->offset;
    if (r->type == METRICS_REAL) {
        assert(r->size == sizeof v.d);
        memcpy(&v.d, p, sizeof v.d);
        return v;
    }
    for (unsigned i = 0; i < (r->n ? r->n : 1u); i++, p += r->size) {
        if (r->size == sizeof(uint32_t)) {
            uint32_t x;
            memcpy(&x, p, sizeof x);
            v.u += x;
        } else {
            uint64_t x;
            assert(r->size == sizeof x);
            memcpy(&x, p, sizeof x);
            v.u += x;
        }
    }
    return v;
}

/* rows_text appends a STAT line for every row `stats` names. */
static void rows_text(struct docout *o, const struct metrics_src *src)
{
    size_t n;
    struct placed *v = rows_in(src->e, METRICS_AT_TEXT, &n);
    if (v == NULL) {
        o->err = METRICS_NO_MEMORY;
        return;
    }
    for (size_t i = 0; i < n && !o->err; i++) {
        const struct metrics_row *r = v[i].r;
        struct metrics_value x = row_value(src, r);
        assert(r->type != METRICS_HIST);
        if (r->type == METRICS_REAL)
            stat_f(o, r->text, x.d);
        else if (r->type == METRICS_TEXT)
            putf(o, "STAT %s %s\r\n", r->text, x.text);
        else
            stat_u(o, r->text, x.u);
    }
    free(v);
}

/* jvalue returns r's value x as JSON (NULL when out of memory). */
static json_t *jvalue(const struct metrics_row *r, const struct metrics_value *x)
{
    switch (r->type) {
    case METRICS_REAL: return json_real(x->d);
    case METRICS_BOOL: return json_boolean(x->u != 0);
    case METRICS_TEXT: return json_string(x->text);
    case METRICS_HIST: return jhist(x->h, x->bounds);
    default: return json_integer((json_int_t)x->u);
    }
}

/* jset sets v (stolen) at path (keys joined by '.') under doc, making the objects on the way;
 * returns 0 or -1. */
static int jset(json_t *doc, const char *path, json_t *v)
{
    char key[64];
    const char *dot;
    while (v != NULL && (dot = strchr(path, '.')) != NULL) {
        size_t len = (size_t)(dot - path);
        assert(len < sizeof key);
        memcpy(key, path, len);
        key[len] = '\0';
        json_t *next = json_object_get(doc, key);
        if (next == NULL && json_object_set_new(doc, key, next = json_object()) != 0)
            next = NULL;
        if (!json_is_object(next)) {
            json_decref(v);
            return -1;
        }
        doc = next;
        path = dot + 1;
    }
    return v != NULL && json_object_set_new(doc, path, v) == 0 ? 0 : -1;
}

/* rows_json returns the `stats json` document of every row it names (NULL: out of memory). */
static json_t *rows_json(const struct metrics_src *src)
{
    size_t n;
    struct placed *v = rows_in(src->e, METRICS_AT_JSON, &n);
    json_t *doc = v != NULL ? json_object() : NULL;
    for (size_t i = 0; i < n && doc != NULL; i++) {
        struct metrics_value x = row_value(src, v[i].r);
        if (jset(doc, v[i].r->json, jvalue(v[i].r, &x)) != 0) {
            json_decref(doc);
            doc = NULL;
        }
    }
    free(v);
    return doc;
}

/* rows_prom appends the samples of every row `metrics` names, the HELP and TYPE of a family
 * before its first. */
static void rows_prom(struct docout *o, const struct metrics_src *src)
{
    static const char *const types[] = {"counter", "gauge", "histogram"};
    size_t n;
    struct placed *v = rows_in(src->e, METRICS_AT_PROM, &n);
    if (v == NULL) {
        o->err = METRICS_NO_MEMORY;
        return;
    }
    char family[96] = "";
    for (size_t i = 0; i < n && !o->err; i++) {
        const struct metrics_row *r = v[i].r;
        size_t len = strcspn(r->prom, "{");
        assert(len < sizeof family);
        if (strlen(family) != len || strncmp(family, r->prom, len) != 0) {
            assert(r->help != NULL);
            snprintf(family, sizeof family, "%.*s", (int)len, r->prom);
            help(o, family, types[r->kind], r->help);
        }
        struct metrics_value x = row_value(src, r);
        if (r->type == METRICS_HIST)
            prom_hist(o, family, NULL, x.h, x.bounds);
        else if (r->type == METRICS_REAL)
            putf(o, "%s %.17g\n", r->prom, x.d);
        else if (r->kind == METRICS_GAUGE && r->prom[len] == '\0')
            putf(o, "%s %.17g\n", r->prom, (double)x.u);
        else
            putf(o, "%s %llu\n", r->prom, (unsigned long long)x.u);
    }
    free(v);
}

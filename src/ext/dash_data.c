/* SPDX-License-Identifier: BSD-3-Clause */
/* dash_data: the web dashboard's JSON documents and history (dash_data.h). */
#include "dash_data.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "docout.h"
#include "engine.h"
#include "func.h"
#include "job.h"
#include "jobx.h"
#include "metrics.h"
#include "peer.h"
#include "recur.h"
#include "schedule.h"
#include "store.h"
#include "worker.h"

dash_marks_fn dash_func_marks = NULL;

static const char *const prio_name[PRIO_COUNT] = {"high", "normal", "low"};

/* ------------------------------------------------------------ output */

/* dump appends v (taken; NULL means out of memory) as compact JSON, reals to 15 digits. */
static void dump(struct docout *o, json_t *v) { docout_json(o, v, 15); }

/* item appends v as the next item of a list (a comma before all but the first). */
static void item(struct docout *o, int *first, json_t *v)
{
    if (!*first)
        docout_puts(o, ",");
    *first = 0;
    docout_json(o, v, 15);
}

/* jtext returns the bytes s[0..len) as a JSON string of valid UTF-8 (metrics_sanitize). */
static json_t *jtext(const char *s, size_t len)
{
    char small[256];
    char *t = 4 * len + 1 <= sizeof small ? small : malloc(4 * len + 1);
    if (t == NULL)
        return NULL;
    metrics_sanitize(s, len, t);
    json_t *v = json_string(t);
    if (t != small)
        free(t);
    return v;
}

/* jhandle returns j's handle as a JSON string. */
static json_t *jhandle(const struct engine *e, const struct job *j)
{
    char h[JOB_HANDLE_BUF];
    job_handle(e, j, h);
    return json_string(h);
}

/* jreal returns v, or null when v is negative (no value). */
static json_t *jreal(double v)
{
    return v < 0 ? json_null() : json_real(v);
}

/* wait_q is the q-quantile of f's queue wait since it was created; negative when none. */
static double wait_q(const struct func *f, double q)
{
    return series_quantile(f->wait.count, hist_seconds, HIST_BOUNDS, q);
}

static int prio_ok(unsigned p)
{
    return p < PRIO_COUNT;
}

/* ------------------------------------------------------------ history */

void dash_sampler_init(struct dash_sampler *s)
{
    memset(s, 0, sizeof *s);
    series_init(&s->ring);
}

/* wait_sum sums the wait histograms of every function of e into c. */
static void wait_sum(const struct engine *e, uint64_t c[HIST_BOUNDS + 1])
{
    memset(c, 0, sizeof(uint64_t) * (HIST_BOUNDS + 1));
    list_for_each(n, &e->func_list) {
        const struct func *f = func_of_anode(n);
        if (f->marker)
            continue;
        for (size_t i = 0; i <= HIST_BOUNDS; i++)
            c[i] += f->wait.count[i];
    }
}

/* delta is cur - prev, or 0 when the counter went back ('stats reset', a function freed). */
static uint64_t delta(uint64_t cur, uint64_t prev)
{
    return cur >= prev ? cur - prev : 0;
}

void dash_sample(struct dash_sampler *s, const struct engine *e, double now)
{
    struct engine_snapshot snap;
    engine_stats_get(e, &snap);
    uint64_t in = 0, out = 0, wait[HIST_BOUNDS + 1], d[HIST_BOUNDS + 1];
    for (int p = 0; p < PRIO_SNAPSHOT; p++) {
        in += snap.stats.jobs[JOB_EV_SUBMITTED][p];
        out += snap.stats.jobs[JOB_EV_COMPLETED][p];
    }
    wait_sum(e, wait);
    double dt = now - s->last_t;
    if (s->primed && dt > 0) {
        struct series_sample x = {0};
        x.t = now;
        x.submitted = (double)delta(in, s->last_in) / dt;
        x.completed = (double)delta(out, s->last_out) / dt;
        x.queued = snap.queued[0] + snap.queued[1] + snap.queued[2];
        x.running = snap.running;
        for (size_t i = 0; i <= HIST_BOUNDS; i++)
            d[i] = delta(wait[i], s->last_wait[i]);
        x.wait_p99 = series_quantile(d, hist_seconds, HIST_BOUNDS, 0.99);
        series_push(&s->ring, &x);
    }
    s->primed = 1;
    s->last_t = now;
    s->last_in = in;
    s->last_out = out;
    memcpy(s->last_wait, wait, sizeof wait);
}

int dash_json_series(const struct dash_sampler *s, struct buf *b, size_t max)
{
    struct docout o = docout_init(b, max);
    docout_puts(&o, "{\"interval\":1,\"samples\":[");
    int first = 1;
    for (size_t i = 0; i < series_len(&s->ring) && !o.err; i++) {
        const struct series_sample *x = series_at(&s->ring, i);
        item(&o, &first, json_pack("[fffIIo]", x->t, x->submitted, x->completed,
                                   (json_int_t)x->queued, (json_int_t)x->running,
                                   jreal(x->wait_p99)));
    }
    docout_puts(&o, "]}\n");
    return o.err;
}

/* ------------------------------------------------------------ overview */

/* struct row is a function matching an overview's filter, with its sort key. */
struct row {
    const struct func *f;
    double key;
};

static int sort_desc;    /* the direction of the sort in progress (the loop is single-threaded) */
static int sort_by_name; /* the sort in progress is by name */

static int name_cmp(const struct func *a, const struct func *b)
{
    size_t n = a->name_len < b->name_len ? a->name_len : b->name_len;
    int c = memcmp(a->name, b->name, n);
    return c != 0 ? c : (a->name_len > b->name_len) - (a->name_len < b->name_len);
}

static int row_cmp(const void *pa, const void *pb)
{
    const struct row *a = pa, *b = pb;
    int c = sort_by_name ? name_cmp(a->f, b->f) : (a->key > b->key) - (a->key < b->key);
    if (sort_desc)
        c = -c;
    return c != 0 ? c : name_cmp(a->f, b->f); /* ties by name, always ascending */
}

/* contains reports whether name[0..len) holds pat (ASCII case ignored). */
static int contains(const char *name, size_t len, const char *pat)
{
    size_t pl = strlen(pat);
    if (pl == 0)
        return 1;
    for (size_t i = 0; i + pl <= len; i++)
        if (strncasecmp(name + i, pat, pl) == 0 && memchr(name + i, '\0', pl) == NULL)
            return 1;
    return 0;
}

static double sort_key(const struct func *f, enum dash_sort s)
{
    switch (s) {
    case DASH_SORT_QUEUED: return (double)(f->queued[0] + f->queued[1] + f->queued[2]);
    case DASH_SORT_RUNNING: return (double)f->running;
    case DASH_SORT_WORKERS: return (double)f->nworkers;
    case DASH_SORT_IN: return (double)f->events[JOB_EV_SUBMITTED];
    case DASH_SORT_OUT: return (double)f->events[JOB_EV_COMPLETED];
    case DASH_SORT_P50: return wait_q(f, 0.5);
    case DASH_SORT_P99: return wait_q(f, 0.99);
    case DASH_SORT_NAME: break;
    }
    return 0;
}

enum dash_sort dash_sort_parse(const char *name)
{
    static const char *const names[] = {"name", "queued", "running", "workers",
                                        "in",   "out",    "p50",     "p99"};
    for (size_t i = 0; name != NULL && i < sizeof names / sizeof names[0]; i++)
        if (strcmp(name, names[i]) == 0)
            return (enum dash_sort)i;
    return DASH_SORT_NAME;
}

/* func_row returns f's overview row. */
static json_t *func_row(const struct engine *e, const struct func *f)
{
    json_t *marks = json_array();
    if (dash_func_marks != NULL && marks != NULL) {
        const char *m[DASH_MARKS_MAX];
        size_t n = dash_func_marks(e, f, m, DASH_MARKS_MAX);
        for (size_t i = 0; i < n && i < DASH_MARKS_MAX; i++)
            json_array_append_new(marks, json_string(m[i]));
    }
    return json_pack("{sos{sIsIsIsI}sIsIsIsIsIsososo}", "name", jtext(f->name, f->name_len),
                     "queued", "high", (json_int_t)f->queued[PRIO_HIGH], "normal",
                     (json_int_t)f->queued[PRIO_NORMAL], "low", (json_int_t)f->queued[PRIO_LOW],
                     "total",
                     (json_int_t)(f->queued[PRIO_HIGH] + f->queued[PRIO_NORMAL] +
                                  f->queued[PRIO_LOW]),
                     "running", (json_int_t)f->running, "workers", (json_int_t)f->nworkers,
                     "submitted", (json_int_t)f->events[JOB_EV_SUBMITTED], "completed",
                     (json_int_t)f->events[JOB_EV_COMPLETED], "failed",
                     (json_int_t)(f->events[JOB_EV_FAILED] + f->events[JOB_EV_EXCEPTION]),
                     "wait_p50", jreal(wait_q(f, 0.5)), "wait_p99", jreal(wait_q(f, 0.99)),
                     "marks", marks);
}

/* server_summary returns the overview's "server" object. */
static json_t *server_summary(const struct engine *e, double now)
{
    struct engine_snapshot s;
    engine_stats_get(e, &s);
    struct store_state st;
    store_get_state(e, &st);
    uint64_t in = 0, out = 0;
    for (int p = 0; p < PRIO_SNAPSHOT; p++) {
        in += s.stats.jobs[JOB_EV_SUBMITTED][p];
        out += s.stats.jobs[JOB_EV_COMPLETED][p];
    }
    json_t *store = json_pack("{sbsbsbsIsIsIsf}", "enabled", e->store_mgr != NULL, "replaying",
                              store_replaying(e), "committing", st.in_flight, "batch",
                              (json_int_t)st.queued, "held_replies", (json_int_t)st.held,
                              "failed_commits", (json_int_t)st.fails, "retry_gap", st.retry_gap);
    return json_pack("{sssfsfsIsIsIsIsIsIsIsIsIsIsIsIsIsIso}", "version", PACKAGE_VERSION,
                     "time", now, "uptime", now - s.started, "connections", (json_int_t)s.peers,
                     "workers", (json_int_t)s.workers, "functions", (json_int_t)s.functions,
                     "jobs", (json_int_t)s.jobs, "queued",
                     (json_int_t)(s.queued[0] + s.queued[1] + s.queued[2]), "running",
                     (json_int_t)s.running, "submitted", (json_int_t)in, "completed",
                     (json_int_t)out, "memory_bytes", (json_int_t)(s.job_bytes + s.buffered),
                     "job_bytes", (json_int_t)s.job_bytes, "buffered_bytes",
                     (json_int_t)s.buffered, "failed_jobs", (json_int_t)jobx_nfailed(e),
                     "waiting_jobs", (json_int_t)jobx_nwaiting(e), "schedules",
                     (json_int_t)recur_count(e), "store", store);
}

int dash_json_overview(const struct engine *e, double now, const struct dash_query *q,
                       struct buf *b, size_t max)
{
    size_t cap = 0;
    list_for_each(n, &e->func_list)
        cap++;
    struct row *rows = malloc((cap > 0 ? cap : 1) * sizeof *rows);
    if (rows == NULL)
        return METRICS_NO_MEMORY;
    size_t n = 0;
    const char *pat = q->filter != NULL ? q->filter : "";
    list_for_each(it, &e->func_list) {
        const struct func *f = func_of_anode(it);
        if (f->marker || !contains(f->name, f->name_len, pat))
            continue;
        rows[n].f = f;
        rows[n].key = sort_key(f, q->sort);
        n++;
    }
    sort_desc = q->desc;
    sort_by_name = q->sort == DASH_SORT_NAME;
    qsort(rows, n, sizeof *rows, row_cmp);
    size_t limit = q->limit < 1 ? 1 : q->limit > DASH_PAGE_MAX ? DASH_PAGE_MAX : q->limit;
    struct docout o = docout_init(b, max);
    docout_puts(&o, "{\"server\":");
    dump(&o, server_summary(e, now));
    docout_puts(&o, ",\"page\":");
    dump(&o, json_pack("{sIsIsIsb}", "total", (json_int_t)n, "offset", (json_int_t)q->offset,
                       "limit", (json_int_t)limit, "admin", q->admin != 0));
    docout_puts(&o, ",\"functions\":[");
    int first = 1;
    for (size_t i = q->offset; i < n && i < q->offset + limit && !o.err; i++)
        item(&o, &first, func_row(e, rows[i].f));
    docout_puts(&o, "]}\n");
    free(rows);
    return o.err;
}

/* ------------------------------------------------------------ a function */

/* worker_row returns worker w's row in f's detail: its connection and its jobs of f. */
static json_t *worker_row(const struct engine *e, const struct worker *w, const struct func *f)
{
    const struct peer *p = w->peer;
    json_t *jobs = json_array();
    size_t k = 0;
    list_for_each(it, &w->running) {
        const struct job *j = container_of(it, struct job, qnode);
        if (j->func == f && k++ < 8)
            json_array_append_new(jobs, jhandle(e, j));
    }
    return json_pack("{sosssosIsb}", "client_id",
                     p->client_id != NULL ? jtext(p->client_id, strlen(p->client_id))
                                          : json_null(),
                     "address", p->ip, "running", jobs, "running_total", (json_int_t)w->nrunning,
                     "sleeping", w->sleeping != 0);
}

/* job_row returns a queued job's row: handle, unique, priority, age in seconds. */
static json_t *job_row(const struct engine *e, const struct job *j, double now)
{
    return json_pack("{sososssf}", "handle", jhandle(e, j), "unique",
                     jtext(job_unique(j), j->unique_len), "priority",
                     prio_ok(j->prio) ? prio_name[j->prio] : "normal", "age", now - job_since(j));
}

static json_t *policy_of(const struct engine *e, const struct func *f)
{
    const struct jobx_policy *p = jobx_policy_find(e, f->name, f->name_len);
    if (p == NULL)
        return json_null();
    return json_pack("{sIsfsf}", "count", (json_int_t)p->count, "backoff", p->backoff, "max",
                     p->max);
}

int dash_json_function(const struct engine *e, double now, const char *name, size_t len,
                       struct buf *b, size_t max)
{
    struct docout o = docout_init(b, max);
    const struct func *f = NULL;
    list_for_each(it, &e->func_list) { /* O(functions), as the overview */
        const struct func *g = func_of_anode(it);
        if (!g->marker && g->name_len == len && memcmp(g->name, name, len) == 0) {
            f = g;
            break;
        }
    }
    if (f == NULL) {
        docout_puts(&o, "{\"found\":false}\n");
        return o.err;
    }
    docout_puts(&o, "{\"found\":true,\"function\":");
    dump(&o, func_row(e, f));
    docout_puts(&o, ",\"max_queue\":");
    dump(&o, json_pack("{sIsIsI}", "high", (json_int_t)f->max_queue[PRIO_HIGH], "normal",
                       (json_int_t)f->max_queue[PRIO_NORMAL], "low",
                       (json_int_t)f->max_queue[PRIO_LOW]));
    docout_puts(&o, ",\"retry\":");
    dump(&o, policy_of(e, f));
    docout_puts(&o, ",\"workers\":[");
    int first = 1;
    size_t k = 0;
    list_for_each(it, &f->workers) {
        const struct ability *a = container_of(it, struct ability, fnode);
        if (k++ >= DASH_PAGE_MAX || o.err)
            break;
        item(&o, &first, worker_row(e, a->worker, f));
    }
    docout_puts(&o, "],\"queue_head\":[");
    first = 1;
    k = 0;
    for (int p = 0; p < PRIO_COUNT && k < DASH_QUEUE_HEAD; p++)
        list_for_each(it, &f->queue[p]) {
            if (k++ >= DASH_QUEUE_HEAD || o.err)
                break;
            item(&o, &first, job_row(e, container_of(it, struct job, qnode), now));
        }
    docout_puts(&o, "]}\n");
    return o.err;
}

/* ------------------------------------------------------------ dead letters, waiting jobs */

/* failed_row returns dead-letter job r's row. */
static json_t *failed_row(const struct engine *e, const struct jobx_rec *r)
{
    const struct job *j = r->job;
    char eb[JOBX_ERROR_BUF];
    size_t el = 0;
    const char *et = jobx_error(e, r, eb, &el);
    return json_pack("{sosososIsfsfso}", "handle", jhandle(e, j), "function",
                     jtext(j->func->name, j->func->name_len), "unique",
                     jtext(job_unique(j), j->unique_len), "attempts", (json_int_t)r->attempts,
                     "first_failed", r->first_failed, "last_failed", r->last_failed, "error",
                     jtext(et != NULL ? et : "", et != NULL ? el : 0));
}

/* page_open starts a page of a job list: {"total","offset","limit" (capped at DASH_PAGE_MAX,
 * written back to *limit), "jobs":[ — the rows and "]}" follow. Returns o->err. */
static int page_open(struct docout *o, size_t total, size_t offset, size_t *limit)
{
    if (*limit > DASH_PAGE_MAX)
        *limit = DASH_PAGE_MAX;
    dump(o, json_pack("{sIsIsI}", "total", (json_int_t)total, "offset", (json_int_t)offset,
                      "limit", (json_int_t)*limit));
    if (o->err)
        return o->err;
    o->b->end--; /* the closing brace, taken back: the rows follow */
    docout_puts(o, ",\"jobs\":[");
    return o->err;
}

int dash_json_failed(const struct engine *e, size_t offset, size_t limit, struct buf *b,
                     size_t max)
{
    const struct jobx *x = jobx_of(e);
    struct docout o = docout_init(b, max);
    if (page_open(&o, jobx_nfailed(e), offset, &limit) != 0)
        return o.err;
    int first = 1;
    size_t i = 0;
    if (x != NULL)
        list_for_each(it, &x->failed) {
            if (i >= offset + limit || o.err)
                break;
            if (i++ >= offset)
                item(&o, &first, failed_row(e, container_of(it, struct jobx_rec, fnode)));
        }
    docout_puts(&o, "]}\n");
    return o.err;
}

/* awaited returns the handles r's job still waits for. */
static json_t *awaited(const struct engine *e, const struct jobx_rec *r)
{
    json_t *a = json_array();
    for (size_t i = 0; i < r->nedges && a != NULL; i++) {
        const struct jobx_pre *pre = r->edges[i].pre;
        if (pre == NULL)
            continue;
        char h[JOB_HANDLE_BUF];
        job_handle_id(e, pre->id, h);
        json_array_append_new(a, json_string(h));
    }
    return a;
}

int dash_json_waiting(const struct engine *e, size_t offset, size_t limit, struct buf *b,
                      size_t max)
{
    const struct jobx *x = jobx_of(e);
    struct docout o = docout_init(b, max);
    if (page_open(&o, jobx_nwaiting(e), offset, &limit) != 0)
        return o.err;
    int first = 1;
    size_t i = 0;
    if (x != NULL) {
        struct hmap_iter hi;
        hmap_iter_init(&hi, &x->recs);
        const struct jobx_rec *r;
        while ((r = hmap_iter_next(&hi)) != NULL && i < offset + limit && !o.err) {
            const struct job *j = r->job;
            if (j->state != JOB_WAITING || i++ < offset)
                continue;
            item(&o, &first,
                 json_pack("{sososossso}", "handle", jhandle(e, j), "function",
                           jtext(j->func->name, j->func->name_len), "unique",
                           jtext(job_unique(j), j->unique_len), "priority",
                           prio_ok(j->prio) ? prio_name[j->prio] : "normal", "waits_for",
                           awaited(e, r)));
        }
    }
    docout_puts(&o, "]}\n");
    return o.err;
}

/* ------------------------------------------------------------ schedules, one job */

/* struct sched_list is dash_json_schedules' walk: the output and whether a row was written. */
struct sched_list {
    struct docout *o;
    int first;
};

static int schedule_row(void *arg, const struct recur_view *v)
{
    struct sched_list *l = arg;
    const struct schedule *s = v->s;
    item(l->o, &l->first,
         json_pack("{sosososIsIsIsoss}", "name", jtext(s->name, strlen(s->name)), "spec",
                   jtext(s->spec, strlen(s->spec)),
                   "function", jtext(s->func, strlen(s->func)), "next", (json_int_t)v->next,
                   "runs", (json_int_t)v->runs, "last", (json_int_t)v->last, "unique",
                   jtext(s->unique, strlen(s->unique)), "priority",
                   s->prio >= 0 && s->prio < PRIO_COUNT ? prio_name[s->prio] : "normal"));
    return l->o->err;
}

int dash_json_schedules(const struct engine *e, struct buf *b, size_t max)
{
    struct docout o = docout_init(b, max);
    docout_puts(&o, "{\"schedules\":[");
    struct sched_list l = {&o, 1};
    if (!o.err)
        recur_each(e, schedule_row, &l);
    docout_puts(&o, "]}\n");
    return o.err;
}

int dash_json_job(const struct engine *e, double now, const char *key, size_t len, int by_unique,
                  struct buf *b, size_t max)
{
    struct docout o = docout_init(b, max);
    const struct job *j = by_unique ? job_find_unique_any(e, key, len)
                                    : job_find_handle((struct engine *)(uintptr_t)e, key, len);
    if (j == NULL) {
        docout_puts(&o, "{\"found\":false}\n");
        return o.err;
    }
    docout_puts(&o, "{\"found\":true,\"job\":");
    if (!o.err && metrics_json_job(e, j, b) != 0)
        o.err = METRICS_NO_MEMORY;
    const struct jobx_rec *r = jobx_rec_of(e, j);
    char eb[JOBX_ERROR_BUF];
    size_t el = 0;
    const char *et = r != NULL ? jobx_error(e, r, eb, &el) : NULL;
    int timed = j->state == JOB_READY || j->state == JOB_RUNNING;
    docout_puts(&o, ",\"extra\":");
    dump(&o, json_pack("{sosIsososI}", "age", timed ? json_real(now - job_since(j)) : json_null(),
                       "attempts", (json_int_t)(r != NULL ? r->attempts : 0), "last_error",
                       et != NULL && el > 0 ? jtext(et, el) : json_null(), "waits_for",
                       r != NULL && j->state == JOB_WAITING ? awaited(e, r) : json_array(),
                       "dependents", (json_int_t)jobx_ndependents(e, j->id)));
    docout_puts(&o, "}\n");
    return o.err;
}
